"""Browser actor: makes sure a browser with our extension is connected — by waiting for the user's own Chrome, or by
launching a dedicated one (seed 004's launch/attach lifecycle).

Modes (``--browser``):
- ``connect``: only the user's own Chrome. State ``degraded`` while its extension is absent, ``connected`` when it
  returns; tools fail fast with `ExtensionNotConnected` saying how to install the extension.
- ``launch``: launch Chromium/Chrome now with the bundled extension and a dedicated persistent profile (or reuse the
  browser already running on that profile).
- ``auto`` (default): use the user's Chrome when its extension connects; if none has when a tool first needs a
  browser, launch the dedicated profile and say so on stderr.

Ownership is recorded (``launched`` vs ``attached``). On shutdown a headless browser we launched is closed, a headed
one (the user's logged-in window) is left open unless ``--close-browser``. A headless browser must not outlive us
even after SIGKILL: the child gets ``PR_SET_PDEATHSIG``.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import assert_never

import attrs
import trio

from supervisor.config import Config
from supervisor.errors import BridgeError, BrowserLaunchFailed, BrowserNotFound, ExtensionNotConnected
from supervisor.otp import ActorContext, Reply

from .protocol.browser import BrowserReport, BrowserRequest, BrowserState, BrowserStatus, EnsureBrowser, Ownership
from .protocol.relay import RELAY, LinkStatus, WaitConnected

log = logging.getLogger("ai_bridge.browser")

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
# Debian's /usr/bin/chromium is a shell wrapper adding flags from /etc/chromium.d (NOTES.md): use the real binary.
REAL_BINARIES = {"/usr/bin/chromium": "/usr/lib/chromium/chromium"}
# connect mode: a reconnecting extension polls every second, one connected to other servers every 5 s
CONNECT_MODE_WAIT_S = 6.0


def find_browser(explicit: str | None) -> str:
    if explicit:
        path = shutil.which(explicit) or explicit
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            raise BrowserNotFound(f"browser executable {explicit!r} not found or not executable",
                                  hint="Fix --browser-path / AI_BRIDGE_BROWSER.")
        return REAL_BINARIES.get(path, path) if os.path.exists(REAL_BINARIES.get(path, "")) else path
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            real = REAL_BINARIES.get(found)
            return real if real and os.access(real, os.X_OK) else found
    for fixed in ("/usr/lib/chromium/chromium", "/opt/google/chrome/chrome"):
        if os.access(fixed, os.X_OK):
            return fixed
    raise BrowserNotFound(
        "no Chromium or Chrome found",
        hint="Install one (Debian/Ubuntu: `apt-get install -y chromium`) or pass --browser-path.")


def browser_version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip()


def needs_pipe_loading(version: str) -> bool:
    """Branded Google Chrome >= 137 ignores --load-extension; it needs CDP Extensions.loadUnpacked over a pipe."""
    m = re.search(r"Google Chrome (\d+)", version)
    return bool(m and int(m.group(1)) >= 137)


def profile_owner(profile: Path) -> int | None:
    """PID of a live browser already running on `profile` (Chrome's SingletonLock is 'hostname-pid')."""
    try:
        target = os.readlink(profile / "SingletonLock")
    except OSError:
        return None
    host, _, pid_s = target.rpartition("-")
    if host != socket.gethostname() or not pid_s.isdigit():
        return None
    pid = int(pid_s)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def _die_with_parent() -> None:  # runs in the child between fork and exec
    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def launch_args(config: Config, extension_dir: Path, profile: Path, *, pipe: bool) -> list[str]:
    args = [
        f"--user-data-dir={profile}",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    if config.headless:
        args += ["--headless=new", "--disable-gpu", "--disable-dev-shm-usage"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    if pipe:
        args += ["--remote-debugging-pipe", "--enable-unsafe-extension-debugging"]
    else:
        args += [f"--load-extension={extension_dir}", f"--disable-extensions-except={extension_dir}"]
    args += list(config.browser_args)
    args.append("about:blank")
    return args


class BrowserProcess:
    """The launched browser, forked from the trio thread itself.

    PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, not the process. trio.lowlevel.open_process
    forks in a worker thread, and trio retires idle worker threads after 10 s: the browser got SIGTERM ~10 s after
    launch whenever nothing happened to reuse that thread (always in ``ask``/``doctor``). Forking here (a few ms on
    the event loop, once per launch) ties the death signal to the thread that runs trio, i.e. to us.
    """

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    async def wait(self) -> int:
        while (code := self.popen.poll()) is None:  # noqa: ASYNC110 - only used while closing, under a deadline
            await trio.sleep(0.02)
        return code


@attrs.define(eq=False)
class Launched:
    process: BrowserProcess
    path: str
    headless: bool
    temp_profile: tempfile.TemporaryDirectory[str] | None
    started: float
    pipe_fds: tuple[int, int] | None = None


class Browser:
    def __init__(self, ctx: ActorContext[BrowserRequest], config: Config, extension_dir: Path) -> None:
        self.ctx = ctx
        self.relay = ctx.ref(RELAY)
        self.config = config
        self.extension_dir = extension_dir
        self.mode = config.browser
        self.state = BrowserState.WAITING
        self.ownership: Ownership | None = None
        self.launched: Launched | None = None
        self.launch_lock = trio.Lock()
        self.last_error: str | None = None
        self.connected_after_launch_s: float | None = None

    async def link_connected(self) -> bool:
        return (await self.relay.call(LinkStatus(), timeout=5)).connected

    async def wait_link(self, timeout_s: float) -> None:
        await self.relay.call(WaitConnected(timeout_s), timeout=timeout_s + 5)

    async def ensure(self, timeout_s: float) -> None:
        if await self.link_connected():
            return
        if self.mode == "connect":
            try:
                await self.wait_link(min(timeout_s, CONNECT_MODE_WAIT_S))
            except ExtensionNotConnected:
                raise ExtensionNotConnected(
                    "the ai-bridge extension is not connected (--browser connect)",
                    hint=f"In your Chrome open chrome://extensions, enable Developer mode, 'Load unpacked' the folder "
                    f"{self.extension_dir} (`ai-bridge extension-path` prints it), then retry. Or run with "
                    "--browser auto to let ai-bridge launch its own browser.") from None
            return
        if self.mode == "auto" and self.launched is None and self.ownership is None:
            try:
                await self.wait_link(min(timeout_s, self.config.extension_wait_s))
                return
            except ExtensionNotConnected:
                print(f"ai-bridge: no browser extension connected within {self.config.extension_wait_s:g}s; "
                      f"launching a dedicated browser (profile {self.profile_dir()})", file=sys.stderr, flush=True)
        await self.launch()
        await self.wait_link(timeout_s)

    def profile_dir(self) -> Path:
        return self.config.effective_profile_dir

    async def launch(self) -> None:
        async with self.launch_lock:
            if self.launched is not None and self.launched.process.returncode is None:
                return
            if await self.link_connected():
                return
            self.state = BrowserState.LAUNCHING
            temp: tempfile.TemporaryDirectory[str] | None = None
            if self.config.isolated:
                temp = tempfile.TemporaryDirectory(prefix="ai-bridge-profile-")
                profile = Path(temp.name)
            else:
                profile = self.profile_dir()
                profile.mkdir(parents=True, exist_ok=True)
                owner = profile_owner(profile)
                if owner is not None:
                    # Another browser (ours from an earlier run, or the user's) already owns this profile: a second
                    # one would just hand the URL to it and exit. Use it; it has our extension loaded.
                    log.info("a browser (pid %d) already runs on profile %s; attaching to it", owner, profile)
                    self.ownership = Ownership.ATTACHED
                    return
            path = await trio.to_thread.run_sync(find_browser, self.config.browser_path)
            version = await trio.to_thread.run_sync(browser_version, path)
            mode = self.config.extension_loading
            pipe = mode == "pipe" or (mode == "auto" and needs_pipe_loading(version))
            args = launch_args(self.config, self.extension_dir, profile, pipe=pipe)
            log.info("launching %s (%s)%s", path, version or "unknown version", " headless" if self.config.headless
                     else "")
            log_path = self.config.state_dir / "browser.log"

            def open_log() -> int:
                log_path.parent.mkdir(parents=True, exist_ok=True)
                return os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

            browser_log = await trio.to_thread.run_sync(open_log)
            pipe_fds: tuple[int, int] | None = None
            pass_fds: tuple[int, ...] = ()
            child_fds: list[int] = [browser_log]
            if pipe:
                # Chrome reads commands on fd 3 and writes replies on fd 4.
                to_child_r, to_child_w = os.pipe()
                from_child_r, from_child_w = os.pipe()
                child_fds += [to_child_r, from_child_w]
                pipe_fds = (to_child_w, from_child_r)
            # A headless browser (or one --close-browser claims) must not outlive us; a headed one the user logs in
            # to is theirs to keep, so it must survive even our SIGKILL.
            tied = self.config.headless or self.config.close_browser

            def setup() -> None:
                if pipe:
                    os.dup2(to_child_r, 3)
                    os.dup2(from_child_w, 4)
                if tied:
                    _die_with_parent()

            if pipe:
                pass_fds = (3, 4)
            try:
                proc = BrowserProcess(subprocess.Popen(  # noqa: ASYNC220 - on purpose, see BrowserProcess
                    [path, *args], stdin=subprocess.DEVNULL, stdout=browser_log, stderr=browser_log,
                    start_new_session=True, preexec_fn=setup, pass_fds=pass_fds))
            except OSError as exc:
                self.state = BrowserState.DEGRADED
                raise BrowserLaunchFailed(f"cannot start {path}: {exc}") from exc
            finally:
                for fd in child_fds:
                    os.close(fd)
            self.launched = Launched(proc, path, self.config.headless, temp, time.time(), pipe_fds)
            self.ownership = Ownership.LAUNCHED
            if pipe_fds is not None:
                await self._load_extension_over_pipe(pipe_fds)

    async def _load_extension_over_pipe(self, fds: tuple[int, int]) -> None:
        write_fd, read_fd = fds
        msg = json.dumps({"id": 1, "method": "Extensions.loadUnpacked",
                          "params": {"path": str(self.extension_dir)}}).encode() + b"\0"

        def roundtrip() -> dict[str, object]:
            os.write(write_fd, msg)
            buf = b""
            while True:
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    raise OSError("browser closed the debugging pipe")
                buf += chunk
                while b"\0" in buf:
                    raw, buf = buf.split(b"\0", 1)
                    reply = json.loads(raw)
                    if not isinstance(reply, dict):
                        continue
                    if reply.get("id") == 1:
                        return reply

        with trio.move_on_after(15) as scope:
            reply = await trio.to_thread.run_sync(roundtrip, abandon_on_cancel=True)
        if scope.cancelled_caught or "error" in reply:
            error = reply.get("error")
            detail = "timed out" if scope.cancelled_caught else (
                error.get("message") if isinstance(error, dict) else str(error))
            raise BrowserLaunchFailed(
                f"this browser ignores --load-extension and Extensions.loadUnpacked failed: {detail}",
                hint="Load the extension by hand (chrome://extensions → Load unpacked → `ai-bridge extension-path`) "
                "and use --browser connect, or use Chromium.")
        result = reply.get("result")
        log.info("extension loaded over the debugging pipe (%s)", result.get("id") if isinstance(result, dict) else "?")

    async def watch(self) -> None:
        """Track connected / degraded for status and logs."""
        while True:
            since: float | None = None
            try:
                report = await self.relay.call(LinkStatus(), timeout=5)
                connected, since = report.connected, report.since
            except BridgeError:
                connected = False
            new = BrowserState.CONNECTED if connected else (
                BrowserState.DEGRADED if self.mode == "connect" or self.ownership else BrowserState.WAITING)
            if self.state is BrowserState.LAUNCHING and not connected:
                new = BrowserState.LAUNCHING
            if new != self.state:
                log.info("browser link: %s → %s", self.state, new)
                if new is BrowserState.CONNECTED and self.launched and self.connected_after_launch_s is None:
                    # From the link's own timestamp, not this 0.5 s poll.
                    self.connected_after_launch_s = (since or time.time()) - self.launched.started
                if new is BrowserState.CONNECTED and self.ownership is None:
                    self.ownership = Ownership.USER
                self.state = new
            if self.launched is not None and self.launched.process.returncode is not None:
                log.warning("the browser we launched exited (code %s)", self.launched.process.returncode)
                if self.launched.temp_profile is not None:
                    self.launched.temp_profile.cleanup()
                self.launched = None
                self.ownership = None
            await trio.sleep(0.5)

    def status(self) -> BrowserReport:
        launched = self.launched
        return BrowserReport(
            mode=self.mode, state=self.state, ownership=self.ownership,
            pid=launched.process.pid if launched else None, path=launched.path if launched else None,
            headless=launched.headless if launched else None,
            launch_to_connected_s=round(self.connected_after_launch_s, 3) if self.connected_after_launch_s else None,
            profile=str(self.profile_dir()) if not self.config.isolated else "(temporary)",
            extension_dir=str(self.extension_dir), last_error=self.last_error)

    async def close(self) -> None:
        launched = self.launched
        if launched is None:
            return
        if not launched.headless and not self.config.close_browser:
            log.info("leaving the headed browser (pid %d) open; --close-browser closes it", launched.process.pid)
            return
        proc = launched.process
        if proc.returncode is None:
            log.info("closing the browser we launched (pid %d)", proc.pid)
            _kill_group(proc.pid, signal.SIGTERM)
            with trio.move_on_after(1.5):
                await proc.wait()
            if proc.returncode is None:
                _kill_group(proc.pid, signal.SIGKILL)
                with trio.move_on_after(0.5):
                    await proc.wait()
        if launched.pipe_fds:
            for fd in launched.pipe_fds:
                os.close(fd)
        if launched.temp_profile is not None:
            launched.temp_profile.cleanup()
        self.launched = None


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # the renderer and helper processes too (the browser leads its own session)
    except ProcessLookupError:
        pass


async def run(
    ctx: ActorContext[BrowserRequest],
    *,
    config: Config,
    extension_dir: Path,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    browser = Browser(ctx, config, extension_dir)
    try:
        async with trio.open_nursery() as nursery:
            if config.browser == "launch":
                await browser.launch()  # eager: the first ask should not pay for the launch
            nursery.start_soon(browser.watch)
            task_status.started()

            async def handle(msg: BrowserRequest) -> Reply[object]:
                match msg:
                    case EnsureBrowser():
                        try:
                            await browser.ensure(msg.timeout_s)
                        except BridgeError as exc:
                            browser.last_error = str(exc)
                            raise
                        return msg.reply(None)
                    case BrowserStatus():
                        return msg.reply(browser.status())
                    case _:
                        assert_never(msg)

            async for env in ctx.messages():
                if isinstance(env.message, EnsureBrowser):
                    ctx.answer_soon(nursery, env, handle)  # waiting must not block status requests
                else:
                    await ctx.answer(env, handle)
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await browser.close()
