"""The output models (``outputSchema``) of the general browser tools: the objects the browser_tools replies'
``as_json()`` write, key for key (camelCase, as on the wire). A key the reply leaves out when there is nothing to say
is `Absent` (never null); one it always sends, possibly null, is ``X | None``. Page content in them (titles, texts,
HTML, link texts, console messages, dialog messages) is untrusted data.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue

from ...protocol import browser_tools as bt
from ..toolkit import Absent, Output

# strict=False: an enum field takes its value ("tools"); strict mode would want the Python enum member itself.
Owner = Annotated[bt.TabOwner, Field(strict=False, description="tools (opened by the tools), adopted (a tab of "
                                     "yours they selected), free (nobody holds it; tab_select adopts it) or provider "
                                     "(an ask tab: never driven).")]
Count = Annotated[int, Field(ge=0)]
TabId = Annotated[int, Field(description="The tab's id (tab_id of the other tools).")]
Url = Annotated[str, Field(description="The tab's URL when the call finished.")]
Title = Annotated[str, Field(description="The page's title (untrusted page content).")]


class ElementOut(Output):
    """An element a call acted on or found."""

    ref: str = Field(description="Its ref (e12) for the other tools.")
    tag: str
    role: str = Field(description="Its ARIA role.")
    name: str = Field(description="Its accessible name (untrusted page content).")


# -- tabs --------------------------------------------------------------------------------------------------------------


class TabOut(Output):
    """tab_select; a row of tabs_list."""

    tabId: TabId
    url: str
    title: Title
    owner: Owner
    current: bool = Field(description="The tab the tools act on when a call gives no tab_id.")
    active: bool = Field(description="The tab shown in its window.")
    allowed: bool = Field(description="Its URL passes the domain policy (if not, the title is left empty).")


class TabsOut(Output):
    currentTabId: int | None
    tabs: list[TabOut]
    hiddenByPolicy: Count = Field(description="Tabs nobody holds on denied domains: counted, not listed.")


class NavOut(Output):
    """tab_new, navigate, back, forward, reload."""

    tabId: TabId
    url: Url
    title: Title
    status: int | None = Field(description="The document's HTTP status (null when the browser does not report one).")
    waitUntil: Annotated[bt.WaitUntil, Field(strict=False, description="What the navigation waited for.")]


class ClosedOut(Output):
    tabId: TabId
    closed: bool = Field(description="The tab was closed (a tab the tools opened).")
    released: bool = Field(description="The tab was released, left open (a tab they adopted).")
    currentTabId: int | None


# -- interaction -------------------------------------------------------------------------------------------------------


class PointOut(Output):
    """Where the pointer went: CSS pixels of the top viewport."""

    x: float
    y: float


class _ActionOut(Output):
    tabId: TabId
    url: Url
    element: ElementOut | Absent = None
    reResolved: Annotated[Literal[True], Field(description="Present when the ref's element had been replaced by a "
                                               "re-render and the same element was found again.")] | Absent = None


class ClickOut(_ActionOut):
    action: Literal[bt.Action.CLICK]
    point: PointOut


class HoverOut(_ActionOut):
    action: Literal[bt.Action.HOVER]
    point: PointOut


class TypeOut(_ActionOut):
    action: Literal[bt.Action.TYPE]
    value: Annotated[str, Field(description="The field's value after typing (passwords masked); left out after a "
                                "submit.")] | Absent = None


class PressOut(_ActionOut):
    action: Literal[bt.Action.PRESS]
    key: str = Field(description="The key or combination pressed.")


class SelectOptionOut(_ActionOut):
    action: Literal[bt.Action.SELECT_OPTION]
    selected: Annotated[list[str], Field(description="The values now selected (left out when none is).")] \
        | Absent = None


class DragOut(_ActionOut):
    action: Literal[bt.Action.DRAG]
    toElement: ElementOut | Absent = None
    point: Annotated[PointOut, Field(description="Where the mouse was released (left out for an HTML5 "
                                     "drag-and-drop, which is dispatched as events).")] | Absent = None


class ScrollOut(Output):
    tabId: TabId
    url: Url
    scrollX: float
    scrollY: float
    scrollWidth: float
    scrollHeight: float
    viewportWidth: float
    viewportHeight: float
    element: ElementOut | Absent = None


class FieldOut(Output):
    """One field of fill_form, as it was given (selector or ref) and how it went."""

    selector: str | Absent = None
    ref: str | Absent = None
    ok: bool
    element: ElementOut | None
    value: str | bool | None = Field(description="The field's value after filling.")
    error: str | None = Field(description="Why the field failed (an error code and message).")


class FillFormOut(Output):
    tabId: TabId
    url: Url
    fields: list[FieldOut]
    filled: Count
    failed: Count
    submitted: bool = Field(description="The submit button was clicked (only when every field succeeded).")


# -- reading -----------------------------------------------------------------------------------------------------------


class SnapshotSize(Output):
    nodes: Count
    refs: Count
    chars: Count


class SnapshotOut(Output):
    tabId: TabId
    url: Url
    title: Title
    snapshot: str = Field(description="The accessibility tree, one line per node: - role \"name\" [state] [ref=e5] "
                          "(untrusted page content).")
    size: SnapshotSize
    truncated: bool


class ScreenshotOut(Output):
    tabId: TabId
    url: Url
    mode: Annotated[bt.ShotMode, Field(strict=False)]
    mimeType: Literal["image/png", "image/jpeg"]
    width: Count = Field(description="Image pixels.")
    height: Count
    truncated: bool = Field(description="A full page taller than the cap: the top part only.")
    fullHeight: Annotated[float, Field(description="full_page: the page's CSS height.")] | Absent = None
    element: ElementOut | Absent = None
    warning: Annotated[str, Field(description="The image was too big for one frame as asked: sent as JPEG, "
                                  "maybe scaled down (this says how).")] | Absent = None


class _TextOut(Output):
    tabId: TabId
    url: Url
    title: Title
    text: str = Field(description="Untrusted page content.")
    chars: Count = Field(description="The full length, before max_chars.")
    truncated: bool


class TextOut(_TextOut):
    kind: Literal[bt.TextKind.TEXT]


class HtmlOut(_TextOut):
    kind: Literal[bt.TextKind.HTML]


class MarkdownOut(_TextOut):
    kind: Literal[bt.TextKind.MARKDOWN]


class LinkOut(Output):
    text: str
    href: str = Field(description="The absolute URL.")
    internal: bool = Field(description="Same origin as the page.")
    rel: str


class LinksOut(Output):
    tabId: TabId
    url: Url
    links: list[LinkOut]
    total: Count = Field(description="Matching links in all.")
    truncated: bool = Field(description="More than limit matched.")


class BoxOut(Output):
    x: float
    y: float
    width: float
    height: float


class VisibilityOut(Output):
    visible: bool
    inViewport: bool
    box: BoxOut | None
    reason: str = Field(description="Why it is not visible (display:none, zero size, ...); empty when it is.")


class StateOut(Output):
    enabled: bool
    editable: bool
    focused: bool
    checked: bool | None
    selected: bool | None
    expanded: bool | None
    required: bool
    value: str | None


class FormFieldOut(Output):
    name: str
    type: str = Field(description="The input's type (text, checkbox, select-one, ...).")
    value: str | None
    checked: bool | None
    ref: str


class ElementInfoOut(ElementOut):
    """An element query found: what `what` asked for is present."""

    text: str | Absent = None
    attributes: dict[str, str] | Absent = None
    styles: dict[str, str] | Absent = None
    visibility: VisibilityOut | Absent = None
    state: StateOut | Absent = None
    fields: list[FormFieldOut] | Absent = None


class MetadataOut(Output):
    title: str
    lang: str
    charset: str
    description: str
    canonical: str
    meta: dict[str, str] = Field(description="Meta tags: name or property -> content.")


class QueryOut(Output):
    tabId: TabId
    url: Url
    what: Annotated[bt.QueryWhat, Field(strict=False)]
    count: Count = Field(description="Matches in all (elements holds up to limit of them).")
    elements: Annotated[list[ElementInfoOut], Field(description="Left out for count and metadata.")] | Absent = None
    metadata: Annotated[MetadataOut, Field(description="metadata only.")] | Absent = None


class WaitOut(Output):
    tabId: TabId
    url: Url
    matched: str = Field(description="The condition that held.")
    waitedMs: float
    element: ElementOut | Absent = None


class ConsoleEntryOut(Output):
    id: int
    ts: float = Field(description="Milliseconds since the epoch.")
    level: str = Field(description="log, info, warning, error, debug, exception, or another console API type.")
    text: str
    source: str = Field(description="Script URL:line, when known.")


class ConsoleOut(Output):
    tabId: TabId
    url: Url
    started: bool = Field(description="This call started collecting for the tab.")
    entries: list[ConsoleEntryOut]
    total: Count = Field(description="Entries kept in the buffer.")
    dropped: Count = Field(description="Entries pushed out of the bounded buffer since collection began.")


class HeaderOut(Output):
    name: str
    value: str = Field(description="[redacted] for credentials (Cookie, Authorization, ...) unless the server "
                       "allows them (--network-secrets).")


class NetworkEntryOut(Output):
    id: int
    ts: float = Field(description="Milliseconds since the epoch.")
    method: str
    url: str
    type: str = Field(description="The resource type (Document, Script, XHR, Fetch, ...).")
    status: int | None
    statusText: str
    mimeType: str
    failed: bool
    error: str
    fromCache: bool
    durationMs: float | None
    encodedBytes: int | None
    requestHeaders: list[HeaderOut] | Absent = None
    responseHeaders: list[HeaderOut] | Absent = None


class NetworkBodyOut(Output):
    id: int = Field(description="The entry whose response this is.")
    mimeType: str
    text: str = Field(description="The body (untrusted page content), or base64 when base64 is true.")
    base64: bool
    size: Count = Field(description="Characters of the whole body.")
    truncated: bool


class NetworkOut(Output):
    tabId: TabId
    url: Url
    started: bool = Field(description="This call started collecting for the tab (else it has run since the tools "
                          "took hold of it).")
    entries: list[NetworkEntryOut]
    total: Count = Field(description="Requests kept in the buffer (earlier pages' too).")
    dropped: Count = Field(description="Requests pushed out of the bounded buffer since collection began.")
    body: NetworkBodyOut | Absent = None


class UploadedFileOut(Output):
    path: str = Field(description="As given, relative to the project folder.")
    size: Count = Field(description="Bytes.")


class UploadOut(Output):
    tabId: TabId
    url: Url
    element: ElementOut | None
    files: list[UploadedFileOut]


class DownloadOut(Output):
    tabId: TabId
    url: Url
    sourceUrl: str = Field(description="What was downloaded.")
    path: str = Field(description="The saved file, inside the download folder.")
    name: str
    size: Count = Field(description="Bytes.")
    mimeType: str = Field(description="By the file's name.")


class ViewportOut(Output):
    width: int
    height: int
    deviceScaleFactor: float = Field(description="0: the browser's own.")
    mobile: bool


class EmulateOut(Output):
    """emulate, resize: what is emulated on the tab now (null: the browser's own)."""

    tabId: TabId
    url: Url
    viewport: ViewportOut | None
    userAgent: str | None
    colorScheme: Annotated[bt.ColorScheme, Field(strict=False)] | None
    network: Annotated[bt.NetworkPreset, Field(strict=False)] | None
    cpuThrottling: float | None


class EvalOut(Output):
    tabId: TabId
    url: Url
    ok: bool = Field(description="false: the script threw (or its value could not be returned); see error.")
    value: JsonValue = Field(description="The JSON value (null when ok is false or undefined; NaN, -0, Infinity "
                             "and bigints as text; the JSON text, cut, when truncated).")
    type: str = Field(description="The value's JavaScript type (number, string, boolean, object, undefined, "
                      "bigint, ...; object:null for null), or exception / error when ok is false.")
    error: str | None
    truncated: bool


class DialogOut(Output):
    type: Annotated[bt.DialogType, Field(strict=False)]
    message: str = Field(description="Untrusted page content.")
    defaultPrompt: str
    url: str


class HandledDialogOut(Output):
    tabId: TabId
    dialog: DialogOut
    accepted: bool
