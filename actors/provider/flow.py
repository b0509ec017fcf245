"""The ask flow (seed 3.1 / 4.1), on a `Page` — the attached tab (tab.py) or a test's fake page (the flow's types
and text rules: flowkit.py):

prepare (navigate if needed, input box, login) → reconnect guard on a freshly loaded page (earlier turns, settle) →
[retry: look at the conversation first; a question already there is never sent again] → leftover stop button
(seed 9.3) → type (the table's phases, the whole text verified) → send (click, mouse at the button's centre,
Enter; each confirmed) → a response starts → completion (the table's rule; limit and error notices end it at once;
a stall without thinking is stuck) → visible tab → rendered text → extraction (the table's anchors).

Every number comes from the table's `Timeouts`; the ask's deadline bounds the whole flow (`AskBudget`), and the
stall and no-response thresholds shrink with it so that a stuck page is reported, after at most two retries,
before the deadline.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable

import attrs
import trio

from supervisor.errors import (
    BridgeError,
    ConversationUnavailable,
    InputRejected,
    Interrupted,
    LoginRequired,
    NoResponse,
    ProviderError,
    RateLimited,
    ResponseTimeout,
    SendUnconfirmed,
    SiteChallenge,
    StuckError,
)

from ..protocol.provider import AskPhase, AskWarning, digest_shown
from . import drift, research
from .answer_read import AnswerReading
from .flowkit import (
    AskBudget,
    Outcome,
    Page,
    Stage,
    Stuck,
    StuckKind,
    dump_hint,
    normalize,
    notice_error,
    question_shown,
    squash,
    trio_wall_ms,
    unreachable,
)
from .page import PageState
from .tab import AskMemo, PageTimeout, TabGone
from .table import Completion, ProviderTable, Timeouts, TypePhase, Watch, rate_limit_text

MAX_PARTIAL = 200_000  # characters of partial answer a progress item carries (background jobs keep it)
LIMIT_ANSWER_CHARS = 500  # a response this short that reads like the limit message is the limit message


RESTART_S = 2.0  # a Deep Research plan's start button still usable this long after a press is pressed again

Progress = Callable[[AskPhase, int, str], None]
Spawn = Callable[[Callable[[], Awaitable[None]]], None]  # starts a side task in the actor's nursery; it never raises


class AskFlow(AnswerReading):
    """One attempt of one ask on one page."""

    def __init__(self, page: Page, table: ProviderTable, timeouts: Timeouts, *, question: str, new_chat: bool,
                 session_url: str | None, budget: AskBudget, memo: AskMemo, progress: Progress,
                 log: logging.Logger, dump: Callable[[str], Awaitable[str]], spawn: Spawn,
                 reattach: str | None = None, before_typing: Callable[[], Awaitable[None]] | None = None,
                 research: bool = False, new_chat_url: str | None = None, named_url: bool = False,
                 opened_here: bool = False, frames: research.Frames | None = None) -> None:
        self.page = page
        self.t = table
        self.to = timeouts
        self.question = question
        self.new_chat = new_chat
        self.session_url = session_url
        # Where a new chat starts (issue 38): the site's home, a ChatGPT Project or Gemini Gem, a temporary chat.
        self.new_chat_url = new_chat_url or table.home_url
        # The conversation was named by the caller (conversation_url): one the site no longer has is an error, never
        # a new chat the caller did not ask for.
        self.named_url = named_url
        self.opened_here = opened_here  # the tab was just opened at the new chat's URL: no need to load it again
        self.budget = budget
        self.memo = memo
        self.progress = progress
        self.log = log
        self.dump = dump  # (why) -> where the debug dump went
        self.spawn = spawn
        self.before_typing = before_typing  # the ask's model / mode choice and its files (attach.py), never on resume
        self.partial_running = False
        self.stage = Stage.PREPARING
        self.chars = 0
        self.stop_shown = False  # in the last state seen
        self.last_change = trio.current_time()  # when the answer last changed (or the page was thinking)
        self.marks: dict[str, float] = {}
        self.type_phase: TypePhase | None = None
        self.send_method = ""
        self.warnings: list[AskWarning] = []
        # Reattaching a stopped server's job: the question's digest (its text is not kept). Never types or sends.
        self.reattach = reattach
        self.most_solid = 0  # the most answer text (non-blank characters) the page showed (issue 37)
        self.media_only = False  # the answer is generated images with no text of their own (issue 35)
        self.research = research  # the ask switched Deep Research on: its answer is the report (issue 34)
        self.research_pressing = False
        self.research_pressed_at = -1e9
        # ChatGPT's report runs in a frame of its own (issue 34): read through its child session (research.py).
        self.frames = frames if research and table.selectors.get("researchFrame") else None

    def mark(self, name: str) -> None:
        self.marks[name] = trio.current_time()

    def conversation(self, url: str | None) -> bool:
        return url is not None and re.match(self.t.conversation_re, url) is not None

    # -- the attempt ------------------------------------------------------------------------------------------------

    async def run(self) -> Outcome:
        if self.budget.attempt > 1 and self.memo.sent and not self.conversation(self.memo.url):
            # Sent, but into a conversation whose URL never showed: a new chat would not show the question, and
            # sending it there would be a second (paid) message.
            raise self.unconfirmed("its conversation's URL was never known")
        st = await self.prepare()
        typed: str | None = None  # the question as the editor shows it after the first call typed it
        if self.reattach is None and self.budget.attempt == 1 and self.before_typing is None and \
                self.t.type_phases[:1] == (TypePhase.JS,):
            # An ask's first attempt with nothing to choose or attach first: one call tells the watcher the question,
            # counts the page and types it the table's first way unless a stop button stands in the way (issue 40.6:
            # the round trip before typing was a tenth of the bridge's own time per ask).
            self.mark("wait_input")  # the input box is there: the call's time is the typing's
            st, typed = await self.page.begin(self.question)
        elif self.reattach is None:
            # The structural finders look for our own text in the thread when the table's selectors find no turn
            # (issue 37): they are told the question before anything is counted.
            await self.page.expect(self.question)
            st = await self.page.current()
        resume = self.budget.attempt > 1 and self.memo.sent and (
            question_shown(self.question, st.last_user) if self.reattach is None
            else digest_shown(self.reattach, st.last_user))
        if self.reattach is not None and not resume:
            raise Interrupted(f"{self.t.title}: the last message of {self.memo.url} is not this job's question, so "
                              "its answer cannot be told apart; nothing was sent", url=self.memo.url,
                              hint="Open the conversation to read the answer, or ask again.")
        if resume:
            # Never send a question twice: it is in the conversation, so wait for (or read) its answer.
            self.log.info("%s: the question is already in the conversation; reading its answer instead of "
                          "sending it again", self.t.title)
            initial_assistant = st.assistant_count - (1 if st.answered else 0)
            await self.page.mark_notices(True)
            self.mark("wait_input")
            self.mark("input")
            self.mark("send")
        else:
            if typed is None:  # else counted by the call that typed it, with no stop button shown
                if st.stop:
                    await self.stuck_check()
                st = await self.page.current()
            initial_user, initial_assistant = st.user_count, st.assistant_count
            if self.before_typing is not None:
                await self.before_typing()
            if typed is None:
                self.mark("wait_input")
            self.stage = Stage.TYPING
            self.progress(AskPhase.TYPING, 0, "")
            self.type_phase = await self.type_question(typed)
            self.mark("input")
            self.stage = Stage.SENDING
            self.send_method = await self.send(initial_user)
            self.mark("send")
        st = await self.page.current()
        if self.conversation(st.url):
            self.memo.url = st.url
        self.stage = Stage.WAITING
        self.progress(AskPhase.SENT, 0, "")
        return await self.answer(initial_assistant, resume)

    async def prepare(self) -> PageState:
        st = await self.page.current()
        target = self.target(st)
        if target is not None:
            await self.page.navigate(target)
        st = await self.input_box()
        if st.challenge and not st.input_found:
            raise SiteChallenge(f"{self.t.title} shows a bot check (“verify you are human”) instead of the "
                                "chat; nothing was sent",
                                hint=f"Open {self.t.home_url} in the browser ai-bridge uses, complete the check, then "
                                "ask again. ai-bridge never answers it for you.")
        if st.login and not st.input_found:
            raise LoginRequired(f"{self.t.title} needs you to log in",
                                hint=f"Open {self.t.home_url} in the browser ai-bridge uses, log in, then retry.")
        if self.page.fresh:
            gone = await self.guard(st)
            self.page.fresh = False
            if gone and self.named_url:
                raise ConversationUnavailable(
                    f"the conversation {st.url} is not available on {self.t.title} (deleted, or not this account's); "
                    "nothing was sent", hint="Check the URL (open it in the browser ai-bridge uses), or leave "
                    "conversation_url out to ask in this project's conversation.")
            if gone:
                # Deleted on the site (or never there): ask in a new chat of the same project, and say so. The
                # new conversation's URL is kept when the answer comes.
                self.log.warning("%s: the conversation %s is not available; asking in a new chat", self.t.title,
                                 st.url)
                self.warnings.append(AskWarning(
                    "conversation_gone", f"The conversation {st.url} is no longer available on {self.t.title} "
                    "(deleted, or never there); the question went to a new chat, which this project now uses."))
                self.session_url = None
                await self.page.navigate(self.new_chat_url)
                await self.input_box()
                await self.settle()
        return await self.page.current()

    async def input_box(self) -> PageState:
        """The loaded page with its input box (or a login page). A page the browser could not load is known at once,
        by the browser's own error page: `SiteUnreachable` with its error name, not a wait for an input box."""
        try:
            st = await self.page.wait_for(lambda s: s.load_failed or (s.ready == "complete" and (
                s.input_found or s.login or s.challenge)), self.to.input_s, "the input box")
        except PageTimeout:
            where = await self.dump("no-input")
            raise InputRejected(f"the {self.t.title} input box did not appear within {self.to.input_s:g}s",
                                hint=dump_hint("Check the tab with take_cdp_snapshot; the site may be down or "
                                               "changed.", where)) from None
        if st.load_failed:
            raise unreachable(self.t, await self.page.load_error())
        return st

    def target(self, st: PageState) -> str | None:
        """Where the attempt starts: the conversation a retry's question went to; a new chat; this project's
        conversation; after a stuck attempt, a fresh load of the page."""
        retry = self.budget.attempt > 1
        if retry and self.memo.sent and self.conversation(self.memo.url):
            return self.memo.url
        if self.new_chat:
            if not retry and self.opened_here and st.url == self.new_chat_url and not (st.user_count or
                                                                                      st.assistant_count):
                return None  # a tab just opened at the new chat: loading it again would only cost time
            return self.new_chat_url
        if self.conversation(self.session_url) and (retry or self.session_url != st.url):
            return self.session_url
        if retry:
            return st.url if st.url.startswith(self.t.home_url.rstrip("/")) else self.t.home_url
        if st.load_failed:  # an earlier ask left the browser's error page here: load the site again
            return self.t.home_url
        return None

    async def guard(self, st: PageState) -> bool:
        """Seed v2.0.10's reconnect guard, on every freshly loaded page however it was opened: an existing
        conversation's turns arrive after the input box (SPA), so wait for them and for the counts to settle before
        counting — else old turns pass for the new answer. A conversation the page says is gone (or that sends us
        elsewhere) is known at once: returns True, and nothing waits for turns that never come.

        A retry whose question may already be in this conversation waits for its turns as long as the deadline
        allows (a slow conversation must not pass for one without the question), and never sends the question
        again when it cannot tell (`SendUnconfirmed`)."""
        if not self.conversation(st.url):
            await self.settle()
            return False
        unsure = self.budget.attempt > 1 and self.memo.sent
        limit = max(0.5, self.budget.remaining() - self.to.attempt_reserve_s) if unsure else self.to.earlier_turns_s
        try:
            st = await self.page.wait_for(
                lambda s: s.user_count > 0 or s.unavailable or not self.conversation(s.url), limit, "earlier turns")
        except PageTimeout:
            if unsure:
                raise self.unconfirmed(f"its turns did not load within {limit:.3g}s") from None
            self.log.warning("%s: the conversation showed no earlier turns after %gs", self.t.title, limit)
        if st.user_count == 0 and (st.unavailable or not self.conversation(st.url)):
            if unsure:
                raise self.unconfirmed("the page says it is not available")
            return True
        await self.settle()
        return False

    def unconfirmed(self, why: str) -> SendUnconfirmed:
        where = self.memo.url if self.conversation(self.memo.url) else "a conversation whose URL never showed"
        return SendUnconfirmed(f"{self.t.title}: the earlier attempt may have sent the question to {where}, but "
                               f"{why}; it was not sent again",
                               hint=f"Look at {where} (or the site's recent chats) for your question and its answer; "
                               "ask again only if it is not there.")

    async def settle(self) -> None:
        """Counts unchanged for `settle_s` (replaces the seed's fixed 500 ms; only after a load)."""
        give_up = trio.current_time() + self.to.settle_max_s
        key: tuple[int, int, int] | None = None
        while trio.current_time() < give_up:
            st = await self.page.current()
            now_key = (st.user_count, st.assistant_count, st.last_len)
            if now_key == key:
                return
            key = now_key
            try:
                await self.page.wait_for(lambda s: (s.user_count, s.assistant_count, s.last_len) != now_key,  # noqa: B023
                                         self.to.settle_s, "settled counts")
            except PageTimeout:
                return

    async def stuck_check(self) -> None:
        """Seed 9.3 (and Gemini's pre-ask stop check): a stop button left over from an earlier answer must go."""
        try:
            await self.page.wait_for(lambda s: not s.stop, self.to.stuck_check_s, "the leftover stop button")
        except PageTimeout:
            raise Stuck(f"{self.t.title} is stuck: an earlier answer's stop button did not go away within "
                        f"{self.to.stuck_check_s:g}s", StuckKind.LEFTOVER_STOP) from None

    # -- typing and sending -----------------------------------------------------------------------------------------

    async def type_question(self, typed: str | None = None) -> TypePhase:
        """Seed 5.1 / 5.2: the table's phases in order, each verified against the whole question. `typed`: what the
        first phase already put in the editor (the ask's first call, `begin`)."""
        want = squash(self.question)
        for phase in self.t.type_phases:
            match phase:
                case TypePhase.JS:
                    # Clears, types, reads back: one call (or none, when the first call did it).
                    got = squash(typed if typed is not None else await self.page.fill(self.question))
                case TypePhase.INSERT_TEXT:
                    await self.page.clear()
                    await self.page.insert_text(self.question)
                    got = squash(await self.page.input_text())
                case TypePhase.KEYS:
                    await self.page.clear()
                    await self.page.type_keys(self.question, self.t.newline)
                    got = squash(await self.page.input_text())
            if want in got:
                return phase
            self.log.warning("%s: the input box shows %d of %d characters after the %s phase; trying the next",
                             self.t.title, len(got), len(want), phase.value)
        await self.page.clear()
        raise InputRejected(f"{self.t.title} did not accept the typed question",
                            hint="The page layout may have changed; take_cdp_snapshot shows what the page looks "
                            "like.")

    async def send(self, initial_user: int) -> str:
        """Seed 6: click, then a mouse event at the button's centre, then Enter — each confirmed by the question
        leaving the input box or appearing as a user message; the next is tried only when the page shows neither,
        so a question is never sent twice."""
        def ready(s: PageState) -> bool:
            return not s.stop and s.send_found and s.send_enabled

        try:
            # A send button the table no longer names (relabelled, issue 40's drift runs) is not waited for the whole
            # send_button_s: when neither it nor a stop button shows within send_confirm_s, Enter has its turn.
            st = await self.page.wait_for(lambda s: ready(s) or s.send_found or s.stop, self.to.send_confirm_s,
                                          "a send button")
            if not ready(st):
                await self.page.wait_for(ready, self.to.send_button_s, "an enabled send button")
        except PageTimeout as exc:
            if exc.state is not None and exc.state.stop:
                raise Stuck(f"{self.t.title} kept a stop button up for {self.to.send_button_s:g}s; the question "
                            "was not sent", StuckKind.LEFTOVER_STOP) from None
            self.log.warning("%s: no enabled send button; trying the mouse and Enter", self.t.title)

        def sent(s: PageState) -> bool:
            return s.user_count > initial_user

        def taken(s: PageState) -> bool:
            return sent(s) or s.input_empty or s.stop

        async def mouse() -> bool:
            box = await self.page.send_box()
            if box is None:
                return False
            await self.page.mouse_click(box)
            return True

        async def enter() -> bool:
            await self.page.press_enter()
            return True

        async def click() -> bool:
            return await self.page.click_send(True)  # marks the notices already shown, then clicks

        methods: tuple[tuple[str, Callable[[], Awaitable[bool]]], ...] = (
            ("click", click), ("mouse", mouse), ("enter", enter))
        for name, action in methods:
            self.memo.sent = True  # from the first action on, the question may be in the conversation
            if not await action():
                continue
            try:
                st = await self.page.wait_for(taken, self.to.send_confirm_s, f"the {name} to send")
            except PageTimeout:
                self.log.warning("%s: the %s did not send the question; trying the next way", self.t.title, name)
                continue
            if not sent(st):
                try:  # the site took it: its user message is on the way
                    await self.page.wait_for(sent, self.to.user_message_s, "the user message")
                except PageTimeout:
                    where = await self.dump("send-timeout")
                    raise InputRejected(f"{self.t.title} took the question but showed no user message within "
                                        f"{self.to.user_message_s:g}s", hint=dump_hint("", where)) from None
            return name
        where = await self.dump("send-timeout")
        raise InputRejected(f"{self.t.title} did not take the question (click, mouse and Enter all failed)",
                            hint=dump_hint("The send button may have changed.", where))

    # -- the answer -------------------------------------------------------------------------------------------------

    async def answer(self, initial_assistant: int, resumed: bool) -> Outcome:
        sent_t = trio.current_time()
        saw_stop = resumed  # a resumed answer was seen starting by the attempt that sent it
        thinking_seen = False
        key: tuple[int, int, str] | None = None
        last_change = sent_t
        last_progress = -1e9
        page = self.page

        changed_at, seen = sent_t, None

        def watch(s: PageState) -> Watch:
            now = trio.current_time()
            return Watch(initial_assistant, saw_stop, now - sent_t, now - last_change, now - changed_at)

        async def on_state(s: PageState) -> None:
            nonlocal saw_stop, thinking_seen, key, last_change, last_progress, changed_at, seen
            now = trio.current_time()
            if (plain := attrs.evolve(s, seq=0, at_ms=0.0)) != seen:
                seen, changed_at = plain, now  # any change of the page: it is not quiet
            saw_stop = saw_stop or s.stop
            if s.thinking:
                thinking_seen = True
                last_change = now  # a thinking page is never stuck
            if self.conversation(s.url):
                self.memo.url = s.url  # where a retry finds the question (a new chat gets its URL late)
            k = (s.assistant_count, s.last_len, s.last_head)
            if k != key:
                key, last_change = k, now
            if s.assistant_count > initial_assistant:
                self.most_solid = max(self.most_solid, s.last_solid)  # how much answer the page has shown
            self.last_change, self.stop_shown = last_change, s.stop
            started = s.assistant_count > initial_assistant
            if started and self.stage is Stage.WAITING:
                self.stage = Stage.ANSWERING
            self.chars = s.last_len if started else 0
            if started and now - last_progress >= self.to.progress_every_s and not self.partial_running:
                last_progress = now
                if s.thinking and s.last_len == 0:
                    self.progress(AskPhase.THINKING, 0, "")
                elif s.last_len > 0:
                    # Read the partial answer on the side: judging the next report never waits for a conversion.
                    self.partial_running = True
                    self.spawn(lambda: self.send_partial(s.last_len))

        # A response starts (seed: new assistant/model response within 30 s), or a notice ends the ask.
        new_response_s = self.budget.share(self.to.new_response_s, self.to.min_stall_s, self.to.attempt_reserve_s)
        st: PageState | None = None
        while st is None:
            try:
                st = await page.wait_for(lambda s: s.assistant_count > initial_assistant or s.notice is not None
                                         or (self.frames is not None and s.research_frame),
                                         new_response_s, "a response", on_state)
            except PageTimeout as exc:
                if exc.state is not None and exc.state.thinking:
                    continue  # thinking before the response shows: never stuck
                await self.dump("no-response")
                raise Stuck(f"{self.t.title} did not start answering within {new_response_s:.3g}s "
                            "(stuck: no response)", StuckKind.NO_RESPONSE) from None
        if st.notice is not None:
            raise notice_error(self.t, st.notice)
        if self.frames is not None:
            if st.research_frame:
                return await self.frame_report(st)
            # An ordinary answer where the research should run: it is read as one, and the result says so.
            self.research = False
            self.warnings.append(AskWarning("research_not_started", f"{self.t.title} answered without running Deep "
                                            "Research (no research frame came): the answer is its ordinary reply."))

        stall_s = self.budget.share(self.to.stall_s, self.to.min_stall_s, self.to.attempt_reserve_s)
        if stall_s < self.to.stall_s:
            # Cut by the deadline: a stall is seen up to one safety poll late and then dumped, and that must still
            # end before the deadline (a stuck page is reported as stuck, not as a timeout past it).
            stall_s = max(self.to.min_stall_s, stall_s - self.to.stall_report_s)
        reason = ""

        def complete(s: PageState) -> bool:
            nonlocal reason
            if s.notice is not None:
                return True
            if self.research:
                # Deep Research (issue 34): the plan is confirmed where the site asks (Gemini's "Start research"),
                # and only the response that opened the report is the answer; a report takes 5-30 minutes of quiet
                # work, so a still page is never stuck here (the deadline bounds it).
                # A press the page ignored (it was still streaming the plan) leaves the button usable: pressed again
                # a moment later; once started it goes inert, so it is never pressed twice.
                now = trio.current_time()
                if s.research_start and not self.research_pressing and now - self.research_pressed_at >= RESTART_S:
                    self.research_pressing, self.research_pressed_at = True, now
                    self.spawn(self.start_research)
                if not s.report_open:
                    return False
            elif s.stop and not s.thinking and trio.current_time() - last_change >= stall_s:
                raise Stuck(f"{self.t.title} stopped making progress: the stop button stayed for {stall_s:.3g}s "
                            "with no new text (stuck: stop button)", StuckKind.STALLED)
            fired: Completion = self.t.completion(s, watch(s))
            reason = fired.reason
            return fired.done

        try:
            st = await page.wait_for(complete, self.budget.remaining() + 1, "completion", on_state)
        except Stuck as exc:
            exc.partial = await self.partial()
            await self.dump("stalled")
            raise
        if st.notice is not None:
            raise notice_error(self.t, st.notice, await self.partial())
        detected_ms = trio_wall_ms()
        self.stage = Stage.EXTRACTING
        self.mark("response")
        self.progress(AskPhase.EXTRACTING, st.last_len, "")
        got = await self.whole(await self.read(st))
        if got.error:
            self.log.warning("%s: markdown conversion failed, answer taken as plain text: %s", self.t.title, got.error)
        answer = normalize(got.text)
        if len(answer) <= LIMIT_ANSWER_CHARS and rate_limit_text(self.t, answer):
            raise RateLimited(f"{self.t.title} says you reached its limit: “{answer[:300]}”",
                              hint="Wait until the limit resets, or ask the other provider. ai-bridge did not send "
                              "the question again.")
        how = got.how
        if got.plain:
            # A fallback that lost the answer's structure says so: the text is right, its markdown is not.
            how = f"{got.how} (plain text)"
            why = f"the markdown converter failed ({got.error})" if got.error else \
                f"the page's answer was read by the {got.how!r} text fallback"
            self.warnings.append(AskWarning(
                "plain_text_answer", f"The answer is plain text: {why}, so lists, tables, code fences and math may "
                "have lost their markdown."))
        end = await page.current()
        changed = drift.site_changed(self.t, end.fallbacks, self.t.primary_anchor.value if self.media_only else got.how)
        if changed is not None:
            self.log.warning("%s", changed.message)
            self.warnings.append(changed)
        return Outcome(answer, end.url, reason or "resumed", how, thinking_seen or st.thinking_done, detected_ms,
                       resumed, model=end.model, warnings=list(self.warnings))

    async def frame_report(self, st: PageState) -> Outcome:
        """Deep Research in its own frame (ChatGPT): plan started, progress while it runs, the whole report."""
        assert self.frames is not None
        self.stage = Stage.ANSWERING
        self.progress(AskPhase.THINKING, 0, "")
        text, how = await research.Research(self.frames, self.t, self.progress, self.log).run()
        self.stage = Stage.EXTRACTING
        self.mark("response")
        answer = normalize(text)
        self.progress(AskPhase.EXTRACTING, len(answer), "")
        end = await self.page.current()
        return Outcome(answer, end.url, "research completed", how, False, trio_wall_ms(), False, model=end.model,
                       warnings=list(self.warnings))

    async def start_research(self) -> None:
        """Press the research plan's start button with a real click (the page decides what its button does)."""
        try:
            box = await self.page.research_start_box()
            if box is not None:
                await self.page.mouse_click(box)
                self.log.info("%s: pressed the Deep Research plan's start button", self.t.title)
                self.progress(AskPhase.THINKING, 0, "")
        except (BridgeError, TabGone) as exc:
            self.log.info("%s: could not press the research plan's start button yet: %s", self.t.title, exc)
        finally:
            self.research_pressing = False

    async def send_partial(self, chars: int) -> None:
        try:
            text = (await self.page.extract(own_only=True)).text
        except (BridgeError, TabGone):
            text = ""  # progress is advisory; the flow itself notices a broken tab
        finally:
            self.partial_running = False
        if self.stage in (Stage.WAITING, Stage.ANSWERING):  # never after the answer is being read
            self.progress(AskPhase.ANSWERING, chars, text[-MAX_PARTIAL:])

    # -- the deadline -----------------------------------------------------------------------------------------------

    async def on_deadline(self, timeout_s: float) -> ProviderError:
        """The error for an ask whose deadline came: it names the last state seen and carries the partial answer;
        Stop has been clicked. Runs shielded and bounded by the caller."""
        clicked = False
        partial = None
        if self.stage in (Stage.WAITING, Stage.ANSWERING, Stage.EXTRACTING):
            clicked = await self.page.click_stop()
            partial = await self.partial()
        where = await self.dump("deadline")
        stop = " (clicked Stop)" if clicked else ""
        stalled = self.stop_shown and trio.current_time() - self.last_change >= self.to.min_stall_s
        if self.memo.stuck is not None and (self.stage in (Stage.PREPARING, Stage.TYPING) or stalled):
            return StuckError(f"{self.t.title} was still stuck ({self.memo.stuck}) when the {timeout_s:g}s "
                              "deadline came",
                              hint=dump_hint("Reload the tab or start a new chat (new_chat: true).", where),
                              partial=partial)
        if self.stage is Stage.WAITING:
            return NoResponse(f"{self.t.title} did not start answering before the {timeout_s:g}s deadline{stop}",
                              hint=dump_hint("The site may be overloaded; retry later or raise timeout_s.", where),
                              partial=partial)
        if self.stage in (Stage.ANSWERING, Stage.EXTRACTING):
            return ResponseTimeout(f"{self.t.title} did not finish answering within {timeout_s:g}s "
                                   f"({self.chars} characters received){stop}",
                                   hint=dump_hint("Raise timeout_s for long answers; the partial answer is "
                                                  "attached.", where),
                                   partial=partial)
        return ResponseTimeout(f"the {timeout_s:g}s deadline came while {self.stage.value}; the question was not "
                               "sent" if not self.memo.sent else f"the {timeout_s:g}s deadline came while "
                               f"{self.stage.value}", hint=dump_hint("Raise timeout_s, or check the tab with "
                                                               "take_cdp_snapshot.", where))
