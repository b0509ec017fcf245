"""Catching a download the page starts itself, through the browser-level pipe of a browser we launched.

A click on something that is not a link (a button whose script makes a blob and clicks a hidden `<a download>`, or
sets `location` to a file the server sends as an attachment) leaves no URL for the tools to fetch. The browser's own
download machinery handles all of those, but only browser-level commands steer it (`Browser.setDownloadBehavior`),
and chrome.debugger refuses them. So while one catch is armed, downloads go into the caller's staging folder under
their guid (`allowAndName`, events on); afterwards the browser's own behaviour is back (`default`). One catch at a
time: the download folder is browser-wide.

Every event read is checked: one of the wrong shape is skipped, never a crash.
"""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Callable
from pathlib import Path

import attrs
import trio

from supervisor.errors import BrowserTimeout, InvalidArgument, NavigationFailed
from supervisor.otp import Progress

from ..protocol.browser import CatchDownload, CaughtDownload, DownloadArmed, DownloadBegun
from ..protocol.common import JSONObject
from .pipe import BrowserPipe, CdpEvent, PipeError

log = logging.getLogger("ai_bridge.browser")

EVENTS = ("Browser.downloadWillBegin", "Browser.downloadProgress")
RESET_S = 5.0  # giving the browser its own download behaviour back (bounded, shielded)


class State(enum.StrEnum):
    IN_PROGRESS = "inProgress"
    COMPLETED = "completed"
    CANCELED = "canceled"


STATES = frozenset(s.value for s in State)


@attrs.frozen
class Begun:
    guid: str
    frame_id: str
    url: str
    name: str


@attrs.frozen
class Status:
    state: State
    received: int
    total: int  # 0: unknown


def _count(params: JSONObject, key: str) -> int | None:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    return int(value)


@attrs.define(eq=False)
class Watch:
    """What the pipe said about downloads since the catch was armed."""

    begun: list[Begun] = attrs.field(factory=list)
    progress: dict[str, Status] = attrs.field(factory=dict)
    ours: Begun | None = None
    changed: trio.Event = attrs.field(factory=trio.Event)

    def on_event(self, event: CdpEvent) -> None:
        p = event.params
        if event.method == "Browser.downloadWillBegin":
            guid, frame, url, name = p.get("guid"), p.get("frameId"), p.get("url"), p.get("suggestedFilename")
            if not (isinstance(guid, str) and isinstance(frame, str) and isinstance(url, str)
                    and isinstance(name, str)) or not guid or len(self.begun) > 100:
                log.warning("browser pipe: a downloadWillBegin of the wrong shape: %.200r", p)
                return
            self.begun.append(Begun(guid, frame, url[:8000], name[:1000]))
        elif event.method == "Browser.downloadProgress":
            guid, state = p.get("guid"), p.get("state")
            received, total = _count(p, "receivedBytes"), _count(p, "totalBytes")
            if not isinstance(guid, str) or not isinstance(state, str) or state not in STATES or received is None \
                    or total is None:
                log.warning("browser pipe: a downloadProgress of the wrong shape: %.200r", p)
                return
            self.progress[guid] = Status(State(state), received, total)
        else:
            return
        self.changed.set()

    async def next_change(self) -> None:
        await self.changed.wait()
        self.changed = trio.Event()


async def catch(pipe: BrowserPipe, watch: Watch, msg: CatchDownload, tell: Callable[[Progress], None]
                ) -> CaughtDownload:
    """Arm, tell `DownloadArmed` (the click may go), follow the first download of `msg.frame_ids` to its end. One
    left unfinished (a failure, or the requester gave up) is cancelled."""
    await pipe.send("Browser.setDownloadBehavior", {"behavior": "allowAndName", "downloadPath": msg.staging,
                                                    "eventsEnabled": True})
    try:
        tell(DownloadArmed())
        return await _follow(pipe, watch, msg, tell)
    finally:
        ours = watch.ours
        if ours is not None:
            end = watch.progress.get(ours.guid)
            if end is None or end.state is State.IN_PROGRESS:
                await _cancel(pipe, ours.guid)
        with trio.CancelScope(shield=True), trio.move_on_after(RESET_S):
            try:
                await pipe.send("Browser.setDownloadBehavior", {"behavior": "default"}, timeout=RESET_S)
            except PipeError as exc:
                log.info("could not give the browser its download behaviour back: %s", exc)
        for other in watch.begun:
            if other.frame_id not in msg.frame_ids:
                # Another tab's download while ours was armed: it went into the staging folder, which the caller
                # removes. Said, so it is not a mystery.
                log.warning("a download from another tab (%.200s) began while one was caught; it was not kept",
                            other.url)


async def _follow(pipe: BrowserPipe, watch: Watch, msg: CatchDownload, tell: Callable[[Progress], None]
                  ) -> CaughtDownload:
    frames = set(msg.frame_ids)
    ours: Begun | None = None
    with trio.move_on_after(msg.start_s):
        while (ours := next((b for b in watch.begun if b.frame_id in frames), None)) is None:
            await watch.next_change()
    if ours is None:
        raise BrowserTimeout(f"the click started no download within {msg.start_s:g} s",
                             hint="Check that the element starts a download; for a link or a known URL pass `url`.")
    watch.ours = ours
    tell(DownloadBegun(ours.url))
    path = str(Path(msg.staging) / ours.guid)
    with trio.move_on_after(msg.timeout_s) as waiting:
        while True:
            got = watch.progress.get(ours.guid)
            if got is not None:
                if got.state is State.COMPLETED:
                    return CaughtDownload(ours.guid, ours.url, ours.name, path, got.received)
                if got.state is State.CANCELED:
                    raise NavigationFailed(f"the browser cancelled the download of {ours.url[:300]}",
                                           hint="Chrome cancels a download it could not fetch or write.")
                if max(got.received, got.total) > msg.max_bytes:
                    raise InvalidArgument(f"the file is over {msg.max_bytes:,} bytes; download saves at most that")
            await watch.next_change()
    assert waiting.cancelled_caught
    raise BrowserTimeout(f"the download of {ours.url[:300]} did not finish within {msg.timeout_s:g} s",
                         hint="Give a longer timeout_s.")


async def _cancel(pipe: BrowserPipe, guid: str) -> None:
    with trio.CancelScope(shield=True):
        try:
            await pipe.send("Browser.cancelDownload", {"guid": guid}, timeout=RESET_S)
        except PipeError as exc:
            log.info("could not cancel download %s: %s", guid, exc)
