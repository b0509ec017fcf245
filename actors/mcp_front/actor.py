"""MCP front actor: the official SDK's low-level server on stdio, forwarding tool calls to actors as messages.

The SDK is imported here (and only when this actor starts): it costs over a second, and commands such as
``ai-bridge extension-path`` must not pay for it. ``initialize`` is answered while it still imports.

A tool call is validated by its tool's argument model, then handled; a `BridgeError` becomes a tool error the agent
can read (``[code] message hint``). Anything else is a bug in that one call: it is logged with its traceback and
answered as ``internal_error`` — one bad call never ends the MCP session.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import trio

import supervisor
from supervisor.config import Config
from supervisor.errors import BridgeError, InternalError
from supervisor.otp import ActorContext, ActorSystem, Message

from .deps import FrontDeps, ToolCall
from .stdio import Replay, StdinLines, StdoutWriter, early_initialize_reply, handshake_versions
from .toolkit import Result, Tool
from .tools import INSTRUCTIONS, TOOLS

log = logging.getLogger("ai_bridge.mcp_front")


def _import_sdk() -> None:
    import mcp.server.lowlevel
    import mcp.server.stdio  # noqa: F401


def project_from_root(uri: str) -> str | None:
    """A client root (``file:///home/me/my%20project%C3%A9``) as a project name (``my projecté``): the decoded
    last path segment, the same name `ai-bridge ask` run in that folder uses."""
    parts = urlsplit(uri)
    if parts.scheme and parts.scheme != "file":
        return None
    name = Path(unquote(parts.path, errors="strict") if parts.scheme else unquote(uri)).name
    return name or None


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def run(
    ctx: ActorContext[Message],
    *,
    config: Config,
    system: ActorSystem,
    stdin_fd: int = 0,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    # Answer `initialize` while the SDK is still importing (it costs over a second), then hand the same line to
    # the SDK so its session state is exactly as if it had answered; its own reply is dropped.
    stdout = StdoutWriter()
    stdin = StdinLines(stdout, stdin_fd)
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
            reply = early_initialize_reply(line, handshake_versions(), INSTRUCTIONS)
            if reply is not None:
                stdout.suppress[reply["id"]] = reply
                await stdout.send_line(json.dumps(reply, separators=(",", ":")))

        boot.start_soon(early_init)
        await trio.to_thread.run_sync(_import_sdk)

    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.shared.exceptions import MCPError

    roots_cache: dict[int, str] = {}

    async def project_of(sdk_ctx: Any, explicit: str | None) -> str:
        """The project name: the call's own `project`, else --project, else the client's first root (a fallback
        for older clients; roots are deprecated), else the working directory."""
        if explicit:
            return explicit
        if config.project:
            return config.project
        session = sdk_ctx.session
        key = id(session)
        if key in roots_cache:
            return roots_cache[key]
        name = Path.cwd().name or "default"
        try:
            caps = session.client_capabilities
            if caps is not None and caps.roots is not None:
                with trio.move_on_after(2), warnings.catch_warnings():
                    # Roots are deprecated (SEP-2577); we read them only as a fallback, quietly.
                    warnings.simplefilter("ignore")
                    roots = await session.list_roots()
                    if roots.roots:
                        name = project_from_root(str(roots.roots[0].uri)) or name
        except Exception as exc:  # a client that advertises roots but fails to list them: use the cwd
            log.debug("list_roots failed: %s", exc)
        roots_cache[key] = name
        return name

    deps = FrontDeps(ctx=ctx, config=config, system=system)

    def sdk_tool(t: Tool) -> Any:
        a = t.annotations
        return types.Tool(
            name=t.name, title=t.title, description=t.description, input_schema=t.args.tool_schema(),
            output_schema=t.output_schema,
            annotations=types.ToolAnnotations(read_only_hint=a.read_only, destructive_hint=a.destructive,
                                              idempotent_hint=a.idempotent, open_world_hint=a.open_world))

    listed = [sdk_tool(t) for t in TOOLS.values()]

    async def on_list_tools(sdk_ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=listed)

    async def on_call_tool(sdk_ctx: Any, params: Any) -> Any:
        tool = TOOLS.get(params.name)
        if tool is None:
            # The specification: an unknown tool is a protocol error (-32602), not a tool result.
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name!r}. Available: {', '.join(TOOLS)}")
        try:
            args = tool.parse(dict(params.arguments or {}))
            result = await tool.handler(deps, ToolCall(sdk_ctx, project_of), args)
        except BridgeError as exc:
            log.info("tool %s failed: %s", params.name, exc.code)
            return _error_result(types, exc)
        except Exception as exc:
            leaf = _leaf(exc)
            if isinstance(leaf, BridgeError):
                log.info("tool %s failed: %s", params.name, leaf.code)  # a handler's nursery wrapped it
                return _error_result(types, leaf)
            log.exception("tool %s crashed", params.name)
            return _error_result(types, InternalError(
                f"{params.name} failed with an unexpected {type(leaf).__name__}: {str(leaf)[:300]}",
                hint="This is a bug in ai-bridge; the log file has the traceback. The server goes on."))
        return _to_result(types, result)

    server = Server(
        "ai-bridge",
        version=supervisor.__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    async with trio.open_nursery() as nursery:

        async def stop_on_request() -> None:
            await ctx.stop_requested.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(stop_on_request)
        async with stdio_server(stdin=Replay(replay, stdin), stdout=stdout) as (  # type: ignore[arg-type]
                read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        log.info("MCP client closed stdin")
        nursery.cancel_scope.cancel()


def _error_result(types: Any, exc: BridgeError) -> Any:
    return types.CallToolResult(
        content=[types.TextContent(text=f"[{exc.code}] {exc}")],
        structured_content={"error": exc.as_dict()},
        is_error=True,
    )


def _to_result(types: Any, result: Result) -> Any:
    content: list[Any] = [types.TextContent(text=result.text)]
    for img in result.images:
        content.append(types.ImageContent(data=img, mime_type=result.image_mime))
    return types.CallToolResult(content=content, structured_content=result.structured, is_error=result.is_error)
