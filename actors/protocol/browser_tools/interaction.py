"""The browser tools' interaction requests: click, hover, type, press, scroll, select, drag, fill a form."""

from __future__ import annotations

import enum

import attrs

from supervisor.otp import Request

from .values import ElementBrief, Target


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
