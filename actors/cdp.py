"""The client side of the relay, for actors that drive tabs: extension commands with typed, validated replies, and a
CDP session API for one tab. Not an actor: a library over `RELAY` messages, so actors never see frames.

Every reply from the extension is checked before use; a reply of the wrong shape is `BadExtensionReply`, a typed
error the caller reports, never a crash (a broken or hostile extension cannot crash-loop an actor).
"""

from __future__ import annotations

import attrs
import trio

from supervisor.errors import BadExtensionReply, CdpError
from supervisor.otp import ActorRef

from .protocol.common import JSON, JSONObject
from .protocol.relay import ExtCommand, RelayRequest, Subscribe, TabEvent, Unsubscribe

Relay = ActorRef[RelayRequest]


def _obj(value: JSON, what: str) -> JSONObject:
    if not isinstance(value, dict):
        raise BadExtensionReply(f"{what}: expected an object, got {type(value).__name__}",
                                hint="Reload the ai-bridge extension (chrome://extensions); it may be out of date.")
    return value


def _int(obj: JSONObject, key: str, what: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadExtensionReply(f"{what}: {key!r} must be an integer, got {value!r:.80}")
    return value


def _str(obj: JSONObject, key: str, what: str, default: str | None = None) -> str:
    value = obj.get(key, default)
    if not isinstance(value, str):
        raise BadExtensionReply(f"{what}: {key!r} must be a string, got {value!r:.80}")
    return value


@attrs.frozen
class TabInfo:
    tab_id: int
    url: str
    title: str = ""
    status: str = ""
    active: bool = False
    window_id: int | None = None
    attached_by_me: bool = False

    @classmethod
    def parse(cls, value: JSON, what: str) -> TabInfo:
        obj = _obj(value, what)
        window = obj.get("windowId")
        return cls(tab_id=_int(obj, "tabId", what), url=_str(obj, "url", what, ""),
                   title=_str(obj, "title", what, ""), status=_str(obj, "status", what, ""),
                   active=obj.get("active") is True, window_id=window if isinstance(window, int) else None,
                   attached_by_me=obj.get("attachedByMe") is True)


class Extension:
    """Typed extension commands (docs/protocol.md) over the relay."""

    def __init__(self, relay: Relay) -> None:
        self.relay = relay

    async def command(self, method: str, params: JSONObject | None = None, *, timeout_s: float = 10.0) -> JSONObject:
        return await self.relay.call(ExtCommand(method, params or {}, timeout_s), timeout=timeout_s + 5)

    async def tab(self, tab_id: int, *, timeout_s: float = 10.0) -> TabInfo:
        got = await self.command("tabs.get", {"tabId": tab_id}, timeout_s=timeout_s)
        return TabInfo.parse(got.get("tab"), "tabs.get")

    async def tabs(self, url_patterns: tuple[str, ...], *, timeout_s: float = 10.0) -> tuple[TabInfo, ...]:
        got = await self.command("tabs.query", {"urlPatterns": list(url_patterns)}, timeout_s=timeout_s)
        tabs = got.get("tabs")
        if not isinstance(tabs, list):
            raise BadExtensionReply(f"tabs.query: 'tabs' must be a list, got {type(tabs).__name__}")
        return tuple(TabInfo.parse(t, "tabs.query") for t in tabs)

    async def create_tab(self, url: str, *, new_window: bool, timeout_s: float) -> TabInfo:
        got = await self.command("tabs.create", {"url": url, "newWindow": new_window}, timeout_s=timeout_s)
        return TabInfo.parse(got.get("tab"), "tabs.create")

    async def attach(self, tab_id: int, *, timeout_s: float = 10.0) -> None:
        await self.command("debugger.attach", {"tabId": tab_id}, timeout_s=timeout_s)


class CdpTab:
    """The CDP session of one attached tab: commands, page scripts, event subscription."""

    def __init__(self, relay: Relay, tab_id: int) -> None:
        self.relay = relay
        self.tab_id = tab_id

    async def send(self, method: str, params: JSONObject | None = None, *, timeout_s: float = 30.0) -> JSONObject:
        return await self.relay.call(
            ExtCommand("cdp.send", {"tabId": self.tab_id, "method": method, "params": params or {}}, timeout_s),
            timeout=timeout_s + 5,
        )

    async def evaluate(self, expression: str, *, timeout_s: float = 30.0, context_id: int | None = None,
                       await_promise: bool = False) -> JSON:
        """`Runtime.evaluate` returning the value; a page exception becomes a `CdpError`."""
        params: JSONObject = {"expression": expression, "returnByValue": True, "awaitPromise": await_promise}
        if context_id is not None:
            params["contextId"] = context_id
        return _value(await self.send("Runtime.evaluate", params, timeout_s=timeout_s))

    async def call(self, function: str, *args: JSON, context_id: int, timeout_s: float = 30.0,
                   await_promise: bool = False) -> JSON:
        """`Runtime.callFunctionOn`: run a page-script function with JSON arguments passed as values, never spliced
        into source (a question with quotes or backticks is just data)."""
        params: JSONObject = {"functionDeclaration": function, "executionContextId": context_id,
                              "arguments": [{"value": a} for a in args], "returnByValue": True,
                              "awaitPromise": await_promise}
        return _value(await self.send("Runtime.callFunctionOn", params, timeout_s=timeout_s))

    async def subscribe(self, methods: tuple[str, ...], sink: trio.MemorySendChannel[TabEvent]) -> None:
        await self.relay.call(Subscribe(self.tab_id, methods, sink), timeout=10)

    async def unsubscribe(self) -> None:
        await self.relay.call(Unsubscribe(self.tab_id), timeout=10)


def _value(reply: JSONObject) -> JSON:
    details = reply.get("exceptionDetails")
    if isinstance(details, dict):
        exc = details.get("exception")
        text = exc.get("description") if isinstance(exc, dict) else None
        if not isinstance(text, str):
            text = str(details.get("text", "exception"))
        raise CdpError(f"page script failed: {text[:500]}", ext_code="page_exception")
    result = reply.get("result")
    # `undefined` comes back without a "value" key (NOTES.md)
    return result.get("value") if isinstance(result, dict) else None
