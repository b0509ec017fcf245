"""Relay actor: the WebSocket the extension connects to, and the CDP-session API other actors use over it.

Security (docs/security.md): loopback only; the upgrade must carry ``Origin: chrome-extension://<our id>`` (a web
page cannot forge it); the first frame must be a ``hello`` with the per-boot 256-bit token (constant-time compare,
never logged) and protocol version 1 within 5 s — else close 4401 / 4400 / 4408. A newer authenticated connection
replaces the old one (4409), logged as a security-relevant event.

Commands never block the actor's loop: a command frame is sent and its envelope parked by id until the matching
result/error frame arrives (or its timeout, or the socket drops — then every pending command fails at once with
`ExtensionDisconnected`).
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import secrets
import time
import uuid
from typing import Any

import attrs
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, WebSocketRequest, serve_websocket

from supervisor.errors import (
    BridgeError,
    CdpError,
    CommandTimeout,
    ExtensionDisconnected,
    ExtensionNotConnected,
    InvalidArgument,
    TabClosed,
)
from supervisor.runtime import ActorContext, Envelope

from .messages import (
    EXTENSION_ID,
    PROTOCOL_VERSION,
    DropLink,
    ExtCommand,
    LinkStatus,
    RelayInfo,
    RelayInfoReply,
    Subscribe,
    TabEvent,
    Unsubscribe,
    WaitConnected,
)

log = logging.getLogger("ai_bridge.relay")
security = logging.getLogger("ai_bridge.security")

MAX_FRAME = 4 * 1024 * 1024
HELLO_TIMEOUT_S = 5.0
PING_EVERY_S = 15.0
DEAD_AFTER_S = 45.0
FRAME_TYPES = {"result", "error", "event", "ping", "pong", "hello"}

CLOSE_BAD_VERSION = 4400
CLOSE_BAD_TOKEN = 4401
CLOSE_HELLO_TIMEOUT = 4408
CLOSE_REPLACED = 4409
CLOSE_DROPPED = 4000  # the console's drop_extension(): the extension treats it like a network drop


@attrs.define(eq=False)
class Pending:
    env: Envelope[Any] | None
    method: str
    tab_id: int | None
    deadline: float
    sent_at: float = attrs.field(factory=trio.current_time)


class Link:
    """One authenticated extension connection."""

    def __init__(self, ws: WebSocketConnection, hello: dict[str, Any]) -> None:
        self.ws = ws
        self.id = uuid.uuid4().hex[:8]
        self.extension_version = str(hello.get("extensionVersion", "?"))[:40]
        self.user_agent = str(hello.get("userAgent", ""))[:300]
        self.since = time.time()
        self.last_frame = trio.current_time()
        self.closed = trio.Event()
        self.attached: set[int] = set()

    async def send(self, frame: dict[str, Any]) -> None:
        await self.ws.send_message(json.dumps(frame, separators=(",", ":")))


class Relay:
    def __init__(self, ctx: ActorContext, *, extension_id: str) -> None:
        self.ctx = ctx
        self.token = secrets.token_hex(32)  # 256 bits, per boot (per relay start)
        self.server_id = uuid.uuid4().hex
        self.started_at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z"
        self.origin = f"chrome-extension://{extension_id}"
        self.link: Link | None = None
        self.link_changed = trio.Event()
        self.pending: dict[int, Pending] = {}
        self.next_id = 1
        self.subs: dict[int, tuple[frozenset[str], trio.MemorySendChannel[TabEvent]]] = {}
        self.port = 0

    # -- the WebSocket side -----------------------------------------------------------------------------------------

    async def handle_request(self, request: WebSocketRequest) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers}
        origin = headers.get("origin")
        if origin != self.origin:
            security.warning("relay: refused WebSocket upgrade from Origin %r", origin)
            await request.reject(403, body=b"forbidden origin\n")
            return
        ws = await request.accept()
        try:
            hello = await self._hello(ws)
        except ConnectionClosed:
            return
        if hello is None:
            return
        link = Link(ws, hello)
        old, self.link = self.link, link
        self._link_changed()
        if old is not None:
            security.warning("relay: a new extension connection (%s) replaces %s", link.id, old.id)
            await self._drop(old, CLOSE_REPLACED, "replaced by a newer connection")
        log.info("extension connected (link %s, extension %s)", link.id, link.extension_version)
        try:
            await link.send({"type": "welcome", "serverId": self.server_id, "protocolVersion": PROTOCOL_VERSION})
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._heartbeat, link)
                await self._read_loop(link)
                nursery.cancel_scope.cancel()
        except* ConnectionClosed as closed:
            # The nursery wraps the read loop's (or the heartbeat's) ConnectionClosed in an ExceptionGroup; a
            # plain `except ConnectionClosed` missed it and every extension disconnect crashed the relay actor.
            leaf: BaseException = closed
            while isinstance(leaf, BaseExceptionGroup):
                leaf = leaf.exceptions[0]
            log.info("extension link %s closed (%s)", link.id, getattr(getattr(leaf, "reason", None), "code", "?"))
        finally:
            if self.link is link:
                self.link = None
                self._link_changed()
                self._fail_all(ExtensionDisconnected(
                    "the browser extension disconnected while a command was pending",
                    hint="It reconnects by itself within seconds; retry the call."))
                self._notify_all("disconnected")
            link.closed.set()
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await ws.aclose()

    async def _hello(self, ws: WebSocketConnection) -> dict[str, Any] | None:
        with trio.move_on_after(HELLO_TIMEOUT_S):
            raw = await ws.get_message()
            try:
                hello = json.loads(raw)
            except (ValueError, TypeError):
                hello = None
            if not isinstance(hello, dict) or hello.get("type") != "hello":
                security.warning("relay: first frame was not a hello")
                await ws.aclose(CLOSE_BAD_VERSION, "expected a hello frame")
                return None
            token = hello.get("token")
            if not isinstance(token, str) or not hmac.compare_digest(token.encode(), self.token.encode()):
                security.warning("relay: hello with a wrong token refused")
                await ws.aclose(CLOSE_BAD_TOKEN, "bad token")
                return None
            if hello.get("protocolVersion") != PROTOCOL_VERSION:
                await ws.aclose(CLOSE_BAD_VERSION, f"unsupported protocol version; server speaks {PROTOCOL_VERSION}")
                return None
            return hello
        security.warning("relay: no hello within %.0f s", HELLO_TIMEOUT_S)
        await ws.aclose(CLOSE_HELLO_TIMEOUT, "no hello in time")
        return None

    async def _drop(self, link: Link, code: int, reason: str) -> None:
        with trio.move_on_after(1):
            try:
                await link.ws.aclose(code, reason)
            except ConnectionClosed:
                pass

    async def _heartbeat(self, link: Link) -> None:
        n = 0
        while True:
            await trio.sleep(PING_EVERY_S)
            if trio.current_time() - link.last_frame > DEAD_AFTER_S:
                log.warning("extension link %s silent for %.0f s; closing it", link.id, DEAD_AFTER_S)
                await self._drop(link, 1001, "heartbeat timeout")
                return
            n += 1
            await link.send({"type": "ping", "id": n})

    async def _read_loop(self, link: Link) -> None:
        while True:
            raw = await link.ws.get_message()
            link.last_frame = trio.current_time()
            received = time.time()
            try:
                frame = json.loads(raw)
                if not isinstance(frame, dict) or frame.get("type") not in FRAME_TYPES:
                    raise ValueError("not an object with a known type")
            except (ValueError, TypeError) as exc:
                log.warning("extension sent a malformed frame (%s)", exc)
                await link.send({"type": "error", "id": None,
                                 "error": {"code": "bad_frame", "message": f"malformed frame: {exc}"}})
                continue
            kind = frame["type"]
            if kind == "ping":
                await link.send({"type": "pong", "id": frame.get("id")})
            elif kind in ("result", "error"):
                self._settle(frame)
            elif kind == "event":
                self._event(link, frame, received)
            # pong and stray hellos need nothing beyond updating last_frame

    def _settle(self, frame: dict[str, Any]) -> None:
        cid = frame.get("id")
        p = self.pending.pop(cid, None) if isinstance(cid, int) else None
        if p is None:
            if frame["type"] == "error":
                log.warning("extension reported an error: %s", str(frame.get("error"))[:300])
            return  # late reply to a command that already timed out
        if frame["type"] == "result":
            result = frame.get("result")
            self._finish(p, result=result if isinstance(result, dict) else {"value": result})
        else:
            raw_err = frame.get("error")
            err: dict[str, Any] = raw_err if isinstance(raw_err, dict) else {}
            code, message = str(err.get("code", "cdp_error")), str(err.get("message", "unknown error"))
            exc: BaseException
            if code == "no_such_tab":
                exc = TabClosed(f"tab {p.tab_id} no longer exists ({message})")
            else:
                exc = CdpError(f"{p.method} failed: {message}", ext_code=code)
            if p.method == "debugger.attach" and p.tab_id is not None and self.link is not None:
                # Counted as attached when sent; it was not (tab_busy: another server leased it first, or gone).
                self.link.attached.discard(p.tab_id)
            self._finish(p, error=exc)

    def _event(self, link: Link, frame: dict[str, Any], received: float) -> None:
        tab = frame.get("tabId")
        name = frame.get("event")
        if not isinstance(tab, int) or not isinstance(name, str):
            return
        if name in ("detached", "tabClosed"):
            link.attached.discard(tab)
            # Commands for that tab can no longer succeed: fail them now rather than at their timeout.
            for cid, p in list(self.pending.items()):
                # ...except the commands whose very purpose is to close or detach: they succeed with their reply.
                if p.tab_id == tab and p.method not in ("tabs.close", "debugger.detach"):
                    del self.pending[cid]
                    self._finish(p, error=TabClosed(f"tab {tab} was closed or detached ({name})"))
        sub = self.subs.get(tab)
        if sub is None:
            log.debug("event %s for tab %d has no subscriber", name, tab)
            return
        methods, sink = sub
        method = str(frame.get("method", ""))
        if name == "cdp" and method not in methods:
            return
        raw_params = frame.get("params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        extra = {k: v for k, v in frame.items() if k not in ("type", "event", "tabId", "method", "params")}
        try:
            sink.send_nowait(TabEvent(name, tab, method, {**extra, **params}, received))
        except trio.WouldBlock:
            log.warning("subscriber of tab %d is not keeping up; event %s dropped", tab, method or name)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            self.subs.pop(tab, None)

    def _notify_all(self, kind: str) -> None:
        for tab, (_, sink) in list(self.subs.items()):
            try:
                sink.send_nowait(TabEvent(kind, tab, received_at=time.time()))
            except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
                pass

    def _finish(self, p: Pending, *, result: Any = None, error: BaseException | None = None) -> None:
        if p.env is not None and not p.env.answered:
            if error is not None:
                p.env.fail(error)
            else:
                p.env.reply(result)
            self.ctx.inbox.done(p.env)

    def _fail_all(self, exc: BaseException) -> None:
        pending, self.pending = self.pending, {}
        for p in pending.values():
            self._finish(p, error=exc)

    def _link_changed(self) -> None:
        self.link_changed.set()
        self.link_changed = trio.Event()

    # -- the actor side ---------------------------------------------------------------------------------------------

    async def command(self, env: Envelope[Any] | None, msg: ExtCommand) -> Pending:
        link = self.link
        if link is None:
            raise ExtensionNotConnected(
                "the ai-bridge browser extension is not connected",
                hint="Run `ai-bridge doctor`, or load the folder `ai-bridge extension-path` prints as an unpacked "
                "extension in chrome://extensions.")
        if not isinstance(msg.method, str) or not isinstance(msg.params, dict):
            raise InvalidArgument("extension command needs a method name and a params object")
        cid = self.next_id
        self.next_id += 1
        tab = msg.params.get("tabId")
        p = Pending(env, msg.method, tab if isinstance(tab, int) else None,
                    trio.current_time() + max(0.1, min(msg.timeout_s, 600.0)))
        self.pending[cid] = p
        try:
            await link.send({"type": "command", "id": cid, "method": msg.method, "params": msg.params})
        except ConnectionClosed as exc:
            self.pending.pop(cid, None)
            raise ExtensionDisconnected("the browser extension disconnected") from exc
        if msg.method == "debugger.attach" and p.tab_id is not None:
            link.attached.add(p.tab_id)
        return p

    async def expire(self) -> None:
        """Fail commands whose per-command timeout passed (the extension never answered)."""
        while True:
            now = trio.current_time()
            soonest = math.inf
            for cid, p in list(self.pending.items()):
                if p.deadline <= now:
                    del self.pending[cid]
                    self._finish(p, error=CommandTimeout(
                        f"the extension did not answer {p.method} in time",
                        hint="The browser may be busy or the tab frozen; see `bridge_status`."))
                else:
                    soonest = min(soonest, p.deadline)
            with trio.move_on_at(min(soonest, now + 1.0)):
                await trio.sleep_forever()

    def status(self) -> dict[str, Any]:
        link = self.link
        now = trio.current_time()
        return {
            "connected": link is not None,
            "since": link.since if link else None,
            "extensionVersion": link.extension_version if link else None,
            "userAgent": link.user_agent if link else None,
            "attachedTabs": sorted(link.attached) if link else [],
            "pendingCommands": len(self.pending),
            "pending": [{"id": cid, "method": p.method, "tabId": p.tab_id, "ageS": round(now - p.sent_at, 3)}
                        for cid, p in sorted(self.pending.items())[:50]],
            "relayPort": self.port,
        }

    async def wait_connected(self, timeout_s: float) -> None:
        with trio.move_on_after(timeout_s):
            while self.link is None:
                await self.link_changed.wait()
            return
        raise ExtensionNotConnected(
            f"no ai-bridge extension connected within {timeout_s:g}s",
            hint="Load the folder `ai-bridge extension-path` prints as an unpacked extension in chrome://extensions "
            "(Developer mode), or run with --browser launch.")


async def run(
    ctx: ActorContext,
    *,
    extension_id: str = EXTENSION_ID,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    relay = Relay(ctx, extension_id=extension_id)
    async with trio.open_nursery() as nursery:
        server = await nursery.start(
            lambda task_status: serve_websocket(
                relay.handle_request, "127.0.0.1", 0, None, handler_nursery=nursery,
                max_message_size=MAX_FRAME, task_status=task_status))
        relay.port = server.port
        nursery.start_soon(relay.expire)
        log.info("relay listening on ws://127.0.0.1:%d", relay.port)
        task_status.started()
        try:
            async for env in ctx.messages():
                msg = env.message
                try:
                    if isinstance(msg, ExtCommand):
                        await relay.command(env, msg)  # answered later, from the read loop
                        continue
                    if isinstance(msg, RelayInfo):
                        env.reply(RelayInfoReply(f"ws://127.0.0.1:{relay.port}", relay.token, relay.server_id,
                                                 relay.started_at))
                    elif isinstance(msg, LinkStatus):
                        env.reply(relay.status())
                    elif isinstance(msg, WaitConnected):
                        # Waiting must not block the loop: park it in a task.
                        nursery.start_soon(_answer_wait, ctx, env, relay, msg.timeout_s)
                        continue
                    elif isinstance(msg, Subscribe):
                        relay.subs[msg.tab_id] = (frozenset(msg.methods), msg.sink)
                        if relay.link is not None:
                            await relay.command(None, ExtCommand(
                                "cdp.subscribe", {"tabId": msg.tab_id, "methods": list(msg.methods)}, 10))
                        env.reply(None)
                    elif isinstance(msg, DropLink):
                        link = relay.link
                        if link is not None:
                            log.warning("dropping the extension link: %s", msg.reason)
                            await relay._drop(link, CLOSE_DROPPED, msg.reason)
                        env.reply(link is not None)
                    elif isinstance(msg, Unsubscribe):
                        relay.subs.pop(msg.tab_id, None)
                        env.reply(None)
                    else:
                        raise InvalidArgument(f"relay does not accept {type(msg).__name__}")
                except BridgeError as exc:
                    if not env.answered:
                        env.fail(exc)
                ctx.inbox.done(env)
        finally:
            relay._fail_all(ExtensionDisconnected("the relay is shutting down"))
            nursery.cancel_scope.cancel()


async def _answer_wait(ctx: ActorContext, env: Envelope[Any], relay: Relay, timeout_s: float) -> None:
    try:
        await relay.wait_connected(timeout_s)
    except ExtensionNotConnected as exc:
        env.fail(exc)
    else:
        env.reply(None)
    ctx.inbox.done(env)
