"""The tab session: the debugger attach of a tab `tabs.Tabs` picked, our isolated world with the watcher, the watcher's
reports as `PageState`, and the page actions the ask flow and inspection use. Built on `actors/cdp.py`; page scripts
are the .js files beside this one, called with their arguments as values (`Runtime.callFunctionOn`), never spliced
into source.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import attrs
import trio

from supervisor.errors import BadExtensionReply, BridgeError, CdpError

from ..cdp import CdpTab, Extension, Relay
from ..protocol.common import JSON, JSONObject
from ..protocol.provider import Choice
from ..protocol.relay import TabEvent, TabEventKind
from .page import BadPageReport, Box, Extracted, PageState, Predicate
from .table import Newline, ProviderTable, Timeouts

HERE = Path(__file__).parent
WORLD = "ai-bridge"


def _script(name: str) -> str:
    return (HERE / name).read_text(encoding="utf-8")


# The watcher with its structural finders (structure.js, issue 37) and its answer readers (answer.js) in one function
# scope.
WATCHER = ("function installWatcher(cfg, binding) {\n" + _script("structure.js") + "\n" + _script("answer.js")
           + "\nreturn (" + _script("watcher.js") + ")(cfg, binding, aibStructure);\n}")
# The answer converter (window.__aibMarkdown): vendored Turndown + GFM plugin and our rules, in one function scope.
MARKDOWN = "function installMarkdown() {\n" + ";\n".join(
    _script(name) for name in ("vendor/turndown.js", "vendor/turndown-plugin-gfm.js", "markdown.js")) + "\n}"
MARKDOWN_SOURCE = f"({MARKDOWN})();"  # the same as a script, for tests that load the converter into a bare page
CALL = _script("call.js")
DOM = _script("dom.js")
FACTS = _script("page_facts.js")
TEMPORARY = _script("temporary.js")
# Chrome's own error page (chrome-error://chromewebdata/) names the failure in its text ("ERR_INTERNET_DISCONNECTED")
# and in its data: the name, or "" when it shows none.
LOAD_ERROR = """function loadError() {
  const find = (text) => (/\\b(ERR_[A-Z0-9_]+)\\b/.exec(text || '') || [])[1] || '';
  return find(document.body && document.body.innerText) || find(document.documentElement.outerHTML);
}"""


class TabGone(Exception):
    """The tab's connection broke (closed, detached, extension gone)."""


class PageTimeout(Exception):
    """A wait on the page state ran out: carries what was awaited and the last state seen."""

    def __init__(self, what: str, state: PageState | None) -> None:
        super().__init__(what)
        self.what = what
        self.state = state


@attrs.define
class AskMemo:
    """What an ask's earlier attempt did, for its retry (a retry runs in a restarted actor)."""

    sent: bool = False  # a send action was made: the question may be in the conversation
    url: str | None = None  # the conversation the question went to, as last seen
    stuck: str | None = None  # why the last attempt was stuck
    chosen: Choice | None = None  # what the page showed chosen when the question went out (a retry keeps it)


@attrs.define
class ProviderMemory:
    """A provider's state that outlives restarts of its actor (the supervision tree holds it, as mailboxes are):
    the tabs ai-bridge opened, and what running asks already did."""

    our_tabs: dict[int, int | None] = attrs.field(factory=dict)  # tab id → its window id (ids restart with Chrome)
    asks: dict[str, AskMemo] = attrs.field(factory=dict)
    # Tabs that failed to attach or showed a site error: never picked again (seed 001: close it, open a new one).
    bad_tabs: dict[int, str] = attrs.field(factory=dict)  # tab id → why
    site_changed: str = ""  # the last ask's site_changed warning, with its time (bridge_status, doctor --live)

    def memo(self, ask_id: str) -> AskMemo:
        return self.asks.setdefault(ask_id, AskMemo())


def now_ms() -> float:
    return time.time() * 1000


class TabSession:
    """One attached provider tab: our isolated world and watcher in its current document, and its state."""

    def __init__(self, relay: Relay, tab_id: int, table: ProviderTable, timeouts: Timeouts, binding: str,
                 log: logging.Logger) -> None:
        self.tab = CdpTab(relay, tab_id)
        self.tab_id = tab_id
        self.t = table
        self.to = timeouts
        self.binding = binding
        self.log = log
        self.context_id: int | None = None
        self.state: PageState | None = None
        self.changed = trio.Event()
        self.broken: str | None = None
        self.crashed = False  # the renderer crashed (Inspector.targetCrashed): the tab is replaced, never reused
        self.fresh = True  # a document not yet through the reconnect guard (see AskFlow.guard)
        self.opened_at: str | None = None  # the URL ai-bridge just created this tab at, until an ask takes it
        self.reported_at = -1e9  # trio time of the last report or poll
        self._send, self.events = trio.open_memory_channel[TabEvent](1000)
        self._bad_reports = 0
        self.chooser: JSONObject | None = None  # the last Page.fileChooserOpened (issue 35: Gemini's uploads)
        self.chooser_seen = trio.Event()

    # -- lifetime ----------------------------------------------------------------------------------------------------

    async def open(self, nursery: trio.Nursery) -> None:
        await self.tab.subscribe(("Runtime.bindingCalled", "Page.fileChooserOpened", "Inspector.targetCrashed"),
                                 self._send)
        nursery.start_soon(self._pump)
        await self.install()

    async def close(self) -> None:
        self.broken = self.broken or "dropped"
        self._wake()
        with trio.move_on_after(2):
            try:
                await self.tab.unsubscribe()
            except BridgeError:
                pass
        self._send.close()  # ends the pump (the relay drops events for a closed sink)

    async def healthy(self) -> bool:
        if self.broken:
            return False
        if trio.current_time() - self.reported_at < self.to.alive_s:
            return True  # it just spoke (a close or detach would have broken the session already)
        try:
            with trio.fail_after(self.to.health_check_s):
                await self.tab.evaluate("1", timeout_s=self.to.health_check_s)
            return True
        except (BridgeError, trio.TooSlowError):
            return False

    async def install(self) -> None:
        """Create our isolated world in the current document, bind it, and start the watcher there."""
        tree = await self.tab.send("Page.getFrameTree")
        frame_tree = tree.get("frameTree")
        frame = frame_tree.get("frame") if isinstance(frame_tree, dict) else None
        frame_id = frame.get("id") if isinstance(frame, dict) else None
        if not isinstance(frame_id, str):
            raise BadExtensionReply(f"Page.getFrameTree: no frame id in {str(tree)[:200]}")
        world = await self.tab.send("Page.createIsolatedWorld", {"frameId": frame_id, "worldName": WORLD})
        context_id = world.get("executionContextId")
        if not isinstance(context_id, int):
            raise BadExtensionReply(f"Page.createIsolatedWorld: no executionContextId in {str(world)[:200]}")
        # The binding goes into our isolated world only (by context id): the page's own scripts never see it.
        # (Through chrome.debugger a name-scoped binding does not reach an isolated world, and an unscoped one
        # would land in the page's main world.) A new document means a new world, so this runs after every load.
        await self.tab.send("Runtime.addBinding", {"name": self.binding, "executionContextId": context_id})
        cfg: JSON = json.loads(json.dumps(self.t.watcher_config()))
        await self.tab.call(MARKDOWN, context_id=context_id, timeout_s=self.to.script_s)
        await self.tab.call(WATCHER, cfg, self.binding, context_id=context_id, timeout_s=self.to.script_s)
        self.context_id = context_id
        self.fresh = True

    async def _pump(self) -> None:
        """Route the tab's events: watcher reports update the state; close/detach break the session."""
        async for ev in self.events:
            if ev.kind is TabEventKind.CDP and ev.method == "Runtime.bindingCalled":
                params = ev.params
                if params.get("name") != self.binding or params.get("executionContextId") != self.context_id:
                    continue  # an earlier world's watcher (before a reload or a re-attach)
                payload = params.get("payload")
                if isinstance(payload, str):
                    self._take(payload)
            elif ev.kind is TabEventKind.CDP and ev.method == "Page.fileChooserOpened":
                self.chooser = dict(ev.params)
                self.chooser_seen.set()
            elif ev.kind is TabEventKind.CDP and ev.method == "Inspector.targetCrashed":
                self.broken = "the page crashed"  # its ask fails at once; the pool replaces the tab
                self.crashed = True
                self._wake()
                return
            elif ev.kind in (TabEventKind.TAB_CLOSED, TabEventKind.DETACHED, TabEventKind.DISCONNECTED):
                self.broken = {TabEventKind.TAB_CLOSED: "the tab was closed",
                               TabEventKind.DETACHED: "the debugger was detached",
                               TabEventKind.DISCONNECTED: "the browser extension disconnected"}[ev.kind]
                self._wake()
                return
            if self.broken:
                return

    def _take(self, payload: str) -> None:
        try:
            state = PageState.parse(json.loads(payload))
        except (ValueError, RecursionError) as exc:  # BadPageReport is a ValueError, as is bad JSON
            self._bad_reports += 1
            if self._bad_reports in (1, 100):
                self.log.warning("%s: ignoring a malformed watcher report: %s", self.t.title, exc)
            return
        self._set(state)

    def _set(self, state: PageState) -> None:
        self.state = state
        self.reported_at = trio.current_time()
        self._wake()

    def _wake(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    # -- page scripts ------------------------------------------------------------------------------------------------

    async def act(self, name: str, *args: JSON, timeout_s: float | None = None) -> JSON:
        """Call one watcher action (watcher.js) in our world; a new document (no world, no watcher) gets them again
        first."""
        for attempt in range(2):
            if self.context_id is None:
                await self.install()
            assert self.context_id is not None
            try:
                return await self.tab.call(CALL, name, *args, context_id=self.context_id,
                                           timeout_s=timeout_s or self.to.script_s)
            except CdpError as exc:
                text = str(exc).lower()
                if attempt or not ("context" in text or "watcher missing" in text):
                    raise
                self.context_id = None  # the document changed under us
        raise AssertionError("unreachable")

    async def script(self, source: str, *args: JSON) -> JSON:
        """A standalone page script (dom.js, page_facts.js), run in our world."""
        if self.context_id is None:
            await self.install()
        assert self.context_id is not None
        try:
            return await self.tab.call(source, *args, context_id=self.context_id, timeout_s=self.to.script_s)
        except CdpError as exc:
            if "context" not in str(exc).lower():
                raise
        await self.install()
        assert self.context_id is not None
        return await self.tab.call(source, *args, context_id=self.context_id, timeout_s=self.to.script_s)

    # -- the page state ----------------------------------------------------------------------------------------------

    async def refresh(self) -> PageState:
        """Read the state directly (safety net, and right after a navigation)."""
        raw = await self.act("state")
        try:
            state = PageState.parse(_stamped(raw))
        except BadPageReport as exc:
            raise BadExtensionReply(f"the {self.t.title} page state is malformed: {exc}") from exc
        self._set(state)
        return state

    async def current(self) -> PageState:
        return self.state if self.state is not None else await self.refresh()

    async def wait_for(self, pred: Predicate, timeout_s: float, what: str,
                       on_state: Callable[[PageState], Awaitable[None]] | None = None) -> PageState:
        """Until `pred(state)` holds: woken by watcher reports, with a slow poll as the safety net (a report lost,
        or a condition that turns true with time alone). Raises `PageTimeout` naming `what`, `TabGone`."""
        deadline = trio.current_time() + timeout_s
        state = await self.current()
        while True:
            if self.broken:
                raise TabGone(self.broken)
            # Taken before anything awaits: a report that arrives while `on_state` works wakes the wait below at
            # once, so no state goes unjudged until the safety poll.
            changed = self.changed
            state = self.state or state
            if on_state is not None:
                await on_state(state)
                if self.state is not None and self.state is not state:
                    continue  # a newer report came in meanwhile: judge that one
            if pred(state):
                return state
            now = trio.current_time()
            if now >= deadline:
                raise PageTimeout(what, state)
            with trio.move_on_after(min(self.to.safety_poll_s, deadline - now)):
                await changed.wait()
                continue
            if trio.current_time() < deadline:
                await self.refresh()

    # -- navigation and visibility -----------------------------------------------------------------------------------

    async def navigate(self, url: str) -> None:
        self.log.info("%s: opening %s", self.t.title, url)
        self.state = None
        self.context_id = None
        await self.tab.send("Page.navigate", {"url": url})
        with trio.fail_after(self.to.page_load_s):
            while True:
                try:
                    ready = await self.tab.evaluate("location.href !== 'about:blank' && document.readyState",
                                                    timeout_s=5)
                except CdpError:
                    ready = None  # between documents
                if ready == "complete":
                    break
                await trio.sleep(0.02)  # the navigation commits within a few ms; this loop ends at load
        await self.install()
        await self.refresh()

    async def bring_to_front(self) -> None:
        await self.tab.send("Page.bringToFront")

    async def activate_window(self) -> None:
        """Select the tab and focus its window: Page.bringToFront leaves a minimized window minimized."""
        await Extension(self.tab.relay).command("tabs.activate", {"tabId": self.tab_id}, timeout_s=self.to.script_s)

    # -- typing and sending ------------------------------------------------------------------------------------------

    async def fill(self, text: str) -> str:
        got = await self.act("fill", text)
        return got if isinstance(got, str) else ""

    async def begin(self, question: str) -> tuple[PageState, str | None]:
        """`expect`, the state as counted before typing, and `fill` unless a stop button shows (then None), in one
        call. The state is not taken as the current one: the reports of the typing may have arrived before it."""
        got = await self.act("begin", question)
        if not isinstance(got, dict):
            raise BadExtensionReply(f"the {self.t.title} page's first call answered {str(got)[:200]}")
        try:
            state = PageState.parse(_stamped(got.get("state")))
        except BadPageReport as exc:
            raise BadExtensionReply(f"the {self.t.title} page state is malformed: {exc}") from exc
        typed = got.get("typed")
        return state, typed if isinstance(typed, str) else None

    async def clear(self) -> bool:
        return await self.act("clear") is True

    async def input_text(self) -> str:
        got = await self.act("inputText")
        return got if isinstance(got, str) else ""

    async def insert_text(self, text: str, *, focus_input: bool = True) -> None:
        """Text as the user's typing, into the composer's input (or, without `focus_input`, where the focus is)."""
        if focus_input:
            await self.act("focusInput")
        await self.tab.send("Input.insertText", {"text": text})

    async def type_keys(self, text: str, newline: Newline) -> None:
        """Seed 5.1 phase 3: key events, one character at a time; a line break the way the composer wants it, never
        a bare Enter (that would send the first line alone)."""
        await self.act("focusInput")
        for ch in text.replace("\r\n", "\n"):
            if ch == "\n":
                if newline is Newline.INSERT_TEXT:
                    await self.tab.send("Input.insertText", {"text": "\n"})
                else:
                    await self._key("Enter", "Enter", 13, "\r", modifiers=8)  # 8 = Shift
                continue
            await self.tab.send("Input.dispatchKeyEvent", {"type": "keyDown", "text": ch, "unmodifiedText": ch})
            await self.tab.send("Input.dispatchKeyEvent", {"type": "keyUp"})

    async def _key(self, key: str, code: str, vk: int, text: str, *, modifiers: int = 0) -> None:
        await self.tab.send("Input.dispatchKeyEvent", {
            "type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk, "text": text,
            "unmodifiedText": text, "modifiers": modifiers})
        await self.tab.send("Input.dispatchKeyEvent", {
            "type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": modifiers})

    async def click_send(self, mark_notices: bool) -> bool:
        return await self.act("clickSend", mark_notices) is True

    async def send_box(self) -> Box | None:
        try:
            return Box.parse(await self.act("sendBox"))
        except BadPageReport as exc:
            raise BadExtensionReply(str(exc)) from exc

    async def expect(self, question: str) -> None:
        """Tell the watcher the question (its structural finders look for it in the thread, issue 37)."""
        await self.act("expect", question)

    async def extract_by(self, how: str) -> Extracted:
        try:
            return Extracted.parse(await self.act("extractBy", how))
        except BadPageReport as exc:
            raise BadExtensionReply(str(exc)) from exc

    async def research_start_box(self) -> Box | None:
        """Where a Deep Research plan's start button is in the last response (None: none shows)."""
        try:
            return Box.parse(await self.act("researchStartBox"))
        except BadPageReport as exc:
            raise BadExtensionReply(str(exc)) from exc

    async def mouse_click(self, box: Box) -> None:
        """Seed 6.2's fallback: a real (trusted) click at the element's centre."""
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            params: JSONObject = {"type": kind, "x": box.x, "y": box.y}
            if kind != "mouseMoved":
                params.update({"button": "left", "clickCount": 1})
            await self.tab.send("Input.dispatchMouseEvent", params)

    def expect_chooser(self) -> None:
        """Forget any earlier file chooser: the next one the page opens is `chooser` once `chooser_seen` is set."""
        self.chooser = None
        self.chooser_seen = trio.Event()

    async def press_key(self, key: str) -> None:
        """A key press the page gets as the user's (Escape closes a menu)."""
        codes = {"Escape": ("Escape", 27), "Enter": ("Enter", 13)}
        code, vk = codes[key]
        await self._key(key, code, vk, "\r" if key == "Enter" else "")

    async def press_enter(self) -> None:
        await self.act("focusInput")
        await self._key("Enter", "Enter", 13, "\r")

    async def click_stop(self) -> bool:
        try:
            return await self.act("clickStop", timeout_s=self.to.stop_click_s) is True
        except BridgeError:
            return False

    async def mark_notices(self, keep_after_last_user: bool) -> None:
        await self.act("mark", keep_after_last_user)

    async def expand_thinking(self) -> bool:
        return await self.act("expandThinking") is True

    async def extract(self, own_only: bool = False) -> Extracted:
        """The answer as the page shows it; `own_only`: from the new turn's own content only (no wider anchor)."""
        try:
            return Extracted.parse(await self.act("extract", own_only))
        except BadPageReport as exc:
            raise BadExtensionReply(f"the {self.t.title} answer could not be read: {exc}") from exc

    async def load_error(self) -> str:
        """On Chrome's error page: the browser's name for why the page did not load (``net::ERR_…``), or ""."""
        try:
            got = await self.script(LOAD_ERROR)
        except BridgeError:
            return ""
        return f"net::{got}" if isinstance(got, str) and got else ""

    async def temporary_chat(self, click: bool) -> bool:
        """Is the site's temporary chat on (issue 38)? With `click`, its toggle is pressed once when it is off."""
        got = await self.script(TEMPORARY, list(self.t.temporary_toggle), list(self.t.temporary_on), click)
        return isinstance(got, dict) and got.get("on") is True

    async def facts(self, max_text: int) -> JSONObject:
        got = await self.script(FACTS, max_text)
        if not isinstance(got, dict):
            raise BadExtensionReply("the page facts are not an object")
        return got


def _stamped(raw: JSON) -> JSON:
    """A polled state carries no report time: stamp it now."""
    if isinstance(raw, dict) and "at" not in raw:
        return {**raw, "at": now_ms(), "seq": raw.get("seq", 0)}
    return raw
