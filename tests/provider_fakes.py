"""A fake provider page for unit tests of the ask flow (actors/provider/flow.py): the `Page` protocol over a small
simulated site whose awkwardness each test sets — which typing phases reach the editor, which send methods work,
what the site does after a question arrives (a script of state changes on trio's clock), hidden tabs, notices.
Time-driven logic runs on an autojump clock, so a 120 s stall or a 5 s fallback takes no real time."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from actors.protocol.provider import AskPhase
from actors.provider.flow import AskFlow
from actors.provider.flowkit import AskBudget
from actors.provider.page import Box, Extracted, Notice, NoticeKind, PageState, Predicate
from actors.provider.tab import AskMemo, PageTimeout, TabGone
from actors.provider.table import Newline, ProviderTable, TypePhase

LOG = logging.getLogger("tests.provider_fakes")

BASE = PageState(url="https://chatgpt.com/", ready="complete", visible=True, doc="d1", input_found=True,
                 input_empty=True, send_found=True, send_enabled=False, stop=False, user_count=0,
                 assistant_count=0, last_len=0, last_head="", last_user="", answered=False, thinking=False,
                 skip_thinking=False, thinking_done=False, generating_text=False, mic_found=True,
                 last_has_feedback=False, login=False, notice=None)


def ps(**changes: Any) -> PageState:
    return attrs.evolve(BASE, **changes)


Respond = Callable[["FakePage", str], Awaitable[None]]


async def answers_in(page: FakePage, question: str, *, text: str = "Answer 42 for you.", first_ms: float = 200,
                     chunks: int = 3, every_ms: float = 100) -> None:
    """The usual site: the user message shows, a stop button, a response that streams, then idle again (ChatGPT:
    send button back but disabled while the input is empty; Gemini: feedback icons and mic)."""
    page.update(stop=True, mic_found=False, send_found=False)
    await trio.sleep(first_ms / 1000)
    page.answer = ""
    page.update(assistant_count=page.state.assistant_count + 1, answered=True)
    for i in range(chunks):
        page.answer = text[: (i + 1) * len(text) // chunks]
        page.update(last_len=len(page.answer) if page.state.visible else 0, last_head=page.answer[:80])
        await trio.sleep(every_ms / 1000)
    page.answer = text
    page.update(stop=False, send_found=True, send_enabled=False, mic_found=True, last_has_feedback=True,
                last_len=len(text) if page.state.visible else 0)


@attrs.define(eq=False)
class FakePage:
    """The `Page` of the ask flow over a simulated site."""

    nursery: trio.Nursery
    state: PageState = BASE
    fresh: bool = False
    accepts: frozenset[TypePhase] = frozenset(TypePhase)  # typing phases that reach the editor
    cut_at_newline: bool = False  # the editor drops everything after the first line break (a bare Enter sent it)
    click_works: bool = True
    mouse_works: bool = True
    enter_works: bool = True
    respond: Respond = answers_in  # what the site does with a question
    user_message_after_s: float = 0.0  # the user message shows this late (the input clears at once)
    front_shows: bool = True  # Page.bringToFront makes a hidden page visible (not for a minimized window)
    on_navigate: Callable[[FakePage, str], None] | None = None
    editor: str = ""
    answer: str = ""
    extracted_by: str = "content"
    plain: bool = False  # the anchor that reads the answer gives plain text
    chrome: bool = False  # a wide anchor would find only page chrome around an empty turn
    wider: str | None = None  # what the whole turn reads (extract_by), where it differs from `answer`
    expected: str = ""  # the question the flow told the watcher (expect)
    error_name: str = ""  # what Chrome's error page names (load_error), when the page shows one
    broken: str | None = None  # the tab's connection broke (a crash, a close): every wait on it ends in TabGone
    submitted: list[str] = attrs.field(factory=list)
    actions: list[str] = attrs.field(factory=list)
    changed: trio.Event = attrs.field(factory=trio.Event)

    # -- simulation ---------------------------------------------------------------------------------------------

    def update(self, **changes: Any) -> None:
        self.state = attrs.evolve(self.state, **changes)
        self.changed.set()
        self.changed = trio.Event()

    def submit(self, how: str) -> None:
        self.actions.append(f"submit:{how}")
        question = self.editor
        self.submitted.append(question)
        self.editor = ""
        self.update(input_empty=True, send_enabled=False)

        async def arrive() -> None:
            await trio.sleep(self.user_message_after_s)
            self.update(user_count=self.state.user_count + 1, last_user=question, answered=False)
            await self.respond(self, question)

        self.nursery.start_soon(arrive)

    def set_editor(self, text: str) -> None:
        if self.cut_at_newline and "\n" in text:
            first, _ = text.split("\n", 1)
            self.editor = first
            self.submit("enter-in-text")
            return
        self.editor = text
        self.update(input_empty=not text.strip(), send_enabled=bool(text.strip()) and not self.state.stop)

    # -- the Page protocol --------------------------------------------------------------------------------------

    async def current(self) -> PageState:
        await trio.lowlevel.checkpoint()
        if self.broken:
            raise TabGone(self.broken)
        return self.state

    async def wait_for(self, pred: Predicate, timeout_s: float, what: str,
                       on_state: Callable[[PageState], Awaitable[None]] | None = None) -> PageState:
        deadline = trio.current_time() + timeout_s
        while True:
            if self.broken:
                raise TabGone(self.broken)
            changed = self.changed
            st = self.state
            if on_state is not None:
                await on_state(st)
                if self.state is not st:
                    continue
            if pred(st):
                return st
            now = trio.current_time()
            if now >= deadline:
                raise PageTimeout(what, st)
            with trio.move_on_after(min(1.0, deadline - now)):
                await changed.wait()

    async def navigate(self, url: str) -> None:
        self.actions.append(f"navigate:{url}")
        await trio.sleep(0.05)
        self.fresh = True
        if self.on_navigate is not None:
            self.on_navigate(self, url)
        else:
            self.update(url=url)

    async def load_error(self) -> str:
        await trio.lowlevel.checkpoint()
        return self.error_name

    async def bring_to_front(self) -> None:
        self.actions.append("bring_to_front")
        if self.front_shows:
            self.show()

    async def activate_window(self) -> None:
        self.actions.append("activate_window")
        self.show()

    def show(self) -> None:
        self.update(visible=True, last_len=len(self.answer))

    async def clear(self) -> bool:
        self.set_editor("")
        return True

    async def fill(self, text: str) -> str:
        self.actions.append("fill")
        self.set_editor(text if TypePhase.JS in self.accepts else "")
        return self.editor

    async def insert_text(self, text: str) -> None:
        self.actions.append("insert_text")
        if TypePhase.INSERT_TEXT in self.accepts:
            self.set_editor(self.editor + text)

    async def type_keys(self, text: str, newline: Newline) -> None:
        self.actions.append(f"keys:{newline.value}")
        if TypePhase.KEYS in self.accepts:
            self.set_editor(self.editor + text)

    async def input_text(self) -> str:
        return self.editor

    async def click_send(self, mark_notices: bool) -> bool:
        if mark_notices:
            self.actions.append("mark:False")
        self.actions.append("click")
        if not (self.state.send_found and self.state.send_enabled):
            return False
        if self.click_works:
            self.submit("click")
        return True

    async def send_box(self) -> Box | None:
        return Box(100, 200) if self.state.send_found and self.state.send_enabled else None

    async def mouse_click(self, box: Box) -> None:
        self.actions.append("mouse")
        if self.mouse_works:
            self.submit("mouse")

    async def press_enter(self) -> None:
        self.actions.append("enter")
        if self.enter_works and self.editor.strip():
            self.submit("enter")

    async def click_stop(self) -> bool:
        self.actions.append("stop")
        return self.state.stop

    async def mark_notices(self, keep_after_last_user: bool) -> None:
        self.actions.append(f"mark:{keep_after_last_user}")

    async def expand_thinking(self) -> bool:
        self.actions.append("expand_thinking")
        return True

    async def extract(self, own_only: bool = False) -> Extracted:
        self.actions.append(f"extract:{'own' if own_only else 'all'}")
        text = self.answer if self.state.visible else ""
        if own_only and self.state.last_len == 0:
            text = ""  # the turn's own content has not rendered (render lag): only a wider anchor could see text
        if not text and not own_only and self.chrome:
            return Extracted("", "chrome")  # around the empty turn: only the disclaimer, which is never an answer
        return Extracted(text, self.extracted_by if text else "none", plain=self.plain)


    async def expect(self, question: str) -> None:
        self.expected = question  # the watcher's structural finders learn the question (not an action on the page)

    async def begin(self, question: str) -> tuple[PageState, str | None]:
        self.actions.append("begin")
        self.expected = question
        st = await self.current()
        if st.stop:
            return st, None
        self.set_editor(question if TypePhase.JS in self.accepts else "")
        return st, self.editor

    async def extract_by(self, how: str) -> Extracted:
        self.actions.append(f"extract:{how}")
        text = self.wider if self.wider is not None else self.answer if self.state.visible else ""
        return Extracted(text, how if text else "none")

    async def research_start_box(self) -> Box | None:
        return None


def notice(kind: NoticeKind, text: str, where: str = "alert") -> Notice:
    return Notice(kind, text, where)


@attrs.define
class Run:
    """A flow over a fake page, and what it reported."""

    flow: AskFlow
    page: FakePage
    progress: list[AskPhase] = attrs.field(factory=list)
    dumps: list[str] = attrs.field(factory=list)


def make_flow(page: FakePage, table: ProviderTable, question: str = "What is 6 times 7?", *, attempt: int = 1,
              timeout_s: float = 480, memo: AskMemo | None = None, new_chat: bool = False,
              session_url: str | None = None, **timeouts: float) -> Run:
    to = attrs.evolve(table.timeouts, **timeouts) if timeouts else table.timeouts
    run_: list[Run] = []

    def progress(phase: AskPhase, chars: int, text: str) -> None:
        run_[0].progress.append(phase)

    async def dump(why: str) -> str:
        run_[0].dumps.append(why)
        return f"/dumps/{why}.json"

    flow = AskFlow(page, table, to, question=question, new_chat=new_chat, session_url=session_url,
                   budget=AskBudget(trio.current_time() + timeout_s, attempt, 3), memo=memo or AskMemo(),
                   progress=progress, log=LOG, dump=dump, spawn=page.nursery.start_soon)
    run_.append(Run(flow, page))
    return run_[0]
