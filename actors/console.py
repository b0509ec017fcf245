"""Console actor: live inspection of a running server over a Unix socket in the state dir (mode 0600).

``ai-bridge console`` connects to it. Each line is Python evaluated *inside the server's trio loop* with top-level
``await`` allowed (``compile(..., PyCF_ALLOW_TOP_LEVEL_AWAIT)``; ``python -m trio`` cannot do this because it owns
its own loop and the process's stdin, which MCP needs). The namespace offers ``tree()``, ``actors()``,
``inject(actor, kind, delay=0)`` (the fault kit), ``call(actor, message)``, ``messages`` and ``runtime``.

Only the same user can connect (socket file mode 0600 in the user's state dir), the same trust boundary as
everything else in ai-bridge (docs/security.md).
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import json
import logging
import os
import socket
import traceback
from pathlib import Path
from typing import Any

import trio

from supervisor.runtime import ActorContext
from supervisor.supervision import Runtime
from supervisor.testing import inject

from . import messages

log = logging.getLogger("ai_bridge.console")

MAX_LINE = 64 * 1024


def socket_path(state_dir: Path, pid: int | None = None) -> Path:
    return state_dir / f"console-{pid or os.getpid()}.sock"


def namespace(runtime: Runtime) -> dict[str, Any]:
    def tree() -> str:
        return json.dumps(runtime.tree(), indent=2, default=str)

    def actors() -> list[str]:
        return runtime.registry.names()

    async def call(actor: str, message: Any, timeout: float = 30) -> Any:
        return await runtime.registry.ref(actor).call(message, timeout=timeout)

    def fault(actor: str, kind: str, delay: float = 0.0) -> str:
        inject(runtime.registry, actor, kind, delay=delay)
        return f"armed {kind} on {actor}'s next message"

    return {"runtime": runtime, "tree": tree, "actors": actors, "call": call, "inject": fault,
            "messages": messages, "trio": trio}


async def evaluate(source: str, ns: dict[str, Any]) -> str:
    """Evaluate one line like a REPL: an expression's value is shown, a statement just runs."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    printed: list[str] = []
    # print() goes to the console, not to the server's stdout (which belongs to MCP).
    ns["print"] = lambda *args, sep=" ", end="\n", **_: printed.append(sep.join(map(str, args)) + end)
    try:
        code = compile(source, "<console>", "eval", flags=flags)
        mode = "eval"
    except SyntaxError:
        code = compile(source, "<console>", "exec", flags=flags)
        mode = "exec"
    result = eval(code, ns)  # the console's whole point; reachable only through the 0600 socket
    if inspect.iscoroutine(result):
        result = await result
    shown = "" if mode == "exec" or result is None else (result if isinstance(result, str) else repr(result))
    return "".join(printed) + shown


async def serve_client(stream: trio.SocketStream, ns: dict[str, Any]) -> None:
    buf = b""
    async with stream:
        await stream.send_all(b"ai-bridge console. tree(), actors(), inject(actor, 'crash'|'hang'|'slow'), "
                              b"await call(actor, message)\n>>> ")
        while True:
            data = await stream.receive_some(65536)
            if not data:
                return
            buf += data
            if len(buf) > MAX_LINE:
                await stream.send_all(b"line too long\n")
                return
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode("utf-8", errors="replace").strip()
                if text in ("exit", "quit", "exit()", "quit()"):
                    return
                out = ""
                if text:
                    try:
                        out = await evaluate(text, ns)
                    except Exception:
                        out = traceback.format_exc(limit=3)
                await stream.send_all((out + ("\n" if out and not out.endswith("\n") else "") + ">>> ").encode())


async def run(
    ctx: ActorContext,
    *,
    runtime: Runtime,
    state_dir: Path,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    path = socket_path(state_dir)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # the socket file is created 0600: same user only
    try:
        await sock.bind(str(path))
    finally:
        os.umask(old_umask)
    sock.listen(8)
    listener = trio.SocketListener(sock)
    ns = namespace(runtime)
    try:
        async with trio.open_nursery() as nursery:

            async def accept_loop() -> None:
                while True:
                    stream = await listener.accept()
                    nursery.start_soon(serve_client, stream, ns)

            nursery.start_soon(accept_loop)
            task_status.started()
            async for env in ctx.messages():
                env.fail(messages_error(env.message))
                ctx.inbox.done(env)
            nursery.cancel_scope.cancel()
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        await listener.aclose()


def messages_error(msg: Any) -> Exception:
    from supervisor.errors import InvalidArgument

    return InvalidArgument(f"console does not accept {type(msg).__name__}")
