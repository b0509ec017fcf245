"""Reading a finished answer (a room of the ask flow, flow.py): the tab made visible, thinking expanded, the new
turn's own content waited for through render lag, wider anchors only after it, and never less than the page showed
(issue 37). `AskFlow` takes these methods; what they read of the flow is declared below."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from supervisor.errors import AnswerIncomplete, AnswerNotFound, ProviderError

from . import drift
from .flowkit import AskBudget, Page, dump_hint, normalize
from .page import Extracted, PageState
from .tab import PageTimeout
from .table import Anchor, ProviderTable, Timeouts


class AnswerReading:
    page: Page
    t: ProviderTable
    to: Timeouts
    budget: AskBudget
    log: logging.Logger
    dump: Callable[[str], Awaitable[str]]
    research: bool
    most_solid: int
    media_only: bool

    async def whole(self, got: Extracted) -> Extracted:
        """Never a partial answer as ok (issue 37): an answer shorter than what the page showed is read again by the
        whole turn, keeping its structure; if that is still short, `AnswerIncomplete` with what was read."""
        if self.research or not drift.short_of(got.text, self.most_solid):
            return got
        wider = await self.page.extract_by(Anchor.TURN.value)
        if wider.text.strip() and not drift.short_of(wider.text, self.most_solid):
            self.log.warning("%s: the answer read by %r was shorter than the page showed (%d of %d characters); "
                             "read by the whole turn instead", self.t.title, got.how, drift.solid_len(got.text),
                             self.most_solid)
            return wider
        await self.dump("incomplete")
        raise AnswerIncomplete(f"{self.t.title}'s answer could be read only in part: {drift.solid_len(got.text)} of "
                               f"the {self.most_solid} characters the page showed (the page changed in a way "
                               "ai-bridge does not read)", partial=normalize(got.text) or None,
                               hint="The partial answer is attached; run `ai-bridge doctor --live` and report the "
                               "page (docs/providers.md).")

    async def read(self, st: PageState) -> Extracted:
        """The answer's text: a hidden tab is brought to the front first (a hidden React page renders no text,
        seed 13 problem 4), thinking expanded (seed 3.6), then the new turn's own content. That content may render a
        moment after the site finished (render lag, a re-shown tab re-rendering): it is waited for before any wider
        anchor looks around the turn, and whatever page chrome those find is never the answer — the wait goes on
        (seed 3.5's 120 s, within the deadline), then ends in `AnswerNotFound`."""
        if st.read is not None and st.read.text.strip() and st.visible and not st.thinking_done:
            return st.read  # read by the watcher from the very DOM that completed the ask (page.py `read`)
        if not st.visible:
            await self.make_visible()
        if st.thinking_done:
            await self.page.expand_thinking()
        got = await self.page.extract(own_only=True)
        if got.text.strip():
            return got
        if (await self.page.current()).last_media:
            # Generated images with no text of their own (issue 35): the turn holds them, and that is the answer.
            got = await self.page.extract_by(Anchor.TURN.value)
            if got.text.strip():
                self.media_only = True  # read by the turn on purpose: no sign the site changed
                return got
        await self.rendered(self.to.own_content_s)
        got = await self.page.extract()  # the table's anchors in order: its own content first, then wider
        if got.text.strip():
            return got
        await self.rendered(self.to.text_render_s, fresh=True)
        got = await self.page.extract()
        if got.text.strip():
            return got
        where = await self.dump("no-answer")
        found = "only page chrome" if got.how == "chrome" else "no text"
        raise AnswerNotFound(f"{self.t.title} finished, but its answer never rendered: the page showed {found} "
                             "where the answer should be", hint=dump_hint("Open the conversation to read it, or ask "
                                                                          "again.", where))

    async def rendered(self, wait_s: float, *, fresh: bool = False) -> bool:
        """The new turn's own text shows (waiting up to `wait_s` within the deadline). `fresh`: a text that was
        there but was no answer does not count — only a change does."""
        before = (await self.page.current()).last_len if fresh else 0
        try:
            await self.page.wait_for(lambda s: ((s.last_len > 0 and s.last_len != before) or s.last_media > 0)
                                     and not s.thinking,
                                     min(wait_s, self.budget.remaining() + 1), "the answer's text")
            return True
        except PageTimeout:
            self.log.warning("%s: no answer text rendered within %gs", self.t.title, wait_s)
            return False

    async def make_visible(self) -> None:
        await self.page.bring_to_front()
        try:
            await self.page.wait_for(lambda s: s.visible, self.to.visible_s, "a visible tab")
            return
        except PageTimeout:
            pass
        # A minimized window stays hidden after Page.bringToFront: focus the window through the extension.
        await self.page.activate_window()
        try:
            await self.page.wait_for(lambda s: s.visible, self.to.visible_s, "a visible tab")
        except PageTimeout:
            self.log.warning("%s: the tab stays hidden; its answer text may not render", self.t.title)

    async def partial(self) -> str | None:
        """The answer text so far (best effort, for an error that ends the ask)."""
        try:
            with trio.move_on_after(self.to.script_s):
                text = normalize((await self.page.extract()).text)
                return text or None
        except ProviderError:
            return None
        return None
