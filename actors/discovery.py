"""Discovery actor: the loopback HTTP endpoint the extension polls to find this server.

``GET /mcp-discovery`` hands out the relay's URL and per-boot token, so it is the one secret-bearing endpoint and is
guarded against every web origin and every other user (docs/security.md):

- only for processes of our own user (Linux: the owner of the peer's socket in the kernel's socket table), checked
  at accept, before a byte of the request is read; at most `MAX_PER_PEER` connections at once (supervisor/peergate);
- answered only when the request carries **no** ``Origin`` or exactly our extension's origin, and
  ``Sec-Fetch-Site`` is absent or ``none`` (Chrome sends the extension's host-permission fetch that way; every web
  page's request carries its own Origin and ``cross-site``/``same-site``);
- only for ``Host: 127.0.0.1:<port>`` or ``localhost:<port>`` (DNS rebinding: a hostile name resolving to 127.0.0.1
  arrives with its own Host), compared as bytes (an overlong or non-ASCII Host is one more refusal, never a
  traceback);
- no CORS headers at all, ever, so a page's ``fetch`` can never read a response.

It is a small HTTP/1.1 server of its own on h11 (issue 36): one request per connection, its head within
`REQUEST_S` and `MAX_HEAD` bytes, then the answer and the close. Refusals are logged a few at a time per interval,
then counted (`RefusalLog`), so a flood leaves a line every few seconds.

The port is the first free one of the range the extension polls (or the pinned one). A restarted discovery actor
takes the port it had before (`PortMemory`, owned by the tree), bound with SO_REUSEADDR so a connection left in
TIME_WAIT cannot keep it from its own port.
"""

from __future__ import annotations

import errno
import json
import logging
import socket
from http import HTTPStatus
from pathlib import Path

import attrs
import h11
import trio

import supervisor
from supervisor.constants import SHARED
from supervisor.errors import BridgeError, PortsInUse
from supervisor.otp import ActorContext, ActorRef, Reply
from supervisor.peergate import GatedListener, RefusalLog

from .protocol.discovery import DiscoveryPort, DiscoveryRequest
from .protocol.relay import RELAY, RelayInfo, RelayInfoReply, RelayRequest

log = logging.getLogger("ai_bridge.discovery")

PORTS = SHARED.discovery_ports
MAX_HEAD = 16 * 1024  # a request head larger than this is refused (431)
REQUEST_S = 5.0  # the whole request head must arrive within this (a half-open connection is closed after it)
SEND_S = 5.0  # and the answer must be taken within this
MAX_PER_PEER = 32  # connections one user's processes may hold at once (the extension needs one or two)
DETAIL_LINES = 20  # refused requests logged one by one per interval; the rest are counted

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


@attrs.frozen
class Answer:
    status: int
    body: bytes
    content_type: str = "text/plain"
    no_store: bool = False


FORBIDDEN = Answer(403, b"forbidden\n")


def _clip(value: bytes | None) -> str | None:
    return None if value is None else value[:200].decode("latin-1")


class Discovery:
    """The HTTP side: one request per connection, checked, answered, closed."""

    def __init__(self, relay: ActorRef[RelayRequest], *, port: int, project: str, refusals: RefusalLog) -> None:
        self.relay = relay
        self.port = port
        self.project = project
        self.refusals = refusals
        self.hosts = {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()}

    def refuse(self, method: bytes, target: bytes, why: str, headers: dict[bytes, bytes]) -> Answer:
        detail = (f"refused {method.decode('latin-1')[:20]} {target.decode('latin-1')[:200]} ({why}; "
                  f"Origin={_clip(headers.get(b'origin'))!r}, Host={_clip(headers.get(b'host'))!r}, "
                  f"Sec-Fetch-Site={_clip(headers.get(b'sec-fetch-site'))!r})")
        self.refusals.note(f"requests ({why})", detail)
        return FORBIDDEN

    async def answer(self, req: h11.Request) -> Answer:
        headers = dict(req.headers)  # h11 gives the names in lower case
        path = req.target.split(b"?", 1)[0]
        if any(sum(n == key for n, _ in req.headers) > 1 for key in (b"host", b"origin", b"sec-fetch-site")):
            return self.refuse(req.method, req.target, "a repeated header", headers)
        if headers.get(b"host") not in self.hosts:
            return self.refuse(req.method, req.target, "host", headers)
        if path not in (SHARED.discovery_path.encode(), b"/healthz", b"/selftest"):
            return Answer(404, b"not found\n")
        if req.method != b"GET":
            return Answer(405, b"method not allowed\n")
        if path == b"/healthz":
            return Answer(200, json.dumps({"ok": True, "serverVersion": supervisor.__version__,
                                           "protocolVersion": SHARED.protocol_version}).encode(),
                          "application/json", no_store=True)
        if path == b"/selftest":
            return Answer(200, SELFTEST_HTML.encode(), "text/html; charset=utf-8")
        origin = headers.get(b"origin")
        if origin is not None and origin != SHARED.extension_origin.encode():
            return self.refuse(req.method, req.target, "origin", headers)
        if headers.get(b"sec-fetch-site", b"none") != b"none":
            return self.refuse(req.method, req.target, "sec-fetch-site", headers)
        try:
            info: RelayInfoReply = await self.relay.call(RelayInfo(), timeout=2)
        except BridgeError as exc:
            return Answer(503, json.dumps({"error": f"relay unavailable: {exc.code}"}).encode(), "application/json",
                          no_store=True)
        return Answer(200, json.dumps({
            "wsUrl": info.ws_url,
            "token": info.token,
            "serverId": info.server_id,
            "keyId": info.key_id,
            "project": self.project,
            "startedAt": info.started_at,
            "protocolVersion": SHARED.protocol_version,
            "serverVersion": supervisor.__version__,
            "selfTestUrl": f"http://127.0.0.1:{self.port}/selftest",
        }).encode(), "application/json", no_store=True)

    async def serve(self, stream: trio.abc.Stream) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        try:
            answer: Answer | None = None
            with trio.move_on_after(REQUEST_S):
                try:
                    req = await self._request(conn, stream)
                except h11.RemoteProtocolError as exc:
                    status = exc.error_status_hint
                    self.refusals.note(f"malformed requests (HTTP {status})", f"refused a malformed request "
                                       f"(HTTP {status}: {str(exc)[:100]})")
                    answer = Answer(status, b"bad request\n")
                else:
                    if req is None:
                        return  # the peer left before a whole request head
                    answer = await self.answer(req)
            if answer is None:
                self.refusals.note("connections that sent no request in time",
                                   f"closed a connection that sent no whole request within {REQUEST_S:g} s")
                return
            with trio.move_on_after(SEND_S):
                await self._send(stream, answer)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.debug("discovery connection ended: %s", exc)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await stream.aclose()

    async def _request(self, conn: h11.Connection, stream: trio.abc.Stream) -> h11.Request | None:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(8192)
                conn.receive_data(bytes(data))  # b"" is the peer's EOF
                continue
            if isinstance(event, h11.Request):
                return event
            return None  # ConnectionClosed (or PAUSED, which one request never reaches)

    async def _send(self, stream: trio.abc.Stream, answer: Answer) -> None:
        reason = HTTPStatus(answer.status).phrase.encode()
        head = [b"HTTP/1.1 %d %s" % (answer.status, reason), b"Content-Type: " + answer.content_type.encode(),
                b"Content-Length: %d" % len(answer.body), b"Connection: close"]
        if answer.no_store:
            head.append(b"Cache-Control: no-store")
        await stream.send_all(b"\r\n".join(head) + b"\r\n\r\n" + answer.body)


async def run(
    ctx: ActorContext[DiscoveryRequest],
    *,
    port: int | None = None,
    project: str | None = None,
    memory: PortMemory | None = None,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    sock = bind_port(port, memory if memory is not None else PortMemory())
    bound = int(sock.getsockname()[1])
    refusals = RefusalLog("discovery", burst=DETAIL_LINES)
    listener = GatedListener(trio.socket.from_stdlib_socket(sock), refusals, max_per_peer=MAX_PER_PEER)
    server = Discovery(ctx.ref(RELAY), port=bound, project=project or Path.cwd().name, refusals=refusals)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(refusals.run)
        await nursery.start(trio.serve_listeners, server.serve, [listener])
        log.info("discovery on http://127.0.0.1:%d%s", bound, SHARED.discovery_path)
        task_status.started()

        async def handle(msg: DiscoveryRequest) -> Reply[object]:
            # One request kind: match would only restate the type.
            return msg.reply(bound)

        async for env in ctx.messages():
            assert isinstance(env.message, DiscoveryPort)
            await ctx.answer(env, handle)
        nursery.cancel_scope.cancel()
