"""jobs: background asks that outlive the MCP call that started them, and the server (a record per job in
``<state-dir>/jobs/``)."""

from __future__ import annotations

import enum

import attrs

from supervisor.errors import ErrorInfo
from supervisor.otp import Address, Request

from .common import ProviderName
from .provider import Ask, AskPhase, AskResult


class JobStatus(enum.StrEnum):
    RUNNING = "running"
    DONE = "done"  # every ask answered, or some (a two-provider job returns what it has, like the foreground tool)
    FAILED = "failed"
    CANCELLED = "cancelled"


class JobPhase(enum.StrEnum):
    """A provider's part of a job: its ask's progress phase while it runs, then how it ended."""

    QUEUED = "queued"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


@attrs.frozen
class JobView:
    job_id: str
    tool: str
    providers: tuple[ProviderName, ...]
    status: JobStatus
    created_at: str  # ISO 8601, UTC
    finished_at: str | None
    elapsed_s: float
    results: dict[ProviderName, AskResult]
    errors: dict[ProviderName, ErrorInfo]
    partial: dict[ProviderName, str]  # the answer text so far (while running)
    phase: dict[ProviderName, AskPhase | JobPhase]
    urls: dict[ProviderName, str] = attrs.field(factory=dict)  # each ask's conversation, once known

    def row(self) -> dict[str, object]:
        """One line of a job listing (list_jobs, bridge_status, the console)."""
        return {"jobId": self.job_id, "tool": self.tool, "status": self.status.value, "createdAt": self.created_at,
                "elapsedS": self.elapsed_s, "phase": {p.value: ph.value for p, ph in self.phase.items()}}


@attrs.frozen
class StartJob(Request[JobView]):
    """→ the new job at once. The asks (one per provider, in parallel) run inside the jobs actor until they finish or
    are cancelled. The job's record is kept in the state dir as it changes: a server that stops leaves its running
    asks to the next one, which reattaches them (never sending a question again)."""

    tool: str
    providers: tuple[ProviderName, ...]
    ask: Ask


@attrs.frozen
class GetJob(Request[JobView]):
    """→ the job once it has ended or `wait_s` has passed, whichever is first. `JobNotFound` if unknown."""

    job_id: str
    wait_s: float = 0.0


@attrs.frozen
class ListJobs(Request[tuple[JobView, ...]]):
    """→ newest first: every running job plus up to `limit` recent ones."""

    limit: int = 20


@attrs.frozen
class CancelJob(Request[JobView]):
    """→ the job after its asks were stopped (Stop clicked in the page). `JobNotFound` if unknown."""

    job_id: str


@attrs.frozen
class TaskRef:
    """The MCP task a job runs as (mcp_front/tasks.py): kept in the job's record, so `tasks/get` and `tasks/result`
    work for its id after a restart."""

    task_id: str
    modern: bool  # the 2026-07-28 tasks extension (else the 2025-11-25 form)
    ttl_ms: int
    created_at: str  # ISO 8601, UTC


@attrs.frozen
class TagJob(Request[None]):
    """Record that `job_id` runs as the MCP task `task`. `JobNotFound` if unknown."""

    job_id: str
    task: TaskRef


@attrs.frozen
class TaskFound:
    task: TaskRef
    job: JobView


@attrs.frozen
class FindTask(Request[TaskFound | None]):
    """→ the task with this id and its job, from the job records (a task issued before a restart), or None."""

    task_id: str


JobsRequest = StartJob | GetJob | ListJobs | CancelJob | TagJob | FindTask
JOBS = Address[JobsRequest]("jobs", JobsRequest)
