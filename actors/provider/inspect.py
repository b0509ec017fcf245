"""Inspection of a provider tab for `take_cdp_snapshot` and `get_page_dom`: page facts, the accessibility tree, a
screenshot, the DOM. Never opens a tab (the tab session picks one of ours)."""

from __future__ import annotations

from supervisor.errors import BadExtensionReply, InvalidArgument

from ..protocol.common import JSON, ProviderName
from ..protocol.provider import DomReport, GetDom, Snapshot, SnapshotReport
from .tab import DOM, TabSession


async def snapshot(provider: ProviderName, page: TabSession, msg: Snapshot) -> SnapshotReport:
    facts = await page.facts(msg.max_text)
    ax = await page.tab.send("Accessibility.getFullAXTree", {"depth": 12}, timeout_s=page.to.inspect_s)
    nodes = ax.get("nodes")
    shot: str | None = None
    if msg.screenshot:
        if page.state is not None and not page.state.visible:
            await page.bring_to_front()  # a hidden tab's screenshot can hang (NOTES.md)
        data = (await page.tab.send("Page.captureScreenshot", {"format": "png"}, timeout_s=page.to.inspect_s)
                ).get("data")
        shot = data if isinstance(data, str) else None

    def text(key: str) -> str:
        value = facts.get(key)
        return value if isinstance(value, str) else ""

    return SnapshotReport(
        provider=provider, tab_id=page.tab_id, url=text("url"), title=text("title"),
        ready_state=text("readyState"), visibility=text("visibility"), text=text("text"),
        accessibility=tuple(summarize_ax(nodes if isinstance(nodes, list) else [])),
        watcher_state=page.state.as_json() if page.state is not None else None, screenshot_png_b64=shot)


async def get_dom(provider: ProviderName, page: TabSession, msg: GetDom) -> DomReport:
    result = await page.script(DOM, msg.selector, int(msg.max_chars))
    if result is None:
        raise InvalidArgument(f"no element matches selector {msg.selector!r} (shadow roots searched too)")
    if not isinstance(result, dict):
        raise BadExtensionReply("the DOM serializer returned no html")
    html, chars = result.get("html"), result.get("chars")
    if not isinstance(html, str):
        raise BadExtensionReply("the DOM serializer returned no html")
    url = page.state.url if page.state is not None else ""
    return DomReport(provider, url, html, result.get("truncated") is True,
                     chars if isinstance(chars, int) and not isinstance(chars, bool) else len(html))


def summarize_ax(nodes: list[JSON], limit: int = 120) -> list[str]:
    """Interesting accessibility nodes as 'role "name"' lines (buttons, inputs, headings, links)."""
    keep = {"button", "textbox", "heading", "link", "combobox", "checkbox", "img", "article", "dialog", "alert"}
    out: list[str] = []
    for n in nodes:
        if not isinstance(n, dict) or n.get("ignored"):
            continue
        role_obj, name_obj = n.get("role"), n.get("name")
        role = role_obj.get("value", "") if isinstance(role_obj, dict) else ""
        name = str(name_obj.get("value", "") if isinstance(name_obj, dict) else "").strip()
        if role in keep and (name or role == "textbox"):
            out.append(f'{role} "{name[:80]}"')
        if len(out) >= limit:
            break
    return out
