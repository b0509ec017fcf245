"""A Deep Research report that runs in a cross-site frame of its own (issue 34: ChatGPT's), started and read whole.

The sent turn holds only an `iframe[title="internal://deep-research"]` on connector-openai-deep-research.
web-sandbox.oaiusercontent.com (NX capture, RESEARCH.md 2.3): out of process, so the page's own scripts and ours in
the page cannot read it. The extension gives a provider tab a child session for a frame on its site's `frameHosts`
(shared.js), with a world of our own and our page script there only (docs/security.md). Through it:

1. the frame of the sent turn is found (the page's last research frame, by its frame id; an earlier turn's finished
   report is never this one), and its child session;
2. the plan card's start button is pressed as soon as it shows (the site's ~60 s countdown would start it too);
3. progress lines ("Researching...", "Reading sources") go to the job as the thinking phase while the 5-30 minutes
   pass (the ask's deadline bounds the wait: the caller's);
4. when the frame says "Research completed" and the report after its "Deep research report" heading has stopped
   changing, the report is read as markdown in the frame (links stay links), its leading counter lines ("12
   citations") dropped, and checked whole against what the frame shows. Never a report still in progress.

A frame that goes away for good, or a child session that fails, is `ResearchUnreadable`: typed, the question never
sent again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlsplit

import attrs
import trio

from supervisor.constants import SHARED
from supervisor.errors import AnswerIncomplete, BadExtensionReply, CdpError, ResearchUnreadable

from ..protocol.common import JSON
from ..protocol.provider import AskPhase
from . import drift
from .page import BadPageReport
from .tab import HERE, MARKDOWN, TabSession
from .table import ProviderTable

SCRIPT = (HERE / "research.js").read_text(encoding="utf-8")
WORLD = "ai-bridge-research"
# The page's last research frame, as an object (its frame id comes from DOM.describeNode).
LAST_FRAME = """function lastResearchFrame(sels) {
  const all = [];
  for (const s of sels) { try { all.push(...document.querySelectorAll(s)); } catch (e) { /* a bad selector */ } }
  all.sort((a, b) => (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
  return all.length ? all[all.length - 1] : null;
}"""

POLL_S = 1.0  # how often the frame is read (its state changes over minutes)
STABLE_S = 2.0  # a finished report unchanged this long is whole (it renders in parts after "completed")
FRAME_WAIT_S = 15.0  # the frame shown in the page gets its child session (again, after it reloads) within this
PRESS_AGAIN_S = 3.0  # a start button still usable this long after a press is pressed again
MIN_REPORT = 40  # a report shorter than this (non-blank characters) is no report yet
PROGRESS_EVERY_S = 10.0  # the same progress line is said again this often (the job's heartbeat sees it)

Progress = Callable[[AskPhase, int, str], None]


def frame_host_allowed(provider: str, tab_url: str, url: str) -> bool:
    """As the extension checks it (extension/policy.js frameHostAllowed): the tab on the provider's site, the frame
    https on the default port without user info, on the provider's frame hosts (shared.js) or a subdomain of one."""
    try:
        u, tab = urlsplit(url), urlsplit(tab_url)
        port = u.port
    except ValueError:
        return False
    site = next((p for p in SHARED.providers if p.name == provider), None)
    if site is None or f"{tab.scheme}://{tab.netloc}" not in site.origins:
        return False
    host = (u.hostname or "").lower()
    return (u.scheme == "https" and port in (None, 443) and not u.username and not u.password
            and any(host == h or host.endswith("." + h) for h in site.frame_hosts))


@attrs.frozen
class Frame:
    """A cross-site frame of the tab with its child session, as the extension lists it."""

    session_id: str
    frame_id: str
    url: str

    @classmethod
    def parse(cls, raw: JSON) -> Frame:
        if not isinstance(raw, dict):
            raise BadExtensionReply(f"debugger.frames: a frame must be an object, got {raw!r:.80}")
        values = [raw.get(k) for k in ("sessionId", "frameId", "url")]
        if not all(isinstance(v, str) and 0 < len(v) <= 4096 for v in values):
            raise BadExtensionReply(f"debugger.frames: a frame has the wrong shape: {raw!r:.200}")
        return cls(*(str(v) for v in values))


@attrs.frozen
class FrameStatus:
    """What the research frame shows now (research.js 'status'), checked: it is external input."""

    ready: bool
    start: bool = False  # the plan's start button is usable
    plan: bool = False  # the plan card shows (a start button or its countdown)
    done: bool = False  # "Research completed"
    heading: bool = False  # the report's heading shows
    report_chars: int = 0  # non-blank characters after the heading (or the "completed" line)
    progress: str = ""  # the last progress line

    @classmethod
    def parse(cls, raw: JSON) -> FrameStatus:
        if not isinstance(raw, dict) or not isinstance(raw.get("ready"), bool):
            raise BadPageReport(f"research frame status: expected an object with 'ready', got {raw!r:.120}")
        if not raw["ready"]:
            return cls(False)
        flags = [raw.get(k) for k in ("start", "plan", "done", "heading")]
        chars, progress = raw.get("reportChars"), raw.get("progress")
        if not all(isinstance(f, bool) for f in flags) or not isinstance(progress, str) \
                or not isinstance(chars, int) or isinstance(chars, bool) or chars < 0:
            raise BadPageReport(f"research frame status has the wrong shape: {raw!r:.200}")
        start, plan, done, heading = (f is True for f in flags)
        return cls(True, start, plan, done, heading, chars, " ".join(progress.split())[:200])


@attrs.frozen
class FrameReport:
    markdown: str
    chars: int  # the report's non-blank characters as the frame shows them
    how: str  # "heading": after the report's heading; "done": after the "completed" line (the heading is missing)

    @classmethod
    def parse(cls, raw: JSON) -> FrameReport | None:
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise BadPageReport(f"research report: expected an object, got {raw!r:.120}")
        markdown, chars, how = raw.get("markdown"), raw.get("chars"), raw.get("how")
        if not isinstance(markdown, str) or not isinstance(chars, int) or isinstance(chars, bool) or chars < 0 \
                or how not in ("heading", "done"):
            raise BadPageReport(f"research report has the wrong shape: {raw!r:.200}")
        return cls(markdown, chars, str(how))


def counter_re(t: ProviderTable) -> re.Pattern[str]:
    words = "|".join(re.escape(w) for w in t.labels.get("researchCounters", ()))
    return re.compile(rf"^\s*(\d[\d,.]*\s*({words})?|({words}))\s*$" if words else r"^\s*\d[\d,.]*\s*$",
                      re.IGNORECASE)


def report_body(markdown: str, t: ProviderTable) -> str:
    """The report without what stands before its first line of content: counter lines ("12 citations", "48
    searches", a bare number), the heading and the "completed" line (oracle skips the same), blank lines."""
    counters = counter_re(t)
    marks = [m.casefold() for key in ("reportHeading", "researchDone") for m in t.labels.get(key, ())]
    lines = markdown.replace("\r\n", "\n").split("\n")
    for start, line in enumerate(lines):
        bare = re.sub(r"^[#>*_\s]+|[*_\s]+$", "", line).casefold()
        if bare and not counters.match(bare) and not any(bare.startswith(m) for m in marks):
            return "\n".join(lines[start:]).strip()  # the first line of content: where the report starts
    return ""


class Frames(Protocol):
    """The research frames of an ask's tab (`TabFrames`; tests use a fake)."""

    async def target(self) -> str | None:
        """The frame id of the page's last research frame (None: none shows)."""
        ...

    async def sessions(self) -> list[Frame]:
        """The tab's frames on its site's frame hosts, with their child sessions."""
        ...

    async def call(self, frame: Frame, op: str) -> JSON:
        """research.js's `op` in our world of that frame."""
        ...


class TabFrames:
    """`Frames` of a real tab: the extension's child sessions, our world in each (made once per document)."""

    def __init__(self, page: TabSession) -> None:
        self.page = page
        self.worlds: dict[str, int] = {}  # session id -> our world's context id there

    async def target(self) -> str | None:
        tab, sels = self.page.tab, [*self.page.t.selectors.get("researchFrame", ())]
        wanted: list[JSON] = list(sels)
        if self.page.context_id is None or not sels:
            return None
        got = await tab.send("Runtime.callFunctionOn", {
            "functionDeclaration": LAST_FRAME, "executionContextId": self.page.context_id,
            "arguments": [{"value": wanted}], "returnByValue": False})
        result = got.get("result")
        object_id = result.get("objectId") if isinstance(result, dict) else None
        if not isinstance(object_id, str):
            return None
        try:
            described = await tab.send("DOM.describeNode", {"objectId": object_id})
        finally:
            with trio.move_on_after(2):
                await tab.send("Runtime.releaseObject", {"objectId": object_id})
        node = described.get("node")
        frame_id = node.get("frameId") if isinstance(node, dict) else None
        return frame_id if isinstance(frame_id, str) else None

    async def sessions(self) -> list[Frame]:
        raw = await self.page.tab.frames(timeout_s=self.page.to.script_s)
        tab_url = (await self.page.current()).url
        # The extension lists only its site's frame hosts: checked again here (the two must agree).
        return [f for f in map(Frame.parse, raw) if frame_host_allowed(self.page.t.name, tab_url, f.url)]

    async def call(self, frame: Frame, op: str) -> JSON:
        tab, to = self.page.tab, self.page.to
        context = self.worlds.get(frame.session_id)
        if context is None:
            world = await tab.send("Page.createIsolatedWorld", {"frameId": frame.frame_id, "worldName": WORLD},
                                   session=frame.session_id)
            made = world.get("executionContextId")
            if not isinstance(made, int) or isinstance(made, bool):
                raise BadExtensionReply(f"Page.createIsolatedWorld: no executionContextId in {str(world)[:200]}")
            context = made
            await tab.call(MARKDOWN, context_id=context, timeout_s=to.script_s, session=frame.session_id)
            self.worlds[frame.session_id] = context
        labels: dict[str, JSON] = {k: [*self.page.t.labels.get(k, ())] for k in (
            "frameStart", "researchDone", "reportHeading", "researchProgress")}
        docs: list[JSON] = list(self.page.t.selectors.get("researchDoc", ()))
        cfg: JSON = {"docs": docs, "labels": labels}
        try:
            return await tab.call(SCRIPT, cfg, op, context_id=context, timeout_s=to.script_s,
                                  session=frame.session_id)
        except CdpError:
            self.worlds.pop(frame.session_id, None)  # a new document (the frame reloaded): a new world next time
            raise


class Research:
    """One wait for one report (after the question went and the research frame showed in the page)."""

    def __init__(self, frames: Frames, table: ProviderTable, progress: Progress, log: logging.Logger) -> None:
        self.frames = frames
        self.t = table
        self.progress = progress
        self.log = log
        self.frame: Frame | None = None
        self.pressed_at = -1e9
        self.said = ("", -1e9)  # the last progress line said, and when

    async def run(self) -> tuple[str, str]:
        """The whole report as markdown, and how it was read ("research frame" or "research frame (no heading)")."""
        stable: tuple[int, float] | None = None  # the report's size when done, and since when
        while True:
            st = await self.status()
            now = trio.current_time()
            if st.start and now - self.pressed_at >= PRESS_AGAIN_S:
                self.pressed_at = now
                if await self.call("start") is True:
                    self.log.info("%s: pressed the Deep Research plan's start button", self.t.title)
            self.tell(st, now)
            if st.done and st.report_chars >= MIN_REPORT:
                if stable is None or stable[0] != st.report_chars:
                    stable = (st.report_chars, now)
                elif now - stable[1] >= STABLE_S:
                    got = await self.read(st)
                    if got is not None:
                        return got
                    stable = None
            else:
                stable = None
            await trio.sleep(POLL_S)

    def tell(self, st: FrameStatus, now: float) -> None:
        """Progress to the job: the thinking phase while the research runs; a new line is logged."""
        line = "plan" if st.plan and not st.progress else st.progress or ("report" if st.done else "")
        if line != self.said[0]:
            self.log.info("%s: Deep Research: %s", self.t.title, line or "working")
        if line != self.said[0] or now - self.said[1] >= PROGRESS_EVERY_S:
            self.said = (line, now)
            self.progress(AskPhase.THINKING, 0, "")

    async def read(self, st: FrameStatus) -> tuple[str, str] | None:
        """The report, if it is whole: read as markdown, checked against what the frame shows (None: it changed while
        being read; the wait goes on)."""
        raw = await self.call("report")
        try:
            got = FrameReport.parse(raw)
        except BadPageReport as exc:
            raise ResearchUnreadable(f"{self.t.title}'s Deep Research report could not be read: {exc}",
                                     hint="Open the conversation to read the report; the question was not sent "
                                     "again.") from exc
        if got is None or got.chars != st.report_chars:
            return None
        body = report_body(got.markdown, self.t)
        if not body or drift.short_of(body, got.chars):
            raise AnswerIncomplete(f"{self.t.title}'s Deep Research report could be read only in part: "
                                   f"{drift.solid_len(body)} of the {got.chars} characters the frame shows",
                                   partial=body or None, hint="The partial report is attached; open the conversation "
                                   "to read it whole, and run `ai-bridge doctor --live` to report the page.")
        how = "research frame" if got.how == "heading" else "research frame (no heading)"
        if got.how != "heading":
            self.log.warning("%s: the Deep Research report has no %r heading; read it after the completed line",
                             self.t.title, self.t.labels.get("reportHeading", ("",))[0])
        return body, how

    async def status(self) -> FrameStatus:
        try:
            return FrameStatus.parse(await self.call("status"))
        except BadPageReport as exc:
            raise ResearchUnreadable(f"{self.t.title}'s Deep Research frame reported nonsense: {exc}",
                                     hint="Open the conversation to read the report; the question was not sent "
                                     "again.") from exc

    async def call(self, op: str) -> JSON:
        """research.js in the frame; a frame that reloaded (or whose session ended) is found again, once per
        failure, within `FRAME_WAIT_S`; one that stays gone is `ResearchUnreadable`."""
        for again in (False, True):
            if self.frame is None:
                self.frame = await self.find()
            try:
                return await self.frames.call(self.frame, op)
            except (CdpError, BadExtensionReply) as exc:
                if again:
                    raise self.unreadable(f"its frame failed: {exc}") from exc
                self.log.info("%s: the Deep Research frame's session failed (%s); finding it again", self.t.title,
                              exc)
                self.frame = None
        raise AssertionError("unreachable")

    async def find(self) -> Frame:
        """The child session of the page's last research frame (the sent turn's), within `FRAME_WAIT_S`."""
        why = "the frame did not show in the page"
        with trio.move_on_after(FRAME_WAIT_S):
            while True:
                try:
                    target = await self.frames.target()
                    if target is not None:
                        frame = next((f for f in await self.frames.sessions() if f.frame_id == target), None)
                        if frame is not None:
                            return frame
                        why = "the frame shows, but the extension opened no session for it"
                except CdpError as exc:
                    why = f"the extension refused it ({exc.ext_code or 'cdp_error'}: {exc})"
                    if exc.ext_code in ("bad_params", "method_not_allowed", "unknown_method"):
                        break  # an extension older than this server: waiting cannot help
                except BadExtensionReply as exc:
                    why = str(exc)
                    break
                await trio.sleep(POLL_S / 4)
        raise self.unreadable(why)

    def unreadable(self, why: str) -> ResearchUnreadable:
        return ResearchUnreadable(
            f"{self.t.title}'s Deep Research report could not be read: {why}. The research may still be running "
            "on the site; the question was not sent again",
            hint="Open the conversation to follow it there. If the extension is older than the server, reload it "
            "from `ai-bridge extension-path` (chrome://extensions).")

