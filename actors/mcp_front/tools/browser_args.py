"""The argument models of the general browser tools (docs/tools.md): one pydantic model per tool is both its JSON
Schema and its validation (toolkit.Args), and makes the browser_tools request (`request()`) with the time it may
take (`seconds()`). The tools themselves (descriptions, handlers, the table) are in `browser`; their output models
in `browser_out`.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Protocol, Self

from pydantic import Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from supervisor import attachments
from supervisor.otp import Request

from ...protocol import browser_tools as bt
from ..toolkit import Args

# -- argument pieces ---------------------------------------------------------------------------------------------------

TabId = Annotated[int, Field(ge=0, description="The tab (an id from tabs_list); default: the current tab.")]
Timeout = Annotated[float, Field(ge=0, le=120, description="Seconds the element may take to appear and become "
                                 "actionable.")]
NavTimeout = Annotated[float, Field(gt=0, le=300, description="Seconds the page may take (default 30).")]
Selector = Annotated[str, Field(min_length=1, max_length=4000,
                                description="CSS selector; also searched in open shadow roots and same-origin "
                                "iframes.")]
Ref = Annotated[str, Field(pattern=r"^e\d{1,9}$", description="An element ref from snapshot, e.g. e12.")]
WaitUntilArg = Annotated[bt.WaitUntil, Field(strict=False, description="When the navigation counts as done: commit, "
                                             "domcontentloaded, load (default) or networkidle.")]
MaxChars = Annotated[int, Field(ge=100, le=2_000_000, description="Cut the text at this many characters.")]
Modifier = Literal["Control", "Shift", "Alt", "Meta"]


class Shown(Protocol):
    def as_json(self) -> dict[str, object]: ...


class _ToolArgs(Args):
    def request(self) -> Request[Shown]:
        """The browser_tools request these arguments make."""
        raise NotImplementedError

    def seconds(self) -> float:
        """How long the call may take, the actor's own waits included."""
        timeout = getattr(self, "timeout_s", None)
        return max(30.0, timeout + 5) if isinstance(timeout, float | int) else 30.0


class _TabArgs(_ToolArgs):
    tab_id: TabId | SkipJsonSchema[None] = None


class _Element(_TabArgs):
    """A required element."""

    selector: Selector | SkipJsonSchema[None] = None
    ref: Ref | SkipJsonSchema[None] = None

    @model_validator(mode="after")
    def _one(self) -> Self:
        if (self.selector is None) == (self.ref is None):
            raise ValueError("give exactly one of selector or ref")
        return self

    def target(self) -> bt.Target:
        return bt.Target(self.selector, self.ref)


class _MaybeElement(_TabArgs):
    """An optional element (at most one of selector or ref)."""

    selector: Selector | SkipJsonSchema[None] = None
    ref: Ref | SkipJsonSchema[None] = None

    @model_validator(mode="after")
    def _at_most_one(self) -> Self:
        if self.selector is not None and self.ref is not None:
            raise ValueError("give at most one of selector or ref")
        return self

    def target(self) -> bt.Target | None:
        return None if self.selector is None and self.ref is None else bt.Target(self.selector, self.ref)


# -- tabs --------------------------------------------------------------------------------------------------------------


class TabsListArgs(_ToolArgs):
    def request(self) -> bt.TabsList:
        return bt.TabsList()


class TabNewArgs(_ToolArgs):
    url: Annotated[str, Field(min_length=1, max_length=8000, description="Open this URL (default about:blank). "
                              "Without a scheme, https:// is assumed.")] | SkipJsonSchema[None] = None
    wait_until: WaitUntilArg = bt.WaitUntil.LOAD
    timeout_s: NavTimeout = 30.0

    def request(self) -> bt.TabNew:
        return bt.TabNew(self.url, self.wait_until, self.timeout_s)


class TabSelectArgs(_ToolArgs):
    tab_id: Annotated[int, Field(ge=0, description="A tab id from tabs_list.")]

    def request(self) -> bt.TabSelect:
        return bt.TabSelect(self.tab_id)


class TabCloseArgs(_TabArgs):
    def request(self) -> bt.TabClose:
        return bt.TabClose(self.tab_id)


# -- navigation --------------------------------------------------------------------------------------------------------


class NavigateArgs(_TabArgs):
    url: Annotated[str, Field(min_length=1, max_length=8000, description="Absolute URL (https:// is assumed without "
                              "a scheme).")]
    wait_until: WaitUntilArg = bt.WaitUntil.LOAD
    timeout_s: NavTimeout = 30.0

    def request(self) -> bt.Navigate:
        return bt.Navigate(self.url, self.wait_until, self.timeout_s, self.tab_id)


class _HistoryArgs(_TabArgs):
    step: ClassVar[bt.HistoryStep]
    wait_until: WaitUntilArg = bt.WaitUntil.LOAD
    timeout_s: NavTimeout = 30.0

    def request(self) -> bt.History:
        return bt.History(self.step, self.wait_until, self.timeout_s, self.tab_id)


class BackArgs(_HistoryArgs):
    step = bt.HistoryStep.BACK


class ForwardArgs(_HistoryArgs):
    step = bt.HistoryStep.FORWARD


class ReloadArgs(_HistoryArgs):
    step = bt.HistoryStep.RELOAD


# -- interaction -------------------------------------------------------------------------------------------------------


class ClickArgs(_Element):
    button: Annotated[bt.MouseButton, Field(strict=False, description="left (default), right or middle.")] = \
        bt.MouseButton.LEFT
    click_count: Annotated[int, Field(ge=1, le=3, description="2 for a double click.")] = 1
    modifiers: Annotated[list[Modifier], Field(max_length=4, description="Keys held during the click.")] = []
    timeout_s: Timeout = 5.0

    def request(self) -> bt.Click:
        return bt.Click(self.target(), self.button, self.click_count, tuple(self.modifiers), self.timeout_s,
                        self.tab_id)


class HoverArgs(_Element):
    timeout_s: Timeout = 5.0

    def request(self) -> bt.Hover:
        return bt.Hover(self.target(), self.timeout_s, self.tab_id)


class TypeArgs(_Element):
    text: Annotated[str, Field(max_length=100_000, description="The text to type.")]
    clear: Annotated[bool, Field(description="Replace the field's content (default); false types at its end.")] = True
    submit: Annotated[bool, Field(description="Press Enter afterwards.")] = False
    key_events: Annotated[bool, Field(description="Send one key event per character (for pages that listen to keys) "
                                      "instead of one text insertion.")] = False
    timeout_s: Timeout = 5.0

    def request(self) -> bt.TypeText:
        return bt.TypeText(self.target(), self.text, self.clear, self.submit, self.key_events, self.timeout_s,
                           self.tab_id)


class PressArgs(_MaybeElement):
    key: Annotated[str, Field(min_length=1, max_length=60, description="A key or combination: Enter, Escape, Tab, "
                              "ArrowDown, a, Control+A, Shift+Tab.")]
    timeout_s: Timeout = 5.0

    def request(self) -> bt.Press:
        return bt.Press(self.key, self.target(), self.timeout_s, self.tab_id)


class ScrollArgs(_MaybeElement):
    delta_x: Annotated[float, Field(ge=-1e6, le=1e6, description="Pixels to scroll right (negative: left).")] = 0.0
    delta_y: Annotated[float, Field(ge=-1e6, le=1e6, description="Pixels to scroll down (negative: up).")] = 0.0
    to: Annotated[bt.ScrollTo, Field(strict=False, description="top or bottom of the page (or of the element's "
                                     "scrollable box).")] | SkipJsonSchema[None] = None
    timeout_s: Timeout = 5.0

    def request(self) -> bt.Scroll:
        return bt.Scroll(self.target(), self.delta_x, self.delta_y, self.to, self.timeout_s, self.tab_id)


class SelectOptionArgs(_Element):
    values: Annotated[list[Annotated[str, Field(max_length=2000)]], Field(
        min_length=1, max_length=100, description="Option values or labels to select (several for a multiple "
        "select).")]
    timeout_s: Timeout = 5.0

    def request(self) -> bt.SelectOption:
        return bt.SelectOption(self.target(), tuple(self.values), self.timeout_s, self.tab_id)


class DragArgs(_TabArgs):
    selector: Selector | SkipJsonSchema[None] = None
    ref: Ref | SkipJsonSchema[None] = None
    to_selector: Annotated[str, Field(min_length=1, max_length=4000, description="CSS selector of the drop "
                                      "target.")] | SkipJsonSchema[None] = None
    to_ref: Annotated[str, Field(pattern=r"^e\d{1,9}$", description="Ref of the drop target.")] \
        | SkipJsonSchema[None] = None
    timeout_s: Timeout = 5.0

    @model_validator(mode="after")
    def _ends(self) -> Self:
        if (self.selector is None) == (self.ref is None):
            raise ValueError("give exactly one of selector or ref for what to drag")
        if (self.to_selector is None) == (self.to_ref is None):
            raise ValueError("give exactly one of to_selector or to_ref for where to drop it")
        return self

    def request(self) -> bt.Drag:
        return bt.Drag(bt.Target(self.selector, self.ref), bt.Target(self.to_selector, self.to_ref), self.timeout_s,
                       self.tab_id)


class FieldArg(Args):
    selector: Selector | SkipJsonSchema[None] = None
    ref: Ref | SkipJsonSchema[None] = None
    value: Annotated[str | bool, Field(description="Text (inputs, textareas, selects: an option's value or label) "
                                       "or true/false (checkboxes, radios).")]

    @model_validator(mode="after")
    def _one(self) -> Self:
        if (self.selector is None) == (self.ref is None):
            raise ValueError("each field takes exactly one of selector or ref")
        if isinstance(self.value, str) and len(self.value) > 100_000:
            raise ValueError("a field value is at most 100000 characters")
        return self


class FillFormArgs(_TabArgs):
    fields: Annotated[list[FieldArg], Field(min_length=1, max_length=200, description="The fields: each "
                                            "{selector or ref, value}.")]
    submit_selector: Annotated[str, Field(min_length=1, max_length=4000, description="Click this after filling "
                                          "(when every field succeeded).")] | SkipJsonSchema[None] = None
    submit_ref: Ref | SkipJsonSchema[None] = None
    timeout_s: Timeout = 5.0

    @model_validator(mode="after")
    def _submit(self) -> Self:
        if self.submit_selector is not None and self.submit_ref is not None:
            raise ValueError("give at most one of submit_selector or submit_ref")
        return self

    def request(self) -> bt.FillForm:
        submit = None if self.submit_selector is None and self.submit_ref is None else bt.Target(
            self.submit_selector, self.submit_ref)
        return bt.FillForm(tuple(bt.FieldValue(bt.Target(f.selector, f.ref), f.value) for f in self.fields), submit,
                           self.timeout_s, self.tab_id)


# -- reading -----------------------------------------------------------------------------------------------------------


class SnapshotArgs(_MaybeElement):
    interactive_only: Annotated[bool, Field(description="Only elements one can act on (links, buttons, fields, "
                                            "...).")] = False
    roles: Annotated[list[Annotated[str, Field(min_length=1, max_length=40)]], Field(
        max_length=40, description="Only nodes of these ARIA roles (e.g. heading, link, button).")] = []
    max_depth: Annotated[int, Field(ge=1, le=200, description="Levels of the tree to show.")] | SkipJsonSchema[None] \
        = None
    max_chars: Annotated[int, Field(ge=500, le=1_000_000, description="Cut the snapshot at this size (default "
                                    "50000).")] = 50_000

    def request(self) -> bt.Snapshot:
        return bt.Snapshot(self.target(), self.interactive_only, tuple(self.roles), self.max_depth, self.max_chars,
                           self.tab_id)


class ScreenshotArgs(_MaybeElement):
    mode: Annotated[bt.ShotMode, Field(strict=False, description="viewport (default), full_page, or element (with "
                                       "selector or ref).")] | SkipJsonSchema[None] = None
    format: Annotated[bt.ImageFormat, Field(strict=False, description="png (default) or jpeg.")] = bt.ImageFormat.PNG
    quality: Annotated[int, Field(ge=1, le=100, description="jpeg quality (default 80).")] = 80
    timeout_s: Timeout = 5.0

    @model_validator(mode="after")
    def _mode(self) -> Self:
        has_target = self.selector is not None or self.ref is not None
        if self.mode is bt.ShotMode.ELEMENT and not has_target:
            raise ValueError("mode element needs a selector or ref")
        if has_target and self.mode not in (None, bt.ShotMode.ELEMENT):
            raise ValueError(f"a selector or ref is for mode element, not {self.mode.value if self.mode else ''}")
        return self

    def request(self) -> bt.Screenshot:
        target = self.target()
        mode = self.mode or (bt.ShotMode.ELEMENT if target is not None else bt.ShotMode.VIEWPORT)
        return bt.Screenshot(mode, target, self.format, self.quality, self.timeout_s, self.tab_id)


class _TextArgs(_MaybeElement):
    kind: ClassVar[bt.TextKind]
    max_chars: MaxChars = 100_000

    def request(self) -> bt.GetText:
        return bt.GetText(self.kind, self.target(), self.max_chars, tab_id=self.tab_id)


class TextArgs(_TextArgs):
    kind = bt.TextKind.TEXT


class HtmlArgs(_TextArgs):
    kind = bt.TextKind.HTML


class MarkdownArgs(_TextArgs):
    kind = bt.TextKind.MARKDOWN


class LinksArgs(_MaybeElement):
    contains: Annotated[str, Field(min_length=1, max_length=500, description="Only links whose text or URL contains "
                                   "this (case-insensitive).")] | SkipJsonSchema[None] = None
    internal_only: Annotated[bool, Field(description="Only links to the page's own origin.")] = False
    limit: Annotated[int, Field(ge=1, le=5000, description="At most this many links (default 200).")] = 200

    def request(self) -> bt.ExtractLinks:
        return bt.ExtractLinks(self.target(), self.contains, self.internal_only, self.limit, tab_id=self.tab_id)


NEEDS_TARGET = {bt.QueryWhat.COUNT, bt.QueryWhat.ATTRIBUTES, bt.QueryWhat.STYLES, bt.QueryWhat.VISIBILITY,
                bt.QueryWhat.STATE}


class QueryArgs(_MaybeElement):
    what: Annotated[bt.QueryWhat, Field(strict=False, description=(
        "count, attributes, styles (computed), visibility, state (enabled, checked, focused, value...): of the "
        "elements a selector matches (or one ref). form_values: the fields of the forms matched (default: every "
        "form). metadata: title, lang, description, canonical, meta tags. find_text: elements whose text contains "
        "`text`."))]
    text: Annotated[str, Field(min_length=1, max_length=1000, description="find_text: the text to look for.")] \
        | SkipJsonSchema[None] = None
    exact: Annotated[bool, Field(description="find_text: the whole text must match.")] = False
    properties: Annotated[list[Annotated[str, Field(min_length=1, max_length=80)]], Field(
        max_length=60, description="styles: which computed properties (default: display, visibility, color, "
        "font-size and a dozen more).")] = []
    limit: Annotated[int, Field(ge=1, le=500, description="Details for at most this many elements (default 20).")] \
        = 20

    @model_validator(mode="after")
    def _needs(self) -> Self:
        has_target = self.selector is not None or self.ref is not None
        if self.what in NEEDS_TARGET and not has_target:
            raise ValueError(f"what {self.what.value} needs a selector or ref")
        if self.what is bt.QueryWhat.FIND_TEXT and self.text is None:
            raise ValueError("what find_text needs text")
        if self.what in (bt.QueryWhat.METADATA, bt.QueryWhat.FIND_TEXT) and has_target:
            raise ValueError(f"what {self.what.value} takes no selector or ref")
        return self

    def request(self) -> bt.Query:
        return bt.Query(self.what, self.target(), self.text, self.exact, tuple(self.properties), self.limit,
                        tab_id=self.tab_id)


class WaitForArgs(_MaybeElement):
    state: Annotated[bt.ElementWaitState, Field(strict=False, description="With selector or ref: attached, visible "
                                                "(default), hidden or detached.")] = bt.ElementWaitState.VISIBLE
    text: Annotated[str, Field(min_length=1, max_length=1000, description="Wait until this text is on the page.")] \
        | SkipJsonSchema[None] = None
    text_gone: Annotated[str, Field(min_length=1, max_length=1000, description="Wait until this text is no longer "
                                    "on the page.")] | SkipJsonSchema[None] = None
    load_state: Annotated[bt.WaitUntil, Field(strict=False, description="Wait until the page reaches domcontentloaded, "
                                              "load or networkidle.")] | SkipJsonSchema[None] = None
    time_s: Annotated[float, Field(ge=0, le=60, description="Just wait this many seconds.")] | SkipJsonSchema[None] \
        = None
    timeout_s: Annotated[float, Field(gt=0, le=300, description="Give up after this many seconds (default 10).")] \
        = 10.0

    @model_validator(mode="after")
    def _one_condition(self) -> Self:
        given = [self.selector is not None or self.ref is not None, self.text is not None,
                 self.text_gone is not None, self.load_state is not None, self.time_s is not None]
        if sum(given) != 1:
            raise ValueError("give exactly one condition: selector or ref (with state), text, text_gone, load_state "
                             "or time_s")
        return self

    def request(self) -> bt.WaitFor:
        return bt.WaitFor(self.target(), self.state, self.text, self.text_gone, self.load_state, self.time_s,
                          self.timeout_s, self.tab_id)


class ConsoleArgs(_TabArgs):
    level: Annotated[Literal["log", "info", "warning", "error", "debug", "exception"], Field(
        description="Only this level (error includes uncaught exceptions).")] | SkipJsonSchema[None] = None
    since_id: Annotated[int, Field(ge=0, description="Only entries after this id (from an earlier call).")] = 0
    limit: Annotated[int, Field(ge=0, le=1000, description="At most this many, the newest (default 100).")] = 100
    clear: Annotated[bool, Field(description="Empty the buffer after reading.")] = False

    def request(self) -> bt.ConsoleLogs:
        return bt.ConsoleLogs(self.level, self.since_id, self.limit, self.clear, self.tab_id)


class NetworkArgs(_TabArgs):
    url_contains: Annotated[str, Field(min_length=1, max_length=1000, description="Only requests whose URL contains "
                                       "this.")] | SkipJsonSchema[None] = None
    failed_only: Annotated[bool, Field(description="Only failed requests and HTTP errors (status >= 400).")] = False
    since_id: Annotated[int, Field(ge=0, description="Only entries after this id.")] = 0
    limit: Annotated[int, Field(ge=0, le=500, description="At most this many, the newest (default 100).")] = 100
    clear: Annotated[bool, Field(description="Empty the buffer after reading.")] = False
    headers: Annotated[bool, Field(description="Each entry's request and response headers (credentials such as "
                                   "Cookie and Authorization redacted unless the server allows them).")] = False
    body_of: Annotated[int, Field(ge=1, description="An entry id: that response's body too (text; see "
                                  "binary).")] | SkipJsonSchema[None] = None
    body_max_chars: Annotated[int, Field(ge=1, le=1_000_000, description="Cut the body here (default "
                                         "20000).")] = 20_000
    binary: Annotated[bool, Field(description="A binary body as base64 (else only text bodies are "
                                  "returned).")] = False
    earlier_pages: Annotated[bool, Field(description="Also the requests of the pages the tab showed before the "
                                         "current one (else from the current page's document request on).")] = False

    def request(self) -> bt.NetworkLog:
        return bt.NetworkLog(self.url_contains, self.failed_only, self.since_id, self.limit, self.clear, self.tab_id,
                             self.headers, self.body_of, self.body_max_chars, self.binary, self.earlier_pages)


class UploadFileArgs(_Element):
    paths: Annotated[list[Annotated[str, Field(min_length=1, max_length=1000)]], Field(
        min_length=1, max_length=100, description="Files relative to the project folder (the server's working "
        "directory): paths or globs, '!pattern' excludes; the same rules and limits as an ask's files.")]
    timeout_s: Timeout = 5.0

    def request(self) -> bt.UploadFile:
        raise AssertionError("upload_file checks its files first: see upload()")

    def checked(self, files: tuple[attachments.ProjectFile, ...], copies: tuple[str, ...]) -> bt.UploadFile:
        return bt.UploadFile(self.target(), copies, tuple(f.rel for f in files), tuple(f.size for f in files),
                             self.timeout_s, self.tab_id)


class DownloadArgs(_TabArgs):
    selector: Selector | SkipJsonSchema[None] = None
    ref: Ref | SkipJsonSchema[None] = None
    url: Annotated[str, Field(min_length=1, max_length=8000, description="A URL to download (on an allowed "
                                  "domain), instead of an element to click.")] | SkipJsonSchema[None] = None
    timeout_s: Annotated[float, Field(gt=0, le=600, description="How long the download may take (default "
                                      "30 s).")] = 30.0

    @model_validator(mode="after")
    def _one(self) -> Self:
        if sum(x is not None for x in (self.selector, self.ref, self.url)) != 1:
            raise ValueError("give exactly one of selector, ref or url")
        return self

    def request(self) -> bt.Download:
        target = bt.Target(self.selector, self.ref) if self.url is None else None
        return bt.Download(target, self.url, self.timeout_s, self.tab_id)


class EmulateArgs(_TabArgs):
    width: Annotated[int, Field(ge=1, le=8192, description="Viewport width, CSS px (with height); times the "
                                "device scale at most 8192.")] | SkipJsonSchema[None] = None
    height: Annotated[int, Field(ge=1, le=8192, description="Viewport height, CSS px (with width); times the "
                                 "device scale at most 8192.")] | SkipJsonSchema[None] = None
    device_scale_factor: Annotated[float, Field(ge=0, le=10, description="Device pixels per CSS px (0: the "
                                                "browser's own); needs width and height.")] | \
        SkipJsonSchema[None] = None
    mobile: Annotated[bool, Field(description="Emulate a mobile device (meta viewport, overlay scrollbars); needs "
                                  "width and height.")] = False
    user_agent: Annotated[str, Field(min_length=1, max_length=1000, description="The user agent string "
                                     "sent and seen by the page.")] | SkipJsonSchema[None] = None
    color_scheme: Annotated[bt.ColorScheme, Field(strict=False, description="prefers-color-scheme: light, dark or "
                                                  "no-preference.")] | SkipJsonSchema[None] = None
    network: Annotated[bt.NetworkPreset, Field(strict=False, description="Network throttling: none, offline, "
                                               "slow-3g, fast-3g, slow-4g.")] | SkipJsonSchema[None] = None
    cpu_throttling: Annotated[float, Field(ge=1, le=20, description="CPU slowdown factor (1: none, 4: four times "
                                           "slower).")] | SkipJsonSchema[None] = None
    reset: Annotated[bool, Field(description="Clear every emulation first (then apply what else is given).")] = False

    @model_validator(mode="after")
    def _viewport(self) -> Self:
        if (self.width is None) != (self.height is None):
            raise ValueError("give width and height together")
        if self.width is None and (self.device_scale_factor is not None or self.mobile):
            raise ValueError("device_scale_factor and mobile need width and height")
        scale = self.device_scale_factor or 1.0
        if self.width is not None and self.height is not None and max(self.width, self.height) * scale > 8192:
            raise ValueError(f"{self.width} x {self.height} at scale {scale:g} is over 8192 device pixels a side "
                             "(the screenshot limit)")
        return self

    def request(self) -> bt.Emulate:
        viewport = None
        if self.width is not None and self.height is not None:
            viewport = bt.Viewport(self.width, self.height, self.device_scale_factor or 0.0, self.mobile)
        return bt.Emulate(viewport, self.user_agent, self.color_scheme, self.network, self.cpu_throttling,
                          self.reset, self.tab_id)


class ResizeArgs(_TabArgs):
    width: Annotated[int, Field(ge=1, le=8192, description="Viewport width, CSS px.")]
    height: Annotated[int, Field(ge=1, le=8192, description="Viewport height, CSS px.")]

    def request(self) -> bt.Resize:
        return bt.Resize(self.width, self.height, self.tab_id)


class EvalArgs(_TabArgs):
    expression: Annotated[str, Field(min_length=1, max_length=100_000, description="JavaScript, evaluated like the "
                                     "DevTools console does in the page's own world.")]
    await_promise: Annotated[bool, Field(description="Wait for a promise result (default true).")] = True
    timeout_s: Annotated[float, Field(gt=0, le=120, description="Seconds it may run (default 10).")] = 10.0

    def request(self) -> bt.Eval:
        return bt.Eval(self.expression, self.await_promise, self.timeout_s, self.tab_id)


class DialogArgs(_TabArgs):
    accept: Annotated[bool, Field(description="true: OK / leave the page; false: Cancel / stay. Accepting needs "
                                  "--enable-mutations.")]
    prompt_text: Annotated[str, Field(max_length=10_000, description="The answer to a prompt() dialog.")] \
        | SkipJsonSchema[None] = None

    def request(self) -> bt.HandleDialog:
        return bt.HandleDialog(self.accept, self.prompt_text, self.tab_id)
