"""Jobs actor: background asks that outlive the MCP call that started them.

An ask tool called with ``background: true`` sends `StartJob` and returns the job id at once; the asks then run
here, in this actor's nursery, calling the provider actors like any foreground ask (so they queue behind other asks
on the same tab and get the same retries). `GetJob` waits up to ``wait_s`` in a task of its own, so a long wait
never blocks the inbox. Progress items keep each provider's partial answer for ``get_answer``.

The job table (`JobBook`) is owned by the supervisor tree (built in ``supervisor/app/tree.py``), like the mailboxes:
a crash of this actor does not forget finished jobs; jobs that were running are marked failed with the reason (their
asks were cancelled with this actor's nursery, which clicks Stop in the page).

Jobs outlive the server (issue 21): each job's record is written to ``<state-dir>/jobs`` as it changes
(`job_records`). A server that stops leaves its running asks in their pages (no Stop click) and their records
running; the next server loads the records of the last ``jobs_keep_days``, hands out finished answers, and
reattaches each running ask (`Reattach`: its conversation is opened, its turn waited for and read, the question never
sent again).
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import secrets
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, assert_never, cast

import attrs
import trio

from supervisor.errors import (
    ActorCrashed,
    AskCancelled,
    BridgeError,
    ErrorInfo,
    Interrupted,
    InvalidArgument,
    JobNotFound,
    RequestTimeout,
    StateFileError,
)
from supervisor.otp import ActorContext, Envelope, Message, Progress, Reply

from .job_records import AskRecord, JobFiles, JobRecord, my_token, now_utc, owner_alive
from .protocol.common import ProviderName
from .protocol.jobs import (
    CancelJob,
    FindTask,
    GetJob,
    JobPhase,
    JobsRequest,
    JobStatus,
    JobView,
    ListJobs,
    StartJob,
    TagJob,
    TaskFound,
    TaskRef,
)
from .protocol.provider import (
    Ask,
    AskPhase,
    AskProgress,
    AskResult,
    Reattach,
    provider_address,
    question_digest,
)

log = logging.getLogger("ai_bridge.jobs")

KEEP_FINISHED = 100  # finished jobs held in memory for list_jobs; older ones are read from their records on demand
MAX_RUNNING = 32  # a runaway agent must not queue unbounded work on the user's browser
CANCEL_WAIT_S = 10.0
PARTIAL_SAVE_S = 5.0  # a growing partial answer is written to the job's record at most this often
PRUNE_EVERY_S = 3600.0
REATTACH_MIN_S = 120.0  # a reattached ask whose deadline passed while no server ran still gets this to read its answer
SAVE_WAIT_S = 1.5  # within the actor's shutdown time
REATTACHED_QUESTION = "(reattached after a server restart; the question's text is not kept)"

Clock = Callable[[], dt.datetime]
T = TypeVar("T")


def _iso(t: dt.datetime) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@attrs.define(eq=False)
class Job:
    job_id: str
    tool: str
    providers: tuple[ProviderName, ...]
    created: dt.datetime
    started_at: float  # trio clock
    ended_at: float | None = None
    status: JobStatus = JobStatus.RUNNING
    results: dict[ProviderName, AskResult] = attrs.field(factory=dict)
    errors: dict[ProviderName, ErrorInfo] = attrs.field(factory=dict)
    partial: dict[ProviderName, str] = attrs.field(factory=dict)
    phase: dict[ProviderName, AskPhase | JobPhase] = attrs.field(factory=dict)
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    done: trio.Event = attrs.field(factory=trio.Event)
    cancel_requested: bool = False
    # What its record keeps besides (issue 21): where each ask went, the question's digest, the deadline, the task.
    project: str = ""
    digest: str = ""
    new_chat: bool = False
    timeout_s: float = 480.0
    urls: dict[ProviderName, str] = attrs.field(factory=dict)
    task: TaskRef | None = None
    owner: str | None = None
    finished: dt.datetime | None = None  # wall clock, once ended
    save_to: str = ""  # where the answers' images and files go (issue 35): a reattached ask saves there too

    def view(self) -> JobView:
        end = self.ended_at if self.ended_at is not None else trio.current_time()
        finished = self.finished or (self.created + dt.timedelta(seconds=end - self.started_at)
                                     if self.ended_at is not None else None)
        return JobView(
            job_id=self.job_id, tool=self.tool, providers=self.providers, status=self.status,
            created_at=_iso(self.created), finished_at=_iso(finished) if finished else None,
            elapsed_s=round(end - self.started_at, 3), results=dict(self.results), errors=dict(self.errors),
            partial=dict(self.partial) if self.status is JobStatus.RUNNING else {}, phase=dict(self.phase),
            urls=dict(self.urls),
        )

    def settle(self) -> None:
        """Its status from its asks' outcomes, and its end time (`done` is set once the record is written)."""
        if self.results:
            self.status = JobStatus.DONE  # a two-provider job with one answer is done, as the foreground tool does
        elif self.cancel_requested:
            self.status = JobStatus.CANCELLED
        else:
            self.status = JobStatus.FAILED
        self.ended_at = trio.current_time()
        self.finished = self.created + dt.timedelta(seconds=self.ended_at - self.started_at)

    def finish(self) -> None:
        self.settle()
        self.done.set()

    def record(self, now: dt.datetime) -> JobRecord:
        asks = {p: AskRecord(self.phase.get(p, JobPhase.QUEUED), self.urls.get(p), self.partial.get(p, ""),
                             self.results.get(p), self.errors.get(p)) for p in self.providers}
        return JobRecord(self.job_id, self.tool, self.providers, self.project, self.digest, self.new_chat,
                         self.timeout_s, self.created, now, self.status, self.finished,
                         self.owner if self.status is JobStatus.RUNNING else None, asks, self.task, self.save_to)

    @classmethod
    def restore(cls, rec: JobRecord, now: dt.datetime) -> Job:
        """A job from its record: timings on this server's trio clock, as if it had run here."""
        age = max(0.0, (now - rec.created).total_seconds())
        started = trio.current_time() - age
        job = cls(rec.job_id, rec.tool, rec.providers, rec.created, started, status=rec.status, project=rec.project,
                  digest=rec.digest, new_chat=rec.new_chat, timeout_s=rec.timeout_s, task=rec.task, owner=rec.owner,
                  finished=rec.finished, save_to=rec.save_to)
        for p, a in rec.asks.items():
            job.phase[p] = a.phase
            if a.url:
                job.urls[p] = a.url
            if a.partial:
                job.partial[p] = a.partial
            if a.result is not None:
                job.results[p] = a.result
            if a.error is not None:
                job.errors[p] = a.error
        if rec.status is not JobStatus.RUNNING:
            job.ended_at = started + max(0.0, ((rec.finished or rec.updated) - rec.created).total_seconds())
            job.done.set()
        return job


class JobBook:
    """Every job this server knows, newest last; outlives restarts of the jobs actor. With a state dir, each job's
    record is kept in ``<state-dir>/jobs`` (`job_records`), written by `saver` as jobs change."""

    def __init__(self, state_dir: Path | None = None, *, keep_days: float = 7.0, clock: Clock = now_utc,
                 inline_io: bool = False) -> None:
        self.jobs: OrderedDict[str, Job] = OrderedDict()
        self.files = JobFiles(state_dir) if state_dir is not None else None
        self.keep_days = keep_days
        self.clock = clock
        self.loaded = False
        self.detaching = False  # the server is stopping: running asks are left to the next server, not stopped
        self.dirty: dict[str, float] = {}  # job id -> when it was marked (trio clock)
        self.saved_at: dict[str, float] = {}
        self.writing: dict[str, trio.Lock] = {}  # one write of a job's record at a time (one temp file name)
        self.wake = trio.Event()
        self.me = my_token()
        self.inline_io = inline_io  # file operations in the trio thread (tests on the autojump clock)

    async def io(self, fn: Callable[..., T], *args: object) -> T:
        """A file operation, in a worker thread."""
        if self.inline_io:
            return fn(*args)
        return await trio.to_thread.run_sync(fn, *args)

    def get(self, job_id: str) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            raise JobNotFound(f"no background job {job_id!r} on this server",
                              hint=f"list_jobs shows the known ids; jobs are kept {self.keep_days:g} days "
                              "(finished answers stay in the history file).")
        return job

    def running(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.status is JobStatus.RUNNING]

    def add(self, job: Job) -> None:
        self.jobs[job.job_id] = job
        self.trim()

    def trim(self) -> None:
        finished = [j for j in self.jobs.values() if j.status is not JobStatus.RUNNING]
        for old in finished[: max(0, len(finished) - KEEP_FINISHED)]:
            del self.jobs[old.job_id]

    # -- the records ---------------------------------------------------------------------------------------------

    def mark(self, job: Job, *, partial_only: bool = False) -> None:
        """The job changed: have its record written (a growing partial answer at most every `PARTIAL_SAVE_S`)."""
        if self.files is None:
            return
        now = trio.current_time()
        if partial_only and now - self.saved_at.get(job.job_id, -math.inf) < PARTIAL_SAVE_S:
            self.dirty.setdefault(job.job_id, now + PARTIAL_SAVE_S)
            return
        self.dirty[job.job_id] = now
        self.wake.set()

    async def save_now(self, job: Job) -> None:
        """Write the job's record now (its end: before anyone is told it ended)."""
        if self.files is None:
            return
        self.dirty.pop(job.job_id, None)
        await self._write(job)

    async def _write(self, job: Job) -> None:
        files = self.files
        assert files is not None
        async with self.writing.setdefault(job.job_id, trio.Lock()):
            self.saved_at[job.job_id] = trio.current_time()
            record = job.record(self.clock())  # the latest state, taken in turn: a later write never loses
            try:
                await self.io(files.write, record)
            except (OSError, StateFileError) as exc:
                log.error("could not write the record of job %s: %s", job.job_id, exc)

    async def saver(self) -> None:
        """Writes the records of changed jobs (the jobs actor runs it)."""
        while True:
            # `dirty` is the truth; `wake` only cuts a wait short (a stale one costs one more look).
            now = trio.current_time()
            due = [j for j, at in self.dirty.items() if at <= now]
            if not due:
                with trio.move_on_at(min(self.dirty.values(), default=math.inf)):
                    await self.wake.wait()
                self.wake = trio.Event()
                continue
            for job_id in due:
                self.dirty.pop(job_id, None)
                job = self.jobs.get(job_id)
                if job is not None:
                    await self._write(job)

    async def flush(self) -> None:
        for job_id in list(self.dirty):
            self.dirty.pop(job_id, None)
            job = self.jobs.get(job_id)
            if job is not None:
                await self._write(job)

    async def load(self) -> list[JobRecord]:
        """The records of the last `keep_days` (once per book); returns the running ones whose server is gone."""
        if self.files is None or self.loaded:
            return []
        self.loaded = True
        files = self.files
        try:
            await self.io(files.prepare)
            records = await self.io(files.load, self.keep_days, self.clock())
        except (OSError, StateFileError) as exc:
            log.warning("background jobs will not outlive the server: %s", exc)
            self.files = None
            return []
        orphans = []
        now = self.clock()
        for rec in records:
            if rec.status is JobStatus.RUNNING:
                if owner_alive(rec.owner) and rec.owner != self.me:
                    continue  # another server on this state dir runs it: read from its record when asked
                orphans.append(rec)
                continue
            self.jobs[rec.job_id] = Job.restore(rec, now)
        self.trim()
        if records:
            log.info("%d background job(s) of the last %g days known from their records; %d to reattach",
                     len(records), self.keep_days, len(orphans))
        return orphans

    async def read(self, job_id: str) -> Job | None:
        """A job this server does not hold, from its record (older than the ones in memory, or another server's)."""
        files = self.files
        if files is None:
            return None
        try:
            rec = await self.io(files.read, job_id)
        except (OSError, StateFileError, ValueError):
            return None
        if rec is None or rec.updated < self.clock() - dt.timedelta(days=self.keep_days):
            return None
        return Job.restore(rec, self.clock())

    async def prune(self) -> None:
        files = self.files
        if files is None:
            return
        cutoff = self.clock() - dt.timedelta(days=self.keep_days)
        for job in [j for j in self.jobs.values() if j.status is not JobStatus.RUNNING]:
            if (job.finished or job.created) < cutoff:
                del self.jobs[job.job_id]
        try:
            await self.io(files.load, self.keep_days, self.clock())
        except (OSError, StateFileError) as exc:
            log.warning("could not prune the job records: %s", exc)


async def _call(ctx: ActorContext[JobsRequest], book: JobBook, provider: ProviderName, msg: Ask,
                on_progress: Callable[[Progress], None]) -> AskResult:
    """`ActorRef.call` for a job's ask, except that a server that is stopping (`book.detaching`) leaves the ask
    running in the page for the next server to reattach, instead of abandoning it (which clicks Stop)."""
    env: Envelope[Message] = Envelope(msg, on_progress=on_progress)
    mailbox = ctx.registry.mailbox(provider_address(provider).name)
    timeout = msg.call_timeout_s
    try:
        with trio.move_on_after(timeout):
            await mailbox.put(env)
            return cast(AskResult, await env.result())
    finally:
        if not env.answered and not book.detaching:
            env.abandon()
    raise RequestTimeout(f"{provider.value} did not answer {type(msg).__name__} within {timeout:g}s",
                         hint="See `bridge_status` for the actor's state.")


async def _run_job(ctx: ActorContext[JobsRequest], book: JobBook, job: Job,
                   asks: dict[ProviderName, Ask]) -> None:
    def sink(provider: ProviderName) -> Callable[[Progress], None]:
        def put(item: Progress) -> None:
            if isinstance(item, AskProgress):
                changed = job.phase.get(provider) != item.phase
                job.phase[provider] = item.phase
                if item.url and job.urls.get(provider) != item.url:
                    job.urls[provider] = item.url
                    changed = True
                if item.text:
                    job.partial[provider] = item.text
                book.mark(job, partial_only=not changed)

        return put

    async def one(provider: ProviderName, ask: Ask) -> None:
        try:
            job.results[provider] = await _call(ctx, book, provider, ask, sink(provider))
            job.phase[provider] = JobPhase.DONE
        except BridgeError as exc:
            job.errors[provider] = exc.info()
            job.phase[provider] = JobPhase.FAILED
        book.mark(job)

    try:
        with job.scope:
            async with trio.open_nursery() as nursery:
                for p, ask in asks.items():
                    nursery.start_soon(one, p, ask)
    finally:
        left = book.detaching and not job.cancel_requested and len(job.results) + len(job.errors) < len(
            job.providers)
        if not left:
            # Cancelled by cancel_job, or by this actor's crash: say which, per unfinished ask.
            for p in job.providers:
                if p not in job.results and p not in job.errors:
                    exc: BridgeError = (AskCancelled(f"the {p.display} ask was cancelled by cancel_job")
                                        if job.cancel_requested else
                                        ActorCrashed("the jobs actor stopped while this ask ran; the ask was "
                                                     "stopped", hint="Ask again."))
                    job.errors[p] = exc.info()
                    job.phase[p] = JobPhase.CANCELLED if job.cancel_requested else JobPhase.FAILED
            job.settle()
        # On disk before anyone is told it ended. A stopping server leaves the asks going on in their pages, and
        # the record running: the next server reattaches them.
        with trio.CancelScope(shield=True), trio.move_on_after(SAVE_WAIT_S):
            await book.save_now(job)
        if left:
            log.info("job %s left running for the next server", job.job_id)
        else:
            job.done.set()
            log.info("job %s %s in %.1fs", job.job_id, job.status, job.view().elapsed_s)


def _reattach(book: JobBook, rec: JobRecord) -> tuple[Job, dict[ProviderName, Ask]]:
    """A job a stopped server was running, taken over: each unfinished ask with a known conversation is read there
    (`Reattach`, within the job's own deadline); one whose conversation never showed is `Interrupted` at once."""
    now = book.clock()
    job = Job.restore(rec, now)
    job.owner = book.me
    remaining = (rec.created + dt.timedelta(seconds=rec.timeout_s) - now).total_seconds()
    asks: dict[ProviderName, Ask] = {}
    for p in job.providers:
        if p in job.results or p in job.errors:
            continue
        url = job.urls.get(p)
        if url is None:
            job.errors[p] = Interrupted(
                f"the {p.display} ask was running when the server stopped, before its conversation's URL was known; "
                "it cannot be found again, and it was not sent again", url=None,
                partial=job.partial.get(p) or None,
                hint=f"Look for the question in {p.display}'s recent chats, or ask again.").info()
            job.phase[p] = JobPhase.FAILED
            continue
        job.phase[p] = JobPhase.QUEUED
        asks[p] = Reattach(REATTACHED_QUESTION, job.project, False, max(remaining, REATTACH_MIN_S),
                           f"{job.job_id}-{p.value}", url=url, digest=job.digest,
                           partial=job.partial.get(p, ""), client="reattach", save_to=job.save_to)
    log.info("job %s: reattaching %s", job.job_id, ", ".join(p.value for p in asks) or "nothing")
    return job, asks


async def run(
    ctx: ActorContext[JobsRequest], *, book: JobBook, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    # Jobs left running by a crashed predecessor were cancelled with its nursery (and marked there). Jobs a stopped
    # *server* left running are in their records: loaded and reattached once per book (once per server).
    async with trio.open_nursery() as nursery:
        orphans = await book.load()
        nursery.start_soon(book.saver)

        async def pruner() -> None:
            while True:
                await trio.sleep(PRUNE_EVERY_S)
                await book.prune()

        if book.files is not None:
            nursery.start_soon(pruner)
        for rec in orphans:
            files = book.files
            if files is None:
                break
            claimed = await book.io(files.claim, rec.job_id, book.me)
            if claimed is None:
                continue  # another server took it first
            job, asks = _reattach(book, claimed)
            book.add(job)
            if asks:
                nursery.start_soon(_run_job, ctx, book, job, asks)
            else:
                job.settle()
                await book.save_now(job)
                job.done.set()
        task_status.started()

        async def find(job_id: str) -> Job:
            try:
                return book.get(job_id)
            except JobNotFound:
                job = await book.read(job_id)
                if job is None:
                    raise
                if job.status is not JobStatus.RUNNING:
                    book.jobs[job.job_id] = job
                    book.jobs.move_to_end(job.job_id, last=False)
                return job

        async def handle(msg: JobsRequest) -> Reply[object]:
            match msg:
                case StartJob():
                    if not msg.providers:
                        raise InvalidArgument("a job needs at least one provider")
                    if len(book.running()) >= MAX_RUNNING:
                        raise InvalidArgument(f"{MAX_RUNNING} background jobs are already running",
                                              hint="Wait for some with get_answer, or cancel_job the ones you "
                                              "no longer need.")
                    job = Job(f"job-{secrets.token_hex(4)}", msg.tool, msg.providers,
                              book.clock(), trio.current_time(), project=msg.ask.project,
                              digest=question_digest(msg.ask.question), new_chat=msg.ask.new_chat,
                              timeout_s=msg.ask.timeout_s, owner=book.me, save_to=msg.ask.save_to)
                    book.add(job)
                    await book.save_now(job)
                    asks: dict[ProviderName, Ask] = {
                        p: attrs.evolve(msg.ask, ask_id=f"{job.job_id}-{p.value}") for p in msg.providers}
                    nursery.start_soon(_run_job, ctx, book, job, asks)
                    return msg.reply(job.view())
                case GetJob():
                    if not math.isfinite(msg.wait_s) or msg.wait_s < 0:
                        raise InvalidArgument(f"wait_s must be a finite number >= 0, got {msg.wait_s!r}")
                    job = await find(msg.job_id)
                    if job.status is JobStatus.RUNNING and msg.wait_s > 0 and job.job_id in book.jobs:
                        with trio.move_on_after(msg.wait_s):
                            await job.done.wait()
                    return msg.reply(job.view())
                case ListJobs():
                    jobs = list(reversed(book.jobs.values()))
                    running = [j for j in jobs if j.status is JobStatus.RUNNING]
                    recent = [j for j in jobs if j.status is not JobStatus.RUNNING][: max(0, msg.limit)]
                    return msg.reply(tuple(j.view() for j in running + recent))
                case CancelJob():
                    job = await find(msg.job_id)
                    if job.status is JobStatus.RUNNING and job.job_id in book.jobs:
                        job.cancel_requested = True
                        job.scope.cancel()
                        with trio.move_on_after(CANCEL_WAIT_S):
                            await job.done.wait()
                    return msg.reply(job.view())
                case TagJob():
                    job = await find(msg.job_id)
                    job.task = msg.task
                    book.mark(job)
                    return msg.reply(None)
                case FindTask():
                    for j in book.jobs.values():
                        if j.task is not None and j.task.task_id == msg.task_id:
                            return msg.reply(TaskFound(j.task, j.view()))
                    return msg.reply(None)
                case _:
                    assert_never(msg)

        async for env in ctx.messages():
            if isinstance(env.message, GetJob | CancelJob):
                ctx.answer_soon(nursery, env, handle)  # they wait: never block the inbox
            else:
                await ctx.answer(env, handle)
        # A graceful stop (the server is stopping): running asks stay in their pages for the next server.
        book.detaching = True
        nursery.cancel_scope.cancel()
        with trio.CancelScope(shield=True), trio.move_on_after(SAVE_WAIT_S):
            await book.flush()
