"""Background asks: get_answer, list_jobs, cancel_job."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ...protocol.jobs import JOBS, CancelJob, GetJob, JobStatus, ListJobs
from ..deps import FrontDeps, ToolCall, dumps
from ..toolkit import Annotations, Args, Result, Tool
from .render import JobList, JobOut, job_result, job_structured

MAX_WAIT_S = 600
JobId = Annotated[str, Field(min_length=1, max_length=64,
                             description="The job id an ask with background: true returned.")]


class GetAnswerArgs(Args):
    job_id: JobId
    wait_s: Annotated[float, Field(ge=0, le=MAX_WAIT_S, description="How long to wait for the job to finish "
                                   "(0 = just look).")] = 30


class ListJobsArgs(Args):
    limit: Annotated[int, Field(ge=0, le=100, description="How many finished jobs to include.")] = 20


class CancelJobArgs(Args):
    job_id: JobId


async def get_answer(deps: FrontDeps, call: ToolCall, args: GetAnswerArgs) -> Result:
    view = await deps.ctx.ref(JOBS).call(GetJob(args.job_id, args.wait_s), timeout=args.wait_s + 10)
    return job_result(view)


async def list_jobs(deps: FrontDeps, call: ToolCall, args: ListJobsArgs) -> Result:
    views = await deps.ctx.ref(JOBS).call(ListJobs(args.limit), timeout=10)
    rows = [v.row() for v in views]
    text = dumps(rows) if rows else "No background jobs on this server yet."
    return Result(text=text, structured={"jobs": rows})


async def cancel_job(deps: FrontDeps, call: ToolCall, args: CancelJobArgs) -> Result:
    view = await deps.ctx.ref(JOBS).call(CancelJob(args.job_id), timeout=30)
    if view.status is JobStatus.RUNNING:
        text = f"Job {view.job_id}: cancel requested, still stopping."
    else:
        text = f"Job {view.job_id} is {view.status.value}."
    return Result(text=text, structured=job_structured(view))


TOOLS = (
    Tool("get_answer",
         "Get the result of a background ask (started with background: true). Waits up to wait_s seconds for it to "
         "finish, then returns the answer, or the partial answer so far with status running, or the typed error. "
         "Call it again to keep waiting.",
         GetAnswerArgs, get_answer, Annotations(read_only=True, idempotent=True), output=JobOut,
         title="Get a background answer"),
    Tool("list_jobs",
         "List this server's background asks: every running one and the most recent finished ones, with status "
         "and progress phase. Jobs are kept across server restarts (7 days by default).",
         ListJobsArgs, list_jobs, Annotations(read_only=True, idempotent=True), output=JobList,
         title="List background jobs"),
    Tool("cancel_job",
         "Cancel a running background ask: clicks Stop in each site's page and marks the job cancelled.",
         CancelJobArgs, cancel_job, Annotations(read_only=False, destructive=True, idempotent=True), output=JobOut,
         title="Cancel a background job"),
)
