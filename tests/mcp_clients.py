"""The official Python SDK client, set up as third-party clients use it against `ai-bridge serve`.

- `tasks_extension`: the client side of the 2026-07-28 tasks extension (``io.modelcontextprotocol/tasks``) on the
  SDK's own extension hooks (`ClientExtension`, `ResultClaim`): a ``resultType: "task"`` answer to ``tools/call`` is
  resolved by polling ``tasks/get`` at the server's ``pollIntervalMs``, so ``Client.call_tool`` returns the final
  result (and validates it against the tool's ``outputSchema``, as for any call).
- `open_client`: ``Client`` over stdio on the real server process, in the era asked for.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import attrs
import mcp_types as types
import trio
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.stdio import StdioServerParameters, stdio_client

from .conftest import REPO

TASKS = "io.modelcontextprotocol/tasks"


class CreateTask(types.Result):
    """The extension's ``CreateTaskResult`` (``resultType: "task"``)."""

    result_type: Literal["task"] = "task"  # type: ignore[assignment]
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class DetailedTask(types.Result):
    """``tasks/get``'s answer: the task, with the final result inlined once it has completed."""

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


async def get_task(session: Any, task_id: str) -> DetailedTask:
    req = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await session.send_request(req, DetailedTask)  # type: ignore[no-any-return]


async def cancel_task(session: Any, task_id: str) -> None:
    await session.send_request(types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id)),
                               types.EmptyResult)


@attrs.define
class TaskLog:
    """What the resolver saw: the task ids it created and every status poll (status, statusMessage)."""

    created: list[CreateTask] = attrs.field(factory=list)
    polls: list[tuple[str, str | None]] = attrs.field(factory=list)


def tasks_extension(log: TaskLog) -> ClientExtension:
    async def resolve(created: CreateTask, ctx: ClaimContext) -> types.CallToolResult:
        log.created.append(created)
        while True:
            task = await get_task(ctx.session, created.task_id)
            log.polls.append((task.status, task.status_message))
            if task.status == "completed":
                assert task.result is not None, task
                return types.CallToolResult.model_validate(task.result)
            if task.status in ("failed", "cancelled"):
                raise RuntimeError(f"task {task.task_id} ended {task.status}: {task.error or task.status_message}")
            await trio.sleep((task.poll_interval_ms or 1000) / 1000)

    class Tasks(ClientExtension):
        identifier = TASKS

        def claims(self) -> Sequence[ResultClaim[Any]]:
            return [ResultClaim(result_type="task", model=CreateTask, resolve=resolve)]

    return Tasks()


def server_env(tmp: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    # AI_BRIDGE_TOOLS: every tool listed, as most tests call them; test_tool_sets.py tests the default.
    env.update({"AI_BRIDGE_STATE_DIR": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "config"),
                "AI_BRIDGE_TOOLS": "all", "PYTHONUNBUFFERED": "1", **(extra or {})})
    return env


@asynccontextmanager
async def open_client(args: list[str], env: dict[str, str], *, mode: str = "auto", errlog: Any = None,
                      **kw: Any) -> AsyncIterator[Client]:
    """`Client` on ``python -m supervisor.app.cli ARGS`` (stdio), the server's stderr to `errlog`. mode: "auto"
    (the SDK's default: it probes server/discover, so a 2026-07-28 connection) or "legacy" (initialize,
    2025-11-25)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "supervisor.app.cli", *args], env=env,
                                   cwd=str(REPO))
    async with stdio_client(params, errlog=errlog or sys.stderr) as streams, \
            Client(_Streams(streams), mode=mode, **kw) as client:  # type: ignore[arg-type]
        yield client


class _Streams:
    """An open stream pair as the `Transport` that `Client` enters."""

    def __init__(self, streams: Any) -> None:
        self.streams = streams

    async def __aenter__(self) -> Any:
        return self.streams

    async def __aexit__(self, *exc: object) -> None:
        return None
