"""The values the browser tools' requests and replies share: a target element, which element a call acted on,
a tab as the tools see it, how long a navigation waits."""

from __future__ import annotations

import enum

import attrs

from ..common import JSONObject


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
