"""Unit tests of the general browser tools' pieces without a browser: the domain policy (and its parity with the
extension's copy, run under node), safe mode, configuration, argument models, key combinations, the tab's event
state, error translation, image sizes."""

from __future__ import annotations

import base64
import json
import os
import re
import struct
import subprocess
from pathlib import Path
from typing import Any, get_args

import attrs
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.browser.process import exit_reason, log_tail
from actors.browser_tools.actor import tool_name
from actors.browser_tools.interaction import key_events, parse_combo
from actors.browser_tools.page import page_error
from actors.browser_tools.policy import CAPABILITY, Policy, normalize_url, url_allowed
from actors.browser_tools.reading import MAX_SHOT_SIDE, _capped, image_size
from actors.browser_tools.refusals import extension_error
from actors.browser_tools.tab import (
    CONSOLE_KEEP,
    ERROR_MAX,
    FIELD_MAX,
    NETWORK_KEEP,
    SOURCE_MAX,
    TEXT_MAX,
    URL_MAX,
    ConsoleBuffer,
    NetworkBuffer,
    ToolTab,
)
from actors.mcp_front.tools import TOOLS
from actors.protocol import browser_tools as bt
from actors.protocol.relay import TabEvent, TabEventKind
from actors.relay.wire import oversized
from supervisor.app.providers import provider_tables
from supervisor.config import CONFIG_FILE_MAX_BYTES, Config, host_pattern, load, read_config_file
from supervisor.errors import (
    BadExtensionReply,
    CdpError,
    ConfigError,
    DevtoolsOpen,
    ElementNotFound,
    EvalDisabled,
    InvalidArgument,
    MutationsDisabled,
    NoTarget,
    PolicyDenied,
)

from .conftest import REPO, requires_node, run_extension_js, serve_command

# (patterns, url, allowed): the one table both implementations must agree on.
URL_CASES: list[tuple[list[str], str, bool]] = [
    ([], "https://example.com/", False),
    ([], "about:blank", True),
    ([], "about:blank#x", True),
    (["example.com"], "https://example.com/a?b#c", True),
    (["example.com"], "http://example.com:8080/", True),
    (["example.com"], "https://EXAMPLE.com/", True),
    (["example.com"], "https://example.com./", True),
    (["example.com"], "https://www.example.com/", False),
    (["example.com"], "https://example.com.evil.test/", False),
    (["example.com"], "https://evilexample.com/", False),
    (["example.com"], "https://example.com@evil.test/", False),
    (["example.com"], "https://user:pw@example.com/", True),
    (["example.com"], "ftp://example.com/", False),
    (["example.com"], "file:///etc/passwd", False),
    (["example.com"], "javascript:alert(1)", False),
    (["example.com"], "data:text/html,hi", False),
    (["example.com"], "chrome://settings", False),
    (["example.com"], "not a url", False),
    (["*.example.com"], "https://example.com/", True),
    (["*.example.com"], "https://a.b.example.com/", True),
    (["*.example.com"], "https://notexample.com/", False),
    (["*"], "https://anything.test/", True),
    (["*"], "file:///etc/passwd", False),
    (["127.0.0.1"], "http://127.0.0.1:8766/x", True),
    (["[::1]"], "http://[::1]:80/", True),
    (["xn--bcher-kva.de"], "https://xn--bcher-kva.de/", True),
    (["a.test", "b.test"], "https://b.test/", True),
]


@pytest.mark.parametrize(("patterns", "url", "allowed"), URL_CASES)
def test_policy_matches_urls(patterns: list[str], url: str, allowed: bool) -> None:
    assert url_allowed(tuple(patterns), url) is allowed


@requires_node
def test_extension_policy_agrees_with_the_server(tmp_path: Path) -> None:
    # extension/policy.js is an ES module without chrome.*: node runs it as it is (copied to .mjs).
    (tmp_path / "policy.mjs").write_text((REPO / "extension" / "policy.js").read_text())
    (tmp_path / "run.mjs").write_text(
        "import { parsePolicy, urlAllowed } from './policy.mjs';\n"
        f"const cases = {json.dumps(URL_CASES)};\n"
        "console.log(JSON.stringify(cases.map(([hosts, url]) => urlAllowed(parsePolicy({hosts}), url))));\n"
        "const bad = ['*x', 'a b', 'https://x', 'x:1', 'x/y', ''];\n"
        "console.log(JSON.stringify(bad.map((p) => parsePolicy({hosts: [p]}))));\n")
    out = subprocess.run(["node", str(tmp_path / "run.mjs")], capture_output=True, text=True, check=True, timeout=30)
    verdicts, refused = out.stdout.splitlines()
    assert json.loads(verdicts) == [allowed for _, _, allowed in URL_CASES]
    assert json.loads(refused) == [None] * 6  # the extension refuses what the config refuses


@requires_node
def test_the_page_script_judges_urls_as_the_extension_and_the_server_do(tmp_path: Path) -> None:
    """page_tree.js keeps its own copy of the host match (it runs inside the page, where nothing can be imported):
    run on the same cases, it must agree. It judges http(s) URLs only (null for the rest: about:blank is judged by
    its origin there), so a refused non-http URL is null."""
    source = (REPO / "actors" / "browser_tools" / "page_tree.js").read_text()
    start = source.index("  function hostAllowed(host) {")
    end = source.index("  /** May the tools read this document?")
    (tmp_path / "run.mjs").write_text(
        f"const cases = {json.dumps(URL_CASES)};\n"
        "console.log(JSON.stringify(cases.map(([hosts, url]) => {\n"
        "  const HOSTS = hosts.map((h) => String(h).toLowerCase());\n"
        f"{source[start:end]}\n"
        "  return httpAllowed(url);\n"
        "})));\n")
    out = subprocess.run(["node", str(tmp_path / "run.mjs")], capture_output=True, text=True, check=True, timeout=30)
    expected = [allowed if url.startswith(("http:", "https:")) else None for _, url, allowed in URL_CASES]
    assert json.loads(out.stdout) == expected


@pytest.mark.parametrize("raw", ["https://x.com", "x.com:80", "x.com/a", "*x.com", "", "a b", "*.*.x"])
def test_bad_host_patterns_are_config_errors(raw: str) -> None:
    with pytest.raises(ValueError, match="host"):
        host_pattern(raw)


def test_allowed_domains_from_every_source(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('allowed-domains = ["Docs.Example.com", "*.example.org"]\nenable_mutations = true\n')
    c = load({}, env={}, config_file=cfg)
    assert c.allowed_domains == ("docs.example.com", "*.example.org") and c.enable_mutations
    c = load({}, env={"AI_BRIDGE_ALLOWED_DOMAINS": "a.test, *.b.test  c.test", "AI_BRIDGE_UNSAFE_ENABLE_EVAL": "1"},
             config_file=cfg)
    assert c.allowed_domains == ("a.test", "*.b.test", "c.test") and c.unsafe_enable_eval
    assert load({"allowed_domains": ["only.test"]}, env={}, config_file=cfg).allowed_domains == ("only.test",)
    assert load({"allowed_domains": []}, env={}, config_file=cfg).allowed_domains == ("docs.example.com",
                                                                                      "*.example.org")
    with pytest.raises(ConfigError, match="AI_BRIDGE_ALLOWED_DOMAINS"):
        load({}, env={"AI_BRIDGE_ALLOWED_DOMAINS": "https://x.test"}, config_file=tmp_path / "none.toml")
    assert Config().allowed_domains == () and not Config().enable_mutations and not Config().unsafe_enable_eval


def test_cli_flags_reach_the_config(tmp_path: Path) -> None:
    from supervisor.app.cli import _config, parser

    (tmp_path / "empty.toml").write_text("")
    args = parser().parse_args(["serve", "--enable-mutations", "--unsafe-enable-eval", "--allow-domain", "a.test",
                                "--allow-domain", "*.b.test", "--config", str(tmp_path / "empty.toml")])
    c = _config(args)
    assert (c.enable_mutations, c.unsafe_enable_eval, c.allowed_domains) == (True, True, ("a.test", "*.b.test"))


def test_the_extension_allows_exactly_the_cdp_methods_the_tools_send() -> None:
    from supervisor.constants import SHARED

    sent: set[str] = set()
    for path in (REPO / "actors" / "browser_tools").glob("*.py"):
        if path.name == "tab.py":
            continue  # event names, not commands
        sent |= set(re.findall(r'"((?:Page|Runtime|Input|Network|DOM|Emulation|Target|Fetch)\.[a-zA-Z]+)"',
                               path.read_text()))
    assert sent == SHARED.general_cdp_methods


# --- safe mode -------------------------------------------------------------------------------------------------------


def test_every_request_has_a_capability() -> None:
    assert set(CAPABILITY) == set(get_args(bt.BrowserToolsRequest))


def test_safe_mode_refuses_with_the_flag() -> None:
    safe = Policy(("a.test",), mutations=False, eval=False)
    target = bt.Target(selector="#x")
    for msg in (bt.Click(target), bt.Navigate("https://a.test/"), bt.TabNew(), bt.FillForm(()), bt.Scroll(),
                bt.HandleDialog(accept=True)):
        with pytest.raises(MutationsDisabled) as info:
            safe.require(msg, tool_name(msg))
        assert "--enable-mutations" in str(info.value)
    with pytest.raises(EvalDisabled, match="--unsafe-enable-eval"):
        safe.require(bt.Eval("1"), "eval")
    for msg in (bt.Snapshot(), bt.GetText(), bt.TabsList(), bt.HandleDialog(accept=False), bt.Query(bt.QueryWhat.COUNT,
                                                                                                   target)):
        safe.require(msg, tool_name(msg))
    # Mutations do not imply eval, nor eval mutations.
    with pytest.raises(EvalDisabled):
        Policy((), mutations=True, eval=False).require(bt.Eval("1"), "eval")
    with pytest.raises(MutationsDisabled):
        Policy((), mutations=False, eval=True).require(bt.Click(target), "click")


def test_denials_name_the_host_and_the_flag() -> None:
    p = Policy(("a.test",), mutations=True, eval=False)
    p.check_url("https://a.test/x", "tab 1")
    with pytest.raises(PolicyDenied) as info:
        p.check_url("https://www.evil.test/x", "tab 1")
    assert "evil.test" in info.value.message and "--allow-domain evil.test" in (info.value.hint or "")
    with pytest.raises(PolicyDenied, match="http"):
        p.check_url("file:///etc/passwd", "tab 1")


def test_navigation_targets_are_normalized() -> None:
    assert normalize_url("example.com/x") == "https://example.com/x"
    assert normalize_url(" https://a.test/ ") == "https://a.test/"
    assert normalize_url("about:blank") == "about:blank"
    for bad in ("https://a.test\\@b.test/", "https://a.test/ x", "https://a.test/\x00", ""):
        with pytest.raises(InvalidArgument):
            normalize_url(bad)


def test_tool_names() -> None:
    assert tool_name(bt.TypeText(bt.Target(ref="e1"), "x")) == "type"
    assert tool_name(bt.SelectOption(bt.Target(ref="e1"), ("a",))) == "select_option"
    assert tool_name(bt.History(bt.HistoryStep.BACK)) == "back"
    assert tool_name(bt.GetText(bt.TextKind.MARKDOWN)) == "read_as_markdown"


# --- arguments -----------------------------------------------------------------------------------------------------


ELEMENT_TOOLS = sorted(name for name, t in TOOLS.items() if "ref" in t.args.tool_schema()["properties"])


def test_element_tools_are_the_expected_ones() -> None:
    assert set(ELEMENT_TOOLS) == {"click", "type", "press", "hover", "scroll", "select_option", "drag", "snapshot",
                                  "screenshot", "get_text", "get_html", "read_as_markdown", "extract_links",
                                  "query", "wait_for", "upload_file", "download"}


@pytest.mark.parametrize("name", ELEMENT_TOOLS)
def test_element_tools_take_exactly_one_of_selector_or_ref(name: str) -> None:
    tool = TOOLS[name]
    base: dict[str, Any] = {"click": {}, "type": {"text": "x"}, "press": {"key": "a"}, "hover": {},
                            "scroll": {}, "select_option": {"values": ["a"]}, "drag": {"to_ref": "e2"},
                            "snapshot": {}, "screenshot": {}, "get_text": {}, "get_html": {},
                            "read_as_markdown": {}, "extract_links": {}, "query": {"what": "count"},
                            "wait_for": {}, "upload_file": {"paths": ["README.md"]}, "download": {}}[name]
    with pytest.raises(InvalidArgument, match="selector"):
        tool.parse({**base, "selector": "#a", "ref": "e1"})
    tool.parse({**base, "ref": "e1"})
    tool.parse({**base, "selector": "#a"})
    with pytest.raises(InvalidArgument):
        tool.parse({**base, "ref": "#a"})  # not a ref


def test_argument_rules_across_fields() -> None:
    with pytest.raises(InvalidArgument, match="exactly one condition"):
        TOOLS["wait_for"].parse({"text": "a", "selector": "#b"})
    with pytest.raises(InvalidArgument, match="find_text needs text"):
        TOOLS["query"].parse({"what": "find_text"})
    with pytest.raises(InvalidArgument, match="needs a selector or ref"):
        TOOLS["query"].parse({"what": "styles"})
    with pytest.raises(InvalidArgument, match="mode element"):
        TOOLS["screenshot"].parse({"mode": "element"})
    with pytest.raises(InvalidArgument, match="to_selector"):
        TOOLS["drag"].parse({"ref": "e1"})
    with pytest.raises(InvalidArgument, match="each field"):
        TOOLS["fill_form"].parse({"fields": [{"value": "x"}]})
    with pytest.raises(InvalidArgument, match="finite"):
        TOOLS["scroll"].parse({"delta_y": float("nan")})
    args = TOOLS["screenshot"].parse({"ref": "e3"})
    assert args.request().mode is bt.ShotMode.ELEMENT  # type: ignore[attr-defined]
    assert TOOLS["tab_new"].args.tool_schema()["properties"].keys() == {"url", "wait_until", "timeout_s"}


def test_tool_annotations_and_descriptions() -> None:
    for name in ("snapshot", "screenshot", "get_text", "get_html", "read_as_markdown", "extract_links", "query",
                 "console_logs", "network_log", "tabs_list"):
        t = TOOLS[name]
        assert t.annotations.read_only and t.annotations.open_world, name
        assert "untrusted" in t.description, name
    for name in ("click", "type", "fill_form", "navigate", "tab_new", "tab_close", "eval"):
        assert not TOOLS[name].annotations.read_only, name
        assert "--enable-mutations" in TOOLS[name].description or "--unsafe-enable-eval" in TOOLS[name].description


# --- keys ------------------------------------------------------------------------------------------------------------


def test_key_combinations() -> None:
    ctrl_a = key_events("Control+A")
    assert [e[1]["type"] for e in ctrl_a] == ["rawKeyDown", "rawKeyDown", "keyUp", "keyUp"]
    assert ctrl_a[1][1]["key"] == "a" and ctrl_a[1][1]["modifiers"] == 2 and "text" not in ctrl_a[1][1]
    enter = key_events("Enter")
    assert enter[0][1] == {"type": "keyDown", "key": "\r", "code": "Enter", "windowsVirtualKeyCode": 13,
                           "modifiers": 0, "text": "\r", "unmodifiedText": "\r"}
    shift_b = key_events("Shift+b")
    assert shift_b[1][1]["text"] == "B" and shift_b[1][1]["modifiers"] == 8
    assert parse_combo("Control++")[1].key == "+"
    for bad in ("Hyper+A", "NotAKey"):
        with pytest.raises(InvalidArgument):
            key_events(bad)


# --- the tab's event state -------------------------------------------------------------------------------------------


def cdp(method: str, **params: Any) -> TabEvent:
    return TabEvent(TabEventKind.CDP, 1, method, params)


async def test_a_dialog_interrupts_calls_in_flight() -> None:
    tab = ToolTab(1, bt.TabOwner.TOOLS)
    with trio.CancelScope() as scope:
        tab.scopes.add(scope)
        tab.on_event(cdp("Page.javascriptDialogOpening", type="confirm", message="Sure?", url="https://a.test/"))
        await trio.sleep(10)  # a CDP command hung on the dialog
    assert scope.cancelled_caught
    assert tab.dialog == bt.DialogInfo(bt.DialogType.CONFIRM, "Sure?", "", "https://a.test/")
    tab.on_event(cdp("Page.javascriptDialogClosed", result=False))
    assert tab.dialog is None


def test_navigation_events_track_the_document() -> None:
    tab = ToolTab(1, bt.TabOwner.TOOLS, url="https://a.test/")
    tab.world = 7
    tab.on_event(cdp("Page.frameNavigated", frame={"id": "F", "parentId": "P", "url": "https://evil.test/"}))
    assert tab.url == "https://a.test/" and tab.world == 7  # a subframe changes nothing
    tab.on_event(cdp("Page.frameNavigated", frame={"id": "F", "loaderId": "L1", "url": "chrome-error://x/",
                                                    "unreachableUrl": "https://denied.test/"}, type="Navigation"))
    assert tab.url == "https://denied.test/" and tab.world is None and tab.loaders == ["L1"] and not tab.load
    tab.on_event(cdp("Page.loadEventFired", timestamp=1.0))
    assert tab.load and tab.dcl
    tab.on_event(TabEvent(TabEventKind.POLICY_BLOCKED, 1, params={"url": "https://denied.test/x"}))
    assert tab.blocked == ["https://denied.test/x"]
    tab.on_event(TabEvent(TabEventKind.TAB_CLOSED, 1))
    assert tab.gone


def test_buffers_are_bounded() -> None:
    c = ConsoleBuffer()
    for i in range(CONSOLE_KEEP + 5):
        c.add("log", f"m{i}", "", float(i))
    assert len(c.entries) == CONSOLE_KEEP and c.dropped == 5 and c.entries[0].text == "m5"
    n = NetworkBuffer()
    for i in range(NETWORK_KEEP + 3):
        n.on_event("Network.requestWillBeSent", {"requestId": str(i), "request": {"url": f"https://a.test/{i}",
                                                                                   "method": "GET"}})
    assert len(n.requests) == NETWORK_KEEP and n.dropped == 3 and n.inflight() == NETWORK_KEEP
    n.on_event("Network.requestWillBeSent", {"requestId": "r", "request": {"url": "https://a.test/a"}})
    n.on_event("Network.requestWillBeSent", {"requestId": "r", "request": {"url": "https://a.test/b"},
                                             "redirectResponse": {"status": 302}})
    n.on_event("Network.responseReceived", {"requestId": "r", "response": {"status": 200, "mimeType": "text/html"}})
    n.on_event("Network.loadingFinished", {"requestId": "r", "encodedDataLength": 10})
    last_two = list(n.entries())[-2:]
    assert [(e.url, e.status) for e in last_two] == [("https://a.test/a", 302), ("https://a.test/b", 200)]


def test_the_current_page_begins_at_its_document_request() -> None:
    """network_log shows the current document's requests by default: from its navigation request (Chrome's request
    id for it is the loader id the commit names), redirect hops included."""
    tab = ToolTab(1, bt.TabOwner.TOOLS)
    tab.network = NetworkBuffer()

    def sent(rid: str, url: str, **more: Any) -> None:
        tab.on_event(cdp("Network.requestWillBeSent", requestId=rid, request={"url": url}, **more))

    sent("1", "https://a.test/")
    sent("2", "https://a.test/app.js")
    sent("L2", "https://a.test/old")
    sent("L2", "https://a.test/new", redirectResponse={"status": 301})
    sent("3", "https://a.test/late.js")  # the leaving page's, after the navigation began
    tab.on_event(cdp("Page.frameNavigated", frame={"id": "F", "url": "https://a.test/new", "loaderId": "L2"}))
    by_url = {e.url: e.id for e in tab.network.entries()}
    assert tab.network.page_from == by_url["https://a.test/old"] == 3
    # A frame's commit or a same-document navigation is the same page.
    tab.on_event(cdp("Page.frameNavigated", frame={"id": "G", "parentId": "F", "url": "https://b.test/",
                                                   "loaderId": "4"}))
    tab.on_event(cdp("Page.navigatedWithinDocument", frameId="F", url="https://a.test/new#x"))
    assert tab.network.page_from == 3
    # A document whose request the log does not hold (a denied one's, or one from before the log): from the next.
    tab.on_event(cdp("Page.frameNavigated", frame={"id": "F", "url": "about:blank", "loaderId": "L9"}))
    assert tab.network.page_from == tab.network.next_id == 6


def test_console_events_become_entries() -> None:
    tab = ToolTab(1, bt.TabOwner.TOOLS)
    tab.on_event(cdp("Runtime.consoleAPICalled", type="log", args=[{"type": "string", "value": "x"}]))
    assert tab.console is None  # not collecting before console_logs
    tab.console = ConsoleBuffer()
    tab.on_event(cdp("Runtime.consoleAPICalled", type="warning", timestamp=5.0, args=[
        {"type": "string", "value": "n ="}, {"type": "number", "value": 3}, {"type": "boolean", "value": True},
        {"type": "object", "description": "Object"}],
        stackTrace={"callFrames": [{"url": "https://a.test/app.js", "lineNumber": 9}]}))
    tab.on_event(cdp("Runtime.exceptionThrown", exceptionDetails={"text": "Uncaught", "exception": {
        "description": "Error: boom"}, "url": "https://a.test/", "lineNumber": 0}))
    first, second = tab.console.entries
    assert (first.level, first.text, first.source) == ("warning", "n = 3 true Object", "https://a.test/app.js:10")
    assert (second.level, second.text) == ("exception", "Error: boom")


# --- errors --------------------------------------------------------------------------------------------------------


def test_extension_refusals_become_typed_errors() -> None:
    err = extension_error(5, CdpError("cdp.send failed: tab 5 is outside the allowed domains: https://x.test/a",
                                      ext_code="policy_denied"))
    assert isinstance(err, PolicyDenied) and "x.test" in err.message and "--allow-domain x.test" in (err.hint or "")
    assert isinstance(extension_error(5, CdpError("Another debugger is already attached", ext_code="devtools_open")),
                      DevtoolsOpen)
    assert isinstance(extension_error(5, CdpError("leased by another server", ext_code="tab_busy")), NoTarget)
    old = extension_error(-1, CdpError("tabs.query failed: urlPatterns must be an array of strings",
                                       ext_code="bad_params"))
    assert isinstance(old, BadExtensionReply) and "Reload the ai-bridge extension" in (old.hint or "")
    plain = CdpError("boom", ext_code="cdp_error")
    assert extension_error(5, plain) is plain


def test_page_errors_say_what_to_do() -> None:
    by_ref = page_error({"error": {"code": "element_not_found", "message": "gone"}}, {"target": {"ref": "e1"}})
    assert isinstance(by_ref, ElementNotFound) and "snapshot" in (by_ref.hint or "")
    by_selector = page_error({"error": {"code": "element_not_found", "message": "none"}},
                             {"target": {"selector": "#a"}}, waited_s=2)
    assert "selector" in (by_selector.hint or "") and "waited 2 s" in by_selector.message


# --- images --------------------------------------------------------------------------------------------------------


def test_image_sizes() -> None:
    png = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 640, 480) + b"\x08\x06\0\0\0"
    assert image_size(base64.b64encode(png).decode(), bt.ImageFormat.PNG) == (640, 480)
    jpeg = (b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0" + b"\0" * 9
            + b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 300, 400) + b"\0" * 10)
    assert image_size(base64.b64encode(jpeg).decode(), bt.ImageFormat.JPEG) == (400, 300)


# --- every size is capped where it enters (issue 26.3) ----------------------------------------------------------------

LONG = st.text(max_size=30) | st.builds(lambda c, n: c * n, st.characters(), st.integers(0, 200_000))


@settings(max_examples=60, deadline=None)
@given(level=LONG, text=LONG, url=LONG, line=st.none() | st.floats(allow_nan=True, allow_infinity=True))
def test_console_entries_are_capped_field_by_field(level: str, text: str, url: str, line: float | None) -> None:
    tab = ToolTab(1, bt.TabOwner.TOOLS)
    tab.console = ConsoleBuffer()
    params: dict[str, Any] = {"type": level, "args": [{"type": "string", "value": text}] * 3,
                              "stackTrace": {"callFrames": [{"url": url, "lineNumber": line}]}}
    tab.on_event(TabEvent(TabEventKind.CDP, 1, "Runtime.consoleAPICalled", params))
    tab.on_event(TabEvent(TabEventKind.CDP, 1, "Runtime.exceptionThrown",
                          {"exceptionDetails": {"text": text, "url": url, "lineNumber": line}}))
    for entry in tab.console.entries:
        assert len(entry.text) <= TEXT_MAX + 40 and len(entry.source) <= SOURCE_MAX + 60
        assert len(entry.level) <= FIELD_MAX + 40
        if len(text) > TEXT_MAX:
            assert "…[truncated" in entry.text


@settings(max_examples=60, deadline=None)
@given(method=LONG, url=LONG, status=st.none() | st.integers() | st.floats(), status_text=LONG, mime=LONG,
       error=LONG, size=st.none() | st.floats() | st.integers(), t=st.none() | st.floats())
def test_network_entries_are_capped_field_by_field(method: str, url: str, status: Any, status_text: str, mime: str,
                                                   error: str, size: Any, t: Any) -> None:
    buf = NetworkBuffer()
    buf.on_event("Network.requestWillBeSent", {"requestId": "1", "request": {"url": "https://a.test/" + url,
                                                                            "method": method}, "type": mime,
                                               "timestamp": 1.0})
    buf.on_event("Network.responseReceived", {"requestId": "1", "response": {"status": status,
                                                                            "statusText": status_text,
                                                                            "mimeType": mime}})
    buf.on_event("Network.requestWillBeSent", {"requestId": "1", "request": {"url": url},
                                               "redirectResponse": {"status": status, "statusText": status_text}})
    buf.on_event("Network.loadingFailed", {"requestId": "1", "errorText": error, "timestamp": t})
    buf.on_event("Network.loadingFinished", {"requestId": "1", "encodedDataLength": size, "timestamp": t})
    for e in buf.entries():
        assert len(e.url) <= URL_MAX + 40 and len(e.method) <= FIELD_MAX + 40
        assert len(e.status_text) <= FIELD_MAX + 40 and len(e.mime_type) <= FIELD_MAX + 40
        assert len(e.resource_type) <= FIELD_MAX + 40 and len(e.error) <= ERROR_MAX + 60
        assert e.status is None or 0 < e.status < 1000
        json.dumps(e.as_json(), allow_nan=False)  # every number finite: the result is valid JSON


@settings(max_examples=200, deadline=None)
@given(w=st.floats(-1e12, 1e12), h=st.floats(-1e12, 1e12))
def test_screenshot_clips_are_capped_both_ways(w: float, h: float) -> None:
    clip, cut = _capped({"x": 0, "y": 0, "width": w, "height": h, "scale": 1})
    assert 1 <= float(str(clip["width"])) <= MAX_SHOT_SIDE and 1 <= float(str(clip["height"])) <= MAX_SHOT_SIDE
    assert cut is (w > MAX_SHOT_SIDE or h > MAX_SHOT_SIDE)


@settings(max_examples=100, deadline=None)
@given(kind=st.sampled_from(["event", "result", "error", "ping"]), fill=st.integers(0, 3000),
       wide=st.booleans())
def test_oversized_frames_are_named_for_the_log(kind: str, fill: int, wide: bool) -> None:
    limit = 1000
    frame = json.dumps({"type": kind, "event": "cdp", "params": {"x": ("é" if wide else "x") * fill}},
                       ensure_ascii=False)
    got = oversized(frame, limit)
    if len(frame.encode()) <= limit:
        assert got is None
    else:
        assert got is not None and f"({kind} cdp)" in got and str(len(frame.encode())) in got
    assert (oversized(frame.encode(), limit) is None) == (len(frame.encode()) <= limit)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.integers(0, 3000), limit=st.integers(1, 2000))
def test_config_files_must_be_small_regular_files(tmp_path: Path, size: int, limit: int) -> None:
    path = tmp_path / "settings.toml"
    path.write_text("#" * size)
    if size <= limit:
        assert read_config_file(path, "config file", limit) == "#" * size
    else:
        with pytest.raises(ConfigError, match=f"more than the {limit}"):
            read_config_file(path, "config file", limit)


def test_config_files_that_are_not_regular_files_are_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # nobody writes: reading it would block forever
    with pytest.raises(ConfigError, match="not a regular file \\(a FIFO\\)"):
        read_config_file(fifo, "providers file")
    with pytest.raises(ConfigError, match="a character device"):
        read_config_file(Path("/dev/zero"), "providers file")
    with pytest.raises(ConfigError, match="a directory"):
        read_config_file(tmp_path, "config file")
    with pytest.raises(FileNotFoundError):
        read_config_file(tmp_path / "none", "config file")
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"a = '\xff'")
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_config_file(bad, "config file")
    with pytest.raises(ConfigError, match="a FIFO"):
        load({}, env={}, config_file=fifo)
    big = tmp_path / "providers.toml"
    big.write_text("#" * (CONFIG_FILE_MAX_BYTES + 1))
    with pytest.raises(ConfigError, match="more than"):
        provider_tables(attrs.evolve(Config(), providers_file=big))


@requires_node
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(0, 6 << 20), min_size=1, max_size=4), wide=st.booleans())
def test_the_extension_cuts_events_to_fit_one_frame(tmp_path: Path, sizes: list[int], wide: bool) -> None:
    # extension/limits.js (and the shared.js it reads) as ES modules under node.
    got = json.loads(run_extension_js(tmp_path, ("limits.js", "shared.js"),
        "import { capEvent, EVENT_BUDGET_BYTES } from './limits.js';\n"
        f"const sizes = {json.dumps(sizes)}; const ch = {json.dumps('é' if wide else 'x')};\n"
        "const params = { args: sizes.map((n, i) => ({ type: 'string', value: ch.repeat(n), i })) };\n"
        "const out = capEvent(params);\n"
        "const bytes = new TextEncoder().encode(JSON.stringify(out)).length;\n"
        "const before = new TextEncoder().encode(JSON.stringify(params)).length;\n"
        "console.log(JSON.stringify({ bytes, before, budget: EVENT_BUDGET_BYTES, same: out === params,\n"
        "  marked: JSON.stringify(out).includes('…[truncated '), n: out.args?.length ?? -1 }));\n"))
    assert got["bytes"] <= got["budget"]
    if got["before"] <= got["budget"]:
        assert got["same"]
    else:
        assert got["marked"] and got["n"] == len(sizes)  # cut strings, the event's shape kept


@requires_node
def test_general_tab_events_cut_every_long_string(tmp_path: Path) -> None:
    out = json.loads(run_extension_js(tmp_path, ("limits.js", "shared.js"),
        "import { capEvent, GENERAL_STRING_MAX_CHARS as M } from './limits.js';\n"
        "const p = { stackTrace: { callFrames: [{ url: 'u'.repeat(1 << 20), lineNumber: 3 }] }, args: ['short'] };\n"
        "const out = capEvent(p, undefined, M);\n"
        "const small = { a: 'x'.repeat(100) };\n"
        "console.log(JSON.stringify({ len: out.stackTrace.callFrames[0].url.length, line: out.stackTrace"
        ".callFrames[0].lineNumber, args: out.args, same: capEvent(small, undefined, M) === small, M,"
        " provider: capEvent(p) === p }));\n", timeout_s=30))
    assert out["M"] < out["len"] < out["M"] + 40 and out["line"] == 3 and out["args"] == ["short"]
    assert out["same"] and out["provider"]  # a provider's 1 MB event fits the frame: left whole


def test_a_browser_crash_is_logged_with_its_signal_and_last_lines() -> None:
    assert exit_reason(-6) == "killed by SIGABRT (signal 6, a crash)"
    assert exit_reason(-9) == "killed by SIGKILL (signal 9)"
    assert exit_reason(1) == "exit code 1" and "no exit code" in exit_reason(None)
    assert "signal 99" in exit_reason(-99)
    output = ("[1:1:FATAL:dbus/bus.cc(408)] Failed to connect to the bus\n"
              "[1:1:FATAL:paint_op_buffer.cc(12)] Check failed: width <= 65535\n\n")
    tail = log_tail(output)
    assert "Check failed: width" in tail and "dbus" not in tail
    assert log_tail("") == "(nothing)"
    assert len(log_tail("x" * 5000)) == 300


async def test_an_oversized_event_is_dropped_with_a_log_line_and_the_link_stays(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An extension that sends an event bigger than the 4 MiB frame limit (an older one, or a bug): the server drops
    that frame, says so, and keeps the link and everything pending on it."""
    from actors.protocol.relay import RELAY, LinkStatus, RelayInfo
    from supervisor.app import open_bridge
    from supervisor.constants import SHARED

    from .test_fuzz import RawClient

    cfg = load({"state_dir": str(tmp_path / "state"), "browser": "connect"}, env={},
               config_file=tmp_path / "none.toml")
    async with open_bridge(cfg) as bridge:
        relay = bridge.ref(RELAY)
        info = await relay.call(RelayInfo(), timeout=5)
        client = await RawClient.connect(info.ws_url, SHARED.extension_origin)
        try:
            await client.send(json.dumps({"type": "hello", "token": info.token,
                                          "protocolVersion": SHARED.protocol_version}))
            assert json.loads(await client.receive())["type"] == "welcome"
            since = (await relay.call(LinkStatus(), timeout=5)).since
            huge = {"type": "event", "event": "cdp", "tabId": 1, "method": "Runtime.consoleAPICalled",
                    "params": {"args": [{"type": "string", "value": "é" * (3 << 20)}]}}
            await client.send(json.dumps(huge, ensure_ascii=False))
            await client.send(json.dumps({"type": "ping", "id": 7}))
            with trio.fail_after(20):
                assert json.loads(await client.receive()) == {"type": "pong", "id": 7}
            status = await relay.call(LinkStatus(), timeout=5)
            assert status.connected and status.since == since
        finally:
            await client.aclose()
    assert any("dropped a" in r.getMessage() and "(event cdp)" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("kind", ["zero", "fifo"])
def test_serve_with_a_providers_path_that_is_no_file_is_one_line_and_exit_2(tmp_path: Path, kind: str) -> None:
    path = Path("/dev/zero")
    if kind == "fifo":
        path = tmp_path / "providers.fifo"
        os.mkfifo(path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env.update(AI_BRIDGE_STATE_DIR=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    out = subprocess.run([*serve_command(), "serve", "--providers", str(path)], cwd=REPO, env=env,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a regular file" in lines[0] and str(path) in lines[0], out.stderr
