"""Discovery actor: the loopback HTTP endpoint the extension polls to find this server (hypercorn + quart-trio).

``GET /mcp-discovery`` hands out the relay's URL and per-boot token, so it is the one secret-bearing endpoint and is
guarded against every web origin (docs/security.md):

- answered only when the request carries **no** ``Origin`` or exactly our extension's origin, and
  ``Sec-Fetch-Site`` is absent or ``none`` (Chrome sends the extension's host-permission fetch that way; every web
  page's request carries its own Origin and ``cross-site``/``same-site``);
- only for ``Host: 127.0.0.1:<port>`` or ``localhost:<port>`` (DNS rebinding: a hostile name resolving to 127.0.0.1
  arrives with its own Host);
- no CORS headers at all, ever, so a page's ``fetch`` can never read a response.

Same-user local processes are trusted (they can read the profile anyway), as in seed 002's threat model.
"""

from __future__ import annotations

import errno
import json
import logging
import socket
from pathlib import Path
from typing import Any

import trio

import supervisor
from supervisor.errors import BridgeError
from supervisor.runtime import ActorContext

from .messages import EXTENSION_ID, PROTOCOL_VERSION, DiscoveryPort, RelayInfo, RelayInfoReply

log = logging.getLogger("ai_bridge.discovery")
security = logging.getLogger("ai_bridge.security")

PORTS = range(8766, 8776)

SELFTEST_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>ai-bridge self-test</title></head>
<body><h1>ai-bridge self-test</h1><p id="status">This page is driven by <code>ai-bridge doctor</code>.</p>
<input id="probe" aria-label="probe input"></body></html>
"""


def bind_first_free(pinned: int | None) -> socket.socket:
    """Bind 127.0.0.1 on the pinned port, or the first free one of 8766-8775 (several servers run at once)."""
    candidates = [pinned] if pinned is not None else list(PORTS)
    last: OSError | None = None
    for port in candidates:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen(64)
            return sock
        except OSError as exc:
            sock.close()
            if exc.errno != errno.EADDRINUSE:
                raise
            last = exc
    where = f"port {pinned}" if pinned is not None else f"ports {PORTS.start}-{PORTS.stop - 1}"
    raise BridgeError(f"discovery: {where} all in use ({last})",
                      hint="Stop some other ai-bridge servers, or pin a free port with --discovery-port.")


def create_app(ctx: ActorContext, *, port_ref: list[int], project: str, extension_id: str) -> Any:
    from quart import Response, request
    from quart_trio import QuartTrio

    app = QuartTrio("ai_bridge_discovery")
    ext_origin = f"chrome-extension://{extension_id}"

    def host_ok() -> bool:
        port = port_ref[0]
        return request.headers.get("Host", "") in (f"127.0.0.1:{port}", f"localhost:{port}")

    def forbidden(why: str) -> Response:
        security.warning("discovery: refused %s %s (%s; Origin=%r, Host=%r, Sec-Fetch-Site=%r)", request.method,
                         request.path, why, request.headers.get("Origin"), request.headers.get("Host"),
                         request.headers.get("Sec-Fetch-Site"))
        return Response("forbidden\n", status=403, content_type="text/plain")

    def as_json(data: Any, status: int = 200) -> Response:
        resp = Response(json.dumps(data), status=status, content_type="application/json")
        resp.headers["Cache-Control"] = "no-store"
        return resp

    @app.get("/mcp-discovery")
    async def discovery() -> Response:
        if not host_ok():
            return forbidden("host")
        origin = request.headers.get("Origin")
        if origin is not None and origin != ext_origin:
            return forbidden("origin")
        if request.headers.get("Sec-Fetch-Site", "none") != "none":
            return forbidden("sec-fetch-site")
        try:
            info: RelayInfoReply = await ctx.ref("relay").call(RelayInfo(), timeout=2)
        except BridgeError as exc:
            return as_json({"error": f"relay unavailable: {exc.code}"}, 503)
        return as_json({
            "wsUrl": info.ws_url,
            "token": info.token,
            "serverId": info.server_id,
            "project": project,
            "startedAt": info.started_at,
            "protocolVersion": PROTOCOL_VERSION,
            "serverVersion": supervisor.__version__,
            "selfTestUrl": f"http://127.0.0.1:{port_ref[0]}/selftest",
        })

    @app.get("/healthz")
    async def healthz() -> Response:
        if not host_ok():
            return forbidden("host")
        return as_json({"ok": True, "serverVersion": supervisor.__version__, "protocolVersion": PROTOCOL_VERSION})

    @app.get("/selftest")
    async def selftest() -> Response:
        if not host_ok():
            return forbidden("host")
        return Response(SELFTEST_HTML, content_type="text/html; charset=utf-8")

    return app


async def run(
    ctx: ActorContext,
    *,
    port: int | None = None,
    project: str | None = None,
    extension_id: str = EXTENSION_ID,
    port_box: list[int] | None = None,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    from hypercorn.config import Config as HyperConfig
    from hypercorn.trio import serve

    sock = bind_first_free(port)
    bound = sock.getsockname()[1]
    port_ref = [bound]
    if port_box is not None:
        port_box[:] = [bound]  # lets the process entry and tests learn the chosen port
    app = create_app(ctx, port_ref=port_ref, project=project or Path.cwd().name, extension_id=extension_id)
    hc = HyperConfig()
    hc.bind = [f"fd://{sock.detach()}"]
    hc.include_server_header = False
    hc.accesslog = None
    hc.errorlog = logging.getLogger("hypercorn.error")  # our handlers and levels, not hypercorn's own stderr one
    hc.graceful_timeout = 1.0
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(lambda task_status: serve(app, hc, shutdown_trigger=shutdown.wait,
                                                      task_status=task_status))
        log.info("discovery on http://127.0.0.1:%d/mcp-discovery", bound)
        task_status.started()
        async for env in ctx.messages():
            if isinstance(env.message, DiscoveryPort):
                env.reply(bound)
            else:
                env.fail(BridgeError(f"discovery does not accept {type(env.message).__name__}"))
            ctx.inbox.done(env)
        # hypercorn: set the shutdown trigger for a clean stop (cancelling skips Quart's after_serving)
        shutdown.set()
