"""Provider actor: one per provider (ChatGPT, Gemini). It serializes asks to its tab and answers inspection while an
ask runs. The rooms beside it: `tab.py` (which tab, the lease, the watcher, page actions), `flow.py` (one ask on a
page), `inspect.py` (snapshot, DOM), and the provider tables in `sites/` (one module per site).

An ask's deadline is its `timeout_s` from when it was sent (the envelope's `enqueued_at`, which survives
re-delivery): the browser, the tab, every attempt and every wait are inside it. A stuck page makes this actor crash
on purpose (`Retry`); its supervisor restarts it with a fresh tab connection and re-delivers the ask (seed 9.2),
at most twice and only while the deadline leaves room — the retry looks at the conversation first and never sends
the question again (`ProviderMemory` carries what the earlier attempt did). Limit and error notices, login pages
and deadlines end the ask with their own typed errors and are never retried.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import re
import time
from pathlib import Path
from typing import assert_never

import attrs
import trio

from supervisor.errors import (
    AskCancelled,
    BridgeError,
    CdpError,
    ExtensionDisconnected,
    Interrupted,
    NoResponse,
    ProviderError,
    RateLimited,
    ResponseTimeout,
    SendUnconfirmed,
    SiteError,
    StuckError,
    TabClosed,
)
from supervisor.otp import ActorContext, Envelope, Progress, Reply, Retry

from ..protocol.browser import BROWSER, BrowserProgress, EnsureBrowser
from ..protocol.common import ProviderName
from ..protocol.provider import (
    Ask,
    AskPhase,
    AskProgress,
    AskResult,
    AskTimings,
    AskWarning,
    BusyAsk,
    Choice,
    GetDom,
    Probe,
    ProbeReport,
    ProviderReport,
    ProviderRequest,
    ProviderStatus,
    Reattach,
    SiteTab,
    Snapshot,
)
from ..protocol.relay import RELAY
from ..protocol.session_store import (
    SESSION_STORE,
    AppendHistory,
    AskStatus,
    GetSession,
    HistoryRecord,
    SaveSession,
    SessionEntry,
)
from . import choices, inspect, probe
from .attach import attach_files
from .flow import AskBudget, AskFlow, Outcome, Stuck, StuckKind, is_suspicious
from .page import NoticeKind
from .tab import AskMemo, PageTimeout, ProviderMemory, TabGone, Tabs, TabSession
from .table import ProviderTable, Timeouts

DEADLINE_CLEANUP_S = 8.0  # after the deadline: click Stop, read the partial answer, record history


@attrs.define
class Busy:
    ask_id: str
    question: str
    attempt: int
    since: float
    phase: AskPhase = AskPhase.QUEUED
    chars: int = 0


class ProviderActor:
    def __init__(self, ctx: ActorContext[ProviderRequest], table: ProviderTable, memory: ProviderMemory, *,
                 stall_s: float | None, use_open_tabs: bool, debug_dir: Path | None, dumps_keep: int,
                 private_text: bool, nursery: trio.Nursery) -> None:
        self.ctx = ctx
        self.t = table
        self.name = ProviderName(table.name)
        self.to: Timeouts = table.timeouts if stall_s is None else attrs.evolve(table.timeouts, stall_s=stall_s)
        self.log = logging.getLogger(f"ai_bridge.{table.name}")
        self.store = ctx.ref(SESSION_STORE)
        self.memory = memory
        self.tabs = Tabs(ctx.ref(RELAY), table, self.to, memory, use_open_tabs=use_open_tabs, log=self.log)
        self.page: TabSession | None = None
        self.nursery = nursery
        self.debug_dir = debug_dir  # seed 9.4 dumps; the newest `dumps_keep` are kept (both providers together)
        self.dumps_keep = dumps_keep
        self.private_text = private_text  # dumps keep the sizes of the question, answer and page text, not the text
        self.busy: Busy | None = None  # the running ask, for ProviderStatus (console, bridge_status)
        self.flow: AskFlow | None = None
        self.session: SessionEntry | None = None  # the project's session as the running ask found it

    def status(self, queued: int, tabs: tuple[SiteTab, ...] | str) -> ProviderReport:
        page = self.page
        busy = None
        if self.busy is not None:
            b = self.busy
            busy = BusyAsk(b.ask_id, b.question, b.attempt, b.phase, b.chars, round(trio.current_time() - b.since, 3))
        return ProviderReport(provider=self.name, tab_id=page.tab_id if page else None,
                              url=page.state.url if page and page.state else None,
                              context_id=page.context_id if page else None, broken=page.broken if page else None,
                              busy=busy, queued=queued, browser_tabs=tabs, site_changed=self.memory.site_changed)

    # -- the tab -----------------------------------------------------------------------------------------------------

    async def connect(self, session: SessionEntry | None, *, fresh: bool, url: str) -> TabSession:
        """The current tab if healthy (the hot path: one round trip), else a lease on one of ours, else a new one."""
        if self.page is not None and not fresh and await self.page.healthy():
            return self.page
        await self.drop_page()
        self.page = await self.tabs.lease(session, url, self.nursery)
        return self.page

    async def drop_page(self) -> None:
        page, self.page = self.page, None
        if page is not None:
            await page.close()

    async def inspection_page(self, project: str | None) -> TabSession:
        if self.page is not None and await self.page.healthy():
            return self.page
        session = await self.store.call(GetSession(project, self.name), timeout=10) if project else None
        await self.drop_page()
        self.page = await self.tabs.for_inspection(session, self.nursery)
        return self.page

    # -- the health probe -------------------------------------------------------------------------------------------

    async def probe(self, msg: Probe, deadline: float) -> ProbeReport:
        """Open the page as an ask would (the project's kept conversation, else the tab where it is or a new one at
        the home page) and read it with probe.js. Types, clicks and sends nothing."""
        wait_s = max(0.5, min(self.to.extension_wait_s, deadline - trio.current_time() - self.to.browser_margin_s))
        await self.ctx.ref(BROWSER).call(EnsureBrowser(timeout_s=wait_s), timeout=wait_s + 10)
        session = await self.store.call(GetSession(msg.project, self.name), timeout=10) if msg.project else None
        kept = session.url if session is not None and re.match(self.t.conversation_re, session.url) else None
        page = await self.connect(session, fresh=False, url=kept or self.t.home_url)
        report = await probe.look(page, self.t, self.to, kept, deadline, self.log)
        self.log.info("%s probe: %s", self.t.title, ", ".join(f"{i.entry}={i.status.value}" for i in report.items))
        if msg.choices and report.signed_in is not False:
            report = attrs.evolve(report, offered=await choices.offered_safely(page))
        return attrs.evolve(report, site_changed=self.memory.site_changed)

    # -- one attempt -------------------------------------------------------------------------------------------------

    async def attempt(self, env: Envelope[ProviderRequest], msg: Ask, memo: AskMemo, budget: AskBudget) -> AskResult:
        t0 = trio.current_time()

        def progress(phase: AskPhase, chars: int, text: str) -> None:
            if self.busy is not None:
                self.busy.phase, self.busy.chars = phase, chars
            env.progress(AskProgress(self.name, phase, chars, text, url=memo.url or ""))

        def browser_progress(item: Progress) -> None:
            if isinstance(item, BrowserProgress):  # the browser actor waits for (or wakes) the extension
                progress(AskPhase.WAITING_EXTENSION, 0, "")

        progress(AskPhase.CONNECTING, 0, "")
        # Ends a moment before the ask's deadline: a browser that never came is reported as such, not as a timeout.
        wait_s = max(0.5, min(self.to.extension_wait_s, budget.remaining() - self.to.browser_margin_s))
        await self.ctx.ref(BROWSER).call(EnsureBrowser(timeout_s=wait_s), timeout=wait_s + 10,
                                         on_progress=browser_progress)
        session = self.session = await self.store.call(GetSession(msg.project, self.name), timeout=10)
        start_url = self.t.home_url if msg.new_chat or session is None else session.url
        if isinstance(msg, Reattach):
            start_url = msg.url  # a stopped server's job: its own conversation, never a new chat
        for again in (False, True):
            try:
                page = await self.connect(session, fresh=budget.attempt > 1 or again, url=start_url)
            except (TabGone, TabClosed, CdpError) as exc:
                if again or not transient(exc):
                    raise
                self.log.info("%s: the tab's debugger went away while attaching (%s); leasing a fresh tab",
                              self.t.title, exc)
                await self.drop_page()
                continue
            if not again and not memo.sent and (banner := await self.error_banner(page)) is not None:
                # Seed 001: a page that shows a site error before anything was typed is replaced, once, within the
                # deadline; the next ask never picks that tab again.
                self.log.warning("%s tab %d shows a site error before the question was sent (“%s”); replacing it "
                                 "with a new tab", self.t.title, page.tab_id, banner)
                await self.tabs.discard(page.tab_id, f"site error: {banner[:100]}")
                await self.drop_page()
                continue
            flow = AskFlow(page, self.t, self.to, question=msg.question, new_chat=msg.new_chat,
                           session_url=session.url if session is not None else None, budget=budget, memo=memo,
                           progress=progress, log=self.log,
                           dump=functools.partial(self.dump_for, page, msg.question),
                           spawn=self.nursery.start_soon,
                           reattach=msg.digest if isinstance(msg, Reattach) else None,
                           research="deep research" in msg.choice_for(self.name).tools)
            self.flow = flow
            flow.before_typing = functools.partial(self.choose_and_attach, page, msg, memo, budget)
            flow.mark("connect")
            try:
                out = await flow.run()
                break
            except SiteError:
                # The page showed an error after the question went out: not retried here (it may be there), but the
                # next ask takes a fresh tab instead of this error page.
                self.tabs.avoid(page.tab_id, "site error")
                await self.drop_page()
                raise
            except (TabGone, TabClosed, CdpError) as exc:
                # The tab went away, or its debugger detached, before the question was sent (a close event still
                # on the way, a tab the browser just replaced): lease a fresh one, once, within the deadline. Never
                # after a send: the question may be there.
                if again or memo.sent or not transient(exc):
                    raise
                self.log.info("%s: the tab went away before the question was sent (%s); leasing one again",
                              self.t.title, exc)
                await self.drop_page()
        flow.mark("total")
        warnings: list[AskWarning] = []
        for w in out.warnings:
            if w.code == "site_changed":  # kept for bridge_status and doctor --live (issue 37)
                self.memory.site_changed = f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {w.message}"
        if is_suspicious(out.answer, msg.question):
            path = await self.debug_dump(page, "suspicious", msg.question, answer=out.answer)
            warnings.append(AskWarning("suspicious_answer", "The answer looks unusual for the question (empty, just "
                                       "'ok', or without the question's numbers); check it.", path))
        self.log.info("%s answered in %.2fs (%s; typed via %s, sent via %s; extracted via %s; %d chars)",
                      self.t.title, trio.current_time() - t0, out.reason,
                      flow.type_phase.value if flow.type_phase else "-", flow.send_method or "-", out.extracted_by,
                      len(out.answer))
        return result_of(self.name, out, _timings(t0, flow.marks), budget.attempt - 1, tuple(warnings), memo.chosen)

    async def error_banner(self, page: TabSession) -> str | None:
        """The text of a site-error notice the page shows now (before the ask marks the notices), else None."""
        try:
            st = await page.current()
        except BridgeError:
            return None
        notice = st.notice
        return notice.text if notice is not None and notice.kind is NoticeKind.SITE_ERROR else None

    async def choose_and_attach(self, page: TabSession, msg: Ask, memo: AskMemo, budget: AskBudget) -> None:
        """Before the question is typed: the model, effort and tools the ask names, chosen on the page and read back
        (issue 34: what the page does not confirm is never sent), then its files, attached through the site's own
        upload and each shown as uploaded."""
        want = msg.choice_for(self.name)
        if want:
            memo.chosen = await choices.choose(page, want)
        if msg.files:
            # Within the ask's deadline, leaving time to type and send: a stalled upload is named as such.
            took = await attach_files(page, msg.files, self.to.upload_s, budget.deadline - self.to.attempt_reserve_s)
            self.log.info("%s: %d files attached and uploaded in %.2fs", self.t.title, len(msg.files), took)

    async def dump_for(self, page: TabSession, question: str, why: str) -> str:
        return await self.debug_dump(page, why, question)

    async def debug_dump(self, page: TabSession, why: str, question: str, answer: str = "") -> str:
        """Seed 9.4: keep the page state for later diagnosis in <state-dir>/debug/."""
        if self.debug_dir is None:
            return "(debug dumps are off: no state dir, or debug_dumps_keep = 0)"
        now = time.time()
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now)) + f"{now % 1:.3f}"[1:]
        path = self.debug_dir / f"{self.t.name}-{stamp}-{why}.json"
        state = page.state.as_json() if page.state else None
        record: dict[str, object] = {"why": why, "provider": self.t.name, "at": stamp, "question": question,
                                     "answer": answer, "state": state}
        try:
            # Seed 9.5's debug fields: enough to tell a login page, an error banner or a changed layout apart.
            with trio.move_on_after(self.to.script_s):
                facts = await page.facts(2000)
                record.update({"pageUrl": facts.get("url"), "pageTitle": facts.get("title"),
                               "bodyLen": facts.get("textLength"), "bodySnippet": facts.get("text")})
        except BridgeError as exc:
            record["dumpError"] = str(exc)
        if self.private_text:
            for key in ("question", "answer", "bodySnippet"):
                value = record.get(key)
                if isinstance(value, str):
                    record[key] = f"[{len(value)} characters, not kept]"
            if state is not None:
                state.update(lastHead="[not kept]", lastUser="[not kept]")
        keep = self.dumps_keep

        def write() -> None:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.write_text(json.dumps(record, indent=2, ensure_ascii=False), encoding="utf-8")
            prune_dumps(path.parent, keep)

        await trio.to_thread.run_sync(write)
        self.log.warning("debug dump (%s) written to %s", why, path)
        return str(path)


TRANSIENT_CDP = re.compile(r"not attached|target closed|no tab with (the )?given id|detached|session .*closed|"
                           r"cannot find context|inspected target navigated or closed", re.IGNORECASE)


def transient(exc: BaseException) -> bool:
    """A tab or debugger that went away under us: a fresh lease fixes it (before anything was sent)."""
    if isinstance(exc, TabGone | TabClosed):
        return True
    return isinstance(exc, CdpError) and TRANSIENT_CDP.search(str(exc)) is not None


def result_of(provider: ProviderName, out: Outcome, timings: AskTimings, retries: int,
              warnings: tuple[AskWarning, ...], chosen: Choice | None = None) -> AskResult:
    return AskResult(provider, out.answer, out.url, timings, retries, out.detected_ms, out.reason, out.thinking,
                     (*out.warnings, *warnings), out.extracted_by, out.model, chosen)


def _timings(t0: float, marks: dict[str, float]) -> AskTimings:
    out: list[int] = []
    prev = t0
    for name in ("connect", "wait_input", "input", "send", "response"):
        at = marks.get(name, prev)
        out.append(round((at - prev) * 1000))
        prev = at
    connect, wait_input, typed, sent, response = out
    return AskTimings(connect, wait_input, typed, sent, response, round((marks.get("total", prev) - t0) * 1000))


def prune_dumps(folder: Path, keep: int) -> None:
    """Keep the newest `keep` dumps: anomalies repeat (a changed layout fails every ask) and must not fill the
    disk."""
    dumps = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for old in dumps[keep:]:
        with contextlib.suppress(FileNotFoundError):
            old.unlink()


# -- the actor ------------------------------------------------------------------------------------------------------


async def run(
    ctx: ActorContext[ProviderRequest],
    *,
    table: ProviderTable,
    memory: ProviderMemory | None = None,
    state_dir: Path | None = None,
    stall_s: float | None = None,
    use_open_tabs: bool = False,
    dumps_keep: int = 0,
    private_text: bool = False,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    asks_send, asks_recv = trio.open_memory_channel[Envelope[ProviderRequest]](math.inf)
    async with trio.open_nursery() as nursery:
        actor = ProviderActor(ctx, table, memory if memory is not None else ProviderMemory(), stall_s=stall_s,
                              use_open_tabs=use_open_tabs, dumps_keep=dumps_keep, private_text=private_text,
                              nursery=nursery,
                              debug_dir=state_dir / "debug" if state_dir is not None and dumps_keep else None)

        async def inspect_one(msg: ProviderRequest) -> Reply[object]:
            match msg:
                case ProviderStatus(tabs=False):
                    return msg.reply(actor.status(asks_send.statistics().current_buffer_used, "not asked"))
                case ProviderStatus():
                    tabs: tuple[SiteTab, ...] | str
                    try:  # the site's tabs as the browser sees them, with our lease; best effort (link may be down)
                        found = await actor.tabs.extension.tabs(actor.t.url_patterns, timeout_s=5)
                        tabs = tuple(SiteTab(t.tab_id, t.url, t.attached_by_me, t.active) for t in found)
                    except BridgeError as exc:
                        tabs = f"[{exc.code}] {exc.message}"
                    return msg.reply(actor.status(asks_send.statistics().current_buffer_used, tabs))
                case Snapshot():
                    try:
                        page = await actor.inspection_page(msg.project)
                        return msg.reply(await inspect.snapshot(actor.name, page, msg))
                    except TabGone as exc:
                        raise TabClosed(f"the {actor.t.title} tab went away: {exc}") from exc
                case GetDom():
                    try:
                        page = await actor.inspection_page(msg.project)
                        return msg.reply(await inspect.get_dom(actor.name, page, msg))
                    except TabGone as exc:
                        raise TabClosed(f"the {actor.t.title} tab went away: {exc}") from exc
                case Ask() | Probe():
                    raise AssertionError("asks and probes are queued, not inspected")
                case _:
                    assert_never(msg)

        nursery.start_soon(_asker, actor, asks_recv)
        task_status.started()
        async for env in ctx.messages():
            if isinstance(env.message, Ask | Probe):
                env.started = False  # queued: a crash now does not count as an attempt of this ask
                asks_send.send_nowait(env)  # asks run one at a time, in arrival order
            else:
                ctx.answer_soon(nursery, env, inspect_one)  # inspection must work while an ask is running
        nursery.cancel_scope.cancel()


async def _asker(actor: ProviderActor, asks: trio.MemoryReceiveChannel[Envelope[ProviderRequest]]) -> None:
    async for env in asks:
        msg = env.message
        if env.abandoned or env.answered:
            continue
        if isinstance(msg, Probe):  # a probe may navigate the tab: never while an ask runs in it
            env.started = True
            await _one_probe(actor, env, msg)
            continue
        if not isinstance(msg, Ask):
            continue
        env.started = True
        actor.busy = Busy(msg.ask_id, msg.question[:80], env.attempt, trio.current_time())
        try:
            await _one_ask(actor, env, msg)
        finally:
            actor.busy = None
            actor.flow = None


async def _one_probe(actor: ProviderActor, env: Envelope[ProviderRequest], msg: Probe) -> None:
    deadline = env.enqueued_at + msg.timeout_s
    with env.cancelled_if_abandoned() as scope:
        try:
            with trio.move_on_at(deadline) as timer:
                report = await actor.probe(msg, deadline)
                env.reply(msg.reply(report))
            if timer.cancelled_caught:
                env.fail(ResponseTimeout(f"the {actor.t.title} probe did not finish within {msg.timeout_s:g}s",
                                         hint="Check the browser with bridge_status, or allow more time."))
        except TabGone as exc:
            actor.page = None
            env.fail(TabClosed(f"the {actor.t.title} tab went away during the probe: {exc}"))
        except (PageTimeout, trio.TooSlowError) as exc:  # a page that never finished loading
            env.fail(ResponseTimeout(f"the {actor.t.title} page did not load for the probe: {exc or 'timed out'}",
                                     hint="Check the tab with take_cdp_snapshot; the site may be down."))
        except (ExtensionDisconnected, TabClosed) as exc:
            actor.page = None
            env.fail(exc)
        except BridgeError as exc:
            env.fail(exc)
    if scope.cancelled_caught and not env.answered:
        env.fail(AskCancelled(f"the {actor.t.title} probe was cancelled"))


async def _one_ask(actor: ProviderActor, env: Envelope[ProviderRequest], msg: Ask) -> None:
    """One attempt of an ask, its outcome recorded: answered, failed with a typed error, cancelled by the requester,
    or — for a stuck page with attempts and time left — a deliberate crash that retries it."""
    memo = actor.memory.memo(str(env.id))  # the envelope (and its id) is the same object on every re-delivery
    deadline = env.enqueued_at + msg.timeout_s
    budget = AskBudget(deadline, env.attempt, Ask.max_attempts)
    if isinstance(msg, Reattach):  # as a retry whose question went to msg.url: it is read there, never sent
        memo.sent, memo.url = True, memo.url or msg.url
        budget = AskBudget(deadline, env.attempt + 1, Ask.max_attempts + 1)
    started = time.time()
    status = AskStatus.OK
    error: BridgeError | None = None
    result: AskResult | None = None
    crash: Retry | None = None
    with env.cancelled_if_abandoned() as scope:
        try:
            with trio.move_on_at(deadline) as timer:
                result = await actor.attempt(env, msg, memo, budget)
            if timer.cancelled_caught:
                status, error = AskStatus.FAILED, await _deadline_error(actor, msg)
        except Stuck as exc:
            memo.stuck = exc.kind.value
            retries = env.attempt - 1
            # The error names the state the page stayed in: never answering, or stuck mid-answer.
            kind = NoResponse if exc.kind is StuckKind.NO_RESPONSE else StuckError
            gave_up = kind(f"{exc.message} — gave up after {retries} retr{'y' if retries == 1 else 'ies'}",
                           hint="Reload the tab or start a new chat (new_chat: true).", partial=exc.partial)
            room = budget.remaining() > actor.to.attempt_reserve_s + actor.to.min_stall_s
            if env.attempt < Ask.max_attempts and room:
                actor.log.info("%s (attempt %d); restarting the %s actor to retry", exc.message, env.attempt,
                               actor.t.title)
                crash = Retry(exc.message, failure=gave_up)  # crash on purpose (below): a fresh tab connection
            else:
                status, error = AskStatus.STUCK, gave_up
        except TabGone as exc:
            actor.page = None
            status, error = AskStatus.FAILED, TabClosed(
                f"the {actor.t.title} tab went away during the ask: {exc}",
                hint="Retry; ai-bridge opens or reuses a tab on the next call.")
        except PageTimeout as exc:
            status, error = AskStatus.FAILED, ResponseTimeout(f"{actor.t.title}: timed out waiting for {exc.what}")
        except (ExtensionDisconnected, TabClosed) as exc:
            actor.page = None
            status, error = AskStatus.FAILED, exc
        except BridgeError as exc:
            status, error = (AskStatus.RATE_LIMITED if isinstance(exc, RateLimited) else AskStatus.FAILED), exc
    if isinstance(msg, Reattach) and error is not None:
        error = _reattach_error(actor, msg, error)
    if crash is not None:
        raise crash  # re-delivered to our successor with attempt + 1
    cancelled = scope.cancelled_caught
    if cancelled:
        status = AskStatus.CANCELLED
        with trio.CancelScope(shield=True), trio.move_on_after(actor.to.stop_click_s):
            if actor.page is not None and await actor.page.click_stop():
                actor.log.info("%s ask cancelled by the client: clicked Stop", actor.t.title)
    actor.memory.asks.pop(str(env.id), None)
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(started)) + "Z"
    if result is not None:
        record = HistoryRecord(ts, msg.project, actor.name.value, msg.question, status, answer=result.answer,
                               url=result.url, timings=result.timings.as_json(), retries=result.retries,
                               warnings=tuple(f"[{w.code}] {w.message}" for w in result.warnings))
    else:
        why = f"[{error.code}] {error}" if error is not None else "cancelled by the client" if cancelled else None
        record = HistoryRecord(ts, msg.project, actor.name.value, msg.question, status, error=why)
    save: SaveSession | None = None
    if result is not None and actor.page is not None:
        save = SaveSession(msg.project, actor.name, result.url, actor.page.tab_id)
    # The same conversation in the same tab: only its last-used time changes, which can wait until after the reply.
    same = save is not None and actor.session is not None and (actor.session.url, actor.session.tab_id) == (
        save.url, save.tab_id)
    with trio.CancelScope(shield=True), trio.move_on_after(10):
        try:
            if save is not None and not same:
                await actor.store.call(save, timeout=10)
            await actor.store.call(AppendHistory(msg.ask_id or f"{actor.name.value}-{env.id}", record), timeout=10)
        except BridgeError as exc:
            actor.log.error("could not record the ask in history: %s", exc)
    # Persist before answering, so the history a client reads right after the reply already holds this ask.
    if not env.answered:
        if result is not None:
            env.reply(msg.reply(result))
        else:
            env.fail(error if error is not None else AskCancelled(f"the {actor.t.title} ask was cancelled"))
    if save is not None and same:
        with trio.CancelScope(shield=True), trio.move_on_after(10):
            try:
                await actor.store.call(save, timeout=10)
            except BridgeError as exc:
                actor.log.error("could not save the session: %s", exc)


def _reattach_error(actor: ProviderActor, msg: Reattach, error: BridgeError) -> BridgeError:
    """A reattached job's error: a turn that could not be found is `Interrupted` (with the conversation's URL);
    every error carries the best partial answer known (the page's, else the one the job recorded)."""
    partial = getattr(error, "partial", None) or msg.partial or None
    if isinstance(error, SendUnconfirmed):
        return Interrupted(f"{actor.t.title}: the ask was running when the server stopped, and its turn could not "
                           f"be found again in {msg.url}; nothing was sent", url=msg.url, partial=partial,
                           hint="Open the conversation to read the answer, or ask again.")
    if isinstance(error, ProviderError) and error.partial is None:
        error.partial = partial
    return error


async def _deadline_error(actor: ProviderActor, msg: Ask) -> ProviderError:
    """The ask's deadline came: name the last state, click Stop, carry the partial answer (bounded, shielded)."""
    with trio.CancelScope(shield=True), trio.move_on_after(DEADLINE_CLEANUP_S):
        flow = actor.flow
        if flow is not None:
            try:
                err = await flow.on_deadline(msg.timeout_s)
            except (BridgeError, TabGone, PageTimeout):
                err = ResponseTimeout(f"{actor.t.title} did not answer within {msg.timeout_s:g}s ({flow.stage.value})")
            actor.log.warning("%s: deadline: %s", actor.t.title, err.message)
            return err
    stage = "connecting to the browser and the tab" if actor.flow is None else actor.flow.stage.value
    return ResponseTimeout(f"the {msg.timeout_s:g}s deadline came while {stage}; the question was not sent",
                           hint="Check the browser with bridge_status, or raise timeout_s.")

