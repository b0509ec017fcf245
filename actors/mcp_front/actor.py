"""MCP front actor: the official SDK's low-level server on stdio, forwarding tool calls to actors as messages.

The SDK is imported here (and only when this actor starts): it costs over a second, and commands such as
``ai-bridge extension-path`` must not pay for it.

Stdin is read by our own line iterator over a dup of fd 0 in an abandonable worker thread: the SDK's default reader
blocks in a thread that cannot be abandoned, so cancelling the server while stdin is still open would hang
(NOTES.md, "stdin pitfall").
"""

from __future__ import annotations

import io
import json
import logging
import os
import platform
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import trio

import supervisor
from supervisor.config import Config
from supervisor.errors import BridgeError, InvalidArgument
from supervisor.runtime import ActorContext
from supervisor.supervision import Runtime

from . import tools

log = logging.getLogger("ai_bridge.mcp_front")


class StdinLines:
    """Async iterator of text lines from a private dup of fd 0; every read can be abandoned on cancel."""

    def __init__(self, fd: int = 0) -> None:
        self._file = io.open(os.dup(fd), "rb", buffering=65536, closefd=True)  # noqa: UP020 - explicit fd open

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        line = await trio.to_thread.run_sync(self._file.readline, abandon_on_cancel=True)
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Replay:
    """Lines already read (the early-answered initialize) first, then the rest of stdin."""

    def __init__(self, first: list[str], rest: StdinLines) -> None:
        self._first = list(first)
        self._rest = rest

    def __aiter__(self) -> _Replay:
        return self

    async def __anext__(self) -> str:
        if self._first:
            return self._first.pop(0)
        return await self._rest.__anext__()


class StdoutWriter:
    """The SDK's stdout: a private dup of fd 1, one lock for every line, and the SDK's own reply to an
    initialize we already answered dropped (compared with ours first: they must agree)."""

    def __init__(self, fd: int = 1) -> None:
        self._stream = trio.lowlevel.FdStream(os.dup(fd))
        self._lock = trio.Lock()
        self._buf = ""
        self.suppress: dict[Any, dict[str, Any]] = {}  # JSON-RPC id -> the reply we sent early

    async def write(self, text: str) -> None:
        self._buf += text
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            await self._emit(line)

    async def flush(self) -> None:
        pass  # every complete line is written at once

    async def _emit(self, line: str) -> None:
        if self.suppress:
            try:
                msg = json.loads(line)
            except ValueError:
                msg = None
            if isinstance(msg, dict) and "method" not in msg and msg.get("id") in self.suppress:
                ours = self.suppress.pop(msg["id"])
                if msg.get("result") != ours.get("result"):
                    log.warning("early initialize reply differed from the SDK's: ours %s, SDK %s",
                                ours.get("result"), msg.get("result"))
                return
        await self.send_line(line)

    async def send_line(self, line: str) -> None:
        async with self._lock:
            await self._stream.send_all((line + "\n").encode("utf-8"))


def _handshake_versions() -> tuple[str, ...]:
    """The SDK's own table of handshake protocol versions, read without importing the SDK (its import costs
    over a second and this is needed before it finishes)."""
    import importlib.util

    spec = importlib.util.find_spec("mcp_types")
    if spec is None or not spec.submodule_search_locations:
        return ()
    path = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    module_spec = importlib.util.spec_from_file_location("_ai_bridge_mcp_versions", path)
    if module_spec is None or module_spec.loader is None:
        return ()
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except (OSError, SyntaxError, ImportError):
        return ()
    return tuple(getattr(module, "HANDSHAKE_PROTOCOL_VERSIONS", ()))


def early_initialize_reply(line: str, versions: tuple[str, ...], instructions: str) -> dict[str, Any] | None:
    """The reply to a plain ``initialize`` whose protocol version the SDK supports — exactly what the SDK answers
    (tools capability, server info, instructions, the requested version echoed as MCP negotiation requires).
    None for anything else: then the SDK answers when it is loaded."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("method") != "initialize" or "id" not in msg:
        return None
    version = (msg.get("params") or {}).get("protocolVersion")
    if version not in versions:
        return None
    return {"jsonrpc": "2.0", "id": msg["id"], "result": {
        "capabilities": {"tools": {"listChanged": False}},
        "instructions": instructions,
        "protocolVersion": version,
        "serverInfo": {"name": "ai-bridge", "version": supervisor.__version__},
    }}


def _import_sdk() -> None:
    import mcp.server.lowlevel
    import mcp.server.stdio  # noqa: F401


@attrs.frozen
class FrontDeps:
    """What tool handlers may use: peers by name (through the registry), config, runtime introspection."""

    ctx: ActorContext
    config: Config
    runtime: Runtime
    project_of: Callable[[Any], Awaitable[str]]


async def run(
    ctx: ActorContext,
    *,
    config: Config,
    runtime: Runtime,
    on_exit: trio.Event,
    stdin_fd: int = 0,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    # Answer `initialize` while the SDK is still importing (it costs over a second), then hand the same line to
    # the SDK so its session state is exactly as if it had answered; its own reply is dropped.
    stdin = StdinLines(stdin_fd)
    stdout = StdoutWriter()
    os.dup2(2, 1)  # stray writes to fd 1 would corrupt JSON-RPC: send them to stderr, as the SDK does
    task_status.started()
    replay: list[str] = []
    async with trio.open_nursery() as boot:

        async def early_init() -> None:
            try:
                line = await stdin.__anext__()
            except StopAsyncIteration:
                return
            replay.append(line)
            reply = early_initialize_reply(line, _handshake_versions(), tools.INSTRUCTIONS)
            if reply is not None:
                stdout.suppress[reply["id"]] = reply
                await stdout.send_line(json.dumps(reply, separators=(",", ":")))

        boot.start_soon(early_init)
        await trio.to_thread.run_sync(_import_sdk)

    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    roots_cache: dict[int, str] = {}

    async def project_of(mcp_ctx: Any) -> str:
        """The project name: --project, else the client's first root, else the working directory."""
        if config.project:
            return config.project
        session = mcp_ctx.session
        key = id(session)
        if key in roots_cache:
            return roots_cache[key]
        name = Path.cwd().name or "default"
        try:
            caps = session.client_capabilities
            if caps is not None and caps.roots is not None:
                with trio.move_on_after(2):
                    roots = await session.list_roots()
                    if roots.roots:
                        uri = str(roots.roots[0].uri)
                        name = Path(uri.removeprefix("file://")).name or name
        except Exception as exc:  # a client that advertises roots but fails to list them: use the cwd
            log.debug("list_roots failed: %s", exc)
        roots_cache[key] = name
        return name

    deps = FrontDeps(ctx=ctx, config=config, runtime=runtime, project_of=project_of)
    table = tools.build_table()

    async def on_list_tools(mcp_ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(
            tools=[types.Tool(name=t.name, description=t.description, input_schema=t.schema) for t in table.values()]
        )

    async def on_call_tool(mcp_ctx: Any, params: Any) -> Any:
        tool = table.get(params.name)
        if tool is None:
            return _error_result(types, InvalidArgument(
                f"unknown tool {params.name!r}", hint=f"Available: {', '.join(table)}."))
        args = dict(params.arguments or {})
        try:
            clean = tools.validate(tool, args)
            result = await tool.handler(deps, mcp_ctx, clean)
        except BridgeError as exc:
            log.info("tool %s failed: %s", params.name, exc.code)
            return _error_result(types, exc)
        except BaseExceptionGroup as group:
            # A handler's nursery wraps the actor's typed error; anything else is a bug and propagates.
            leaf = _single_leaf(group)
            if not isinstance(leaf, BridgeError):
                raise
            log.info("tool %s failed: %s", params.name, leaf.code)
            return _error_result(types, leaf)
        return _to_result(types, result)

    server = Server(
        "ai-bridge",
        version=supervisor.__version__,
        instructions=tools.INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    try:
        async with trio.open_nursery() as nursery:

            async def stop_on_request() -> None:
                await ctx.stop_requested.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(stop_on_request)
            async with stdio_server(stdin=_Replay(replay, stdin), stdout=stdout) as (  # type: ignore[arg-type]
                read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            log.info("MCP client closed stdin")
            nursery.cancel_scope.cancel()
    finally:
        on_exit.set()


def _single_leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _error_result(types: Any, exc: BridgeError) -> Any:
    text = f"[{exc.code}] {exc}"
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content={"error": exc.as_dict()},
        is_error=True,
    )


def _to_result(types: Any, result: tools.ToolResult) -> Any:
    content: list[Any] = [types.TextContent(text=result.text)]
    for img in result.images:
        content.append(types.ImageContent(data=img, mime_type="image/png"))
    return types.CallToolResult(content=content, structured_content=result.structured, is_error=result.is_error)


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"aiBridge": supervisor.__version__, "python": platform.python_version()}
    for dist in ("mcp", "trio", "trio-websocket", "hypercorn"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "?"
    return out


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
