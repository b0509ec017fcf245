"""The general browser tools end to end: the real `ai-bridge serve` (SDK stdio client) launching headless Chromium with
our real extension, against the local tool site (tests/toolsite) over TLS at its host names — allowed.test and
sub.allowed.test (allowed), denied.test (denied).

Test-side instruments act only as a user or an attacker would: DevTools on the launched browser (open a page, navigate
a tab the way a user types a URL, make a page raise a dialog), the console socket to forge extension commands that
skip the server's own checks, a second extension that holds a tab's debugger, and the site's request log (was a denied
host ever contacted?).
"""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from jsonschema import Draft202012Validator

from actors.mcp_front.tools import TOOLS

from .conftest import REPO, find_actor, serve_command
from .e2e import Bridge, open_bridge, requires_chromium
from .shared_bridge import Lease, OpenShared
from .test_browser_tool_outputs import closed
from .test_e2e_link import ask, eventually, linked_status, open_page, page_eval
from .toolsite.fixture import Browsed, ToolSite
from .user_chrome import pair_over_devtools

pytestmark = [requires_chromium, pytest.mark.chromium]

MUTATE = ("--enable-mutations",)
ALLOWED = ("--allow-domain", "allowed.test")


@asynccontextmanager
async def bridge(site: ToolSite, tmp: Path, *flags: str, fakes: Any = None, **kw: Any) -> AsyncIterator[Bridge]:
    async with open_bridge(Browsed(site, fakes), tmp, extra=flags, **kw) as b:
        yield b


async def succeeds(b: Bridge | Lease, tool: str, args: dict[str, Any] | None = None) -> Any:
    """The tool's whole result (a CallToolResult), which must be a success."""
    with trio.fail_after(60):
        res = await b.call(tool, args or {})  # the SDK client checks the result against the tool's outputSchema
    assert not res.is_error, f"{tool} {args}: {res.content[0].text}"
    # ... and here, the schema closed: a real result has no key its output model leaves undeclared.
    schema = TOOLS[tool].output_schema()
    assert schema is not None, tool
    Draft202012Validator(closed(schema)).validate(res.structured_content)
    return res


async def ok(b: Bridge | Lease, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return (await succeeds(b, tool, args)).structured_content  # type: ignore[no-any-return]


async def fails(b: Bridge | Lease, tool: str, args: dict[str, Any] | None, code: str) -> str:
    with trio.fail_after(60):
        res = await b.call(tool, args or {})
    assert res.is_error, f"{tool} {args} should fail with {code}: {res.content[0].text[:300]}"
    err = res.structured_content["error"]
    assert err["code"] == code, f"{tool} {args}: {res.content[0].text}"
    return f"{err['message']} {err['hint'] or ''}"


async def text_of(b: Bridge | Lease, selector: str) -> str:
    return (await ok(b, "get_text", {"selector": selector}))["text"]  # type: ignore[no-any-return]


def png_size(res: Any) -> tuple[int, int]:
    data = base64.b64decode(res.content[1].data)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", data[16:24])
    return w, h


def snapshot_ref(snapshot: str, line_part: str) -> str:
    for line in snapshot.splitlines():
        if line_part in line:
            return line.rsplit("[ref=", 1)[1].split("]")[0]
    raise AssertionError(f"no line with {line_part!r} in the snapshot:\n{snapshot}")


def console(state_dir: Path, code: str) -> str:
    """Run code in the server's console (a same-user process, like the console client's user)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    out = subprocess.run([*serve_command(), "console", "--state-dir", str(state_dir), "-c", code], cwd=REPO,
                         env=env, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


# --- safe mode --------------------------------------------------------------------------------------------------------


async def test_safe_mode_runs_only_reads(toolsite: ToolSite, tmp_path: Path) -> None:
    async with bridge(toolsite, tmp_path, *ALLOWED) as b, b.devtools() as dt:
        listed = {t.name: t for t in (await b.session.list_tools()).tools}
        for name in ("snapshot", "get_text", "screenshot", "query", "tabs_list", "console_logs"):
            assert listed[name].annotations.read_only_hint is True, name
        for name in ("click", "type", "navigate", "tab_new", "eval", "fill_form"):
            assert listed[name].annotations.read_only_hint is False, name
        for name in ("snapshot", "get_text", "get_html", "read_as_markdown", "query", "eval", "console_logs"):
            assert "untrusted" in (listed[name].description or ""), name

        # What needs a flag says which one, before anything touches a page.
        assert "--enable-mutations" in await fails(b, "tab_new", {"url": "https://allowed.test/form"},
                                                   "mutations_disabled")
        for tool, args in (("navigate", {"url": "https://allowed.test/"}), ("click", {"selector": "a"}),
                           ("type", {"selector": "input", "text": "x"}), ("press", {"key": "Enter"}),
                           ("fill_form", {"fields": [{"selector": "#name", "value": "x"}]}), ("back", {}),
                           ("scroll", {"delta_y": 100}), ("tab_close", {})):
            await fails(b, tool, args, "mutations_disabled")
        assert "--unsafe-enable-eval" in await fails(b, "eval", {"expression": "document.cookie"}, "eval_disabled")
        status = (await b.status())["browserTools"]
        assert status["safeMode"] is True and status["eval"] is False
        assert status["allowedDomains"] == ["allowed.test"]

        # The user's own tabs: allowed ones are offered, denied ones not even named.
        await open_page(dt, "https://allowed.test/form")
        await open_page(dt, "https://denied.test/secret")
        listing = await ok(b, "tabs_list")
        assert "denied.test" not in json.dumps(listing) and "TOP SECRET" not in json.dumps(listing)
        assert listing["hiddenByPolicy"] >= 1
        form = next(t for t in listing["tabs"] if t["url"] == "https://allowed.test/form")
        assert form["owner"] == "free" and form["allowed"] is True

        # Reads work on an adopted tab.
        await fails(b, "snapshot", {}, "no_target")
        assert (await ok(b, "tab_select", {"tab_id": form["tabId"]}))["owner"] == "adopted"
        snap = await ok(b, "snapshot", {})
        assert 'textbox "Name"' in snap["snapshot"] and snap["size"]["refs"] > 5
        assert "Sign up" in (await ok(b, "get_text"))["text"]
        await fails(b, "click", {"ref": snapshot_ref(snap["snapshot"], 'button "Send"')}, "mutations_disabled")

        # A dialog the page raises: reads report it; dismissing works in safe mode, accepting does not.
        target = next(p["targetId"] for p in await dt.pages("https://allowed.test/form"))
        await page_eval(dt, target, "setTimeout(() => alert('from the page'), 10); 1")

        async def dialog_known() -> bool:
            tabs = (await b.status())["browserTools"]["tabs"]
            return any((t.get("dialog") or {}).get("message") == "from the page" for t in tabs)

        await eventually(dialog_known, 10, "the page's alert known to the tools")
        assert "from the page" in await fails(b, "get_text", {}, "dialog_open")
        assert "--enable-mutations" in await fails(b, "handle_dialog", {"accept": True}, "mutations_disabled")
        assert (await ok(b, "handle_dialog", {"accept": False}))["dialog"]["type"] == "alert"
        assert "Sign up" in (await ok(b, "get_text"))["text"]

        # The page (or the user) sends the held tab to a denied site: the extension blocks the request before it
        # goes out, and the very next read is refused on the tab's URL.
        toolsite.reset()
        await page_eval(dt, target, "location.href = 'https://denied.test/secret'; 1")
        await eventually(lambda: dt.pages("https://denied.test/"), 10, "the tab shows the denied URL")
        assert "denied.test" in await fails(b, "get_text", {}, "policy_denied")
        assert "denied.test" in await fails(b, "snapshot", {}, "policy_denied")
        await fails(b, "screenshot", {}, "policy_denied")
        assert not toolsite.requested("denied.test")


# --- interaction and reading ------------------------------------------------------------------------------------------


async def test_forms_frames_shadow_dom_and_reading(toolsite: ToolSite, tmp_path: Path) -> None:
    # *.allowed.test covers allowed.test itself and sub.allowed.test.
    async with bridge(toolsite, tmp_path, *MUTATE, "--allow-domain", "*.allowed.test") as b:
        nav = await ok(b, "tab_new", {"url": "allowed.test/form"})  # https:// assumed
        assert nav["url"] == "https://allowed.test/form" and nav["status"] == 200 and nav["title"] == "Sign up"
        snap = (await ok(b, "snapshot"))["snapshot"]
        name, agree, send = (snapshot_ref(snap, s) for s in ('textbox "Name"', 'checkbox "I agree"', 'button "Send"'))
        assert (await ok(b, "type", {"ref": name, "text": "Ada"}))["value"] == "Ada"
        assert (await ok(b, "type", {"selector": "#bio", "text": " more", "clear": False}))["value"] == "old bio more"
        assert (await ok(b, "select_option", {"selector": "#color", "values": ["Green"]}))["selected"] == ["g"]
        await ok(b, "click", {"ref": agree})
        await ok(b, "click", {"ref": send})
        result = json.loads(await text_of(b, "#result"))
        assert result == {"name": "Ada", "email": "", "bio": "old bio more", "color": "g", "agree": "yes",
                          "plan": "free"}
        events = await text_of(b, "#events")
        for e in ("input:bio", "change:color", "change:agree"):
            assert e in events

        filled = await ok(b, "fill_form", {"fields": [
            {"selector": "#name", "value": "Bob"}, {"selector": "#email", "value": "b@example.test"},
            {"selector": "#agree", "value": False}, {"selector": "#pro", "value": True},
            {"selector": "#color", "value": "Blue"}], "submit_selector": "#submit"})
        assert filled["filled"] == 5 and filled["submitted"] is True
        assert json.loads(await text_of(b, "#result")) == {"name": "Bob", "email": "b@example.test",
                                                           "bio": "old bio more", "color": "b", "plan": "pro"}
        partial = await ok(b, "fill_form", {"fields": [{"selector": "#name", "value": "C"},
                                                      {"selector": "#nowhere", "value": "x"}],
                                           "submit_selector": "#submit"})
        assert partial["failed"] == 1 and partial["submitted"] is False
        assert "element_not_found" in partial["fields"][1]["error"]

        await ok(b, "press", {"selector": "#name", "key": "Control+A"})
        await ok(b, "press", {"key": "z"})
        assert (await ok(b, "query", {"what": "state", "selector": "#name"}))["elements"][0]["state"]["value"] == "z"
        assert "Control+a" in await text_of(b, "#keys")
        assert (await ok(b, "type", {"selector": "#editor", "text": "Edited"}))["value"] == "Edited"

        # Actionability: covered, disabled, hidden, missing; refs that never existed.
        assert "covered by <div#overlay>" in await fails(b, "click", {"selector": "#covered", "timeout_s": 0.3},
                                                         "element_not_interactable")
        assert "disabled" in await fails(b, "click", {"selector": "#disabled-btn", "timeout_s": 0.2},
                                         "element_not_interactable")
        assert "not visible" in await fails(b, "click", {"selector": "#hidden-btn", "timeout_s": 0.2},
                                            "element_not_interactable")
        await fails(b, "click", {"selector": "#absent", "timeout_s": 0.2}, "element_not_found")
        assert "snapshot" in await fails(b, "click", {"ref": "e9999"}, "element_not_found")
        await fails(b, "click", {"selector": "#a", "ref": "e1"}, "invalid_argument")
        await fails(b, "click", {}, "invalid_argument")
        await fails(b, "query", {"what": "count", "selector": "##bad"}, "invalid_argument")

        # Query: unibrowse's exploration tools.
        assert (await ok(b, "query", {"what": "count", "selector": "input"}))["count"] == 5
        attrs = (await ok(b, "query", {"what": "attributes", "selector": "#name"}))["elements"][0]["attributes"]
        assert attrs["placeholder"] == "Your name" and attrs["type"] == "text"
        styles = (await ok(b, "query", {"what": "styles", "selector": "#covered",
                                         "properties": ["width", "height"]}))["elements"][0]["styles"]
        assert styles == {"width": "200px", "height": "40px"}
        vis = (await ok(b, "query", {"what": "visibility", "selector": "#hidden-btn"}))["elements"][0]["visibility"]
        assert vis["visible"] is False and vis["reason"] == "display:none"
        forms = (await ok(b, "query", {"what": "form_values"}))["elements"]
        assert {f["name"]: f["value"] for f in forms[0]["fields"]}["email"] == "b@example.test"
        meta = (await ok(b, "query", {"what": "metadata"}))["metadata"]
        assert meta["description"] == "A test form" and meta["canonical"] == "https://allowed.test/form"
        found = await ok(b, "query", {"what": "find_text", "text": "covered"})
        assert found["count"] == 1 and found["elements"][0]["tag"] == "button"

        # Same-origin iframe and open shadow DOM, by refs from one snapshot.
        await ok(b, "navigate", {"url": "https://allowed.test/frames"})
        snap = (await ok(b, "snapshot"))["snapshot"]
        assert 'iframe "Inner frame"' in snap and "Deep button" in snap
        await ok(b, "type", {"ref": snapshot_ref(snap, 'textbox "Frame input"'), "text": "in frame"})
        await ok(b, "click", {"ref": snapshot_ref(snap, 'button "Frame button"')})
        await ok(b, "type", {"ref": snapshot_ref(snap, 'textbox "Shadow input"'), "text": "shadowy"})
        await ok(b, "click", {"ref": snapshot_ref(snap, 'button "Shadow button"')})
        await ok(b, "click", {"selector": "#deep"})
        page_text = (await ok(b, "get_text"))["text"]
        for expected in ("frame clicked: in frame", "shadow: clicked with shadowy", "deep clicked", "slotted text"):
            assert expected in page_text
        assert '<template shadowrootmode="open">' in (await ok(b, "get_html", {"selector": "#widget"}))["text"]

        # An element that moves away as the pointer arrives, another taking its place: the click lands on the
        # element, aimed again; the events that met the other one were stopped before the page saw them.
        await ok(b, "navigate", {"url": "https://allowed.test/jumpy"})
        await ok(b, "click", {"selector": "#target"})
        assert (await text_of(b, "#clicks")).split() == ["target"]

        # Long page: scrolling, clicking far below, screenshots.
        await ok(b, "navigate", {"url": "https://allowed.test/long"})
        await ok(b, "click", {"selector": "#bottom"})
        assert await text_of(b, "#bottom") == "bottom clicked"
        top = await ok(b, "scroll", {"to": "top"})
        assert top["scrollY"] == 0 and top["scrollHeight"] > 10_000
        assert (await ok(b, "scroll", {"delta_y": 700}))["scrollY"] == 700
        shot = await succeeds(b, "screenshot", {})
        meta_shot = shot.structured_content
        assert shot.content[1].type == "image" and png_size(shot) == (meta_shot["width"], meta_shot["height"])
        full = await succeeds(b, "screenshot", {"mode": "full_page"})
        assert full.structured_content["truncated"] is True and full.structured_content["fullHeight"] > 10_000
        assert png_size(full)[1] == 8192
        elem = await succeeds(b, "screenshot", {"selector": "#bottom"})
        w, h = png_size(elem)
        assert 30 < w < 200 and 10 < h < 60
        jpeg = await succeeds(b, "screenshot", {"format": "jpeg", "quality": 50})
        assert jpeg.content[1].mime_type == "image/jpeg" and base64.b64decode(jpeg.content[1].data)[:2] == b"\xff\xd8"

        md = (await ok(b, "read_as_markdown", {"max_chars": 400}))
        assert md["text"].startswith("# Long page") and "## Section 1" in md["text"] and md["truncated"] is True
        await ok(b, "navigate", {"url": "https://allowed.test/"})
        links = (await ok(b, "extract_links"))["links"]
        assert {"text": "Form", "href": "https://allowed.test/form", "internal": True, "rel": ""} in links
        assert any(link["href"] == "https://denied.test/secret" and not link["internal"] for link in links)

        # Waits.
        await ok(b, "navigate", {"url": "https://allowed.test/slow"})
        await ok(b, "click", {"selector": "#start"})
        waited = await ok(b, "wait_for", {"selector": "#late"})
        assert waited["element"]["tag"] == "div" and waited["matched"] == "selector '#late' visible"
        await ok(b, "wait_for", {"text_gone": "Loading..."})
        assert "did not happen" in await fails(b, "wait_for", {"selector": "#never", "timeout_s": 0.3}, "timeout")
        await ok(b, "navigate", {"url": "https://allowed.test/slow?auto", "wait_until": "commit"})
        await ok(b, "wait_for", {"text": "Late content"})

        # Drag: HTML5 drag and drop, and a mouse-driven knob; hover.
        await ok(b, "navigate", {"url": "https://allowed.test/drag"})
        await ok(b, "drag", {"selector": "#src", "to_selector": "#dst"})
        assert await text_of(b, "#out") == "dropped payload-from-src"
        await ok(b, "drag", {"selector": "#knob", "to_selector": "#slot"})
        assert await text_of(b, "#out2") == "knob released over slot"
        await ok(b, "hover", {"selector": "#hoverme"})
        assert await text_of(b, "#hoverme") == "hovered"

        # History, and an allowed redirect to a subdomain.
        assert (await ok(b, "back"))["url"] == "https://allowed.test/slow?auto"
        assert (await ok(b, "forward"))["url"] == "https://allowed.test/drag"
        assert (await ok(b, "reload", {"wait_until": "domcontentloaded"}))["url"] == "https://allowed.test/drag"
        assert (await ok(b, "navigate", {"url": "https://allowed.test/redirect-allowed"}))["url"] == \
            "https://sub.allowed.test/landing"

        # Committed, but its body comes later: the document has no element yet. Reading it is reading nothing.
        await ok(b, "navigate", {"url": "https://allowed.test/late-body?ms=2000", "wait_until": "commit"})
        assert (await ok(b, "get_text"))["text"] in ("", "Arrived late")
        await ok(b, "wait_for", {"text": "Arrived late"})


# --- the domain policy, on the server and in the extension ------------------------------------------------------------


def forge(state_dir: Path, method: str, params: dict[str, Any]) -> str:
    """An extension command sent straight through the relay, past every check of the browser tools actor — as a
    buggy or subverted server would. Returns 'OK <result>' or 'ERR <extension error code> <message>'."""
    code = (f"try:\n    r = await call('relay', protocol.relay.ExtCommand({method!r}, {params!r}, 15))\n"
            "    print('OK', json.dumps(r))\n"
            "except Exception as e:\n    print('ERR', getattr(e, 'ext_code', type(e).__name__), e)\n")
    return console(state_dir, "import json\n" + code).strip()


@pytest.mark.bridge_flags(*MUTATE, *ALLOWED)
async def test_policy_is_checked_by_the_server_and_again_by_the_extension(
        toolsite: ToolSite, shared_tools_bridge: OpenShared) -> None:
    async with shared_tools_bridge() as b, b.devtools() as dt:
        # Server side: targets outside the policy never reach the browser.
        for url in ("https://denied.test/secret", "http://sub.allowed.test/", "https://allowed.test@denied.test/x",
                    "javascript:alert(1)", "file:///etc/passwd", "data:text/html,<h1>x</h1>"):
            await fails(b, "tab_new", {"url": url}, "policy_denied")
        await fails(b, "tab_new", {"url": "https://allowed.test\\@denied.test/"}, "invalid_argument")
        tab = (await ok(b, "tab_new", {"url": "https://allowed.test/opener"}))["tabId"]

        # A redirect to a denied host stops before the request is sent, and says where it was going.
        assert "https://denied.test/secret" in await fails(b, "navigate", {"url": "https://allowed.test/redirect-chain"},
                                                           "policy_denied")
        assert toolsite.requested("allowed.test", "/redirect-denied")
        assert not toolsite.requested("denied.test")
        await fails(b, "get_text", {}, "policy_denied")  # the tab is on the blocked URL's error page
        await ok(b, "navigate", {"url": "https://allowed.test/opener"})  # leaving a denied page is allowed
        # A link to a denied host: the click happens, the navigation does not.
        await ok(b, "click", {"selector": "#denied-link"})
        await eventually(lambda: dt.pages("https://denied.test/"), 10, "the blocked navigation")
        assert not toolsite.requested("denied.test")
        await fails(b, "snapshot", {}, "policy_denied")
        await ok(b, "navigate", {"url": "https://allowed.test/opener"})

        # A page of ours opening a denied site in a new tab: the tab is ours (listed), but never read.
        await ok(b, "click", {"selector": "#denied-newtab"})
        listing = await eventually(lambda: _tabs_with(b, "https://denied.test/secret"), 10, "the new tab listed")
        popup = listing[0]
        assert popup["owner"] == "tools" and popup["allowed"] is False and popup["title"] == ""
        assert "denied.test" in await fails(b, "tab_select", {"tab_id": popup["tabId"]}, "policy_denied")
        assert "denied.test" in await fails(b, "get_text", {"tab_id": popup["tabId"]}, "policy_denied")

        # Extension side: the same commands forged past the server's checks are refused by the extension.
        policy = {"hosts": ["allowed.test"]}
        user_tab = await open_page(dt, "https://denied.test/secret")
        everything = json.loads(forge(b.state_dir, "tabs.query", {"policy": {"hosts": ["*"]}}).split(" ", 1)[1])
        denied_tab = next(t["tabId"] for t in everything["tabs"] if t["url"] == "https://denied.test/secret"
                          and t["tabId"] != popup["tabId"])
        assert user_tab
        got = forge(b.state_dir, "debugger.attach", {"tabId": denied_tab, "policy": policy})
        assert got.startswith("ERR policy_denied"), got
        got = forge(b.state_dir, "cdp.send", {"tabId": tab, "method": "Page.navigate",
                                              "params": {"url": "https://denied.test/secret"}, "policy": policy})
        assert got.startswith("ERR policy_denied"), got
        got = forge(b.state_dir, "cdp.send", {"tabId": tab, "method": "Network.getAllCookies", "params": {},
                                              "policy": policy})
        assert got.startswith("ERR method_not_allowed"), got
        got = forge(b.state_dir, "cdp.send", {"tabId": tab, "method": "Runtime.evaluate",
                                              "params": {"expression": "1"}})  # a provider command
        assert got.startswith("ERR tab_busy"), got
        got = forge(b.state_dir, "cdp.batch", {"tabId": tab, "commands": [{"method": "Runtime.evaluate"}]})
        assert got.startswith("ERR bad_params"), got
        # Its own redirect guard, without the server: the request to the denied host never goes out.
        toolsite.reset()
        got = forge(b.state_dir, "cdp.send", {"tabId": tab, "method": "Page.navigate", "policy": policy,
                                              "params": {"url": "https://allowed.test/redirect-denied"}})
        assert got.startswith("OK") and "ERR_BLOCKED_BY_CLIENT" in got, got
        assert toolsite.requested("allowed.test", "/redirect-denied") and not toolsite.requested("denied.test")
        # And on a tab whose URL is denied, reads are refused whatever the caller.
        got = forge(b.state_dir, "cdp.send", {"tabId": tab, "method": "Runtime.evaluate", "policy": policy,
                                              "params": {"expression": "document.body.innerText",
                                                         "returnByValue": True}})
        assert got.startswith("ERR policy_denied"), got


async def _tabs_with(b: Bridge | Lease, url: str) -> list[dict[str, Any]]:
    return [t for t in (await ok(b, "tabs_list"))["tabs"] if t["url"] == url]


# --- dialogs, refs across re-renders, console and network -------------------------------------------------------------


@pytest.mark.bridge_flags(*MUTATE, *ALLOWED)
async def test_dialogs_never_hang_a_call(toolsite: ToolSite, shared_tools_bridge: OpenShared) -> None:
    async with shared_tools_bridge() as b:
        await ok(b, "tab_new", {"url": "https://allowed.test/dialogs"})
        await fails(b, "handle_dialog", {"accept": True}, "no_target")
        # Not a hang until the input's timeout (that would be another code): the dialog ends the click.
        assert "Hello from alert" in await fails(b, "click", {"selector": "#alert"}, "dialog_open")
        for tool in ("get_text", "snapshot", "screenshot"):
            await fails(b, tool, {}, "dialog_open")
        assert (await b.status())["browserTools"]["tabs"][0]["dialog"]["message"] == "Hello from alert"
        shown = await ok(b, "handle_dialog", {"accept": True})
        assert shown["dialog"] == {"type": "alert", "message": "Hello from alert", "defaultPrompt": "",
                                   "url": "https://allowed.test/dialogs"}
        assert await text_of(b, "#out") == "alert closed"
        await fails(b, "click", {"selector": "#confirm"}, "dialog_open")
        await ok(b, "handle_dialog", {"accept": False})
        assert await text_of(b, "#out") == "confirm: false"
        await fails(b, "click", {"selector": "#prompt"}, "dialog_open")
        await ok(b, "handle_dialog", {"accept": True, "prompt_text": "Zed"})
        assert await text_of(b, "#out") == "prompt: Zed"
        # A dialog that opens while a call waits interrupts it.
        await ok(b, "click", {"selector": "#later"})
        assert "A late alert" in await fails(b, "wait_for", {"time_s": 5}, "dialog_open")
        await ok(b, "handle_dialog", {"accept": False})
        # beforeunload: the navigation is held by the dialog, then goes on once it is accepted.
        await ok(b, "click", {"selector": "#guard"})
        assert "beforeunload" in await fails(b, "navigate", {"url": "https://allowed.test/form"}, "dialog_open")
        await ok(b, "handle_dialog", {"accept": True})
        await ok(b, "wait_for", {"load_state": "load"})
        assert (await ok(b, "get_text"))["url"] == "https://allowed.test/form"


async def test_refs_across_re_renders_logs_and_eval(toolsite: ToolSite, tmp_path: Path) -> None:
    async with bridge(toolsite, tmp_path, *MUTATE, *ALLOWED, "--unsafe-enable-eval") as b:
        await ok(b, "tab_new", {"url": "https://allowed.test/rerender"})
        snap = (await ok(b, "snapshot"))["snapshot"]
        inc, alpha, beta = (snapshot_ref(snap, s) for s in ('button "Increment"', 'button "Alpha"', 'button "Beta"'))
        # A re-render that keeps the node (text updated in place) keeps its ref.
        await ok(b, "click", {"ref": inc})
        again = (await ok(b, "snapshot"))["snapshot"]
        assert snapshot_ref(again, 'button "Increment (1)"') == inc and '"Count: 1"' in again
        await ok(b, "click", {"ref": inc})
        assert await text_of(b, "#count") == "2"
        # A re-render that replaces the nodes with the same ones: the ref finds the one element like it.
        await ok(b, "click", {"selector": "#rebuild"})
        clicked = await ok(b, "click", {"ref": alpha})
        assert clicked["reResolved"] is True and clicked["element"]["name"] == "Alpha"
        assert await text_of(b, "#picked") == "picked Alpha"
        assert snapshot_ref((await ok(b, "snapshot"))["snapshot"], 'button "Alpha"') == alpha
        # Gone (renamed) or ambiguous (twins): an error naming it, never a click on a guess.
        await ok(b, "click", {"selector": "#rename"})
        assert 'button "Beta"' in await fails(b, "click", {"ref": beta}, "element_not_found")
        await ok(b, "click", {"selector": "#twins"})
        assert "several" in await fails(b, "click", {"ref": alpha}, "element_not_found")
        assert await text_of(b, "#picked") == "picked Alpha"
        # Another document: refs of the last one never name its elements.
        await ok(b, "navigate", {"url": "https://allowed.test/rerender"})
        assert "earlier page" in await fails(b, "click", {"ref": inc}, "element_not_found")
        fresh = (await ok(b, "snapshot"))["snapshot"]
        assert snapshot_ref(fresh, 'button "Increment"') != inc

        # Console and network: bounded buffers, the console's from its first use on the tab, the network's from
        # the tab's lease on (it already has the page's own request).
        await ok(b, "navigate", {"url": "https://allowed.test/console"})
        first = await ok(b, "console_logs")
        assert first["started"] is True
        early = await ok(b, "network_log")
        assert early["started"] is False and "https://allowed.test/console" in [e["url"] for e in early["entries"]]
        for button in ("#log", "#throw", "#fetch"):
            await ok(b, "click", {"selector": button})
        await ok(b, "wait_for", {"text": "fetched 3"})
        logs = await eventually(lambda: _console_with(b, "boom"), 5, "the exception logged")
        by_level = {e["level"]: e["text"] for e in logs["entries"]}
        assert by_level["log"].startswith("clicked 42") and by_level["warning"] == "careful"
        assert by_level["error"] == "bad thing" and "boom" in by_level["exception"]
        assert logs["started"] is False and all(e["source"].startswith("https://allowed.test/console")
                                                for e in logs["entries"] if e["level"] != "exception")
        errors = await ok(b, "console_logs", {"level": "error"})
        assert {e["level"] for e in errors["entries"]} == {"error", "exception"}
        newest = max(e["id"] for e in logs["entries"])
        assert (await ok(b, "console_logs", {"since_id": newest}))["entries"] == []
        net = await ok(b, "network_log")
        by_url = {e["url"]: e for e in net["entries"]}
        # The current page's requests, from its document request on; the earlier pages' on request.
        page_start = by_url["https://allowed.test/console"]["id"]
        assert min(by_url[u]["id"] for u in by_url) == page_start and "https://allowed.test/rerender" not in by_url
        every = await ok(b, "network_log", {"earlier_pages": True})
        assert "https://allowed.test/rerender" in [e["url"] for e in every["entries"] if e["id"] < page_start]
        assert every["total"] == net["total"] > len(net["entries"])
        assert by_url["https://allowed.test/api/data"]["status"] == 200
        assert by_url["https://allowed.test/api/data"]["mimeType"] == "application/json"
        assert by_url["https://allowed.test/api/missing"]["status"] == 404
        assert by_url["https://nowhere.invalid/x"]["failed"] is True
        failed = {e["url"] for e in (await ok(b, "network_log", {"failed_only": True}))["entries"]}
        # (the site has no favicon: the browser's request for it, logged since the lease, is a 404 too)
        assert failed - {"https://allowed.test/favicon.ico"} == {"https://allowed.test/api/missing",
                                                                 "https://nowhere.invalid/x"}
        assert [e["url"] for e in (await ok(b, "network_log", {"url_contains": "DATA"}))["entries"]] == \
            ["https://allowed.test/api/data"]
        await ok(b, "console_logs", {"clear": True})
        assert (await ok(b, "console_logs"))["total"] == 0

        # eval: values of every kind, a throw, and a value too big, each a result its outputSchema describes.
        async def run(expression: str) -> dict[str, Any]:
            return await ok(b, "eval", {"expression": expression})

        assert {k: v for k, v in (await run("1 + 1")).items() if k != "url"} == {
            "tabId": net["tabId"], "ok": True, "value": 2, "type": "number", "error": None, "truncated": False}
        assert (await run("({a: [1, 'x', null], b: {c: true}})"))["value"] == {"a": [1, "x", None], "b": {"c": True}}
        assert [(r["value"], r["type"]) for r in [await run(e) for e in ("[1, 2]", "null", "document.title")]] == [
            ([1, 2], "object"), (None, "object:null"), ("Console and network", "string")]
        assert (await run("Promise.resolve('later')"))["value"] == "later"
        assert {(r["value"], r["type"]) for r in [await run(e) for e in ("undefined", "NaN", "-0", "2n ** 70n")]} == {
            (None, "undefined"), ("NaN", "number"), ("-0", "number"), ("1180591620717411303424n", "bigint")}
        thrown = await run("(() => { throw new Error('nope') })()")
        assert thrown["ok"] is False and thrown["type"] == "exception" and "nope" in thrown["error"]
        assert thrown["value"] is None
        big = await run("'x'.repeat(300000)")
        assert big["ok"] is True and big["truncated"] is True and isinstance(big["value"], str)


async def _console_with(b: Bridge | Lease, text: str) -> dict[str, Any] | None:
    logs = await ok(b, "console_logs")
    return logs if any(text in e["text"] for e in logs["entries"]) else None


# --- tab ownership: two servers on one browser, and the providers' tabs -----------------------------------------------


FAST = {"chunks": 4, "intervalMs": 40, "firstTokenMs": 100}


async def test_each_server_keeps_to_its_own_tabs_and_never_drives_an_ask_tab(
        toolsite: ToolSite, sites: Any, tmp_path: Path) -> None:
    sites.chatgpt.set_next(**FAST)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    # Even with chatgpt.com allowed, the provider's tab is not the tools' to drive.
    flags = (*MUTATE, *ALLOWED, "--allow-domain", "chatgpt.com")
    async with bridge(toolsite, tmp_path / "a", *flags, fakes=sites, project="proj-a") as a:
        await linked_status(a)
        async with a.devtools() as dt:  # B is paired with that browser as the user would, from `ai-bridge pair`
            await pair_over_devtools(dt, tmp_path / "b" / "state")
        async with bridge(toolsite, tmp_path / "b", *flags, "--browser", "connect", fakes=sites,
                          project="proj-b") as b:
            await linked_status(b)
            await ask(a, "chatgpt", "A: what is 1 plus 1?")
            ask_tab = (await a.status())["extension"]["attachedTabs"][0]
            listing = await ok(a, "tabs_list")
            assert {"tabId": ask_tab, "owner": "provider"}.items() <= next(
                t for t in listing["tabs"] if t["tabId"] == ask_tab).items()
            assert "ask tab" in await fails(a, "tab_select", {"tab_id": ask_tab}, "no_target")
            await fails(a, "get_text", {"tab_id": ask_tab}, "no_target")
            assert ask_tab not in {t["tabId"] for t in (await ok(b, "tabs_list"))["tabs"]}

            tab_a = (await ok(a, "tab_new", {"url": "https://allowed.test/opener"}))["tabId"]
            tab_b = (await ok(b, "tab_new", {"url": "https://allowed.test/form"}))["tabId"]
            seen_a = {t["tabId"]: t["owner"] for t in (await ok(a, "tabs_list"))["tabs"]}
            seen_b = {t["tabId"]: t["owner"] for t in (await ok(b, "tabs_list"))["tabs"]}
            assert seen_a[tab_a] == "tools" and tab_b not in seen_a
            assert seen_b[tab_b] == "tools" and tab_a not in seen_b
            for tool, args in (("tab_select", {"tab_id": tab_a}), ("get_text", {"tab_id": tab_a}),
                               ("click", {"tab_id": tab_a, "selector": "#newtab"})):
                await fails(b, tool, args, "no_target")
            await fails(a, "type", {"tab_id": tab_b, "selector": "#name", "text": "x"}, "no_target")
            # A tab a page of A's opens is A's too.
            await ok(a, "click", {"selector": "#newtab"})
            popup = (await eventually(lambda: _tabs_with(a, "https://allowed.test/popup"), 10, "popup"))[0]
            assert popup["owner"] == "tools"
            assert popup["tabId"] not in {t["tabId"] for t in (await ok(b, "tabs_list"))["tabs"]}
            await fails(b, "tab_select", {"tab_id": popup["tabId"]}, "no_target")
            assert "Popup page" in (await ok(a, "get_text", {"tab_id": popup["tabId"]}))["text"]
            # Both go on working side by side, and the ask tab still answers.
            await ok(b, "type", {"selector": "#name", "text": "only B"})
            await ask(a, "chatgpt", "A: and 2 plus 2?")
            assert (await ok(a, "tab_close", {"tab_id": popup["tabId"]}))["closed"] is True
            assert (await ok(b, "query", {"what": "state", "selector": "#name"}))["elements"][0]["state"]["value"] \
                == "only B"


async def test_restarting_the_tools_leaves_an_ask_running(toolsite: ToolSite, sites: Any, tmp_path: Path) -> None:
    sites.chatgpt.set_next(chunks=12, intervalMs=150, firstTokenMs=200)
    async with bridge(toolsite, tmp_path, *MUTATE, *ALLOWED, fakes=sites) as b:
        await linked_status(b)
        tab = (await ok(b, "tab_new", {"url": "https://allowed.test/rerender"}))["tabId"]
        before = (await ok(b, "snapshot"))["snapshot"]
        job = (await ok(b, "ask_chatgpt_web", {"question": "A long one, please", "background": True}))["jobId"]
        await eventually(lambda: _answering(b, job), 15, "the ask is answering")
        assert "restarted browser_tools" in console(b.state_dir, "restart('browser_tools')")
        st = await b.status()
        assert find_actor(st, "browser_tools")["restarts"] == 1
        # The book outlived the restart (same current tab); the page's isolated world did too, refs included.
        assert (await ok(b, "tabs_list"))["currentTabId"] == tab
        await ok(b, "click", {"ref": snapshot_ref(before, 'button "Increment"')})
        after = (await ok(b, "snapshot"))["snapshot"]
        assert snapshot_ref(after, 'button "Increment (1)"') == snapshot_ref(before, 'button "Increment"')
        answer = await ok(b, "get_answer", {"job_id": job, "wait_s": 60})
        assert answer["status"] == "done", answer
        assert find_actor(await b.status(), "chatgpt")["restarts"] == 0


async def _answering(b: Bridge, job: str) -> bool:
    got = await ok(b, "get_answer", {"job_id": job, "wait_s": 0})
    return got["status"] == "running" and any(got.get("partial", {}).values())


# --- another debugger on the tab --------------------------------------------------------------------------------------

# A second extension that can take a tab's debugger the way a debugging extension (or DevTools) does. The test calls
# its functions in its service worker, as that extension's own code would run.
HOLDER_MANIFEST = {"manifest_version": 3, "name": "debugger holder (test)", "version": "1.0",
                   "permissions": ["debugger", "tabs"], "host_permissions": ["<all_urls>"],
                   "background": {"service_worker": "holder.js"}}
HOLDER_JS = """
self.mark = (tabId, title) => chrome.debugger.sendCommand(
  {tabId}, 'Runtime.evaluate', {expression: `document.title = ${JSON.stringify(title)}; document.title`});
self.hold = async (tabId) => {
  await chrome.debugger.attach({tabId}, '1.3');
  return (await mark(tabId, 'held')).result.value;
};
"""


async def _holder(dt: Any) -> str | None:
    targets = (await dt.send("Target.getTargets"))["targetInfos"]
    return next((t["targetId"] for t in targets if t["type"] == "service_worker" and t["url"].endswith("/holder.js")),
                None)


async def test_a_tab_another_debugger_holds_is_read_without_taking_it_from_its_holder(
        toolsite: ToolSite, tmp_path: Path) -> None:
    """Chromium lets several debugger clients share a tab (DevTools, another extension): ours reads it alongside, and
    the other keeps its session (the extension's detach-and-retry on "already attached" only ever detaches its own;
    `devtools_open` is for a browser that refuses the second client, covered by the unit tests)."""
    holder = tmp_path / "holder"
    holder.mkdir()
    (holder / "manifest.json").write_text(json.dumps(HOLDER_MANIFEST))
    (holder / "holder.js").write_text(HOLDER_JS)
    async with bridge(toolsite, tmp_path, *ALLOWED, "--load-extension", str(holder)) as b, b.devtools() as dt:
        held = await open_page(dt, "https://allowed.test/form")
        tab = next(t["tabId"] for t in (await ok(b, "tabs_list"))["tabs"] if t["url"] == "https://allowed.test/form")
        worker = await eventually(lambda: _holder(dt), 15, "the other extension's worker")
        assert await page_eval(dt, worker, f"hold({tab})") == "held"
        await ok(b, "tab_select", {"tab_id": tab})
        assert "Sign up" in (await ok(b, "get_text"))["text"]
        assert 'textbox "Name"' in (await ok(b, "snapshot"))["snapshot"]
        # The other extension's session is still attached: it goes on driving the page.
        assert await page_eval(dt, worker, f"mark({tab}, 'still held').then(r => r.result.value)") == "still held"
        assert await dt.evaluate(held, "document.title") == "still held"
        assert "Sign up" in (await ok(b, "get_text"))["text"]
        st = await b.status()
    assert find_actor(st, "browser_tools")["restarts"] == 0


# --- every way in: frames, popups, input, document.domain, new-tab clicks (issue 26) ------------------------------


def red_pixels(res: Any) -> int:
    """How many pixels of a PNG screenshot are the denied frame's red (#c00): a small PNG decoder (8-bit RGB/RGBA,
    every filter type), enough for Chromium's screenshots."""
    data = base64.b64decode(res.content[1].data)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    prev = bytearray(stride)
    red = 0
    for row in range(height):
        base = row * (stride + 1)
        ftype, line = raw[base], bytearray(raw[base + 1:base + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ftype == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        red += sum(1 for x in range(0, stride, channels) if line[x] > 170 and line[x + 1] < 60 and line[x + 2] < 60)
        prev = line
    return red


async def frame_target(dt: Any, url_prefix: str) -> str:
    async def find() -> str | None:
        targets = (await dt.send("Target.getTargets"))["targetInfos"]
        return next((t["targetId"] for t in targets if t["type"] == "iframe" and t["url"].startswith(url_prefix)),
                    None)
    return await eventually(find, 10, f"the frame {url_prefix}")  # type: ignore[no-any-return]


async def in_frame(dt: Any, target: str, expression: str) -> Any:
    """Run script in a (denied) frame, with a user gesture: what the frame's own page does."""
    session = (await dt.send("Target.attachToTarget", {"targetId": target, "flatten": True}))["sessionId"]
    try:
        got = await dt.send("Runtime.evaluate", {"expression": expression, "userGesture": True,
                                                 "returnByValue": True}, session)
        return got.get("result", {}).get("value")
    finally:
        await dt.send("Target.detachFromTarget", {"sessionId": session})


@pytest.mark.bridge_flags(*MUTATE, *ALLOWED)
async def test_denied_frames_are_neither_shown_nor_driven(toolsite: ToolSite, shared_tools_bridge: OpenShared) -> None:
    async with shared_tools_bridge() as b, b.devtools() as dt:
        tab = (await ok(b, "tab_new", {"url": "https://allowed.test/denied-frame"}))["tabId"]
        frame = await frame_target(dt, "https://denied.test/frame-secret")
        await eventually(lambda: in_frame(dt, frame, "document.readyState === 'complete'"), 10, "the frame loaded")

        # Screenshots: the denied frame's pixels (a red page) are masked, the allowed page around it is not.
        for args in ({}, {"mode": "full_page"}, {"selector": "#df"}):
            assert red_pixels(await succeeds(b, "screenshot", args)) == 0, args
        top = next(p["targetId"] for p in await dt.pages("https://allowed.test/denied-frame"))
        assert await page_eval(dt, top, "getComputedStyle(df).visibility") == "visible"  # shown again after each
        assert "allowed text" in await text_of(b, "#mine")
        snap = (await ok(b, "snapshot"))["snapshot"]
        assert "not inspected" in snap and "DENIED FRAME" not in snap

        # Input: a click into the denied frame is refused; so are keys once the focus is inside it (a user clicked it).
        toolsite.reset()
        await fails(b, "click", {"selector": "#df"}, "policy_denied")
        await fails(b, "hover", {"selector": "#df"}, "policy_denied")
        page = next(p["targetId"] for p in await dt.pages("https://allowed.test/denied-frame"))
        session = (await dt.send("Target.attachToTarget", {"targetId": page, "flatten": True}))["sessionId"]
        box = await page_eval(dt, page, "JSON.stringify(document.getElementById('df').getBoundingClientRect())")
        inner = await in_frame(dt, frame, "JSON.stringify(document.getElementById('q').getBoundingClientRect())")
        x = json.loads(box)["x"] + json.loads(inner)["x"] + 5
        y = json.loads(box)["y"] + json.loads(inner)["y"] + 5
        for kind in ("mousePressed", "mouseReleased"):
            await dt.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left",
                                                       "clickCount": 1}, session)
        await dt.send("Target.detachFromTarget", {"sessionId": session})
        await eventually(lambda: in_frame(dt, frame, "document.activeElement.id === 'q'"), 5, "focus in the frame")
        await fails(b, "press", {"key": "a"}, "policy_denied")
        await fails(b, "press", {"key": "Enter"}, "policy_denied")
        await fails(b, "type", {"selector": "#q", "text": "x", "submit": True, "timeout_s": 1}, "element_not_found")
        assert await in_frame(dt, frame, "document.getElementById('q').value") == ""
        assert not toolsite.requested("denied.test", "/api/echo")

        # New-tab clicks (middle button, Control, Shift, Meta) on a link to a denied site are refused; to an allowed
        # one they work.
        await dt.send("Target.activateTarget", {"targetId": page})
        for args in ({"button": "middle"}, {"modifiers": ["Control"]}, {"modifiers": ["Shift"]},
                     {"modifiers": ["Meta"]}):
            assert "denied.test" in await fails(b, "click", {"selector": "#denied-link", **args}, "policy_denied")
        await ok(b, "click", {"selector": "#allowed-link", "modifiers": ["Control"]})
        await eventually(lambda: dt.pages("https://allowed.test/landing"), 10, "the allowed link in a new tab")
        # The browser takes clicks in order: by the time the allowed one's tab shows, a denied one's would have too.
        assert not await dt.pages("https://denied.test/secret") and not toolsite.requested("denied.test", "/secret")

        # A popup the denied frame opens and fills: about:blank, but with the denied frame's origin.
        assert await in_frame(dt, frame, "openSecretPopup()") is True

        async def popup() -> dict[str, Any] | None:
            tabs = (await ok(b, "tabs_list"))["tabs"]
            return next((t for t in tabs if t["url"] == "about:blank" and t["owner"] == "tools"), None)

        pop = await eventually(popup, 10, "the popup listed")
        assert "SECRET" not in json.dumps(await ok(b, "tabs_list")), "a denied popup's title was listed"
        for tool in ("get_text", "get_html", "read_as_markdown", "snapshot", "screenshot", "console_logs"):
            message = await fails(b, tool, {"tab_id": pop["tabId"]}, "policy_denied")
            assert "denied.test" in message and "SECRET" not in message, tool
        await ok(b, "tab_select", {"tab_id": tab})

        # document.domain: a sibling subdomain the policy denies is not inlined, whatever the two pages agreed.
        await ok(b, "tab_new", {"url": "https://allowed.test/domain-parent"})
        parent = next(p["targetId"] for p in await dt.pages("https://allowed.test/domain-parent"))
        # The page itself can read its sibling's text: the two relaxed document.domain.
        await eventually(lambda: page_eval(dt, parent, "document.getElementById('sib').contentDocument?.body"
                                           "?.innerText.includes('SIBLING SECRET') === true"), 10, "the sibling")
        for tool in ("get_text", "get_html", "read_as_markdown", "snapshot"):
            got = json.dumps(await ok(b, tool))
            assert "parent text" in got or tool in ("snapshot", "get_html"), tool
            assert "SIBLING SECRET" not in got and "Sibling button" not in got, tool
        found = await ok(b, "query", {"what": "find_text", "text": "SIBLING"})
        assert found["count"] == 0
        await fails(b, "click", {"selector": "#sibbtn", "timeout_s": 0.5}, "element_not_found")
        await fails(b, "click", {"selector": "#sib"}, "policy_denied")


# --- sizes capped where they enter, and the smaller failures (issue 26.3 and 26.5) --------------------------------


@pytest.mark.bridge_flags(*MUTATE, *ALLOWED)
async def test_sizes_are_capped_and_small_failures_are_typed(
        toolsite: ToolSite, shared_tools_bridge: OpenShared) -> None:
    async with shared_tools_bridge() as b, b.devtools() as dt:
        # A page 70,000 px wide: the full-page capture is cut both ways (it used to abort the whole browser).
        await ok(b, "tab_new", {"url": "https://allowed.test/wide"})
        full = await succeeds(b, "screenshot", {"mode": "full_page"})
        assert full.structured_content["truncated"] is True
        assert png_size(full)[0] <= 8192 and png_size(full)[1] <= 8192
        tall = await succeeds(b, "screenshot", {"selector": "#tall"})
        assert tall.structured_content["truncated"] is True and png_size(tall)[1] <= 8192

        # Console entries from a script with a 1 MB source URL: each field is capped as it enters.
        await ok(b, "navigate", {"url": "https://allowed.test/console-spam"})
        await ok(b, "console_logs")  # starts collecting
        page = next(p["targetId"] for p in await dt.pages("https://allowed.test/console-spam"))
        assert await page_eval(dt, page, "spam(20, 1 << 20)") == 20
        logs = await eventually(lambda: _console_with(b, "spam 19"), 30, "the spam logged")
        assert len(json.dumps(logs)) < 20 * 2000
        assert all(len(e["source"]) < 1100 and "…[truncated" in e["source"] for e in logs["entries"])

        # One console line bigger than the link's frame: cut by the extension, the link stays up.
        before = (await b.status())["extension"]
        assert await page_eval(dt, page, "huge(5)") == 5
        huge = await eventually(lambda: _console_with(b, "Huuu"), 20, "the huge line, cut")
        assert next(e for e in huge["entries"] if e["text"].startswith("Huuu"))["text"].endswith("chars]")
        after = (await b.status())["extension"]
        assert after["connected"] and after["since"] == before["since"], (before, after)

        # key_events beyond one batch (more than 31 characters).
        await ok(b, "navigate", {"url": "https://allowed.test/form"})
        long_text = "The quick brown fox jumps over the lazy dog, twice over."
        typed = await ok(b, "type", {"selector": "#name", "text": long_text, "key_events": True})
        assert typed["value"] == long_text

        # max_chars at its documented maximum on non-ASCII text: cut to fit, never a failure.
        await page_eval(dt, next(p["targetId"] for p in await dt.pages("https://allowed.test/form")),
                        "document.body.append('漢字'.repeat(1_200_000)); 1")
        text = await ok(b, "get_text", {"max_chars": 2_000_000})
        assert text["truncated"] is True and text["chars"] > 2_000_000 and 500_000 < len(text["text"]) < 2_000_000

        # A meta refresh to a denied site: a typed policy_denied naming it, not a raw cdp_error.
        assert "denied.test" in await fails(b, "navigate", {"url": "https://allowed.test/meta-refresh"},
                                            "policy_denied")
        assert not toolsite.requested("denied.test")


async def _console_with(b: Bridge | Lease, needle: str) -> dict[str, Any] | None:
    logs = await ok(b, "console_logs", {"limit": 1000})
    return logs if any(needle in e["text"] for e in logs["entries"]) else None


@pytest.mark.bridge_flags(*MUTATE, *ALLOWED)
async def test_frames_in_closed_shadow_roots_are_refused(toolsite: ToolSite, shared_tools_bridge: OpenShared) -> None:
    """A denied frame where no page script can see it (a closed shadow root): the extension finds it through the DOM
    domain, and refuses the screenshot, a click on it, and keys while the focus is inside it."""
    async with shared_tools_bridge() as b, b.devtools() as dt:
        await ok(b, "tab_new", {"url": "https://allowed.test/denied-frame?closed"})
        hidden = await frame_target(dt, "https://denied.test/frame-secret?2")
        await eventually(lambda: in_frame(dt, hidden, "document.readyState === 'complete'"), 10, "the frame loaded")
        assert "closed shadow" in await fails(b, "screenshot", {}, "policy_denied")
        await fails(b, "click", {"selector": "#host"}, "policy_denied")
        await ok(b, "click", {"selector": "#allowed-link", "modifiers": ["Control"]})  # elsewhere, input works

        page = next(p["targetId"] for p in await dt.pages("https://allowed.test/denied-frame?closed"))
        await dt.send("Target.activateTarget", {"targetId": page})
        session = (await dt.send("Target.attachToTarget", {"targetId": page, "flatten": True}))["sessionId"]
        box = await page_eval(dt, page, "JSON.stringify(document.getElementById('host').getBoundingClientRect())")
        inner = await in_frame(dt, hidden, "JSON.stringify(document.getElementById('q').getBoundingClientRect())")
        # (+ the iframe's default 2 px border)
        x, y = json.loads(box)["x"] + json.loads(inner)["x"] + 7, json.loads(box)["y"] + json.loads(inner)["y"] + 7
        for kind in ("mousePressed", "mouseReleased"):
            await dt.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left",
                                                       "clickCount": 1}, session)
        await dt.send("Target.detachFromTarget", {"sessionId": session})
        await eventually(lambda: in_frame(dt, hidden, "document.activeElement.id === 'q'"), 5, "focus in the frame")
        assert "closed shadow" in await fails(b, "press", {"key": "a"}, "policy_denied")
        assert await in_frame(dt, hidden, "document.getElementById('q').value") == ""

        # The page's only frame in a closed shadow root, cross-site or of the page's own origin: still counted.
        for which, url in (("denied", "https://denied.test/frame-secret"), ("same", "")):
            await ok(b, "navigate", {"url": f"https://allowed.test/closed-frame?{which}"})
            if which == "denied":
                await frame_target(dt, url)  # attached in a process of its own (the extension holds a session)
            assert "closed shadow" in await fails(b, "screenshot", {}, "policy_denied"), which
