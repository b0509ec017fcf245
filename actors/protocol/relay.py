"""relay: the extension's WebSocket, and the extension commands other actors send over it."""

from __future__ import annotations

import enum

import attrs
import trio

from supervisor.otp import Address, Request

from .common import JSONObject


@attrs.frozen
class RelayInfoReply:
    ws_url: str
    token: str = attrs.field(repr=False)  # never in logs
    server_id: str
    started_at: str
    key_id: str  # names the pairing key in discovery answers (public)
    pairing_code: str = attrs.field(repr=False)  # the key itself: handed only to a browser we launched, over its pipe


@attrs.frozen
class RelayInfo(Request[RelayInfoReply]):
    """Asked by discovery for every /mcp-discovery answer."""


@attrs.frozen
class PendingCommand:
    id: int
    method: str
    tab_id: int | None
    age_s: float


@attrs.frozen
class LinkDrop:
    """How the last link ended, as the relay saw it (the browser actor adds the cause behind it)."""

    at: float  # time.time()
    code: int | None  # the WebSocket close code (1006: closed without a close frame)
    reason: str  # the close reason, or ours when we dropped it
    by_server: bool  # we closed it (replaced, heartbeat timeout, not reading)

    def as_json(self) -> dict[str, object]:
        return {"at": self.at, "code": self.code, "reason": self.reason, "byServer": self.by_server}


@attrs.frozen
class TabDetach:
    """A tab the debugger was detached from without our asking: Chrome's reason (target_closed,
    canceled_by_user: the user closed the infobar or opened DevTools)."""

    at: float
    tab_id: int
    reason: str

    def as_json(self) -> dict[str, object]:
        return {"at": self.at, "tabId": self.tab_id, "reason": self.reason}


@attrs.frozen
class LinkReport:
    connected: bool
    since: float | None  # time.time() of the connection
    extension_version: str | None
    user_agent: str | None
    attached_tabs: tuple[int, ...]
    pending_commands: int
    pending: tuple[PendingCommand, ...]  # the oldest ones
    relay_port: int
    browser_id: str | None = None  # the connected browser profile's id (its hello), when the extension sends one
    peer_port: int | None = None  # the connection's loopback port on the browser's side (who holds it)
    expected_version: str | None = None  # the extension version this package ships
    stale_hint: str | None = None  # set when the connected extension is older than the one shipped
    last_drop: LinkDrop | None = None
    detaches: tuple[TabDetach, ...] = ()  # the latest first

    def as_json(self) -> dict[str, object]:
        return {"connected": self.connected, "since": self.since, "extensionVersion": self.extension_version,
                "userAgent": self.user_agent, "attachedTabs": list(self.attached_tabs),
                "pendingCommands": self.pending_commands, "relayPort": self.relay_port,
                "pending": [{"id": p.id, "method": p.method, "tabId": p.tab_id, "ageS": p.age_s}
                            for p in self.pending],
                "expectedVersion": self.expected_version, "stale": self.stale_hint is not None,
                "hint": self.stale_hint, "lastDrop": self.last_drop.as_json() if self.last_drop else None,
                "tabDetaches": [d.as_json() for d in self.detaches]}


@attrs.frozen
class LinkStatus(Request[LinkReport]):
    pass


@attrs.frozen
class WaitConnected(Request[None]):
    """→ None once an extension is connected; `ExtensionNotConnected` after `timeout_s`."""

    timeout_s: float


@attrs.frozen
class ExtCommand(Request[JSONObject]):
    """One extension command (docs/protocol.md): tabs.*, debugger.*, cdp.*, ext.info. → its result object, which
    the sender validates (`actors.cdp`) before use."""

    method: str
    params: JSONObject = attrs.field(factory=dict)
    timeout_s: float = 30.0


class TabEventKind(enum.StrEnum):
    CDP = "cdp"
    DETACHED = "detached"
    TAB_CLOSED = "tabClosed"
    TAB_UPDATED = "tabUpdated"
    DISCONNECTED = "disconnected"
    POLICY_BLOCKED = "policyBlocked"  # the extension blocked a general tab's navigation to a denied host


@attrs.frozen
class TabEvent:
    """What a subscriber receives."""

    kind: TabEventKind
    tab_id: int
    method: str = ""
    params: JSONObject = attrs.field(factory=dict)
    received_at: float = 0.0  # time.time() when the relay read the frame


@attrs.frozen
class Subscribe(Request[None]):
    """Deliver `TabEvent`s for `tab_id` into `sink` (CDP events whose method is in `methods`, plus detach/close
    notices). Replaces an earlier subscription for the same tab."""

    tab_id: int
    methods: tuple[str, ...]
    sink: trio.MemorySendChannel[TabEvent] = attrs.field(eq=False, repr=False)


@attrs.frozen
class Unsubscribe(Request[None]):
    tab_id: int


@attrs.frozen
class DropLink(Request[bool]):
    """A fault for the console (only with --allow-faults): close the extension's WebSocket as if the network dropped
    it. → was one connected. The extension reconnects through discovery as after any drop."""

    reason: str = "dropped from the console"


RelayRequest = RelayInfo | LinkStatus | WaitConnected | ExtCommand | Subscribe | Unsubscribe | DropLink
RELAY = Address[RelayRequest]("relay", RelayRequest)
