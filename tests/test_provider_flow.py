"""Unit tests of the provider's ask flow and rules, on a fake page and trio's autojump clock: every completion
condition of seed 3.3 and 4.3 (table-driven), the typing phases, the send fallbacks, the pre-ask stop check,
notices, stalls and thinking, the deadline budget, retries that never send twice, hidden tabs, the reconnect guard,
the suspicious-answer heuristic, the watcher report validation, key typing and tab creation timeouts."""

from __future__ import annotations

import json
import math
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as hs

from actors.cdp import TabInfo
from actors.protocol.provider import Ask, AskPhase, question_digest
from actors.protocol.relay import ExtCommand
from actors.protocol.session_store import SessionEntry
from actors.provider import drift
from actors.provider.flowkit import AskBudget, Stuck, StuckKind, is_suspicious, normalize, question_shown
from actors.provider.page import BadPageReport, Extracted, NoticeKind, PageState
from actors.provider.sites import chatgpt, gemini
from actors.provider.tab import AskMemo, ProviderMemory, TabSession
from actors.provider.table import Completion, Newline, TypePhase, Watch
from actors.provider.tabs import Tabs
from supervisor.errors import (
    AnswerIncomplete,
    AnswerNotFound,
    InputRejected,
    Interrupted,
    RateLimited,
    SendUnconfirmed,
    SiteError,
    SiteUnreachable,
    TabClosed,
)

from .provider_fakes import BASE, FakePage, answers_in, make_flow, notice, ps

W0 = Watch(initial_assistant=1, saw_stop=False, elapsed_s=0.0, text_stable_s=0.0)


def watch(**changes: Any) -> Watch:
    return attrs.evolve(W0, **changes)


NEW = {"assistant_count": 2}  # one response more than before sending


# --- completion rules (seed 3.3 and 4.3), table-driven ----------------------------------------------------------------


@pytest.mark.parametrize("state, w, expected", [
    # condition 0 (the 2026 page): the turn action buttons on the new turn; no send button on an empty composer
    (ps(**NEW, send_found=False, last_has_feedback=True), W0, "turn action buttons on the new turn"),
    (ps(**NEW, send_found=False, last_has_feedback=True, stop=True), watch(saw_stop=True), None),
    (ps(**NEW, send_found=False, last_has_feedback=True, thinking=True), watch(saw_stop=True), None),
    (ps(send_found=False, last_has_feedback=True), watch(saw_stop=True), None),  # an earlier turn's actions
    # condition 1: no stop, send button there and enabled, a new response
    (ps(**NEW, send_enabled=True), W0, "send button enabled again"),
    # condition 2: stop seen then gone, input empty
    (ps(**NEW), watch(saw_stop=True), "stop button seen then gone"),
    # condition 3: 5 s, no stop, input empty, not still generating
    (ps(**NEW), watch(elapsed_s=5.0), "5 s fallback"),
    # condition 4 (thinking fallback) is reached only through 3's conditions plus no skip button
    (ps(**NEW, send_found=False), watch(elapsed_s=10.0), "5 s fallback"),
    # generating text with the thinking-done marker is not "still generating"
    (ps(**NEW, generating_text=True, thinking_done=True), watch(saw_stop=True), "stop button seen then gone"),
    # never: no new response, a stop button, skip-thinking, a thinking label, generating text, input not empty
    (ps(send_enabled=True), watch(saw_stop=True, elapsed_s=60), None),
    (ps(**NEW, stop=True, send_enabled=True), watch(saw_stop=True, elapsed_s=60), None),
    (ps(**NEW, skip_thinking=True, send_enabled=True), watch(saw_stop=True, elapsed_s=60), None),
    (ps(**NEW, thinking=True, send_enabled=True), watch(saw_stop=True, elapsed_s=60), None),
    (ps(**NEW, generating_text=True, send_enabled=True), watch(saw_stop=True, elapsed_s=60), None),
    (ps(**NEW, input_empty=False), watch(saw_stop=True, elapsed_s=4.9), None),
    (ps(**NEW), watch(elapsed_s=4.9), None),
])
def test_chatgpt_completion_conditions(state: PageState, w: Watch, expected: str | None) -> None:
    got = chatgpt.completion(state, w)
    assert got == (Completion(True, expected) if expected else Completion(False))


@pytest.mark.parametrize("state, w, expected", [
    (ps(**NEW, last_has_feedback=True), watch(saw_stop=True), "feedback buttons on the new response"),  # 0
    (ps(**NEW, last_has_feedback=True, mic_found=True), watch(saw_stop=True),
     "feedback buttons on the new response"),  # 0 wins over 1
    (ps(**NEW, mic_found=True), watch(saw_stop=True), "mic button back"),  # 1
    (ps(**NEW, mic_found=False, send_enabled=True), watch(saw_stop=True), "send button enabled, input empty"),  # 2
    (ps(**NEW, mic_found=False, last_len=10), watch(text_stable_s=5.0), "text stable for 5 s"),  # 3
    (ps(**NEW, mic_found=False), watch(elapsed_s=10.5), "10 s fallback without a stop button"),  # FB
    # never: no new response, a stop button, thinking; 0-2 need the stop button seen; 3 needs text
    (ps(last_has_feedback=True), watch(saw_stop=True), None),
    (ps(**NEW, stop=True, last_has_feedback=True), watch(saw_stop=True), None),
    (ps(**NEW, thinking=True, last_has_feedback=True), watch(saw_stop=True, elapsed_s=60), None),
    (ps(**NEW, last_has_feedback=True, mic_found=True, send_enabled=True), W0, None),
    (ps(**NEW, mic_found=False, last_len=0), watch(text_stable_s=9.0, saw_stop=True), None),
    (ps(**NEW, mic_found=False), watch(elapsed_s=10.5, saw_stop=True), None),
    # the 2026 page: the mic stays up while streaming, send is aria-disabled: only the stop's going ends it
    (ps(**NEW, stop=True, mic_found=True, send_found=True, send_enabled=False), watch(saw_stop=True), None),
    (ps(**NEW, mic_found=True, send_found=True, send_enabled=False, last_has_feedback=True), watch(saw_stop=True),
     "feedback buttons on the new response"),
])
def test_gemini_completion_conditions(state: PageState, w: Watch, expected: str | None) -> None:
    got = gemini.completion(state, w)
    assert got == (Completion(True, expected) if expected else Completion(False))


# --- typing (seed 5.1 / 5.2, issue 15.6) ------------------------------------------------------------------------------


@pytest.mark.parametrize("table, accepts, used", [
    (chatgpt.TABLE, {TypePhase.JS, TypePhase.INSERT_TEXT, TypePhase.KEYS}, TypePhase.JS),
    (chatgpt.TABLE, {TypePhase.INSERT_TEXT, TypePhase.KEYS}, TypePhase.INSERT_TEXT),
    (chatgpt.TABLE, {TypePhase.KEYS}, TypePhase.KEYS),
    (gemini.TABLE, {TypePhase.JS}, TypePhase.JS),
    (gemini.TABLE, {TypePhase.INSERT_TEXT}, TypePhase.INSERT_TEXT),
    (chatgpt.TABLE, set(), None),
    (gemini.TABLE, {TypePhase.KEYS}, None),  # Gemini's table has two phases (seed 5.2)
])
async def test_typing_phases_in_the_tables_order(autojump_clock: trio.testing.MockClock,
                                                 table: Any, accepts: set[TypePhase], used: TypePhase | None) -> None:
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, accepts=frozenset(accepts))
        r = make_flow(page, table)
        if used is None:
            with pytest.raises(InputRejected, match="did not accept the typed question"):
                await r.flow.run()
            assert page.submitted == [] and page.editor == ""
        else:
            out = await r.flow.run()
            assert r.flow.type_phase is used and out.answer == "Answer 42 for you."
            assert page.submitted == ["What is 6 times 7?"]
        nursery.cancel_scope.cancel()


async def test_a_multi_line_question_is_verified_whole_before_sending(autojump_clock: trio.testing.MockClock) -> None:
    """An editor where a line break sends the first line early: that phase fails verification; the key phase types
    Shift+Enter (the table's newline), which the composer takes as a line break."""
    q = "Review this:\ndef f(x):\n    return 2 * x"
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, accepts=frozenset({TypePhase.KEYS}))
        r = make_flow(page, chatgpt.TABLE, q)
        await r.flow.run()
        nursery.cancel_scope.cancel()
    assert page.submitted == [q]
    assert "keys:shift+enter" in page.actions
    assert chatgpt.TABLE.newline is Newline.SHIFT_ENTER and gemini.TABLE.newline is Newline.SHIFT_ENTER


async def test_key_typing_sends_shift_enter_for_line_breaks_never_a_bare_enter(
        autojump_clock: trio.testing.MockClock) -> None:
    sent: list[dict[str, Any]] = []

    class Relay:
        async def call(self, msg: Any, timeout: float | None = None) -> Any:
            if isinstance(msg, ExtCommand) and msg.method == "cdp.send":
                sent.append({"method": msg.params["method"], **msg.params["params"]})  # type: ignore[dict-item]
            return {"result": {"value": True}}

    session = TabSession(Relay(), 7, chatgpt.TABLE, chatgpt.TABLE.timeouts, "__aib_x", None)  # type: ignore[arg-type]
    session.context_id = 1
    await session.type_keys("a\nb", Newline.SHIFT_ENTER)
    keys = [(c["type"], c.get("key", ""), c.get("text", ""), c.get("modifiers", 0)) for c in sent
            if c["method"] == "Input.dispatchKeyEvent"]
    assert keys == [("keyDown", "", "a", 0), ("keyUp", "", "", 0), ("keyDown", "Enter", "\r", 8),
                    ("keyUp", "Enter", "", 8), ("keyDown", "", "b", 0), ("keyUp", "", "", 0)]
    assert not any(k[1] == "Enter" and k[3] == 0 for k in keys)


# --- sending (seed 6, 9.2, issue 15.5) --------------------------------------------------------------------------------


@pytest.mark.parametrize("works, method, tried", [
    ({"click_works"}, "click", ["click"]),
    ({"mouse_works"}, "mouse", ["click", "mouse"]),
    ({"enter_works"}, "enter", ["click", "mouse", "enter"]),
])
async def test_send_tries_click_then_mouse_then_enter_and_sends_once(autojump_clock: trio.testing.MockClock,
                                                                     works: set[str], method: str,
                                                                    tried: list[str]) -> None:
    flags = {k: k in works for k in ("click_works", "mouse_works", "enter_works")}
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, **flags)
        r = make_flow(page, chatgpt.TABLE)
        await r.flow.run()
        nursery.cancel_scope.cancel()
    assert r.flow.send_method == method
    assert [a for a in page.actions if a in ("click", "mouse", "enter")] == tried
    assert page.submitted == ["What is 6 times 7?"]


async def test_no_send_method_works_is_input_rejected_with_a_dump(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, click_works=False, mouse_works=False, enter_works=False)
        r = make_flow(page, gemini.TABLE)
        with pytest.raises(InputRejected, match="click, mouse and Enter all failed") as info:
            await r.flow.run()
        nursery.cancel_scope.cancel()
    assert page.submitted == [] and r.dumps == ["send-timeout"] and r.flow.memo.sent
    assert info.value.hint is not None and "Debug dump: /dumps/send-timeout.json" in info.value.hint  # where to look


ERROR_PAGE = ps(url="chrome-error://chromewebdata/", input_found=False, send_found=False, mic_found=False)


async def test_a_page_the_browser_could_not_load_is_site_unreachable_at_once(
        autojump_clock: trio.testing.MockClock) -> None:
    """No network: Chrome's error page where the site should be. Known at once, with the browser's error name (it
    was input_rejected "the input box did not appear" after input_s, and a hint for an MCP tool)."""
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ERROR_PAGE, error_name="net::ERR_INTERNET_DISCONNECTED",
                        on_navigate=lambda p, url: None)  # reloading shows the error page again
        r = make_flow(page, chatgpt.TABLE)
        t0 = trio.current_time()
        with pytest.raises(SiteUnreachable) as info:
            await r.flow.run()
        nursery.cancel_scope.cancel()
    assert trio.current_time() - t0 < 1.0  # not the input box's 30 s
    assert info.value.message == "ChatGPT (chatgpt.com) did not load: net::ERR_INTERNET_DISCONNECTED"
    assert info.value.hint is not None and "ERR_INTERNET_DISCONNECTED: no network at all" in info.value.hint
    assert page.submitted == [] and r.dumps == [] and not r.flow.memo.sent
    assert page.actions == ["navigate:https://chatgpt.com/"]  # the error page left by an earlier ask: once more


async def test_an_error_page_left_by_an_earlier_ask_is_reloaded_once_the_network_is_back(
        autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ERROR_PAGE, on_navigate=lambda p, url: p.update(
            url=url, input_found=True, send_found=True, mic_found=True))
        r = make_flow(page, gemini.TABLE)
        outcome = await r.flow.run()
        nursery.cancel_scope.cancel()
    assert page.actions[0] == f"navigate:{gemini.TABLE.home_url}"
    assert page.submitted == ["What is 6 times 7?"] and outcome.answer == "Answer 42 for you."


async def test_a_question_the_site_took_is_not_sent_again_while_its_message_is_late(
        autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, user_message_after_s=6.0)  # far beyond send_confirm_s
        r = make_flow(page, chatgpt.TABLE)
        await r.flow.run()
        nursery.cancel_scope.cancel()
    assert page.submitted == ["What is 6 times 7?"]
    assert [a for a in page.actions if a in ("click", "mouse", "enter")] == ["click"]


async def test_a_stop_button_at_send_time_is_waited_out_not_answered_with_enter(
        autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery)

        async def stop_for_a_while() -> None:
            await trio.sleep(0.01)
            page.update(stop=True, send_found=False)  # appears once typing starts
            await trio.sleep(8)
            page.update(stop=False, send_found=True, send_enabled=bool(page.editor))

        nursery.start_soon(stop_for_a_while)
        await trio.sleep(0.02)
        page.update(stop=False)  # the pre-ask check sees none; it comes back while typing
        page.update(stop=True, send_found=False)
        r = make_flow(page, chatgpt.TABLE, stuck_check_s=20)
        await r.flow.run()
        nursery.cancel_scope.cancel()
    assert r.flow.send_method == "click" and "enter" not in page.actions


async def test_a_first_attempt_counts_and_types_in_one_page_call_never_past_a_stop_button(
        autojump_clock: trio.testing.MockClock) -> None:
    """Issue 40.6: the watcher learns the question, the page is counted and the question typed in one page call. An
    earlier answer's stop button still up: nothing is typed until it went (seed 9.3), then the question is."""
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery)
        await make_flow(page, chatgpt.TABLE).flow.run()
        assert page.actions[0] == "begin" and "fill" not in page.actions and page.expected == "What is 6 times 7?"
        assert page.submitted == ["What is 6 times 7?"]

        stopped = FakePage(nursery, state=ps(stop=True, send_found=False))
        editor_while_stopped: list[str] = []

        async def goes() -> None:
            await trio.sleep(3)
            editor_while_stopped.append(stopped.editor)
            stopped.update(stop=False, send_found=True)

        nursery.start_soon(goes)
        await make_flow(stopped, chatgpt.TABLE).flow.run()
        assert editor_while_stopped == [""] and stopped.actions[:2] == ["begin", "fill"]
        assert stopped.submitted == ["What is 6 times 7?"]
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("table", [chatgpt.TABLE, gemini.TABLE], ids=["chatgpt", "gemini"])
async def test_pre_ask_stop_check(autojump_clock: trio.testing.MockClock, table: Any) -> None:
    """Seed 9.3 (Gemini's pre-ask stop check, and ChatGPT's too): a leftover stop button must go within 5 s."""
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ps(stop=True, send_found=False))

        async def goes() -> None:
            await trio.sleep(3)
            page.update(stop=False, send_found=True)

        nursery.start_soon(goes)
        await make_flow(page, table).flow.run()
        assert page.submitted == ["What is 6 times 7?"]

        stuck_page = FakePage(nursery, state=ps(stop=True, send_found=False))
        with pytest.raises(Stuck) as info:
            await make_flow(stuck_page, table).flow.run()
        assert info.value.kind is StuckKind.LEFTOVER_STOP and stuck_page.submitted == []
        nursery.cancel_scope.cancel()


# --- notices, stalls, thinking (issues 9.2, 9.3, 15.3) ----------------------------------------------------------------


@pytest.mark.parametrize("kind, error", [(NoticeKind.RATE_LIMIT, RateLimited), (NoticeKind.SITE_ERROR, SiteError)])
async def test_a_notice_after_sending_ends_the_ask_at_once(autojump_clock: trio.testing.MockClock,
                                                           kind: NoticeKind, error: type[Exception]) -> None:
    async def shows_notice(page: FakePage, question: str) -> None:
        page.update(stop=True)
        await trio.sleep(0.3)
        page.update(stop=False, notice=notice(kind, "You've reached our limit" if kind is NoticeKind.RATE_LIMIT
                                              else "Something went wrong"))

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, respond=shows_notice)
        r = make_flow(page, chatgpt.TABLE)
        t0 = trio.current_time()
        with pytest.raises(error):
            await r.flow.run()
        assert trio.current_time() - t0 < 1
        nursery.cancel_scope.cancel()
    assert page.submitted == ["What is 6 times 7?"] and "mark:False" in page.actions


async def test_gemini_limit_given_as_a_model_response_is_rate_limited(autojump_clock: trio.testing.MockClock) -> None:
    async def limit(page: FakePage, question: str) -> None:
        await answers_in(page, question, text="You've reached your limit for now. Please try again later.")

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, respond=limit, state=ps(url="https://gemini.google.com/app"))
        with pytest.raises(RateLimited, match="reached your limit"):
            await make_flow(page, gemini.TABLE).flow.run()
        nursery.cancel_scope.cancel()


async def test_a_stall_without_thinking_is_stuck_and_carries_the_partial_answer(
        autojump_clock: trio.testing.MockClock) -> None:
    async def stalls(page: FakePage, question: str) -> None:
        page.update(stop=True)
        await trio.sleep(0.2)
        page.answer = "Partial 42"
        page.update(assistant_count=1, last_len=10, answered=True)

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, respond=stalls)
        r = make_flow(page, chatgpt.TABLE)
        t0 = trio.current_time()
        with pytest.raises(Stuck) as info:
            await r.flow.run()
        took = trio.current_time() - t0
        nursery.cancel_scope.cancel()
    assert info.value.kind is StuckKind.STALLED and info.value.partial == "Partial 42"
    # the default 480 s budget shares out: (480 - 3 x 3) / 3 = 157 s, capped at the table's 120 s stall
    assert 120 <= took < 125


async def test_thinking_for_minutes_with_the_stop_button_up_is_never_stuck(
        autojump_clock: trio.testing.MockClock) -> None:
    async def thinks(page: FakePage, question: str) -> None:
        page.update(stop=True, thinking=True, assistant_count=1, answered=True)
        await trio.sleep(300)  # far beyond the 120 s stall threshold
        page.update(thinking=False)
        await answers_in(page, question)

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, respond=thinks, state=ps(url="https://gemini.google.com/app"))
        r = make_flow(page, gemini.TABLE, timeout_s=900)
        out = await r.flow.run()
        nursery.cancel_scope.cancel()
    assert out.thinking and page.submitted == ["What is 6 times 7?"]
    assert AskPhase.THINKING in r.progress


@pytest.mark.parametrize("timeout_s, attempt, stall", [
    (480, 1, 120), (170, 1, (170 - 9) / 3), (30, 1, 7.0), (30, 3, 27.0), (20, 1, 11 / 3), (6, 1, 2.0)])
async def test_the_budget_shares_the_deadline_between_the_attempts_left(autojump_clock: trio.testing.MockClock,
                                                                        timeout_s: float, attempt: int,
                                                                       stall: float) -> None:
    b = AskBudget(trio.current_time() + timeout_s, attempt, 3)
    assert b.share(120.0, 2.0, 3.0) == pytest.approx(stall)


async def test_a_page_that_never_answers_is_no_response_within_the_budget(
        autojump_clock: trio.testing.MockClock) -> None:
    async def never(page: FakePage, question: str) -> None:
        page.update(stop=True)

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, respond=never)
        r = make_flow(page, chatgpt.TABLE, timeout_s=20)
        t0 = trio.current_time()
        with pytest.raises(Stuck) as info:
            await r.flow.run()
        took = trio.current_time() - t0
        nursery.cancel_scope.cancel()
    assert info.value.kind is StuckKind.NO_RESPONSE and took < 20 / 3
    assert r.dumps == ["no-response"]


async def test_the_deadline_error_names_the_last_state_and_clicks_stop(autojump_clock: trio.testing.MockClock) -> None:
    async def slow(page: FakePage, question: str) -> None:
        await answers_in(page, question, text="Answer 42: " + "x" * 300, chunks=100, every_ms=1000)

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, respond=slow)
        r = make_flow(page, chatgpt.TABLE, timeout_s=10)
        with trio.move_on_after(10):
            await r.flow.run()
        err = await r.flow.on_deadline(10)
        nursery.cancel_scope.cancel()
    assert err.code == "response_timeout" and "characters received" in err.message and "clicked Stop" in err.message
    assert err.partial and "stop" in page.actions
    assert err.hint is not None and err.hint.endswith("Debug dump: /dumps/deadline.json")


# --- retries never send twice (issue 15.3) ----------------------------------------------------------------------------


async def test_a_retry_reads_the_answer_of_a_question_already_in_the_conversation(
        autojump_clock: trio.testing.MockClock) -> None:
    conv = "https://chatgpt.com/c/1234abcd-0000"

    def reloaded(page: FakePage, url: str) -> None:
        page.answer = "Answer 42, finished while the page hung."
        page.update(url=url, user_count=1, assistant_count=1, last_user="What is 6 times 7?", answered=True,
                    last_len=len(page.answer), stop=False, send_found=True, send_enabled=False)

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ps(url=conv, user_count=1, assistant_count=1, stop=True, answered=True),
                        on_navigate=reloaded)
        r = make_flow(page, chatgpt.TABLE, attempt=2, memo=AskMemo(sent=True, url=conv))
        out = await r.flow.run()
        nursery.cancel_scope.cancel()
    assert out.resumed and out.answer == "Answer 42, finished while the page hung."
    assert page.submitted == [] and f"navigate:{conv}" in page.actions and "mark:True" in page.actions
    assert not any(a in page.actions for a in ("fill", "click", "mouse", "enter"))


async def test_a_retry_sends_a_question_the_conversation_does_not_show(autojump_clock: trio.testing.MockClock) -> None:
    conv = "https://chatgpt.com/c/1234abcd-0000"

    def reloaded(page: FakePage, url: str) -> None:  # the conversation loads, and its last question is another
        page.update(url=url, user_count=1, assistant_count=1, last_user="An older question", answered=True,
                    last_len=10, stop=False)

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ps(url="https://chatgpt.com/"), on_navigate=reloaded)
        r = make_flow(page, chatgpt.TABLE, attempt=2, memo=AskMemo(sent=True, url=conv))
        await r.flow.run()
        nursery.cancel_scope.cancel()
    assert page.submitted == ["What is 6 times 7?"] and f"navigate:{conv}" in page.actions


async def test_a_retry_never_resends_when_the_first_conversation_is_unknown(
        autojump_clock: trio.testing.MockClock) -> None:
    """The first attempt sent, but no conversation URL ever showed (a new chat stuck before its first token): a new
    chat would not show the question, so it is not sent again, and the error says so."""
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ps(url="https://chatgpt.com/"))
        r = make_flow(page, chatgpt.TABLE, attempt=2, memo=AskMemo(sent=True, url="https://chatgpt.com/"))
        with pytest.raises(SendUnconfirmed, match="not sent again"):
            await r.flow.run()
        nursery.cancel_scope.cancel()
    assert page.submitted == [] and not any(a.startswith("navigate") for a in page.actions)


async def test_a_retry_waits_for_slow_turns_instead_of_resending(autojump_clock: trio.testing.MockClock) -> None:
    """Issue 26: the conversation showed its turns only after 13 s, past the 10 s of a first attempt's guard. A
    retry whose question may be there waits as long as the deadline allows, finds it, and reads its answer."""
    conv = "https://chatgpt.com/c/1234abcd-0000"

    def reloaded(page: FakePage, url: str) -> None:
        page.update(url=url, user_count=0, assistant_count=0, stop=False)

        async def turns_later() -> None:
            await trio.sleep(15)
            page.answer = "Answer 42, finished while the page hung."
            page.update(user_count=1, assistant_count=1, last_user="What is 6 times 7?", answered=True,
                        last_len=len(page.answer), last_has_feedback=True)

        page.nursery.start_soon(turns_later)

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ps(url=conv, stop=True), on_navigate=reloaded)
        r = make_flow(page, chatgpt.TABLE, attempt=2, memo=AskMemo(sent=True, url=conv), timeout_s=60)
        out = await r.flow.run()
        nursery.cancel_scope.cancel()
    assert out.resumed and out.answer == "Answer 42, finished while the page hung." and page.submitted == []


async def test_a_retry_that_cannot_see_its_turns_before_the_deadline_does_not_resend(
        autojump_clock: trio.testing.MockClock) -> None:
    conv = "https://chatgpt.com/c/1234abcd-0000"

    def reloaded(page: FakePage, url: str) -> None:
        page.update(url=url, user_count=0, assistant_count=0, stop=False)  # the turns never come

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ps(url=conv, stop=True), on_navigate=reloaded)
        r = make_flow(page, chatgpt.TABLE, attempt=2, memo=AskMemo(sent=True, url=conv), timeout_s=30)
        with pytest.raises(SendUnconfirmed, match="did not load"):
            await r.flow.run()
        nursery.cancel_scope.cancel()
    assert page.submitted == []


# --- the answer is the new turn, and a reattached job reads only its own (issue 41) -----------------------------------


async def test_the_answer_is_the_turn_after_the_ones_counted_before_sending(
        autojump_clock: trio.testing.MockClock) -> None:
    """The site starts answering a moment after the user turn shows (the real ChatGPT's stop button and new turn
    come late): until then the previous answer, turn actions and all, looks finished. The ask waits for a turn past
    the ones it counted before sending and reads that one, never the previous answer."""
    async def late_start(page: FakePage, question: str) -> None:
        await trio.sleep(0.8)  # the user turn shows, the composer is idle, the previous answer's actions are up
        await answers_in(page, question, text="The new answer: 42.")

    conv = "https://chatgpt.com/c/1234abcd-0000"
    previous = "The previous answer, to another question."
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ps(url=conv, user_count=1, assistant_count=1, answered=True,
                                          last_user="Another question", last_len=len(previous),
                                          last_has_feedback=True, send_found=False),
                        answer=previous, respond=late_start)
        out = await make_flow(page, chatgpt.TABLE, session_url=conv).flow.run()
        nursery.cancel_scope.cancel()
    assert out.answer == "The new answer: 42." and page.submitted == ["What is 6 times 7?"]


@pytest.mark.parametrize("last_user, answered", [("What is 6 times 7?", True),
                                                 ("Another question, asked in that tab since", False)])
async def test_a_reattached_job_reads_only_its_own_question(autojump_clock: trio.testing.MockClock,
                                                           last_user: str, answered: bool) -> None:
    """A stopped server's job, reattached (only its question's digest is kept): when the conversation's last user
    message is its question, that turn's answer is read; when it is another one (asked in that tab meanwhile), the
    answer there is not this job's: `interrupted`, nothing typed, sent or read."""
    conv = "https://chatgpt.com/c/1234abcd-0000"

    def reloaded(page: FakePage, url: str) -> None:
        page.answer = "Answer 42, read again."
        page.update(url=url, user_count=2, assistant_count=2, last_user=last_user, answered=True,
                    last_len=len(page.answer), last_has_feedback=True, stop=False)

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ps(url="https://chatgpt.com/"), on_navigate=reloaded)
        r = make_flow(page, chatgpt.TABLE, question="", attempt=2, memo=AskMemo(sent=True, url=conv))
        r.flow.reattach = question_digest("What is 6 times 7?")
        if answered:
            out = await r.flow.run()
            assert out.resumed and out.answer == "Answer 42, read again."
        else:
            with pytest.raises(Interrupted, match="not this job's question") as caught:
                await r.flow.run()
            assert caught.value.code == "interrupted" and caught.value.url == conv
            assert not any(a.startswith("extract") for a in page.actions)
        nursery.cancel_scope.cancel()
    assert page.submitted == [] and not any(a in page.actions for a in ("fill", "click", "mouse", "enter"))


# --- the answer is the new turn's own content (issue 19.3) ------------------------------------------------------------


async def render_lag(page: FakePage, question: str) -> None:
    """The stop goes and the turn actions show before the answer's text renders (seen on the real ChatGPT)."""
    await answers_in(page, question, text="")
    page.update(last_len=0, last_has_feedback=True)
    await trio.sleep(0.8)
    page.answer = "Answer 42, rendered late."
    page.update(last_len=len(page.answer), last_head=page.answer)


async def test_an_answer_that_renders_after_the_stop_button_is_waited_for(
        autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, respond=render_lag, chrome=True)
        out = await make_flow(page, chatgpt.TABLE).flow.run()
        nursery.cancel_scope.cancel()
    assert out.answer == "Answer 42, rendered late." and out.extracted_by == "content"
    # the wide anchors were never asked while the turn's own content could still render
    reads = [a for a in page.actions if a.startswith("extract")]
    assert reads[0] == "extract:own" and reads[-1] == "extract:all"


async def test_page_chrome_is_never_an_answer(autojump_clock: trio.testing.MockClock) -> None:
    """The turn never renders; around it there is only the disclaimer: no answer is made of it, and the error
    names its debug dump (after waiting within the deadline, never for ever)."""
    async def empty_turn(page: FakePage, question: str) -> None:
        await answers_in(page, question, text="")
        page.update(last_len=0, last_has_feedback=True)

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, respond=empty_turn, chrome=True)
        r = make_flow(page, chatgpt.TABLE, timeout_s=60)
        t0 = trio.current_time()
        with pytest.raises(AnswerNotFound) as err:
            await r.flow.run()
        took = trio.current_time() - t0
        nursery.cancel_scope.cancel()
    assert "only page chrome" in err.value.message and err.value.hint.endswith("Debug dump: /dumps/no-answer.json")
    assert took <= 61


async def test_a_fallback_that_loses_the_structure_says_so(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, extracted_by="paragraphs", plain=True)
        out = await make_flow(page, chatgpt.TABLE).flow.run()
        nursery.cancel_scope.cancel()
    assert out.extracted_by == "paragraphs (plain text)"
    # It says so, and that the site changed (the table's content selectors read nothing): issue 37.
    assert [w.code for w in out.warnings] == ["plain_text_answer", "site_changed"]
    assert "selectors.content matched nothing" in out.warnings[1].message


# --- the site changed under us (issue 37) ----------------------------------------------------------------------------

LONG = "First part of the answer, with some words. " * 4 + "```python\nprint('the second part')\n```"


async def shows(page: FakePage, question: str) -> None:
    """The page streams `LONG` (its watcher counts every character), but the first read finds only the first part."""
    await answers_in(page, question, text=LONG)
    page.update(last_solid=len("".join(LONG.split())))
    page.answer = LONG.split("```")[0]


async def test_an_answer_shorter_than_the_page_showed_is_read_again_by_the_whole_turn(
        autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, respond=shows, wider=LONG)
        out = await make_flow(page, chatgpt.TABLE).flow.run()
        nursery.cancel_scope.cancel()
    assert out.answer.endswith("print('the second part')\n```") and out.extracted_by == "turn"
    assert "extract:turn" in page.actions and [w.code for w in out.warnings] == ["site_changed"]


async def test_an_answer_still_short_is_never_ok(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, respond=shows, wider="")
        run = make_flow(page, chatgpt.TABLE)
        with pytest.raises(AnswerIncomplete) as err:
            await run.flow.run()
        nursery.cancel_scope.cancel()
    assert err.value.partial and err.value.partial.startswith("First part") and "incomplete" in run.dumps


@pytest.mark.parametrize(("fallbacks", "how", "says"), [
    (("user",), "content", ["selectors.user matched nothing (found the question's own text in the thread"]),
    (("assistant", "input"), "turn", ["selectors.input matched nothing", "selectors.assistant matched nothing",
                                      "read it by the 'turn' anchor"]),
    ((), "content", None),
    ((), "report", None),
])
def test_site_changed_names_what_missed_and_what_worked(fallbacks: tuple[str, ...], how: str,
                                                        says: list[str] | None) -> None:
    got = drift.site_changed(gemini.TABLE, fallbacks, how)
    if says is None:
        assert got is None
    else:
        assert got is not None and got.code == "site_changed" and all(x in got.message for x in says), got


def test_solid_length_counts_text_not_markdown() -> None:
    assert drift.solid_len("# Title\n\n- **a** [link](https://x.org/y)\n\n```py\nx = 1\n```") == len("Titlealinkpyx=1")
    assert not drift.short_of("a" * 90, 100) and drift.short_of("a" * 80, 100) and not drift.short_of("a", 39)


async def test_the_result_names_the_model_that_answered(autojump_clock: trio.testing.MockClock) -> None:
    async def slug(page: FakePage, question: str) -> None:
        await answers_in(page, question)
        page.update(model="gpt-5-2")

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, respond=slug)
        out = await make_flow(page, chatgpt.TABLE).flow.run()
        nursery.cancel_scope.cancel()
    assert out.model == "gpt-5-2"


# --- a deleted conversation (issue 19.4) ------------------------------------------------------------------------------


async def test_a_deleted_conversation_is_known_at_once_and_the_ask_goes_to_a_new_chat(
        autojump_clock: trio.testing.MockClock) -> None:
    conv = "https://chatgpt.com/c/dead0000-0000"

    def opened(page: FakePage, url: str) -> None:
        # the page keeps the URL and says the conversation cannot be loaded; its turns never come
        page.update(url=url, unavailable=url == conv, user_count=0, assistant_count=0)

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ps(url="https://chatgpt.com/"), on_navigate=opened)
        r = make_flow(page, chatgpt.TABLE, session_url=conv)
        t0 = trio.current_time()
        out = await r.flow.run()
        took = trio.current_time() - t0
        nursery.cancel_scope.cancel()
    navs = [a for a in page.actions if a.startswith("navigate")]
    assert navs == [f"navigate:{conv}", "navigate:https://chatgpt.com/"] and page.submitted == ["What is 6 times 7?"]
    assert [w.code for w in out.warnings] == ["conversation_gone"] and conv in out.warnings[0].message
    assert took < 3  # no fixed wait for turns that never come


def test_question_shown_compares_without_whitespace_and_labels() -> None:
    assert question_shown("What is\n6 times 7?", "You said What is 6 times 7?")
    assert not question_shown("What is 6 times 8?", "You said What is 6 times 7?")
    assert not question_shown("", "anything")


# --- hidden tabs (issue 9.1), the reconnect guard (issue 15.2) --------------------------------------------------------


@pytest.mark.parametrize("front_shows, actions", [(True, ["bring_to_front"]),
                                                  (False, ["bring_to_front", "activate_window"])])
async def test_a_hidden_tab_is_shown_before_its_text_is_read(autojump_clock: trio.testing.MockClock,
                                                             front_shows: bool, actions: list[str]) -> None:
    async def hidden_answer(page: FakePage, question: str) -> None:
        page.update(visible=False)  # the user switched tabs (or minimized the window) after sending
        await answers_in(page, question)

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, respond=hidden_answer, front_shows=front_shows)
        out = await make_flow(page, chatgpt.TABLE).flow.run()
        nursery.cancel_scope.cancel()
    assert out.answer == "Answer 42 for you."
    assert [a for a in page.actions if a in ("bring_to_front", "activate_window")] == actions


async def test_a_fresh_page_waits_for_earlier_turns_before_counting(autojump_clock: trio.testing.MockClock) -> None:
    conv = "https://chatgpt.com/c/1234abcd-0000"
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ps(url=conv), fresh=True)

        async def old_turns_arrive() -> None:
            await trio.sleep(1.5)
            page.answer = "The previous answer."
            page.update(user_count=1, assistant_count=1, answered=True, last_len=20, last_user="old question")

        nursery.start_soon(old_turns_arrive)
        out = await make_flow(page, chatgpt.TABLE).flow.run()
        nursery.cancel_scope.cancel()
    assert out.answer == "Answer 42 for you." and not page.fresh


async def test_a_page_already_seen_is_not_settled_again(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery)
        r = make_flow(page, chatgpt.TABLE)
        t0 = trio.current_time()
        await r.flow.run()
        took = trio.current_time() - t0
        nursery.cancel_scope.cancel()
    # no settle, no fixed wait: the fake site's own 0.2 s first token and 3 x 0.1 s chunks only
    assert took == pytest.approx(0.5, abs=0.01)


# --- the smaller rules ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer, question, suspicious", [
    ("The error occurs because x is undefined.", "Why does line 42 throw TypeError?", True),  # the example
    ("", "anything", True), ("ok", "Explain sorting", True), ("OK", "OK", False),
    ("Use 4096 bytes.", "How many bytes in 4 KB?", False), ("Sure, here it is.", "Explain sorting", False),
])
def test_suspicious_answer_heuristic(answer: str, question: str, suspicious: bool) -> None:
    assert is_suspicious(answer, question) is suspicious


def test_normalize_drops_thinking_residue() -> None:
    assert normalize("Thinking time: 12s\nThe answer.\n\n\n\n思考時間: 3s\nMore.") == "The answer.\n\nMore."


def report(**changes: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "url": "https://chatgpt.com/", "ready": "complete", "visible": True, "doc": "x", "inputFound": True,
        "inputEmpty": True, "sendFound": True, "sendEnabled": False, "stop": False, "userCount": 0,
        "assistantCount": 0, "lastLen": 0, "lastHead": "", "lastUser": "", "answered": False, "thinking": False,
        "skipThinking": False, "thinkingDone": False, "generatingText": False, "micFound": False,
        "lastHasFeedback": False, "login": False, "notice": None, "seq": 3, "at": 1.0}
    raw.update(changes)
    return raw


def test_watcher_reports_are_validated() -> None:
    st = PageState.parse(report(notice={"kind": "rate_limit", "text": "limit", "where": "toast"}))
    assert st.notice is not None and st.notice.kind is NoticeKind.RATE_LIMIT and st.seq == 3
    assert st.as_json()["assistantCount"] == 0 and st.as_json()["notice"] == {"kind": "rate_limit", "text": "limit",
                                                                              "where": "toast"}
    for bad in (report(userCount=True), report(userCount=-1), report(stop="yes"), report(at=math.nan),
                report(notice={"kind": "other", "text": "", "where": ""}), {"url": "x"}, [], None):
        with pytest.raises(BadPageReport):
            PageState.parse(json.loads(json.dumps(bad, allow_nan=True)))
    assert PageState.parse(report()) == attrs.evolve(BASE, doc="x", mic_found=False, seq=3, at_ms=1.0)


JSON_VALUES = hs.recursive(hs.none() | hs.booleans() | hs.integers() | hs.floats(allow_nan=False) | hs.text(),
                           lambda kids: hs.lists(kids, max_size=4) | hs.dictionaries(hs.text(max_size=8), kids,
                                                                                      max_size=4), max_leaves=12)


@settings(max_examples=100, deadline=None)
@given(hs.one_of(JSON_VALUES, hs.fixed_dictionaries({"text": hs.text(), "how": hs.text()},
                                                    optional={"error": JSON_VALUES, "plain": JSON_VALUES})))
def test_any_read_ahead_is_an_extraction_or_none_and_never_fails_the_report(read: Any) -> None:
    """The read ahead comes from the page: whatever it holds, the report itself still parses; a malformed one is
    only a missed shortcut, and its snapshot form is a summary (never the answer's text)."""
    got = PageState.parse(report(read=read)).read
    assert got is None or (isinstance(got.text, str) and isinstance(got.how, str) and len(got.how) <= 40)
    summary = PageState.parse(report(read=read)).as_json()["read"]
    assert summary is None or set(summary) == {"how", "chars"}


def test_an_ask_waits_for_its_own_deadline_plus_a_small_margin() -> None:
    assert Ask("q", "p", timeout_s=20).call_timeout_s == 35
    assert Ask("q", "p").call_timeout_s == 480 + 15


# --- tabs (issue 15.4, 15.8) ------------------------------------------------------------------------------------------


class FakeExtension:
    """The extension's tab commands, with a tabs.create that never finishes (a hung browser)."""

    def __init__(self, tabs: list[TabInfo]) -> None:
        self.open = tabs
        self.creates: list[float] = []

    async def tab(self, tab_id: int, *, timeout_s: float = 10.0) -> TabInfo:
        for t in self.open:
            if t.tab_id == tab_id:
                return t
        raise TabClosed(f"no tab {tab_id}")

    async def tabs(self, url_patterns: tuple[str, ...], *, timeout_s: float = 10.0) -> tuple[TabInfo, ...]:
        return tuple(self.open)

    async def create_tab(self, url: str, *, new_window: bool, timeout_s: float) -> TabInfo:
        self.creates.append(trio.current_time())
        await trio.sleep(timeout_s + 5)  # the relay's own timeout is longer than ours
        raise AssertionError("unreachable")


def tabs_with(ext: FakeExtension, memory: ProviderMemory, use_open_tabs: bool = False) -> Tabs:
    t = Tabs(None, chatgpt.TABLE, chatgpt.TABLE.timeouts, memory, use_open_tabs=use_open_tabs,  # type: ignore[arg-type]
             log=__import__("logging").getLogger("t"))
    t.extension = ext  # type: ignore[assignment]
    return t


async def test_new_tab_timeouts_follow_seed_9_1(autojump_clock: trio.testing.MockClock) -> None:
    ext = FakeExtension([])
    t0 = trio.current_time()
    with pytest.raises(TabClosed, match="in 3 tries"):
        await tabs_with(ext, ProviderMemory()).create("https://chatgpt.com/")
    starts = [round(s - t0, 3) for s in ext.creates]
    assert starts == [0, 7, 14]  # 5 s each (+1 s for the reply to come back), a retry 1 s after, 2 retries


async def test_only_tabs_ai_bridge_opened_are_driven_unless_use_open_tabs(
        autojump_clock: trio.testing.MockClock) -> None:
    users = TabInfo(5, "https://chatgpt.com/", window_id=1)
    ours = TabInfo(9, "https://chatgpt.com/c/abc", window_id=2)
    memory = ProviderMemory({9: 2})
    assert await tabs_with(FakeExtension([users]), memory).pick(None) is None
    assert await tabs_with(FakeExtension([users]), memory, use_open_tabs=True).pick(None) == users
    assert await tabs_with(FakeExtension([users, ours]), memory).pick(None) == ours
    # the session's tab from an earlier run: still at the session's conversation
    session = SessionEntry("https://chatgpt.com/c/abc", 9, "2026-01-01T00:00:00Z")
    assert await tabs_with(FakeExtension([ours]), ProviderMemory()).pick(session) == ours
    # a tab that reused the id after a browser restart is not ours
    stranger = TabInfo(9, "https://chatgpt.com/", window_id=7)
    assert await tabs_with(FakeExtension([stranger]), ProviderMemory({9: 2})).pick(session) is None


# --- read ahead (the watcher's extraction in the state that completes the ask) ---------------------------------------


@pytest.mark.parametrize(("thinking_done", "visible_at_end", "read_ahead_used"), [
    (False, True, True), (True, True, False), (False, False, False)])
async def test_the_completing_states_read_ahead_is_the_answer_unless_the_page_must_change_first(
        autojump_clock: trio.testing.MockClock, thinking_done: bool, visible_at_end: bool,
        read_ahead_used: bool) -> None:
    """A read ahead describes the DOM of the very state that completed the ask: taken as is, with no call to the
    page. Where the flow must change the page first (expand the thinking, bring the tab to the front), it reads
    again, since the read ahead no longer describes the page."""
    done_at: list[int] = []

    async def respond(page: FakePage, question: str) -> None:
        await answers_in(page, question, text="The page's answer, read by the flow.")
        done_at.append(len(page.actions))  # what the flow does from here on is reading the finished answer
        page.update(thinking_done=thinking_done, visible=visible_at_end,
                    read=Extracted("The watcher's read ahead of the same answer.", "content"))

    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, respond=respond)
        r = make_flow(page, chatgpt.TABLE)
        out = await r.flow.run()
        nursery.cancel_scope.cancel()
    extracts = [a for a in page.actions[done_at[0]:] if a.startswith("extract")]
    if read_ahead_used:
        assert out.answer == "The watcher's read ahead of the same answer." and extracts == []
    else:
        assert out.answer == "The page's answer, read by the flow." and extracts
