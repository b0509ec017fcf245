"""One ask of a provider, end to end (issue 38): checked (a conversation or base URL of another site is refused
before anything is sent), queued for its turn (schedule.py: its place in line reported as `queued` progress), run
in a tab of its own (pool.py), then recorded (history; the project's kept conversation, unless it was temporary or
named by the caller) and answered.

An ask's deadline is its `timeout_s` from when it was sent (the envelope's `enqueued_at`, which survives
re-delivery): the wait in line, the browser, the tab, every attempt and every wait are inside it. A stuck page is
retried in the ask's own task on a fresh connection to its tab, at most twice and only while the deadline leaves room
— the retry looks at the conversation first and never sends the question again (`AskMemo` carries what the earlier
attempt did). The other asks running beside it never notice. Limit and error notices, login pages and deadlines end
the ask with their own typed errors and are never retried. A cancelled ask that was still waiting leaves the line
without touching a tab; a running one clicks Stop in its tab.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from pathlib import Path

import attrs
import trio

from supervisor.errors import (
    AskCancelled,
    BadExtensionReply,
    BridgeError,
    CdpError,
    ChoiceUnverified,
    CommandTimeout,
    InternalError,
    Interrupted,
    InvalidArgument,
    NoResponse,
    ProviderError,
    RateLimited,
    ResponseTimeout,
    SendUnconfirmed,
    SiteError,
    StuckError,
    TabClosed,
)
from supervisor.otp import ActorContext, Envelope, Progress

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
    ProviderRequest,
    Reattach,
    SavedFile,
)
from ..protocol.session_store import (
    SESSION_STORE,
    AppendHistory,
    AskStatus,
    GetSession,
    HistoryRecord,
    SaveSession,
    SessionEntry,
)
from . import choices, research
from .attach import attach_files
from .dumps import Dumps
from .files_back import save_answer_files
from .flow import AskFlow
from .flowkit import AskBudget, Outcome, Stuck, StuckKind, is_suspicious
from .page import NoticeKind
from .pool import TabPool
from .schedule import Lane, Schedule, Ticket
from .tab import AskMemo, PageTimeout, ProviderMemory, TabGone, TabSession
from .table import ProviderTable, Timeouts

DEADLINE_CLEANUP_S = 8.0  # after the deadline: click Stop, read the partial answer, record history
TEMPORARY_ON_S = 3.0  # a temporary chat's toggle shows it on within this
TEMPORARY_POLL_S = 0.05


@attrs.frozen
class Plan:
    """Where one ask goes on this site."""

    lane: Lane
    new_chat: bool
    new_chat_url: str | None = None  # where its new chat starts (None: the site's home)
    named_url: str | None = None  # the conversation the caller named (conversation_url, a reattached job's)
    keeps: bool = True  # its conversation becomes the project's kept one


@attrs.define(eq=False)
class AskRun:
    """One ask while it waits or runs: what bridge_status shows, and what its attempts share."""

    env: Envelope[ProviderRequest]
    msg: Ask
    memo: AskMemo
    plan: Plan
    ticket: Ticket | None = None
    since: float = attrs.Factory(trio.current_time)
    phase: AskPhase = AskPhase.QUEUED
    chars: int = 0
    page: TabSession | None = None
    flow: AskFlow | None = None
    session: SessionEntry | None = None  # the project's session as the ask found it
    renew: bool = False  # the next attempt connects to its tab afresh (after a stuck page)
    release: dict[str, str] = attrs.Factory(dict)  # how the tab is given back: {"failed": why} or {"avoid": why}

    def busy(self) -> BusyAsk:
        return BusyAsk(self.msg.ask_id, self.msg.question[:80], self.env.attempt, self.phase, self.chars,
                       round(trio.current_time() - self.since, 3))


def _matches(pattern: str, url: str) -> bool:
    return bool(pattern) and re.match(pattern, url) is not None


class Asker:
    """A provider's asks, each in its own task under the actor's nursery."""

    def __init__(self, ctx: ActorContext[ProviderRequest], table: ProviderTable, timeouts: Timeouts,
                 memory: ProviderMemory, pool: TabPool, cap: int, dumps: Dumps, log: logging.Logger, *,
                 chat_base_url: str = "") -> None:
        self.ctx = ctx
        self.t = table
        self.name = ProviderName(table.name)
        self.to = timeouts
        self.memory = memory
        self.pool = pool
        self.dumps = dumps
        self.log = log
        self.store = ctx.ref(SESSION_STORE)
        self.chat_base_url = chat_base_url  # where this site's new chats start (--chat-base-url), "" for its home
        self.runs: dict[int, AskRun] = {}  # envelope id → its ask, waiting or running
        self.kept: dict[str, SessionEntry | None] = {}  # project → its kept conversation, as last read or saved
        self._saved_seq: dict[str, int] = {}  # project → the latest ask (ticket order) that set it
        self.schedule = Schedule(cap, self._kept_url)

    def _kept_url(self, project: str) -> str | None:
        entry = self.kept.get(project)
        return entry.url if entry is not None else None

    # -- the plan ----------------------------------------------------------------------------------------------------

    def plan(self, msg: Ask, memo: AskMemo) -> Plan:
        """Where the ask goes; `InvalidArgument` for a URL that is not this site's (nothing is sent)."""
        target = msg.target_for(self.name)
        if isinstance(msg, Reattach):  # a stopped server's job: its own conversation, never a new chat
            return Plan(Lane(writes=msg.project, url=msg.url), False, named_url=msg.url)
        if memo.sent and memo.url:  # re-delivered after the actor restarted: where its question went
            keeps = not (msg.temporary or target.conversation_url)
            return Plan(Lane(writes=msg.project if keeps else None, url=memo.url), False, named_url=memo.url,
                        keeps=keeps)
        if target.conversation_url:
            if msg.new_chat or msg.temporary or target.chat_base_url:
                raise InvalidArgument("conversation_url continues a conversation: it cannot go with new_chat, "
                                      "temporary or chat_base_url", hint="Give one of them.")
            if not _matches(self.t.conversation_re, target.conversation_url):
                raise InvalidArgument(f"{target.conversation_url!r} is not a {self.t.title} conversation URL",
                                      hint=f"Give the URL of a {self.t.title} conversation as the browser shows it "
                                      f"(e.g. {self._example()}); nothing was sent.")
            return Plan(Lane(url=target.conversation_url), False, named_url=target.conversation_url, keeps=False)
        if msg.temporary:
            if target.chat_base_url:
                raise InvalidArgument("a temporary chat cannot start inside a Project or Gem (chat_base_url)",
                                      hint="Leave out temporary or chat_base_url.")
            if not self.t.has_temporary:
                raise InvalidArgument(f"ai-bridge knows no temporary chat on {self.t.title}",
                                      hint="Leave out temporary for this site; nothing was sent.")
            return Plan(Lane(), True, new_chat_url=self.t.temporary_url or None, keeps=False)
        if target.chat_base_url:
            if not _matches(self.t.chat_base_re, target.chat_base_url):
                where = "a ChatGPT Project (https://chatgpt.com/g/g-p-…/project)" if self.name is \
                    ProviderName.CHATGPT else "a Gemini Gem (https://gemini.google.com/gem/…)" if self.name is \
                    ProviderName.GEMINI else "a page of this site where new chats start"
                raise InvalidArgument(f"{target.chat_base_url!r} is not where {self.t.title} starts new chats "
                                      f"of a Project or Gem", hint=f"Give the URL of {where}; nothing was sent.")
            return Plan(Lane(writes=msg.project), True, new_chat_url=target.chat_base_url)
        if msg.new_chat:
            return Plan(Lane(writes=msg.project), True)
        return Plan(Lane(reads=msg.project, writes=msg.project), False)

    def _example(self) -> str:
        return {"chatgpt": "https://chatgpt.com/c/…", "gemini": "https://gemini.google.com/app/…"}.get(
            self.t.name, self.t.home_url + "…")

    # -- one ask -----------------------------------------------------------------------------------------------------

    async def serve(self, env: Envelope[ProviderRequest], msg: Ask) -> None:
        """The ask from the moment it arrives to its answer (its own task)."""
        memo = self.memory.memo(str(env.id))  # the envelope (and its id) is the same object on every re-delivery
        if isinstance(msg, Reattach):  # as a retry whose question went to msg.url: it is read there, never sent
            memo.sent, memo.url = True, memo.url or msg.url
        try:
            plan = self.plan(msg, memo)
        except BridgeError as exc:
            self.memory.asks.pop(str(env.id), None)
            await self._record(env, msg, time.time(), None, exc, AskStatus.FAILED)
            if not env.answered:
                env.fail(exc)
            return
        run = AskRun(env, msg, memo, plan)
        self.runs[env.id] = run

        def place(n: int) -> None:
            env.progress(AskProgress(self.name, AskPhase.QUEUED, url=memo.url or "", place=n))

        deadline = env.enqueued_at + msg.timeout_s
        run.ticket = ticket = self.schedule.join(msg.client or "-", plan.lane, place)
        try:
            with env.cancelled_if_abandoned() as scope, trio.move_on_at(deadline):
                await self.schedule.wait(ticket)
            if not ticket.granted.is_set():
                # Still in line: it leaves without touching a tab, and nothing was sent.
                ahead = ticket.place - 1
                error: ProviderError = AskCancelled(
                    f"the {self.t.title} ask was cancelled while it waited for a tab; nothing was sent") \
                    if scope.cancelled_caught else ResponseTimeout(
                        f"the {msg.timeout_s:g}s deadline came while the ask waited for a {self.t.title} tab "
                        f"({ahead} ask{'s' if ahead != 1 else ''} ahead of it); the question was not sent",
                        hint="Raise timeout_s, or raise --tabs-per-site to run more asks at once.")
                self.memory.asks.pop(str(env.id), None)
                status = AskStatus.CANCELLED if scope.cancelled_caught else AskStatus.FAILED
                await self._record(env, msg, time.time(), None, error, status)
                if not env.answered:
                    env.fail(error)
                return
            env.started = True  # work begins: a crash of the actor from here on counts as an attempt
            try:
                await self._run(run, deadline)
            except Exception as exc:  # a bug in this ask: it alone fails; the asks beside it go on
                self.log.exception("%s: the ask failed unexpectedly", self.t.title)
                with trio.CancelScope(shield=True):
                    await self.pool.release(run.page, failed="the ask failed unexpectedly")
                if not env.answered:
                    env.fail(InternalError(f"the {self.t.title} ask failed unexpectedly: {type(exc).__name__}: {exc}",
                                           hint="This is a bug in ai-bridge; the log file has the traceback. The "
                                           "question may have been sent: look at the conversation before asking "
                                           "again."))
        finally:
            self.schedule.leave(ticket)
            self.runs.pop(env.id, None)

    async def _run(self, run: AskRun, deadline: float) -> None:
        """Attempts until an outcome (a stuck page retried while attempts and time remain), then the record."""
        env, msg, memo = run.env, run.msg, run.memo
        reattach = isinstance(msg, Reattach)
        started = time.time()
        status = AskStatus.OK
        error: BridgeError | None = None
        result: AskResult | None = None
        with env.cancelled_if_abandoned() as scope:
            while True:
                # A reattached job counts as a retry whose question went out before (its flow reads, never sends).
                budget = AskBudget(deadline, env.attempt + reattach, Ask.max_attempts + reattach)
                try:
                    with trio.move_on_at(deadline) as timer:
                        result = await self.attempt(run, budget)
                    if timer.cancelled_caught:
                        status, error = AskStatus.FAILED, await self._deadline_error(run)
                except Stuck as exc:
                    memo.stuck = exc.kind.value
                    retries = env.attempt - 1
                    # The error names the state the page stayed in: never answering, or stuck mid-answer.
                    kind = NoResponse if exc.kind is StuckKind.NO_RESPONSE else StuckError
                    gave_up = kind(f"{exc.message} — gave up after {retries} retr{'y' if retries == 1 else 'ies'}",
                                   hint="Reload the tab or start a new chat (new_chat: true).", partial=exc.partial)
                    room = budget.remaining() > self.to.attempt_reserve_s + self.to.min_stall_s
                    if env.attempt < Ask.max_attempts and room:
                        self.log.info("%s (attempt %d); retrying on a fresh connection to its tab", exc.message,
                                      env.attempt)
                        env.attempt += 1
                        run.renew = True
                        continue
                    status, error = AskStatus.STUCK, gave_up
                    run.release["failed"] = f"stuck: {exc.kind.value}"
                except TabGone as exc:
                    status, error = AskStatus.FAILED, TabClosed(
                        f"the {self.t.title} tab went away during the ask: {exc}",
                        hint="Retry; ai-bridge opens or reuses a tab on the next call.")
                except PageTimeout as exc:
                    status, error = AskStatus.FAILED, ResponseTimeout(
                        f"{self.t.title}: timed out waiting for {exc.what}")
                    run.release["failed"] = f"timed out waiting for {exc.what}"
                except BridgeError as exc:
                    status = AskStatus.RATE_LIMITED if isinstance(exc, RateLimited) else AskStatus.FAILED
                    error = exc
                    if isinstance(exc, BadExtensionReply | CdpError | CommandTimeout):
                        run.release["failed"] = exc.code  # a tab that misbehaves is replaced, never reused
                break
        if reattach and error is not None:
            error = _reattach_error(self.t, msg, error)  # type: ignore[arg-type]
        cancelled = scope.cancelled_caught
        if cancelled:
            status = AskStatus.CANCELLED
            with trio.CancelScope(shield=True), trio.move_on_after(self.to.stop_click_s):
                if run.page is not None and await run.page.click_stop():
                    self.log.info("%s ask cancelled by the client: clicked Stop", self.t.title)
        self.memory.asks.pop(str(env.id), None)
        page = run.page
        if page is not None and page.crashed:
            run.release["failed"] = "the page crashed"
        save: SaveSession | None = None
        if result is not None and page is not None and run.plan.keeps and run.ticket is not None and \
                self._saved_seq.get(msg.project, 0) < run.ticket.seq:
            # The latest ask wins: an earlier ask that ends later never replaces what a newer one kept.
            save = SaveSession(msg.project, self.name, result.url, page.tab_id)
            self._saved_seq[msg.project] = run.ticket.seq
            self.kept[msg.project] = SessionEntry(result.url, page.tab_id, "")
            self.pool.keep(page.tab_id)
        # The same conversation in the same tab: only its last-used time changes, which can wait until after the reply.
        same = save is not None and run.session is not None and (run.session.url, run.session.tab_id) == (
            save.url, save.tab_id)
        with trio.CancelScope(shield=True):
            await self.pool.release(page, failed=run.release.get("failed"), avoid=run.release.get("avoid"))
            run.page = None
            if save is not None and not same:
                await self._store(save)
        # Persist before answering, so the history a client reads right after the reply already holds this ask.
        await self._record(env, msg, started, result, error, status, cancelled=cancelled)
        if not env.answered:
            if result is not None:
                env.reply(msg.reply(result))
            else:
                env.fail(error if error is not None else AskCancelled(f"the {self.t.title} ask was cancelled"))
        if save is not None and same:
            with trio.CancelScope(shield=True):
                await self._store(save)

    async def _store(self, save: SaveSession) -> None:
        with trio.move_on_after(10):
            try:
                await self.store.call(save, timeout=10)
            except BridgeError as exc:
                self.log.error("could not save the session: %s", exc)

    async def _record(self, env: Envelope[ProviderRequest], msg: Ask, started: float, result: AskResult | None,
                      error: BridgeError | None, status: AskStatus, *, cancelled: bool = False) -> None:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(started)) + "Z"
        if result is not None:
            record = HistoryRecord(ts, msg.project, self.name.value, msg.question, status, answer=result.answer,
                                   url=result.url, timings=result.timings.as_json(), retries=result.retries,
                                   warnings=tuple(f"[{w.code}] {w.message}" for w in result.warnings))
        else:
            why = f"[{error.code}] {error}" if error is not None else "cancelled by the client" if cancelled else None
            record = HistoryRecord(ts, msg.project, self.name.value, msg.question, status, error=why)
        with trio.CancelScope(shield=True), trio.move_on_after(10):
            try:
                await self.store.call(AppendHistory(msg.ask_id or f"{self.name.value}-{env.id}", record), timeout=10)
            except BridgeError as exc:
                self.log.error("could not record the ask in history: %s", exc)

    # -- one attempt -------------------------------------------------------------------------------------------------

    async def attempt(self, run: AskRun, budget: AskBudget) -> AskResult:
        env, msg, memo, plan = run.env, run.msg, run.memo, run.plan
        t0 = trio.current_time()

        def progress(phase: AskPhase, chars: int, text: str) -> None:
            run.phase, run.chars = phase, chars
            if memo.url and run.ticket is not None and run.ticket.url != memo.url:
                self.schedule.moved(run.ticket, memo.url)
            env.progress(AskProgress(self.name, phase, chars, text, url=memo.url or ""))

        def browser_progress(item: Progress) -> None:
            if isinstance(item, BrowserProgress):  # the browser actor waits for (or wakes) the extension
                progress(AskPhase.WAITING_EXTENSION, 0, "")

        progress(AskPhase.CONNECTING, 0, "")
        # Ends a moment before the ask's deadline: a browser that never came is reported as such, not as a timeout.
        wait_s = max(0.5, min(self.to.extension_wait_s, budget.remaining() - self.to.browser_margin_s))
        await self.ctx.ref(BROWSER).call(EnsureBrowser(timeout_s=wait_s), timeout=wait_s + 10,
                                         on_progress=browser_progress)
        session = run.session = await self.store.call(GetSession(msg.project, self.name), timeout=10)
        if plan.lane.reads is not None or msg.project not in self.kept:
            self.kept[msg.project] = session
        kept = session.url if session is not None and _matches(self.t.conversation_re, session.url) else None
        # A project without a conversation of its own starts one (never the conversation a reused tab shows).
        new_chat = plan.new_chat or (plan.named_url is None and kept is None)
        new_chat_url = plan.new_chat_url or (self.chat_base_url if new_chat and not msg.temporary else None) or None
        follow = plan.named_url or (kept if not new_chat else None)
        start_url = follow or new_chat_url or self.t.home_url
        for again in (False, True):
            try:
                page = await self._connect(run, session, start_url)
            except (TabGone, TabClosed, CdpError) as exc:
                if again or not transient(exc):
                    raise
                self.log.info("%s: the tab's debugger went away while attaching (%s); leasing a fresh tab",
                              self.t.title, exc)
                await self._drop(run)
                continue
            if not again and not memo.sent and (banner := await self.error_banner(page)) is not None:
                # Seed 001: a page that shows a site error before anything was typed is replaced, once, within the
                # deadline; the next ask never picks that tab again.
                self.log.warning("%s tab %d shows a site error before the question was sent (“%s”); replacing it "
                                 "with a new tab", self.t.title, page.tab_id, banner)
                await self._drop(run, failed=f"site error: {banner[:100]}")
                continue
            opened_here, page.opened_at = page.opened_at == (new_chat_url or self.t.home_url), None
            flow = AskFlow(page, self.t, self.to, question=msg.question, new_chat=new_chat,
                           session_url=follow, budget=budget, memo=memo, progress=progress, log=self.log,
                           dump=functools.partial(self.dump_for, page, msg.question),
                           spawn=self.pool.nursery.start_soon,
                           reattach=msg.digest if isinstance(msg, Reattach) else None,
                           research="deep research" in msg.choice_for(self.name).tools,
                           new_chat_url=new_chat_url, named_url=plan.named_url is not None,
                           opened_here=new_chat and opened_here, frames=research.TabFrames(page))
            run.flow = flow
            if self.acts_before_typing(msg):  # else the flow types in its first call
                flow.before_typing = functools.partial(self.before_typing, page, msg, memo, budget)
            flow.mark("connect")
            try:
                out = await flow.run()
                break
            except SiteError:
                # The page showed an error after the question went out: not retried here (it may be there), but the
                # next ask takes a fresh tab instead of this error page (left open for the user to read).
                run.release["avoid"] = "site error"
                raise
            except (TabGone, TabClosed, CdpError) as exc:
                # The tab went away, or its debugger detached, before the question was sent (a close event still
                # on the way, a tab the browser just replaced): lease a fresh one, once, within the deadline. Never
                # after a send: the question may be there.
                if again or memo.sent or not transient(exc):
                    raise
                self.log.info("%s: the tab went away before the question was sent (%s); leasing one again",
                              self.t.title, exc)
                await self._drop(run)
        flow.mark("total")
        warnings: list[AskWarning] = []
        saved = await self.files_back(page, msg, warnings)
        for w in out.warnings:
            if w.code == "site_changed":  # kept for bridge_status and doctor --live (issue 37)
                self.memory.site_changed = f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {w.message}"
        if not saved and is_suspicious(out.answer, msg.question):
            path = await self.dumps.write(page, self.t.name, "suspicious", msg.question, answer=out.answer)
            warnings.append(AskWarning("suspicious_answer", "The answer looks unusual for the question (empty, just "
                                       "'ok', or without the question's numbers); check it.", path))
        self.log.info("%s answered in %.2fs (%s; typed via %s, sent via %s; extracted via %s; %d chars)",
                      self.t.title, trio.current_time() - t0, out.reason,
                      flow.type_phase.value if flow.type_phase else "-", flow.send_method or "-", out.extracted_by,
                      len(out.answer))
        return result_of(self.name, out, _timings(t0, flow.marks), budget.attempt - 1, tuple(warnings), memo.chosen,
                         saved)

    async def files_back(self, page: TabSession, msg: Ask, warnings: list[AskWarning]) -> tuple[SavedFile, ...]:
        """The answer's generated images and files, saved where the ask said (issue 35); never at the answer's cost."""
        try:
            if not msg.save_to or (await page.current()).last_media == 0:
                return ()
            saved, more = await save_answer_files(page, Path(msg.save_to))
        except (BridgeError, TabGone) as exc:
            self.log.warning("%s: the answer's files could not be listed: %s", self.t.title, exc)
            warnings.append(AskWarning("file_not_saved", f"The answer's images or files could not be read from the "
                                       f"page ({exc}); they are still on the page."))
            return ()
        warnings.extend(more)
        return saved

    async def _connect(self, run: AskRun, session: SessionEntry | None, url: str) -> TabSession:
        """The ask's tab: the one it holds (on a fresh connection after a stuck page), else a lease from the pool."""
        if run.page is not None and not run.page.broken:
            if run.renew:
                run.renew = False
                run.page = await self.pool.renew(run.page, run.msg.ask_id or str(run.env.id))
            return run.page
        await self._drop(run)
        run.renew = False
        run.page = await self.pool.lease(run.msg.ask_id or str(run.env.id), session, url)
        if run.page.broken:  # broke between the lease and now (a close event on its way): treated as gone
            raise TabGone(run.page.broken)
        return run.page

    async def _drop(self, run: AskRun, *, failed: str | None = None) -> None:
        """The ask lets its tab go before its end: replaced (`failed`), else forgotten for a fresh attach."""
        page, run.page = run.page, None
        if page is not None:
            with trio.CancelScope(shield=True):
                await self.pool.release(page, failed=failed if failed is not None else (
                    "the page crashed" if page.crashed else None), forget=True)

    async def error_banner(self, page: TabSession) -> str | None:
        """The text of a site-error notice the page shows now (before the ask marks the notices), else None."""
        try:
            st = await page.current()
        except BridgeError:
            return None
        notice = st.notice
        return notice.text if notice is not None and notice.kind is NoticeKind.SITE_ERROR else None

    def acts_before_typing(self, msg: Ask) -> bool:
        """Whether `before_typing` has anything to do for `msg` (its steps' conditions, in its order)."""
        return bool(msg.temporary or msg.choice_for(self.name) or msg.files)

    async def before_typing(self, page: TabSession, msg: Ask, memo: AskMemo, budget: AskBudget) -> None:
        """Before the question is typed: the temporary chat switched on and seen on (issue 38); the model, effort
        and tools the ask names, chosen on the page and read back (issue 34: what the page does not confirm is never
        sent); then its files, attached through the site's own upload and each shown as uploaded."""
        if msg.temporary:
            await self.temporary_on(page)
        want = msg.choice_for(self.name)
        if want:
            memo.chosen = await choices.choose(page, want)
        if msg.files:
            # Within the ask's deadline, leaving time to type and send: a stalled upload is named as such.
            took = await attach_files(page, msg.files, self.to.upload_s, budget.deadline - self.to.attempt_reserve_s)
            self.log.info("%s: %d files attached and uploaded in %.2fs", self.t.title, len(msg.files), took)

    async def temporary_on(self, page: TabSession) -> None:
        """The site's temporary chat, on before anything is typed: pressed once when off, then read back."""
        if await page.temporary_chat(click=True):
            return
        for _ in range(round(TEMPORARY_ON_S / TEMPORARY_POLL_S)):
            await trio.sleep(TEMPORARY_POLL_S)  # the toggle re-renders the composer within a few frames
            if await page.temporary_chat(click=False):
                return
        raise ChoiceUnverified(f"{self.t.title}'s temporary chat did not show as on; nothing was sent",
                               hint="Open a new chat in the browser ai-bridge uses and check that the site offers a "
                               "temporary chat, or leave out temporary.")

    async def dump_for(self, page: TabSession, question: str, why: str) -> str:
        return await self.dumps.write(page, self.t.name, why, question)

    async def _deadline_error(self, run: AskRun) -> ProviderError:
        """The ask's deadline came: name the last state, click Stop, carry the partial answer (bounded, shielded)."""
        msg = run.msg
        with trio.CancelScope(shield=True), trio.move_on_after(DEADLINE_CLEANUP_S):
            flow = run.flow
            if flow is not None:
                try:
                    err = await flow.on_deadline(msg.timeout_s)
                except (BridgeError, TabGone, PageTimeout):
                    err = ResponseTimeout(f"{self.t.title} did not answer within {msg.timeout_s:g}s "
                                          f"({flow.stage.value})")
                self.log.warning("%s: deadline: %s", self.t.title, err.message)
                return err
        stage = "connecting to the browser and the tab" if run.flow is None else run.flow.stage.value
        return ResponseTimeout(f"the {msg.timeout_s:g}s deadline came while {stage}; the question was not sent",
                               hint="Check the browser with bridge_status, or raise timeout_s.")


TRANSIENT_CDP = re.compile(r"not attached|target closed|no tab with (the )?given id|detached|session .*closed|"
                           r"cannot find context|inspected target navigated or closed", re.IGNORECASE)


def transient(exc: BaseException) -> bool:
    """A tab or debugger that went away under us: a fresh lease fixes it (before anything was sent)."""
    if isinstance(exc, TabGone | TabClosed):
        return True
    return isinstance(exc, CdpError) and TRANSIENT_CDP.search(str(exc)) is not None


def _reattach_error(t: ProviderTable, msg: Reattach, error: BridgeError) -> BridgeError:
    """A reattached job's error: a turn that could not be found is `Interrupted` (with the conversation's URL);
    every error carries the best partial answer known (the page's, else the one the job recorded)."""
    partial = getattr(error, "partial", None) or msg.partial or None
    if isinstance(error, SendUnconfirmed):
        return Interrupted(f"{t.title}: the ask was running when the server stopped, and its turn could not "
                           f"be found again in {msg.url}; nothing was sent", url=msg.url, partial=partial,
                           hint="Open the conversation to read the answer, or ask again.")
    if isinstance(error, ProviderError) and error.partial is None:
        error.partial = partial
    return error


def result_of(provider: ProviderName, out: Outcome, timings: AskTimings, retries: int,
              warnings: tuple[AskWarning, ...], chosen: Choice | None = None,
              files: tuple[SavedFile, ...] = ()) -> AskResult:
    return AskResult(provider, out.answer, out.url, timings, retries, out.detected_ms, out.reason, out.thinking,
                     (*out.warnings, *warnings), out.extracted_by, out.model, chosen, files)


def _timings(t0: float, marks: dict[str, float]) -> AskTimings:
    out: list[int] = []
    prev = t0
    for name in ("connect", "wait_input", "input", "send", "response"):
        at = marks.get(name, prev)
        out.append(round((at - prev) * 1000))
        prev = at
    connect, wait_input, typed, sent, response = out
    return AskTimings(connect, wait_input, typed, sent, response, round((marks.get("total", prev) - t0) * 1000))
