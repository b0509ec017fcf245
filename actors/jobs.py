"""Jobs actor: background asks that outlive the MCP call that started them.

An ask tool called with ``background: true`` sends `StartJob` and returns the job id at once; the asks then run
here, in this actor's nursery, calling the provider actors like any foreground ask (so they queue behind other asks
on the same tab and get the same retries). `GetJob` waits up to ``wait_s`` in a task of its own, so a long wait
never blocks the inbox. Progress items keep each provider's partial answer for ``get_answer``.

The job table (`JobBook`) is owned by the supervisor tree (built in ``supervisor/app.py``), like the mailboxes: a
crash of this actor does not forget finished jobs; jobs that were running are marked failed with the reason (their
asks were cancelled with this actor's nursery, which clicks Stop in the page). Jobs end with the server.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import secrets
from collections import OrderedDict
from collections.abc import Callable
from typing import assert_never

import attrs
import trio

from supervisor.errors import ActorCrashed, AskCancelled, BridgeError, ErrorInfo, InvalidArgument, JobNotFound
from supervisor.otp import ActorContext, Progress, Reply

from .protocol.common import ProviderName
from .protocol.jobs import CancelJob, GetJob, JobPhase, JobsRequest, JobStatus, JobView, ListJobs, StartJob
from .protocol.provider import AskPhase, AskProgress, AskResult, provider_address

log = logging.getLogger("ai_bridge.jobs")

KEEP_FINISHED = 100  # finished jobs remembered for get_answer / list_jobs
MAX_RUNNING = 32  # a runaway agent must not queue unbounded work on the user's browser
CANCEL_WAIT_S = 10.0


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

    def view(self) -> JobView:
        end = self.ended_at if self.ended_at is not None else trio.current_time()
        finished = self.created + dt.timedelta(seconds=end - self.started_at) if self.ended_at is not None else None
        return JobView(
            job_id=self.job_id, tool=self.tool, providers=self.providers, status=self.status,
            created_at=_iso(self.created), finished_at=_iso(finished) if finished else None,
            elapsed_s=round(end - self.started_at, 3), results=dict(self.results), errors=dict(self.errors),
            partial=dict(self.partial) if self.status is JobStatus.RUNNING else {}, phase=dict(self.phase),
        )

    def finish(self) -> None:
        if self.results:
            self.status = JobStatus.DONE  # a two-provider job with one answer is done, as the foreground tool does
        elif self.cancel_requested:
            self.status = JobStatus.CANCELLED
        else:
            self.status = JobStatus.FAILED
        self.ended_at = trio.current_time()
        self.done.set()


class JobBook:
    """Every job this server ran, newest last; outlives restarts of the jobs actor."""

    def __init__(self) -> None:
        self.jobs: OrderedDict[str, Job] = OrderedDict()

    def get(self, job_id: str) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            raise JobNotFound(f"no background job {job_id!r} on this server",
                              hint="list_jobs shows the known ids; jobs end when the server stops "
                              "(finished answers stay in the history file).")
        return job

    def running(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.status is JobStatus.RUNNING]

    def add(self, job: Job) -> None:
        self.jobs[job.job_id] = job
        finished = [j for j in self.jobs.values() if j.status is not JobStatus.RUNNING]
        for old in finished[: max(0, len(finished) - KEEP_FINISHED)]:
            del self.jobs[old.job_id]


async def _run_job(ctx: ActorContext[JobsRequest], job: Job, msg: StartJob) -> None:
    def sink(provider: ProviderName) -> Callable[[Progress], None]:
        def put(item: Progress) -> None:
            if isinstance(item, AskProgress):
                job.phase[provider] = item.phase
                if item.text:
                    job.partial[provider] = item.text

        return put

    async def one(provider: ProviderName) -> None:
        ask = attrs.evolve(msg.ask, ask_id=f"{job.job_id}-{provider.value}")
        try:
            job.results[provider] = await ctx.ref(provider_address(provider)).call(
                ask, timeout=ask.call_timeout_s, on_progress=sink(provider))
            job.phase[provider] = JobPhase.DONE
        except BridgeError as exc:
            job.errors[provider] = exc.info()
            job.phase[provider] = JobPhase.FAILED

    try:
        with job.scope:
            async with trio.open_nursery() as nursery:
                for p in job.providers:
                    nursery.start_soon(one, p)
    finally:
        # Cancelled by cancel_job, or by this actor's end (server stop or crash): say which, per unfinished ask.
        for p in job.providers:
            if p not in job.results and p not in job.errors:
                exc: BridgeError = (AskCancelled(f"the {p.display} ask was cancelled by cancel_job")
                                    if job.cancel_requested else
                                    ActorCrashed("the jobs actor stopped while this ask ran; the ask was stopped",
                                                 hint="Ask again."))
                job.errors[p] = exc.info()
                job.phase[p] = JobPhase.CANCELLED if job.cancel_requested else JobPhase.FAILED
        job.finish()
        log.info("job %s %s in %.1fs", job.job_id, job.status, job.view().elapsed_s)


async def run(
    ctx: ActorContext[JobsRequest], *, book: JobBook, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    # Jobs left running by a crashed predecessor were cancelled with its nursery (and marked there); nothing here
    # is resumed, since a half-typed question cannot be resumed safely.
    async with trio.open_nursery() as nursery:
        task_status.started()

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
                              dt.datetime.now(dt.UTC), trio.current_time())
                    book.add(job)
                    nursery.start_soon(_run_job, ctx, job, msg)
                    return msg.reply(job.view())
                case GetJob():
                    if not math.isfinite(msg.wait_s) or msg.wait_s < 0:
                        raise InvalidArgument(f"wait_s must be a finite number >= 0, got {msg.wait_s!r}")
                    job = book.get(msg.job_id)
                    if job.status is JobStatus.RUNNING and msg.wait_s > 0:
                        with trio.move_on_after(msg.wait_s):
                            await job.done.wait()
                    return msg.reply(job.view())
                case ListJobs():
                    jobs = list(reversed(book.jobs.values()))
                    running = [j for j in jobs if j.status is JobStatus.RUNNING]
                    recent = [j for j in jobs if j.status is not JobStatus.RUNNING][: max(0, msg.limit)]
                    return msg.reply(tuple(j.view() for j in running + recent))
                case CancelJob():
                    job = book.get(msg.job_id)
                    if job.status is JobStatus.RUNNING:
                        job.cancel_requested = True
                        job.scope.cancel()
                        with trio.move_on_after(CANCEL_WAIT_S):
                            await job.done.wait()
                    return msg.reply(job.view())
                case _:
                    assert_never(msg)

        async for env in ctx.messages():
            if isinstance(env.message, GetJob | CancelJob):
                ctx.answer_soon(nursery, env, handle)  # they wait: never block the inbox
            else:
                await ctx.answer(env, handle)
        nursery.cancel_scope.cancel()
