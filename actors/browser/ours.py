"""The browser actor's state, and the browser it launched: the records of the browsers it launched or attached to,
starting one (its command line, its CDP pipe, extensions loaded over the pipe, the typed error when it dies at once),
following its life (process, pipe, targets), waking its extension's stopped worker, pairing that extension with our
key, telling whether it holds the link, catching a download, and closing it.

`OurBrowser` is the base of the actor's class (links.LinkWatch, then actor.Browser add to it): one object holds one
state, split by responsibility only so that each room stays readable.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import signal
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import attrs
import trio

from supervisor import files
from supervisor.config import Config
from supervisor.constants import SHARED
from supervisor.errors import (
    BridgeError,
    BrowserCrashedAtLaunch,
    BrowserLaunchFailed,
    BrowserNotFound,
    DownloadUnavailable,
    ProfileInUse,
)
from supervisor.otp import ActorContext, Envelope

from ..protocol.browser import (
    BrowserPhase,
    BrowserRequest,
    CatchDownload,
    CaughtDownload,
    LastDrop,
    Ownership,
    RecoveryCounts,
    RecoveryResult,
)
from ..protocol.common import JSONObject
from ..protocol.relay import RELAY, RelayInfo
from . import downloads, process
from .pipe import BrowserPipe, CdpEvent, CdpFailed, PipeError

log = logging.getLogger("ai_bridge.browser")

WAKE_ANSWER_S = 3.0  # a live browser opens a page at once; one that does not is shutting down or hung
START_S = 15.0  # a launched browser must answer on its pipe within this
CLOSE_GRACE_S = 8.0  # a browser of ours that is shutting down gets this long before we end it
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



class OurBrowser:
    """The actor's state; the browser we launched (`Launched`), from its start to its close."""

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

    def profile_dir(self) -> Path:
        return self.config.effective_profile_dir

    @property
    def browser_log(self) -> Path:
        return self.config.state_dir / "browser.log"

    def ours_closing(self) -> bool:
        launched = self.launched
        return launched is not None and launched.closing and launched.alive

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
        if code is not None and code < 0:
            return BrowserCrashedAtLaunch(message, hint=why.hint)
        return BrowserLaunchFailed(message, hint=why.hint)

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

    @staticmethod
    async def in_worker(launched: Launched, worker: str, expression: str, *, timeout: float = 10.0
                        ) -> JSONObject | None:
        """`expression` evaluated in our extension's worker over the pipe (attached for it, then detached): the
        evaluation's reply, or None when the worker gave no session."""
        session = await launched.pipe.send("Target.attachToTarget", {"targetId": worker, "flatten": True})
        session_id = session.get("sessionId")
        if not isinstance(session_id, str):
            return None
        try:
            return await launched.pipe.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                                 "returnByValue": True},
                                            session_id=session_id, timeout=timeout)
        finally:
            await launched.pipe.send("Target.detachFromTarget", {"sessionId": session_id})

    async def pair_once(self, launched: Launched, worker: str) -> str | None:
        """One try at handing the key to the worker → the key id it stored, or None."""
        try:
            code = (await self.relay.call(RelayInfo(), timeout=5)).pairing_code
            got = await self.in_worker(launched, worker, PAIR_EXPR % json.dumps(code), timeout=5)
        except (PipeError, BridgeError) as exc:
            log.debug("pairing the extension over the pipe: %s", exc)
            return None
        if got is None:
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
            got = await self.in_worker(launched, worker, SERVERS_EXPR)
        except (PipeError, BridgeError) as exc:
            log.debug("cannot read our extension's connections: %s", exc)
            return None
        if got is None:
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
