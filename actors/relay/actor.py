"""Relay actor: the WebSocket the extension connects to, moving frames between the socket and the protocol core
(`wire.Link`) and answering other actors' extension commands.

Security (docs/security.md): loopback only; the peer must be a process of our own user (Linux: the kernel's socket
table); the upgrade must carry ``Origin: chrome-extension://<our id>`` (a web page cannot forge it); the first frame
must be a ``hello`` with the per-boot 256-bit token (constant-time compare, never logged) and our protocol version
within 5 s — else close with the bad-token, bad-hello or hello-timeout code (extension/shared.js). The welcome
proves to the extension that this server holds the user's pairing key (an HMAC over the hello's nonce; see
supervisor/pairing.py): the extension obeys no server that cannot, whoever answered discovery first. A newer
authenticated connection replaces the old one (the "replaced" code), logged as a security-relevant event. No frame,
however malformed, crashes the actor.

Nothing blocks the inbox: a command is registered with the core and queued to the link's writer task; its envelope
is answered when the matching result/error frame arrives, at its timeout, or when the link drops. Every send has a
deadline: a peer that stops reading is dropped after `SEND_TIMEOUT_S`, and discovery stays available meanwhile.
"""

from __future__ import annotations

import errno
import logging
import math
import secrets
import socket
import time
import uuid
from collections import deque
from pathlib import Path
from typing import assert_never

import attrs
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, WebSocketRequest, WebSocketServer

import supervisor
from supervisor import pairing
from supervisor.constants import SHARED
from supervisor.errors import (
    BridgeError,
    CdpError,
    CommandTimeout,
    ExtensionDisconnected,
    ExtensionNotConnected,
    PortsInUse,
    StateFileError,
    TabClosed,
)
from supervisor.files import ensure_private_dir
from supervisor.otp import ActorContext, Envelope, Reply
from supervisor.pairing import PairingKey
from supervisor.peercred import same_user
from supervisor.peergate import GatedListener, RefusalLog

from ..protocol.common import JSONObject
from ..protocol.relay import (
    DropLink,
    ExtCommand,
    LinkDrop,
    LinkReport,
    LinkStatus,
    PendingCommand,
    RelayInfo,
    RelayInfoReply,
    RelayRequest,
    Subscribe,
    TabDetach,
    TabEvent,
    TabEventKind,
    Unsubscribe,
    WaitConnected,
)
from . import wire

log = logging.getLogger("ai_bridge.relay")
security = logging.getLogger("ai_bridge.security")

HELLO_TIMEOUT_S = 5.0
HANDSHAKE_S = 5.0  # the WebSocket upgrade request must arrive within this (trio-websocket's default is 60 s)
MAX_PER_PEER = 16  # connections one user's processes may hold at once (the extension holds one)
DETAIL_LINES = 20  # refusals logged one by one per interval; the rest are counted
DEAD_AFTER_S = 45.0  # nothing heard for this long: the link is dead
SEND_TIMEOUT_S = 10.0  # a frame the peer does not take within this is a dead link (it stopped reading)
# The transport takes frames up to this size; one over SHARED.max_frame_bytes is then dropped with a log line instead
# of the whole link (trio-websocket would close it with 1009): an extension cuts its events to fit, an older one may
# not, and a page must not be able to cut the link (and the asks on it) with one huge console line.
TRANSPORT_MAX_BYTES = 4 * SHARED.max_frame_bytes
OUTBOX = 256  # frames queued for the writer; a full queue means the peer is not keeping up

Owner = Envelope[RelayRequest] | None  # the request a command answers (None: the relay's own subscribe commands)


@attrs.define(eq=False)
class Connection:
    """An authenticated link: the socket, its protocol core, and the writer's queue."""

    ws: WebSocketConnection
    core: wire.Link[Owner]
    id: str = attrs.field(factory=lambda: uuid.uuid4().hex[:8])
    since: float = attrs.field(factory=time.time)
    last_frame: float = attrs.field(factory=trio.current_time)
    outbox_send: trio.MemorySendChannel[str] = attrs.field(init=False)
    outbox_recv: trio.MemoryReceiveChannel[str] = attrs.field(init=False)
    dead: trio.Event = attrs.field(factory=trio.Event)
    dropped: tuple[int, str] | None = None  # we closed it: the code and reason

    def __attrs_post_init__(self) -> None:
        self.outbox_send, self.outbox_recv = trio.open_memory_channel[str](OUTBOX)

    def queue(self, text: str) -> bool:
        """Queue a frame for the writer; False when the link is dead or not keeping up."""
        if self.dead.is_set():
            return False
        try:
            self.outbox_send.send_nowait(text)
        except (trio.WouldBlock, trio.ClosedResourceError):
            return False
        return True


class Relay:
    def __init__(self, *, extension_origin: str, allow_faults: bool, key: PairingKey) -> None:
        self.token = secrets.token_hex(32)  # 256 bits, per boot (per relay start)
        self.key = key  # the state dir's pairing key: the welcome proves we hold it
        self.server_id = uuid.uuid4().hex
        self.started_at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z"
        self.origin = extension_origin
        self.allow_faults = allow_faults
        self.conn: Connection | None = None
        self.link_changed = trio.Event()
        self.subs: dict[int, tuple[frozenset[str], trio.MemorySendChannel[TabEvent]]] = {}
        self.port = 0
        self.wake_expiry = trio.Event()
        self.last_drop: LinkDrop | None = None
        self.detaches: deque[TabDetach] = deque(maxlen=10)
        self.refusals = RefusalLog("relay", burst=DETAIL_LINES)  # a flood is a line per interval, not per attempt

    # -- the WebSocket side -----------------------------------------------------------------------------------------

    async def handle_request(self, request: WebSocketRequest) -> None:
        try:
            await self._handle(request)
        except ConnectionClosed:
            pass  # the peer went away during the handshake: nothing to clean up beyond what _serve_link did
        except trio.BrokenResourceError as exc:
            log.debug("relay connection broke: %s", exc)

    async def _handle(self, request: WebSocketRequest) -> None:
        try:
            remote, local = request.remote, request.local
        except OSError as exc:  # the peer went away before we looked (ENOTCONN)
            log.debug("relay connection gone before its handshake: %s", exc)
            return
        if not isinstance(remote, str) and not isinstance(local, str) and not same_user(
                (str(remote.address), remote.port), (str(local.address), local.port)):
            # The gate refuses these at accept (supervisor/peergate.py); kept as a second check.
            self.refusals.note("WebSockets from other users' processes",
                               f"refused a WebSocket from another user's process (port {remote.port})")
            await request.reject(403, body=b"forbidden\n")
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers}
        origin = headers.get("origin")
        if origin != self.origin:
            self.refusals.note("WebSocket upgrades from another Origin",
                               f"refused WebSocket upgrade from Origin {origin[:200] if origin else origin!r}")
            await request.reject(403, body=b"forbidden origin\n")
            return
        ws = await request.accept()
        try:
            hello = await self._hello(ws)
            if hello is not None:
                await self._serve_link(ws, hello)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await ws.aclose()

    async def _hello(self, ws: WebSocketConnection) -> wire.Hello | None:
        with trio.move_on_after(HELLO_TIMEOUT_S):
            got = wire.check_hello(await ws.get_message(), token=self.token)
            if isinstance(got, wire.Refusal):
                what = got.log or f"hello refused: {got.reason}"
                if got.security:
                    self.refusals.note(f"hellos ({got.reason[:60]})", what)
                else:
                    log.warning("relay: %s", what)
                with trio.move_on_after(1):
                    await ws.aclose(got.code, got.reason)
                return None
            return got
        self.refusals.note("connections without a hello", f"no hello within {HELLO_TIMEOUT_S:.0f} s")
        with trio.move_on_after(1):
            await ws.aclose(SHARED.close.hello_timeout, "no hello in time")
        return None

    async def _serve_link(self, ws: WebSocketConnection, hello: wire.Hello) -> None:
        conn = Connection(ws, wire.Link(hello))
        old, self.conn = self.conn, conn
        self._link_changed()
        if old is not None:
            security.warning("relay: a new extension connection (%s) replaces %s", conn.id, old.id)
            await self._drop(old, SHARED.close.replaced, "replaced by a newer connection")
        log.info("extension connected (link %s, extension %s)", conn.id, hello.extension_version)
        if (hint := stale_hint(hello.extension_version)) is not None:
            log.warning("the connected extension is version %s, older than this server's %s: %s",
                        hello.extension_version, supervisor.__version__, hint)
        conn.queue(wire.welcome(hello, key=self.key, server_id=self.server_id, token=self.token))
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._writer, conn)
                nursery.start_soon(self._heartbeat, conn)
                nursery.start_soon(self._reader, conn)
                await conn.dead.wait()
                nursery.cancel_scope.cancel()
        finally:
            conn.dead.set()
            if self.conn is conn:
                self.conn = None
                self._link_changed()
                self._notify_all(TabEventKind.DISCONNECTED)
            self._fail(conn.core.drain(), ExtensionDisconnected(
                "the browser extension disconnected while a command was pending",
                hint="It reconnects by itself within seconds; retry the call."))
            log.info("extension link %s closed (%s)", conn.id, ws.closed.code if ws.closed else "?")
            if conn.dropped is not None:
                self.last_drop = LinkDrop(time.time(), conn.dropped[0], conn.dropped[1], by_server=True)
            else:
                closed = ws.closed
                self.last_drop = LinkDrop(time.time(), closed.code if closed else None,
                                          (closed.reason or "") if closed else "", by_server=False)

    async def _reader(self, conn: Connection) -> None:
        try:
            while True:
                raw = await conn.ws.get_message()
                conn.last_frame = trio.current_time()
                received = time.time()
                too_big = wire.oversized(raw, SHARED.max_frame_bytes)
                if too_big is not None:
                    log.warning("extension link %s: dropped %s", conn.id, too_big)
                    continue
                for event in conn.core.receive(raw):
                    self._act(conn, event, received)
        except ConnectionClosed:
            pass
        finally:
            conn.dead.set()

    async def _writer(self, conn: Connection) -> None:
        try:
            async for text in conn.outbox_recv:
                with trio.move_on_after(SEND_TIMEOUT_S) as scope:
                    await conn.ws.send_message(text)
                if scope.cancelled_caught:
                    log.warning("extension link %s took no frame for %.0f s; dropping it", conn.id, SEND_TIMEOUT_S)
                    await self._drop(conn, 1001, "not reading")
                    return
        except (ConnectionClosed, trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            conn.dead.set()

    async def _heartbeat(self, conn: Connection) -> None:
        while True:
            await trio.sleep(SHARED.server_ping_interval_s)
            if trio.current_time() - conn.last_frame > DEAD_AFTER_S:
                log.warning("extension link %s silent for %.0f s; closing it", conn.id, DEAD_AFTER_S)
                await self._drop(conn, 1001, "heartbeat timeout")
                return
            if not conn.queue(conn.core.ping()):
                log.warning("extension link %s is not keeping up; dropping it", conn.id)
                await self._drop(conn, 1001, "not keeping up")
                return

    def _act(self, conn: Connection, event: wire.Event[Owner], received: float) -> None:
        match event:
            case wire.Settled():
                p = event.pending
                if event.result is not None:
                    self._answer(p, event.result)
                elif event.error_code == "no_such_tab":
                    self._answer(p, TabClosed(f"tab {p.tab_id} no longer exists ({event.error_message})"))
                else:
                    self._answer(p, CdpError(f"{p.method} failed: {event.error_message}", ext_code=event.error_code))
            case wire.TabNotice():
                if event.kind is TabEventKind.DETACHED:
                    why = event.params.get("reason")
                    self.detaches.appendleft(TabDetach(received, event.tab_id,
                                                       why[:60] if isinstance(why, str) else "unknown"))
                self._deliver(event, received)
            case wire.Send():
                if not conn.queue(event.text):
                    conn.dead.set()
            case wire.Malformed():
                log.warning("extension sent a malformed frame (%s)", event.reason[:200])
            case wire.Stray():
                log.info("extension: %s", event.detail)
            case _:
                assert_never(event)

    def _deliver(self, notice: wire.TabNotice, received: float) -> None:
        sub = self.subs.get(notice.tab_id)
        if sub is None:
            return
        methods, sink = sub
        if notice.kind is TabEventKind.CDP and notice.method not in methods:
            return
        try:
            sink.send_nowait(TabEvent(notice.kind, notice.tab_id, notice.method, notice.params, received))
        except trio.WouldBlock:
            log.warning("subscriber of tab %d is not keeping up; event %s dropped", notice.tab_id,
                        notice.method or notice.kind)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            self.subs.pop(notice.tab_id, None)

    def _notify_all(self, kind: TabEventKind) -> None:
        for tab, (_, sink) in list(self.subs.items()):
            try:
                sink.send_nowait(TabEvent(kind, tab, received_at=time.time()))
            except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
                pass

    async def _drop(self, conn: Connection, code: int, reason: str) -> None:
        if conn.dropped is None:
            conn.dropped = (code, reason)
        conn.dead.set()
        with trio.move_on_after(1):  # a close frame the peer will not take must not hold us: the stream closes
            try:
                await conn.ws.aclose(code, reason)
            except ConnectionClosed:
                pass

    def _link_changed(self) -> None:
        self.link_changed.set()
        self.link_changed = trio.Event()

    # -- answering commands -------------------------------------------------------------------------------------------

    def _answer(self, p: wire.Pending[Owner], outcome: JSONObject | BridgeError) -> None:
        env = p.owner
        if env is None or env.answered:
            return
        msg = env.message
        assert isinstance(msg, ExtCommand)
        if isinstance(outcome, BridgeError):
            env.fail(outcome)
        else:
            env.reply(msg.reply(outcome))

    def _fail(self, pending: list[wire.Pending[Owner]], exc: BridgeError) -> None:
        for p in pending:
            self._answer(p, exc)

    def _command(self, conn: Connection, env: Owner, msg: ExtCommand) -> None:
        p, frame = conn.core.command(msg.method, msg.params, now=trio.current_time(), timeout_s=msg.timeout_s,
                                     owner=env)
        if not conn.queue(frame):
            conn.core.forget(p.id)
            self._answer(p, ExtensionDisconnected("the browser extension is not keeping up with commands",
                                                  hint="Retry in a moment; see `bridge_status`."))
        self.wake_expiry.set()

    def command(self, env: Envelope[RelayRequest], msg: ExtCommand) -> None:
        conn = self.conn
        if conn is None:
            raise ExtensionNotConnected(
                "the ai-bridge browser extension is not connected",
                hint="Run `ai-bridge doctor`, or load the folder `ai-bridge extension-path` prints as an unpacked "
                "extension in chrome://extensions.")
        self._command(conn, env, msg)

    async def expire(self) -> None:
        """Fail commands whose per-command timeout passed (the extension never answered)."""
        while True:
            conn = self.conn
            soonest = math.inf
            if conn is not None:
                self._fail(conn.core.expired(trio.current_time()), CommandTimeout(
                    "the extension did not answer in time",
                    hint="The browser may be busy or the tab frozen; see `bridge_status`."))
                soonest = conn.core.next_deadline()
            self.wake_expiry = trio.Event()
            with trio.move_on_at(min(soonest, trio.current_time() + 1.0)):
                await self.wake_expiry.wait()

    def status(self) -> LinkReport:
        conn = self.conn
        now = trio.current_time()
        pending = sorted(conn.core.pending.values(), key=lambda p: p.id) if conn else []
        return LinkReport(
            connected=conn is not None, since=conn.since if conn else None,
            extension_version=conn.core.hello.extension_version if conn else None,
            user_agent=conn.core.hello.user_agent if conn else None,
            attached_tabs=tuple(sorted(conn.core.attached)) if conn else (),
            pending_commands=len(pending),
            pending=tuple(PendingCommand(p.id, p.method, p.tab_id, round(now - p.sent_at, 3)) for p in pending[:50]),
            relay_port=self.port, browser_id=conn.core.hello.browser_id if conn else None,
            peer_port=_peer_port(conn.ws) if conn else None,
            expected_version=supervisor.__version__,
            stale_hint=stale_hint(conn.core.hello.extension_version) if conn else None,
            last_drop=self.last_drop, detaches=tuple(self.detaches))

    async def wait_connected(self, timeout_s: float) -> None:
        with trio.move_on_after(timeout_s):
            while self.conn is None:
                await self.link_changed.wait()
            return
        raise ExtensionNotConnected(
            f"no ai-bridge extension connected within {timeout_s:g}s",
            hint="Load the folder `ai-bridge extension-path` prints as an unpacked extension in chrome://extensions "
            "(Developer mode) and pair it with the code `ai-bridge pair` prints (its popup), or run with "
            "--browser launch.")


def _peer_port(ws: WebSocketConnection) -> int | None:
    try:
        remote = ws.remote
    except OSError:  # the peer has just gone (ENOTCONN): a status racing a link's close must not crash the relay
        return None
    port = getattr(remote, "port", None)
    return port if isinstance(port, int) else None


def stale_hint(version: str) -> str | None:
    """What to tell about an extension older than the one this package ships (None: it is current)."""
    if not wire.stale_extension(version, supervisor.__version__):
        return None
    return (f"the connected ai-bridge extension is version {version}, this server ships {supervisor.__version__}: "
            "reload the extension (chrome://extensions → ai-bridge → reload), or Load unpacked the folder "
            "`ai-bridge extension-path` prints if it was loaded from elsewhere")


async def _pairing_key(state_dir: Path | None) -> PairingKey:
    """The state dir's key (made on first start). Without a usable state dir, a key for this process only: the
    browser we launch is paired with it over its pipe, the user's Chrome cannot be."""
    if state_dir is not None:
        try:
            await trio.to_thread.run_sync(ensure_private_dir, state_dir)
            return await trio.to_thread.run_sync(pairing.load_or_create, state_dir)
        except (StateFileError, OSError) as exc:
            log.warning("no pairing key in the state dir (%s); using one for this run only: only a browser "
                        "ai-bridge launches can connect", exc)
    return pairing.generate()


async def run(
    ctx: ActorContext[RelayRequest],
    *,
    state_dir: Path | None = None,
    extension_origin: str = SHARED.extension_origin,
    allow_faults: bool = False,
    port: int = 0,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    relay = Relay(extension_origin=extension_origin, allow_faults=allow_faults, key=await _pairing_key(state_dir))
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a pinned port again right after a restart
    try:
        # Port 0: any free one (discovery tells the extension which). A pinned one (--relay-port) is for an SSH
        # forward, whose two ends must be the same number: the extension connects to the URL discovery gives.
        await sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
            raise
        raise PortsInUse(f"relay: port {port} is in use ({exc.strerror})",
                         hint="Stop what holds it (another ai-bridge with the same --relay-port?), or pin "
                         "another port with --relay-port and forward that one.") from exc
    sock.listen(64)
    # Other users' processes are refused at accept, before the handshake is read; a handshake must end within
    # HANDSHAKE_S (a half-open connection is closed), and one user holds at most MAX_PER_PEER connections.
    listener = GatedListener(sock, relay.refusals, max_per_peer=MAX_PER_PEER)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay.refusals.run)
        server = WebSocketServer(relay.handle_request, [listener], handler_nursery=nursery,  # type: ignore[list-item]
                                 max_message_size=TRANSPORT_MAX_BYTES, connect_timeout=HANDSHAKE_S)
        await nursery.start(server.run)
        relay.port = listener.port
        nursery.start_soon(relay.expire)
        log.info("relay listening on ws://127.0.0.1:%d", relay.port)
        task_status.started()

        async def wait(msg: RelayRequest) -> Reply[object]:
            assert isinstance(msg, WaitConnected)
            await relay.wait_connected(msg.timeout_s)
            return msg.reply(None)

        async def handle(msg: RelayRequest) -> Reply[object]:
            match msg:
                case RelayInfo():
                    return msg.reply(RelayInfoReply(f"ws://127.0.0.1:{relay.port}", relay.token, relay.server_id,
                                                    relay.started_at, relay.key.key_id, relay.key.code))
                case LinkStatus():
                    return msg.reply(relay.status())
                case Subscribe():
                    relay.subs[msg.tab_id] = (frozenset(msg.methods), msg.sink)
                    if relay.conn is not None:
                        relay._command(relay.conn, None, ExtCommand(
                            "cdp.subscribe", {"tabId": msg.tab_id, "methods": list(msg.methods)}, 10))
                    return msg.reply(None)
                case Unsubscribe():
                    relay.subs.pop(msg.tab_id, None)
                    return msg.reply(None)
                case DropLink():
                    if not relay.allow_faults:
                        raise BridgeError("drop_extension is a fault; the server runs without --allow-faults")
                    conn = relay.conn
                    if conn is not None:
                        log.warning("dropping the extension link: %s", msg.reason)
                        await relay._drop(conn, SHARED.close.dropped, msg.reason)
                    return msg.reply(conn is not None)
                case ExtCommand() | WaitConnected():
                    raise AssertionError("dispatched before handle")
                case _:
                    assert_never(msg)

        try:
            async for env in ctx.messages():
                msg = env.message
                if isinstance(msg, ExtCommand):
                    try:
                        relay.command(env, msg)  # answered later, from the reader
                    except BridgeError as exc:
                        env.fail(exc)
                elif isinstance(msg, WaitConnected):
                    ctx.answer_soon(nursery, env, wait)  # waiting must not block the inbox
                else:
                    await ctx.answer(env, handle)
        finally:
            conn = relay.conn
            if conn is not None:
                relay._fail(conn.core.drain(), ExtensionDisconnected("the relay is shutting down"))
            nursery.cancel_scope.cancel()
