"""The relay's protocol core, without I/O (docs/protocol.md): text frames in, events and frames out.

Like hypercorn's ``protocol/`` over h11/wsproto, nothing here touches a socket, a clock or a task: the actor
(`actors.relay.actor`) moves bytes between the WebSocket and `Link`, and acts on the events it returns. So every
malformed frame, bad hello and late reply can be unit-tested in microseconds (tests/test_relay_wire.py), and no
input can raise out of here: a frame either becomes an event or a `Malformed` event with the reason.
"""

from __future__ import annotations

import hmac
import json
import re
from typing import Generic, TypeVar

import attrs

from supervisor import pairing
from supervisor.constants import SHARED

from ..protocol.common import JSON, JSONObject
from ..protocol.relay import TabEventKind

T = TypeVar("T")

# Methods whose purpose is to end the tab or our attachment: a tabClosed/detached event is their success.
ENDING_METHODS = frozenset({"tabs.close", "debugger.detach"})


# -- parsing --------------------------------------------------------------------------------------------------------


def loads(raw: str | bytes) -> JSON:
    """`json.loads` for frames from outside: bytes that are not UTF-8, and nesting too deep, are ValueErrors."""
    try:
        value: JSON = json.loads(raw)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: {exc.reason}") from None
    return value


def dumps(frame: JSONObject) -> str:
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False)


def oversized(raw: str | bytes, limit: int) -> str | None:
    """None for a frame within `limit` bytes; else what it was (its type and event name, read from its head), for
    the log line of a frame that is dropped rather than parsed."""
    # A str of n chars is at most 4n UTF-8 bytes: most frames are settled without encoding them.
    size = len(raw) if isinstance(raw, bytes) or len(raw) * 4 <= limit else len(raw.encode("utf-8", "replace"))
    if size <= limit:
        return None
    head = raw[:200] if isinstance(raw, str) else raw[:200].decode("utf-8", "replace")
    kind = re.search(r'"type"\s*:\s*"([a-z]{1,20})"', head)
    event = re.search(r'"(?:event|method)"\s*:\s*"([A-Za-z.]{1,60})"', head)
    what = " ".join(x.group(1) for x in (kind, event) if x) or "unknown"
    return f"a {size}-byte frame ({what}) over the {limit}-byte limit"


@attrs.frozen
class Hello:
    extension_version: str
    user_agent: str
    nonce: str | None = None  # the extension's challenge: the welcome proves our pairing key over it
    browser_id: str | None = None  # the browser profile's random id (one per profile): tells browsers apart


@attrs.frozen
class Refusal:
    """Why a hello is refused, as a WebSocket close code and reason."""

    code: int
    reason: str  # the close reason the peer sees
    security: bool  # worth a line in the security log
    log: str = ""  # what our log says (default: the reason)


def check_hello(raw: str | bytes, *, token: str, version: int = SHARED.protocol_version) -> Hello | Refusal:
    """The first frame must be ``{"type": "hello", "token": <ours>, "protocolVersion": <ours>}``."""
    try:
        hello = loads(raw)
    except ValueError as exc:
        return Refusal(SHARED.close.bad_hello, "expected a hello frame", security=True,
                       log=f"first frame was not a hello ({exc})")
    if not isinstance(hello, dict) or hello.get("type") != "hello":
        return Refusal(SHARED.close.bad_hello, "expected a hello frame", security=True,
                       log="first frame was not a hello")
    given = hello.get("token")
    # compare_digest on str needs ASCII; a lone surrogate or any non-ASCII token is simply wrong.
    if not isinstance(given, str) or not given.isascii() or not hmac.compare_digest(given.encode("ascii"),
                                                                                    token.encode("ascii")):
        return Refusal(SHARED.close.bad_token, "bad token", security=True, log="hello with a wrong token refused")
    if hello.get("protocolVersion") != version:
        return Refusal(SHARED.close.bad_hello, f"unsupported protocol version; server speaks {version}",
                       security=False)
    nonce = hello.get("nonce")
    if nonce is not None and (not isinstance(nonce, str) or not pairing.NONCE.fullmatch(nonce)):
        return Refusal(SHARED.close.bad_hello, "the hello's nonce must be 32 to 128 lowercase hex digits",
                       security=True, log="hello with a malformed nonce refused")
    ext, agent = hello.get("extensionVersion"), hello.get("userAgent")
    browser_id = hello.get("browserId")
    return Hello(extension_version=ext[:40] if isinstance(ext, str) else "?",
                 user_agent=agent[:300] if isinstance(agent, str) else "", nonce=nonce,
                 browser_id=browser_id if isinstance(browser_id, str) and BROWSER_ID.fullmatch(browser_id) else None)


BROWSER_ID = re.compile(r"[0-9a-f]{32}")


def stale_extension(version: str, shipped: str) -> bool:
    """Whether a connected extension's version is older than the one this package ships (a Chrome that still runs
    the files loaded before an upgrade). Versions that do not parse are stale: they cannot be current."""
    def parse(v: str) -> tuple[int, ...] | None:
        parts = v.split(".")
        return tuple(int(p) for p in parts) if all(p.isdigit() and len(p) < 6 for p in parts) else None

    ours, theirs = parse(shipped), parse(version)
    return ours is not None and (theirs is None or theirs < ours)


def welcome(hello: Hello, *, key: pairing.PairingKey, server_id: str, token: str) -> str:
    """The answer to an accepted hello. With the extension's nonce it carries the proof that this server holds the
    pairing key (the extension obeys nothing before checking it); a hello without one (a raw test client, an
    extension too old to check) gets no proof, and our extension would not obey such a welcome."""
    frame: JSONObject = {"type": "welcome", "serverId": server_id, "protocolVersion": SHARED.protocol_version}
    if hello.nonce is not None:
        frame["proof"] = key.server_proof(hello.nonce, server_id, token)
    return dumps(frame)


# -- events the core returns ----------------------------------------------------------------------------------------


@attrs.frozen
class Settled(Generic[T]):
    """A command got its reply: `result`, or the extension's error `code` and `message`."""

    pending: Pending[T]
    result: JSONObject | None
    error_code: str = ""
    error_message: str = ""


@attrs.frozen
class TabNotice:
    """An event for one tab (CDP event, detach, close, update)."""

    kind: TabEventKind
    tab_id: int
    method: str
    params: JSONObject


@attrs.frozen
class Send:
    """A frame to send back (pong, or an error about a bad frame)."""

    text: str


@attrs.frozen
class Malformed:
    """A frame that was not understood; logged, answered with a ``bad_frame`` error, and otherwise ignored."""

    reason: str


@attrs.frozen
class Stray:
    """A reply or error for no pending command (a late reply after its timeout)."""

    detail: str


Event = Settled[T] | TabNotice | Send | Malformed | Stray


@attrs.define(eq=False)
class Pending(Generic[T]):
    id: int
    method: str
    tab_id: int | None
    deadline: float
    sent_at: float
    owner: T  # the adapter's handle (its request envelope); opaque here


@attrs.define
class Link(Generic[T]):
    """One authenticated extension connection: its pending commands and attached tabs."""

    hello: Hello
    pending: dict[int, Pending[T]] = attrs.field(factory=dict)
    attached: set[int] = attrs.field(factory=set)
    next_id: int = 1
    pings: int = 0

    # -- outgoing ---------------------------------------------------------------------------------------------------

    def command(self, method: str, params: JSONObject, *, now: float, timeout_s: float,
                owner: T) -> tuple[Pending[T], str]:
        """Register a command; returns it and the frame to send."""
        cid = self.next_id
        self.next_id += 1
        tab = params.get("tabId")
        p = Pending(cid, method, tab if isinstance(tab, int) and not isinstance(tab, bool) else None,
                    now + max(0.1, min(timeout_s, 600.0)), now, owner)
        self.pending[cid] = p
        if method == "debugger.attach" and p.tab_id is not None:
            self.attached.add(p.tab_id)  # optimistic; an error reply takes it back
        return p, dumps({"type": "command", "id": cid, "method": method, "params": params})

    def forget(self, cid: int) -> Pending[T] | None:
        return self.pending.pop(cid, None)

    def ping(self) -> str:
        self.pings += 1
        return dumps({"type": "ping", "id": self.pings})

    def expired(self, now: float) -> list[Pending[T]]:
        """Commands whose timeout passed (the extension never answered); removed from the table."""
        gone = [p for p in self.pending.values() if p.deadline <= now]
        for p in gone:
            del self.pending[p.id]
        return gone

    def next_deadline(self) -> float:
        return min((p.deadline for p in self.pending.values()), default=float("inf"))

    def drain(self) -> list[Pending[T]]:
        """Every pending command, removed (the link is gone)."""
        out = list(self.pending.values())
        self.pending.clear()
        return out

    # -- incoming ---------------------------------------------------------------------------------------------------

    def receive(self, raw: str | bytes) -> list[Event[T]]:
        """One frame from the extension → what it means. Never raises."""
        try:
            frame = loads(raw)
        except ValueError as exc:
            return self._bad(f"malformed frame: {exc}")
        if not isinstance(frame, dict):
            return self._bad("a frame must be a JSON object")
        kind = frame.get("type")
        if kind == "ping":
            return [Send(dumps({"type": "pong", "id": frame.get("id")}))]
        if kind in ("pong", "hello"):
            return []  # hearing anything is all a pong is for; a second hello changes nothing
        if kind == "result" or kind == "error":
            return [self._settle(frame, kind)]
        if kind == "event":
            return self._event(frame)
        return self._bad(f"unknown frame type {str(kind)[:40]!r}")

    def _bad(self, reason: str) -> list[Event[T]]:
        error: JSONObject = {"code": "bad_frame", "message": reason}
        return [Malformed(reason), Send(dumps({"type": "error", "id": None, "error": error}))]

    def _settle(self, frame: JSONObject, kind: str) -> Event[T]:
        cid = frame.get("id")
        p = self.pending.pop(cid, None) if isinstance(cid, int) and not isinstance(cid, bool) else None
        if p is None:
            return Stray(f"{kind} for no pending command (id {str(cid)[:20]}): {str(frame.get('error'))[:200]}")
        if kind == "result":
            result = frame.get("result")
            return Settled(p, result if isinstance(result, dict) else {"value": result})
        raw_err = frame.get("error")
        err: JSONObject = raw_err if isinstance(raw_err, dict) else {}
        code, message = err.get("code"), err.get("message")
        if p.method == "debugger.attach" and p.tab_id is not None:
            # Counted as attached when sent; it was not (tab_busy: another server leased it first, or gone).
            self.attached.discard(p.tab_id)
        return Settled(p, None, code[:60] if isinstance(code, str) else "cdp_error",
                       message[:2000] if isinstance(message, str) else "unknown error")

    def _event(self, frame: JSONObject) -> list[Event[T]]:
        tab, name = frame.get("tabId"), frame.get("event")
        if not isinstance(tab, int) or isinstance(tab, bool) or not isinstance(name, str):
            return self._bad("an event needs an integer tabId and a string event")
        try:
            kind = TabEventKind(name)
        except ValueError:
            return self._bad(f"unknown event {name[:40]!r}")
        out: list[Event[T]] = []
        if kind in (TabEventKind.DETACHED, TabEventKind.TAB_CLOSED):
            self.attached.discard(tab)
            # Commands for that tab can no longer succeed: fail them now rather than at their timeout, except the
            # ones whose very purpose is to close or detach (their reply is on its way).
            for p in [p for p in self.pending.values() if p.tab_id == tab and p.method not in ENDING_METHODS]:
                del self.pending[p.id]
                out.append(Settled(p, None, "no_such_tab", f"tab {tab} was closed or detached ({name})"))
        method = frame.get("method")
        raw_params = frame.get("params")
        params: JSONObject = raw_params if isinstance(raw_params, dict) else {}
        extra = {k: v for k, v in frame.items() if k not in ("type", "event", "tabId", "method", "params")}
        out.append(TabNotice(kind, tab, method if isinstance(method, str) else "", {**extra, **params}))
        return out
