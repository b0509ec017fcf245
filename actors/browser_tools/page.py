"""Our page script (page.js) in an isolated world of the tab's main frame, and the typed reading of its replies.

The world is made per document (`Page.createIsolatedWorld`, then page.js evaluated in it) and remembered until the
tab commits another document. An op is one `Runtime.callFunctionOn` into that world. Every reply carries the
document's URL: it is checked against the domain policy before anything read is used, so a page that navigated to a
denied host between the pre-call check and the read gives `policy_denied`, never its content.
"""

from __future__ import annotations

import json
from pathlib import Path

import trio

from supervisor.errors import (
    BadExtensionReply,
    BridgeError,
    CdpError,
    ElementNotFound,
    ElementNotInteractable,
    InvalidArgument,
    PolicyDenied,
)

from ..cdp import CdpTab
from ..protocol.browser_tools import ElementBrief, Target
from ..protocol.common import JSON, JSONObject
from .policy import Policy
from .tab import ConsoleBuffer, NetworkBuffer, ToolTab

SOURCE = (Path(__file__).parent / "page.js").read_text(encoding="utf-8")
WORLD = "ai-bridge-tools"
CALL = ("function (op, args) { const t = globalThis.__aibTools; "
        "return t ? t.run(op, args) : {ok: false, missing: true}; }")
# Chrome's words for "that document (and our world in it) is gone": make a new world and try again.
CONTEXT_GONE = ("Cannot find context", "Execution context was destroyed", "Cannot find default execution context",
                "Inspected target navigated", "Execution context with given id not found", "No frame for given id")
POLL_S = 0.05
GUARD_KEY = "aibGuard"  # extension/executor.js: a cdp.batch command with this param is a guard

REF_HINT = "Take a new snapshot and use a ref from it."
SELECTOR_HINT = "Check the selector (query with what: count), or wait_for the element first."
SEALED_HINT = ("The browser tools neither read nor send input into a frame they cannot check: one from another origin "
               "or outside the allowed domains. If the frame's site is allowed, navigate to its URL (query the "
               "iframe's src attribute) and work there.")
INTERACT_HINT = ("See the element with query (what: visibility or state) or a snapshot; scroll it into view, close "
                 "what covers it, or wait_for it to become visible and enabled.")


def context_gone(exc: BridgeError) -> bool:
    return isinstance(exc, CdpError) and any(s in exc.message for s in CONTEXT_GONE)


class Page:
    """One tab as a call uses it: general-tool CDP commands, ops in our isolated world, the policy post-check."""

    def __init__(self, tab: ToolTab, cdp: CdpTab, policy: Policy) -> None:
        self.tab = tab
        self.cdp = cdp
        self.policy = policy

    async def world(self) -> int:
        tab = self.tab
        if tab.world is not None:
            return tab.world
        if tab.frame_id is None:
            tree = await self.cdp.send("Page.getFrameTree", timeout_s=10)
            frame = _obj(_obj(tree.get("frameTree"), "frameTree").get("frame"), "frame")
            tab.frame_id = _str(frame, "id")
        made = await self.cdp.send("Page.createIsolatedWorld",
                                   {"frameId": tab.frame_id, "worldName": WORLD, "grantUniveralAccess": False},
                                   timeout_s=10)
        context = made.get("executionContextId")
        if not isinstance(context, int) or isinstance(context, bool):
            raise BadExtensionReply(f"Page.createIsolatedWorld: no executionContextId in {str(made)[:200]}")
        got = await self.cdp.send("Runtime.evaluate", {
            "expression": f"({SOURCE})({json.dumps({'refStart': tab.next_ref, 'hosts': list(self.policy.hosts)})})",
            "contextId": context,
            "returnByValue": True}, timeout_s=10)
        if "exceptionDetails" in got:
            raise CdpError(f"installing the page script failed: {str(got['exceptionDetails'])[:300]}",
                           ext_code="page_exception")
        self._checked(_obj(_obj(got.get("result"), "result").get("value"), "install"))
        tab.world = context
        return context

    async def op(self, name: str, args: JSONObject | None = None, *, timeout_s: float = 10.0) -> JSONObject:
        """Run one op; its reply (checked), or the page's error as a typed error."""
        reply = await self.raw_op(name, args, timeout_s=timeout_s)
        if reply.get("ok") is not True:
            raise page_error(reply, args or {})
        return reply

    async def raw_op(self, name: str, args: JSONObject | None = None, *, timeout_s: float = 10.0) -> JSONObject:
        last: BridgeError | None = None
        for _ in range(4):
            context = self.tab.world
            try:
                # Installing the script can meet a document going away too (a meta refresh, a script's redirect).
                context = await self.world()
                got = await self.cdp.send("Runtime.callFunctionOn", {
                    "functionDeclaration": CALL, "executionContextId": context,
                    "arguments": [{"value": name}, {"value": args or {}}], "returnByValue": True},
                    timeout_s=timeout_s)
            except BridgeError as exc:
                if not context_gone(exc):
                    raise
                last = exc
                if context is None:
                    self.tab.frame_id = None  # the world was not made: the frame may be another one now
                if context is None or self.tab.world == context:
                    self.tab.world = None
                await trio.sleep(POLL_S)  # the next document may still be committing
                continue
            if "exceptionDetails" in got:
                raise CdpError(f"the page script failed: {str(got['exceptionDetails'])[:300]}",
                               ext_code="page_exception")
            reply = _obj(_obj(got.get("result"), "result").get("value"), name)
            if reply.get("missing") is True:
                self.tab.world = None  # a world without our script (a reused name): install again
                continue
            return self._checked(reply)
        raise CdpError(f"the page kept changing documents under {name} ({last})",
                       hint="Retry once the page has finished loading (wait_for with load_state).")

    async def op_until(self, name: str, args: JSONObject, timeout_s: float) -> JSONObject:
        """`op`, polled while the page says the failure is transient (the element not there or not actionable yet)
        until `timeout_s`; then that last error."""
        deadline = trio.current_time() + timeout_s
        while True:
            reply = await self.raw_op(name, args, timeout_s=max(timeout_s, 5.0))
            if reply.get("ok") is True:
                return reply
            error = _obj(reply.get("error"), "error")
            if error.get("retry") is not True or trio.current_time() + POLL_S > deadline:
                raise page_error(reply, args, waited_s=timeout_s if error.get("retry") is True else None)
            await trio.sleep(POLL_S)

    async def watch(self, *, console: bool = False, network: bool = False) -> bool:
        """Start collecting console messages / network requests on the tab (bounded buffers, kept from now on).
        True when this call started something."""
        tab = self.tab
        started_console = console and tab.console is None
        started_network = network and tab.network is None
        if started_console:
            tab.console = ConsoleBuffer()
        if started_network:
            tab.network = self.network_buffer()
        await self.subscribe()
        await self.enable(console=console, network=network)
        return started_console or started_network

    def network_buffer(self) -> NetworkBuffer:
        return NetworkBuffer(allowed=self.policy.allows, secrets=self.policy.network_secrets)

    async def enable(self, *, console: bool, network: bool) -> None:
        """Runtime.enable / Network.enable unless this attachment has them: one that failed is sent again (it was
        once sent only with a fresh buffer, so a failure left collection off on the tab for good)."""
        tab = self.tab
        if console and tab.console is not None and not tab.console_on:
            await self.cdp.send("Runtime.enable", timeout_s=10)
            tab.console_on = True
        if network and tab.network is not None and not tab.network_on:
            await self.cdp.send("Network.enable", {}, timeout_s=10)
            tab.network_on = True

    async def subscribe(self) -> None:
        tab = self.tab
        wanted = tab.wanted_events()
        if tab.events is not None and wanted != tab.subscribed:
            await self.cdp.subscribe(wanted, tab.events)
            tab.subscribed = wanted

    def _checked(self, reply: JSONObject) -> JSONObject:
        url = reply.get("url")
        if not isinstance(url, str):
            raise BadExtensionReply(f"page script reply without a url: {str(reply)[:200]}")
        self.tab.url = url
        origin = reply.get("origin")
        self.policy.check_document(url, origin if isinstance(origin, str) else "", f"tab {self.tab.tab_id}")
        nxt = reply.get("nextRef")
        if isinstance(nxt, int) and not isinstance(nxt, bool):
            self.tab.next_ref = max(self.tab.next_ref, nxt)
        title = reply.get("title")
        if isinstance(title, str):
            self.tab.title = title
        return reply


async def guard(page: Page, kind: str, args: JSONObject | None = None) -> tuple[str, JSONObject]:
    """A batch command the extension runs as a check: page.js's guard `kind` in our world must answer true, else
    the extension stops the batch there with policy_denied (so input or a capture right after it cannot land in
    a sealed frame, or open a denied URL, between our check and the act)."""
    context = await page.world()
    args = args or {}
    call = f"globalThis.__aibTools.guard({json.dumps(kind)}, {json.dumps(args)})"
    # What the extension then checks itself, through the DOM domain (it sees closed shadow roots and frames of
    # other processes, which the page script cannot): where the point lands, or frames in closed shadow roots.
    ext: JSONObject = {}
    if kind == "point":
        ext = {"point": {"x": args.get("x"), "y": args.get("y")}}
    elif kind == "focus":
        ext = {"focus": True}
    elif kind == "mask":
        ext = {"shot": True}
    return ("Runtime.evaluate", {"expression": call, "contextId": context, "returnByValue": True, GUARD_KEY: ext})





def page_error(reply: JSONObject, args: JSONObject, waited_s: float | None = None) -> BridgeError:
    error = _obj(reply.get("error"), "error")
    code, message = _str(error, "code"), _str(error, "message")
    by_ref = any(isinstance(v, dict) and "ref" in v for v in args.values())
    if waited_s is not None:
        message += f" (waited {waited_s:g} s)"
    if code == "element_not_found":
        return ElementNotFound(message, hint=REF_HINT if by_ref else SELECTOR_HINT)
    if code == "element_not_interactable":
        return ElementNotInteractable(message, hint=INTERACT_HINT)
    if code == "invalid_argument":
        return InvalidArgument(message)
    if code == "policy_denied":
        return PolicyDenied(message, hint=SEALED_HINT)
    return CdpError(f"the page script failed: {message}", ext_code="page_exception")


def target_json(target: Target | None) -> JSON:
    return target.as_json() if target is not None else None


# -- reading replies (the page is ours, but what it reads is the page's: every shape is checked) -----------------------


def _obj(value: JSON, what: str) -> JSONObject:
    if not isinstance(value, dict):
        raise BadExtensionReply(f"{what}: expected an object from the page script, got {type(value).__name__}")
    return value


def _str(obj: JSONObject, key: str, default: str = "") -> str:
    v = obj.get(key, default)
    if v is None:
        return default
    if not isinstance(v, str):
        raise BadExtensionReply(f"page script: {key!r} must be a string, got {str(v)[:80]}")
    return v


def num(obj: JSONObject, key: str) -> float:
    v = obj.get(key)
    if not isinstance(v, int | float) or isinstance(v, bool):
        raise BadExtensionReply(f"page script: {key!r} must be a number, got {str(v)[:80]}")
    return float(v)


def integer(obj: JSONObject, key: str) -> int:
    v = obj.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise BadExtensionReply(f"page script: {key!r} must be an integer, got {str(v)[:80]}")
    return v


def flag(obj: JSONObject, key: str) -> bool:
    return obj.get(key) is True


def opt_flag(obj: JSONObject, key: str) -> bool | None:
    v = obj.get(key)
    return v if isinstance(v, bool) else None


def items(obj: JSONObject, key: str) -> list[JSON]:
    v = obj.get(key, [])
    if not isinstance(v, list):
        raise BadExtensionReply(f"page script: {key!r} must be a list")
    return v


def obj(value: JSON, what: str) -> JSONObject:
    return _obj(value, what)


def text(o: JSONObject, key: str, default: str = "") -> str:
    return _str(o, key, default)


def brief(value: JSON) -> ElementBrief:
    o = _obj(value, "element")
    return ElementBrief(_str(o, "ref"), _str(o, "tag"), _str(o, "role"), _str(o, "name"))


def opt_brief(value: JSON) -> ElementBrief | None:
    return brief(value) if isinstance(value, dict) else None


def pairs(o: JSONObject, key: str) -> tuple[tuple[str, str], ...]:
    out = []
    for p in items(o, key):
        if isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], str):
            out.append((p[0], p[1]))
    return tuple(out)
