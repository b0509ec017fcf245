"""Browser actor: makes sure a browser with our extension is connected — by waiting for the user's own Chrome, by
waking the extension of the browser we launched, or by launching a dedicated one (seed 004's launch/attach
lifecycle).

Modes (``--browser``):
- ``connect``: only the user's own Chrome. An ask waits for its extension (progress "waiting for the extension")
  until it can be expected back — an idle extension looks for servers every 30 s — then fails with how to install
  it.
- ``launch``: launch Chromium/Chrome with our extension and a dedicated persistent profile (or attach to the browser
  already running on that profile, once its owner is verified).
- ``auto`` (default): use the user's Chrome when its extension connects; if none has when a tool first needs a
  browser, launch the dedicated profile. Once the user's Chrome was seen, a drop is waited out (re-attach first,
  seed 004) before launching; and when the user's Chrome comes back while our browser runs, ours is closed: two
  browsers with the extension would displace each other every 30 s.

The browser we launch is ours: it keeps a browser-level CDP channel over ``--remote-debugging-pipe``
(`pipe.BrowserPipe`). Through it a stopped extension service worker is woken at once (a hidden extension page), and
its end tells at once that the browser is closing. States follow seed 004: `degraded` while no usable browser
exists (the next ask recovers it: re-attach first, else relaunch), `closing` while the browser we launched shuts
down.

On shutdown a headless browser we launched is closed, a headed one (the user's logged-in window) is left open unless
``--close-browser``. A headless browser must not outlive us even after SIGKILL (PR_SET_PDEATHSIG, and its pipe).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import signal
import sys
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import assert_never

import attrs
import trio

from supervisor import files
from supervisor.config import Config
from supervisor.constants import SHARED
from supervisor.errors import (
    BridgeError,
    BrowserLaunchFailed,
    BrowserNotFound,
    DownloadUnavailable,
    ExtensionNotConnected,
    ProfileInUse,
)
from supervisor.otp import ActorContext, Envelope, Reply

from ..protocol.browser import (
    BrowserPhase,
    BrowserProgress,
    BrowserReport,
    BrowserRequest,
    BrowserState,
    BrowserStatus,
    CatchDownload,
    CaughtDownload,
    DropCause,
    EnsureBrowser,
    LastDrop,
    Ownership,
    RecoveryCounts,
    RecoveryResult,
)
from ..protocol.relay import RELAY, LinkReport, LinkStatus, RelayInfo, WaitConnected
from . import downloads, process
from .pipe import BrowserPipe, CdpEvent, CdpFailed, PipeError

log = logging.getLogger("ai_bridge.browser")

# An idle extension (no server connected) is woken by its keep-alive alarm every 30 s; with one discovery poll and the
# handshake it is back within this. Connect mode, and auto mode after the user's Chrome dropped, wait this long.
ALARM_WINDOW_S = 35.0
# A reconnecting extension polls every second, one connected to other servers every 5 s.
CONNECT_MIN_WAIT_S = 6.0
PROFILE_OWNER_WAIT_S = 6.0  # a browser on our profile without our extension on its command line gets this long
# Our own browser, its worker woken: it connects in about a second; one displaced by another connection (the
# `replaced` close code) backs off for 30 s first, whatever wakes it.
WAKE_WAIT_S = ALARM_WINDOW_S
WAKE_ANSWER_S = 3.0  # a live browser opens a page at once; one that does not is shutting down or hung
START_S = 15.0  # a launched browser must answer on its pipe within this
DEAD_LINK_S = 3.0  # the link of a browser that has exited is gone within this (else it is taken as live)
CLOSE_GRACE_S = 8.0  # a browser of ours that is shutting down gets this long before we end it
PROGRESS_EVERY_S = 5.0
MAX_UNASKED_WAKES = 5  # per minute: a worker that keeps dying is not woken in a loop (an ask still wakes it)

WORKER_URL = f"{SHARED.extension_origin}/background.js"
# Opening the popup page wakes a stopped worker (its runtime message starts it) and makes it poll discovery now.
WAKE_URL = f"{SHARED.extension_origin}/popup.html"
# The worker publishes its connections for the popup in chrome.storage.session (background.js): read through our
# own browser's pipe, it tells whether the connected extension is the one in our browser.
SERVERS_EXPR = "chrome.storage.session.get('servers').then(r => JSON.stringify(r.servers ?? []))"
# Pairs the extension of a browser we launched with our key (extension/pairing.js): it obeys only servers whose key
# it holds. Only this pipe reaches the worker's global scope. A worker that has not evaluated its module yet gives
# null (or an exception): tried again shortly.
PAIR_EXPR = "typeof globalThis.aiBridgePair === 'function' ? globalThis.aiBridgePair(%s) : null"
PAIR_WITHIN_S = 20.0
# Auto mode: the user's Chrome (an extension connection from a browser we neither launched nor attached to) seen within
# this many days makes the first ask wait out its extension's alarm before launching a browser that is not logged in.
USERS_CHROME_RECENT_DAYS = 14
USERS_CHROME_FILE = "users-chrome.json"  # in the state dir: {"lastSeen": <unix time>}


def read_users_chrome(state_dir: Path) -> float | None:
    """When the user's Chrome was last seen (unix time), from the state dir; None when unknown or not believable."""
    try:
        raw = files.read_private(state_dir / USERS_CHROME_FILE, 4096)
        data = json.loads(raw) if raw is not None else None
    except (OSError, ValueError, BridgeError):
        return None
    seen = data.get("lastSeen") if isinstance(data, dict) else None
    if not isinstance(seen, int | float) or isinstance(seen, bool) or not 0 < seen <= time.time() + 86400:
        return None
    return float(seen)


def write_users_chrome(state_dir: Path, seen: float) -> None:
    try:
        files.ensure_private_dir(state_dir)
        files.write_atomic(state_dir / USERS_CHROME_FILE, json.dumps({"lastSeen": round(seen, 3)}).encode())
    except (OSError, BridgeError) as exc:
        log.info("could not record when your Chrome was seen: %s", exc)


@attrs.define(eq=False)
class Launched:
    """A browser we started, with its channel and the tasks watching it."""

    process: process.BrowserProcess
    path: str
    version: str
    headless: bool
    profile: Path
    temp_profile: tempfile.TemporaryDirectory[str] | None
    pipe: BrowserPipe
    log_offset: int
    started: float = attrs.field(factory=time.time)
    connected_s: float | None = None  # launch → its extension's first connection
    worker_target: str | None = None  # the extension's service worker, while it runs
    worker_seen: trio.Event = attrs.field(factory=trio.Event)
    closing: bool = False  # shutting down: its pipe ended while it lives, or we are closing it
    going: trio.Event = attrs.field(factory=trio.Event)  # set when closing starts or it exited
    exited: trio.Event = attrs.field(factory=trio.Event)
    code: int | None = None
    wake_lock: trio.Lock = attrs.field(factory=trio.Lock)
    unasked_wakes: deque[float] = attrs.field(factory=lambda: deque(maxlen=MAX_UNASKED_WAKES))
    wakes_sent: int = 0  # wakes begun for a stopped worker (asked or not)
    warned_foreign: bool = False
    link_since: float | None = None  # its extension's link, once seen to be its own
    download_watch: downloads.Watch | None = None  # while a download catch is armed
    download_lock: trio.Lock = attrs.field(factory=trio.Lock)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return not self.exited.is_set()


@attrs.define(eq=False)
class Attached:
    """A browser we did not start but attached to (one on our profile, left open by an earlier run): tracked like
    one we launched — handed over when the user's Chrome comes, forgotten when it exits."""

    pid: int
    browser_id: str | None = None  # its extension's profile id (the hello's), once its link was seen
    exited: trio.Event = attrs.field(factory=trio.Event)

    @property
    def alive(self) -> bool:
        return not self.exited.is_set()


ATTACHED_POLL_S = 1.0  # a browser we did not start gives us nothing to wait on but polling


@attrs.define
class _Counts:
    attempts: int = 0
    reattached: int = 0
    relaunched: int = 0
    failed: int = 0
    worker_wakes: int = 0
    handovers: int = 0

    def frozen(self) -> RecoveryCounts:
        return RecoveryCounts(**attrs.asdict(self))


class Browser:
    def __init__(self, ctx: ActorContext[BrowserRequest], config: Config, extension_dir: Path,
                 nursery: trio.Nursery) -> None:
        self.ctx = ctx
        self.relay = ctx.ref(RELAY)
        self.config = config
        self.extension_dir = extension_dir
        self.nursery = nursery
        self.mode = config.browser
        self.ownership: Ownership | None = None
        self.launched: Launched | None = None
        self.attached_pid: int | None = None
        self.attached: Attached | None = None
        self.link_browser: int | None = None  # the browser process holding the link (when it could be told)
        self.dead_link_since: float | None = None  # the link of the browser we launched, once that has exited
        self.last_drop: LastDrop | None = None
        self.users_chrome_seen: float | None = None  # when the user's Chrome was last seen (read at start)
        self.launch_lock = trio.Lock()
        self.starting = 0  # launches / attaches in progress
        self.stopping = False
        self.last_error: str | None = None
        self.counts = _Counts()
        self.last_recovery: RecoveryResult | None = None
        # the link as the watcher last saw it
        self.link_up = False
        self.link_since: float | None = None
        self.ever_connected = False
        self.seen_user = False  # the user's own Chrome was connected in this run
        self.down_since = trio.current_time()  # when the link was last lost (or we started)
        self.launch_failed = False
        self.versions: dict[str, str] = {}

    # -- the link ---------------------------------------------------------------------------------------------------

    async def link_connected(self) -> bool:
        connected = await self.refresh_link()
        if connected and self.link_since is not None and self.link_since == self.dead_link_since:
            # That link's browser (ours) has exited: its socket is closing, and the relay is a moment behind. A
            # command sent on it now would fail with extension_disconnected instead of the relaunch.
            with trio.move_on_after(DEAD_LINK_S):
                while connected:
                    await trio.sleep(0.05)
                    connected = await self.refresh_link()
        return connected

    async def wait_link(self, until: float, *, gone: trio.Event | None = None,
                        progress: Callable[[float], None] | None = None) -> bool:
        """Until the extension connects (True), `gone` is set (False) or `until` passes (ExtensionNotConnected
        from the relay). `progress(waited_s)` is called at once and every few seconds."""
        t0 = trio.current_time()
        connected = False
        failure: BridgeError | None = None
        # Child tasks only set results; nothing raises through the nursery (it would arrive as an ExceptionGroup).
        async with trio.open_nursery() as nursery:
            async def link() -> None:
                nonlocal connected, failure
                left = max(0.0, until - trio.current_time())
                try:
                    await self.relay.call(WaitConnected(left), timeout=left + 5)
                    connected = True
                except BridgeError as exc:
                    failure = exc
                nursery.cancel_scope.cancel()

            async def watch_gone(event: trio.Event) -> None:
                await event.wait()
                nursery.cancel_scope.cancel()

            async def tick(report: Callable[[float], None]) -> None:
                while True:
                    report(trio.current_time() - t0)
                    await trio.sleep(PROGRESS_EVERY_S)

            nursery.start_soon(link)
            if gone is not None:
                nursery.start_soon(watch_gone, gone)
            if progress is not None:
                nursery.start_soon(tick, progress)
        if failure is not None and not (gone is not None and gone.is_set()):
            raise failure
        return connected

    def ours_closing(self) -> bool:
        launched = self.launched
        return launched is not None and launched.closing and launched.alive

    # -- ensure -----------------------------------------------------------------------------------------------------

    async def ensure(self, env: Envelope[BrowserRequest], timeout_s: float) -> None:
        log.debug("ensure: mode %s, state %s", self.mode, self.state())
        # A link from a browser of ours that is shutting down is about to go: not worth an ask.
        if await self.link_connected() and not self.ours_closing():
            return
        deadline = trio.current_time() + timeout_s

        def progress(phase: BrowserPhase, message: str) -> Callable[[float], None]:
            def report(waited_s: float) -> None:
                env.progress(BrowserProgress(phase, message, round(waited_s, 1)))
            return report

        recovering = self.ever_connected
        relaunches = self.counts.relaunched
        if recovering:
            self.counts.attempts += 1
        try:
            match self.mode:
                case "connect":
                    await self.wait_for_user(deadline, progress, install_hint=True)
                case "launch":
                    await self.ensure_ours(deadline, progress)
                case "auto":
                    await self.ensure_auto(deadline, progress)
                case other:
                    raise AssertionError(f"unknown browser mode {other!r}")  # Config validated it
        except BridgeError as exc:
            self.last_error = str(exc)
            if recovering:
                self.counts.failed += 1
                self.last_recovery = RecoveryResult.FAILED
                log.warning("recovery attempt %d: failed (%s)", self.counts.attempts, exc.code)
            raise
        self.last_error = None
        await self.refresh_link()  # ownership and timings of the browser that just connected, for the next status
        if recovering:
            result = RecoveryResult.RELAUNCHED if self.counts.relaunched > relaunches else RecoveryResult.REATTACHED
            if result is RecoveryResult.REATTACHED:
                self.counts.reattached += 1
            self.last_recovery = result
            log.info("recovery attempt %d: %s", self.counts.attempts, result.value)

    def expected_back_by(self) -> float:
        """When an extension that dropped (or has not come yet) can be expected: its alarm wakes it every 30 s."""
        return max(self.down_since + ALARM_WINDOW_S, trio.current_time() + CONNECT_MIN_WAIT_S)

    async def wait_for_user(self, deadline: float, progress: Callable[[BrowserPhase, str], Callable[[float], None]],
                            *, install_hint: bool) -> None:
        """Wait for the user's Chrome (its extension) until it can be expected back."""
        until = min(deadline, self.expected_back_by())
        report = progress(BrowserPhase.WAITING_FOR_EXTENSION,
                          "waiting for the ai-bridge extension in your Chrome (an idle extension looks for servers "
                          "every 30 s; clicking its toolbar icon wakes it now)")
        try:
            await self.wait_link(until, progress=report)
        except ExtensionNotConnected:
            if not install_hint:
                raise
            waited = "" if not self.ever_connected else " (it was connected earlier: is that Chrome still open?)"
            raise ExtensionNotConnected(
                f"the ai-bridge extension is not connected (--browser connect){waited}",
                hint=f"In your Chrome open chrome://extensions, enable Developer mode, 'Load unpacked' the folder "
                f"{self.extension_dir} (`ai-bridge extension-path` prints it), then pair it: paste the code "
                "`ai-bridge pair` prints into its popup (it obeys only paired servers), and retry; if it is loaded "
                "and paired, click its toolbar icon to wake it. Or run with --browser auto to let ai-bridge launch "
                "its own browser.") from None

    async def ensure_auto(self, deadline: float,
                          progress: Callable[[BrowserPhase, str], Callable[[float], None]]) -> None:
        launched = self.launched
        if launched is not None and launched.alive:
            await self.ensure_ours(deadline, progress)
            return
        if self.seen_user:
            # Seed 004: re-attach first. The user's Chrome was here; after a drop (extension reload, Chrome update,
            # a stopped worker) it comes back by itself. Launching now would start a second browser that fights it.
            try:
                await self.wait_for_user(deadline, progress, install_hint=False)
                return
            except ExtensionNotConnected:
                if trio.current_time() >= deadline:
                    raise ExtensionNotConnected(
                        "your Chrome's ai-bridge extension has not come back yet",
                        hint="Click the extension's toolbar icon in your Chrome (it wakes it now), or retry; if "
                        "that Chrome is closed, the next ask launches a dedicated browser.") from None
                waited = trio.current_time() - self.down_since
                print(f"ai-bridge: your Chrome's extension has been gone for {waited:.0f}s; launching a dedicated "
                      f"browser (profile {self.profile_dir()})", file=sys.stderr, flush=True)
        elif self.launched is None and not self.ever_connected and not self.launch_failed:
            seen = self.users_chrome_seen
            days = (time.time() - seen) / 86400 if seen is not None else None
            recent = days is not None and days <= USERS_CHROME_RECENT_DAYS
            # Your Chrome was here lately: its extension may be asleep (it looks for servers every 30 s). A browser
            # launched now would not be logged in, and the ask would fail with login_required: wait for yours.
            wait_s = max(self.config.extension_wait_s, ALARM_WINDOW_S) if recent else self.config.extension_wait_s
            until = min(deadline, trio.current_time() + wait_s)
            why = (f"your Chrome with the ai-bridge extension was seen {days:.0f} days ago, so ai-bridge waits up to "
                   f"{wait_s:g}s for it (an idle extension looks for servers every 30 s; clicking its toolbar icon "
                   "wakes it now) before launching a browser of its own, which would not be logged in"
                   if recent and days is not None else
                   "waiting for the ai-bridge extension in your Chrome before launching a browser of our own")
            report = progress(BrowserPhase.WAITING_FOR_EXTENSION, why)
            log.info("auto mode, first ask: %s", why)
            try:
                await self.wait_link(until, progress=report)
                return
            except ExtensionNotConnected:
                print(f"ai-bridge: no browser extension connected within {wait_s:g}s; "
                      f"launching a dedicated browser (profile {self.profile_dir()})", file=sys.stderr, flush=True)
        await self.ensure_ours(deadline, progress)

    async def ensure_ours(self, deadline: float,
                          progress: Callable[[BrowserPhase, str], Callable[[float], None]]) -> None:
        """A browser of ours (launched, or already on our profile) with its extension connected."""
        async with self.launch_lock:
            if await self.link_connected() and not self.ours_closing():
                return
            launched = self.launched
            if launched is not None and launched.alive and not launched.closing:
                report = progress(BrowserPhase.WAKING_WORKER, "waking the ai-bridge extension in the browser "
                                  f"ai-bridge launched (pid {launched.pid})")
                if not await self.wake_worker(launched, asked=True) and launched.alive and not launched.closing:
                    # A browser that cannot even open a page is on its way out (shutting down, or hung).
                    log.info("the browser (pid %d) does not answer on its debugging pipe; taking it as closing",
                             launched.pid)
                    launched.closing = True
                    launched.going.set()
                try:
                    if await self.wait_link(min(deadline, trio.current_time() + WAKE_WAIT_S), gone=launched.going,
                                            progress=report):
                        return
                except ExtensionNotConnected:
                    raise ExtensionNotConnected(
                        f"the browser ai-bridge launched (pid {launched.pid}) runs, but its extension does not "
                        "connect", hint=f"Read {self.browser_log}; chrome://extensions in that browser shows the "
                        "extension's errors. Closing that browser lets the next ask launch it afresh.") from None
                launched = self.launched  # it went away while we waited: fall through
            if launched is not None and launched.closing and launched.alive:
                await self.finish_closing(launched, progress)
            if not self.config.isolated:
                profile = self.profile_dir()
                owner = await trio.to_thread.run_sync(process.profile_owner, profile, self.extension_dir)
                if owner is not None and (launched is None or owner.pid != launched.pid):
                    if await self.attach(owner, deadline, progress):
                        return
            await self.launch(deadline, progress)

    async def finish_closing(self, launched: Launched,
                             progress: Callable[[BrowserPhase, str], Callable[[float], None]]) -> None:
        """The browser we launched is shutting down: let it finish (its profile is being written), then go on."""
        report = progress(BrowserPhase.WAITING_FOR_CLOSE, f"the browser (pid {launched.pid}) is still closing; "
                          "waiting for it before launching again")
        report(0.0)
        log.info("the browser (pid %d) is still closing; waiting up to %gs", launched.pid, CLOSE_GRACE_S)
        with trio.move_on_after(CLOSE_GRACE_S):
            await launched.exited.wait()
        if launched.alive:
            log.warning("the browser (pid %d) did not finish closing within %gs; ending it", launched.pid,
                        CLOSE_GRACE_S)
            await self.end_process(launched)

    async def attach(self, owner: process.ProfileOwner, deadline: float,
                     progress: Callable[[BrowserPhase, str], Callable[[float], None]]) -> bool:
        """A browser already runs on our profile (verified): use it if its extension connects. → False when it
        exited meanwhile (launch then). Its extension gets the alarm window if the browser carries it."""
        log.info("a browser (pid %d) already runs on profile %s%s; attaching to it", owner.pid, self.profile_dir(),
                 "" if owner.has_our_extension else " (without our extension on its command line)")
        wait_s = ALARM_WINDOW_S if owner.has_our_extension else PROFILE_OWNER_WAIT_S
        gone = trio.Event()
        watching = trio.CancelScope()

        async def watch_owner() -> None:
            with watching:
                # a process we did not start gives us nothing to wait on but polling
                while await trio.to_thread.run_sync(process.process_command, owner.pid) is not None:  # noqa: ASYNC110
                    await trio.sleep(0.2)
                gone.set()

        self.starting += 1
        self.ownership, self.attached_pid = Ownership.ATTACHED, owner.pid
        try:
            report = progress(BrowserPhase.ATTACHING, f"a browser (pid {owner.pid}) already runs on the profile "
                              f"{self.profile_dir()}; waiting for its ai-bridge extension")
            self.nursery.start_soon(watch_owner)
            try:
                connected = await self.wait_link(min(deadline, trio.current_time() + wait_s), gone=gone,
                                                 progress=report)
            finally:
                watching.cancel()
        except ExtensionNotConnected:
            self.ownership, self.attached_pid = None, None
            self.launch_failed = True
            without = "" if owner.has_our_extension else ", which was not started with the ai-bridge extension,"
            raise ProfileInUse(
                f"the profile {self.profile_dir()} is in use by another browser (pid {owner.pid}){without} and no "
                f"ai-bridge extension connected from it within {wait_s:g}s",
                hint=f"Close that browser (`kill {owner.pid}`) and retry; or give ai-bridge a profile of its own "
                "with --profile-dir DIR or --isolated. If it is a browser ai-bridge left open, click the ai-bridge "
                "toolbar icon in it to wake the extension.") from None
        finally:
            self.starting -= 1
        if connected:
            self.track_attached(owner.pid)
            return True
        log.info("the browser (pid %d) on our profile exited while we waited; launching", owner.pid)
        self.ownership, self.attached_pid = None, None
        with trio.move_on_after(2):  # its SingletonLock goes with it; a launch right now could still meet it
            while await trio.to_thread.run_sync(process.profile_owner, self.profile_dir()) is not None:  # noqa: ASYNC110
                await trio.sleep(0.1)
        return False

    # -- launch -----------------------------------------------------------------------------------------------------

    def profile_dir(self) -> Path:
        return self.config.effective_profile_dir

    @property
    def browser_log(self) -> Path:
        return self.config.state_dir / "browser.log"

    async def launch(self, deadline: float,
                     progress: Callable[[BrowserPhase, str], Callable[[float], None]]) -> None:
        """Launch a browser and wait for its extension; a browser that dies at start is `BrowserLaunchFailed` (or
        `ProfileInUse`) at once, with its own stderr line."""
        self.starting += 1
        try:
            launched = await self.start_browser(progress)
            self.launch_failed = False
            report = progress(BrowserPhase.LAUNCHING, f"waiting for the ai-bridge extension in the browser just "
                              f"launched (pid {launched.pid})")
            try:
                connected = await self.wait_link(deadline, gone=launched.going, progress=report)
            except ExtensionNotConnected:
                raise ExtensionNotConnected(
                    f"the browser ai-bridge launched (pid {launched.pid}) runs, but its extension did not connect",
                    hint=f"Read {self.browser_log}. A branded Google Chrome may refuse the extension: try "
                    "extension_loading = \"pipe\" in the config, or Chromium.") from None
            if not connected:
                raise await self.launch_failure(launched)
        except BridgeError:
            self.launch_failed = True
            raise
        finally:
            self.starting -= 1

    async def start_browser(self, progress: Callable[[BrowserPhase, str], Callable[[float], None]]) -> Launched:
        config = self.config
        path = process.find_browser(config.browser_path, config.channel)  # a few stat calls
        temp: tempfile.TemporaryDirectory[str] | None = None
        if config.isolated:
            temp = tempfile.TemporaryDirectory(prefix="ai-bridge-profile-")
            profile = Path(temp.name)
        else:
            profile = self.profile_dir()
            try:
                profile.mkdir(parents=True, exist_ok=True)
                if not os.access(profile, os.W_OK | os.X_OK):
                    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(profile))
            except OSError as exc:  # the user's setting, not a bug: say which folder and what the system said
                raise BrowserLaunchFailed(
                    f"cannot use the browser profile folder {profile}: {exc.strerror or exc}",
                    hint="Pass a --profile-dir (config profile_dir) that is a folder you can write, or one that can "
                    "be made; or --isolated for a temporary profile.") from exc
        if (version := self.versions.get(path)) is None:  # a subprocess: once per executable, not per launch
            version = self.versions[path] = await trio.to_thread.run_sync(process.browser_version, path)
        loading = config.extension_loading
        pipe_loading = loading == "pipe" or (loading == "auto" and process.needs_pipe_loading(version))
        extensions = [self.extension_dir, *config.load_extensions]
        args = process.launch_args(config, extensions, profile, pipe_loading=pipe_loading)
        progress(BrowserPhase.LAUNCHING, f"launching {Path(path).name} ({version or 'unknown version'})")(0.0)
        log.info("launching %s (%s)%s on profile %s", path, version or "unknown version",
                 " headless" if config.headless else "", profile)

        def open_log() -> tuple[int, int]:
            self.browser_log.parent.mkdir(parents=True, exist_ok=True)
            # a state file like any other: never through a symlink another user planted, 0600
            fd = files.open_private(self.browser_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            return fd, os.lseek(fd, 0, os.SEEK_END)

        log_fd, offset = await trio.to_thread.run_sync(open_log)
        # A headless browser (or one --close-browser claims) must not outlive us; a headed one the user logs in to
        # is theirs to keep, so it must survive even our SIGKILL.
        tied = config.headless or config.close_browser
        try:
            proc, write_fd, read_fd = process.spawn(path, args, log_fd, tied=tied)
        except OSError as exc:
            if temp is not None:
                temp.cleanup()
            raise BrowserLaunchFailed(f"cannot start {path}: {exc}",
                                      hint="Check --browser-path / --channel, and that the file is a browser.") from exc
        finally:
            os.close(log_fd)
        launched = Launched(proc, path, version, config.headless, profile, temp, BrowserPipe(write_fd, read_fd),
                            offset)
        self.launched, self.ownership, self.attached_pid = launched, Ownership.LAUNCHED, None
        if self.ever_connected:
            self.counts.relaunched += 1
        self.nursery.start_soon(self.watch_process, launched)
        self.nursery.start_soon(self.read_pipe, launched)
        self.nursery.start_soon(self.watch_targets, launched)
        try:
            await launched.pipe.send("Browser.getVersion", timeout=START_S)
            if pipe_loading:
                await self.load_over_pipe(launched, extensions)
            await launched.pipe.send("Target.setDiscoverTargets", {"discover": True})
            self.nursery.start_soon(self.pair_extension, launched)
        except PipeError as exc:
            if isinstance(exc, CdpFailed) or not (launched.closing or not launched.alive):
                log.warning("the browser (pid %d) did not start its debugging pipe: %s", launched.pid, exc)
                await self.end_process(launched)
            raise await self.launch_failure(launched) from exc
        return launched

    async def load_over_pipe(self, launched: Launched, extensions: list[Path]) -> None:
        for i, ext in enumerate(extensions):
            try:
                got = await launched.pipe.send("Extensions.loadUnpacked", {"path": str(ext)}, timeout=15)
            except CdpFailed as exc:
                if i > 0:  # the user's own extension: ours works without it
                    log.warning("could not load the extension %s over the debugging pipe: %s", ext, exc)
                    continue
                await self.end_process(launched)
                raise BrowserLaunchFailed(
                    f"this browser ignores --load-extension and Extensions.loadUnpacked failed: {exc}",
                    hint="Load the extension by hand (chrome://extensions → Load unpacked → `ai-bridge "
                    "extension-path`) and use --browser connect, or use Chromium.") from exc
            log.info("extension %s loaded over the debugging pipe (%s)", ext, got.get("id"))

    async def launch_failure(self, launched: Launched) -> BridgeError:
        """The typed error for a browser that went away before its extension connected."""
        with trio.move_on_after(3):
            await launched.exited.wait()
        code = launched.code
        output = await trio.to_thread.run_sync(process.read_log_since, self.browser_log, launched.log_offset)
        why = process.diagnose(output, code, launched.version)
        exited = f"exited at once (exit code {code})" if code is not None else "closed at once"
        message = f"the browser {exited}: {why.line}"
        log.warning("launch failed: %s", message)
        if why.not_a_browser:
            return BrowserNotFound(f"{launched.path} is not a browser: {why.line}, and it {exited}",
                                   hint=why.hint)
        if why.profile_in_use:
            return ProfileInUse(f"{message} (profile {launched.profile})", hint=why.hint)
        return BrowserLaunchFailed(message, hint=why.hint)

    # -- the launched browser's life --------------------------------------------------------------------------------

    async def watch_process(self, launched: Launched) -> None:
        launched.code = await launched.process.wait()
        launched.exited.set()
        launched.going.set()
        self.dead_link_since = launched.link_since
        if self.launched is launched:
            # Closed on purpose (by us, or Chrome shutting down as its window closed) is news, not a problem.
            level = logging.INFO if self.stopping or launched.closing else logging.WARNING
            log.log(level, "the browser we launched (pid %d) exited: %s", launched.pid,
                    process.exit_reason(launched.code))
            self.launched = None
            if self.ownership is Ownership.LAUNCHED:
                self.ownership = None
            if level == logging.WARNING:
                # Why it died is in what it printed last (a CHECK failure before SIGABRT, an out-of-memory line).
                output = await trio.to_thread.run_sync(process.read_log_since, self.browser_log, launched.log_offset)
                log.warning("the end of %s: %s", self.browser_log, process.log_tail(output))
        if launched.temp_profile is not None:
            launched.temp_profile.cleanup()
        await launched.pipe.aclose()

    async def read_pipe(self, launched: Launched) -> None:
        await launched.pipe.run()
        if launched.alive and not launched.closing:
            # Chrome closes its pipe as it shuts down (a closed window, a signal): seed 004's `closing`.
            log.info("the browser (pid %d) closed its debugging pipe: it is shutting down", launched.pid)
        launched.closing = True
        launched.going.set()

    async def watch_targets(self, launched: Launched) -> None:
        async for event in launched.pipe.events:
            self.on_target_event(launched, event)

    def on_target_event(self, launched: Launched, event: CdpEvent) -> None:
        if event.method in downloads.EVENTS:
            if launched.download_watch is not None:
                launched.download_watch.on_event(event)
        elif event.method in ("Target.targetCreated", "Target.targetInfoChanged"):
            info = event.params.get("targetInfo")
            if isinstance(info, dict) and info.get("type") == "service_worker" and info.get("url") == WORKER_URL:
                target = info.get("targetId")
                if isinstance(target, str):
                    launched.worker_target = target
                    launched.worker_seen.set()
        elif event.method == "Target.targetDestroyed":
            if event.params.get("targetId") == launched.worker_target and launched.worker_target is not None:
                launched.worker_target = None
                launched.worker_seen = trio.Event()
                log.info("the extension's service worker in the browser (pid %d) stopped", launched.pid)
                if not launched.closing and not self.stopping:
                    self.nursery.start_soon(self.wake_unasked, launched)

    async def wake_unasked(self, launched: Launched) -> None:
        """The worker stopped (Chrome idled it out, or it crashed): wake it now instead of at its next alarm, so the
        next ask finds the link up. Rate-limited: a worker that dies at once is not woken in a loop."""
        wakes_before = launched.wakes_sent
        await trio.sleep(0.5)  # an extension reload brings its new worker by itself
        if launched.closing or not launched.alive or self.stopping:
            return
        if launched.worker_target is not None:
            if launched.wakes_sent != wakes_before:
                return  # an ask woke it meanwhile
            # Chrome starts a worker again by itself when an event is due for it: nothing to wake.
            log.info("the extension's service worker in the browser (pid %d) came back by itself", launched.pid)
            return
        now = trio.current_time()
        wakes = launched.unasked_wakes
        if len(wakes) == wakes.maxlen and now - wakes[0] < 60:
            log.warning("the extension's worker keeps stopping; not waking it again until an ask needs it")
            return
        wakes.append(now)
        await self.wake_worker(launched, asked=False)

    async def wake_worker(self, launched: Launched, *, asked: bool) -> bool:
        """Open the extension's popup page in a hidden target: its runtime message starts a stopped worker and
        makes a running one poll discovery at once. Closed again as soon as the worker runs. → False when the
        browser could not open it (it does not answer, or refuses)."""
        async with launched.wake_lock:
            asleep = launched.worker_target is None
            launched.wakes_sent += asleep
            target: str | None = None
            try:
                try:
                    got = await launched.pipe.send("Target.createTarget", {"url": WAKE_URL, "hidden": True},
                                                   timeout=WAKE_ANSWER_S)
                except CdpFailed:  # a Chrome without hidden targets: a background tab, closed right after
                    got = await launched.pipe.send("Target.createTarget", {"url": WAKE_URL, "background": True},
                                                   timeout=WAKE_ANSWER_S)
                value = got.get("targetId")
                target = value if isinstance(value, str) else None
                with trio.move_on_after(3):
                    await launched.worker_seen.wait()
                    await trio.sleep(0.2)  # the popup's message is what starts the discovery poll
                if asleep:
                    self.counts.worker_wakes += 1
                    log.info("woke the extension's service worker in the browser (pid %d)%s", launched.pid,
                             "" if asked else " (it had stopped)")
            except PipeError as exc:
                log.info("could not wake the extension's worker: %s", exc)
                return False
            finally:
                if target is not None:
                    with trio.CancelScope(shield=True, deadline=trio.current_time() + 2):
                        try:
                            await launched.pipe.send("Target.closeTarget", {"targetId": target})
                        except PipeError:
                            pass
            return True

    async def pair_extension(self, launched: Launched) -> None:
        """Give the extension of a browser we launched our pairing key, over the pipe (docs/security.md, Pairing):
        its first connection needs no click. Idempotent; the key stays in its profile."""
        deadline = trio.current_time() + PAIR_WITHIN_S
        while trio.current_time() < deadline:
            if launched.closing or not launched.alive or self.stopping:
                return
            worker = launched.worker_target
            if worker is None:
                with trio.move_on_at(deadline):
                    await launched.worker_seen.wait()
                continue
            if (key_id := await self.pair_once(launched, worker)) is not None:
                log.info("paired the extension of the browser (pid %d) with key %s", launched.pid, key_id)
                return
            await trio.sleep(0.1)
        log.warning("could not pair the extension of the browser (pid %d) over its pipe; it will not connect. "
                    "Pair it by hand: `ai-bridge pair`", launched.pid)

    async def pair_once(self, launched: Launched, worker: str) -> str | None:
        """One try at handing the key to the worker → the key id it stored, or None."""
        try:
            code = (await self.relay.call(RelayInfo(), timeout=5)).pairing_code
            session = await launched.pipe.send("Target.attachToTarget", {"targetId": worker, "flatten": True})
            session_id = session.get("sessionId")
            if not isinstance(session_id, str):
                return None
            try:
                got = await launched.pipe.send(
                    "Runtime.evaluate", {"expression": PAIR_EXPR % json.dumps(code), "awaitPromise": True,
                                         "returnByValue": True}, session_id=session_id, timeout=5)
            finally:
                await launched.pipe.send("Target.detachFromTarget", {"sessionId": session_id})
        except (PipeError, BridgeError) as exc:
            log.debug("pairing the extension over the pipe: %s", exc)
            return None
        result = got.get("result")
        value = result.get("value") if isinstance(result, dict) else None
        if "exceptionDetails" in got or not isinstance(value, str):
            log.debug("pairing the extension over the pipe: not yet (%.200s)", got)
            return None
        return value

    async def our_extension_holds_link(self, launched: Launched) -> bool | None:
        """Whether the connected extension is the one in our browser: True, False, or None (cannot tell)."""
        worker = launched.worker_target
        if worker is None:
            return False  # its worker is stopped: it holds no connection
        try:
            server_id = (await self.relay.call(RelayInfo(), timeout=5)).server_id
            session = (await launched.pipe.send("Target.attachToTarget", {"targetId": worker, "flatten": True}))
            session_id = session.get("sessionId")
            if not isinstance(session_id, str):
                return None
            try:
                got = await launched.pipe.send("Runtime.evaluate", {"expression": SERVERS_EXPR, "awaitPromise": True,
                                                                    "returnByValue": True}, session_id=session_id)
            finally:
                await launched.pipe.send("Target.detachFromTarget", {"sessionId": session_id})
        except (PipeError, BridgeError) as exc:
            log.debug("cannot read our extension's connections: %s", exc)
            return None
        result = got.get("result")
        value = result.get("value") if isinstance(result, dict) else None
        try:
            rows = json.loads(value) if isinstance(value, str) else None
        except ValueError:
            rows = None
        if not isinstance(rows, list):
            return None
        return any(isinstance(r, dict) and r.get("serverId") == server_id and r.get("state") == "open" for r in rows)

    async def check_new_link(self, launched: Launched, since: float | None) -> None:
        """A new extension connection while our browser runs: is it ours? If the user's Chrome took the link in
        auto mode, step aside (close ours): two browsers with the extension would displace each other for good."""
        verdicts: list[bool | None] = []
        for delay in (0.5, 1.0):  # the worker publishes its rows ~0.1 s after a change; two looks, apart
            await trio.sleep(delay)
            if self.link_since != since or self.launched is not launched or not launched.alive:
                return
            verdicts.append(await self.our_extension_holds_link(launched))
        if True in verdicts:
            launched.link_since = since  # its own link: dead with it
        if True in verdicts or None in verdicts:
            return
        if self.mode == "auto":
            print(f"ai-bridge: your Chrome's extension connected; closing the dedicated browser (pid {launched.pid}) "
                  "so that the two do not take turns", file=sys.stderr, flush=True)
            log.info("the user's Chrome holds the link; closing the browser we launched (pid %d)", launched.pid)
            self.seen_user = True
            self.ownership = Ownership.USER
            await self.close_launched(launched, force=True)
            self.counts.handovers += 1
        elif not launched.warned_foreign:
            launched.warned_foreign = True
            log.warning("another browser's ai-bridge extension holds the link, not the one in the browser we "
                        "launched (pid %d): the two take turns. Keep the extension in one browser (see "
                        "troubleshooting: Several browsers have the extension).", launched.pid)

    # -- watching ---------------------------------------------------------------------------------------------------

    async def watch(self) -> None:
        """Follow the link for state, ownership, timings and the user's Chrome coming and going."""
        while True:
            await self.refresh_link()
            await trio.sleep(0.25)

    async def refresh_link(self) -> bool:
        try:
            report = await self.relay.call(LinkStatus(), timeout=5)
            connected, since = report.connected, report.since
        except BridgeError:
            connected, since = False, None
        if connected and since != self.link_since:
            self.on_link_up(since)
        elif not connected and self.link_up:
            log.info("browser link: lost")
            self.down_since = trio.current_time()
            self.nursery.start_soon(self.explain_drop, time.time(), self.link_browser, self.launched, self.attached)
            self.link_browser = None
        self.link_up, self.link_since = connected, since if connected else None
        return connected

    def on_link_up(self, since: float | None) -> None:
        log.info("browser link: connected%s", " (a new connection)" if self.link_up else "")
        self.ever_connected = True
        self.link_browser = None
        launched = self.launched
        seen_user = self.seen_user
        if launched is not None and launched.alive:
            if launched.connected_s is None:
                # From the link's own timestamp, not this poll.
                launched.connected_s = max(0.0, (since or time.time()) - launched.started)
            self.nursery.start_soon(self.check_new_link, launched, since)
        elif self.ownership is None or self.ownership is Ownership.USER:
            self.ownership = Ownership.USER
            self.seen_user = True
        if self.starting == 0 or self.attached is not None:  # an attach in progress tracks its browser itself
            self.nursery.start_soon(self.identify_link, since, seen_user)

    # -- which browser holds the link ---------------------------------------------------------------------------------

    def track_attached(self, pid: int, browser_id: str | None = None) -> Attached:
        """From now on `pid` is the browser we attached to: its exit clears the ownership, the user's Chrome
        coming makes us close it (auto mode)."""
        att = self.attached
        if att is not None and att.pid == pid and att.alive:
            att.browser_id = att.browser_id or browser_id
        else:
            att = self.attached = Attached(pid, browser_id)
            self.nursery.start_soon(self.watch_attached, att)
        self.ownership, self.attached_pid = Ownership.ATTACHED, pid
        return att

    async def watch_attached(self, att: Attached) -> None:
        while await trio.to_thread.run_sync(process.process_command, att.pid) is not None:  # noqa: ASYNC110
            await trio.sleep(ATTACHED_POLL_S)
        att.exited.set()
        if self.attached is att:
            log.info("the browser ai-bridge attached to (pid %d) exited", att.pid)
            self.attached = None
            if self.ownership is Ownership.ATTACHED:
                self.ownership, self.attached_pid = None, None

    async def identify_link(self, since: float | None, seen_user: bool) -> None:
        """A new link: which browser holds it? The one we attached to (or one on our profile we had taken for the
        user's Chrome): tracked as attached. Another browser while the one we attached to lives: the user's Chrome
        came — hand over (auto mode), never take turns."""
        try:
            report = await self.relay.call(LinkStatus(), timeout=5)
        except BridgeError:
            return
        if not report.connected or report.since != since:
            return
        root: int | None = None
        if report.peer_port is not None:
            root = await trio.to_thread.run_sync(process.link_browser, report.peer_port, report.relay_port)
        if self.link_since != since:
            return
        self.link_browser = root
        log.debug("the link (port %s) is held by browser pid %s (profile id %s)", report.peer_port, root,
                  report.browser_id)
        launched = self.launched
        if launched is not None and launched.alive:
            return  # check_new_link asks our browser over its pipe
        att = self.attached
        if att is not None and att.alive:
            if root == att.pid or (root is None and report.browser_id is not None
                                   and report.browser_id == att.browser_id):
                att.browser_id = att.browser_id or report.browser_id
                self.ownership, self.attached_pid, self.seen_user = Ownership.ATTACHED, att.pid, seen_user
                return
            if root is None and (report.browser_id is None or att.browser_id is None):
                log.info("a new extension connection; cannot tell whether it is the browser (pid %d) ai-bridge "
                         "attached to", att.pid)
                return
            await self.hand_over_attached(att, report)
            return
        if root is not None and not self.config.isolated:
            owner = await trio.to_thread.run_sync(process.profile_owner, self.profile_dir(), self.extension_dir)
            if owner is not None and owner.pid == root and self.link_since == since and self.launched is None:
                log.info("the connected browser (pid %d) runs on ai-bridge's profile %s: attached to it", root,
                         self.profile_dir())
                self.seen_user = seen_user
                self.track_attached(root, report.browser_id)
                return
        if self.ownership is Ownership.USER and self.link_since == since:
            self.users_chrome_seen = time.time()
            await trio.to_thread.run_sync(write_users_chrome, self.config.state_dir, self.users_chrome_seen)

    async def hand_over_attached(self, att: Attached, report: LinkReport) -> None:
        """The user's Chrome connected while a browser we attached to lives: close ours (auto mode), as for a browser
        we launched; in launch mode say once that the two take turns."""
        if self.mode != "auto":
            log.warning("another browser's ai-bridge extension holds the link, not the one in the browser ai-bridge "
                        "attached to (pid %d): the two take turns. Keep the extension in one browser (see "
                        "troubleshooting: Several browsers have the extension).", att.pid)
            return
        print(f"ai-bridge: your Chrome's extension connected; closing the dedicated browser (pid {att.pid}) that "
              "ai-bridge attached to, so that the two do not take turns", file=sys.stderr, flush=True)
        log.info("the user's Chrome holds the link; closing the browser ai-bridge attached to (pid %d)", att.pid)
        self.attached = None
        self.ownership, self.attached_pid, self.seen_user = Ownership.USER, None, True
        self.counts.handovers += 1
        await self.close_attached(att)

    async def close_attached(self, att: Attached) -> None:
        """SIGTERM (Chrome shuts down cleanly), then SIGKILL after the grace; only while it still runs on our
        profile (a pid is not reused under our feet)."""
        for sig, wait_s in ((signal.SIGTERM, CLOSE_GRACE_S), (signal.SIGKILL, 2.0)):
            owner = await trio.to_thread.run_sync(process.profile_owner, self.profile_dir())
            if owner is None or owner.pid != att.pid:
                return
            try:
                os.kill(att.pid, sig)
            except OSError:
                return
            with trio.move_on_after(wait_s):
                while await trio.to_thread.run_sync(process.process_command, att.pid) is not None:  # noqa: ASYNC110
                    await trio.sleep(0.1)
                return

    async def explain_drop(self, at: float, holder: int | None, launched: Launched | None,
                           att: Attached | None) -> None:
        """Why the link dropped, for bridge_status: the relay's side (replaced, heartbeat), then what became of the
        browser that held it (exited, crashed, or still running: its extension's worker stopped)."""
        await trio.sleep(1.0)  # a closing browser's exit follows its link's end within this
        try:
            relay_drop = (await self.relay.call(LinkStatus(), timeout=5)).last_drop
        except BridgeError:
            relay_drop = None
        if relay_drop is not None and abs(relay_drop.at - at) > 5:
            relay_drop = None
        code = f" (close code {relay_drop.code})" if relay_drop is not None and relay_drop.code is not None else ""
        cause, detail = DropCause.EXTENSION_CLOSED, f"the extension closed its connection{code}"
        if relay_drop is not None and relay_drop.by_server:
            replaced = relay_drop.code == SHARED.close.replaced
            cause = DropCause.REPLACED if replaced else DropCause.SERVER_DROPPED
            detail = ("another browser's extension connected" if replaced else "ai-bridge dropped it") + \
                f": {relay_drop.reason}"
        elif launched is not None:
            if not launched.alive:
                crashed = launched.code not in (0, None, -signal.SIGTERM, -signal.SIGINT, -signal.SIGHUP)
                cause = DropCause.BROWSER_CRASHED if crashed and not launched.closing else DropCause.BROWSER_CLOSED
                detail = f"the browser ai-bridge launched (pid {launched.pid}) {process.exit_reason(launched.code)}"
            elif launched.closing:
                cause, detail = DropCause.BROWSER_CLOSED, f"the browser ai-bridge launched (pid {launched.pid}) " \
                    "is shutting down"
            elif launched.worker_target is None:
                cause, detail = DropCause.WORKER_STOPPED, "the extension's service worker in the browser ai-bridge " \
                    f"launched (pid {launched.pid}) stopped"
        else:
            pid = att.pid if att is not None else holder
            if pid is not None:
                which = "ai-bridge attached to" if att is not None else "holding the link"
                if await trio.to_thread.run_sync(process.process_command, pid) is None:
                    cause, detail = DropCause.BROWSER_CLOSED, f"the browser {which} (pid {pid}) exited"
                else:
                    cause, detail = DropCause.WORKER_STOPPED, (
                        f"the browser {which} (pid {pid}) still runs: its extension's service worker stopped or "
                        f"was reloaded{code}")
        self.last_drop = LastDrop(at, cause, detail)
        log.info("browser link dropped: %s (%s)", cause.value, detail)

    async def catch_download(self, env: Envelope[BrowserRequest], msg: CatchDownload) -> CaughtDownload:
        launched = self.launched
        if launched is None or not launched.alive or launched.closing or self.ownership is not Ownership.LAUNCHED:
            raise DownloadUnavailable(
                "a download the page starts from script is caught only in a browser ai-bridge launched; this one is "
                f"{self.ownership.value if self.ownership else 'not connected'}",
                hint="Give download the file's url (or its link) instead, or run with --browser launch.")
        async with launched.download_lock:
            launched.download_watch = watch = downloads.Watch()
            try:
                return await downloads.catch(launched.pipe, watch, msg, env.progress)
            except PipeError as exc:
                raise DownloadUnavailable(f"the browser's debugging pipe failed: {exc}",
                                          hint="The browser is going away; try again once it is back.") from exc
            finally:
                launched.download_watch = None

    def state(self) -> BrowserState:
        launched = self.launched
        if self.stopping or (launched is not None and launched.closing and launched.alive):
            return BrowserState.CLOSING
        if self.link_up:
            return BrowserState.CONNECTED
        if self.starting:
            return BrowserState.LAUNCHING
        if self.mode == "connect" or self.ever_connected or self.ownership is not None or self.launch_failed:
            return BrowserState.DEGRADED
        return BrowserState.WAITING

    def status(self) -> BrowserReport:
        launched = self.launched
        return BrowserReport(
            mode=self.mode, state=self.state(), ownership=self.ownership,
            pid=launched.pid if launched else self.attached_pid, path=launched.path if launched else None,
            headless=launched.headless if launched else None,
            launch_to_connected_s=round(launched.connected_s, 3) if launched and launched.connected_s else None,
            profile=str(self.profile_dir()) if not self.config.isolated else "(temporary)",
            extension_dir=str(self.extension_dir), last_error=self.last_error, channel=self.config.channel,
            version=launched.version if launched else None,
            debugging_pipe=launched is not None and not launched.pipe.closed.is_set(),
            extensions=tuple(str(p) for p in self.config.load_extensions), recovery=self.counts.frozen(),
            last_recovery=self.last_recovery, last_drop=self.last_drop)

    # -- closing ----------------------------------------------------------------------------------------------------

    async def close_launched(self, launched: Launched, *, force: bool = False) -> None:
        """Close a browser we launched: Browser.close over its pipe, then signals. A headed one is left open at
        shutdown unless --close-browser (`force`: close it anyway). Bounded (~2.3 s): it also runs in shutdown."""
        if not launched.alive:
            return
        if not force and not launched.headless and not self.config.close_browser:
            log.info("leaving the headed browser (pid %d) open; --close-browser closes it", launched.pid)
            with trio.move_on_after(1):
                try:  # nobody will read its pipe until the keeper takes over at our exit: no events meanwhile
                    await launched.pipe.send("Target.setDiscoverTargets", {"discover": False}, timeout=1)
                except PipeError:
                    pass
            return
        launched.closing = True
        launched.going.set()
        log.info("closing the browser we launched (pid %d)", launched.pid)
        with trio.move_on_after(1.0):
            try:
                await launched.pipe.send("Browser.close", timeout=0.5)
            except PipeError:
                pass
            await launched.process.wait()
        await self.end_process(launched, term_s=0.8)

    async def end_process(self, launched: Launched, *, term_s: float = 1.5) -> None:
        """Signals to the browser's process group (it leads its own session); waits on the process itself, so this
        works also after the tasks watching it are gone."""
        if launched.process.returncode is not None:
            return
        process.kill_group(launched.pid, signal.SIGTERM)
        with trio.move_on_after(term_s):
            await launched.process.wait()
        if launched.process.returncode is None:
            process.kill_group(launched.pid, signal.SIGKILL)
            with trio.move_on_after(0.5):
                await launched.process.wait()

    async def close(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        launched = self.launched
        if launched is not None:
            await self.close_launched(launched)
            if launched.process.returncode is not None and launched.temp_profile is not None:
                launched.temp_profile.cleanup()
            await launched.pipe.aclose()


async def _eager(browser: Browser) -> None:
    """Launch mode: launch at start, so the first ask does not pay for it. A failure here is only recorded; the
    first ask tries again and reports it."""
    def quiet(phase: BrowserPhase, message: str) -> Callable[[float], None]:
        return lambda waited_s: None

    try:
        await browser.ensure_ours(trio.current_time() + 60, quiet)
    except BridgeError as exc:
        browser.last_error = str(exc)
        log.info("launching the browser failed: %s (the first ask tries again and reports it)", exc)


async def run(
    ctx: ActorContext[BrowserRequest],
    *,
    config: Config,
    extension_dir: Path,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    browser: Browser | None = None
    try:
        async with trio.open_nursery() as nursery:
            browser = Browser(ctx, config, extension_dir, nursery)
            browser.users_chrome_seen = await trio.to_thread.run_sync(read_users_chrome, config.state_dir)
            nursery.start_soon(browser.watch)
            if config.browser == "launch":
                nursery.start_soon(_eager, browser)
            task_status.started()
            current = browser

            def ensure_handler(env: Envelope[BrowserRequest]) -> Callable[[BrowserRequest], Awaitable[Reply[object]]]:
                async def handle(msg: BrowserRequest) -> Reply[object]:
                    assert isinstance(msg, EnsureBrowser)
                    # A requester that gave up (its ask cancelled or timed out) needs no browser any more.
                    with env.cancelled_if_abandoned() as waiting:
                        await current.ensure(env, msg.timeout_s)
                    if waiting.cancelled_caught:
                        raise ExtensionNotConnected("the ask stopped waiting for the browser")
                    return msg.reply(None)
                return handle

            def catch_handler(env: Envelope[BrowserRequest]) -> Callable[[BrowserRequest], Awaitable[Reply[object]]]:
                async def handle(msg: BrowserRequest) -> Reply[object]:
                    assert isinstance(msg, CatchDownload)
                    with env.cancelled_if_abandoned():
                        return msg.reply(await current.catch_download(env, msg))
                    raise DownloadUnavailable("the download tool stopped waiting for the download")
                return handle

            async def handle(msg: BrowserRequest) -> Reply[object]:
                match msg:
                    case BrowserStatus():
                        return msg.reply(current.status())
                    case EnsureBrowser() | CatchDownload():
                        raise AssertionError("dispatched before handle")
                    case _:
                        assert_never(msg)

            async for env in ctx.messages():
                if isinstance(env.message, EnsureBrowser):
                    ctx.answer_soon(nursery, env, ensure_handler(env))  # waiting must not block status requests
                elif isinstance(env.message, CatchDownload):
                    ctx.answer_soon(nursery, env, catch_handler(env))
                else:
                    await ctx.answer(env, handle)
            with trio.CancelScope(shield=True):  # bounded; while the pipe reader still runs
                await browser.close()
            nursery.cancel_scope.cancel()
    finally:
        if browser is not None:
            with trio.CancelScope(shield=True):
                await browser.close()
