"""The browser actor's view of the link: waiting for the extension to connect, following the link (up, lost, why it
dropped), and which browser holds it — the one we launched (asked over its pipe), one we attached to (tracked by
pid), or the user's Chrome (handed over to in auto mode, its sighting recorded in users_chrome).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from collections.abc import Callable

import trio

from supervisor.constants import SHARED
from supervisor.errors import BridgeError

from ..protocol.browser import DropCause, LastDrop, Ownership
from ..protocol.relay import LinkReport, LinkStatus, WaitConnected
from . import process
from .ours import CLOSE_GRACE_S, Attached, Launched, OurBrowser
from .users_chrome import write_users_chrome

log = logging.getLogger("ai_bridge.browser")

DEAD_LINK_S = 3.0  # the link of a browser that has exited is gone within this (else it is taken as live)
PROGRESS_EVERY_S = 5.0
ATTACHED_POLL_S = 1.0  # a browser we did not start gives us nothing to wait on but polling


class LinkWatch(OurBrowser):
    """The link and which browser holds it."""

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
