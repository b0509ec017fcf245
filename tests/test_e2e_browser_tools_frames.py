"""Cross-origin iframes end to end (issue 24, item 2): a frame whose own origin the policy allows is inlined in
snapshots and read and driven by ref; one it denies stays sealed. The tool site serves the frames from other host
names (widget.test, nested.test: other sites, so Chromium runs them out of process), all on loopback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .e2e import requires_chromium
from .shared_bridge import OpenShared
from .test_e2e_browser_tools import ALLOWED, MUTATE, bridge, fails, frame_target, in_frame, ok, snapshot_ref
from .test_e2e_link import eventually, page_eval
from .toolsite.fixture import ToolSite

pytestmark = [requires_chromium, pytest.mark.chromium]

WIDGET = ("--allow-domain", "allowed.test", "--allow-domain", "widget.test")


async def loaded(dt: Any, url: str) -> str:
    frame: str = await frame_target(dt, url)
    await eventually(lambda: in_frame(dt, frame, "document.readyState === 'complete'"), 10, f"{url} loaded")
    return frame


def lines_under(snap: str, head: str) -> list[str]:
    """The lines indented under the first line holding `head`."""
    lines = snap.splitlines()
    i = next(i for i, line in enumerate(lines) if head in line)
    indent = len(lines[i]) - len(lines[i].lstrip())
    out = []
    for line in lines[i + 1:]:
        if len(line) - len(line.lstrip()) <= indent:
            break
        out.append(line)
    return out


async def test_an_allowed_cross_origin_frame_is_read_and_driven(toolsite: ToolSite, tmp_path: Path) -> None:
    async with bridge(toolsite, tmp_path, *MUTATE, *WIDGET) as b, b.devtools() as dt:
        await ok(b, "tab_new", {"url": "https://allowed.test/xframe"})
        widget = await loaded(dt, "https://widget.test/xframe-inner")
        await loaded(dt, "https://denied.test/frame-secret")

        # The widget's content is inlined under its iframe, with refs; the denied frame stays a sealed placeholder.
        snap = (await ok(b, "snapshot"))["snapshot"]
        inside = "\n".join(lines_under(snap, 'iframe "Widget frame"'))
        assert 'heading "Widget on widget.test"' in inside and 'button "Pay now"' in inside, snap
        assert "not inspected" not in snap.split('iframe "Denied frame"')[0], snap
        assert 'iframe "Denied frame" [cross-origin or not allowed: not inspected]' in snap
        assert "DENIED FRAME" not in snap and "\x00" not in snap

        # type, select and click by ref change the frame's own state.
        typed = await ok(b, "type", {"ref": snapshot_ref(snap, 'textbox "Card holder"'), "text": "Ada"})
        assert typed["value"] == "Ada" and typed["element"]["role"] == "textbox"
        assert await in_frame(dt, widget, "document.getElementById('holder').value") == "Ada"
        picked = await ok(b, "select_option", {"ref": snapshot_ref(snap, 'combobox "Plan"'), "values": ["Pro"]})
        assert picked["selected"] == ["pro"]
        await ok(b, "hover", {"ref": snapshot_ref(snap, 'button "Pay now"')})
        await ok(b, "click", {"ref": snapshot_ref(snap, 'button "Pay now"')})
        await eventually(lambda: in_frame(dt, widget, "document.getElementById('out').textContent === "
                                          "'paid by Ada on pro'"), 5, "the frame's button clicked")
        # press into the frame: the focus is in it after a click on its field.
        await ok(b, "click", {"ref": snapshot_ref(snap, 'textbox "Card holder"')})
        await ok(b, "press", {"key": "End"})
        await ok(b, "press", {"key": "x"})
        assert await in_frame(dt, widget, "document.getElementById('holder').value") == "Adax"

        # The read tools see the frame; never the denied one.
        text = (await ok(b, "get_text"))["text"]
        assert "top page text" in text and "paid by Ada on pro" in text and "DENIED FRAME" not in text, text
        assert (await ok(b, "get_text", {"ref": snapshot_ref(snap, 'button "Pay now"')}))["text"] == "Pay now"
        links = (await ok(b, "extract_links"))["links"]
        help_link = next(link for link in links if link["href"] == "https://widget.test/landing")
        assert help_link["internal"] is False and help_link["text"] == "Widget help"
        assert not any("denied.test" in link["href"] for link in links)
        found = await ok(b, "query", {"what": "find_text", "text": "paid by Ada"})
        assert found["count"] == 1 and found["elements"][0]["tag"] == "p"
        state = await ok(b, "query", {"what": "state", "ref": snapshot_ref(snap, 'textbox "Card holder"')})
        assert state["elements"][0]["state"]["value"] == "Adax"
        assert (await ok(b, "query", {"what": "count", "selector": "#pay"}))["count"] == 1

        # The denied frame: input into it is refused, as before.
        await fails(b, "click", {"selector": "#df"}, "policy_denied")
        # Screenshots still mask every cross-origin frame (the page around them is taken).
        await ok(b, "screenshot")

        # A ref into a frame that went to a denied site: refused, naming it; the frame is sealed from then on.
        page = next(p["targetId"] for p in await dt.pages("https://allowed.test/xframe"))
        await page_eval(dt, page, "document.getElementById('wf').src = 'https://denied.test/frame-secret?w'; 1")
        await loaded(dt, "https://denied.test/frame-secret?w")
        for tool in ("click", "get_text"):
            message = await fails(b, tool, {"ref": snapshot_ref(snap, 'button "Pay now"')}, "policy_denied")
            assert "frame" in message and "denied.test" in message and "DENIED FRAME" not in message, message
        snap = (await ok(b, "snapshot"))["snapshot"]
        assert 'iframe "Widget frame" [cross-origin or not allowed: not inspected]' in snap, snap
        assert "Pay now" not in snap and "DENIED FRAME" not in snap

        # A ref into a frame that was removed: element_not_found, saying so.
        await page_eval(dt, page, "document.getElementById('wf').src = 'https://widget.test/xframe-inner?again'; 1")
        await loaded(dt, "https://widget.test/xframe-inner?again")
        snap = (await ok(b, "snapshot"))["snapshot"]
        pay = snapshot_ref(snap, 'button "Pay now"')
        await page_eval(dt, page, "document.getElementById('wf').remove(); 1")
        await eventually(lambda: _no_frame(dt, "https://widget.test/"), 10, "the frame gone")
        message = await fails(b, "click", {"ref": pay}, "element_not_found")
        assert "no longer in the page" in message, message
        assert "Pay now" not in (await ok(b, "snapshot"))["snapshot"]


async def _no_frame(dt: Any, url: str) -> bool:
    targets = (await dt.send("Target.getTargets"))["targetInfos"]
    return not any(t["type"] == "iframe" and t["url"].startswith(url) for t in targets)


@pytest.mark.bridge_flags(*MUTATE, *ALLOWED)
async def test_a_cross_origin_frame_the_policy_denies_stays_sealed(toolsite: ToolSite,
                                                                   shared_tools_bridge: OpenShared) -> None:
    async with shared_tools_bridge() as b, b.devtools() as dt:
        await ok(b, "tab_new", {"url": "https://allowed.test/xframe"})
        await loaded(dt, "https://widget.test/xframe-inner")
        snap = (await ok(b, "snapshot"))["snapshot"]
        assert 'iframe "Widget frame" [cross-origin or not allowed: not inspected]' in snap, snap
        assert "Pay now" not in snap and "Card holder" not in snap
        text = (await ok(b, "get_text"))["text"]
        assert "top page text" in text and "Widget on" not in text
        assert not any("widget.test" in link["href"] for link in (await ok(b, "extract_links"))["links"])
        await fails(b, "click", {"selector": "#wf"}, "policy_denied")
        await fails(b, "hover", {"selector": "#wf"}, "policy_denied")


async def test_a_frame_in_a_frame(toolsite: ToolSite, tmp_path: Path) -> None:
    """Two levels of cross-site frames (allowed.test > widget.test > nested.test), each allowed: both inlined and
    driven. With nested.test denied, the inner one stays sealed inside the readable outer one."""
    flags = (*MUTATE, *WIDGET, "--allow-domain", "nested.test")
    async with bridge(toolsite, tmp_path, *flags) as b, b.devtools() as dt:
        await ok(b, "tab_new", {"url": "https://allowed.test/xframe-nested"})
        await loaded(dt, "https://widget.test/xframe-inner?nest")
        nested = await loaded(dt, "https://nested.test/xframe-inner")
        snap = (await ok(b, "snapshot"))["snapshot"]
        inner = "\n".join(lines_under(snap, 'iframe "Nested frame"'))
        assert 'heading "Widget on nested.test"' in inner, snap
        await ok(b, "type", {"ref": snapshot_ref(inner, 'textbox "Card holder"'), "text": "Bo"})
        await ok(b, "click", {"ref": snapshot_ref(inner, 'button "Pay now"')})
        await eventually(lambda: in_frame(dt, nested, "document.getElementById('out').textContent === "
                                          "'paid by Bo on free'"), 5, "the nested frame's button clicked")
    (tmp_path / "denied").mkdir()
    async with bridge(toolsite, tmp_path / "denied", *MUTATE, *WIDGET) as b, b.devtools() as dt:
        await ok(b, "tab_new", {"url": "https://allowed.test/xframe-nested"})
        await loaded(dt, "https://nested.test/xframe-inner")
        snap = (await ok(b, "snapshot"))["snapshot"]
        assert 'heading "Widget on widget.test"' in snap, snap
        assert 'iframe "Nested frame" [cross-origin or not allowed: not inspected]' in snap, snap
        assert "Widget on nested.test" not in snap
