"""The browser tools' tab and navigation requests: list, open, select and close tabs; navigate, back and forward."""

from __future__ import annotations

import enum

import attrs

from supervisor.otp import Request

from .values import TabView, WaitUntil


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
