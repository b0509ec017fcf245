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
import secrets
from collections import OrderedDict
from typing import Any

import attrs
import trio

from supervisor.errors import ActorCrashed, AskCancelled, BridgeError, InvalidArgument, JobNotFound
from supervisor.runtime import ActorContext, Envelope

from .messages import AskProgress, AskResult, CancelJob, GetJob, JobView, ListJobs, StartJob

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
    providers: tuple[str, ...]
    created: dt.datetime
    started_at: float  # trio clock
    ended_at: float | None = None
    status: str = "running"
    results: dict[str, AskResult] = attrs.field(factory=dict)
    errors: dict[str, dict[str, str | None]] = attrs.field(factory=dict)
    partial: dict[str, str] = attrs.field(factory=dict)
    phase: dict[str, str] = attrs.field(factory=dict)
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
            partial=dict(self.partial) if self.status == "running" else {}, phase=dict(self.phase),
        )

    def finish(self) -> None:
        if self.results:
            self.status = "done"  # a two-provider job with one answer is done, as the foreground tool returns it
        elif self.cancel_requested:
            self.status = "cancelled"
        else:
            self.status = "failed"
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
        return [j for j in self.jobs.values() if j.status == "running"]

    def add(self, job: Job) -> None:
        self.jobs[job.job_id] = job
        finished = [j for j in self.jobs.values() if j.status != "running"]
        for old in finished[: max(0, len(finished) - KEEP_FINISHED)]:
            del self.jobs[old.job_id]


async def _run_job(ctx: ActorContext, job: Job, msg: StartJob) -> None:
    def sink(provider: str) -> Any:
        def put(item: Any) -> None:
            if isinstance(item, AskProgress):
                job.phase[provider] = item.phase
                if item.text:
                    job.partial[provider] = item.text

        return put

    async def one(provider: str) -> None:
        ask = attrs.evolve(msg.ask, ask_id=f"{job.job_id}-{provider}")
        try:
            job.results[provider] = await ctx.ref(provider).call(
                ask, timeout=ask.call_timeout_s, on_progress=sink(provider))
            job.phase[provider] = "done"
        except BridgeError as exc:
            job.errors[provider] = exc.as_dict()
            job.phase[provider] = "failed"

    try:
        with job.scope:
            async with trio.open_nursery() as nursery:
                for p in job.providers:
                    nursery.start_soon(one, p)
    finally:
        # Cancelled by cancel_job, or by this actor's end (server stop or crash): say which, per unfinished ask.
        for p in job.providers:
            if p not in job.results and p not in job.errors:
                exc: BridgeError = (AskCancelled(f"the {p} ask was cancelled by cancel_job")
                                    if job.cancel_requested else
                                    ActorCrashed("the jobs actor stopped while this ask ran; the ask was stopped",
                                                 hint="Ask again."))
                job.errors[p] = exc.as_dict()
                job.phase[p] = "cancelled" if job.cancel_requested else "failed"
        job.finish()
        log.info("job %s %s in %.1fs", job.job_id, job.status, job.view().elapsed_s)


async def run(
    ctx: ActorContext, *, book: JobBook, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    # Jobs left running by a crashed predecessor were cancelled with its nursery (and marked there); nothing here
    # is resumed, since a half-typed question cannot be resumed safely.
    async with trio.open_nursery() as nursery:
        task_status.started()

        async def wait_and_reply(env: Envelope[Any], job: Job, wait_s: float) -> None:
            with trio.move_on_after(wait_s):
                await job.done.wait()
            if not env.answered:
                env.reply(job.view())
            ctx.inbox.done(env)

        async def cancel_and_reply(env: Envelope[Any], job: Job) -> None:
            if job.status == "running":
                job.cancel_requested = True
                job.scope.cancel()
                with trio.move_on_after(CANCEL_WAIT_S):
                    await job.done.wait()
            if not env.answered:
                env.reply(job.view())
            ctx.inbox.done(env)

        async for env in ctx.messages():
            msg = env.message
            try:
                if isinstance(msg, StartJob):
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
                    env.reply(job.view())
                elif isinstance(msg, GetJob):
                    job = book.get(msg.job_id)
                    if job.status != "running" or msg.wait_s <= 0:
                        env.reply(job.view())
                    else:
                        nursery.start_soon(wait_and_reply, env, job, msg.wait_s)
                        continue  # answered by that task
                elif isinstance(msg, ListJobs):
                    jobs = list(reversed(book.jobs.values()))
                    running = [j for j in jobs if j.status == "running"]
                    recent = [j for j in jobs if j.status != "running"][: max(0, msg.limit)]
                    env.reply(tuple(j.view() for j in running + recent))
                elif isinstance(msg, CancelJob):
                    nursery.start_soon(cancel_and_reply, env, book.get(msg.job_id))
                    continue
                else:
                    raise InvalidArgument(f"jobs does not accept {type(msg).__name__}")
            except BridgeError as exc:
                env.fail(exc)
            ctx.inbox.done(env)
        nursery.cancel_scope.cancel()
