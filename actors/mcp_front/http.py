"""MCP over Streamable HTTP on loopback: one server, many MCP clients at once (issue 38).

``ai-bridge serve --http-port PORT`` serves ``http://127.0.0.1:PORT/mcp`` instead of stdin/stdout, so several agents
(Claude Code, Cursor, subagents, the Inspector) share one server, one browser and its tab pool: asks into different
conversations run side by side, asks into one conversation queue. The SDK's session manager does the protocol; this
module is the door in front of it. Every request is refused, before the SDK reads a byte of its body, unless:

- it comes from a process of our own user (the peer's socket owner, as for discovery; Linux);
- its ``Host`` is ``127.0.0.1:PORT``, ``localhost:PORT`` or ``[::1]:PORT`` (DNS rebinding: a hostile name that
  resolves to 127.0.0.1 arrives with its own Host);
- it carries no ``Origin``: web pages always send one, MCP clients do not, so no page can drive the server even
  with the token;
- it carries ``Authorization: Bearer <token>``, the state dir's MCP token (derived from its pairing key:
  ``ai-bridge pair --mcp-token`` prints it), compared in constant time;
- its path is ``/mcp``.

A refusal is a small JSON body with the status (401, 403, 404), never with CORS headers, and is logged a few at a
time (`RefusalLog`), never with the token.
"""

from __future__ import annotations

import hmac
import inspect
import json
import logging
import os
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import trio

from supervisor.errors import PortsInUse
from supervisor.peercred import AVAILABLE as PEER_UID_AVAILABLE
from supervisor.peercred import peer_uid
from supervisor.peergate import RefusalLog

log = logging.getLogger("ai_bridge.mcp_front")

MCP_PATH = "/mcp"
SESSION_IDLE_S = 12 * 3600  # a client idle this long must initialize again (an agent's session can idle for hours)
MAX_SESSIONS = 64  # agents at once; a leaked session frees its place after SESSION_IDLE_S

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def _header(scope: Scope, name: bytes) -> list[bytes]:
    return [v for k, v in scope.get("headers") or () if bytes(k).lower() == name]


def refusal(scope: Scope, *, port: int, token: str, uid: int | None) -> tuple[int, str, str] | None:
    """Why this HTTP request is refused (status, kind, one line), or None when it may reach the SDK. `uid` is the peer's
    user (None when the platform cannot tell)."""
    if PEER_UID_AVAILABLE and uid != os.getuid():
        return 403, "user", "only processes of this server's user may connect"
    hosts = _header(scope, b"host")
    if len(hosts) != 1 or hosts[0] not in (f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode(),
                                           f"[::1]:{port}".encode()):
        return 403, "host", f"Host must be 127.0.0.1:{port} or localhost:{port}"
    if _header(scope, b"origin"):
        return 403, "origin", "requests from web pages (with an Origin) are refused"
    auth = _header(scope, b"authorization")
    want = f"Bearer {token}".encode()
    if len(auth) != 1 or not hmac.compare_digest(auth[0], want):
        return 401, "token", ("missing or wrong bearer token: send 'Authorization: Bearer <token>' "
                              "(ai-bridge pair --mcp-token)")
    if scope.get("path") != MCP_PATH:
        return 404, "path", f"the MCP endpoint is {MCP_PATH}"
    return None


def _peer_uid(scope: Scope) -> int | None:
    client, server = scope.get("client"), scope.get("server")
    if not PEER_UID_AVAILABLE or not client or not server:
        return None
    try:
        return peer_uid((str(client[0]), int(client[1])), (str(server[0]), int(server[1])))
    except (OSError, ValueError, TypeError):
        return None


class Door:
    """The ASGI app in front of the SDK's: refuses what `refusal` says, answers the server's lifespan itself."""

    def __init__(self, inner: App, *, port: int, token: str, refusals: RefusalLog,
                 uid_of: Callable[[Scope], int | None] = _peer_uid) -> None:
        self._inner = inner
        self._uid_of = uid_of
        self._port = port
        self._token = token
        self._refusals = refusals

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "lifespan":  # the session manager's life is the actor's, not hypercorn's
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if kind != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        # The peer's uid is read from /proc/net/tcp{,6}: a file as long as the machine's connections, read in a worker
        # thread so a busy machine never stalls the server's asks and relay.
        uid = await trio.to_thread.run_sync(self._uid_of, scope)
        why = refusal(scope, port=self._port, token=self._token, uid=uid)
        if why is not None:
            status, kind, text = why
            self._refusals.note(kind, f"{scope.get('method')} {str(scope.get('path'))[:80]!r} refused: {text}")
            body = json.dumps({"error": text}).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            if status == 401:
                headers.append((b"www-authenticate", b'Bearer realm="ai-bridge"'))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self._inner(scope, receive, send)


def bind(port: int) -> socket.socket:
    """The listening socket on 127.0.0.1:`port` (loopback only, ever)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # our own TIME_WAIT after a restart
        sock.bind(("127.0.0.1", port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise PortsInUse(f"cannot listen for MCP clients on 127.0.0.1:{port}: {exc.strerror or exc}",
                         hint="Another program (or another ai-bridge) holds that port: pick another --http-port."
                         ) from exc
    sock.set_inheritable(True)
    return sock


async def serve_http(server: Any, *, sock: socket.socket, token: str, stop: trio.Event,
                     task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve the SDK's low-level `server` over Streamable HTTP on `sock` (from `bind`) until `stop` is set."""
    from hypercorn.config import Config as HypercornConfig
    from hypercorn.trio import serve
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    port = int(sock.getsockname()[1])
    # max_sessions came with mcp 2.1; 2.0 (our lowest) has no cap to set.
    cap: dict[str, Any] = {"max_sessions": MAX_SESSIONS} if "max_sessions" in inspect.signature(
        StreamableHTTPSessionManager).parameters else {}
    manager = StreamableHTTPSessionManager(server, session_idle_timeout=SESSION_IDLE_S, **cap)
    door = Door(manager.handle_request, port=port, token=token, refusals=RefusalLog("MCP over HTTP", burst=3))
    hc = HypercornConfig()
    hc.bind = [f"fd://{sock.fileno()}"]
    hc.accesslog = None
    hc.errorlog = logging.getLogger("hypercorn.error")  # through our handlers (stderr and the log file), once
    hc.graceful_timeout = 0.5  # the actor's shutdown budget is 1 s; an ask's open stream is cut, its job kept
    hc.keep_alive_timeout = 75
    async with manager.run():
        log.info("MCP over HTTP at http://127.0.0.1:%d%s (bearer token: `ai-bridge pair --mcp-token`)",
                 port, MCP_PATH)
        await serve(door, hc, shutdown_trigger=stop.wait,  # type: ignore[arg-type]
                    task_status=task_status)  # type: ignore[arg-type]
