"""One tab of the browser tools: what the actor knows of it, kept current by the tab's CDP events.

The event pump turns the events the extension forwards into state: the URL at commit (the policy checks it before
every call), the document's load progress (navigation waits), an open JavaScript dialog (it cancels the calls in
flight on the tab, which then report `dialog_open` instead of hanging), and the console and network buffers (bounded,
the console from the first use of console_logs on the tab, the network from the tab's lease on).

The `ToolsBook` outlives restarts of the actor (the tree owns it, as it owns mailboxes): the current tab, which tabs
the tools opened, the ref counter of each tab and its buffers survive; what belonged to the dead incarnation (the
attachment's event channel, the isolated world) is reset and re-made on the next call.
"""

from __future__ import annotations

import collections
import logging
import math
import time
from collections.abc import Callable, Iterator

import attrs
import trio

from ..protocol.browser_tools import ConsoleEntry, DialogInfo, DialogType, Emulation, NetworkEntry, TabOwner
from ..protocol.common import JSON, JSONObject
from ..protocol.relay import TabEvent, TabEventKind
from . import redact

log = logging.getLogger("ai_bridge.browser_tools")

CONSOLE_KEEP = 1000
NETWORK_KEEP = 500
# Every field of a kept entry is capped where it enters (a page decides how long a log line, a script URL or a status
# text is): the buffers stay within CONSOLE_KEEP * (TEXT_MAX + SOURCE_MAX) and NETWORK_KEEP * a few KB characters.
TEXT_MAX = 4000
SOURCE_MAX = 1000
URL_MAX = 2000
FIELD_MAX = 200  # method, resource type, status text, MIME type
ERROR_MAX = 500
HEADERS_MAX = 64  # headers kept per request and per response
HEADER_MAX = 1000  # characters of a header's value
# Credentials (headers and query parameters, by their names: redact.py) are replaced by REDACTED unless the user
# allowed them (network_secrets).
REDACTED = redact.REDACTED


def cap(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[truncated {len(text) - limit} chars]"

BASE_EVENTS = ("Page.javascriptDialogOpening", "Page.javascriptDialogClosed", "Page.frameNavigated",
               "Page.navigatedWithinDocument", "Page.domContentEventFired", "Page.loadEventFired")
CONSOLE_EVENTS = ("Runtime.consoleAPICalled", "Runtime.exceptionThrown")
NETWORK_EVENTS = ("Network.requestWillBeSent", "Network.responseReceived", "Network.loadingFinished",
                  "Network.loadingFailed", "Network.requestServedFromCache")


def _s(obj: JSONObject, key: str) -> str:
    v = obj.get(key)
    return v if isinstance(v, str) else ""


def _o(obj: JSONObject, key: str) -> JSONObject:
    v = obj.get(key)
    return v if isinstance(v, dict) else {}


def _n(obj: JSONObject, key: str) -> float | None:
    v = obj.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _status(v: float | None) -> int | None:
    """An HTTP status as Chrome reports it (a number), or None for none or nonsense."""
    return int(v) if v is not None and 1 <= v < 1000 else None


@attrs.define(eq=False)
class ConsoleBuffer:
    entries: collections.deque[ConsoleEntry] = attrs.field(factory=lambda: collections.deque(maxlen=CONSOLE_KEEP))
    next_id: int = 1
    dropped: int = 0

    def add(self, level: str, text: str, source: str, ts: float) -> None:
        if len(self.entries) == self.entries.maxlen:
            self.dropped += 1
        self.entries.append(ConsoleEntry(self.next_id, ts, cap(level, FIELD_MAX), cap(text, TEXT_MAX),
                                         cap(source, SOURCE_MAX)))
        self.next_id += 1


def headers_of(obj: JSONObject, secrets: bool) -> tuple[tuple[str, str], ...]:
    """CDP's header object as (name, value) pairs: capped in number and length, credentials redacted."""
    out: list[tuple[str, str]] = []
    for name, value in list(obj.items())[:HEADERS_MAX]:
        text = value if isinstance(value, str) else str(value)
        if not secrets:
            text = redact.header(name, text)
        out.append((cap(name, FIELD_MAX), cap(text, HEADER_MAX)))
    return tuple(out)


def _anywhere(url: str) -> bool:
    return True


@attrs.define(eq=False)
class _Request:
    entry_id: int
    ts: float
    started: float  # CDP monotonic seconds
    method: str
    url: str
    resource_type: str
    status: int | None = None
    status_text: str = ""
    mime_type: str = ""
    failed: bool = False
    error: str = ""
    from_cache: bool = False
    duration_ms: float | None = None
    encoded_bytes: int | None = None
    done: bool = False
    request_id: str = ""  # Chrome's, for Network.getResponseBody
    request_headers: tuple[tuple[str, str], ...] = ()
    response_headers: tuple[tuple[str, str], ...] = ()

    def entry(self) -> NetworkEntry:
        return NetworkEntry(self.entry_id, self.ts, self.method, self.url, self.resource_type, self.status,
                            self.status_text, self.mime_type, self.failed, self.error, self.from_cache,
                            self.duration_ms, self.encoded_bytes, self.request_headers, self.response_headers)


@attrs.define(eq=False)
class NetworkBuffer:
    requests: collections.OrderedDict[str, _Request] = attrs.field(factory=collections.OrderedDict)
    next_id: int = 1
    dropped: int = 0
    logging: bool = False  # network_log was used
    # The domain policy: a request made by a document it denies (the page a tool is leaving) is not kept.
    allowed: Callable[[str], bool] = _anywhere
    secrets: bool = False  # keep credential headers (network_secrets) instead of redacting them
    page_from: int = 1  # the first entry of the current document's (its document request, redirects included)

    def by_id(self, entry_id: int) -> _Request | None:
        return next((r for r in self.requests.values() if r.entry_id == entry_id), None)

    def entries(self) -> Iterator[NetworkEntry]:
        return (r.entry() for r in self.requests.values())

    def committed(self, loader_id: str) -> None:
        """The main frame committed a new document: its entries begin with its own document request, whose request id
        Chrome gives as the loader's (each redirect hop keeps it), or else with the next request."""
        hops = [r.entry_id for r in self.requests.values() if loader_id and r.request_id == loader_id]
        self.page_from = min(hops, default=self.next_id)

    def inflight(self) -> int:
        return sum(not r.done for r in self.requests.values())

    def _new(self, key: str, req: _Request) -> None:
        self.requests[key] = req
        while len(self.requests) > NETWORK_KEEP:
            self.requests.popitem(last=False)
            self.dropped += 1

    def on_event(self, method: str, p: JSONObject) -> None:
        rid = _s(p, "requestId")
        if not rid:
            return
        req = self.requests.get(rid)
        if method == "Network.requestWillBeSent":
            request = _o(p, "request")
            url = _s(request, "url")
            if url.startswith("data:"):
                return
            document = _s(p, "documentURL")
            if document and not self.allowed(document):
                return
            redirect = _o(p, "redirectResponse")
            if req is not None and redirect:
                # The same request id goes on after a redirect: the hop becomes an entry of its own.
                req.status = _status(_n(redirect, "status"))
                req.status_text = cap(_s(redirect, "statusText"), FIELD_MAX)
                req.done = True
                self.requests.pop(rid)
                self._new(f"{rid}#{req.entry_id}", req)
            wall = _n(p, "wallTime")
            self._new(rid, _Request(self.next_id, (wall or time.time()) * 1000, _n(p, "timestamp") or 0.0,
                                    cap(_s(request, "method"), FIELD_MAX) or "GET",
                                    cap(url if self.secrets else redact.url(url), URL_MAX),
                                    cap(_s(p, "type"), FIELD_MAX), request_id=rid,
                                    request_headers=headers_of(_o(request, "headers"), self.secrets)))
            self.next_id += 1
        elif req is None:
            return
        elif method == "Network.responseReceived":
            resp = _o(p, "response")
            req.status = _status(_n(resp, "status"))
            req.status_text = cap(_s(resp, "statusText"), FIELD_MAX)
            req.mime_type = cap(_s(resp, "mimeType"), FIELD_MAX)
            req.from_cache = req.from_cache or resp.get("fromDiskCache") is True
            req.response_headers = headers_of(_o(resp, "headers"), self.secrets)
        elif method == "Network.requestServedFromCache":
            req.from_cache = True
        elif method in ("Network.loadingFinished", "Network.loadingFailed"):
            t = _n(p, "timestamp")
            duration = (t - req.started) * 1000 if t is not None and req.started else None
            req.duration_ms = round(duration, 1) if duration is not None and math.isfinite(duration) else None
            req.done = True
            if method == "Network.loadingFailed":
                req.failed = True
                req.error = cap(_s(p, "errorText"), ERROR_MAX) + (" (canceled)" if p.get("canceled") is True else "")
            else:
                size = _n(p, "encodedDataLength")
                req.encoded_bytes = int(size) if size is not None and math.isfinite(size) and size >= 0 else None


@attrs.define(eq=False)
class FrameDoc:
    """A cross-origin frame the tools read in a world of its own (docs/tools.md, "Cross-origin frames"): one whose own
    URL the policy allows, reached through the extension — a cross-site frame through its own debugger session, a
    same-site one through the session of the document it is in."""

    key: int  # the page script's name for it (in the document that holds its owner)
    session: str | None  # the debugger session its commands go to; None: the tab's own
    frame_id: str
    url: str
    parent: FrameDoc | None  # the frame its owner is in; None: the tab's document
    oopif: bool  # a cross-site frame with a session of its own (the extension hit-tests input into it)
    world: int | None = None
    gone: bool = False  # no longer in the page (its refs are refused with a clear error)

    def chain(self) -> list[FrameDoc]:
        """This frame and the frames it is in, outermost first."""
        out: list[FrameDoc] = []
        f: FrameDoc | None = self
        while f is not None:
            out.append(f)
            f = f.parent
        return out[::-1]


@attrs.define(eq=False)
class ToolTab:
    """A tab the tools hold (opened or adopted)."""

    tab_id: int
    owner: TabOwner  # TOOLS or ADOPTED
    url: str = ""
    title: str = ""
    next_ref: int = 1  # refs of later documents count on from here, so an old ref never names a new element
    console: ConsoleBuffer | None = None  # None until console_logs is first used on the tab
    network: NetworkBuffer | None = None
    # -- runtime (one incarnation of the actor; `reset` clears it) --
    attached: bool = False
    console_on: bool = False  # Runtime.enable / Network.enable succeeded on this attachment (a failed one is retried)
    network_on: bool = False
    emulation: Emulation = attrs.field(factory=Emulation)  # set by emulate on this attachment (dropped with it)
    world: int | None = None  # execution context id of our isolated world in the current document
    frame_id: str | None = None
    # Cross-origin frames of the current document the tools read (by key), and which refs each numbered: (first,
    # past the last, frame). Both are the document's: a new one (or a new attachment) drops them.
    frames: dict[int, FrameDoc] = attrs.field(factory=dict)
    frame_refs: list[tuple[int, int, FrameDoc]] = attrs.field(factory=list)
    frame_seq: int = 0  # frame keys are never reused on a tab (a world that outlives a detach keeps its marks)
    lock: trio.Lock = attrs.field(factory=trio.Lock)
    events: trio.MemorySendChannel[TabEvent] | None = None
    subscribed: tuple[str, ...] = ()
    dialog: DialogInfo | None = None
    gone: str | None = None  # why the tab is gone for good (closed)
    detached: str | None = None  # why our debugger was detached (the next call re-attaches)
    scopes: set[trio.CancelScope] = attrs.field(factory=set)  # calls in flight, cancelled by a dialog
    nav_seq: int = 0  # main-frame documents committed (and same-document navigations)
    loaders: list[str] = attrs.field(factory=list)  # loader ids committed, newest last (a few)
    nav_type: str = ""
    same_document: bool = False
    dcl: bool = False
    load: bool = False
    blocked: list[str] = attrs.field(factory=list)  # navigations the extension blocked by policy, newest last
    # Redirects the tab's requests met, newest last: (seq, from, to, resource type), as Chrome reports them before the
    # new request would go out (a download fetched with redirect 'manual' checks each hop: downloads.py). In memory
    # only, never shown (their URLs are not redacted).
    redirects: collections.deque[tuple[int, str, str, str]] = attrs.field(
        factory=lambda: collections.deque(maxlen=32))
    redirect_seq: int = 0
    changed: trio.Event = attrs.field(factory=trio.Event)

    def reset(self) -> None:
        """A new incarnation of the actor: nothing of the old attachment is trusted."""
        self.attached = False
        self.console_on = self.network_on = False
        self.emulation = Emulation()
        self.world = None
        self.drop_frames()
        self.lock = trio.Lock()
        self.events = None
        self.subscribed = ()
        self.scopes = set()
        self.changed = trio.Event()

    def drop_frames(self) -> None:
        """The frames' sessions or worlds are no longer ours (a new document, a detach): found again when needed; their
        refs are said to be gone."""
        for f in self.frames.values():
            f.gone = True
        self.frames = {}

    def notify(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    def wanted_events(self) -> tuple[str, ...]:
        return (BASE_EVENTS + (CONSOLE_EVENTS if self.console is not None else ())
                + (NETWORK_EVENTS if self.network is not None else ()))

    def interrupt(self) -> None:
        for scope in self.scopes:
            scope.cancel()

    # -- events --------------------------------------------------------------------------------------------------------

    def on_event(self, ev: TabEvent) -> None:
        match ev.kind:
            case TabEventKind.CDP:
                self._cdp(ev.method, ev.params, ev.received_at)
            case TabEventKind.TAB_UPDATED:
                url = ev.params.get("url")
                if isinstance(url, str) and url:
                    self.url = url
                self.notify()
            case TabEventKind.POLICY_BLOCKED:
                url = ev.params.get("url")
                self.blocked = [*self.blocked[-9:], url if isinstance(url, str) else ""]
                log.info("tab %d: the extension blocked a navigation to %s", self.tab_id, str(url)[:200])
                self.notify()
            case TabEventKind.TAB_CLOSED:
                self.gone = "the tab was closed"
                self.attached = False
                self.interrupt()
                self.notify()
            case TabEventKind.DETACHED:
                reason = ev.params.get("reason")
                self.detached = f"the debugger was detached ({reason if isinstance(reason, str) else 'unknown'})"
                self.attached = False
                self.world = None
                self.drop_frames()
                self.notify()
            case TabEventKind.DISCONNECTED:
                self.detached = "the browser extension disconnected"
                self.attached = False
                self.world = None
                self.drop_frames()
                self.notify()

    def _cdp(self, method: str, p: JSONObject, received: float) -> None:
        if method == "Page.frameNavigated":
            frame = _o(p, "frame")
            if frame.get("parentId"):
                return  # a subframe: our state is the main frame's
            self.url = _s(frame, "unreachableUrl") or _s(frame, "url") or self.url
            self.frame_id = _s(frame, "id") or self.frame_id
            self.loaders = [*self.loaders[-7:], _s(frame, "loaderId")]
            if self.network is not None:
                self.network.committed(_s(frame, "loaderId"))
            self.nav_type = _s(p, "type")
            self.same_document = False
            self.nav_seq += 1
            self.dcl = self.load = False
            self.world = None  # a new document: a new world on the next call
            self.drop_frames()
            self.frame_refs = []  # its frames' refs are an earlier page's now (the main world says so)
            self.notify()
        elif method == "Page.navigatedWithinDocument":
            if _s(p, "frameId") in ("", self.frame_id):
                self.url = _s(p, "url") or self.url
                self.same_document = True
                self.nav_seq += 1
                self.notify()
        elif method == "Page.domContentEventFired":
            self.dcl = True
            self.notify()
        elif method == "Page.loadEventFired":
            self.dcl = self.load = True
            self.notify()
        elif method == "Page.javascriptDialogOpening":
            kind = _s(p, "type")
            known = {t.value: t for t in DialogType}
            self.dialog = DialogInfo(known.get(kind, DialogType.ALERT), _s(p, "message")[:2000],
                                     _s(p, "defaultPrompt")[:2000], _s(p, "url")[:2000])
            log.info("tab %d: a %s dialog opened", self.tab_id, self.dialog.type.value)
            self.interrupt()  # the page is blocked: calls in flight report dialog_open rather than hang
            self.notify()
        elif method == "Page.javascriptDialogClosed":
            self.dialog = None
            self.notify()
        elif method in CONSOLE_EVENTS:
            if self.console is not None:
                self._console(method, p, received)
        elif method in NETWORK_EVENTS:
            redirect = _o(p, "redirectResponse") if method == "Network.requestWillBeSent" else {}
            if redirect:
                self.redirect_seq += 1
                self.redirects.append((self.redirect_seq, _s(redirect, "url")[:URL_MAX * 4],
                                       _s(_o(p, "request"), "url")[:URL_MAX * 4], _s(p, "type")[:FIELD_MAX]))
            if self.network is not None:
                self.network.on_event(method, p)
            if redirect or self.network is not None:
                self.notify()

    def _console(self, method: str, p: JSONObject, received: float) -> None:
        assert self.console is not None
        ts = _n(p, "timestamp") or received * 1000
        if method == "Runtime.exceptionThrown":
            d = _o(p, "exceptionDetails")
            exc = _o(d, "exception")
            text = _s(exc, "description") or _s(d, "text")
            self.console.add("exception", text, _where(_s(d, "url"), _n(d, "lineNumber")), ts)
            return
        level = _s(p, "type") or "log"
        args = p.get("args")
        parts = [_arg_text(a) for a in args] if isinstance(args, list) else []
        frames = _o(p, "stackTrace").get("callFrames")
        top = frames[0] if isinstance(frames, list) and frames and isinstance(frames[0], dict) else {}
        self.console.add({"warn": "warning"}.get(level, level), " ".join(parts),
                         _where(_s(top, "url"), _n(top, "lineNumber")), ts)


def _where(url: str, line: float | None) -> str:
    return f"{url}:{int(line) + 1}" if url and line is not None and math.isfinite(line) else url


def _arg_text(a: JSON) -> str:
    if not isinstance(a, dict):
        return ""
    if "value" in a:
        v = a["value"]
        return v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)
    for key in ("unserializableValue", "description"):
        v = a.get(key)
        if isinstance(v, str):
            return v
    return _s(a, "type")


@attrs.define(eq=False)
class ToolsBook:
    """What the browser tools know, owned by the tree so that it survives a restart of the actor."""

    tabs: dict[int, ToolTab] = attrs.field(factory=dict)
    current: int | None = None
    # Which browser the tab ids belong to: its profile's id (the extension's hello) and its process id, either
    # unknown (None) until seen.
    browser: tuple[str | None, int | None] = (None, None)
    # Tab ids held in an earlier browser (a relaunch, auto mode's handover): Chrome numbers the tabs of the next
    # browser afresh, so one of these may name an unrelated tab there. Refused until tabs_list shows it anew.
    stale: dict[int, str] = attrs.field(factory=dict)
    lost_current: int | None = None  # the current tab a switch dropped (said so until another is selected)

    def forget(self, tab_id: int) -> None:
        self.tabs.pop(tab_id, None)
        if self.current == tab_id:
            self.current = None

    def switch(self, profile: str | None, pid: int | None) -> bool:
        """The browser in use is `profile`'s, process `pid`: a different one than before (a part known both times
        and changed) drops every tab (and the current one) and remembers their ids as stale. True when it switched."""
        was_profile, was_pid = self.browser
        changed = (profile is not None and was_profile is not None and profile != was_profile) or (
            pid is not None and was_pid is not None and pid != was_pid)
        self.browser = (profile or was_profile if not changed else profile, pid or was_pid if not changed else pid)
        if not changed:
            return False
        before = f"profile {was_profile or '?'}, pid {was_pid or '?'}"
        why = f"it belonged to the browser before a switch ({before} → profile {profile or '?'}, pid {pid or '?'})"
        for tid in [*self.tabs, *([self.current] if self.current is not None else [])]:
            self.stale[tid] = why
        self.lost_current = self.current if self.current is not None else self.lost_current
        for tab in self.tabs.values():
            tab.interrupt()
        self.tabs.clear()
        self.current = None
        return True
