"""browser_tools: the general browser tools (seeds 002 and 003) — tabs, navigation, interaction, reading — on tabs of
their own, behind safe mode and a default-deny domain policy.

Every page request names its tab (`tab_id`) or acts on the current one (the last `TabNew` / `TabSelect`). Every
element-taking request takes a `Target`: exactly one of a CSS selector or a snapshot ref. Replies are plain values
with an ``as_json()``: the stable object the MCP tools return as structured content.
"""

from __future__ import annotations

import enum

import attrs

from supervisor.otp import Address, Request

from .common import JSON, JSONObject

# -- shared values -----------------------------------------------------------------------------------------------------


class WaitUntil(enum.StrEnum):
    COMMIT = "commit"  # the new document is committed (its URL is known)
    DOMCONTENTLOADED = "domcontentloaded"
    LOAD = "load"
    NETWORKIDLE = "networkidle"  # load, then no request in flight for 500 ms (best effort)


@attrs.frozen
class Target:
    """An element: exactly one of a CSS selector (searched through open shadow roots and same-origin iframes too) or
    a ref from `Snapshot` (``e12``)."""

    selector: str | None = None
    ref: str | None = None

    def __attrs_post_init__(self) -> None:
        if (self.selector is None) == (self.ref is None):
            raise ValueError("a target is exactly one of selector or ref")

    def as_json(self) -> JSONObject:
        return {"selector": self.selector} if self.selector is not None else {"ref": self.ref}

    def describe(self) -> str:
        return f"selector {self.selector!r}" if self.selector is not None else f"ref {self.ref}"


@attrs.frozen
class ElementBrief:
    """Which element a call acted on."""

    ref: str
    tag: str
    role: str
    name: str

    def as_json(self) -> dict[str, object]:
        return {"ref": self.ref, "tag": self.tag, "role": self.role, "name": self.name}


class TabOwner(enum.StrEnum):
    TOOLS = "tools"  # opened by the browser tools, or by a page in one of their tabs
    ADOPTED = "adopted"  # a tab the tools selected that they did not open (yours)
    FREE = "free"  # held by nobody: tab_select adopts it
    PROVIDER = "provider"  # an ask tab of this server (ChatGPT, Gemini): the tools never drive it


@attrs.frozen
class TabView:
    tab_id: int
    url: str
    title: str
    owner: TabOwner
    current: bool
    active: bool
    allowed: bool  # the URL passes the domain policy

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "title": self.title, "owner": self.owner.value,
                "current": self.current, "active": self.active, "allowed": self.allowed}


# -- tabs --------------------------------------------------------------------------------------------------------------


@attrs.frozen
class TabsReport:
    current_tab_id: int | None
    tabs: tuple[TabView, ...]
    hidden: int  # tabs nobody holds whose URL the policy denies: not listed

    def as_json(self) -> dict[str, object]:
        return {"currentTabId": self.current_tab_id, "tabs": [t.as_json() for t in self.tabs],
                "hiddenByPolicy": self.hidden}


@attrs.frozen
class TabsList(Request[TabsReport]):
    pass


@attrs.frozen
class NavReport:
    tab_id: int
    url: str
    title: str
    status: int | None  # the document's HTTP status when the browser reports it
    wait_until: WaitUntil

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "title": self.title, "status": self.status,
                "waitUntil": self.wait_until.value}


@attrs.frozen
class TabNew(Request[NavReport]):
    """Open a tab of the tools' own (about:blank, or `url`) and make it the current tab."""

    url: str | None = None
    wait_until: WaitUntil = WaitUntil.LOAD
    timeout_s: float = 30.0


@attrs.frozen
class TabSelect(Request[TabView]):
    """Make a tab the current one: the tools' own, or one nobody holds whose URL the policy allows (adopted)."""

    tab_id: int


@attrs.frozen
class ClosedReport:
    tab_id: int
    closed: bool  # False: an adopted tab, released (left open, debugger detached)
    current_tab_id: int | None

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "closed": self.closed, "released": not self.closed,
                "currentTabId": self.current_tab_id}


@attrs.frozen
class TabClose(Request[ClosedReport]):
    """Close a tab the tools opened (default: the current one). An adopted tab is released, not closed."""

    tab_id: int | None = None


# -- navigation --------------------------------------------------------------------------------------------------------


@attrs.frozen
class Navigate(Request[NavReport]):
    url: str
    wait_until: WaitUntil = WaitUntil.LOAD
    timeout_s: float = 30.0
    tab_id: int | None = None


class HistoryStep(enum.StrEnum):
    BACK = "back"
    FORWARD = "forward"
    RELOAD = "reload"


@attrs.frozen
class History(Request[NavReport]):
    """back, forward or reload."""

    step: HistoryStep
    wait_until: WaitUntil = WaitUntil.LOAD
    timeout_s: float = 30.0
    tab_id: int | None = None


# -- interaction -------------------------------------------------------------------------------------------------------


class MouseButton(enum.StrEnum):
    LEFT = "left"
    RIGHT = "right"
    MIDDLE = "middle"


class Action(enum.StrEnum):
    CLICK = "click"
    HOVER = "hover"
    TYPE = "type"
    PRESS = "press"
    SELECT_OPTION = "select_option"
    DRAG = "drag"


@attrs.frozen
class ActionReport:
    tab_id: int
    action: Action
    url: str
    element: ElementBrief | None = None
    to_element: ElementBrief | None = None
    x: float | None = None  # where the pointer went (CSS pixels of the viewport)
    y: float | None = None
    key: str | None = None
    value: str | None = None  # a field's value after typing
    selected: tuple[str, ...] = ()  # select_option: the values now selected
    re_resolved: bool = False  # the ref's node had been replaced by a re-render; the same element was found again

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"tabId": self.tab_id, "action": self.action.value, "url": self.url}
        if self.element is not None:
            out["element"] = self.element.as_json()
        if self.to_element is not None:
            out["toElement"] = self.to_element.as_json()
        if self.x is not None and self.y is not None:
            out["point"] = {"x": round(self.x, 1), "y": round(self.y, 1)}
        if self.key is not None:
            out["key"] = self.key
        if self.value is not None:
            out["value"] = self.value
        if self.selected:
            out["selected"] = list(self.selected)
        if self.re_resolved:
            out["reResolved"] = True
        return out


@attrs.frozen
class Click(Request[ActionReport]):
    target: Target
    button: MouseButton = MouseButton.LEFT
    click_count: int = 1
    modifiers: tuple[str, ...] = ()
    timeout_s: float = 5.0  # how long the element may take to become actionable
    tab_id: int | None = None


@attrs.frozen
class Hover(Request[ActionReport]):
    target: Target
    timeout_s: float = 5.0
    tab_id: int | None = None


@attrs.frozen
class TypeText(Request[ActionReport]):
    target: Target
    text: str
    clear: bool = True  # replace the field's content (else type at its end)
    submit: bool = False  # press Enter afterwards
    key_events: bool = False  # one key event per character instead of one text insertion
    timeout_s: float = 5.0
    tab_id: int | None = None


@attrs.frozen
class Press(Request[ActionReport]):
    key: str  # "Enter", "Control+A", "Shift+Tab", "a"
    target: Target | None = None  # focus it first
    timeout_s: float = 5.0
    tab_id: int | None = None


@attrs.frozen
class ScrollReport:
    tab_id: int
    url: str
    scroll_x: float
    scroll_y: float
    scroll_width: float
    scroll_height: float
    viewport_width: float
    viewport_height: float
    element: ElementBrief | None = None

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"tabId": self.tab_id, "url": self.url, "scrollX": self.scroll_x,
                                  "scrollY": self.scroll_y, "scrollWidth": self.scroll_width,
                                  "scrollHeight": self.scroll_height, "viewportWidth": self.viewport_width,
                                  "viewportHeight": self.viewport_height}
        if self.element is not None:
            out["element"] = self.element.as_json()
        return out


class ScrollTo(enum.StrEnum):
    TOP = "top"
    BOTTOM = "bottom"


@attrs.frozen
class Scroll(Request[ScrollReport]):
    """Scroll `target` into view; or scroll the page (or the scrollable box around `target`) by a delta or to the
    top/bottom."""

    target: Target | None = None
    delta_x: float = 0.0
    delta_y: float = 0.0
    to: ScrollTo | None = None
    timeout_s: float = 5.0
    tab_id: int | None = None


@attrs.frozen
class SelectOption(Request[ActionReport]):
    target: Target
    values: tuple[str, ...]  # option values or labels
    timeout_s: float = 5.0
    tab_id: int | None = None


@attrs.frozen
class Drag(Request[ActionReport]):
    source: Target
    dest: Target
    timeout_s: float = 5.0
    tab_id: int | None = None


@attrs.frozen
class FieldValue:
    """One field of `FillForm`: text for inputs, textareas, contenteditables and selects (an option's value or
    label); true/false for checkboxes and radios."""

    target: Target
    value: str | bool


@attrs.frozen
class FieldResult:
    target: Target
    ok: bool
    element: ElementBrief | None
    value: str | bool | None
    error: str | None  # an error code (element_not_found, element_not_interactable) and message

    def as_json(self) -> dict[str, object]:
        return {**self.target.as_json(), "ok": self.ok,
                "element": self.element.as_json() if self.element else None, "value": self.value,
                "error": self.error}


@attrs.frozen
class FillReport:
    tab_id: int
    url: str
    fields: tuple[FieldResult, ...]
    submitted: bool

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "fields": [f.as_json() for f in self.fields],
                "filled": sum(f.ok for f in self.fields), "failed": sum(not f.ok for f in self.fields),
                "submitted": self.submitted}


@attrs.frozen
class FillForm(Request[FillReport]):
    fields: tuple[FieldValue, ...]
    submit: Target | None = None  # click it after filling
    timeout_s: float = 5.0
    tab_id: int | None = None


# -- reading -----------------------------------------------------------------------------------------------------------


@attrs.frozen
class SnapshotReport:
    tab_id: int
    url: str
    title: str
    text: str  # the tree, one line per node: "- role "name" [state] [ref=e5]"
    nodes: int
    refs: int
    chars: int
    truncated: bool

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "title": self.title, "snapshot": self.text,
                "size": {"nodes": self.nodes, "refs": self.refs, "chars": self.chars},
                "truncated": self.truncated}


@attrs.frozen
class Snapshot(Request[SnapshotReport]):
    """The accessibility tree with a ref per element. `root` limits it to a subtree, `roles` to nodes of those roles
    (and what leads to them), `interactive_only` to elements one can act on; `max_depth` and `max_chars` bound it."""

    root: Target | None = None
    interactive_only: bool = False
    roles: tuple[str, ...] = ()
    max_depth: int | None = None
    max_chars: int = 50_000
    tab_id: int | None = None


class ShotMode(enum.StrEnum):
    VIEWPORT = "viewport"
    FULL_PAGE = "full_page"
    ELEMENT = "element"


class ImageFormat(enum.StrEnum):
    PNG = "png"
    JPEG = "jpeg"


@attrs.frozen
class ScreenshotReport:
    tab_id: int
    url: str
    mode: ShotMode
    data_b64: str = attrs.field(repr=False)
    mime: str
    width: int  # image pixels
    height: int
    truncated: bool  # full page taller than the cap: the top part only
    full_height: float | None  # the page's CSS height (full page)
    element: ElementBrief | None = None
    warning: str | None = None  # the image was sent otherwise than asked (JPEG, scaled) to fit one frame

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"tabId": self.tab_id, "url": self.url, "mode": self.mode.value,
                                  "mimeType": self.mime, "width": self.width, "height": self.height,
                                  "truncated": self.truncated}
        if self.warning is not None:
            out["warning"] = self.warning
        if self.full_height is not None:
            out["fullHeight"] = self.full_height
        if self.element is not None:
            out["element"] = self.element.as_json()
        return out


@attrs.frozen
class Screenshot(Request[ScreenshotReport]):
    mode: ShotMode = ShotMode.VIEWPORT
    target: Target | None = None  # for mode element
    format: ImageFormat = ImageFormat.PNG
    quality: int = 80  # jpeg
    timeout_s: float = 5.0
    tab_id: int | None = None


class TextKind(enum.StrEnum):
    TEXT = "text"  # visible text (innerText)
    HTML = "html"  # outerHTML, open shadow roots inlined as <template shadowrootmode="open">
    MARKDOWN = "markdown"  # the main content as markdown


@attrs.frozen
class TextReport:
    tab_id: int
    url: str
    title: str
    kind: TextKind
    text: str
    chars: int  # the full length before max_chars
    truncated: bool

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "title": self.title, "kind": self.kind.value,
                "text": self.text, "chars": self.chars, "truncated": self.truncated}


@attrs.frozen
class GetText(Request[TextReport]):
    kind: TextKind = TextKind.TEXT
    target: Target | None = None  # default: the whole page (markdown: its main content)
    max_chars: int = 100_000
    timeout_s: float = 5.0
    tab_id: int | None = None


@attrs.frozen
class Link:
    text: str
    href: str
    internal: bool  # same origin as the page
    rel: str

    def as_json(self) -> dict[str, object]:
        return {"text": self.text, "href": self.href, "internal": self.internal, "rel": self.rel}


@attrs.frozen
class LinksReport:
    tab_id: int
    url: str
    links: tuple[Link, ...]
    total: int
    truncated: bool

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "links": [link.as_json() for link in self.links],
                "total": self.total, "truncated": self.truncated}


@attrs.frozen
class ExtractLinks(Request[LinksReport]):
    target: Target | None = None
    contains: str | None = None  # keep links whose text or href contains this (case-insensitive)
    internal_only: bool = False
    limit: int = 200
    timeout_s: float = 5.0
    tab_id: int | None = None


class QueryWhat(enum.StrEnum):
    COUNT = "count"
    ATTRIBUTES = "attributes"
    STYLES = "styles"
    VISIBILITY = "visibility"
    STATE = "state"
    FORM_VALUES = "form_values"
    METADATA = "metadata"
    FIND_TEXT = "find_text"


@attrs.frozen
class Box:
    x: float
    y: float
    width: float
    height: float

    def as_json(self) -> dict[str, object]:
        return {"x": self.x, "y": self.y, "width": self.width, "height": self.height}


@attrs.frozen
class Visibility:
    visible: bool
    in_viewport: bool
    box: Box | None
    reason: str  # why not visible ("display:none", "zero size", ...), else ""

    def as_json(self) -> dict[str, object]:
        return {"visible": self.visible, "inViewport": self.in_viewport,
                "box": self.box.as_json() if self.box else None, "reason": self.reason}


@attrs.frozen
class ElementState:
    enabled: bool
    editable: bool
    focused: bool
    checked: bool | None
    selected: bool | None
    expanded: bool | None
    required: bool
    value: str | None

    def as_json(self) -> dict[str, object]:
        return {"enabled": self.enabled, "editable": self.editable, "focused": self.focused,
                "checked": self.checked, "selected": self.selected, "expanded": self.expanded,
                "required": self.required, "value": self.value}


@attrs.frozen
class FormField:
    name: str
    type: str
    value: str | None
    checked: bool | None
    element: ElementBrief

    def as_json(self) -> dict[str, object]:
        return {"name": self.name, "type": self.type, "value": self.value, "checked": self.checked,
                "ref": self.element.ref}


@attrs.frozen
class ElementInfo:
    element: ElementBrief
    text: str = ""
    attributes: tuple[tuple[str, str], ...] = ()
    styles: tuple[tuple[str, str], ...] = ()
    visibility: Visibility | None = None
    state: ElementState | None = None
    fields: tuple[FormField, ...] = ()  # form_values

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {**self.element.as_json()}
        if self.text:
            out["text"] = self.text
        if self.attributes:
            out["attributes"] = dict(self.attributes)
        if self.styles:
            out["styles"] = dict(self.styles)
        if self.visibility is not None:
            out["visibility"] = self.visibility.as_json()
        if self.state is not None:
            out["state"] = self.state.as_json()
        if self.fields:
            out["fields"] = [f.as_json() for f in self.fields]
        return out


@attrs.frozen
class PageMetadata:
    title: str
    lang: str
    charset: str
    description: str
    canonical: str
    meta: tuple[tuple[str, str], ...]  # name/property -> content

    def as_json(self) -> dict[str, object]:
        return {"title": self.title, "lang": self.lang, "charset": self.charset, "description": self.description,
                "canonical": self.canonical, "meta": dict(self.meta)}


@attrs.frozen
class QueryReport:
    tab_id: int
    url: str
    what: QueryWhat
    count: int  # matches in all (elements holds up to `limit` of them)
    elements: tuple[ElementInfo, ...]
    metadata: PageMetadata | None = None

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"tabId": self.tab_id, "url": self.url, "what": self.what.value,
                                  "count": self.count}
        if self.what is not QueryWhat.COUNT and self.what is not QueryWhat.METADATA:
            out["elements"] = [e.as_json() for e in self.elements]
        if self.metadata is not None:
            out["metadata"] = self.metadata.as_json()
        return out


@attrs.frozen
class Query(Request[QueryReport]):
    """unibrowse's exploration tools in one: `what` says which. Element queries take `target` (a selector matches
    every element it selects; a ref one). `find_text` takes `text`; `metadata` neither."""

    what: QueryWhat
    target: Target | None = None
    text: str | None = None
    exact: bool = False
    properties: tuple[str, ...] = ()  # styles: which computed properties (default: a useful set)
    limit: int = 20
    timeout_s: float = 5.0
    tab_id: int | None = None


class ElementWaitState(enum.StrEnum):
    ATTACHED = "attached"
    VISIBLE = "visible"
    HIDDEN = "hidden"
    DETACHED = "detached"


@attrs.frozen
class WaitReport:
    tab_id: int
    url: str
    condition: str
    waited_ms: float
    element: ElementBrief | None = None

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"tabId": self.tab_id, "url": self.url, "matched": self.condition,
                                  "waitedMs": round(self.waited_ms, 1)}
        if self.element is not None:
            out["element"] = self.element.as_json()
        return out


@attrs.frozen
class WaitFor(Request[WaitReport]):
    """Wait for exactly one condition: an element in a state, text to appear / disappear, a load state, or a time."""

    target: Target | None = None
    state: ElementWaitState = ElementWaitState.VISIBLE
    text: str | None = None
    text_gone: str | None = None
    load_state: WaitUntil | None = None
    time_s: float | None = None
    timeout_s: float = 10.0
    tab_id: int | None = None


@attrs.frozen
class ConsoleEntry:
    id: int
    ts: float  # ms since the epoch
    level: str  # log, info, warning, error, debug, exception
    text: str
    source: str  # script URL:line, when known

    def as_json(self) -> dict[str, object]:
        return {"id": self.id, "ts": self.ts, "level": self.level, "text": self.text, "source": self.source}


@attrs.frozen
class ConsoleReport:
    tab_id: int
    url: str
    started: bool  # this call started collecting for the tab
    entries: tuple[ConsoleEntry, ...]
    total: int  # kept in the buffer
    dropped: int  # pushed out of the bounded buffer since collection began

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "started": self.started,
                "entries": [e.as_json() for e in self.entries], "total": self.total, "dropped": self.dropped}


@attrs.frozen
class ConsoleLogs(Request[ConsoleReport]):
    level: str | None = None  # only this level (warning also matches warn)
    since_id: int = 0  # entries after this id
    limit: int = 100
    clear: bool = False
    tab_id: int | None = None


@attrs.frozen
class NetworkEntry:
    id: int
    ts: float
    method: str
    url: str
    resource_type: str
    status: int | None
    status_text: str
    mime_type: str
    failed: bool
    error: str
    from_cache: bool
    duration_ms: float | None
    encoded_bytes: int | None
    # (name, value), credentials redacted unless the user allowed them; sent only when asked for (headers: true)
    request_headers: tuple[tuple[str, str], ...] = ()
    response_headers: tuple[tuple[str, str], ...] = ()

    def as_json(self, headers: bool = False) -> dict[str, object]:
        out: dict[str, object] = {
            "id": self.id, "ts": self.ts, "method": self.method, "url": self.url, "type": self.resource_type,
            "status": self.status, "statusText": self.status_text, "mimeType": self.mime_type,
            "failed": self.failed, "error": self.error, "fromCache": self.from_cache,
            "durationMs": self.duration_ms, "encodedBytes": self.encoded_bytes}
        if headers:
            out["requestHeaders"] = [{"name": n, "value": v} for n, v in self.request_headers]
            out["responseHeaders"] = [{"name": n, "value": v} for n, v in self.response_headers]
        return out


@attrs.frozen
class NetworkBody:
    """One response's body (network_log body_of): text, or base64 when binary was asked for; cut at the cap."""

    id: int
    mime_type: str
    text: str
    base64: bool
    size: int  # characters of the whole body (as text, or as base64)
    truncated: bool

    def as_json(self) -> dict[str, object]:
        return {"id": self.id, "mimeType": self.mime_type, "text": self.text, "base64": self.base64,
                "size": self.size, "truncated": self.truncated}


@attrs.frozen
class NetworkReport:
    tab_id: int
    url: str
    started: bool
    entries: tuple[NetworkEntry, ...]
    total: int
    dropped: int
    headers: bool = False  # the entries carry their headers
    body: NetworkBody | None = None

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "tabId": self.tab_id, "url": self.url, "started": self.started,
            "entries": [e.as_json(self.headers) for e in self.entries], "total": self.total,
            "dropped": self.dropped}
        if self.body is not None:
            out["body"] = self.body.as_json()
        return out


@attrs.frozen
class NetworkLog(Request[NetworkReport]):
    url_contains: str | None = None
    failed_only: bool = False
    since_id: int = 0
    limit: int = 100
    clear: bool = False
    tab_id: int | None = None
    headers: bool = False  # each entry's request and response headers
    body_of: int | None = None  # an entry id: its response body too
    body_max_chars: int = 20_000
    binary: bool = False  # a binary body as base64 (else refused: text only)


@attrs.frozen
class UploadedFile:
    path: str  # as the caller named it, relative to the project folder
    size: int

    def as_json(self) -> dict[str, object]:
        return {"path": self.path, "size": self.size}


@attrs.frozen
class UploadReport:
    tab_id: int
    url: str
    element: ElementBrief | None
    files: tuple[UploadedFile, ...]

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "element": self.element.as_json() if self.element else None,
                "files": [f.as_json() for f in self.files]}


@attrs.frozen
class UploadFile(Request[UploadReport]):
    """Set a file input's files: `paths` are absolute, resolved and already checked to be the project's
    (supervisor.attachments.select_files, as an ask's files); `names` are how the caller named them."""

    target: Target
    paths: tuple[str, ...]
    names: tuple[str, ...]
    sizes: tuple[int, ...]
    timeout_s: float = 5.0
    tab_id: int | None = None


@attrs.frozen
class DownloadReport:
    tab_id: int
    url: str  # the tab's
    source_url: str  # what was downloaded
    path: str  # the saved file: absolute, inside the download folder
    name: str
    size: int  # bytes
    mime_type: str

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "sourceUrl": self.source_url, "path": self.path,
                "name": self.name, "size": self.size, "mimeType": self.mime_type}


@attrs.frozen
class Download(Request[DownloadReport]):
    """Save what clicking `target` downloads, or what `url` downloads (a link the page script clicks, so the page's
    cookies go with it), into the configured download folder."""

    target: Target | None = None
    url: str | None = None
    timeout_s: float = 30.0
    tab_id: int | None = None


class NetworkPreset(enum.StrEnum):
    """emulate's network throttling (Chrome DevTools' presets)."""

    NONE = "none"  # no throttling
    OFFLINE = "offline"
    SLOW_3G = "slow-3g"
    FAST_3G = "fast-3g"
    SLOW_4G = "slow-4g"


class ColorScheme(enum.StrEnum):
    LIGHT = "light"
    DARK = "dark"
    NO_PREFERENCE = "no-preference"


@attrs.frozen
class Viewport:
    width: int
    height: int
    device_scale_factor: float  # 0: the browser's own
    mobile: bool = False

    def as_json(self) -> dict[str, object]:
        return {"width": self.width, "height": self.height, "deviceScaleFactor": self.device_scale_factor,
                "mobile": self.mobile}


@attrs.frozen
class Emulation:
    """What is emulated on a tab (None: the browser's own). Chrome drops all of it when the tools release the tab
    (the debugger detaches)."""

    viewport: Viewport | None = None
    user_agent: str | None = None
    color_scheme: ColorScheme | None = None
    network: NetworkPreset | None = None
    cpu_throttling: float | None = None  # a slowdown factor (4: four times slower)

    def as_json(self) -> dict[str, object]:
        return {"viewport": self.viewport.as_json() if self.viewport else None, "userAgent": self.user_agent,
                "colorScheme": self.color_scheme.value if self.color_scheme else None,
                "network": self.network.value if self.network else None, "cpuThrottling": self.cpu_throttling}


@attrs.frozen
class EmulateReport:
    tab_id: int
    url: str
    emulation: Emulation

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, **self.emulation.as_json()}


@attrs.frozen
class Emulate(Request[EmulateReport]):
    """Set what is given (the rest stays); `reset` first clears everything."""

    viewport: Viewport | None = None
    user_agent: str | None = None
    color_scheme: ColorScheme | None = None
    network: NetworkPreset | None = None
    cpu_throttling: float | None = None
    reset: bool = False
    tab_id: int | None = None


@attrs.frozen
class Resize(Request[EmulateReport]):
    """The page's viewport to width x height CSS px (the device scale and mobile flag stay as emulated)."""

    width: int
    height: int
    tab_id: int | None = None


@attrs.frozen
class EvalReport:
    tab_id: int
    url: str
    ok: bool
    value: JSON
    type: str
    error: str | None
    truncated: bool

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "ok": self.ok, "value": self.value, "type": self.type,
                "error": self.error, "truncated": self.truncated}


@attrs.frozen
class Eval(Request[EvalReport]):
    """JavaScript in the page's own world (only with --unsafe-enable-eval). A page exception is ``ok: false``."""

    expression: str
    await_promise: bool = True
    timeout_s: float = 10.0
    tab_id: int | None = None


class DialogType(enum.StrEnum):
    ALERT = "alert"
    CONFIRM = "confirm"
    PROMPT = "prompt"
    BEFOREUNLOAD = "beforeunload"


@attrs.frozen
class DialogInfo:
    type: DialogType
    message: str
    default_prompt: str
    url: str

    def as_json(self) -> dict[str, object]:
        return {"type": self.type.value, "message": self.message, "defaultPrompt": self.default_prompt,
                "url": self.url}


@attrs.frozen
class DialogReport:
    tab_id: int
    dialog: DialogInfo
    accepted: bool

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "dialog": self.dialog.as_json(), "accepted": self.accepted}


@attrs.frozen
class HandleDialog(Request[DialogReport]):
    accept: bool
    prompt_text: str | None = None
    tab_id: int | None = None


@attrs.frozen
class ToolTabState:
    tab_id: int
    url: str
    owner: TabOwner
    attached: bool
    dialog: DialogInfo | None
    console_entries: int | None  # None until console_logs was first used on the tab
    network_entries: int | None

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "owner": self.owner.value, "attached": self.attached,
                "dialog": self.dialog.as_json() if self.dialog else None, "consoleEntries": self.console_entries,
                "networkEntries": self.network_entries}


@attrs.frozen
class ToolsReport:
    mutations: bool
    eval: bool
    allowed_domains: tuple[str, ...]
    current_tab_id: int | None
    tabs: tuple[ToolTabState, ...]

    def as_json(self) -> dict[str, object]:
        return {"safeMode": not self.mutations, "mutations": self.mutations, "eval": self.eval,
                "allowedDomains": list(self.allowed_domains), "currentTabId": self.current_tab_id,
                "tabs": [t.as_json() for t in self.tabs]}


@attrs.frozen
class ToolsStatus(Request[ToolsReport]):
    pass


BrowserToolsRequest = (TabsList | TabNew | TabSelect | TabClose | Navigate | History | Click | Hover | TypeText
                       | Press | Scroll | SelectOption | Drag | FillForm | Snapshot | Screenshot | GetText
                       | ExtractLinks | Query | WaitFor | ConsoleLogs | NetworkLog | Eval | HandleDialog | ToolsStatus
                       | Emulate | Resize | UploadFile | Download)
BROWSER_TOOLS = Address[BrowserToolsRequest]("browser_tools", BrowserToolsRequest)
