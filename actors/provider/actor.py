"""Provider tab actor: one per provider (ChatGPT, Gemini). It leases its tab, serializes asks to it, and runs the
seed's flow — with completion driven by DOM events from an in-page watcher instead of 1 s polling and fixed sleeps.

Flow of one ask (seed 3.1 / 4.1): ensure browser → connect or reuse the tab (health check; session store's tab,
else an existing provider tab, else a new one) → page ready and input present → settle → initial counts → type
(seed fallbacks) and verify → send → user message confirmed → new response appears → completion → bring to front
(background-tab quirk) → wait for rendered text → extract as markdown → save session and history.

Stuck state (seed 9.3) makes this actor *crash* with `StuckError`; its supervisor restarts it with a fresh tab
connection and the request is re-delivered (``env.attempt``). After 2 retries the third stuck attempt fails the
request with the typed error instead.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import secrets
import time
import uuid
from pathlib import Path
from typing import Any, assert_never

import attrs
import trio

from supervisor.errors import (
    AskCancelled,
    BadExtensionReply,
    BridgeError,
    CdpError,
    ExtensionDisconnected,
    InputRejected,
    InvalidArgument,
    LoginRequired,
    RateLimited,
    ResponseTimeout,
    StuckError,
    SuspiciousAnswer,
    TabClosed,
)
from supervisor.otp import ActorContext, Envelope, Reply, Retry

from ..cdp import CdpTab, Extension
from ..protocol.browser import BROWSER, EnsureBrowser
from ..protocol.common import JSON, ProviderName
from ..protocol.provider import (
    ASK_ATTEMPTS,
    Ask,
    AskPhase,
    AskProgress,
    AskResult,
    AskTimings,
    BusyAsk,
    DomReport,
    GetDom,
    ProviderReport,
    ProviderRequest,
    ProviderStatus,
    SiteTab,
    Snapshot,
    SnapshotReport,
)
from ..protocol.relay import RELAY, TabEvent, TabEventKind
from ..protocol.session_store import (
    SESSION_STORE,
    AppendHistory,
    AskStatus,
    GetSession,
    HistoryRecord,
    SaveSession,
    SessionEntry,
)
from .table import ProviderTable

WATCHER_SOURCE = (Path(__file__).parent / "watcher.js").read_text(encoding="utf-8")
# The answer converter (window.__aibMarkdown): vendored Turndown + GFM plugin and our rules, in one function scope.
MARKDOWN_SOURCE = "(function () {\n" + ";\n".join(
    (Path(__file__).parent / name).read_text(encoding="utf-8")
    for name in ("vendor/turndown.js", "vendor/turndown-plugin-gfm.js", "markdown.js")) + "\n})();"
WORLD = "ai-bridge"
MAX_RETRIES = ASK_ATTEMPTS - 1  # stuck retries (seed 9.2), then a typed error
PROGRESS_EVERY_S = 0.5
MAX_PARTIAL = 200_000  # characters of the partial answer carried by a progress item (background jobs keep it)
SAFETY_POLL_S = 1.0  # the watcher reports changes; this slow poll only covers lost events


class TabGone(Exception):
    """Internal: the tab's connection broke (closed, detached, extension gone)."""


def now_ms() -> float:
    return time.time() * 1000


@attrs.define(eq=False)
class Conn:
    """An attached provider tab with our isolated world and watcher."""

    tab: CdpTab
    tab_id: int
    binding: str
    events: trio.MemoryReceiveChannel[TabEvent]
    context_id: int | None = None
    state: dict[str, Any] = attrs.field(factory=dict)
    state_at: float = 0.0  # wall clock ms of the page's last report
    changed: trio.Event = attrs.field(factory=trio.Event)
    broken: str | None = None
    loaded_at: float = 0.0  # trio time of the last (re)load this actor caused


class ProviderActor:
    def __init__(self, ctx: ActorContext[ProviderRequest], table: ProviderTable, *, stall_s: float | None = None,
                 debug_dir: Path | None = None, dumps_keep: int = 0) -> None:
        self.ctx = ctx
        self.t = table
        self.name = ProviderName(table.name)
        self.store = ctx.ref(SESSION_STORE)
        self.to = table.timeouts if stall_s is None else attrs.evolve(table.timeouts, stall_s=stall_s)
        self.log = logging.getLogger(f"ai_bridge.{table.name}")
        self.relay = ctx.ref(RELAY)
        self.extension = Extension(self.relay)
        self.conn: Conn | None = None
        self.binding = f"__aib_{secrets.token_hex(6)}"
        self.ask_lock = trio.Lock()
        self.debug_dir = debug_dir  # seed 9.4 dumps; the newest `dumps_keep` are kept (both providers together)
        self.dumps_keep = dumps_keep
        self.busy: Busy | None = None  # the running ask, for ProviderStatus (console, bridge_status)

    def status(self, queued: int, tabs: tuple[SiteTab, ...] | str) -> ProviderReport:
        conn = self.conn
        busy = None
        if self.busy is not None:
            b = self.busy
            busy = BusyAsk(b.ask_id, b.question, b.attempt, b.phase, b.chars, round(trio.current_time() - b.since, 3))
        url = conn.state.get("url") if conn else None
        return ProviderReport(provider=self.name, tab_id=conn.tab_id if conn else None,
                              url=url if isinstance(url, str) else None,
                              context_id=conn.context_id if conn else None, broken=conn.broken if conn else None,
                              busy=busy, queued=queued, browser_tabs=tabs)

    # -- tab connection -----------------------------------------------------------------------------------------------

    async def healthy(self, conn: Conn) -> bool:
        if conn.broken:
            return False
        try:
            with trio.fail_after(self.to.health_check_s):
                await conn.tab.evaluate("1", timeout_s=self.to.health_check_s)
            return True
        except (BridgeError, trio.TooSlowError):
            return False

    def _matches_site(self, url: str) -> bool:
        return any(re.match("^" + re.escape(p).replace(r"\*", ".*") + "$", url) for p in self.t.url_patterns)

    async def connect(self, session: SessionEntry | None, *, fresh: bool) -> Conn:
        """Reuse the current tab if healthy, else lease one: the session's tab, an open provider tab, a new one."""
        if self.conn is not None and not fresh and await self.healthy(self.conn):
            return self.conn
        await self.drop_conn()
        tab_id: int | None = None
        if session is not None and session.tab_id is not None:
            try:
                with trio.fail_after(self.to.reuse_tab_s):
                    got = await self.extension.tab(session.tab_id, timeout_s=self.to.reuse_tab_s)
                if self._matches_site(got.url):
                    tab_id = session.tab_id
            except (BridgeError, trio.TooSlowError):
                tab_id = None
        if tab_id is None:
            tabs = list(await self.extension.tabs(self.t.url_patterns))
            preferred = [t for t in tabs if session is not None and t.url == session.url]
            if preferred or tabs:
                tab_id = (preferred or tabs)[0].tab_id
        url = session.url if session is not None else self.t.home_url
        if tab_id is None:
            tab_id = await self.create_tab(url)
        try:
            return await self.attach(tab_id)
        except CdpError as exc:
            if exc.ext_code != "tab_busy":
                raise
        # Another server leased that tab between our tabs.query (or tabs.create) and our attach: two servers asking
        # at once. Each server drives a tab of its own, so open ours.
        self.log.info("%s tab %d was leased by another server first; opening our own", self.t.title, tab_id)
        return await self.attach(await self.create_tab(url))

    async def create_tab(self, url: str) -> int:
        last: BaseException | None = None
        for attempt in range(1 + self.to.new_tab_retries):
            try:
                # Its own window: all provider tabs stay visible at once (no background-tab quirk, no hung
                # screenshots), and parallel asks do not fight over focus.
                got = await self.extension.create_tab(url, new_window=True, timeout_s=max(self.to.new_tab_s, 30.0))
                return got.tab_id
            except BridgeError as exc:
                last = exc
                self.log.warning("creating a %s tab failed (attempt %d): %s", self.t.title, attempt + 1, exc)
                await trio.sleep(1.0)
        raise TabClosed(f"could not open a {self.t.title} tab: {last}")

    async def attach(self, tab_id: int) -> Conn:
        await self.extension.attach(tab_id)
        send, recv = trio.open_memory_channel[TabEvent](1000)
        tab = CdpTab(self.relay, tab_id)
        conn = Conn(tab, tab_id, self.binding, recv)
        await tab.subscribe(("Runtime.bindingCalled",), send)
        self.conn = conn
        self.ctx_nursery.start_soon(self.pump, conn)
        await self.install(conn)
        self.log.info("attached to %s tab %d", self.t.title, tab_id)
        return conn

    async def install(self, conn: Conn) -> None:
        """Create our isolated world in the current document and start the watcher there."""
        tree = await conn.tab.send("Page.getFrameTree")
        frame_tree = tree.get("frameTree")
        frame = frame_tree.get("frame") if isinstance(frame_tree, dict) else None
        frame_id = frame.get("id") if isinstance(frame, dict) else None
        if not isinstance(frame_id, str):
            raise BadExtensionReply(f"Page.getFrameTree: no frame id in {str(tree)[:200]}")
        world = await conn.tab.send("Page.createIsolatedWorld", {"frameId": frame_id, "worldName": WORLD})
        context_id = world.get("executionContextId")
        if not isinstance(context_id, int):
            raise BadExtensionReply(f"Page.createIsolatedWorld: no executionContextId in {str(world)[:200]}")
        conn.context_id = context_id
        # The binding goes into our isolated world only (by context id): the page's own scripts never see it.
        # (Through chrome.debugger a name-scoped binding does not reach an isolated world, and an unscoped one
        # would land in the page's main world.) A new document means a new world, so this runs after every load.
        await conn.tab.send("Runtime.addBinding", {"name": self.binding, "executionContextId": conn.context_id})
        cfg = json.dumps(self.t.watcher_config())
        await conn.tab.evaluate(f"{MARKDOWN_SOURCE}\n({WATCHER_SOURCE})({cfg}, {json.dumps(self.binding)})",
                                context_id=conn.context_id)

    async def drop_conn(self) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        conn.broken = conn.broken or "dropped"
        conn.changed.set()
        with trio.move_on_after(2):
            try:
                await conn.tab.unsubscribe()
            except BridgeError:
                pass

    async def pump(self, conn: Conn) -> None:
        """Route the tab's events: watcher reports update the state; close/detach break the connection."""
        async for ev in conn.events:
            if ev.kind is TabEventKind.CDP and ev.method == "Runtime.bindingCalled":
                if ev.params.get("name") != conn.binding:
                    continue
                payload = ev.params.get("payload", "{}")
                try:
                    st = json.loads(payload if isinstance(payload, str) else "{}")
                except (ValueError, RecursionError):
                    continue
                if isinstance(st, dict) and "error" not in st:
                    self._set_state(conn, st)
            elif ev.kind in (TabEventKind.TAB_CLOSED, TabEventKind.DETACHED, TabEventKind.DISCONNECTED):
                conn.broken = {TabEventKind.TAB_CLOSED: "the tab was closed",
                               TabEventKind.DETACHED: "the debugger was detached",
                               TabEventKind.DISCONNECTED: "the browser extension disconnected"}[ev.kind]
                conn.changed.set()
                if self.conn is conn:
                    self.conn = None
                return
            if conn.broken:
                return

    def _set_state(self, conn: Conn, st: dict[str, Any]) -> None:
        conn.state = st
        conn.state_at = float(st.get("at", now_ms()))
        conn.changed.set()
        conn.changed = trio.Event()

    async def poll_state(self, conn: Conn) -> dict[str, Any]:
        """Read the state directly (safety net, and right after navigation); reinstalls a vanished watcher."""
        expr = "window.__aibWatcher ? JSON.stringify(window.__aibWatcher.state()) : null"
        for _ in range(2):
            try:
                raw = await conn.tab.evaluate(expr, context_id=conn.context_id, timeout_s=10)
            except CdpError as exc:
                if "context" not in str(exc).lower():
                    raise
                raw = None
            if isinstance(raw, str):
                st: dict[str, Any] = json.loads(raw)
                st["at"] = now_ms()
                self._set_state(conn, st)
                return st
            await self.install(conn)  # the document changed under us: new world, new watcher
        raise CdpError(f"cannot read the {self.t.title} page state")

    async def wait_for(self, conn: Conn, pred: Any, timeout_s: float, what: str,
                       on_state: Any = None) -> dict[str, Any]:
        """Wait until pred(state) holds: woken by watcher reports, with a slow poll as safety net."""
        deadline = trio.current_time() + timeout_s
        if not conn.state:
            await self.poll_state(conn)
        while True:
            if conn.broken:
                raise TabGone(conn.broken)
            st = conn.state
            if on_state is not None:
                await on_state(st)
            if pred(st):
                return st
            now = trio.current_time()
            if now >= deadline:
                raise trio.TooSlowError(what)
            changed = conn.changed
            with trio.move_on_after(min(SAFETY_POLL_S, deadline - now)):
                await changed.wait()
                continue
            await self.poll_state(conn)

    # -- page steps -------------------------------------------------------------------------------------------------

    async def navigate(self, conn: Conn, url: str) -> None:
        self.log.info("%s: opening %s", self.t.title, url)
        conn.state = {}
        await conn.tab.send("Page.navigate", {"url": url})
        conn.loaded_at = trio.current_time()
        await self.wait_loaded(conn)

    async def wait_loaded(self, conn: Conn) -> None:
        """readyState complete in a *new* document, then our world and watcher are (re)installed."""
        with trio.fail_after(self.to.page_load_s):
            while True:
                try:
                    ready = await conn.tab.evaluate("document.readyState", timeout_s=5)
                except CdpError:
                    ready = None
                if ready == "complete":
                    break
                await trio.sleep(0.03)
        await self.install(conn)
        await self.poll_state(conn)

    async def type_question(self, conn: Conn, question: str) -> str:
        """Seed 5.1 / 5.2: JS insertion, then Input.insertText, then key events; each verified."""
        want = re.sub(r"\s+", "", question)
        prefix = want[:20] if self.t.name == "gemini" else want
        used = ""
        for phase in self.t.type_phases:
            used = phase
            await self.clear_and_focus(conn)
            if phase == "js":
                await conn.tab.evaluate(
                    "(() => { const el = window.__aibWatcher.input(); el.focus();"
                    " if (el.tagName === 'TEXTAREA') { const set = Object.getOwnPropertyDescriptor("
                    "HTMLTextAreaElement.prototype, 'value').set; set.call(el, " + json.dumps(question) + ");"
                    " el.dispatchEvent(new Event('input', {bubbles: true})); return true; }"
                    " return document.execCommand('insertText', false, " + json.dumps(question) + "); })()",
                    context_id=conn.context_id)
            elif phase == "insert_text":
                await conn.tab.send("Input.insertText", {"text": question})
            else:
                for ch in question:
                    key = "Enter" if ch == "\n" else ""
                    await conn.tab.send("Input.dispatchKeyEvent", {"type": "keyDown", "text": ch, "key": key})
                    await conn.tab.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": key})
            got = await conn.tab.evaluate("window.__aibWatcher.inputText()", context_id=conn.context_id)
            if isinstance(got, str) and prefix in re.sub(r"\s+", "", got):
                return used
            self.log.warning("%s: input not reflected after %s phase; trying the next", self.t.title, phase)
        raise InputRejected(f"{self.t.title} did not accept the typed question",
                            hint="The page layout may have changed; `take_cdp_snapshot` shows what the page looks "
                            "like.")

    async def clear_and_focus(self, conn: Conn) -> None:
        await conn.tab.evaluate(
            "(() => { const el = window.__aibWatcher.input(); el.focus();"
            " if (el.tagName === 'TEXTAREA') { el.select(); } else { const r = document.createRange();"
            " r.selectNodeContents(el); const s = getSelection(); s.removeAllRanges(); s.addRange(r); }"
            " if (window.__aibWatcher.inputText().length) document.execCommand('delete'); return true; })()",
            context_id=conn.context_id)

    async def click_send(self, conn: Conn) -> None:
        clicked = await conn.tab.evaluate(
            "(() => { const b = window.__aibWatcher.sendButton(); if (!b || b.disabled) return false;"
            " b.click(); return true; })()", context_id=conn.context_id)
        if not clicked:
            await self.press_enter(conn)

    async def press_enter(self, conn: Conn) -> None:
        await conn.tab.evaluate("window.__aibWatcher.input().focus()", context_id=conn.context_id)
        for kind in ("keyDown", "keyUp"):
            await conn.tab.send("Input.dispatchKeyEvent", {
                "type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r"
                if kind == "keyDown" else ""})

    async def click_stop(self, conn: Conn) -> bool:
        try:
            clicked = await conn.tab.evaluate(
                "(() => { const b = window.__aibWatcher && window.__aibWatcher.stopButton(); if (!b) return false;"
                " b.click(); return true; })()", context_id=conn.context_id, timeout_s=3)
        except BridgeError:
            return False
        return bool(clicked)

    # -- the ask ----------------------------------------------------------------------------------------------------

    async def ask(self, env: Envelope[ProviderRequest], msg: Ask) -> AskResult:
        t0 = trio.current_time()
        retries = env.attempt - 1
        marks: dict[str, float] = {}

        def mark(name: str) -> None:
            marks[name] = trio.current_time()

        def progress(phase: AskPhase, chars: int = 0, text: str = "") -> None:
            if self.busy is not None:
                self.busy.phase, self.busy.chars = phase, chars
            env.progress(AskProgress(self.name, phase, chars, text))

        progress(AskPhase.CONNECTING)
        await self.ctx.ref(BROWSER).call(EnsureBrowser(timeout_s=60), timeout=90)
        session = await self.store.call(GetSession(msg.project, self.name), timeout=10)
        conn = await self.connect(session, fresh=retries > 0)
        mark("connect")
        st = conn.state or await self.poll_state(conn)
        target: str | None = None
        if msg.new_chat:
            target = self.t.home_url
        elif retries > 0:
            target = st.get("url") or self.t.home_url  # fresh page after a stuck attempt
        elif session is not None and session.url != st.get("url") and re.match(self.t.conversation_re, session.url):
            target = session.url  # this project's conversation, not whatever the tab shows now
        if target is not None:
            await self.navigate(conn, target)
        try:
            st = await self.wait_for(conn, lambda s: s.get("ready") == "complete" and (s["inputFound"] or s["login"]),
                                     self.to.input_s, "input box")
        except trio.TooSlowError:
            await self.debug_dump(conn, "no-input", msg.question)
            raise InputRejected(f"the {self.t.title} input box did not appear within {self.to.input_s:g}s",
                                hint="Check the tab with take_cdp_snapshot; the site may be down or changed."
                                ) from None
        if st["login"] and not st["inputFound"]:
            raise LoginRequired(f"{self.t.title} needs you to log in",
                                hint=f"Open {self.t.home_url} in the browser ai-bridge uses, log in, then retry.")
        if conn.loaded_at and trio.current_time() - conn.loaded_at < 30:
            if re.match(self.t.conversation_re, str(st.get("url", ""))):
                # An existing conversation's turns arrive after the input box (SPA): wait for them, so they are
                # counted before we send and never mistaken for the new answer.
                try:
                    await self.wait_for(conn, lambda s: s["userCount"] > 0, 10, "earlier turns")
                except trio.TooSlowError:
                    self.log.warning("%s: the conversation showed no earlier turns after 10 s", self.t.title)
            await self.settle(conn)
        if conn.state.get("stop"):
            await self.stuck_check(conn)
        st = conn.state
        initial_user, initial_assistant = st["userCount"], st["assistantCount"]
        mark("wait_input")

        progress(AskPhase.TYPING)
        phase = await self.type_question(conn, msg.question)
        mark("input")

        try:
            await self.wait_for(conn, lambda s: (s["sendFound"] and s["sendEnabled"]) or s["stop"],
                                self.to.send_button_s, "send button")
        except trio.TooSlowError:
            pass  # Enter key fallback below
        await self.click_send(conn)
        try:
            await self.wait_for(conn, lambda s: s["userCount"] > initial_user, self.to.user_message_s,
                                "user message")
        except trio.TooSlowError:
            await self.debug_dump(conn, "send-timeout", msg.question)
            raise InputRejected(f"{self.t.title} did not take the question (no new user message after sending)",
                                hint="The send button may have changed; see the debug dump in the state dir."
                                ) from None
        mark("send")
        progress(AskPhase.SENT)

        w: dict[str, Any] = {"initialAssistant": initial_assistant, "sawStop": False, "elapsed": 0.0,
                             "textStableS": 0.0}
        sent_t = trio.current_time()
        last_len, last_change = -1, sent_t
        last_progress = 0.0
        thinking = False

        async def on_state(s: dict[str, Any]) -> None:
            nonlocal last_len, last_change, last_progress, thinking
            now = trio.current_time()
            w["sawStop"] = w["sawStop"] or bool(s["stop"])
            w["elapsed"] = now - sent_t
            thinking = thinking or bool(s.get("skipThinking")) or bool(s.get("thinkingDone"))
            if s["lastLen"] != last_len:
                last_len, last_change = s["lastLen"], now
            w["textStableS"] = now - last_change
            if s["assistantCount"] > initial_assistant and s["lastLen"] > 0 and now - last_progress >= PROGRESS_EVERY_S:
                last_progress = now
                try:
                    partial = await conn.tab.evaluate("window.__aibWatcher.extract().text",
                                                      context_id=conn.context_id, timeout_s=5)
                except BridgeError:
                    partial = ""
                progress(AskPhase.ANSWERING, s["lastLen"], str(partial or "")[-MAX_PARTIAL:])

        try:
            await self.wait_for(conn, lambda s: s["assistantCount"] > initial_assistant or s["rateLimited"],
                                self.to.new_response_s, "new response", on_state)
        except trio.TooSlowError:
            await self.debug_dump(conn, "no-response", msg.question)
            raise StuckError(f"{self.t.title} did not start answering within {self.to.new_response_s:g}s "
                             "(stuck: no response)") from None

        reason = ""

        def complete(s: dict[str, Any]) -> bool:
            nonlocal reason
            if s["rateLimited"]:
                return True
            if s["stop"] and not s["skipThinking"] and w["textStableS"] >= self.to.stall_s:
                raise StuckError(f"{self.t.title} stopped making progress: the stop button stayed for "
                                 f"{self.to.stall_s:g}s with no new text (stuck: stop button)")
            fired = self.t.completion(s, w)
            reason = fired.reason
            return fired.done

        try:
            st = await self.wait_for(conn, complete, msg.timeout_s, "completion", on_state)
        except trio.TooSlowError:
            await self.debug_dump(conn, "response-timeout", msg.question)
            raise ResponseTimeout(f"{self.t.title} did not finish answering within {msg.timeout_s:g}s",
                                  hint="Raise timeout_s for long answers, or check the tab with take_cdp_snapshot."
                                  ) from None
        detected_ms = now_ms()
        if st["rateLimited"]:
            reason = "rate limited"
        mark("response")
        progress(AskPhase.EXTRACTING, st["lastLen"])

        if st["rateLimited"]:
            raise RateLimited(f"{self.t.title} says you reached its message limit",
                              hint="Wait until the limit resets, or ask the other provider.")
        if not st.get("visible", True):
            # Background-tab quirk (seed 13 problem 4): React renders no text in a hidden tab.
            await conn.tab.send("Page.bringToFront")
        st = await self.wait_for(conn, lambda s: s["lastLen"] > 0 and not s["skipThinking"],
                                 self.to.text_render_s, "rendered answer text")
        got = await conn.tab.evaluate("window.__aibWatcher.extract()", context_id=conn.context_id)
        if isinstance(got, dict) and got.get("error"):
            self.log.warning("%s: markdown conversion failed, answer taken as plain text: %s", self.t.title,
                             str(got["error"])[:300])
        answer = normalize(str(got.get("text", "")) if isinstance(got, dict) else "")
        url = str(conn.state.get("url", ""))
        total = trio.current_time() - t0
        mark("total")
        timings = _timings(t0, marks)
        self.log.info("%s answered in %.2fs (%s; typed via %s; %d chars)", self.t.title, total, reason, phase,
                      len(answer))
        if is_suspicious(answer, msg.question):
            dump = await self.debug_dump(conn, "suspicious", msg.question, answer=answer)
            raise SuspiciousAnswer(
                f"{self.t.title}'s answer looks wrong (empty, 'ok', or missing the numbers of the question). "
                f"Answer as extracted: {answer[:4000]!r}",
                hint=f"Debug dump: {dump}. Check the tab with take_cdp_snapshot.")
        return AskResult(self.name, answer, url, timings, retries, detected_ms, reason, thinking)

    async def settle(self, conn: Conn) -> None:
        """Replaces the seed's 500 ms fixed wait: counts unchanged for `settle_s` on a freshly loaded page, so earlier
        turns of an existing conversation are counted before we send (seed v2.0.10 misidentification fix)."""
        key = None
        stable_since = trio.current_time()
        deadline = stable_since + 5
        while trio.current_time() < deadline:
            st = conn.state
            k = (st.get("userCount"), st.get("assistantCount"), st.get("lastLen"))
            if k != key:
                key, stable_since = k, trio.current_time()
            elif trio.current_time() - stable_since >= self.to.settle_s:
                return
            changed = conn.changed
            with trio.move_on_after(self.to.settle_s / 3):
                await changed.wait()

    async def stuck_check(self, conn: Conn) -> None:
        """Seed 9.3: a stop button left over from an earlier answer must disappear within 5 s."""
        try:
            await self.wait_for(conn, lambda s: not s["stop"], self.to.stuck_check_s, "leftover stop button")
        except trio.TooSlowError:
            raise StuckError(f"{self.t.title} is stuck: an earlier answer's stop button did not go away "
                             f"within {self.to.stuck_check_s:g}s") from None

    async def debug_dump(self, conn: Conn, why: str, question: str, answer: str = "") -> str:
        """Seed 9.4: keep the page state for later diagnosis in <state-dir>/debug/."""
        if self.debug_dir is None:
            return "(debug dumps are off: no state dir, or debug_dumps_keep = 0)"
        now = time.time()
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now)) + f"{now % 1:.3f}"[1:]
        path = self.debug_dir / f"{self.t.name}-{stamp}-{why}.json"
        record: dict[str, Any] = {"why": why, "provider": self.t.name, "at": stamp, "question": question,
                                  "answer": answer, "state": conn.state}
        try:
            # Seed 9.5's debug fields: enough to tell a login page, an error banner or a changed layout apart.
            facts = await conn.tab.evaluate(PAGE_FACTS, timeout_s=5)
            if isinstance(facts, dict):
                record.update(facts)
        except BridgeError as exc:
            record["dumpError"] = str(exc)
        keep = self.dumps_keep

        def write() -> None:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.write_text(json.dumps(record, indent=2, ensure_ascii=False), encoding="utf-8")
            prune_dumps(path.parent, keep)

        await trio.to_thread.run_sync(write)
        self.log.warning("debug dump (%s) written to %s", why, path)
        return str(path)

    # -- snapshot / dom ---------------------------------------------------------------------------------------------

    async def snapshot(self, msg: Snapshot) -> SnapshotReport:
        conn = await self.any_conn(msg.project)
        info = await conn.tab.evaluate(
            "({url: location.href, title: document.title, readyState: document.readyState,"
            " visibility: document.visibilityState,"
            " text: (document.body ? document.body.innerText : '').slice(0, " + str(int(msg.max_text)) + ")})")
        if not isinstance(info, dict):
            raise BadExtensionReply("the page facts of the snapshot are not an object")
        ax = await conn.tab.send("Accessibility.getFullAXTree", {"depth": 12}, timeout_s=20)
        nodes = ax.get("nodes")
        shot: str | None = None
        if msg.screenshot:
            if conn.state.get("visible") is False:
                await conn.tab.send("Page.bringToFront")  # a hidden tab's screenshot can hang (NOTES.md)
            data = (await conn.tab.send("Page.captureScreenshot", {"format": "png"}, timeout_s=20)).get("data")
            shot = data if isinstance(data, str) else None

        def text(key: str) -> str:
            value = info.get(key) if isinstance(info, dict) else None
            return value if isinstance(value, str) else ""

        return SnapshotReport(
            provider=self.name, tab_id=conn.tab_id, url=text("url"), title=text("title"),
            ready_state=text("readyState"), visibility=text("visibility"), text=text("text"),
            accessibility=tuple(summarize_ax(nodes if isinstance(nodes, list) else [])),
            watcher_state={k: v for k, v in conn.state.items() if k not in ("inputText",)} if conn.state else None,
            screenshot_png_b64=shot)

    async def get_dom(self, msg: GetDom) -> DomReport:
        conn = await self.any_conn(msg.project)
        result = await conn.tab.evaluate(
            "(" + DOM_SERIALIZER + ")(" + json.dumps(msg.selector) + ", " + str(int(msg.max_chars)) + ")",
            context_id=conn.context_id)
        if result is None:
            raise InvalidArgument(f"no element matches selector {msg.selector!r} (shadow roots searched too)")
        if not isinstance(result, dict) or not isinstance(result.get("html"), str):
            raise BadExtensionReply("the DOM serializer returned no html")
        html, chars = result["html"], result.get("chars")
        assert isinstance(html, str)
        return DomReport(self.name, str(conn.state.get("url", "")), html, result.get("truncated") is True,
                         chars if isinstance(chars, int) else len(html))

    async def any_conn(self, project: str | None) -> Conn:
        """The tab for inspection tools: the current one, else the one the session store names for the project,
        else an existing provider tab — never a new one."""
        if self.conn is not None and await self.healthy(self.conn):
            return self.conn
        tabs = list(await self.extension.tabs(self.t.url_patterns))
        if project is not None:
            session = await self.store.call(GetSession(project, self.name), timeout=10)
            if session is not None:
                tabs.sort(key=lambda t: t.tab_id != session.tab_id)  # the session's tab first, if open
        if not tabs:
            raise TabClosed(f"no {self.t.title} tab is open",
                            hint=f"Ask {self.t.title} something first, or open {self.t.home_url} in the browser.")
        return await self.attach(tabs[0].tab_id)

    ctx_nursery: trio.Nursery


def _timings(t0: float, marks: dict[str, float]) -> AskTimings:
    out: list[int] = []
    prev = t0
    for name in ("connect", "wait_input", "input", "send", "response"):
        at = marks.get(name, prev)
        out.append(round((at - prev) * 1000))
        prev = at
    connect, wait_input, typed, sent, response = out
    return AskTimings(connect, wait_input, typed, sent, response, round((marks.get("total", prev) - t0) * 1000))


def normalize(text: str) -> str:
    """Seed 3.4 / 4.4 clean-up outside fenced code: drop Thinking-time button text (a plain-text fallback can carry
    it), trailing spaces and extra blank lines. Code is returned as written (two blank lines between functions)."""
    drop = re.compile(r"^(Thinking time[:：]?\s*[\dms ]+|思考時間[:：]\s*[\d分秒ms ]+|Thought for .+)$")
    out: list[str] = []
    fence = ""
    for line in text.replace("\r\n", "\n").split("\n"):
        opener = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence:
            out.append(line)
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = ""
            continue
        if opener:
            fence = opener.group(1)
        elif drop.match(line.strip()):
            continue
        elif not line.strip() and out and not out[-1].strip():
            continue  # one blank line between blocks is enough
        out.append(line.rstrip())
    return "\n".join(out).strip()


def is_suspicious(answer: str, question: str) -> bool:
    """Seed 10.5."""
    trimmed = answer.strip()
    if not trimmed:
        return True
    if question.strip() == "OK":
        return False
    if re.search(r"\d", question) and not re.search(r"\d", trimmed):
        return True
    return bool(re.fullmatch(r"ok", trimmed, re.IGNORECASE))


def summarize_ax(nodes: list[JSON], limit: int = 120) -> list[str]:
    """Interesting accessibility nodes as 'role "name"' lines (buttons, inputs, headings, links)."""
    keep = {"button", "textbox", "heading", "link", "combobox", "checkbox", "img", "article", "dialog", "alert"}
    out: list[str] = []
    for n in nodes:
        if not isinstance(n, dict):
            continue
        if n.get("ignored"):
            continue
        role_obj, name_obj = n.get("role"), n.get("name")
        role = role_obj.get("value", "") if isinstance(role_obj, dict) else ""
        name = str(name_obj.get("value", "") if isinstance(name_obj, dict) else "").strip()
        if role in keep and (name or role == "textbox"):
            out.append(f'{role} "{name[:80]}"')
        if len(out) >= limit:
            break
    return out


DOM_SERIALIZER = r"""
function (selector, maxChars) {
  const findDeep = (sel) => {
    const stack = [document];
    while (stack.length) {
      const root = stack.shift();
      const hit = root.querySelector(sel);
      if (hit) return hit;
      for (const el of root.querySelectorAll('*')) if (el.shadowRoot) stack.push(el.shadowRoot);
    }
    return null;
  };
  const root = selector ? findDeep(selector) : document.documentElement;
  if (!root) return null;
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const attr = (s) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
  const out = [];
  let size = 0;
  let truncated = false;
  const push = (s) => {
    if (size + s.length > maxChars) { truncated = true; return false; }
    out.push(s); size += s.length; return true;
  };
  const walk = (node) => {
    if (truncated) return;
    if (node.nodeType === Node.TEXT_NODE) { push(esc(node.textContent)); return; }
    if (node.nodeType === Node.COMMENT_NODE) return;
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const tag = node.tagName.toLowerCase();
    if (tag === 'script' || tag === 'style') { push(`<${tag}>…</${tag}>`); return; }
    const attrs = Array.from(node.attributes).map((a) => ` ${a.name}="${attr(a.value)}"`).join('');
    if (!push(`<${tag}${attrs}>`)) return;
    if (node.shadowRoot) {
      push('<template shadowrootmode="open">');
      node.shadowRoot.childNodes.forEach(walk);
      push('</template>');
    }
    node.childNodes.forEach(walk);
    push(`</${tag}>`);
  };
  walk(root);
  return { html: out.join(''), truncated, chars: size };
}
"""


# The page's text for a debug dump, open shadow roots included (Gemini renders inside them; innerText skips them).
PAGE_FACTS = """(() => {
  const out = []; let size = 0;
  const walk = (node) => {
    if (size > 50000) return;
    if (node.nodeType === Node.TEXT_NODE) { out.push(node.data); size += node.data.length; return; }
    if (node.nodeName === 'SCRIPT' || node.nodeName === 'STYLE') return;
    if (node.shadowRoot) walk(node.shadowRoot);
    node.childNodes.forEach(walk);
  };
  walk(document.body || document);
  const text = out.join(' ').replace(/\\s+/g, ' ').trim();
  return {pageUrl: location.href, pageTitle: document.title, bodyLen: text.length, bodySnippet: text.slice(0, 2000)};
})()"""


def prune_dumps(folder: Path, keep: int) -> None:
    """Keep the newest `keep` dumps: anomalies repeat (a changed layout fails every ask) and must not fill the
    disk."""
    dumps = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for old in dumps[keep:]:
        with contextlib.suppress(FileNotFoundError):
            old.unlink()


@attrs.define
class Busy:
    ask_id: str
    question: str
    attempt: int
    since: float
    phase: AskPhase = AskPhase.QUEUED
    chars: int = 0


async def run(
    ctx: ActorContext[ProviderRequest],
    *,
    table: ProviderTable,
    state_dir: Path | None = None,
    stall_s: float | None = None,
    dumps_keep: int = 0,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    actor = ProviderActor(ctx, table, stall_s=stall_s, dumps_keep=dumps_keep,
                          debug_dir=state_dir / "debug" if state_dir is not None and dumps_keep else None)
    asks_send, asks_recv = trio.open_memory_channel[Envelope[ProviderRequest]](math.inf)

    async def inspect(msg: ProviderRequest) -> Reply[object]:
        match msg:
            case ProviderStatus():
                tabs: tuple[SiteTab, ...] | str
                try:  # the site's tabs as the browser sees them, with our lease; best effort (the link may be down)
                    found = await actor.extension.tabs(actor.t.url_patterns, timeout_s=5)
                    tabs = tuple(SiteTab(t.tab_id, t.url, t.attached_by_me, t.active) for t in found)
                except BridgeError as exc:
                    tabs = f"[{exc.code}] {exc.message}"
                return msg.reply(actor.status(asks_send.statistics().current_buffer_used, tabs))
            case Snapshot():
                try:
                    return msg.reply(await actor.snapshot(msg))
                except TabGone as exc:
                    raise TabClosed(f"the {actor.t.title} tab went away: {exc}") from exc
            case GetDom():
                try:
                    return msg.reply(await actor.get_dom(msg))
                except TabGone as exc:
                    raise TabClosed(f"the {actor.t.title} tab went away: {exc}") from exc
            case Ask():
                raise AssertionError("asks are queued, not inspected")
            case _:
                assert_never(msg)

    async with trio.open_nursery() as nursery:
        actor.ctx_nursery = nursery
        nursery.start_soon(_asker, ctx, actor, asks_recv)
        task_status.started()
        async for env in ctx.messages():
            if isinstance(env.message, Ask):
                env.started = False  # queued: a crash now does not count as an attempt of this ask
                asks_send.send_nowait(env)  # asks run one at a time, in arrival order
            else:
                ctx.answer_soon(nursery, env, inspect)  # inspection must work while an ask is running
        nursery.cancel_scope.cancel()


async def _asker(ctx: ActorContext[ProviderRequest], actor: ProviderActor,
                 asks: trio.MemoryReceiveChannel[Envelope[ProviderRequest]]) -> None:
    async for env in asks:
        msg = env.message
        if env.abandoned or env.answered or not isinstance(msg, Ask):
            continue
        env.started = True
        actor.busy = Busy(msg.ask_id, msg.question[:80], env.attempt, trio.current_time())
        try:
            await _one_ask(ctx, actor, env, msg)
        finally:
            actor.busy = None


async def _one_ask(ctx: ActorContext[ProviderRequest], actor: ProviderActor, env: Envelope[ProviderRequest],
                   msg: Ask) -> None:
    ask_id = msg.ask_id or uuid.uuid4().hex
    started = time.time()
    status = AskStatus.OK
    error: BridgeError | None = None
    result: AskResult | None = None
    cancelled = False
    crash: Retry | None = None
    with trio.CancelScope() as scope:

        async def watch_abandon() -> None:
            await env.wait_abandoned()
            scope.cancel()

        async with trio.open_nursery() as inner:
            inner.start_soon(watch_abandon)
            try:
                result = await actor.ask(env, msg)
            except StuckError as exc:
                gave_up = StuckError(f"{exc} — gave up after {MAX_RETRIES} retries",
                                     hint="Reload the tab or start a new chat (new_chat: true).")
                if env.attempt < Ask.max_attempts:
                    actor.log.warning("%s (attempt %d); restarting the %s actor to retry", exc, env.attempt,
                                      actor.t.title)
                    # crash on purpose (below): the supervisor restarts us with a fresh tab connection
                    crash = Retry(str(exc), failure=gave_up)
                else:
                    status, error = AskStatus.STUCK, gave_up
            except TabGone as exc:
                actor.conn = None
                status, error = AskStatus.FAILED, TabClosed(
                    f"the {actor.t.title} tab went away during the ask: {exc}",
                    hint="Retry; ai-bridge opens or reuses a tab on the next call.")
            except trio.TooSlowError as exc:
                status, error = AskStatus.FAILED, ResponseTimeout(f"{actor.t.title}: timed out waiting for {exc}")
            except (ExtensionDisconnected, TabClosed) as exc:
                actor.conn = None
                status, error = AskStatus.FAILED, exc
            except BridgeError as exc:
                status, error = (AskStatus.RATE_LIMITED if isinstance(exc, RateLimited) else AskStatus.FAILED), exc
            inner.cancel_scope.cancel()
    if crash is not None:
        raise crash  # re-delivered to our successor with attempt + 1
    if scope.cancelled_caught:
        cancelled = True
        status = AskStatus.CANCELLED
        with trio.CancelScope(shield=True), trio.move_on_after(3):
            if actor.conn is not None and await actor.click_stop(actor.conn):
                actor.log.info("%s ask cancelled by the client: clicked Stop", actor.t.title)
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(started)) + "Z"
    if result is not None:
        record = HistoryRecord(ts, msg.project, actor.name.value, msg.question, status, answer=result.answer,
                               url=result.url, timings=result.timings.as_json(), retries=result.retries)
    else:
        why = f"[{error.code}] {error}" if error is not None else "cancelled by the client" if cancelled else None
        record = HistoryRecord(ts, msg.project, actor.name.value, msg.question, status, error=why)
    with trio.CancelScope(shield=True), trio.move_on_after(10):
        try:
            if result is not None and actor.conn is not None:
                await actor.store.call(SaveSession(msg.project, actor.name, result.url, actor.conn.tab_id),
                                       timeout=10)
            await actor.store.call(AppendHistory(ask_id, record), timeout=10)
        except BridgeError as exc:
            actor.log.error("could not record the ask in history: %s", exc)
    # Persist before answering, so the history a client reads right after the reply already holds this ask.
    if not env.answered:
        if result is not None:
            env.reply(msg.reply(result))
        else:
            env.fail(error if error is not None else AskCancelled(f"the {actor.t.title} ask was cancelled"))
