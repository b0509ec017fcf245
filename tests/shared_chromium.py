"""One headless Chromium per test process, shared by many tests, each test in its own browser context.

A Chromium start costs more CPU than most of the tests that use one do, so the tests whose browser needs nothing
special share one per pytest process (per xdist worker). pytest-trio runs each test in its own
``trio.run``, so nothing async can span tests: the process is started from sync code and each test connects anew
over the browser's WebSocket endpoint (``--remote-debugging-port=0``; the port is read from ``DevToolsActivePort``
in its profile dir). A connection made inside one test's trio run dies with it, cleanly at a message boundary,
which a pipe shared across runs would not promise.

Each test gets a :class:`~tests.cdp_pipe.Browser` whose pages open in a fresh browser context (own cookies,
storage, cache and window): ``Target.disposeBrowserContext`` at teardown closes everything the test opened, and
``disposeOnDetach`` does it too should the connection drop first. A browser that died, or did not answer at a
test's start or end, is killed and the next test starts a new one.

    pool = ChromiumPool()                      # session scope (conftest.py: ``shared_chromiums``)
    async with pool.get(args).browser() as b:  # per test
        page = await b.new_page("https://chatgpt.com/")
    pool.close()
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, open_websocket_url

from .cdp_pipe import (
    CHROMIUM,
    DEFAULT_FLAGS,
    Browser,
    CDPConnection,
    CDPConnectionClosed,
    CDPError,
    _kill_group,
    devtools_url,
)

__all__ = ["ChromiumPool", "SharedChromium"]

_PR_SET_PDEATHSIG = 1
_MAX_MESSAGE = 1 << 28   # CDP replies can be large (screenshots, long strings); trio-websocket's default is 1 MiB
_prctl = ctypes.CDLL(None, use_errno=True).prctl   # looked up here: no dlopen between fork and exec


def _die_with_parent() -> None:
    # A shared browser outlives single tests, so make sure it cannot outlive a worker that is killed outright
    # (a session teardown that never runs). The signal comes when the spawning thread ends: that is the one running
    # the tests, which stops the browser itself at the end.
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class _WebSocketStream(trio.abc.Stream):
    """The byte stream CDPConnection expects (NUL-terminated JSON) over a WebSocket (one message per JSON)."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self._ws = ws
        self._buf = bytearray()

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        try:
            for part in bytes(data).split(b"\0"):
                if part:
                    await self._ws.send_message(part.decode())
        except ConnectionClosed as exc:
            raise trio.BrokenResourceError(str(exc)) from exc

    async def wait_send_all_might_not_block(self) -> None:
        pass

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if not self._buf:
            try:
                msg = await self._ws.get_message()
            except ConnectionClosed:
                return b""
            self._buf += (msg.encode() if isinstance(msg, str) else msg) + b"\0"
        n = len(self._buf) if max_bytes is None else max_bytes
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    async def aclose(self) -> None:
        await self._ws.aclose()


class SharedChromium:
    """One Chromium process with fixed arguments, started on first use and again after it died."""

    def __init__(self, extra_args: Sequence[str] = (), *, chromium: str = CHROMIUM,
                 default_flags: Sequence[str] = DEFAULT_FLAGS) -> None:
        self.default_flags = list(default_flags)
        self.extra_args = list(extra_args)
        self.chromium = chromium
        self.proc: subprocess.Popen[bytes] | None = None
        self.user_data_dir: str | None = None
        self.starts = 0

    def start(self) -> None:
        """Spawn the browser (without waiting for it); the same flags as ``open_chromium`` but a port, not a pipe."""
        self.stop()
        udd = self.user_data_dir = tempfile.mkdtemp(prefix="cdp-shared-")
        argv = [self.chromium, "--headless=new", *self.default_flags, "--remote-debugging-port=0",
                f"--user-data-dir={udd}", *self.extra_args, "about:blank"]
        with open(os.path.join(udd, "chrome.log"), "ab") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True, preexec_fn=_die_with_parent)
        self.starts += 1

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM, then SIGKILL, to the browser's process group; remove its profile dir."""
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                _kill_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    pass
            _kill_group(proc.pid, signal.SIGKILL)   # and any helper left in its group
            proc.wait()
        if self.user_data_dir is not None:
            shutil.rmtree(self.user_data_dir, ignore_errors=True)
            self.user_data_dir = None

    def _log_tail(self) -> str:
        try:
            with open(os.path.join(self.user_data_dir or "", "chrome.log"), errors="replace") as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    async def _endpoint(self) -> str:
        """The browser's WebSocket URL, (re)starting it if it is not running."""
        if not self.alive():
            self.start()
        assert self.proc is not None and self.user_data_dir is not None
        proc = self.proc

        def exited() -> str | None:
            return None if proc.poll() is None else f"Chromium exited at start ({proc.returncode}):\n{self._log_tail()}"

        return await devtools_url(self.user_data_dir, timeout=30, exited=exited)

    @asynccontextmanager
    async def browser(self) -> AsyncIterator[Browser]:
        """A connection to the shared browser whose ``new_page`` opens pages in a browser context of its own;
        the context and all its pages are gone afterwards."""
        context_id: str | None = None
        clean = False
        try:
            url = await self._endpoint()
            async with open_websocket_url(url, max_message_size=_MAX_MESSAGE, connect_timeout=10,
                                          disconnect_timeout=2) as ws:
                stream = _WebSocketStream(ws)
                conn = CDPConnection(stream, stream)
                async with trio.open_nursery() as nursery:
                    await nursery.start(conn.run_reader)
                    try:
                        made = await conn.send("Target.createBrowserContext", {"disposeOnDetach": True}, timeout=10)
                        context_id = made["browserContextId"]
                        assert self.proc is not None and self.user_data_dir is not None
                        yield Browser(conn, self.proc.pid, self.user_data_dir, browser_context_id=context_id)
                    finally:
                        with trio.CancelScope(shield=True):
                            clean = await self._dispose(conn, context_id)
                        nursery.cancel_scope.cancel()
        finally:
            if not clean:
                # Dead, or no answer in time: the next test gets a new browser rather than this one.
                self.stop()

    @staticmethod
    async def _dispose(conn: CDPConnection, context_id: str | None) -> bool:
        """Close the test's context (and so its pages); False if the browser did not do so."""
        done = False
        if context_id is not None and not conn.closed:
            with trio.move_on_after(10):
                try:
                    await conn.send("Target.disposeBrowserContext", {"browserContextId": context_id}, timeout=10)
                    done = True
                except (CDPError, CDPConnectionClosed, trio.TooSlowError):
                    pass
        await conn.aclose()
        return done


class ChromiumPool:
    """Shared browsers by their extra arguments (the fake sites' flags, or none), each started on first use."""

    def __init__(self) -> None:
        self._browsers: dict[tuple[str, ...], SharedChromium] = {}

    def get(self, extra_args: Sequence[str] = ()) -> SharedChromium:
        key = tuple(extra_args)
        if key not in self._browsers:
            self._browsers[key] = SharedChromium(key)
            self._browsers[key].start()   # spawned now, while the test's other fixtures set up; browser() waits
        return self._browsers[key]

    def close(self) -> None:
        for shared in self._browsers.values():
            shared.stop()
        self._browsers.clear()
