"""A small trio Chrome DevTools Protocol client over ``--remote-debugging-pipe``.

Chromium reads NUL-terminated JSON commands from fd 3 and writes NUL-terminated JSON replies and events to fd 4.
This module launches Chromium with both pipes wired up (``os.posix_spawn`` with dup2 file actions, so nothing runs
between fork and exec) and speaks CDP over them:

    async with open_chromium(extra_args=[...]) as browser:
        page = await browser.new_page("https://chatgpt.com/")
        value = await page.evaluate("document.title")
        async with page.listen("Page.loadEventFired") as events:
            await page.send("Page.reload")
            await events.receive()

Design points (this client is also used by the direct-CDP benchmark):

* one reader task parses the stream and routes replies by ``id`` to waiting callers, so any number of commands
  may be in flight at once from any number of tasks; writes are serialised by a lock;
* events go to every matching subscription (``listen(method, session_id)``) through an unbounded memory channel,
  so a slow consumer never stalls the reader; subscribe *before* sending the command that triggers an event;
* flattened sessions (``Target.attachToTarget {flatten: true}``): a command carries ``sessionId`` at top level
  and its reply and the session's events carry it back;
* when the pipe closes every waiting command fails with :class:`CDPConnectionClosed` and every subscription
  channel ends (``trio.EndOfChannel``).

Closing: ``Browser.close`` first, then SIGTERM and SIGKILL to the browser's own process group (it is started in a
new session), each after a grace period.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import math
import os
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import EllipsisType
from typing import Any

import trio

from actors.browser.process import HEADLESS_DISABLED_FEATURES

#: The Chromium binary (launch it directly, not the /usr/bin/chromium wrapper); override with AI_BRIDGE_CHROMIUM.
CHROMIUM = os.environ.get("AI_BRIDGE_CHROMIUM", "/usr/lib/chromium/chromium")

#: Flags verified to work as root in a container (see /work/shared/NOTES.md).
DEFAULT_FLAGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--password-store=basic",
    "--use-mock-keychain",
    # Half of a headless start's CPU is the omnibox popup's WebUI, which nothing here shows (actors/browser/process.py).
    f"--disable-features={','.join(HEADLESS_DISABLED_FEATURES)}",
)

__all__ = [
    "CHROMIUM",
    "DEFAULT_FLAGS",
    "Browser",
    "CDPConnection",
    "CDPConnectionClosed",
    "CDPError",
    "CDPSession",
    "JavaScriptError",
    "devtools_url",
    "open_chromium",
]


class CDPError(Exception):
    """The browser answered a command with an ``error`` object."""

    def __init__(self, method: str, error: Mapping[str, Any]):
        self.method = method
        self.code = error.get("code")
        self.message = error.get("message", "")
        self.data = error.get("data")
        super().__init__(f"{method}: {self.message} (code {self.code})" + (f": {self.data}" if self.data else ""))


class CDPConnectionClosed(Exception):
    """The pipe to the browser is closed (browser exited or the connection was closed)."""


class JavaScriptError(Exception):
    """``Runtime.evaluate`` reported ``exceptionDetails``."""

    def __init__(self, details: Mapping[str, Any]):
        self.details = details
        exc = details.get("exception") or {}
        text = exc.get("description") or details.get("text") or "JavaScript exception"
        super().__init__(text)


@dataclass(eq=False)
class _Subscription:
    method: str | None
    session_id: str | None  # None = any session (including the browser session)
    predicate: Callable[[dict], bool] | None
    send: trio.MemorySendChannel

    def matches(self, msg: dict) -> bool:
        if self.method is not None and msg.get("method") != self.method:
            return False
        if self.session_id is not None and msg.get("sessionId") != self.session_id:
            return False
        if self.predicate is not None and not self.predicate(msg):
            return False
        return True


@dataclass(eq=False)
class _Pending:
    method: str
    done: trio.Event = field(default_factory=trio.Event)
    reply: dict | None = None


class CDPConnection:
    """CDP over a pair of byte streams carrying NUL-terminated JSON.

    ``send`` may be called concurrently from many tasks. Run :meth:`run_reader` in a nursery (done by
    :func:`open_chromium`).
    """

    def __init__(self, write_stream: trio.abc.SendStream, read_stream: trio.abc.ReceiveStream,
                 *, default_timeout: float | None = 60.0):
        self._write = write_stream
        self._read = read_stream
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._subs: set[_Subscription] = set()
        self._write_lock = trio.Lock()
        self._closed = False
        self._close_reason = "connection closed"
        self.default_timeout = default_timeout
        self.messages_received = 0

    # -- reading -------------------------------------------------------------------------------------------

    async def run_reader(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        buf = bytearray()
        try:
            while True:
                try:
                    data = await self._read.receive_some(1 << 20)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    data = b""
                if not data:
                    self._mark_closed("browser closed the pipe")
                    return
                buf += data
                start = 0
                while True:
                    end = buf.find(b"\0", start)
                    if end < 0:
                        break
                    raw = bytes(buf[start:end])
                    start = end + 1
                    if raw:
                        self._dispatch(json.loads(raw))
                del buf[:start]
        finally:
            self._mark_closed(self._close_reason if self._closed else "reader stopped")

    def _dispatch(self, msg: dict) -> None:
        self.messages_received += 1
        msg_id = msg.get("id")
        if msg_id is not None:
            pending = self._pending.pop(msg_id, None)
            if pending is not None:
                pending.reply = msg
                pending.done.set()
            return
        for sub in list(self._subs):
            if sub.matches(msg):
                try:
                    sub.send.send_nowait(msg)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    self._subs.discard(sub)

    def _mark_closed(self, reason: str) -> None:
        if not self._closed:
            self._closed = True
            self._close_reason = reason
        for pending in self._pending.values():
            pending.done.set()  # reply stays None -> CDPConnectionClosed
        self._pending.clear()
        for sub in list(self._subs):
            sub.send.close()
        self._subs.clear()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- sending -------------------------------------------------------------------------------------------

    async def send(self, method: str, params: Mapping[str, Any] | None = None, *,
                   session_id: str | None = None, timeout: float | EllipsisType | None = ...) -> dict:
        """Send one command and return its ``result`` (raises :class:`CDPError` on an ``error`` reply)."""
        if self._closed:
            raise CDPConnectionClosed(self._close_reason)
        msg_id = next(self._ids)
        msg: dict[str, Any] = {"id": msg_id, "method": method, "params": dict(params or {})}
        if session_id is not None:
            msg["sessionId"] = session_id
        pending = _Pending(method)
        self._pending[msg_id] = pending
        data = json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode() + b"\0"
        if timeout is ...:
            timeout = self.default_timeout
        try:
            with trio.fail_after(math.inf if timeout is None else timeout):
                async with self._write_lock:
                    try:
                        await self._write.send_all(data)
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                        self._mark_closed(f"write failed: {exc!r}")
                        raise CDPConnectionClosed(self._close_reason) from exc
                await pending.done.wait()
        finally:
            self._pending.pop(msg_id, None)
        reply = pending.reply
        if reply is None:
            raise CDPConnectionClosed(self._close_reason)
        if "error" in reply:
            raise CDPError(method, reply["error"])
        return reply.get("result", {})

    # -- events --------------------------------------------------------------------------------------------

    @asynccontextmanager
    async def listen(self, method: str | None = None, *, session_id: str | None = None,
                     predicate: Callable[[dict], bool] | None = None
                     ) -> AsyncIterator[trio.MemoryReceiveChannel]:
        """Subscribe to events (whole messages: ``method``, ``params``, ``sessionId``) while the block runs."""
        send, recv = trio.open_memory_channel(math.inf)
        sub = _Subscription(method, session_id, predicate, send)
        if self._closed:
            send.close()
        else:
            self._subs.add(sub)
        try:
            async with recv:
                yield recv
        finally:
            self._subs.discard(sub)
            send.close()

    async def wait_event(self, method: str, *, session_id: str | None = None,
                         predicate: Callable[[dict], bool] | None = None, timeout: float = 30.0) -> dict:
        """Wait for the next matching event (only events arriving after this call starts count)."""
        async with self.listen(method, session_id=session_id, predicate=predicate) as events:
            with trio.fail_after(timeout):
                try:
                    return await events.receive()
                except trio.EndOfChannel:
                    raise CDPConnectionClosed(self._close_reason) from None

    async def aclose(self) -> None:
        self._mark_closed("connection closed by client")
        for stream in (self._write, self._read):
            try:
                await stream.aclose()
            except Exception:
                pass


class CDPSession:
    """A flattened session attached to one target."""

    def __init__(self, conn: CDPConnection, session_id: str, target_id: str):
        self.conn = conn
        self.session_id = session_id
        self.target_id = target_id

    async def send(self, method: str, params: Mapping[str, Any] | None = None, **kw) -> dict:
        return await self.conn.send(method, params, session_id=self.session_id, **kw)

    def listen(self, method: str | None = None, *, predicate: Callable[[dict], bool] | None = None):
        return self.conn.listen(method, session_id=self.session_id, predicate=predicate)

    async def wait_event(self, method: str, **kw) -> dict:
        return await self.conn.wait_event(method, session_id=self.session_id, **kw)

    async def evaluate(self, expression: str, *, await_promise: bool = False,
                       timeout: float | EllipsisType | None = ...) -> Any:
        """``Runtime.evaluate`` by value; returns the value (``None`` for undefined), raises on exceptions."""
        res = await self.send("Runtime.evaluate", {
            "expression": expression,
            "returnByValue": True,
            "awaitPromise": await_promise,
        }, timeout=timeout)
        if "exceptionDetails" in res:
            raise JavaScriptError(res["exceptionDetails"])
        return res.get("result", {}).get("value")

    async def wait_for(self, expression: str, *, timeout: float = 10.0, interval: float = 0.05) -> Any:
        """Poll the JavaScript *expression* until it is truthy; return its value (``True`` for a DOM node, which
        cannot be returned by value). Raises ``trio.TooSlowError``."""
        wrapped = f"(v => (typeof Node !== 'undefined' && v instanceof Node) ? true : v)(({expression}))"
        with trio.fail_after(timeout):
            while True:
                value = await self.evaluate(wrapped)
                if value:
                    return value
                await trio.sleep(interval)

    async def navigate(self, url: str, *, timeout: float = 15.0) -> None:
        """Navigate and wait until ``document.readyState == 'complete'`` on the new document."""
        with trio.fail_after(timeout):
            res = await self.send("Page.navigate", {"url": url})
            if res.get("errorText"):
                raise CDPError("Page.navigate", {"message": res["errorText"]})
            ready = "document.readyState === 'complete'"
            if url != "about:blank":
                ready += " && location.href !== 'about:blank'"
            await self.wait_for(ready, timeout=timeout)

    async def bring_to_front(self) -> None:
        await self.send("Page.bringToFront")


class World:
    """An isolated world of one page (as the provider actor makes for its scripts): expressions evaluated there by
    value; the page's own world is `page`."""

    def __init__(self, page: CDPSession, context_id: int) -> None:
        self.page = page
        self.context_id = context_id

    @classmethod
    async def create(cls, page: CDPSession, name: str = "ai-bridge") -> World:
        tree = await page.send("Page.getFrameTree")
        made = await page.send("Page.createIsolatedWorld", {"frameId": tree["frameTree"]["frame"]["id"],
                                                            "worldName": name})
        return cls(page, made["executionContextId"])

    async def eval(self, expression: str) -> Any:
        res = await self.page.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                        "contextId": self.context_id})
        assert "exceptionDetails" not in res, res["exceptionDetails"]
        return res["result"].get("value")


async def devtools_url(profile: str | os.PathLike[str], *, timeout: float,
                       exited: Callable[[], str | None] = lambda: None) -> str:
    """The browser endpoint a Chromium started with ``--remote-debugging-port=0`` writes into its profile's
    ``DevToolsActivePort`` (the port, then the path). The file is created before it is written: wait for both lines.
    `exited` says why the browser is gone, if it is (then this fails at once instead of at `timeout`)."""
    port_file = os.path.join(profile, "DevToolsActivePort")
    with trio.fail_after(timeout):
        while True:
            try:
                with open(port_file) as f:
                    lines = f.read().split()
            except FileNotFoundError:
                lines = []
            if len(lines) >= 2 and lines[0].isdigit() and lines[1].startswith("/devtools/browser/"):
                return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            if (why := exited()) is not None:
                raise RuntimeError(why)
            await trio.sleep(0.02)


class Browser:
    """A launched Chromium with its root CDP connection; with ``browser_context_id`` (a shared browser, see
    tests/shared_chromium.py) ``new_page`` opens its pages in that browser context."""

    def __init__(self, conn: CDPConnection, pid: int, user_data_dir: str, *, browser_context_id: str | None = None):
        self.conn = conn
        self.pid = pid
        self.user_data_dir = user_data_dir
        self.browser_context_id = browser_context_id

    async def send(self, method: str, params: Mapping[str, Any] | None = None, **kw) -> dict:
        return await self.conn.send(method, params, **kw)

    async def attach(self, target_id: str) -> CDPSession:
        res = await self.conn.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
        return CDPSession(self.conn, res["sessionId"], target_id)

    async def new_page(self, url: str | None = None, *, background: bool = False,
                       new_window: bool = False, enable: Sequence[str] = ("Page", "Runtime"),
                       timeout: float = 15.0) -> CDPSession:
        """Create a tab on about:blank, attach (flatten), enable domains, then navigate to ``url`` if given."""
        params: dict[str, Any] = {"url": "about:blank"}
        if background:
            params["background"] = True
        if new_window:
            params["newWindow"] = True
        if self.browser_context_id is not None:
            params["browserContextId"] = self.browser_context_id
        res = await self.conn.send("Target.createTarget", params)
        session = await self.attach(res["targetId"])
        for domain in enable:
            await session.send(f"{domain}.enable")
        if url is not None:
            await session.navigate(url, timeout=timeout)
        return session

    async def close_target(self, session_or_target: CDPSession | str) -> None:
        target_id = session_or_target.target_id if isinstance(session_or_target, CDPSession) else session_or_target
        await self.conn.send("Target.closeTarget", {"targetId": target_id})


def _spawn(argv: list[str], cmd_read_fd: int, reply_write_fd: int, log_path: str) -> int:
    """posix_spawn ``argv`` with our pipe ends as its fds 3 and 4, stdin from /dev/null, stdout+stderr to a log."""
    # Copies above fd 4 first, so the dup2 sequence cannot clobber one with the other.
    hi_cmd = fcntl.fcntl(cmd_read_fd, fcntl.F_DUPFD_CLOEXEC, 10)
    hi_rep = fcntl.fcntl(reply_write_fd, fcntl.F_DUPFD_CLOEXEC, 10)
    try:
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644),
            (os.POSIX_SPAWN_DUP2, 1, 2),
            (os.POSIX_SPAWN_DUP2, hi_cmd, 3),
            (os.POSIX_SPAWN_DUP2, hi_rep, 4),
        ]
        return os.posix_spawn(argv[0], argv, dict(os.environ), file_actions=actions, setsid=True)
    finally:
        os.close(hi_cmd)
        os.close(hi_rep)


async def _wait_pid(pid: int) -> int:
    """Wait for ``pid`` to exit without a thread (pidfd); returns the raw wait status."""
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            got, status = os.waitpid(pid, os.WNOHANG)
            if got == pid:
                return status
            await trio.lowlevel.wait_readable(pidfd)
    finally:
        os.close(pidfd)


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # the browser leads its own process group (setsid=True)
    except (ProcessLookupError, PermissionError):
        pass


@asynccontextmanager
async def open_chromium(extra_args: Sequence[str] = (), *, headless: bool = True,
                        chromium: str = CHROMIUM, user_data_dir: str | None = None,
                        default_flags: Sequence[str] = DEFAULT_FLAGS, start_url: str = "about:blank",
                        default_timeout: float | None = 60.0, log_path: str | None = None
                        ) -> AsyncIterator[Browser]:
    """Launch Chromium with ``--remote-debugging-pipe`` and yield a :class:`Browser`.

    ``user_data_dir`` defaults to a fresh temporary directory removed afterwards. Chromium's stdout/stderr go
    to ``log_path`` (default: ``chrome.log`` inside the user data dir; kept only if you pass your own dir).
    """
    own_dir = user_data_dir is None
    udd = tempfile.mkdtemp(prefix="cdp-pipe-") if own_dir else user_data_dir
    assert udd is not None
    log = log_path or os.path.join(udd, "chrome.log")
    argv = [chromium]
    if headless:
        argv.append("--headless=new")
    argv += [*default_flags, "--remote-debugging-pipe", f"--user-data-dir={udd}", *extra_args, start_url]

    cmd_r, cmd_w = os.pipe()
    rep_r, rep_w = os.pipe()
    pid = None
    try:
        pid = _spawn(argv, cmd_r, rep_w, log)
    finally:
        os.close(cmd_r)
        os.close(rep_w)
        if pid is None:
            os.close(cmd_w)
            os.close(rep_r)
    conn = CDPConnection(trio.lowlevel.FdStream(cmd_w), trio.lowlevel.FdStream(rep_r),
                         default_timeout=default_timeout)
    exited = trio.Event()
    status: list[int] = []

    async def reap():
        status.append(await _wait_pid(pid))
        exited.set()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reap)
            await nursery.start(conn.run_reader)
            browser = Browser(conn, pid, udd)
            try:
                # Wait until the browser answers; fails fast if it died at startup.
                with trio.fail_after(30):
                    await conn.send("Browser.getVersion")
                yield browser
            finally:
                with trio.CancelScope(shield=True):
                    await _shutdown(conn, pid, exited)
                nursery.cancel_scope.cancel()
    finally:
        if own_dir:
            shutil.rmtree(udd, ignore_errors=True)


async def _shutdown(conn: CDPConnection, pid: int, exited: trio.Event) -> None:
    if not exited.is_set() and not conn.closed:
        with trio.move_on_after(2):
            try:
                await conn.send("Browser.close", timeout=2)
            except (CDPError, CDPConnectionClosed, trio.TooSlowError):
                pass
    for sig, grace in ((None, 5.0), (signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        if sig is not None:
            _kill_group(pid, sig)
        with trio.move_on_after(grace):
            await exited.wait()
        if exited.is_set():
            break
    # Stray helpers (zygote, renderers) share the group; make sure none outlive the browser.
    _kill_group(pid, signal.SIGKILL)
    await conn.aclose()
