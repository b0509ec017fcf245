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

import logging
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import assert_never

import trio

from supervisor.config import Config
from supervisor.errors import (
    BridgeError,
    BrowserCrashedAtLaunch,
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
    EnsureBrowser,
    Ownership,
    RecoveryResult,
)
from . import process
from .links import LinkWatch
from .ours import CLOSE_GRACE_S, Launched
from .users_chrome import USERS_CHROME_RECENT_DAYS, read_users_chrome

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
CRASH_RETRY_S = 1.0  # a browser that crashed at its launch is launched again after this


class Browser(LinkWatch):
    """The actor: makes sure a browser is connected (ensure, by mode), and reports its state."""

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

    async def launch(self, deadline: float,
                     progress: Callable[[BrowserPhase, str], Callable[[float], None]]) -> None:
        """Launch a browser and wait for its extension; a browser that dies at start is `BrowserLaunchFailed` (or
        `ProfileInUse`) at once, with its own stderr line. One that crashed at start is launched once more, time
        allowing (a one-off crash was seen in a test run: SIGTRAP 0.5 s in, nothing printed)."""
        try:
            await self.launch_once(deadline, progress)
        except BrowserCrashedAtLaunch:
            if trio.current_time() + CRASH_RETRY_S >= deadline:
                raise
            log.warning("the browser crashed at its launch; launching it once more")
            await trio.sleep(CRASH_RETRY_S)
            await self.launch_once(deadline, progress)

    async def launch_once(self, deadline: float,
                          progress: Callable[[BrowserPhase, str], Callable[[float], None]]) -> None:
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
