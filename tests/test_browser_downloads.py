"""The browser actor's catch of a download a page starts itself (actors/browser/downloads.py), against a fake
debugging pipe on an autojump clock: the download behaviour armed and given back, only the tab's frames' download
kept, its end (completed, cancelled, too big, too slow), and pipe events of any shape never crashing it. (The real
browser's downloads run in test_e2e_browser_tools_gaps.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.browser.downloads import EVENTS, Watch
from actors.browser.pipe import CdpEvent
from actors.protocol.browser import CatchDownload, CaughtDownload, DownloadArmed, DownloadBegun, Ownership
from supervisor.errors import BrowserTimeout, DownloadUnavailable, InvalidArgument, NavigationFailed
from supervisor.otp import Envelope, Progress

from .test_browser_actor import launched_browser

MAX = 1000


def request(tmp_path: Path, frames: tuple[str, ...] = ("top", "child")) -> CatchDownload:
    return CatchDownload(frames, str(tmp_path / "staging"), start_s=10, timeout_s=30, max_bytes=MAX)


def begin(guid: str, frame: str = "top", url: str = "blob:https://a.test/1", name: str = "x.csv") -> CdpEvent:
    return CdpEvent("Browser.downloadWillBegin", {"guid": guid, "frameId": frame, "url": url,
                                                  "suggestedFilename": name})


def progress(guid: str, state: str, received: int, total: int = 0) -> CdpEvent:
    return CdpEvent("Browser.downloadProgress", {"guid": guid, "state": state, "receivedBytes": received,
                                                 "totalBytes": total})


async def catching(tmp_path: Path, script: list[tuple[float, CdpEvent]], *, ownership: Ownership = Ownership.LAUNCHED,
                   frames: tuple[str, ...] = ("top", "child")) -> tuple[Any, list[Progress], list[tuple[str, Any]]]:
    """Run one catch while `script` (delay, event) plays on the pipe; → (its result or error, progress, pipe log)."""
    told: list[Progress] = []
    async with launched_browser(tmp_path) as (actor, launched, pipe):
        actor.ownership = ownership
        msg = request(tmp_path, frames)
        env: Envelope[Any] = Envelope(msg, on_progress=told.append)

        async def play() -> None:
            for delay, event in script:
                await trio.sleep(delay)
                actor.on_target_event(launched, event)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(play)
            try:
                got: Any = await actor.catch_download(env, msg)
            except Exception as exc:  # the test looks at which
                got = exc
            nursery.cancel_scope.cancel()
        assert launched.download_watch is None  # disarmed, whatever happened
        return got, told, pipe.sent


async def test_the_tabs_download_is_caught_and_the_browsers_behaviour_given_back(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    got, told, sent = await catching(tmp_path, [
        (0.1, begin("other", frame="elsewhere", url="https://b.test/theirs")),  # another tab's: not ours
        (0.1, begin("g1", frame="child", name="export.csv")),
        (0.1, progress("g1", "inProgress", 10, 20)),
        (0.1, progress("other", "completed", 5)),
        (0.1, progress("g1", "completed", 20, 20)),
    ])
    assert got == CaughtDownload("g1", "blob:https://a.test/1", "export.csv", str(tmp_path / "staging" / "g1"), 20)
    assert [type(t) for t in told] == [DownloadArmed, DownloadBegun]
    assert told[1] == DownloadBegun("blob:https://a.test/1")
    assert sent[0] == ("Browser.setDownloadBehavior", {"behavior": "allowAndName",
                                                       "downloadPath": str(tmp_path / "staging"),
                                                       "eventsEnabled": True})
    assert sent[-1] == ("Browser.setDownloadBehavior", {"behavior": "default"})
    assert not any(m == "Browser.cancelDownload" for m, _ in sent)


@pytest.mark.parametrize("script, error, words", [
    ([], BrowserTimeout, "started no download within 10 s"),
    ([(0.1, begin("g1")), (0.1, progress("g1", "canceled", 3))], NavigationFailed, "cancelled the download"),
    ([(0.1, begin("g1")), (0.1, progress("g1", "inProgress", 10, MAX + 1))], InvalidArgument, "over 1,000 bytes"),
    ([(0.1, begin("g1")), (0.1, progress("g1", "inProgress", MAX + 1))], InvalidArgument, "over 1,000 bytes"),
    ([(0.1, begin("g1")), (0.1, progress("g1", "inProgress", 10, 20))], BrowserTimeout, "did not finish within 30 s"),
])
async def test_a_download_that_does_not_end_well_is_a_typed_error_and_cancelled(
        tmp_path: Path, autojump_clock: trio.testing.MockClock, script: list[tuple[float, CdpEvent]],
        error: type[Exception], words: str) -> None:
    got, _, sent = await catching(tmp_path, script)
    assert isinstance(got, error) and words in str(got), repr(got)
    cancels = [p for m, p in sent if m == "Browser.cancelDownload"]
    began = bool(script)
    ended = began and script[-1][1].params.get("state") == "canceled"
    assert cancels == ([{"guid": "g1"}] if began and not ended else [])
    assert sent[-1] == ("Browser.setDownloadBehavior", {"behavior": "default"})


@pytest.mark.parametrize("ownership", [Ownership.USER, Ownership.ATTACHED, None])
async def test_only_a_browser_we_launched_can_catch(tmp_path: Path, autojump_clock: trio.testing.MockClock,
                                                     ownership: Ownership | None) -> None:
    got, told, sent = await catching(tmp_path, [], ownership=ownership)  # type: ignore[arg-type]
    assert isinstance(got, DownloadUnavailable) and "--browser launch" in (got.hint or "")
    assert told == [] and sent == []  # nothing armed


async def test_a_requester_that_gives_up_cancels_the_download(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    async with launched_browser(tmp_path) as (actor, launched, pipe):
        actor.ownership = Ownership.LAUNCHED
        msg = request(tmp_path)
        env: Envelope[Any] = Envelope(msg)
        with trio.move_on_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(actor.catch_download, env, msg)
                await trio.sleep(1)
                actor.on_target_event(launched, begin("g1"))
        assert ("Browser.cancelDownload", {"guid": "g1"}) in pipe.sent
        assert pipe.sent[-1] == ("Browser.setDownloadBehavior", {"behavior": "default"})
        assert launched.download_watch is None


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                  max_size=4), max_leaves=8)
_fields = st.fixed_dictionaries({}, optional={
    k: _json | st.text(max_size=10) for k in ("guid", "frameId", "url", "suggestedFilename", "state",
                                             "receivedBytes", "totalBytes")})


@settings(max_examples=300, deadline=None)
@given(events=st.lists(st.tuples(st.sampled_from(EVENTS), _fields), max_size=20))
def test_download_events_of_any_shape_never_crash_the_watch(events: list[tuple[str, dict[str, Any]]]) -> None:
    watch = Watch()
    for method, params in events:
        watch.on_event(CdpEvent(method, params))
    for b in watch.begun:  # what it kept is what the catch relies on
        assert all(isinstance(v, str) for v in (b.guid, b.frame_id, b.url, b.name)) and b.guid
    for s in watch.progress.values():
        assert s.received >= 0 and s.total >= 0
