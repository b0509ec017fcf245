"""The official Python SDK client, set up as third-party clients use it against `ai-bridge serve`.

- `tasks_extension`: the client side of the 2026-07-28 tasks extension (``io.modelcontextprotocol/tasks``) on the
  SDK's own extension hooks (`ClientExtension`, `ResultClaim`): a ``resultType: "task"`` answer to ``tools/call`` is
  resolved by polling ``tasks/get`` at the server's ``pollIntervalMs``, so ``Client.call_tool`` returns the final
  result (and validates it against the tool's ``outputSchema``, as for any call).
- `open_client`: ``Client`` over stdio on the real server process, in the era asked for.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
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
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

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


@asynccontextmanager
async def open_http_server(args: list[str], env: dict[str, str], tmp: Path) -> AsyncIterator[HttpServer]:
    """``python -m supervisor.app.cli ARGS --http-port PORT`` (a free port), listening, with the state dir's token
    (`ai-bridge pair --mcp-token`); SIGTERM at the end, which must end it with exit code 0 and nothing on stdout."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    cli = [sys.executable, "-m", "supervisor.app.cli"]
    token = subprocess.run([*cli, "pair", "--mcp-token"], env=env, cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.strip()
    with open(tmp / "http-stdout", "wb") as out, open(tmp / "http-stderr", "wb") as err:
        proc = subprocess.Popen([*cli, *args, "--http-port", str(port)], env=env, cwd=REPO,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    server = HttpServer(port, token, tmp / "http-stderr")
    try:
        with trio.fail_after(60):
            while not await trio.to_thread.run_sync(server.listening):
                assert proc.poll() is None, server.stderr()[-3000:]
                await trio.sleep(0.05)
        yield server
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await trio.to_thread.run_sync(lambda: proc.wait(timeout=30))
    assert code == 0, server.stderr()[-3000:]
    assert (tmp / "http-stdout").read_bytes() == b""  # stdout carries MCP only, and over HTTP there is none
    assert token not in server.stderr()


@attrs.frozen
class HttpServer:
    port: int
    token: str
    stderr_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def post(self, headers: dict[str, str]) -> int:
        """The status of a bare POST /mcp with these headers (an initialize it would take, were it let in)."""
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("POST", "/mcp", body, {"Content-Type": "application/json",
                                                "Accept": "application/json, text/event-stream", **headers})
            return conn.getresponse().status
        finally:
            conn.close()

    def listening(self) -> bool:
        try:
            self.post({})
        except OSError:
            return False
        return True


@asynccontextmanager
async def open_http_client(server: HttpServer, *, mode: str = "auto", **kw: Any) -> AsyncIterator[Client]:
    """The SDK's `Client` over Streamable HTTP to `server`, with its token."""
    http_client = create_mcp_http_client(headers=server.auth)
    async with http_client, streamable_http_client(server.url, http_client=http_client) as streams, \
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
