"""Our page script (page_*.js, joined as one: PARTS) in an isolated world of the tab's main frame (and of each
cross-origin frame the policy allows), and the typed reading of its replies.

The world is made per document (`Page.createIsolatedWorld`, then the page script evaluated in it) and remembered until
the tab commits another document. An op is one `Runtime.callFunctionOn` into that world. Every reply carries the
document's URL: it is checked against the domain policy before anything read is used, so a page that navigated to a
denied host between the pre-call check and the read gives `policy_denied`, never its content.

Cross-origin frames (docs/tools.md, "Cross-origin frames"): a frame whose own URL the policy allows is read in a world
of its own — through its debugger session when it is cross-site (the extension auto-attaches those), else through the
session of the document it is in. `open_frames` finds them and marks each one's owner element in the world of the
document that holds it; the page script then leaves a marker where the frame's content goes, which the readers fill in.
Refs count on from one counter per tab in every world, and the refs a frame numbered are remembered, so a ref is sent to
the world that knows it.
"""

from __future__ import annotations

import json
import logging
import re
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
from ..protocol.browser_tools import Target
from ..protocol.common import JSON, JSONObject
from .policy import Policy, denied
from .replies import _obj, _str, num
from .tab import ConsoleBuffer, FrameDoc, NetworkBuffer, ToolTab

# The page script, in parts by responsibility that open and close one closure: joined in this order, evaluated as one.
PARTS = ("page_tree.js", "page_act.js", "page_snapshot.js", "page_read.js", "page_ops.js")
SOURCE = "".join((Path(__file__).parent / part).read_text(encoding="utf-8") for part in PARTS)
WORLD = "ai-bridge-tools"
CALL = ("function (op, args, floor) { const t = globalThis.__aibTools; "
        "return t ? t.run(op, args, floor) : {ok: false, missing: true}; }")
# Marks a frame owner (resolved into our world) as the frame the server reads under this key.
OPEN_FRAME = "function (k) { const t = globalThis.__aibTools; return t ? t.openFrame(this, k) : false; }"
SESSION_KEY = "aibSession"  # extension/commands.js: a command with this param goes to that frame's session
FRAME_REFS_KEPT = 500  # (first, past-last, frame) ranges remembered per tab
log = logging.getLogger("ai_bridge.browser_tools")
# Chrome's words for "that document (and our world in it) is gone": make a new world and try again.
CONTEXT_GONE = ("Cannot find context", "Execution context was destroyed", "Cannot find default execution context",
                "Inspected target navigated", "Execution context with given id not found", "No frame for given id")
POLL_S = 0.05
# Resolves true once the page starts its next frame (false in a hidden tab, where none comes; the timer is a floor
# for a page whose frames stall).
NEXT_FRAME = ("document.hidden ? false : new Promise(r => { requestAnimationFrame(() => r(true)); "
              "setTimeout(() => r(true), 200); })")
GUARD_KEY = "aibGuard"  # extension/commands.js: a cdp.batch command with this param is a guard

REF_HINT = "Take a new snapshot and use a ref from it."
SELECTOR_HINT = "Check the selector (query with what: count), or wait_for the element first."
SEALED_HINT = ("The browser tools neither read nor send input into a frame they cannot check: one from another origin "
               "or outside the allowed domains. If the frame's site is allowed, navigate to its URL (query the "
               "iframe's src attribute) and work there.")
FRAME_HINT = ("The frame navigated away or was removed: take a new snapshot and use a ref from it.")
INTERACT_HINT = ("See the element with query (what: visibility or state) or a snapshot; scroll it into view, close "
                 "what covers it, or wait_for it to become visible and enabled.")


def context_gone(exc: BridgeError) -> bool:
    return isinstance(exc, CdpError) and any(s in exc.message for s in CONTEXT_GONE)


def frame_gone(doc: FrameDoc) -> ElementNotFound:
    return ElementNotFound(f"the frame {doc.url[:200]} is no longer in the page (it navigated to another site, or was "
                           "removed)", hint=FRAME_HINT)


def ref_number(ref: str) -> int | None:
    m = re.fullmatch(r"e(\d{1,9})", ref)
    return int(m.group(1)) if m else None


class Page:
    """One tab as a call uses it: general-tool CDP commands, ops in our isolated world, the policy post-check."""

    def __init__(self, tab: ToolTab, cdp: CdpTab, policy: Policy) -> None:
        self.tab = tab
        self.cdp = cdp
        self.policy = policy

    async def send(self, method: str, params: JSONObject, doc: FrameDoc | None = None, *,
                   timeout_s: float = 10.0) -> JSONObject:
        """A CDP command to the tab, or to the session of a frame's document."""
        return await self.cdp.send(method, at(params, doc), timeout_s=timeout_s)

    async def next_frame(self, doc: FrameDoc | None = None) -> None:
        """Until the page has rendered its next frame (a hidden tab renders none: a short pause instead)."""
        try:
            got = await self.send("Runtime.evaluate", {"expression": NEXT_FRAME, "contextId": await self.world(doc),
                                                       "awaitPromise": True, "returnByValue": True}, doc, timeout_s=5)
        except BridgeError as exc:
            if not context_gone(exc):
                raise
            return  # a new document: the next look finds it
        if _obj(got.get("result", {}), "result").get("value") is not True:
            await trio.sleep(POLL_S)

    async def world(self, doc: FrameDoc | None = None) -> int:
        if doc is not None:
            return await self._frame_world(doc)
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

    async def _frame_world(self, doc: FrameDoc) -> int:
        if doc.gone:
            raise frame_gone(doc)
        if doc.world is not None:
            return doc.world
        made = await self.send("Page.createIsolatedWorld", {"frameId": doc.frame_id, "worldName": WORLD,
                                                            "grantUniveralAccess": False}, doc)
        context = made.get("executionContextId")
        if not isinstance(context, int) or isinstance(context, bool):
            raise BadExtensionReply(f"Page.createIsolatedWorld: no executionContextId in {str(made)[:200]}")
        init = {"refStart": self.tab.next_ref, "hosts": list(self.policy.hosts)}
        got = await self.send("Runtime.evaluate", {"expression": f"({SOURCE})({json.dumps(init)})",
                                                   "contextId": context, "returnByValue": True}, doc)
        if "exceptionDetails" in got:
            raise CdpError(f"installing the page script in a frame failed: {str(got['exceptionDetails'])[:300]}",
                           ext_code="page_exception")
        self._checked(_obj(_obj(got.get("result"), "result").get("value"), "install"), doc)
        doc.world = context
        return context

    async def frame_ids(self) -> tuple[str, ...]:
        """Every frame of the tab the tools know: the top document's frame tree and the cross-origin frames read.
        A download begun in one of them is this tab's."""
        ids: list[str] = []

        def walk(node: JSON) -> None:
            node = _obj(node, "frameTree")
            ids.append(_str(_obj(node.get("frame"), "frame"), "id"))
            children = node.get("childFrames") or []
            for child in children if isinstance(children, list) else []:
                walk(child)

        walk(_obj(await self.cdp.send("Page.getFrameTree", timeout_s=10), "getFrameTree").get("frameTree"))
        ids += [d.frame_id for d in self.tab.frames.values() if not d.gone]
        return tuple(dict.fromkeys(ids))

    # -- cross-origin frames -------------------------------------------------------------------------------------------

    def frame_of(self, ref: str) -> FrameDoc | None:
        """The frame whose world numbered `ref`; None for the tab's document. A frame that is gone: a typed error."""
        n = ref_number(ref)
        if n is None:
            return None
        for lo, hi, doc in self.tab.frame_refs:
            if lo <= n < hi:
                if doc.gone:
                    raise ElementNotFound(f"ref {ref} is in the frame {doc.url[:200]}, which is no longer in the page "
                                          "(it navigated or was removed)", hint=FRAME_HINT)
                return doc
        return None

    def route(self, args: JSONObject | None) -> FrameDoc | None:
        """The document an op's refs are in (its target, root, source and dest, fill_form's fields): all must be in
        one."""
        refs: list[str] = []
        for v in (args or {}).values():
            for t in (v if isinstance(v, list) else [v]):
                if isinstance(t, dict) and isinstance(t.get("target"), dict):
                    t = t["target"]
                ref = t.get("ref") if isinstance(t, dict) else None
                if isinstance(ref, str):
                    refs.append(ref)
        docs = [self.frame_of(r) for r in refs]
        if any(d is not docs[0] for d in docs[1:]):
            raise InvalidArgument(f"the refs {', '.join(refs)} are in different frames of the page",
                                  hint="Act in one frame per call.")
        return docs[0] if docs else None

    async def open_frames(self) -> bool:
        """Find the page's cross-origin frames whose own URL the policy allows, and mark each one's owner element in
        the world of the document that holds it. True when a frame was newly marked. A frame that cannot be marked
        stays sealed."""
        tab = self.tab
        try:
            children = await self.cdp.frames()
        except CdpError as exc:
            if exc.ext_code == "unknown_method":
                return False  # an extension from before cross-origin frames: they stay sealed
            raise
        known = {(d.session, d.frame_id): d for d in tab.frames.values() if not d.gone}
        found: dict[tuple[str | None, str], FrameDoc] = {}
        fresh: list[FrameDoc] = []

        def add(session: str | None, frame_id: str, url: str, parent: FrameDoc | None, oopif: bool) -> FrameDoc:
            doc = known.get((session, frame_id))
            if doc is None or doc.parent is not parent:
                tab.frame_seq += 1
                doc = FrameDoc(tab.frame_seq, session, frame_id, url, parent, oopif)
                fresh.append(doc)
            doc.url = url
            found[(session, frame_id)] = doc
            return doc

        # Which document each frame id is read in (None: the tab's), session by session from the top down.
        holder: dict[str, FrameDoc | None] = {}

        def walk(tree: JSON, session: str | None, root_doc: FrameDoc | None, origin: str) -> None:
            for child in _list(_obj(tree, "frameTree").get("childFrames")):
                frame = _obj(_obj(child, "frameTree").get("frame"), "frame")
                fid, url, sec = _str(frame, "id"), _str(frame, "url"), _str(frame, "securityOrigin")
                parent = holder.get(_str(frame, "parentId"), root_doc)
                if sec == origin or url.startswith("about:"):
                    holder[fid] = parent  # same origin (or its own about: document): the page script reads it in place
                    walk(child, session, parent, origin)
                elif self.policy.allows(url) and url.startswith(("http:", "https:")):
                    doc = add(session, fid, url, parent, oopif=False)
                    holder[fid] = doc
                    walk(child, session, doc, sec)
                # else: a frame the policy denies, sealed with all it holds

        top = _obj(await self.send("Page.getFrameTree", {}), "getFrameTree").get("frameTree")
        top_frame = _obj(_obj(top, "frameTree").get("frame"), "frame")
        holder[_str(top_frame, "id")] = None
        walk(top, None, None, _str(top_frame, "securityOrigin"))
        pending = [c for c in children if isinstance(c.get("sessionId"), str)]
        for _ in range(4):  # parents before their frames (at most the extension's depth)
            later = []
            for c in pending:
                session, fid = _str(c, "sessionId"), _str(c, "frameId")
                parent_session = c.get("parentSessionId")
                if parent_session is not None and not any(d.session == parent_session and d.oopif
                                                          for d in found.values()):
                    later.append(c)
                    continue
                try:
                    tree = _obj(await self.send("Page.getFrameTree", {SESSION_KEY: session}), "getFrameTree")
                except BridgeError as exc:
                    log.debug("tab %d: frame %s not read: %s", tab.tab_id, fid, exc)
                    continue
                root = _obj(_obj(tree.get("frameTree"), "frameTree").get("frame"), "frame")
                owner_in = _str(root, "parentId")
                if owner_in not in holder:
                    continue  # its owner is in a document the tools do not read: sealed
                doc = add(session, fid, _str(c, "url"), holder[owner_in], oopif=True)
                holder[fid] = doc
                walk(tree.get("frameTree"), session, doc, _str(root, "securityOrigin"))
            pending = later
        for d in tab.frames.values():
            if (d.session, d.frame_id) not in found:
                d.gone = True
        tab.frames = {d.key: d for d in found.values()}
        opened = False
        for doc in fresh:
            try:
                opened |= await self._mark(doc)
            except BridgeError as exc:
                log.debug("tab %d: frame %s not marked: %s", tab.tab_id, doc.url[:100], exc)
        return opened

    async def _mark(self, doc: FrameDoc) -> bool:
        """Mark the frame's owner element in the world of the document that holds it."""
        parent = doc.parent
        context = await self.world(parent)
        owner = await self.send("DOM.getFrameOwner", {"frameId": doc.frame_id}, parent)
        node = owner.get("backendNodeId")
        if not isinstance(node, int):
            return False
        resolved = await self.send("DOM.resolveNode", {"backendNodeId": node, "executionContextId": context}, parent)
        object_id = _obj(resolved.get("object"), "object").get("objectId")
        if not isinstance(object_id, str):
            return False
        got = await self.send("Runtime.callFunctionOn", {"functionDeclaration": OPEN_FRAME, "objectId": object_id,
                                                        "arguments": [{"value": doc.key}], "returnByValue": True},
                              parent)
        return _obj(got.get("result"), "result").get("value") is True

    async def read_frames(self, reply: JSONObject) -> bool:
        """After a whole-page read: when it met sealed frames, look for ones to open. True when the read should be
        done again (a frame was newly opened)."""
        sealed = reply.get("sealed")
        return isinstance(sealed, int) and sealed > 0 and await self.open_frames()

    async def op(self, name: str, args: JSONObject | None = None, *, timeout_s: float = 10.0,
                 doc: FrameDoc | None = None) -> JSONObject:
        """Run one op (in the document its refs are in, or `doc`); its reply (checked), or the page's error as a typed
        error."""
        reply = await self.raw_op(name, args, timeout_s=timeout_s, doc=doc)
        if reply.get("ok") is not True:
            raise page_error(reply, args or {})
        return reply

    async def raw_op(self, name: str, args: JSONObject | None = None, *, timeout_s: float = 10.0,
                     doc: FrameDoc | None = None) -> JSONObject:
        doc = doc if doc is not None else self.route(args)
        if doc is not None:
            return await self._frame_op(doc, name, args, timeout_s)
        last: BridgeError | None = None
        for _ in range(4):
            context = self.tab.world
            try:
                # Installing the script can meet a document going away too (a meta refresh, a script's redirect).
                context = await self.world()
                got = await self.cdp.send("Runtime.callFunctionOn", self._call(context, name, args),
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
            reply = _script_reply(got, name, "")
            if reply is None:
                self.tab.world = None
                continue
            return self._checked(reply)
        raise CdpError(f"the page kept changing documents under {name} ({last})",
                       hint="Retry once the page has finished loading (wait_for with load_state).")

    async def op_command(self, name: str, args: JSONObject | None = None) -> tuple[str, JSONObject]:
        """The op `name` in the tab's document as one command of a cdp.batch; `op_reply` reads what it answered."""
        return ("Runtime.callFunctionOn", self._call(await self.world(), name, args))

    def op_reply(self, got: JSONObject, name: str) -> JSONObject:
        """The reply of an `op_command`, checked as `op`'s are (the document's URL and origin against the policy)."""
        reply = _script_reply(got, name, "")
        if reply is None:
            raise CdpError(f"the page script was missing under {name}", ext_code="page_exception")
        if self._checked(reply).get("ok") is not True:
            raise page_error(reply, {})
        return reply

    def _call(self, context: int, name: str, args: JSONObject | None) -> JSONObject:
        """Runtime.callFunctionOn of the page op `name` in our world `context`."""
        return {"functionDeclaration": CALL, "executionContextId": context,
                "arguments": [{"value": name}, {"value": args or {}}, {"value": self.tab.next_ref}],
                "returnByValue": True}

    async def _frame_op(self, doc: FrameDoc, name: str, args: JSONObject | None, timeout_s: float) -> JSONObject:
        for _ in range(4):
            try:
                context = await self.world(doc)
                got = await self.send("Runtime.callFunctionOn", self._call(context, name, args), doc,
                                      timeout_s=timeout_s)
            except BridgeError as exc:
                if isinstance(exc, CdpError) and (exc.ext_code == "no_such_frame"
                                                  or "No frame for given id" in exc.message):
                    doc.gone = True
                    raise frame_gone(doc) from exc
                if isinstance(exc, CdpError) and exc.ext_code == "policy_denied":
                    # The extension's check of the frame's own URL: it went to a site the policy denies.
                    url = exc.message.rsplit(": ", 1)[-1]
                    raise denied(f"the frame the element was in (it was {doc.url[:200]}) now", url) from exc
                if not context_gone(exc):
                    raise
                doc.world = None  # the frame has a new document: a new world
                await trio.sleep(POLL_S)
                continue
            reply = _script_reply(got, name, " in a frame")
            if reply is None:
                doc.world = None
                continue
            return self._checked(reply, doc)
        raise CdpError(f"the frame {doc.url[:200]} kept changing documents under {name}",
                       hint="Retry once the frame has finished loading.")

    async def op_until(self, name: str, args: JSONObject, timeout_s: float, *,
                       doc: FrameDoc | None = None) -> JSONObject:
        """`op`, polled while the page says the failure is transient (the element not there or not actionable yet)
        until `timeout_s`; then that last error."""
        deadline = trio.current_time() + timeout_s
        while True:
            reply = await self.raw_op(name, args, timeout_s=max(timeout_s, 5.0), doc=doc)
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

    def _checked(self, reply: JSONObject, doc: FrameDoc | None = None) -> JSONObject:
        url = reply.get("url")
        if not isinstance(url, str):
            raise BadExtensionReply(f"page script reply without a url: {str(reply)[:200]}")
        if doc is not None:
            # A frame's document is judged by its own URL and origin (the policy applies to each frame).
            origin = reply.get("origin")
            self.policy.check_document(url, origin if isinstance(origin, str) else "", f"the frame {url[:100]}")
            doc.url = url
            nxt = reply.get("nextRef")
            if isinstance(nxt, int) and not isinstance(nxt, bool) and nxt > self.tab.next_ref:
                self.tab.frame_refs = [*self.tab.frame_refs[-FRAME_REFS_KEPT:], (self.tab.next_ref, nxt, doc)]
                self.tab.next_ref = nxt
            return reply
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


def at(params: JSONObject, doc: FrameDoc | None) -> JSONObject:
    """`params` for the session of the frame's document (the extension routes by this key; none: the tab's)."""
    return {**params, SESSION_KEY: doc.session} if doc is not None and doc.session is not None else params


async def guard(page: Page, kind: str, args: JSONObject | None = None, *, doc: FrameDoc | None = None,
                frames: tuple[str, ...] = ()) -> tuple[str, JSONObject]:
    """A batch command the extension runs as a check: the page script's guard `kind` in our world must answer true, else
    the extension stops the batch there with policy_denied (so input or a capture right after it cannot land in
    a sealed frame, or open a denied URL, between our check and the act). In a frame's world (`doc`), and with
    `frames`: the ids of the cross-site frames the point may enter (the extension checks each one's own URL)."""
    context = await page.world(doc)
    args = args or {}
    call = f"globalThis.__aibTools.guard({json.dumps(kind)}, {json.dumps(args)})"
    # What the extension then checks itself, through the DOM domain (it sees closed shadow roots and frames of
    # other processes, which the page script cannot): where the point lands, or frames in closed shadow roots.
    ext: JSONObject = {}
    if doc is not None and not doc.oopif:
        pass  # a same-site frame: the hit test of the document above it (its session's) reaches inside already
    elif kind == "point":
        ext = {"point": {"x": args.get("x"), "y": args.get("y")}}
        if frames:
            ext["frames"] = list(frames)
    elif kind == "focus":
        ext = {"focus": True}
    elif kind == "mask":
        ext = {"shot": True}
    return ("Runtime.evaluate", at({"expression": call, "contextId": context, "returnByValue": True, GUARD_KEY: ext},
                                   doc))


async def point_guards(page: Page, points: list[tuple[FrameDoc | None, float, float]],
                       new_tab: bool, aim: int | None = None, *, arm: bool = False) -> list[tuple[str, JSONObject]]:
    """The point guard of every document from the top down to the element's (`points`: each document with the
    point in its own viewport, outermost first): each lets the input into the next frame only, and the last one
    onto the element the `point` op aimed at (`aim`) only (`arm`: and stops the input's events that miss it)."""
    out = []
    for i, (doc, x, y) in enumerate(points):
        below = [d for d, _, _ in points[i + 1:] if d is not None]
        args: JSONObject = {"x": x, "y": y, "newTab": new_tab and not below,
                            "frame": below[0].key if below else None}
        if i == len(points) - 1 and aim is not None:
            args.update(aim=aim, arm=arm)
        out.append(await guard(page, "point", args, doc=doc, frames=tuple(d.frame_id for d in below if d.oopif)))
    return out


async def focus_guards(page: Page, doc: FrameDoc | None) -> list[tuple[str, JSONObject]]:
    """The focus guard of every document from the top down to `doc`: the keyboard focus is in the next frame in
    each, and nowhere sealed in `doc`."""
    chain: list[FrameDoc | None] = [None, *(doc.chain() if doc is not None else [])]
    return [await guard(page, "focus", {"frame": nxt.key if nxt is not None else None}, doc=d)
            for d, nxt in zip(chain, [*chain[1:], None], strict=True)]


async def frame_point(page: Page, doc: FrameDoc | None, x: float, y: float,
                      timeout_s: float) -> list[tuple[FrameDoc | None, float, float]]:
    """A point in `doc`'s viewport in every document from the top down (outermost first): each frame's owner is
    scrolled into view in the document above it and must be the topmost element there."""
    points: list[tuple[FrameDoc | None, float, float]] = [(doc, x, y)]
    while doc is not None:
        box = await page.op_until("frameBox", {"key": doc.key, "x": x, "y": y}, timeout_s, doc=doc.parent)
        x, y = x + num(box, "x"), y + num(box, "y")
        doc = doc.parent
        points.insert(0, (doc, x, y))
    return points





def _script_reply(got: JSONObject, name: str, where: str) -> JSONObject | None:
    """The page op's reply; None when the world has no script of ours (a reused world name: install it again)."""
    if "exceptionDetails" in got:
        raise CdpError(f"the page script failed{where}: {str(got['exceptionDetails'])[:300]}",
                       ext_code="page_exception")
    reply = _obj(_obj(got.get("result"), "result").get("value"), name)
    return None if reply.get("missing") is True else reply


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


def _list(value: JSON) -> list[JSON]:
    return value if isinstance(value, list) else []


def target_json(target: Target | None) -> JSON:
    return target.as_json() if target is not None else None
