"""A provider's pool of tabs (issue 38), on trio's autojump clock with the fake pages of provider_fakes: the real
provider actor (asking.py, schedule.py, pool.py, flow.py) in a small tree with a fake browser, a fake session store
and a fake opener whose tabs are simulated sites. No browser, no wall clock.

- asks that can run side by side do, each in its own tab; each answer is its own question's, each question sent once;
- beyond the cap asks wait their turn, by client, with their place in line; a cancelled one leaves without a tab;
- asks into one conversation keep their order; a crashed tab costs only its own ask and is replaced;
- a stuck page is retried in its own tab while its neighbour goes on; idle tabs close, the kept one stays;
- a conversation URL of another site is refused before anything is sent; a temporary chat is not kept.
The scheduling rules alone are also checked with Hypothesis (any join/leave order keeps the invariants)."""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from actors import provider
from actors.protocol.browser import BrowserRequest, EnsureBrowser
from actors.protocol.common import ProviderName
from actors.protocol.provider import CHATGPT, Ask, AskPhase, AskProgress, ProviderStatus, Target
from actors.protocol.session_store import (
    AppendHistory,
    GetSession,
    HistoryRecord,
    SaveSession,
    SessionEntry,
    SessionStoreRequest,
)
from actors.provider.asking import Asker
from actors.provider.schedule import Lane, Schedule
from actors.provider.sites import chatgpt, gemini
from actors.provider.tab import AskMemo
from actors.provider.table import ProviderTable
from supervisor import config as cfgmod
from supervisor.app.providers import SHIPPED, chat_bases
from supervisor.errors import ConfigError, InvalidArgument, TabClosed
from supervisor.otp import ActorContext, ActorSystem, Registry, Strategy, SupervisorSpec, child

from .provider_fakes import LOG, FakePage, answers_in, ps

HOME = "https://chatgpt.com/"
CONVERSATION = re.compile(chatgpt.TABLE.conversation_re)


# -- the fakes -------------------------------------------------------------------------------------------------------


@attrs.define(eq=False)
class FakeTab(FakePage):
    """A provider tab as the pool and the ask see it: the fake page plus the tab session's own parts."""

    tab_id: int = 0
    t: ProviderTable = chatgpt.TABLE
    crashed: bool = False
    context_id: int | None = 1
    temporary: bool = False  # the page's temporary-chat toggle is on
    stops: int = 0  # Stop clicked by a cancelled ask
    opened_at: str | None = None  # the URL the tab was just created at (tab.TabSession.opened_at)

    def crash(self) -> None:
        self.broken, self.crashed = "the page crashed", True
        self.update()  # wakes every wait on the page

    async def healthy(self) -> bool:
        return self.broken is None

    async def close(self) -> None:
        pass

    async def click_stop(self) -> bool:
        self.stops += 1
        return await super().click_stop()

    async def temporary_chat(self, click: bool) -> bool:
        if click and not self.temporary:
            self.temporary = True
        return self.temporary

    async def facts(self, max_text: int) -> dict[str, object]:
        return {}


@attrs.define
class Site:
    """The fake site behind every tab: which questions arrived (and in which tab), and how to answer them."""

    nursery: trio.Nursery
    answer_ms: float = 500.0  # first token after this; then three chunks 100 ms apart
    ids: Any = attrs.Factory(lambda: itertools.count(0xA000))
    sent: list[tuple[int, str, str]] = attrs.Factory(list)  # (tab, conversation URL, question)
    stall: set[str] = attrs.Factory(set)  # questions whose page stays stuck (stop up, no text) until reloaded

    async def respond(self, page: FakePage, question: str) -> None:
        assert isinstance(page, FakeTab)
        if not CONVERSATION.match(page.state.url):  # a new chat gets its conversation URL once the question is in
            page.update(url=f"https://chatgpt.com/c/{next(self.ids):x}")
        self.sent.append((page.tab_id, page.state.url, question))
        if question in self.stall:
            page.update(stop=True, mic_found=False, send_found=False)
            page.on_navigate = self.recovered(question)
            return
        await answers_in(page, question, text=f"The answer to «{question}».", first_ms=self.answer_ms)

    def recovered(self, question: str) -> Any:
        def navigate(page: FakePage, url: str) -> None:  # a reload shows the answer the site finished meanwhile
            page.answer = f"The answer to «{question}»."
            page.update(url=url, stop=False, send_found=True, mic_found=True, last_has_feedback=True,
                        assistant_count=page.state.assistant_count + 1, answered=True, last_len=len(page.answer),
                        last_user=question)
            page.on_navigate = None
        return navigate


@attrs.define
class FakeTabs:
    """The pool's opener over the fake site: tabs opened, closed and replaced, as `tabs.Tabs` would."""

    site: Site
    claimed: set[int] = attrs.Factory(set)
    tabs: dict[int, FakeTab] = attrs.Factory(dict)
    opened: list[int] = attrs.Factory(list)
    urls: dict[int, str] = attrs.Factory(dict)  # where each tab was opened
    discarded: list[tuple[int, str]] = attrs.Factory(list)
    retired: list[int] = attrs.Factory(list)
    ids: Any = attrs.Factory(lambda: itertools.count(1))

    async def lease(self, session: SessionEntry | None, url: str, nursery: trio.Nursery) -> FakeTab:
        await trio.sleep(0.2)  # a new window and its page load
        tab = FakeTab(self.site.nursery, state=ps(url=url), fresh=True, respond=self.site.respond,
                      tab_id=next(self.ids), opened_at=url)
        self.tabs[tab.tab_id] = tab
        self.opened.append(tab.tab_id)
        self.urls[tab.tab_id] = url
        self.claimed.add(tab.tab_id)
        return tab

    async def attach(self, tab_id: int, nursery: trio.Nursery) -> FakeTab:
        tab = self.tabs[tab_id]
        tab.fresh = True  # a new connection: the reconnect guard looks at the page again
        return tab

    async def discard(self, tab_id: int, why: str) -> None:
        self.discarded.append((tab_id, why))

    async def retire(self, tab_id: int) -> None:
        self.retired.append(tab_id)

    def avoid(self, tab_id: int, why: str) -> None:
        self.discarded.append((tab_id, why))

    async def for_inspection(self, session: SessionEntry | None, nursery: trio.Nursery) -> FakeTab:
        raise TabClosed("no tab")


@attrs.define
class Store:
    sessions: dict[str, SessionEntry] = attrs.Factory(dict)
    saves: list[SaveSession] = attrs.Factory(list)
    history: list[HistoryRecord] = attrs.Factory(list)
    browser_calls: int = 0


async def fake_browser(ctx: ActorContext[BrowserRequest], *, store: Store,
                       task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    async for env in ctx.messages():
        assert isinstance(env.message, EnsureBrowser)
        store.browser_calls += 1
        env.reply(env.message.reply(None))


async def fake_store(ctx: ActorContext[SessionStoreRequest], *, store: Store,
                     task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    async for env in ctx.messages():
        msg = env.message
        if isinstance(msg, GetSession):
            env.reply(msg.reply(store.sessions.get(msg.project)))
        elif isinstance(msg, SaveSession):
            store.saves.append(msg)
            store.sessions[msg.project] = SessionEntry(msg.url, msg.tab_id, "now")
            env.reply(msg.reply(None))
        elif isinstance(msg, AppendHistory):
            store.history.append(msg.record)
            env.reply(msg.reply(True))
        else:
            raise AssertionError(f"unexpected {msg!r}")


@attrs.define
class Bench:
    runtime: ActorSystem
    site: Site
    tabs: FakeTabs
    store: Store

    async def ask(self, question: str, *, client: str = "a", project: str = "p", progress: list[AskProgress] | None
                  = None, **fields: Any) -> Any:
        msg = Ask(question, project, timeout_s=fields.pop("timeout_s", 120), ask_id=question, client=client,
                  **fields)
        sink = progress if progress is not None else []
        return await self.runtime.registry.ref(CHATGPT).call(msg, timeout=msg.call_timeout_s,
                                                             on_progress=lambda p: sink.append(p))  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def bench(*, tabs_per_site: int = 3, tab_idle_s: float = 300.0, answer_ms: float = 500.0
                ) -> AsyncIterator[Bench]:
    store = Store()
    async with trio.open_nursery() as nursery:
        site = Site(nursery, answer_ms)
        tabs = FakeTabs(site)
        runtime = ActorSystem(registry=Registry())
        spec = SupervisorSpec("root", (
            child("browser", fake_browser, store=store),
            child("session_store", fake_store, store=store),
            child("chatgpt", provider.run, table=chatgpt.TABLE, memory=provider.ProviderMemory(),
                  tabs_per_site=tabs_per_site, tab_idle_s=tab_idle_s, opener=tabs),
        ), strategy=Strategy.ONE_FOR_ONE)
        sup = await nursery.start(runtime.run, spec)
        yield Bench(runtime, site, tabs, store)
        sup.shutdown()
        nursery.cancel_scope.cancel()


def answered(result: Any, question: str) -> None:
    assert result.answer == f"The answer to «{question}».", (question, result.answer)


# -- side by side ----------------------------------------------------------------------------------------------------


async def test_new_chats_run_side_by_side_each_answer_its_own_question_sent_once(
        autojump_clock: trio.testing.MockClock) -> None:
    """Two clients, three new chats at once: three tabs, one ask each, all done in about one ask's time."""
    async with bench() as b:
        one_t0 = trio.current_time()
        answered(await b.ask("What is 1 plus 1?", new_chat=True), "What is 1 plus 1?")
        one = trio.current_time() - one_t0  # a new tab, its page, the answer
        questions = {"What is 2 plus 2?": "a", "What is 3 plus 3?": "b", "What is 4 plus 4?": "a"}
        results: dict[str, Any] = {}
        t0 = trio.current_time()
        async with trio.open_nursery() as n:
            for q, client in questions.items():
                async def go(q: str = q, client: str = client) -> None:
                    results[q] = await b.ask(q, client=client, project=f"proj-{q}", new_chat=True)
                n.start_soon(go)
        took = trio.current_time() - t0
    for q in questions:
        answered(results[q], q)
    sent = [q for _, _, q in b.site.sent]
    assert sorted(sent) == sorted(["What is 1 plus 1?", *questions])  # each once
    tab_of = {q: tab for tab, _, q in b.site.sent}
    assert len({tab_of[q] for q in questions}) == 3  # each in its own tab
    assert len(b.tabs.opened) == 3  # the first ask's tab was reused, two more opened
    assert took <= one * 1.3  # side by side: about one ask's time, not three
    assert {s.url for s in b.store.saves} == {r.url for r in results.values()} | {s.url for s in b.store.saves[:1]}


async def test_one_conversation_keeps_its_order_while_other_projects_run_beside_it(
        autojump_clock: trio.testing.MockClock) -> None:
    """Three asks continue project p's conversation, one asks project q: p's go one after another in arrival order,
    in the tab that shows the conversation; q runs beside them."""
    async with bench() as b:
        await b.ask("Start p with 5?", new_chat=True)
        order: list[str] = []
        async with trio.open_nursery() as n:
            for q in ("p first 6?", "p second 7?", "p third 8?"):
                async def go(q: str = q) -> None:
                    answered(await b.ask(q), q)
                    order.append(q)
                n.start_soon(go)
                await trio.sleep(0.01)  # arrival order
            n.start_soon(lambda: b.ask("q alone 9?", project="q"))
        convo = {u for _, u, q in b.site.sent if q.startswith(("Start p", "p "))}
        tabs_p = {t for t, _, q in b.site.sent if q.startswith(("Start p", "p "))}
    assert order == ["p first 6?", "p second 7?", "p third 8?"]
    assert len(convo) == 1 and len(tabs_p) == 1  # one conversation, one tab: no page load between follow-ups
    q_start = next(i for i, (_, _, q) in enumerate(b.site.sent) if q == "q alone 9?")
    assert q_start < len(b.site.sent) - 1  # q did not wait for p's three


async def test_asks_naming_one_conversation_take_turns_and_another_runs_beside_them(
        autojump_clock: trio.testing.MockClock) -> None:
    """Two projects continue one conversation by its URL, a third continues another: the first two never run at once
    (two tabs typing into one conversation), the third does not wait for them."""
    async with bench(answer_ms=1000) as b:
        one, two = "https://chatgpt.com/c/aaa1", "https://chatgpt.com/c/bbb2"
        ended: dict[str, float] = {}

        async def go(q: str, url: str) -> None:
            answered(await b.ask(q, project=q, targets=((ProviderName.CHATGPT, Target(conversation_url=url)),)), q)
            ended[q] = trio.current_time()

        async with trio.open_nursery() as n:
            n.start_soon(go, "u first 34?", one)
            await trio.sleep(0.01)
            n.start_soon(go, "u second 35?", one)
            n.start_soon(go, "v other 36?", two)
        arrived = {q: i for i, (_, _, q) in enumerate(b.site.sent)}
    assert arrived["u second 35?"] > arrived["u first 34?"]
    assert b.site.sent[arrived["u first 34?"]][1] == b.site.sent[arrived["u second 35?"]][1] == one
    assert ended["v other 36?"] < ended["u second 35?"]  # beside them, not behind
    second_sent = next(i for i, (_, _, q) in enumerate(b.site.sent) if q == "u second 35?")
    assert second_sent == len(b.site.sent) - 1  # u's second went last: after u's first was answered


async def test_a_follow_up_waits_for_the_new_chat_its_project_is_starting(
        autojump_clock: trio.testing.MockClock) -> None:
    """A project with no conversation yet, asked twice at once: the first starts its conversation, the second
    continues it (not a second new chat beside it)."""
    async with bench() as b:
        async with trio.open_nursery() as n:
            n.start_soon(lambda: b.ask("r first 32?", project="r"))
            await trio.sleep(0.01)
            n.start_soon(lambda: b.ask("r second 33?", project="r"))
    assert [q for _, _, q in b.site.sent] == ["r first 32?", "r second 33?"]
    assert len({u for _, u, _ in b.site.sent}) == 1


# -- the line beyond the cap -----------------------------------------------------------------------------------------


async def test_beyond_the_cap_clients_take_turns_and_a_cancelled_waiter_touches_no_tab(
        autojump_clock: trio.testing.MockClock) -> None:
    """One tab. Client a queues three asks, then b one: b goes second (turns by client), each waiter is told its
    place; a's cancelled waiter leaves the line with no tab leased, no Stop clicked and nothing sent."""
    async with bench(tabs_per_site=1, answer_ms=3000) as b:
        done: list[str] = []
        places: dict[str, list[int]] = {}
        cancel = trio.CancelScope()
        errors: list[BaseException] = []

        async def go(q: str, client: str, scope: trio.CancelScope | None = None) -> None:
            seen: list[AskProgress] = []
            places[q] = []
            try:
                with scope or trio.CancelScope():
                    await b.ask(q, client=client, project=q, new_chat=True, progress=seen)
                    done.append(q)
            finally:
                places[q] = [p.place for p in seen if p.phase is AskPhase.QUEUED]

        async with trio.open_nursery() as n:
            n.start_soon(go, "a1 10?", "a")
            await trio.sleep(0.01)
            n.start_soon(go, "a2 11?", "a", cancel)
            await trio.sleep(0.01)
            n.start_soon(go, "a3 12?", "a")
            await trio.sleep(0.01)
            n.start_soon(go, "b1 13?", "b")
            await trio.sleep(1.0)
            status = await b.runtime.registry.ref(CHATGPT).call(ProviderStatus(tabs=False), timeout=5)
            cancel.cancel()  # the client gives up on a2 while it waits
        history = {h.question: h for h in b.store.history}
    assert errors == []
    assert status.queued == 3 and len(status.asks) == 1 and status.pool_json()["leases"] == 1
    assert done == ["a1 10?", "b1 13?", "a3 12?"]  # b's only ask before a's third
    # b, never served, goes ahead of a's waiters as it arrives; a3 moves up as a2 leaves and b goes
    assert places["b1 13?"] == [1] and places["a2 11?"] == [1, 2] and places["a3 12?"] == [2, 3, 2, 1]
    assert "a2 11?" not in [q for _, _, q in b.site.sent]  # never sent
    assert sum(t.stops for t in b.tabs.tabs.values()) == 0  # no tab touched for it
    assert len(b.tabs.opened) == 1
    assert history["a2 11?"].status == "cancelled" and "while it waited" in (history["a2 11?"].error or "")


async def test_a_waiting_ask_whose_deadline_comes_is_a_timeout_that_sent_nothing(
        autojump_clock: trio.testing.MockClock) -> None:
    async with bench(tabs_per_site=1, answer_ms=20_000) as b:
        async with trio.open_nursery() as n:
            n.start_soon(lambda: b.ask("long 14?", new_chat=True))
            await trio.sleep(0.01)
            with pytest.raises(Exception) as info:
                await b.ask("short 15?", project="other", new_chat=True, timeout_s=5)
    assert getattr(info.value, "code", "") == "response_timeout"
    assert "waited for a ChatGPT tab (0 asks ahead" in str(info.value) and "not sent" in str(info.value)
    assert [q for _, _, q in b.site.sent] == ["long 14?"]


# -- failures stay with their own ask -------------------------------------------------------------------------------


async def test_a_crashed_tab_costs_only_its_own_ask_and_is_replaced(autojump_clock: trio.testing.MockClock) -> None:
    async with bench(answer_ms=2000) as b:
        results: dict[str, Any] = {}

        async def go(q: str) -> None:
            try:
                results[q] = await b.ask(q, project=q, new_chat=True)
            except TabClosed as exc:
                results[q] = exc

        async with trio.open_nursery() as n:
            n.start_soon(go, "crashes 16?")
            n.start_soon(go, "survives 17?")
            await trio.sleep(1.0)  # both sent, neither answered yet
            crashed = next(t for t, _, q in b.site.sent if q == "crashes 16?")
            b.tabs.tabs[crashed].crash()
        answered(await b.ask("next 18?", project="n", new_chat=True), "next 18?")
    assert isinstance(results["crashes 16?"], TabClosed)
    answered(results["survives 17?"], "survives 17?")
    assert (crashed, "the page crashed") in b.tabs.discarded  # closed and never leased again
    assert crashed not in {t for t, _, q in b.site.sent if q == "next 18?"}
    assert len(b.tabs.opened) == 2  # the next ask took the healthy idle tab: no third tab needed
    status = b.runtime.tree()
    assert status is not None and '"restarts": 0' in str(status.as_json()).replace("'", '"')


async def test_a_stuck_page_is_retried_in_its_own_tab_while_its_neighbour_answers(
        autojump_clock: trio.testing.MockClock) -> None:
    async with bench() as b:
        b.site.stall.add("stalls 19?")
        results: dict[str, Any] = {}
        ended: dict[str, float] = {}
        async with trio.open_nursery() as n:
            for q in ("stalls 19?", "flows 20?"):
                async def go(q: str = q) -> None:
                    results[q] = await b.ask(q, project=q, new_chat=True)
                    ended[q] = trio.current_time()
                n.start_soon(go)
    answered(results["stalls 19?"], "stalls 19?")
    answered(results["flows 20?"], "flows 20?")
    assert results["stalls 19?"].retries == 1 and results["flows 20?"].retries == 0
    assert [q for _, _, q in b.site.sent].count("stalls 19?") == 1  # read after the reload, never sent again
    assert ended["flows 20?"] < ended["stalls 19?"]  # the neighbour did not wait for the stuck page's retry


# -- idle tabs -------------------------------------------------------------------------------------------------------


async def test_idle_tabs_close_after_a_while_and_the_kept_conversations_tab_stays(
        autojump_clock: trio.testing.MockClock) -> None:
    async with bench(tab_idle_s=60) as b:
        async with trio.open_nursery() as n:
            for q in ("x 21?", "y 22?", "z 23?"):
                n.start_soon(lambda q=q: b.ask(q, project=q, new_chat=True))
        kept = b.store.saves[-1].tab_id
        await trio.sleep(30)
        assert b.tabs.retired == []
        await trio.sleep(31)
        status = await b.runtime.registry.ref(CHATGPT).call(ProviderStatus(tabs=False), timeout=5)
    assert sorted(b.tabs.retired) == sorted(set(b.tabs.opened) - {kept})
    assert [(t.tab_id, t.kept) for t in status.pool] == [(kept, True)]


# -- conversations the user chooses ----------------------------------------------------------------------------------


async def test_a_conversation_url_of_another_site_is_refused_before_anything_is_sent(
        autojump_clock: trio.testing.MockClock) -> None:
    async with bench() as b:
        for url in ("https://gemini.google.com/app/0123456789abcdef", "https://chatgpt.com.evil.example/c/abc",
                    "https://chatgpt.com/g/g-p-123-x/project"):
            with pytest.raises(InvalidArgument, match="is not a ChatGPT conversation URL"):
                await b.ask("Refused 24?", targets=((ProviderName.CHATGPT, Target(conversation_url=url)),))
        with pytest.raises(InvalidArgument, match="not where ChatGPT starts new chats"):
            await b.ask("Refused 25?", new_chat=True,
                        targets=((ProviderName.CHATGPT, Target(chat_base_url="https://gemini.google.com/gem/x")),))
    assert b.store.browser_calls == 0 and b.tabs.opened == [] and b.site.sent == []
    assert [h.status for h in b.store.history] == ["failed"] * 4


async def test_a_temporary_chat_is_not_kept_and_a_named_conversation_leaves_the_kept_one(
        autojump_clock: trio.testing.MockClock) -> None:
    async with bench() as b:
        kept = await b.ask("Kept 26?", new_chat=True)
        temp = await b.ask("Temporary 27?", temporary=True)
        other = "https://chatgpt.com/c/beef"
        named = await b.ask("Named 28?", targets=((ProviderName.CHATGPT, Target(conversation_url=other)),))
        follow = await b.ask("Follow 29?")
    assert [s.url for s in b.store.saves if s.url != kept.url] == []  # only the project's own conversation is kept
    temp_tab = next(t for t, _, q in b.site.sent if q == "Temporary 27?")
    assert b.tabs.tabs[temp_tab].temporary  # switched on before typing
    assert temp.url != kept.url and named.url == other and follow.url == kept.url
    assert ("https://chatgpt.com/?temporary-chat=true" in b.tabs.tabs[temp_tab].actions[0]
            or any("temporary-chat=true" in a for a in b.tabs.tabs[temp_tab].actions))


async def test_a_chat_base_url_starts_the_new_chat_there_and_the_project_keeps_it(
        autojump_clock: trio.testing.MockClock) -> None:
    base = "https://chatgpt.com/g/g-p-6870abc-review/project"
    async with bench() as b:
        await b.ask("In the project 30?", new_chat=True, targets=((ProviderName.CHATGPT, Target(chat_base_url=base)),))
        follow = await b.ask("Follow-up 31?")
    tab, url, _ = b.site.sent[0]
    assert b.tabs.urls[tab] == base  # its tab opened at the Project (and, fresh there, was not loaded again)
    assert not any(a.startswith("navigate:") for a in b.tabs.tabs[tab].actions)
    assert [s.url for s in b.store.saves] == [url, url] and follow.url == url  # the project keeps it


# -- the rules alone -------------------------------------------------------------------------------------------------

LANES = st.sampled_from([Lane(), Lane(writes="p"), Lane(reads="p", writes="p"), Lane(url="https://c/1"),
                         Lane(url="https://c/2"), Lane(writes="q"), Lane(reads="q", writes="q")])


@settings(max_examples=200, deadline=None)
@given(cap=st.integers(1, 3), ops=st.lists(st.tuples(st.booleans(), st.sampled_from("abc"), LANES, st.integers(0, 9)),
                                            max_size=40))
def test_any_order_of_joins_and_leaves_keeps_the_rules(cap: int, ops: list[tuple[bool, str, Lane, int]]) -> None:
    """Never more than `cap` running; never two running that must not meet; a free slot never stays idle while a
    waiting ask could take it; places in line are 1..n; asks of one lane are granted in arrival order."""
    kept = {"p": "https://c/1"}
    s = Schedule(cap, kept.get)
    granted: list[Any] = []
    for join, client, lane, pick in ops:
        if join or not (s.running or s.waiting):
            t = s.join(client, lane)
            if t.granted.is_set():
                granted.append(t)
        else:
            pool = s.running + s.waiting
            s.leave(pool[pick % len(pool)])
        granted += [t for t in s.running if t not in granted]
        assert len(s.running) <= cap
        assert not any(s.blocks(x, y) for x in s.running for y in s.running if x.seq < y.seq)
        assert len(s.running) == cap or not any(s.eligible(w) for w in s.waiting)
        assert sorted(w.place for w in s.waiting) == list(range(1, len(s.waiting) + 1))
    for x, y in itertools.combinations(granted, 2):
        if x.seq > y.seq and s.blocks(y, x) and y in granted:
            assert granted.index(y) < granted.index(x)


@attrs.define
class NoCtx:
    """Enough of an actor context for `Asker.plan`, which talks to no one."""

    def ref(self, address: object) -> None:
        return None


TEXT = st.text(st.characters(codec="utf-8"), max_size=80)
URLS = st.one_of(TEXT, st.builds(lambda a, b: f"https://{a}/{b}", TEXT, TEXT),
                 st.sampled_from(["https://chatgpt.com/c/ab-12", "https://chatgpt.com/g/g-p-1-x/project",
                                  "https://chatgpt.com/g/g-p-1-x/c/12", "https://gemini.google.com/gem/x/0a",
                                  "https://gemini.google.com/gem/x", "https://gemini.google.com/app/0a"]))


@settings(max_examples=300, deadline=None)
@given(conversation=URLS, base=URLS, new_chat=st.booleans(), temporary=st.booleans(),
       table=st.sampled_from([chatgpt.TABLE, gemini.TABLE]))
def test_any_target_is_planned_or_refused_never_a_crash(conversation: str, base: str, new_chat: bool,
                                                        temporary: bool, table: ProviderTable) -> None:
    """Whatever a caller puts in `conversation_url` / `chat_base_url`: a plan on this site's own URL, else
    `invalid_argument` before anything runs; a plan never keeps a temporary or named conversation."""
    name = ProviderName(table.name)
    asker = Asker(NoCtx(), table, table.timeouts, provider.ProviderMemory(), None, 3, None, LOG)  # type: ignore[arg-type]
    msg = Ask("Q?", "p", new_chat=new_chat, temporary=temporary,
              targets=((name, Target(conversation_url=conversation, chat_base_url=base)),))
    try:
        plan = asker.plan(msg, AskMemo())
    except InvalidArgument:
        return
    if plan.named_url is not None:
        assert re.match(table.conversation_re, plan.named_url) and not plan.keeps and plan.named_url == conversation
    if plan.new_chat_url is not None and not temporary:
        assert re.match(table.chat_base_re, plan.new_chat_url)
    if temporary:
        assert not plan.keeps and plan.new_chat


def test_pool_settings_are_checked_at_start() -> None:
    for bad in ({"tabs_per_site": 0}, {"tabs_per_site": 17}, {"tabs_per_site": "x"}, {"tab_idle_s": -1},
                {"chat_base_urls": ["http://chatgpt.com/g/g-p-1/project"]}):
        with pytest.raises(ConfigError, match=next(iter(bad)).replace("_", "-").removesuffix("s")):
            cfgmod.load(bad, env={}, config_file=Path("/nonexistent"))
    config = cfgmod.load({"chat_base_urls": ["https://chatgpt.com/g/g-p-1-x/project", "https://gemini.google.com/gem/y"]},
                         env={}, config_file=Path("/nonexistent"))
    assert chat_bases(config, SHIPPED) == {"chatgpt": "https://chatgpt.com/g/g-p-1-x/project",
                                           "gemini": "https://gemini.google.com/gem/y"}
    for urls, said in ((["https://example.com/project"], "is not a ChatGPT Project"),
                       (["https://gemini.google.com/gem/a", "https://gemini.google.com/gem/b"], "two URLs for Gemini")):
        with pytest.raises(ConfigError, match=said):
            chat_bases(cfgmod.load({"chat_base_urls": urls}, env={}, config_file=Path("/nonexistent")), SHIPPED)
