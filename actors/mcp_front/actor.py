"""MCP front actor: the official SDK's low-level server on stdio (or, with ``--http-port``, on Streamable HTTP for
many clients at once: http.py), forwarding tool calls to actors as messages.

The SDK is imported here (and only when this actor starts): it costs over a second, and commands such as
``ai-bridge extension-path`` must not pay for it. ``initialize`` is answered while it still imports.

A tool call is validated by its tool's argument model, then handled, and its structured result checked against the
tool's output model; a `BridgeError` becomes a tool error the agent can read (``[code] message hint``). Anything
else is a bug in that one call: it is logged with its traceback and answered as ``internal_error`` — one bad call
never ends the MCP session. An unknown tool is the JSON-RPC error -32602, as the specification says.

Both protocol eras the SDK serves are served: 2025-11-25 (``initialize``) and 2026-07-28 (``server/discover``,
no server-to-client requests). Ask tools run as MCP tasks when the client asks for that (tasks.py). The project a
call belongs to comes from the call, then --project, then the client's roots (2025-era clients only, asked once per
MCP session), then the working directory.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import weakref
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import trio

import supervisor
from supervisor.config import Config
from supervisor.errors import BridgeError, InternalError
from supervisor.otp import ActorContext, ActorSystem, Message
from supervisor.safetext import encodable

from . import schema_cache
from .deps import FrontDeps, ToolCall, client_connection
from .icons import server_icons, tool_icon
from .stdio import EOF_GRACE_S, Replay, StdinLines, StdinPump, StdoutWriter, early_initialize_reply, handshake_versions
from .tasks import RELATED_TASK, TASKS_EXTENSION, ProgressSender, TaskError, TaskTable, missing_capability
from .toolkit import Result, Tool
from .tools import TOOLS, family_of, instructions, listed

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


async def call_tool(tool: Tool, deps: FrontDeps, call: ToolCall, raw: dict[str, Any]) -> Result:
    """One tools/call: its arguments validated, its handler run, its result checked. A `BridgeError` is the tool's
    typed error; anything else is a bug in this one call, logged with its traceback and answered as
    ``internal_error``: never raised into the SDK's session, which serves the next call."""
    try:
        args = tool.parse(raw)
        result = await tool.handler(deps, call, args)
        tool.check_output(result)
        return result
    except BridgeError as exc:
        log.info("tool %s failed: %s", tool.name, exc.code)
        return Result.error(exc.info())
    except Exception as exc:
        leaf = _leaf(exc)
        if isinstance(leaf, BridgeError):
            log.info("tool %s failed: %s", tool.name, leaf.code)  # a handler's nursery wrapped it
            return Result.error(leaf.info())
        log.exception("tool %s crashed", tool.name)
        return Result.error(InternalError(
            f"{tool.name} failed with an unexpected {type(leaf).__name__}: {str(leaf)[:300]}",
            hint="This is a bug in ai-bridge; the log file has the traceback. The server goes on.").info())


async def run(
    ctx: ActorContext[Message],
    *,
    config: Config,
    system: ActorSystem,
    stdin_fd: int = 0,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    if config.http_port is not None:
        from .http import bind

        # Port and token first: a server that cannot take them fails to start, with the reason on one line.
        sock = bind(config.http_port)
        with sock:
            token = await _http_token(config)
            os.dup2(2, 1)  # nothing but JSON-RPC ever goes to stdout, even when it carries none
            task_status.started()
            await trio.to_thread.run_sync(_import_sdk, abandon_on_cancel=True)
            await _serve(ctx, config=config, system=system, transport=_http_transport(ctx, sock, token))
        return
    # Answer `initialize` while the SDK is still importing (it costs over a second), then hand the same line to
    # the SDK so its session state is exactly as if it had answered; its own reply is dropped.
    stdout = StdoutWriter()
    pump = StdinPump(StdinLines(stdout, stdin_fd), stdout)
    os.dup2(2, 1)  # stray writes to fd 1 would corrupt JSON-RPC: send them to stderr, as the SDK does
    task_status.started()
    async with trio.open_nursery() as outer:
        outer.start_soon(pump.run)
        first = await _boot(stdout, pump, instructions(config.tool_sets))
        if first is None:
            log.info("MCP client closed stdin while the SDK loaded, with nothing left to answer")
        else:
            await _serve(ctx, config=config, system=system, transport=_stdio_transport(stdout, Replay(first, pump)))
        outer.cancel_scope.cancel()


async def _boot(stdout: StdoutWriter, pump: StdinPump, intro: str | None = None) -> list[str] | None:
    """Import the SDK, answering `initialize` meanwhile. The lines read (the initialize), or None when the client
    closed stdin with every request answered: a busy machine can take seconds over the import, and a client that
    has gone must not wait for it."""
    first: list[str] = []
    with trio.CancelScope() as boot_scope:
        async with trio.open_nursery() as boot:

            async def early_init() -> None:
                try:
                    line = await pump.__anext__()
                except StopAsyncIteration:
                    return
                first.append(line)
                reply = early_initialize_reply(line, handshake_versions(),
                                               intro if intro is not None else instructions(frozenset({"asks"})),
                                               server_icons())
                if reply is not None:
                    stdout.suppress[reply["id"]] = reply
                    await stdout.send_line(json.dumps(reply, separators=(",", ":")))

            watch = trio.CancelScope()

            async def leave_when_gone() -> None:
                with watch:
                    await pump.eof.wait()
                    await stdout.drain(EOF_GRACE_S)  # the initialize may be being answered
                    if not stdout.unanswered:
                        boot_scope.cancel()

            boot.start_soon(early_init)
            boot.start_soon(leave_when_gone)
            await trio.to_thread.run_sync(_import_sdk, abandon_on_cancel=True)
            watch.cancel()
    return None if boot_scope.cancelled_caught else first


Transport = Callable[[Any, Any], Awaitable[None]]  # (the SDK's server, its initialization options): serves until done


def _stdio_transport(stdout: StdoutWriter, stdin: Replay) -> Transport:
    async def serve(server: Any, options: Any) -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):  # type: ignore[arg-type]
            await server.run(read_stream, write_stream, options)
        log.info("MCP client closed stdin")

    return serve


def _http_transport(ctx: ActorContext[Message], sock: socket.socket, token: str) -> Transport:
    async def serve(server: Any, options: Any) -> None:
        from .http import serve_http

        # The session manager asks the server for its options per session: ours, with the tasks capability.
        server.create_initialization_options = lambda *args, **kw: options
        await serve_http(server, sock=sock, token=token, stop=ctx.stop_requested)

    return serve


async def _http_token(config: Config) -> str:
    """The MCP clients' bearer token: derived from the state dir's pairing key, so `ai-bridge pair --mcp-token`
    prints the same one. Without a usable state dir no client could learn it, so the server does not start."""
    from supervisor import pairing
    from supervisor.errors import StateFileError
    from supervisor.files import ensure_private_dir

    try:
        await trio.to_thread.run_sync(ensure_private_dir, config.state_dir)
        return (await trio.to_thread.run_sync(pairing.load_or_create, config.state_dir)).mcp_token
    except OSError as exc:
        raise StateFileError(f"--http-port needs the state dir's pairing key: {exc}",
                             hint="Make the state dir writable (or name another with --state-dir).") from exc


async def _serve(ctx: ActorContext[Message], *, config: Config, system: ActorSystem, transport: Transport) -> None:
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    # Each client's first root as a project name, once asked: over HTTP many clients share this server.
    roots: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    async def project_of(sdk_ctx: Any, explicit: str | None) -> str:
        """The project name: the call's own `project`, else --project, else the client's first root (a fallback
        for older clients: roots are deprecated), else the working directory."""
        if explicit:
            return explicit
        if config.project:
            return config.project
        client = client_connection(sdk_ctx)
        if client not in roots:
            roots[client] = await _root_project(sdk_ctx.session) or Path.cwd().name or "default"
        return roots[client]

    async def _root_project(session: Any) -> str | None:
        # Only a 2025-era client that advertises roots can be asked (2026-07-28 has no server-to-client
        # requests). The request is sent as itself: the SDK's list_roots() wrapper warns that roots are
        # deprecated, which is right for new servers and noise here.
        caps = session.client_capabilities
        if caps is None or caps.roots is None or session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None
        try:
            with trio.move_on_after(2):
                got = await session.send_request(types.ListRootsRequest(), types.ListRootsResult)
                return project_from_root(str(got.roots[0].uri)) if got.roots else None
        except Exception as exc:  # a client that advertises roots but fails to list them: use the fallback
            log.debug("roots/list failed: %s", exc)
        return None

    async def on_roots_changed(sdk_ctx: Any, params: Any) -> None:
        roots.pop(client_connection(sdk_ctx), None)

    deps = FrontDeps(ctx=ctx, config=config, system=system)

    def sdk_tool(t: Tool) -> Any:
        a = t.annotations
        return types.Tool(
            name=t.name, title=t.title, description=t.description, input_schema=t.args.tool_schema(),
            output_schema=t.output_schema(), icons=[types.Icon.model_validate(tool_icon(family_of(t.name)))],
            annotations=types.ToolAnnotations(read_only_hint=a.read_only, destructive_hint=a.destructive,
                                              idempotent_hint=a.idempotent, open_world_hint=a.open_world),
            # 2025-11-25 clients may run these as tasks (the 2026-07-28 extension needs no per-tool flag).
            execution=types.ToolExecution(task_support="optional") if t.start_job is not None else None)

    cached = await trio.to_thread.run_sync(schema_cache.warm, TOOLS, schema_cache.default_cache_dir())
    log.debug("tool schemas %s", "from the cache" if cached else "computed")
    sets = config.tool_sets
    served = listed(sets)
    sdk_tools = [sdk_tool(t) for t in served.values()]
    log.info("listing %d of %d tools (%s)", len(served), len(TOOLS), ", ".join(sorted(sets)))

    async def on_list_tools(sdk_ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=sdk_tools)

    def unknown_tool(name: object) -> Exception:
        # The specification (2025-11-25 and 2026-07-28): an unknown tool is a protocol error, -32602. A tool of ours
        # that this server does not list is unknown to the client too, but the message says how to list it.
        family = family_of(name) if isinstance(name, str) else None
        if family is None:
            return MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}", {"availableTools": list(served)})
        how = "--tools browser or --allow-domain" if family == "browser" else f"--tools {family}"
        return MCPError(types.INVALID_PARAMS,
                        f"Tool {name} is not listed by this server: it lists {', '.join(sorted(sets))}. Start "
                        f"`ai-bridge serve` with {how} (or --tools all; config key `tools`) to use it.",
                        {"availableTools": list(served), "family": family})

    async def on_call_tool(sdk_ctx: Any, params: Any) -> Any:
        tool = served.get(params.name)
        if tool is None:
            raise unknown_tool(params.name)
        return _to_result(types, await call_tool(tool, deps, ToolCall(sdk_ctx, project_of),
                                                 dict(params.arguments or {})))

    server = Server(
        "ai-bridge",
        version=supervisor.__version__,
        instructions=instructions(sets),
        icons=[types.Icon.model_validate(i) for i in server_icons()],
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    # Registered by hand: the constructor's on_roots_list_changed= warns that roots are deprecated.
    server.add_notification_handler("notifications/roots/list_changed", types.NotificationParams, on_roots_changed)
    server.extensions[TASKS_EXTENSION] = {}  # 2026-07-28: advertised by server/discover
    options = server.create_initialization_options()
    options.capabilities.experimental = None  # mcp 2.0 announces an empty one, later releases none: say none
    # 2025-11-25: tasks for tools/call, with tasks/list and tasks/cancel (stdio.early_initialize_reply says the same).
    options.capabilities.tasks = types.ServerTasksCapability(
        list=types.TasksListCapability(), cancel=types.TasksCancelCapability(),
        requests=types.ServerTasksRequestsCapability(tools=types.TasksToolsCapability(call=types.TasksCallCapability())))

    async with trio.open_nursery() as nursery:
        table = TaskTable(deps, nursery)
        _serve_tasks(server, served, table, types, MCPError, MODERN_PROTOCOL_VERSIONS, project_of, unknown_tool)

        async def stop_on_request() -> None:
            await ctx.stop_requested.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(stop_on_request)
        await transport(server, options)
        nursery.cancel_scope.cancel()


def _serve_tasks(server: Any, served: Mapping[str, Tool], table: TaskTable, types: Any,
                 mcp_error: Callable[..., Exception], modern_versions: tuple[str, ...],
                 project_of: Any, unknown_tool: Callable[[object], Exception]) -> None:
    """MCP tasks (see tasks.py): a middleware that turns task-augmented ask calls into tasks, and the tasks/*
    methods. A middleware, because the SDK shapes a tools/call result as a CallToolResult, and a 2025-11-25
    CreateTaskResult is not one."""

    def error(exc: TaskError) -> Exception:
        return mcp_error(exc.code, exc.message, exc.data)

    def declares_tasks(sdk_ctx: Any) -> bool:
        caps = sdk_ctx.session.client_capabilities
        return caps is not None and TASKS_EXTENSION in (caps.extensions or {})

    async def tasks_middleware(sdk_ctx: Any, call_next: Any) -> Any:
        if sdk_ctx.method != "tools/call" or not isinstance(sdk_ctx.params, Mapping):
            return await call_next(sdk_ctx)
        params = sdk_ctx.params
        modern = sdk_ctx.protocol_version in modern_versions
        name, raw, task = params.get("name"), params.get("arguments"), params.get("task")
        if modern:
            tool = served.get(name) if isinstance(name, str) else None
            if tool is None or tool.start_job is None or not declares_tasks(sdk_ctx):
                return await call_next(sdk_ctx)
        else:
            if task is None:
                return await call_next(sdk_ctx)
            # The SDK has not validated these params yet (a middleware runs first): check what we use.
            if not isinstance(name, str) or not isinstance(task, dict) or not isinstance(raw, dict | None):
                raise mcp_error(types.INVALID_PARAMS, "Invalid params: tools/call needs a name, an arguments "
                                "object and a task object")
            tool = served.get(name)
            if tool is None:
                raise unknown_tool(name)
            if tool.start_job is None:
                # 2025-11-25: a tool whose taskSupport is absent ("forbidden") is not run as a task.
                raise mcp_error(types.METHOD_NOT_FOUND, f"{name} does not run as a task; call it without 'task'")
        ttl = task.get("ttl") if isinstance(task, dict) else None
        if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0):
            raise mcp_error(types.INVALID_PARAMS, "Invalid params: task.ttl must be a whole number of ms >= 0")
        progress = None
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, Mapping) else None
        if not modern and isinstance(token, str | int) and not isinstance(token, bool):
            progress = _progress_sender(sdk_ctx.session, types, token)
        try:
            return await table.create(tool, dict(raw or {}), ToolCall(sdk_ctx, project_of), modern=modern,
                                      ttl_ms=ttl, progress=progress)
        except TaskError as exc:
            raise error(exc) from None

    server.middleware.append(tasks_middleware)

    def guarded(handler: Callable[[Any, Any], Awaitable[dict[str, Any]]], *, era: str | None = None) -> Any:
        async def serve(sdk_ctx: Any, params: Any) -> dict[str, Any]:
            modern = sdk_ctx.protocol_version in modern_versions
            if era is not None and era != ("modern" if modern else "legacy"):
                # tasks/result and tasks/list are 2025-11-25 methods; tasks/update is the extension's.
                raise mcp_error(types.METHOD_NOT_FOUND, "Method not found", sdk_ctx.method)
            if modern and not declares_tasks(sdk_ctx):
                raise error(missing_capability())
            try:
                return await handler(params, client_connection(sdk_ctx))
            except TaskError as exc:
                raise error(exc) from None

        return serve

    class UpdateParams(types.RequestParams):  # type: ignore[misc]
        task_id: str
        input_responses: dict[str, Any] = {}

    server.add_request_handler("tasks/get", types.GetTaskRequestParams, guarded(lambda p, _: table.get(p.task_id)))
    server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams,
                               guarded(lambda p, _: table.result(p.task_id), era="legacy"))
    server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams,
                               guarded(lambda p, _: table.cancel(p.task_id)))
    server.add_request_handler("tasks/list", types.PaginatedRequestParams,
                               guarded(lambda p, session: table.list_tasks(p.cursor, session), era="legacy"))
    server.add_request_handler("tasks/update", UpdateParams, guarded(lambda p, _: table.update(p.task_id),
                                                                      era="modern"))


def _progress_sender(session: Any, types: Any, token: str | int) -> ProgressSender:
    """2025-11-25: a task's progress goes on the original call's progress token, tagged with the task."""

    async def send(task_id: str, step: int, message: str) -> None:
        params = types.ProgressNotificationParams(progress_token=token, progress=step, message=encodable(message),
                                                  _meta={RELATED_TASK: {"taskId": task_id}})
        await session.send_notification(types.ProgressNotification(params=params))

    return send


def _to_result(types: Any, result: Result) -> Any:
    content: list[Any] = [types.TextContent(text=result.text)]
    for img in result.images:
        content.append(types.ImageContent(data=img, mime_type=result.image_mime))
    for link in result.links:
        content.append(types.ResourceLink.model_validate(link.as_json()))
    return types.CallToolResult(content=content, structured_content=result.structured, is_error=result.is_error)
