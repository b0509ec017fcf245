"""The client side of the relay, for actors that drive tabs: extension commands with typed, validated replies, and a
CDP session API for one tab. Not an actor: a library over `RELAY` messages, so actors never see frames.

Every reply from the extension is checked before use; a reply of the wrong shape is `BadExtensionReply`, a typed
error the caller reports, never a crash (a broken or hostile extension cannot crash-loop an actor).

Provider actors send plain commands (the extension's site allowlist applies). The general browser tools pass a
`policy` (their allowed host patterns, ``{"hosts": [...]}``) to `Extension` / `CdpTab`: every command then carries
it, and the extension checks the tab's URL against it before any chrome.debugger call (docs/protocol.md).
"""

from __future__ import annotations

import attrs
import trio

from supervisor.errors import BadExtensionReply, CdpError
from supervisor.otp import ActorRef

from .protocol.common import JSON, JSONObject
from .protocol.relay import ExtCommand, RelayRequest, Subscribe, TabEvent, Unsubscribe

Relay = ActorRef[RelayRequest]


# The extension answers tabs.create within its waitMs; this much more is for the reply to come back.
CREATE_REPLY_MARGIN_S = 1.0


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
    lease_kind: str | None = None  # "provider" / "general": how this server's connection holds it, if it does
    claimed_by_me: bool = False  # opened for this server's general tools (or by a page in one of their tabs)
    allowed: bool | None = None  # general queries: the URL passes the policy (if not, url and title are blank)

    @classmethod
    def parse(cls, value: JSON, what: str) -> TabInfo:
        obj = _obj(value, what)
        window = obj.get("windowId")
        kind = obj.get("leaseKind")
        allowed = obj.get("allowed")
        return cls(tab_id=_int(obj, "tabId", what), url=_str(obj, "url", what, ""),
                   title=_str(obj, "title", what, ""), status=_str(obj, "status", what, ""),
                   active=obj.get("active") is True, window_id=window if isinstance(window, int) else None,
                   attached_by_me=obj.get("attachedByMe") is True,
                   lease_kind=kind if kind in ("provider", "general") else None,
                   claimed_by_me=obj.get("claimedByMe") is True,
                   allowed=allowed if isinstance(allowed, bool) else None)


class Extension:
    """Typed extension commands (docs/protocol.md) over the relay. With a `policy`, every command is a general-tool
    command that carries it."""

    def __init__(self, relay: Relay, policy: JSONObject | None = None) -> None:
        self.relay = relay
        self.policy = policy

    async def command(self, method: str, params: JSONObject | None = None, *, timeout_s: float = 10.0) -> JSONObject:
        params = dict(params or {})
        if self.policy is not None:
            params["policy"] = self.policy
        return await self.relay.call(ExtCommand(method, params, timeout_s), timeout=timeout_s + 5)

    async def tab(self, tab_id: int, *, timeout_s: float = 10.0) -> TabInfo:
        got = await self.command("tabs.get", {"tabId": tab_id}, timeout_s=timeout_s)
        return TabInfo.parse(got.get("tab"), "tabs.get")

    async def tabs(self, url_patterns: tuple[str, ...] = (), *, timeout_s: float = 10.0) -> tuple[TabInfo, ...]:
        """Provider tabs matching `url_patterns`; with a policy, every web tab this server may know of."""
        params: JSONObject = {} if self.policy is not None else {"urlPatterns": list(url_patterns)}
        got = await self.command("tabs.query", params, timeout_s=timeout_s)
        tabs = got.get("tabs")
        if not isinstance(tabs, list):
            raise BadExtensionReply(f"tabs.query: 'tabs' must be a list, got {type(tabs).__name__}")
        return tuple(TabInfo.parse(t, "tabs.query") for t in tabs)

    async def create_tab(self, url: str, *, new_window: bool, timeout_s: float) -> TabInfo:
        """The new tab, once loaded or `timeout_s` after it was made, whichever comes first (the load may go on:
        the caller waits for the page it needs). The extension answers within `timeout_s`, so a created tab is
        always ours to track, never left behind by a reply that came too late."""
        params: JSONObject = {"url": url, "newWindow": new_window, "waitMs": int(timeout_s * 1000)}
        got = await self.command("tabs.create", params, timeout_s=timeout_s + CREATE_REPLY_MARGIN_S)
        return TabInfo.parse(got.get("tab"), "tabs.create")

    async def attach(self, tab_id: int, *, claim: bool = False, timeout_s: float = 10.0) -> TabInfo | None:
        """Attach the debugger. A general attach answers with the tab (and with `claim`, claims it again for this
        connection, e.g. after the extension reconnected)."""
        params: JSONObject = {"tabId": tab_id}
        if claim:
            params["claim"] = True
        got = await self.command("debugger.attach", params, timeout_s=timeout_s)
        return TabInfo.parse(got["tab"], "debugger.attach") if "tab" in got else None

    async def detach(self, tab_id: int, *, timeout_s: float = 10.0) -> None:
        await self.command("debugger.detach", {"tabId": tab_id}, timeout_s=timeout_s)

    async def activate(self, tab_id: int, *, timeout_s: float = 10.0) -> None:
        await self.command("tabs.activate", {"tabId": tab_id}, timeout_s=timeout_s)

    async def close(self, tab_id: int, *, timeout_s: float = 10.0) -> None:
        await self.command("tabs.close", {"tabId": tab_id}, timeout_s=timeout_s)


class CdpTab:
    """The CDP session of one attached tab: commands, page scripts, event subscription. With a `policy`, commands
    are general-tool commands (`cdp.send` / `cdp.batch` carrying it)."""

    def __init__(self, relay: Relay, tab_id: int, policy: JSONObject | None = None) -> None:
        self.relay = relay
        self.tab_id = tab_id
        self.policy = policy

    def _params(self, params: JSONObject) -> JSONObject:
        params["tabId"] = self.tab_id
        if self.policy is not None:
            params["policy"] = self.policy
        return params

    async def send(self, method: str, params: JSONObject | None = None, *, timeout_s: float = 30.0,
                   session: str | None = None) -> JSONObject:
        """One CDP command; `session`: to that cross-site frame's child session instead of the tab's (the extension
        allows a provider only its site's frame hosts and a few methods there, docs/security.md)."""
        cdp: JSONObject = dict(params or {})
        if session is not None:
            cdp["aibSession"] = session
        return await self.relay.call(
            ExtCommand("cdp.send", self._params({"method": method, "params": cdp}), timeout_s),
            timeout=timeout_s + 5,
        )

    async def batch(self, commands: list[tuple[str, JSONObject]], *, timeout_s: float = 30.0) -> list[JSONObject]:
        """Several CDP commands in order in one extension round trip (general tools only); their results."""
        got = await self.relay.call(
            ExtCommand("cdp.batch", self._params({"commands": [{"method": m, "params": p} for m, p in commands]}),
                       timeout_s),
            timeout=timeout_s + 5,
        )
        results = got.get("results")
        if not isinstance(results, list) or len(results) != len(commands):
            raise BadExtensionReply(f"cdp.batch: expected {len(commands)} results, got {str(results)[:120]}")
        return [_obj(r, "cdp.batch") for r in results]

    async def frames(self, *, timeout_s: float = 10.0) -> list[JSONObject]:
        """The tab's cross-site frames whose own URL the policy allows (general tools only): each {sessionId, frameId,
        parentSessionId, url}, as the extension keeps them."""
        got = await self.relay.call(ExtCommand("debugger.frames", self._params({}), timeout_s), timeout=timeout_s + 5)
        frames = got.get("frames")
        if not isinstance(frames, list):
            raise BadExtensionReply(f"debugger.frames: 'frames' must be a list, got {str(frames)[:120]}")
        return [_obj(f, "debugger.frames") for f in frames]

    async def evaluate(self, expression: str, *, timeout_s: float = 30.0, context_id: int | None = None,
                       await_promise: bool = False) -> JSON:
        """`Runtime.evaluate` returning the value; a page exception becomes a `CdpError`."""
        params: JSONObject = {"expression": expression, "returnByValue": True, "awaitPromise": await_promise}
        if context_id is not None:
            params["contextId"] = context_id
        return _value(await self.send("Runtime.evaluate", params, timeout_s=timeout_s))

    async def call(self, function: str, *args: JSON, context_id: int, timeout_s: float = 30.0,
                   await_promise: bool = False, session: str | None = None) -> JSON:
        """`Runtime.callFunctionOn`: run a page-script function with JSON arguments passed as values, never spliced
        into source (a question with quotes or backticks is just data)."""
        params: JSONObject = {"functionDeclaration": function, "executionContextId": context_id,
                              "arguments": [{"value": a} for a in args], "returnByValue": True,
                              "awaitPromise": await_promise}
        return _value(await self.send("Runtime.callFunctionOn", params, timeout_s=timeout_s, session=session))

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
