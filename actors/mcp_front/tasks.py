"""MCP tasks for the tools that run as background jobs (the asks), backed by the jobs actor.

A task is a job of the jobs actor seen through MCP's task protocol: the job does the work (it outlives the call,
queues behind other asks, clicks Stop when cancelled); the task adds an unguessable id, a time to live and the
protocol's status words. Two wire forms, one table:

- **2025-11-25** (the ``initialize`` era): the client augments ``tools/call`` with ``params.task``; we answer at once
  with ``{"task": Task}``, then serve ``tasks/get`` (status, the partial answer in ``statusMessage``),
  ``tasks/result`` (blocks until the task ends, then exactly what the tool call would have returned),
  ``tasks/cancel`` (Stop is clicked; a task that has ended cannot be cancelled: -32602) and ``tasks/list``. A tool
  result with ``isError`` makes the task ``failed``. Progress notifications keep flowing on the call's
  ``progressToken`` for the task's whole life, tagged with the related task.
- **2026-07-28** (the tasks extension ``io.modelcontextprotocol/tasks``): when a request's client capabilities name
  the extension, an ask returns ``resultType: "task"`` at once; ``tasks/get`` inlines the final result when the task
  has ``completed`` (a tool error is still ``completed``: ``failed`` is only for JSON-RPC errors); ``tasks/cancel``
  and ``tasks/update`` are acknowledged with an empty result (we never ask for input). Progress notifications are
  not part of this form: ``statusMessage`` carries the partial answer.

This module knows no SDK: it speaks plain JSON-shaped dicts, and `TaskError` for the JSON-RPC errors, which the
front turns into the SDK's. One server process serves one stdio client, so the table is that client's: task ids
are still 128-bit random, as the specification asks of a server that cannot bind tasks to an identity.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from supervisor.errors import BridgeError, JobNotFound
from supervisor.progress import HEARTBEAT_S, heartbeat

from ..protocol.jobs import JOBS, CancelJob, FindTask, GetJob, JobStatus, JobView, TagJob, TaskRef
from .deps import FrontDeps, ToolCall
from .toolkit import Args, Result, Tool
from .tools.render import job_as_ask, job_progress

log = logging.getLogger("ai_bridge.mcp_front")

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"
IMMEDIATE_RESPONSE = "io.modelcontextprotocol/model-immediate-response"
INVALID_PARAMS = -32602
MISSING_CAPABILITY = -32021
POLL_INTERVAL_MS = 1000  # answers form over seconds; the partial text is worth a look about once a second
DEFAULT_TTL_MS = 3_600_000
MIN_TTL_MS = 60_000  # a shorter ttl would lose the answer before a client polling once a second could read it
MAX_TTL_MS = 86_400_000  # a task (and its answer) is kept at most a day, and never beyond the server's life
KEEP = 100  # tasks remembered, like the jobs actor's finished jobs
PROGRESS_POLL_S = 0.5
RESULT_WAIT_S = 60.0  # one GetJob wait inside a blocking tasks/result; repeated until the task ends
TERMINAL = ("completed", "failed", "cancelled")


class TaskError(Exception):
    """A JSON-RPC error for a task request."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def missing_capability() -> TaskError:
    return TaskError(MISSING_CAPABILITY, "Missing required client capability",
                     {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})


def _iso(t: dt.datetime) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _now() -> str:
    return _iso(dt.datetime.now(dt.UTC))


def call_result(result: Result) -> dict[str, Any]:
    """A `Result` as the wire form of a ``CallToolResult``."""
    content: list[dict[str, Any]] = [{"type": "text", "text": result.text}]
    content += [{"type": "image", "data": img, "mimeType": "image/png"} for img in result.images]
    content += [link.as_json() for link in result.links]
    out: dict[str, Any] = {"content": content, "isError": result.is_error}
    if result.structured is not None:
        out["structuredContent"] = result.structured
    return out


ProgressSender = Callable[[str, int, str], Awaitable[None]]  # task id, step, message


@attrs.define(eq=False)
class TaskRecord:
    task_id: str
    tool: str
    modern: bool
    created_at: str
    expires: float  # trio clock
    ttl_ms: int
    job_id: str | None = None
    done_early: Result | None = None  # the call failed before a job started (bad arguments, too many jobs)
    cancelled: bool = False
    updated_at: str = ""
    message: str | None = None
    # The MCP session that made it (weakly; None for one restored after a restart): tasks/list shows a client its
    # own tasks only, when several share the server over HTTP. An id is a capability (128 random bits) either way.
    owner: Any = None


@attrs.frozen
class TaskState:
    status: str
    message: str | None
    result: Result | None  # once the task has ended


class TaskTable:
    """This connection's tasks. `nursery` runs progress pumps and Stop clicks beyond the request that caused them."""

    def __init__(self, deps: FrontDeps, nursery: trio.Nursery) -> None:
        self._deps = deps
        self._nursery = nursery
        self._tasks: OrderedDict[str, TaskRecord] = OrderedDict()
        self._seen: set[str] = set()  # ids this table issued or restored: one that expired here stays expired

    # --- creation --------------------------------------------------------------------------------------------------

    async def create(self, tool: Tool, raw_args: dict[str, Any], call: ToolCall, *, modern: bool,
                     ttl_ms: int | None = None, progress: ProgressSender | None = None) -> dict[str, Any]:
        """Start `tool` as a job and return the ``CreateTaskResult`` (wire form). A call that fails before its job
        starts still makes a task, already ended, that carries the tool error (a 2025-11-25 client asked for a
        task and must get one)."""
        assert tool.start_job is not None
        self._expire()
        ttl = DEFAULT_TTL_MS if ttl_ms is None else max(MIN_TTL_MS, min(int(ttl_ms), MAX_TTL_MS))
        now = _now()
        session = call.session()
        rec = TaskRecord(secrets.token_urlsafe(16), tool.name, modern, now, trio.current_time() + ttl / 1000, ttl,
                         updated_at=now, owner=None if session is None else weakref.ref(session))
        try:
            args: Args = tool.parse(raw_args)
            view = await tool.start_job(self._deps, call, args)
        except BridgeError as exc:
            log.info("task for %s failed at once: %s", tool.name, exc.code)
            rec.done_early = Result.error(exc.info())
        else:
            rec.job_id = view.job_id
            rec.created_at = rec.updated_at = view.created_at
            try:  # kept in the job's record: the task is known to the next server too
                await self._deps.ctx.ref(JOBS).call(TagJob(view.job_id, TaskRef(rec.task_id, modern, ttl,
                                                                               rec.created_at)), timeout=10)
            except BridgeError as exc:
                log.info("task %s: its job's record does not name it (%s)", rec.task_id[:8], exc.code)
            if progress is not None:
                self._nursery.start_soon(self._pump, rec, progress)
        self._tasks[rec.task_id] = rec
        self._seen.add(rec.task_id)
        while len(self._tasks) > KEEP:
            self._tasks.popitem(last=False)
        log.info("task %s: %s as job %s", rec.task_id[:8], tool.name, rec.job_id)
        task = self._task(rec, await self._state(rec))
        if modern:
            return {"resultType": "task", **task}
        return {"task": task, "_meta": {IMMEDIATE_RESPONSE: f"Started {tool.name} as task {rec.task_id}; the "
                                        "answer arrives when the task completes."}}

    # --- the requests ----------------------------------------------------------------------------------------------

    async def get(self, task_id: str) -> dict[str, Any]:
        rec = await self._record(task_id)
        state = await self._state(rec)
        task = self._task(rec, state)
        if rec.modern and state.status == "completed" and state.result is not None:
            task["result"] = call_result(state.result)
        return task

    async def result(self, task_id: str) -> dict[str, Any]:
        """2025-11-25 ``tasks/result``: block until the task ends, then return what the call would have."""
        rec = await self._record(task_id)
        state = await self._state(rec, wait_s=RESULT_WAIT_S)
        while state.result is None:  # still running (or cancelled and still stopping): wait for its job
            state = await self._state(rec, wait_s=RESULT_WAIT_S)
        return {**call_result(state.result), "_meta": {RELATED_TASK: {"taskId": rec.task_id}}}

    async def cancel(self, task_id: str) -> dict[str, Any]:
        rec = await self._record(task_id)
        state = await self._state(rec)
        if state.status in TERMINAL:
            if rec.modern:
                return {}  # cancellation is cooperative: the task has ended already
            raise TaskError(INVALID_PARAMS, f"Cannot cancel task: already in terminal status '{state.status}'")
        rec.cancelled = True
        rec.updated_at = _now()
        rec.message = "Cancelled by the client; Stop was clicked in the page."
        if rec.job_id is not None:
            self._nursery.start_soon(self._stop, rec.job_id)
        return {} if rec.modern else self._task(rec, await self._state(rec))

    async def update(self, task_id: str) -> dict[str, Any]:
        await self._record(task_id)  # we never ask for input: there is nothing outstanding to answer
        return {}

    async def list_tasks(self, cursor: str | None, session: Any = None) -> dict[str, Any]:
        """2025-11-25 ``tasks/list``: the tasks of `session` (and those restored after a restart, which have none)."""
        if cursor is not None:
            raise TaskError(INVALID_PARAMS, "Invalid cursor: this server lists every task on one page")
        self._expire()
        records = [rec for rec in reversed(self._tasks.values())
                   if not rec.modern and (rec.owner is None or rec.owner() is session)]
        return {"tasks": [self._task(rec, await self._state(rec)) for rec in records]}

    # --- internals -------------------------------------------------------------------------------------------------

    def _expire(self) -> None:
        now = trio.current_time()
        for task_id in [t for t, rec in self._tasks.items() if rec.expires < now]:
            del self._tasks[task_id]

    async def _record(self, task_id: str) -> TaskRecord:
        self._expire()
        rec = self._tasks.get(task_id) or await self._restore(task_id)
        if rec is None:
            raise TaskError(INVALID_PARAMS, "Failed to retrieve task: Task not found (or expired)")
        return rec

    async def _restore(self, task_id: str) -> TaskRecord | None:
        """A task issued before a restart, from its job's record (within its ttl)."""
        if len(task_id) > 64 or task_id in self._seen:
            return None
        try:
            found = await self._deps.ctx.ref(JOBS).call(FindTask(task_id), timeout=10)
        except BridgeError:
            return None
        if found is None:
            return None
        ref = found.task
        try:
            created = dt.datetime.fromisoformat(ref.created_at.replace("Z", "+00:00"))
        except ValueError:
            return None
        left_s = ref.ttl_ms / 1000 - (dt.datetime.now(dt.UTC) - created).total_seconds()
        if left_s <= 0:
            return None
        rec = TaskRecord(ref.task_id, found.job.tool, ref.modern, ref.created_at, trio.current_time() + left_s,
                         ref.ttl_ms, job_id=found.job.job_id, updated_at=ref.created_at)
        self._tasks[rec.task_id] = rec
        self._seen.add(rec.task_id)
        log.info("task %s: known from job %s's record (issued before a restart)", task_id[:8], rec.job_id)
        return rec

    async def _view(self, rec: TaskRecord, wait_s: float = 0.0) -> JobView:
        assert rec.job_id is not None
        try:
            return await self._deps.ctx.ref(JOBS).call(GetJob(rec.job_id, wait_s), timeout=wait_s + 10)
        except JobNotFound:
            raise TaskError(INVALID_PARAMS, "Failed to retrieve task: Task has expired") from None

    async def _state(self, rec: TaskRecord, wait_s: float = 0.0) -> TaskState:
        if rec.done_early is not None:
            failed = rec.done_early.is_error and not rec.modern
            return TaskState("failed" if failed else "completed", rec.done_early.text, rec.done_early)
        view = await self._view(rec, wait_s)
        if view.status is JobStatus.RUNNING:
            if rec.cancelled:
                return TaskState("cancelled", rec.message, None)
            return TaskState("working", job_progress(view) or "Queued.", None)
        result = job_as_ask(view)
        if rec.cancelled or view.status is JobStatus.CANCELLED:
            return TaskState("cancelled", rec.message or "Cancelled (cancel_job).", result)
        if result.is_error and not rec.modern:
            return TaskState("failed", result.text[:500], result)  # 2025-11-25: a tool error fails the task
        return TaskState("completed", None, result)

    def _task(self, rec: TaskRecord, state: TaskState) -> dict[str, Any]:
        if state.message != rec.message and not (rec.cancelled and state.status == "cancelled"):
            rec.message = state.message
            rec.updated_at = _now()
        task: dict[str, Any] = {"taskId": rec.task_id, "status": state.status, "createdAt": rec.created_at,
                                "lastUpdatedAt": rec.updated_at}
        if rec.message:
            task["statusMessage"] = rec.message
        if rec.modern:
            task.update(ttlMs=rec.ttl_ms, pollIntervalMs=POLL_INTERVAL_MS)
        else:
            task.update(ttl=rec.ttl_ms, pollInterval=POLL_INTERVAL_MS)
        return task

    async def _pump(self, rec: TaskRecord, progress: ProgressSender) -> None:
        """2025-11-25: progress notifications with the partial answer while the task's job runs."""
        step, last, sent_at = 0, "", trio.current_time()
        try:
            while not rec.cancelled:
                view = await self._view(rec, PROGRESS_POLL_S)
                if view.status is not JobStatus.RUNNING:
                    return
                line = job_progress(view)
                now = trio.current_time()
                if line and line != last:
                    step, last, sent_at = step + 1, line, now
                    await progress(rec.task_id, step, line)
                elif now - sent_at >= HEARTBEAT_S:  # a long think shows nothing new: say it is still going
                    step, sent_at = step + 1, now
                    await progress(rec.task_id, step, heartbeat(last or "working", view.elapsed_s))
        except (TaskError, BridgeError) as exc:
            log.debug("progress of task %s ended: %s", rec.task_id[:8], exc)
        except Exception as exc:  # the client went away: the task goes on, its progress does not
            log.debug("progress of task %s stopped: %s", rec.task_id[:8], exc)

    async def _stop(self, job_id: str) -> None:
        try:
            await self._deps.ctx.ref(JOBS).call(CancelJob(job_id), timeout=30)
        except BridgeError as exc:
            log.info("cancelling job %s: %s", job_id, exc.code)
