"""ChatGPT's Deep Research, read in its own frame (issue 34), in parts without a browser: which frames a provider tab
may read (the extension's policy under node, with a fake `chrome`, and the server's mirror: they agree on every URL),
what the frame's reports may be (checked, typed, never a crash), the report's leading counter lines, and the wait on
trio's autojump clock: the plan started, progress said, a report in progress never returned, a frame that goes away
a typed error. The e2e run is in test_e2e_choices.py."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.protocol.common import JSON
from actors.protocol.provider import AskPhase
from actors.provider import drift
from actors.provider.choices import _tool_on
from actors.provider.page import BadPageReport
from actors.provider.research import (
    Frame,
    FrameReport,
    FrameStatus,
    Research,
    TabFrames,
    frame_host_allowed,
    report_body,
)
from actors.provider.sites import chatgpt
from supervisor.errors import AnswerIncomplete, BadExtensionReply, CdpError, ResearchUnreadable

from .conftest import requires_node, run_extension_js
from .provider_fakes import FakePage, make_flow, ps

T = chatgpt.TABLE
SANDBOX = "connector-openai-deep-research.web-sandbox.oaiusercontent.com"
HOSTS = (SANDBOX, "web-sandbox.oaiusercontent.com", "files.oaiusercontent.com", "oaiusercontent.com",
         "evil-web-sandbox.oaiusercontent.com", "web-sandbox.oaiusercontent.com.evil.test", "chatgpt.com",
         "A.WEB-SANDBOX.OAIUSERCONTENT.COM")
URLS = [f"{scheme}://{user}{host}{port}/?app=chatgpt" for scheme, user, host, port in itertools.product(
    ("https", "http", "wss"), ("", "u:p@"), HOSTS, ("", ":443", ":8443"))] + [
    "not a url", "https://", "about:blank", f"https://{SANDBOX}", "https://[::1]/x", ""]
TABS = ("https://chatgpt.com/c/1", "https://chat.openai.com/", "https://gemini.google.com/app/1",
        "https://example.com/", "not a url")


@requires_node
def test_the_server_and_the_extension_allow_the_same_frame_hosts(tmp_path: Path) -> None:
    got = json.loads(run_extension_js(tmp_path, ("policy.js", "shared.js"), (
        "import { frameHostAllowed } from './policy.js';\nimport SHARED from './shared.js';\n"
        f"const urls = {json.dumps(URLS)}; const tabs = {json.dumps(TABS)};\n"
        "console.log(JSON.stringify(tabs.map((t) => urls.map((u) => frameHostAllowed(SHARED.providers, t, u)))));\n")))
    for tab, theirs in zip(TABS, got, strict=True):
        mine = [frame_host_allowed("chatgpt", tab, u) for u in URLS]
        assert mine == theirs, [(tab, u, a, b) for u, a, b in zip(URLS, mine, theirs, strict=True) if a != b]
    allowed = {u for u, ok in zip(URLS, got[0], strict=True) if ok}
    assert {f"https://{SANDBOX}/?app=chatgpt", "https://web-sandbox.oaiusercontent.com/?app=chatgpt"} <= allowed
    assert not allowed & {"https://files.oaiusercontent.com/?app=chatgpt", "https://chatgpt.com/?app=chatgpt",
                          f"http://{SANDBOX}/?app=chatgpt", f"https://{SANDBOX}:8443/?app=chatgpt",
                          "https://evil-web-sandbox.oaiusercontent.com/?app=chatgpt"}
    assert not any(got[2]) and not any(got[3])  # Gemini has no frame hosts; a tab on no provider's site reads none
    assert not any(frame_host_allowed("gemini", TABS[2], u) for u in URLS)


# The extension's side, under node with a fake `chrome` (tests/node/frame_policy.mjs).
EXECUTOR = (Path(__file__).parent / "node" / "frame_policy.mjs").read_text().replace("SANDBOX", SANDBOX)


@requires_node
def test_a_provider_tab_reads_only_its_frame_hosts_with_a_few_methods(tmp_path: Path) -> None:
    out = json.loads(run_extension_js(tmp_path, ("executor.js", "commands.js", "policy.js", "shared.js", "limits.js"),
                                      EXECUTOR))
    calls: list[list[Any]] = out.pop("calls")
    assert out["before"]["code"] == "no_such_frame"  # no frame before auto-attach
    assert out["frames0"] == {"ok": {"frames": []}}
    assert next(c for c in calls if c[1] == "Target.setAutoAttach")[0] == {"tabId": 7}
    listed = [{"sessionId": "S1", "frameId": "F1", "url": f"https://{SANDBOX}/?app=chatgpt"}]
    assert out["frames1"] == {"ok": {"frames": listed}}
    detached = [c[2]["sessionId"] for c in calls if c[1] == "Target.detachFromTarget"]
    assert {"S2", "S3", "S4"} <= set(detached) and "S5" not in detached
    assert out["eval"]["ok"] == {"ok": True} and out["world"]["ok"] == {"ok": True}
    sent = [c for c in calls if c[1] in ("Runtime.evaluate", "Page.createIsolatedWorld")]
    assert [c[0] for c in sent[:2]] == [{"tabId": 7, "sessionId": "S1"}] * 2  # to the frame, not the tab
    assert "aibSession" not in json.dumps(sent)
    for name in [k for k in out if k.startswith("denied ")]:
        assert out[name]["code"] == "method_not_allowed", (name, out[name])
    assert out["foreign"]["code"] == "no_such_frame" and out["moved"]["code"] == "no_such_frame"
    assert out["guard"]["code"] == "bad_params"
    assert "S1" in detached  # navigated away: let go
    assert out["detach"] == {"ok": {}} and out["after"]["code"] == "not_attached"
    assert out["frames8"] == {"ok": {"frames": []}} and "G1" in detached
    # Nothing but the allowed methods ever reached a frame's session (and the extension's own bookkeeping: its URL's
    # events, letting a nested frame go).
    to_frames = {c[1] for c in calls if "sessionId" in c[0]}
    assert to_frames <= {"Runtime.evaluate", "Page.createIsolatedWorld", "Page.enable", "Target.detachFromTarget"}


# --- the frame's reports, checked -------------------------------------------------------------------------------------

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                                       max_size=6), max_leaves=20)
status_like = st.fixed_dictionaries({"ready": st.booleans()}, optional={
    k: st.booleans() | st.integers() | st.text(max_size=5) for k in ("start", "plan", "done", "heading", "reportChars",
                                                                    "progress")})


@settings(max_examples=300, deadline=None)
@given(st.one_of(json_values, status_like))
def test_any_report_of_the_frame_parses_or_is_a_typed_error(raw: JSON) -> None:
    for parse, errors in ((FrameStatus.parse, BadPageReport), (FrameReport.parse, BadPageReport),
                          (Frame.parse, BadExtensionReply)):
        try:
            got = parse(raw)  # type: ignore[operator]
        except errors:
            continue
        if isinstance(got, FrameStatus):
            assert got.report_chars >= 0 and len(got.progress) <= 200


COUNTERS = st.sampled_from(["12 citations", "1 citation", "48 searches", "7 sources", "Sources", "3",
                            "1,204 searches", "**32 searches**", "Research completed", "Research completed in 12m",
                            "## Deep research report", "", "   "])
REPORT = st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)
                  .filter(lambda s: s.strip() and not s.strip()[0].isdigit() and "\n" not in s
                          and not s.strip().lower().startswith(("source", "search", "citation", "research completed",
                                                                "deep research report", "#", ">", "*", "_"))),
                  min_size=1, max_size=6).map("\n\n".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(COUNTERS, max_size=8), REPORT)
def test_the_counter_lines_before_a_report_are_dropped_and_the_report_kept_whole(lead: list[str], report: str) -> None:
    # CRLF is read as one line break (a line of the report may end in CR where the parts are joined)
    assert report_body("\n".join([*lead, report]), T) == report.replace("\r\n", "\n").strip()


def test_a_report_that_is_only_counters_is_no_report() -> None:
    assert report_body("12 citations\n\n48 searches\nResearch completed", T) == ""
    # Counter words inside the report are its own text.
    kept = "# Sources of error\n\n48 searches were made."
    assert report_body("3 sources\n" + kept, T) == kept


def test_a_deep_research_pill_is_not_a_search_pill() -> None:
    """ChatGPT's web-search label "Search" is inside "Deep research, click to remove": whole words only."""
    assert _tool_on(T, "deep research", ["Deep research, click to remove"], [])
    assert not _tool_on(T, "web search", ["Deep research, click to remove"], [])
    assert _tool_on(T, "web search", ["Search, click to remove"], [])


# --- the wait, on the autojump clock ----------------------------------------------------------------------------------

REPORT_MD = ("# Tidal mills of the Atlantic coast from 1100 to 1900, and how they ground grain\n\n"
             "They stored the tide[1](https://example.org/m).\n\n- steam\n- silt\n\nThat is all.")


class FakeFrames:
    """A research frame over time: a plan until pressed (or `auto_start_s`), progress for `research_s`, then the report
    rendering in `parts` steps `part_s` apart. `gone_at`: the frame leaves the page then (for good)."""

    def __init__(self, *, research_s: float = 600, auto_start_s: float = 60, parts: int = 3, part_s: float = 0.5,
                 gone_at: float | None = None, old_extension: bool = False, wrong_report: bool = False) -> None:
        self.t0 = trio.current_time()
        self.research_s, self.auto_start_s, self.parts, self.part_s = research_s, auto_start_s, parts, part_s
        self.gone_at, self.old_extension, self.wrong_report = gone_at, old_extension, wrong_report
        self.started: float | None = None
        self.presses = 0
        self.reads: list[str] = []
        self.session = 1

    def now(self) -> float:
        return trio.current_time() - self.t0

    def gone(self) -> bool:
        return self.gone_at is not None and self.now() >= self.gone_at

    async def target(self) -> str | None:
        await trio.lowlevel.checkpoint()
        return None if self.gone() else "F1"

    async def sessions(self) -> list[Frame]:
        await trio.lowlevel.checkpoint()
        if self.old_extension:
            raise CdpError("debugger.frames is a general-tool command: it needs a policy", ext_code="bad_params")
        return [] if self.gone() else [Frame("earlier", "F0", f"https://{SANDBOX}/"),
                                       Frame(f"S{self.session}", "F1", f"https://{SANDBOX}/")]

    def shown(self) -> tuple[str, bool]:
        """The report as shown so far, and whether the research says it is done."""
        if self.started is None and self.now() >= self.auto_start_s:
            self.started = self.auto_start_s
        if self.started is None or self.now() - self.started < self.research_s:
            return "", False
        done_for = self.now() - self.started - self.research_s
        blocks = REPORT_MD.split("\n\n")
        upto = min(len(blocks), round(len(blocks) * (1 + int(done_for / self.part_s)) / self.parts))
        return "\n\n".join(blocks[:upto]), True

    async def call(self, frame: Frame, op: str) -> JSON:
        await trio.lowlevel.checkpoint()
        if frame.frame_id != "F1":
            raise AssertionError("an earlier turn's frame was read")
        if self.gone():
            raise CdpError("that frame is no longer in the page", ext_code="no_such_frame")
        self.reads.append(op)
        text, done = self.shown()
        chars = drift.solid_len(text)  # as the frame measures it: what it shows, no link targets
        if op == "start":
            if self.started is None:
                self.started, self.presses = self.now(), self.presses + 1
                return True
            return False
        if op == "report":
            body = "48 searches\n\n" + (text[:20] if self.wrong_report else text)
            return {"markdown": body, "chars": chars, "how": "heading"}
        plan = self.started is None
        return {"ready": True, "start": plan, "plan": plan, "done": done, "heading": done, "reportChars": chars,
                "progress": "" if plan or done else "Reading sources: the answer is probably 42"}


def research(frames: FakeFrames, said: list[AskPhase] | None = None) -> Research:
    return Research(frames, T, lambda phase, chars, text: (said if said is not None else []).append(phase),
                    __import__("logging").getLogger("test"))


async def test_the_plan_is_started_once_and_only_the_whole_report_is_returned(
        autojump_clock: trio.testing.MockClock) -> None:
    frames, said = FakeFrames(research_s=20 * 60), []
    t0 = trio.current_time()
    text, how = await research(frames, said).run()
    assert frames.presses == 1 and frames.started is not None and frames.started < 2  # pressed, not the countdown
    assert text == REPORT_MD and how == "research frame"
    assert trio.current_time() - t0 >= 20 * 60  # never before it was done
    assert frames.reads.count("report") == 1  # read once, after the parts stopped coming
    assert said.count(AskPhase.THINKING) >= 20 * 60 / 10 - 1  # a progress item every 10 s of the wait


async def test_a_report_still_rendering_is_never_returned(autojump_clock: trio.testing.MockClock) -> None:
    frames = FakeFrames(research_s=5, parts=3, part_s=1.5)
    text, _ = await research(frames).run()
    assert text == REPORT_MD  # every part, though "completed" showed with a third of it


async def test_a_report_read_short_is_answer_incomplete(autojump_clock: trio.testing.MockClock) -> None:
    with pytest.raises(AnswerIncomplete) as info:
        await research(FakeFrames(research_s=5, wrong_report=True)).run()
    assert info.value.partial and "Tidal" in info.value.partial


@pytest.mark.parametrize("frames, why", [
    (dict(gone_at=30.0), "the frame did not show in the page"),
    (dict(old_extension=True), "the extension refused it (bad_params"),
])
async def test_a_frame_that_goes_or_cannot_be_opened_is_research_unreadable(
        autojump_clock: trio.testing.MockClock, frames: dict[str, Any], why: str) -> None:
    t0 = trio.current_time()
    with pytest.raises(ResearchUnreadable) as info:
        await research(FakeFrames(**frames)).run()
    assert why in info.value.message and "not sent again" in info.value.message
    assert trio.current_time() - t0 <= 30 + 2 * 15 + 2  # found gone within its wait, never the deadline


async def test_a_frame_that_reloads_is_found_again(autojump_clock: trio.testing.MockClock) -> None:
    frames = FakeFrames(research_s=30)
    fails = [True]
    real = frames.call

    async def flaky(frame: Frame, op: str) -> JSON:
        if trio.current_time() - frames.t0 > 10 and fails:
            fails.clear()
            frames.session = 2  # a new document: a new session
            raise CdpError("No session with given id", ext_code="cdp_error")
        return await real(frame, op)

    frames.call = flaky  # type: ignore[method-assign]
    text, _ = await research(frames).run()
    assert text == REPORT_MD and not fails


async def test_the_flow_reads_the_frame_for_a_research_ask(autojump_clock: trio.testing.MockClock) -> None:
    """The sent turn shows only the frame (no new response is counted): the flow reads the report through it; an
    ordinary answer instead says the research did not start."""
    async def frame_turn(page: FakePage, question: str) -> None:
        page.update(stop=True, send_found=False)
        await trio.sleep(0.3)
        page.update(stop=False, research_frame=True)

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ps(), respond=frame_turn)
        r = make_flow(page, T, "Research tidal mills.", timeout_s=3600)
        r.flow.research, r.flow.frames = True, FakeFrames(research_s=90)
        out = await r.flow.run()
        nursery.cancel_scope.cancel()
    assert out.answer == REPORT_MD and out.extracted_by == "research frame"
    assert page.submitted == ["Research tidal mills."]
    assert AskPhase.THINKING in r.progress and not out.warnings


async def test_an_ordinary_answer_instead_of_research_says_so(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery)
        r = make_flow(page, T, "Research tidal mills.")
        r.flow.research, r.flow.frames = True, FakeFrames()
        out = await r.flow.run()
        nursery.cancel_scope.cancel()
    assert out.answer == "Answer 42 for you." and [w.code for w in out.warnings] == ["research_not_started"]


class StubTab:
    def __init__(self, frames: list[JSON]) -> None:
        self.listed = frames

    async def frames(self, *, timeout_s: float) -> list[JSON]:
        await trio.lowlevel.checkpoint()
        return self.listed


class StubPage:
    def __init__(self, url: str, frames: list[JSON]) -> None:
        self.tab, self.t, self.to, self.url = StubTab(frames), T, T.timeouts, url

    async def current(self) -> Any:
        await trio.lowlevel.checkpoint()
        return ps(url=self.url)


async def test_the_server_keeps_only_the_frames_its_mirror_allows() -> None:
    """The extension lists only its site's frame hosts; a listing that holds another (a broken or older extension)
    is filtered again on the server, and a malformed one is a typed error."""
    good = {"sessionId": "S1", "frameId": "F1", "url": f"https://{SANDBOX}/?app=chatgpt"}
    bad = {"sessionId": "S2", "frameId": "F2", "url": "https://evil.example/"}
    frames = TabFrames(StubPage("https://chatgpt.com/c/1", [bad, good]))  # type: ignore[arg-type]
    assert await frames.sessions() == [Frame("S1", "F1", good["url"])]
    assert await TabFrames(StubPage("https://gemini.google.com/app/1", [good])).sessions() == []  # type: ignore[arg-type]
    with pytest.raises(BadExtensionReply):
        await TabFrames(StubPage("https://chatgpt.com/c/1", [{"sessionId": 3}])).sessions()  # type: ignore[arg-type]
