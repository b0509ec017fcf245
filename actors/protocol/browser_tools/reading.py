"""The browser tools' reading requests: the snapshot, screenshots, text, links, queries of elements and the page,
waiting for an element or a state."""

from __future__ import annotations

import enum

import attrs

from supervisor.otp import Request

from .values import ElementBrief, Target, WaitUntil


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
