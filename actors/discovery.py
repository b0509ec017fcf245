"""Discovery actor: the loopback HTTP endpoint the extension polls to find this server (hypercorn + quart-trio).

``GET /mcp-discovery`` hands out the relay's URL and per-boot token, so it is the one secret-bearing endpoint and is
guarded against every web origin and every other user (docs/security.md):

- only for processes of our own user (Linux: the owner of the peer's socket in the kernel's socket table);
- answered only when the request carries **no** ``Origin`` or exactly our extension's origin, and
  ``Sec-Fetch-Site`` is absent or ``none`` (Chrome sends the extension's host-permission fetch that way; every web
  page's request carries its own Origin and ``cross-site``/``same-site``);
- only for ``Host: 127.0.0.1:<port>`` or ``localhost:<port>`` (DNS rebinding: a hostile name resolving to 127.0.0.1
  arrives with its own Host);
- no CORS headers at all, ever, so a page's ``fetch`` can never read a response.

The port is the first free one of the range the extension polls (or the pinned one). A restarted discovery actor
takes the port it had before (`PortMemory`, owned by the tree), bound with SO_REUSEADDR so an idle keep-alive
connection left in TIME_WAIT cannot keep it from its own port.
"""

from __future__ import annotations

import errno
import json
import logging
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import trio

import supervisor
from supervisor.constants import SHARED
from supervisor.errors import BridgeError, PortsInUse
from supervisor.otp import ActorContext, Reply
from supervisor.peercred import same_user

from .protocol.discovery import DiscoveryPort, DiscoveryRequest
from .protocol.relay import RELAY, RelayInfo, RelayInfoReply

if TYPE_CHECKING:
    from quart import Response
    from quart_trio import QuartTrio

log = logging.getLogger("ai_bridge.discovery")
security = logging.getLogger("ai_bridge.security")

PORTS = SHARED.discovery_ports

SELFTEST_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>ai-bridge self-test</title></head>
<body><h1>ai-bridge self-test</h1><p id="status">This page is driven by <code>ai-bridge doctor</code>.</p>
<input id="probe" aria-label="probe input"></body></html>
"""


@attrs.define
class PortMemory:
    """The port this server's discovery endpoint holds; outlives restarts of the actor (owned by the tree)."""

    port: int | None = None


def bind_port(pinned: int | None, memory: PortMemory) -> socket.socket:
    """Bind 127.0.0.1 on the pinned port, else the port held before a restart, else the first free one of the range
    the extension polls (several servers run at once)."""
    if pinned is not None:
        candidates = [pinned]
    else:
        candidates = ([memory.port] if memory.port is not None else []) + [p for p in PORTS if p != memory.port]
    last: OSError | None = None
    for port in candidates:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # TIME_WAIT left by a closed keep-alive connection must not keep us from our own port. (Linux does not let
        # SO_REUSEADDR share a port another socket is listening on, so this never steals a live server's port.)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen(64)
        except OSError as exc:
            sock.close()
            if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
                raise
            last = exc
            continue
        memory.port = port
        return sock
    where = f"port {pinned}" if pinned is not None else f"ports {PORTS.start}-{PORTS.stop - 1}"
    raise PortsInUse(f"discovery: {where} all in use ({last})",
                     hint="Stop some other ai-bridge servers, or pin a free port of that range with "
                     "--discovery-port.")


def create_app(ctx: ActorContext[DiscoveryRequest], *, port: int, project: str) -> QuartTrio:
    from quart import Response, request
    from quart_trio import QuartTrio

    app = QuartTrio("ai_bridge_discovery")
    relay = ctx.ref(RELAY)

    def peer_ok() -> bool:
        client, server = request.scope.get("client"), request.scope.get("server")
        if not client or not server or server[1] is None:
            return False
        return same_user((str(client[0]), int(client[1])), (str(server[0]), int(server[1])))

    def host_ok() -> bool:
        return request.headers.get("Host", "") in (f"127.0.0.1:{port}", f"localhost:{port}")

    def forbidden(why: str) -> Response:
        def clip(header: str) -> str | None:  # a hostile header must not flood the log
            value = request.headers.get(header)
            return value[:200] if value is not None else None

        security.warning("discovery: refused %s %s (%s; Origin=%r, Host=%r, Sec-Fetch-Site=%r)", request.method,
                         request.path[:200], why, clip("Origin"), clip("Host"), clip("Sec-Fetch-Site"))
        return Response("forbidden\n", status=403, content_type="text/plain")

    def as_json(data: dict[str, object], status: int = 200) -> Response:
        resp = Response(json.dumps(data), status=status, content_type="application/json")
        resp.headers["Cache-Control"] = "no-store"
        return resp

    def refusal() -> Response | None:
        if not peer_ok():
            return forbidden("another user's process")
        if not host_ok():
            return forbidden("host")
        return None

    @app.get(SHARED.discovery_path)
    async def discovery() -> Response:
        if (refused := refusal()) is not None:
            return refused
        origin = request.headers.get("Origin")
        if origin is not None and origin != SHARED.extension_origin:
            return forbidden("origin")
        if request.headers.get("Sec-Fetch-Site", "none") != "none":
            return forbidden("sec-fetch-site")
        try:
            info: RelayInfoReply = await relay.call(RelayInfo(), timeout=2)
        except BridgeError as exc:
            return as_json({"error": f"relay unavailable: {exc.code}"}, 503)
        return as_json({
            "wsUrl": info.ws_url,
            "token": info.token,
            "serverId": info.server_id,
            "keyId": info.key_id,
            "project": project,
            "startedAt": info.started_at,
            "protocolVersion": SHARED.protocol_version,
            "serverVersion": supervisor.__version__,
            "selfTestUrl": f"http://127.0.0.1:{port}/selftest",
        })

    @app.get("/healthz")
    async def healthz() -> Response:
        if (refused := refusal()) is not None:
            return refused
        return as_json({"ok": True, "serverVersion": supervisor.__version__,
                        "protocolVersion": SHARED.protocol_version})

    @app.get("/selftest")
    async def selftest() -> Response:
        if (refused := refusal()) is not None:
            return refused
        return Response(SELFTEST_HTML, content_type="text/html; charset=utf-8")

    return app


async def run(
    ctx: ActorContext[DiscoveryRequest],
    *,
    port: int | None = None,
    project: str | None = None,
    memory: PortMemory | None = None,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    from hypercorn.config import Config as HyperConfig
    from hypercorn.trio import serve

    sock = bind_port(port, memory if memory is not None else PortMemory())
    bound = int(sock.getsockname()[1])
    app = create_app(ctx, port=bound, project=project or Path.cwd().name)
    hc = HyperConfig()
    hc.bind = [f"fd://{sock.detach()}"]
    hc.include_server_header = False
    hc.accesslog = None
    hc.errorlog = logging.getLogger("hypercorn.error")  # our handlers and levels, not hypercorn's own stderr one
    hc.graceful_timeout = 1.0
    hc.h11_max_incomplete_size = 16 * 1024  # a request head larger than this is refused (431)
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(lambda task_status: serve(app, hc, shutdown_trigger=shutdown.wait,
                                                      task_status=task_status))
        log.info("discovery on http://127.0.0.1:%d%s", bound, SHARED.discovery_path)
        task_status.started()

        async def handle(msg: DiscoveryRequest) -> Reply[object]:
            # One request kind: match would only restate the type.
            return msg.reply(bound)

        async for env in ctx.messages():
            assert isinstance(env.message, DiscoveryPort)
            await ctx.answer(env, handle)
        # hypercorn: set the shutdown trigger for a clean stop (cancelling skips Quart's after_serving)
        shutdown.set()
