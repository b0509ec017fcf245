"""The browser link end to end, on real headless Chromium with our real extension: discovery, the relay handshake
and its guards, tab leasing across two servers, reconnection after the service worker stops or the extension
reloads, tabs closed under us, shutdown and crash clean-up, and the inspection tools.

Everything here goes through the real `ai-bridge serve` process (tests/e2e.py). Test-side instruments only act as
a user or an attacker would: DevTools on the launched browser (open/close tabs, stop the extension's worker, run
script in a web page), raw HTTP requests with forged headers, and a raw WebSocket client with its own hello.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import signal
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import trio
from trio_websocket import ConnectionClosed, ConnectionRejected, WebSocketConnection, wrap_client_stream

from .conftest import REPO, find_actor
from .e2e import Bridge, DevTools, open_bridge, requires_chromium
from .fakesites.fixture import FakeSites
from .fakesites.scripting import answer_ref
from .shared_bridge import Lease, OpenShared
from .user_chrome import pair_over_devtools

pytestmark = [requires_chromium, pytest.mark.chromium]

FAST = {"chunks": 4, "intervalMs": 40, "firstTokenMs": 100}
EXT_ID = "dehbpnglmiedeaaddfipmnmhmblajpci"
EXT_ORIGIN = f"chrome-extension://{EXT_ID}"
EXT_VERSION = json.loads((REPO / "extension" / "manifest.json").read_text())["version"]
USE_OPEN_TABS = {"AI_BRIDGE_USE_OPEN_TABS": "true"}  # may drive a tab the user opened


# --- helpers ---------------------------------------------------------------------------------------------------------


async def eventually(probe: Callable[[], Awaitable[Any]], timeout: float, what: str, interval: float = 0.05) -> Any:
    """Poll `probe` until it returns something truthy; return that. The pause grows from `interval` to 0.3 s: a
    probe is a real round trip (a bridge_status call costs the client and the server ~4 ms of CPU), and most waits
    here are for a browser start of a second or two."""
    deadline = trio.current_time() + timeout
    while True:
        got = await probe()
        if got:
            return got
        if trio.current_time() > deadline:
            raise AssertionError(f"not within {timeout:g}s: {what}")
        await trio.sleep(interval)
        interval = min(interval * 1.5, max(interval, 0.3))


async def linked_status(b: Bridge | Lease, timeout: float = 20) -> dict[str, Any]:
    """bridge_status once the extension is connected and the browser actor has noticed."""
    async def probe() -> dict[str, Any] | None:
        st = await b.status()
        return st if st["extension"]["connected"] and st["browser"]["state"] == "connected" else None

    return await eventually(probe, timeout, "extension connected")  # type: ignore[no-any-return]


def discovery_port(b: Bridge | Lease) -> int:
    m = re.search(r"discovery on http://127\.0\.0\.1:(\d+)/mcp-discovery", b.stderr_path.read_text(errors="replace"))
    assert m, "the serve log names no discovery port"
    return int(m.group(1))


def http_get(port: int, path: str = "/mcp-discovery", headers: dict[str, str] | None = None,
             method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """One raw request (http.client sends our Host header verbatim when given)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body
    finally:
        conn.close()


def discovery_info(b: Bridge | Lease) -> dict[str, Any]:
    status, _, body = http_get(discovery_port(b))
    assert status == 200, body
    return json.loads(body)  # type: ignore[no-any-return]


def live_processes(pgid: int) -> list[int]:
    """Non-zombie processes of a process group (the browser leads its own session)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state ppid pgrp ...
        if fields[0] != "Z" and int(fields[2]) == pgid:
            pids.append(int(entry))
    return pids


async def page_eval(dt: DevTools, target_id: str, expression: str) -> Any:
    """Evaluate in a page's main world, awaiting a promise — as the page's own script would run."""
    session = (await dt.send("Target.attachToTarget", {"targetId": target_id, "flatten": True}))["sessionId"]
    try:
        got = await dt.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                 "returnByValue": True}, session)
        return got.get("result", {}).get("value")
    finally:
        await dt.send("Target.detachFromTarget", {"sessionId": session})


async def open_page(dt: DevTools, url: str) -> str:
    target = (await dt.send("Target.createTarget", {"url": url}))["targetId"]

    async def loaded() -> bool:
        # Not the initial about:blank: the page itself, loaded.
        return await dt.evaluate(  # type: ignore[no-any-return]
            target, f"document.readyState === 'complete' && location.href.startsWith({url!r})")

    await eventually(loaded, 15, f"{url} loaded", 0.05)
    return target  # type: ignore[no-any-return]


async def extension_worker(dt: DevTools) -> dict[str, Any] | None:
    targets = (await dt.send("Target.getTargets"))["targetInfos"]
    workers = [t for t in targets if t["type"] == "service_worker" and t["url"].startswith(EXT_ORIGIN + "/")]
    return workers[0] if workers else None


def assert_answers(res: Any, question: str, provider: str) -> dict[str, Any]:
    assert not res.is_error, res.content[0].text
    sc = res.structured_content
    assert sc["provider"] == provider
    assert answer_ref(question) in sc["answer"]
    return sc  # type: ignore[no-any-return]


async def ask(b: Bridge | Lease, provider: str, question: str, **kw: Any) -> dict[str, Any]:
    return assert_answers(await b.call(f"ask_{provider}_web", {"question": question, **kw}), question, provider)


# --- 1. connect and round trip ---------------------------------------------------------------------------------------


async def test_extension_connects_and_round_trips(sites: FakeSites, tmp_path: Path) -> None:
    async with open_bridge(sites, tmp_path) as b:
        st = await linked_status(b)
        ext, browser = st["extension"], st["browser"]
        assert ext["extensionVersion"] == EXT_VERSION
        assert "Chrome/" in ext["userAgent"]
        assert ext["attachedTabs"] == [] and ext["pendingCommands"] == 0
        assert browser["mode"] == "launch" and browser["state"] == "connected"
        assert browser["ownership"] == "launched" and browser["headless"] is True
        assert live_processes(browser["pid"]), "the launched browser is not running"
        assert browser["launchToConnectedS"] > 0
        assert st["pid"] != browser["pid"]
        # Discovery hands out exactly the relay this server listens on.
        info = discovery_info(b)
        assert info["wsUrl"] == f"ws://127.0.0.1:{ext['relayPort']}"
        assert info["project"] == "e2e-project" and info["protocolVersion"] == 1
        assert re.fullmatch(r"[0-9a-f]{64}", info["token"])
        # A command round trip through the extension: tabs.query answered (no tab yet), not a link error.
        res = await b.call("take_cdp_snapshot", {"target": "chatgpt"})
        assert res.is_error and res.structured_content["error"]["code"] == "tab_closed", res.content[0].text
        log = b.log_text()
    assert "extension connected (link" in log
    assert info["token"] not in log  # the token is never logged


# --- 2. tab reuse vs creation ----------------------------------------------------------------------------------------


@pytest.mark.bridge_env(AI_BRIDGE_USE_OPEN_TABS="true")
async def test_existing_provider_tab_is_reused_and_a_missing_one_created(sites: FakeSites,
                                                                         shared_bridge: OpenShared) -> None:
    sites.chatgpt.set_next(**FAST)
    sites.gemini.set_next(**FAST)
    # use_open_tabs: ai-bridge may drive a tab the user opened (by default it opens its own; test_e2e_asks.py).
    async with shared_bridge() as b, b.devtools() as dt:
        # The user already has Gemini open, but no ChatGPT.
        gemini_tab = await open_page(dt, "https://gemini.google.com/app")
        assert await dt.pages("https://chatgpt.com/") == []
        await ask(b, "gemini", "What is 6 times 7?")
        assert [p["targetId"] for p in await dt.pages("https://gemini.google.com/")] == [gemini_tab]  # reused
        await ask(b, "chatgpt", "What is 6 plus 7?")
        created = await dt.pages("https://chatgpt.com/")
        assert len(created) == 1  # opened one
        # Later asks stay in those two tabs.
        await ask(b, "chatgpt", "And 6 minus 7?")
        await ask(b, "gemini", "And 6 minus 7?")
        assert [p["targetId"] for p in await dt.pages("https://chatgpt.com/")] == [created[0]["targetId"]]
        assert [p["targetId"] for p in await dt.pages("https://gemini.google.com/")] == [gemini_tab]
        st = await b.status()
        assert len(st["extension"]["attachedTabs"]) == 2
    assert len({q["conversationId"] for q in sites.gemini.log()}) == 1
    assert len({q["conversationId"] for q in sites.chatgpt.log()}) == 1


# --- 3. two servers, one browser -------------------------------------------------------------------------------------


@asynccontextmanager
async def two_servers(sites: FakeSites, tmp_path: Path, env: dict[str, str] | None = None
                      ) -> AsyncIterator[tuple[Bridge, Bridge, DevTools, dict[str, Any]]]:
    """Server A (project proj-a) launches the browser; server B (proj-b, --browser connect) is then found by the same
    extension once paired with B's key too. Yields both bridges, DevTools on the browser, and B's status once
    linked."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with open_bridge(sites, tmp_path / "a", project="proj-a", env=env) as a, a.devtools() as dt:
        await linked_status(a)
        await pair_over_devtools(dt, tmp_path / "b" / "state")  # as the user would, from `ai-bridge pair`
        async with open_bridge(sites, tmp_path / "b", project="proj-b", extra=("--browser", "connect"),
                               env=env) as b:
            yield a, b, dt, await linked_status(b)


async def test_two_servers_share_one_browser_with_separate_tabs(sites: FakeSites, tmp_path: Path) -> None:
    sites.chatgpt.set_next(**FAST)
    async with two_servers(sites, tmp_path) as (a, b, dt, st_b):
        # The same extension found the second server and connected to it too.
        assert st_b["browser"]["mode"] == "connect" and st_b["browser"]["pid"] is None
        assert discovery_port(a) != discovery_port(b)
        await ask(a, "chatgpt", "A: what is 1 plus 1?")
        await ask(b, "chatgpt", "B: what is 2 plus 2?")
        # Then both at once, each in its own conversation.
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, a, "chatgpt", "A: and 1 plus 3?")
            nursery.start_soon(ask, b, "chatgpt", "B: and 2 plus 3?")
        tabs_a = set((await a.status())["extension"]["attachedTabs"])
        tabs_b = set((await b.status())["extension"]["attachedTabs"])
        assert len(tabs_a) == 1 and len(tabs_b) == 1 and not tabs_a & tabs_b
        assert len(await dt.pages("https://chatgpt.com/")) == 2
        # Each server inspects its own tab only: B's snapshot shows B's conversation, never A's.
        snap_b = (await b.call("take_cdp_snapshot", {"target": "chatgpt"})).structured_content
        assert snap_b["tabId"] in tabs_b
        assert "B: what is 2 plus 2?" in snap_b["text"] and "A: what is" not in snap_b["text"]
        sessions_b = b.sessions()["projects"]["proj-b"]["chatgpt"]
        sessions_a = a.sessions()["projects"]["proj-a"]["chatgpt"]
    assert sessions_a["tabId"] in tabs_a and sessions_b["tabId"] in tabs_b
    conv: dict[str, set[str]] = {}
    for q in sites.chatgpt.log():
        conv.setdefault(q["question"][0], set()).add(q["conversationId"])
    assert len(conv["A"]) == 1 and len(conv["B"]) == 1 and conv["A"] != conv["B"]


async def test_two_servers_asking_at_once_never_share_a_tab(sites: FakeSites, tmp_path: Path) -> None:
    """The user has one ChatGPT tab open and two servers' first asks arrive together: both find that tab, one leases
    it first, and the other opens a tab of its own instead of failing with tab_busy (it used to, 3 runs in 4)."""
    sites.chatgpt.set_next(**FAST)
    async with two_servers(sites, tmp_path, env=USE_OPEN_TABS) as (a, b, dt, _st_b):
        users_tab = await open_page(dt, "https://chatgpt.com/")
        results: dict[str, Any] = {}

        async def one(name: str, bridge: Bridge, q: str) -> None:
            results[name] = await bridge.call("ask_chatgpt_web", {"question": q})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "a", a, "A: what is 4 plus 4?")
            nursery.start_soon(one, "b", b, "B: what is 5 plus 5?")
        tabs_a = set((await a.status())["extension"]["attachedTabs"])
        tabs_b = set((await b.status())["extension"]["attachedTabs"])
        pages = [p["targetId"] for p in await dt.pages("https://chatgpt.com/")]
    assert_answers(results["a"], "A: what is 4 plus 4?", "chatgpt")
    assert_answers(results["b"], "B: what is 5 plus 5?", "chatgpt")
    assert len(tabs_a) == 1 and len(tabs_b) == 1 and not tabs_a & tabs_b
    assert len(pages) == 2 and users_tab in pages  # the user's tab went to one server, the other opened one


# --- 4. discovery refuses web origins --------------------------------------------------------------------------------


async def test_discovery_refuses_web_pages_and_forged_requests(sites: FakeSites, shared_bridge: OpenShared) -> None:
    async with shared_bridge() as b, b.devtools() as dt:
        port = discovery_port(b)
        url = f"http://127.0.0.1:{port}/mcp-discovery"
        status, headers, body = http_get(port)
        assert status == 200 and headers["cache-control"] == "no-store"
        token = json.loads(body)["token"]
        # A script on a web page (the user's chatgpt.com tab) tries to read the token, in CORS and no-cors mode.
        page = await open_page(dt, "https://chatgpt.com/")
        refused_before = b.log_text().count("discovery: refused GET /mcp-discovery")
        cors = await page_eval(dt, page, f"fetch({url!r}).then(r => r.text()).catch(e => 'blocked: ' + e)")
        opaque = await page_eval(dt, page, f"fetch({url!r}, {{mode: 'no-cors'}}).then(async r => "
                                 "[r.type, r.status, await r.text()]).catch(e => 'blocked: ' + e)")
        assert cors == "blocked: TypeError: Failed to fetch", cors  # no CORS header: the page reads nothing
        assert opaque == ["opaque", 0, ""], opaque

        async def refused_lines() -> list[str]:
            lines = [ln for ln in b.log_text().splitlines() if "discovery: refused GET /mcp-discovery" in ln]
            return lines[refused_before:] if len(lines) - refused_before >= 2 else []

        # Both reached the server, which saw a web request and answered 403: the CORS fetch by its Origin, the
        # no-cors one (no Origin sent) by Sec-Fetch-Site.
        page_refusals = await eventually(refused_lines, 5, "the server saw both page requests")
        assert len(page_refusals) == 2 and all("Sec-Fetch-Site='cross-site'" in ln for ln in page_refusals)
        assert "(origin; Origin='https://chatgpt.com'" in page_refusals[0]
        assert "(sec-fetch-site; Origin=None" in page_refusals[1]
        assert all(" WARNING ai_bridge.security: " in ln for ln in page_refusals)
        # Raw requests with forged headers.
        forged = [
            {"Origin": "https://evil.example"},
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "same-site"},
            {"Host": f"evil.example:{port}"},
            {"Host": "127.0.0.1"},  # no port: not ours either
        ]
        answers = [(h, *http_get(port, headers=h)) for h in forged]
        # Preflights and other paths never grant CORS either.
        preflight = http_get(port, method="OPTIONS", headers={
            "Origin": "https://evil.example", "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Private-Network": "true"})
        others = [http_get(port, "/healthz"), http_get(port, "/selftest"),
                  http_get(port, "/healthz", {"Host": f"evil.example:{port}"})]
        # Allowed: the extension's own fetch (no Origin, or its origin) and localhost.
        allowed = [http_get(port, headers={"Origin": EXT_ORIGIN}), http_get(port, headers={"Sec-Fetch-Site": "none"}),
                   http_get(port, headers={"Host": f"localhost:{port}"})]
        log = b.log_text()
    for h, status, _, body in answers:
        assert status == 403, (h, status)
        assert token.encode() not in body and body == b"forbidden\n"
    # Quart answers OPTIONS itself (200, an Allow header): harmless, since no CORS or private-network grant follows.
    assert preflight[0] in (200, 403, 405) and token.encode() not in preflight[2]
    assert [s for s, _, _ in others] == [200, 200, 403]
    for status, _, body in allowed:
        assert status == 200 and json.loads(body)["token"] == token
    every_response_headers = [a[2] for a in answers] + [r[1] for r in (preflight, *others, *allowed)]
    for headers in every_response_headers:
        assert not [k for k in headers if k.startswith("access-control-")], headers  # no CORS/PNA grant, ever
    assert "refused GET /mcp-discovery (host; Origin=None, Host='evil.example:" in log
    assert "(origin; Origin='https://evil.example'" in log


# --- 5. relay handshake guards ---------------------------------------------------------------------------------------


@asynccontextmanager
async def relay_socket(ws_url: str, origin: str = EXT_ORIGIN) -> AsyncIterator[WebSocketConnection]:
    """A raw relay client on a TCP stream we own: trio-websocket's own client leaves its socket open after the server
    closes the connection, so we close it ourselves. A refused upgrade raises (a group holding) ConnectionRejected."""
    url = urlsplit(ws_url)
    assert url.hostname and url.port
    stream = await trio.open_tcp_stream(url.hostname, url.port)
    async with stream, trio.open_nursery() as nursery:
        ws = await wrap_client_stream(nursery, stream, f"{url.hostname}:{url.port}", url.path or "/",
                                      extra_headers=[(b"Origin", origin.encode())])
        try:
            yield ws
        finally:
            with trio.move_on_after(2, shield=True):
                await ws.aclose()
            nursery.cancel_scope.cancel()


async def raw_link(ws_url: str, first: str | None, *, origin: str = EXT_ORIGIN) -> tuple[int | None, Any]:
    """Open the relay as a client would, send `first` (or nothing), and report how it ended:
    (close code — or the HTTP status of a refused upgrade —, frames received before)."""
    frames: list[Any] = []
    code: int | None = None
    try:
        async with relay_socket(ws_url, origin) as ws:
            if first is not None:
                await ws.send_message(first)
            with trio.fail_after(10):
                try:
                    while True:
                        frames.append(json.loads(await ws.get_message()))
                except ConnectionClosed as exc:
                    code = exc.reason.code
    except* ConnectionRejected as rejected:
        leaf: BaseException = rejected
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        assert isinstance(leaf, ConnectionRejected)
        code = -leaf.status_code  # negative: an HTTP status, the upgrade never happened
    return code, frames


def hello(token: str, **over: Any) -> str:
    return json.dumps({"type": "hello", "token": token, "protocolVersion": 1, "extensionVersion": "raw-test",
                       "userAgent": "raw-test-client", **over})


async def test_relay_handshake_rejects_bad_token_version_origin_and_silence(sites: FakeSites,
                                                                            shared_bridge: OpenShared) -> None:
    async with shared_bridge() as b:
        before = (await linked_status(b))["extension"]
        info = discovery_info(b)
        ws_url, token = info["wsUrl"], info["token"]
        wrong = ("0" if token[0] != "0" else "1") + token[1:]
        code, frames = await raw_link(ws_url, hello(wrong))
        assert code == 4401 and frames == []
        code, frames = await raw_link(ws_url, hello(token, protocolVersion=2))
        assert code == 4400 and frames == []
        code, frames = await raw_link(ws_url, json.dumps({"type": "ping", "id": 1}))  # not a hello
        assert code == 4400 and frames == []
        code, _ = await raw_link(ws_url, "not json")
        assert code == 4400
        code, frames = await raw_link(ws_url, None)  # the 5 s themselves: test_relay_wire, on a mock clock
        assert code == 4408 and frames == []
        for origin in ("https://evil.example", "chrome-extension://aaaabbbbccccddddeeeeffffgggghhhh", "null", ""):
            code, frames = await raw_link(ws_url, hello(token), origin=origin)
            assert code == -403 and frames == [], origin
        # None of it disturbed the real extension's connection.
        after = (await b.status())["extension"]
        log = b.log_text()
        whole = b.whole_log_text()  # the token's own boot: the extension connected before this lease
    assert after["connected"] and after["since"] == before["since"] and after["userAgent"] == before["userAgent"]
    assert "hello with a wrong token refused" in log and "no hello within 5 s" in log
    assert "refused WebSocket upgrade from Origin 'https://evil.example'" in log
    assert "extension connected" in whole and token not in whole and wrong not in whole


# --- 6. malformed and oversized frames -------------------------------------------------------------------------------


async def test_malformed_and_oversized_frames_do_not_crash_the_relay(
        sites: FakeSites, shared_bridge: OpenShared) -> None:
    sites.chatgpt.set_next(**FAST)
    async with shared_bridge() as b:
        await linked_status(b)
        info = discovery_info(b)
        replies: list[Any] = []
        async with relay_socket(info["wsUrl"]) as ws:
            await ws.send_message(hello(info["token"]))
            welcome = json.loads(await ws.get_message())
            assert welcome == {"type": "welcome", "serverId": info["serverId"], "protocolVersion": 1}
            # An authenticated connection replaces the extension's (by design, logged as a security event).
            st = await b.status()
            assert st["extension"]["userAgent"] == "raw-test-client"
            for bad in ("{not json", json.dumps({"type": "bogus"}), "[1, 2]", json.dumps({"id": 3})):
                await ws.send_message(bad)
                with trio.fail_after(5):
                    replies.append(json.loads(await ws.get_message()))
            await ws.send_message(json.dumps({"type": "ping", "id": 77}))
            with trio.fail_after(5):
                pong = json.loads(await ws.get_message())
            assert pong == {"type": "pong", "id": 77}  # still open and served after 4 bad frames
            # A frame over the 4 MiB limit is dropped with a log line; the link stays and serves the next frame.
            await ws.send_message(json.dumps({"type": "result", "id": 1, "result": {"x": "y" * (5 << 20)}}))
            await ws.send_message(json.dumps({"type": "ping", "id": 78}))
            with trio.fail_after(10):
                assert json.loads(await ws.get_message()) == {"type": "pong", "id": 78}
            try:  # past what the transport takes at all (16 MiB): closed with 1009
                await ws.send_message(json.dumps({"type": "result", "id": 1, "result": {"x": "y" * (17 << 20)}}))
                with trio.fail_after(10):
                    while True:
                        await ws.get_message()
            except ConnectionClosed as exc:
                closed = exc.reason.code
        assert closed == 1009
        for r in replies:
            assert r["type"] == "error" and r["id"] is None and r["error"]["code"] == "bad_frame", r
        st = await b.status()
        relay = find_actor(st, "relay")
        assert b.restarts(st, "relay") == 0 and relay["state"] == "running", relay
        assert b.restarts(st, "mcp_front") == 0
        # The real extension backs off (4409 told it it was replaced), then reconnects by itself; asks work again.
        await ask(b, "chatgpt", "After the storm: what is 3 plus 4?")
        st = await linked_status(b)
        log = b.log_text()
    assert st["extension"]["userAgent"] != "raw-test-client"
    assert b.restarts(st, "relay") == 0
    assert "replaces" in log and "crashed" not in log and "over the 4194304-byte limit" in log


# --- 7. the service worker stops, the extension reloads --------------------------------------------------------------


@pytest.mark.parametrize("how", ["worker_stopped", "extension_reloaded"])
async def test_extension_restart_mid_session_reconnects(sites: FakeSites, tmp_path: Path, how: str) -> None:
    sites.chatgpt.set_next(**FAST)
    # Extensions.loadUnpacked (DevTools) needs this flag; it is what "reload" / "Load unpacked" in
    # chrome://extensions does. (chrome.runtime.reload() from the worker leaves a --load-extension extension
    # unloaded in this Chromium: its pages show chrome-error://, so it cannot stand in for a reload.)
    extra = ("--browser-arg=--enable-unsafe-extension-debugging",)
    async with open_bridge(sites, tmp_path, extra=extra) as b, b.devtools() as dt:
        sc = await ask(b, "chatgpt", "What is 8 plus 9?")
        before = await linked_status(b)
        worker = await extension_worker(dt)
        assert worker is not None
        if how == "worker_stopped":
            assert (await dt.send("Target.closeTarget", {"targetId": worker["targetId"]}))["success"]
        else:
            got = await dt.send("Extensions.loadUnpacked", {"path": before["browser"]["extensionDir"]})
            assert got["id"] == EXT_ID

        async def gone() -> bool:
            return not (await b.status())["extension"]["connected"]

        await eventually(gone, 10, "the link dropped")
        if how == "worker_stopped" and await extension_worker(dt) is None:
            # A stopped worker stays stopped until an event wakes it: Chrome's alarm (≤ 30 s), or any tab event —
            # here the user opening a tab. (Often an event of the provider tab has woken it already.)
            await dt.send("Target.createTarget", {"url": "about:blank"})
        after = await linked_status(b, timeout=20)
        assert after["extension"]["since"] != before["extension"]["since"]
        new_worker = await extension_worker(dt)
        assert new_worker is not None and new_worker["targetId"] != worker["targetId"]
        sc2 = await ask(b, "chatgpt", "And 8 plus 10?")
        st = await b.status()
        pages = await dt.pages("https://chatgpt.com/")
    assert sc2["url"] == sc["url"]  # the same conversation goes on ...
    assert len(pages) == 1  # ... in the same tab, no duplicate
    assert find_actor(st, "relay")["restarts"] == 0 and find_actor(st, "chatgpt")["restarts"] == 0
    assert [q["question"] for q in sites.chatgpt.log()] == ["What is 8 plus 9?", "And 8 plus 10?"]


async def test_console_drop_extension_then_it_reconnects(sites: FakeSites, tmp_path: Path) -> None:
    """The console's fault helper on a live link: the socket is cut, the extension finds the server again through
    discovery, and the conversation goes on. tabs() shows the provider tab and our lease while linked."""
    sites.chatgpt.set_next(**FAST)
    async with open_bridge(sites, tmp_path, extra=("--allow-faults",)) as b:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
        env["AI_BRIDGE_STATE_DIR"] = str(b.state_dir)

        async def console(code: str) -> str:
            proc = await trio.run_process([sys.executable, "-m", "supervisor.app.cli", "console", "-c", code], env=env,
                                          cwd=REPO, capture_stdout=True, capture_stderr=True, check=False)
            assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
            return proc.stdout.decode()

        sc = await ask(b, "chatgpt", "What is 6 plus 7?")
        before = await linked_status(b)
        tabs = await console("t = (await tabs())['chatgpt']; [(x['url'][:20], x['attachedByMe']) "
                             "for x in t['browserTabs']], t['url'] == " + repr(sc["url"]))
        assert "('https://chatgpt.com/', True)" in tabs and tabs.rstrip().endswith("True)")
        assert "dropped the extension link" in await console("drop_extension()")
        after = await linked_status(b, timeout=20)
        assert after["extension"]["since"] != before["extension"]["since"]
        sc2 = await ask(b, "chatgpt", "And 6 plus 8?")
        assert "'connected': True" in await console("relay()")
        log = b.log_text()
    assert sc2["url"] == sc["url"]
    assert "dropping the extension link: dropped from the console" in log


# --- 8. a tab closed under a command ---------------------------------------------------------------------------------


async def test_tab_closed_mid_ask_then_snapshot_and_recovery(sites: FakeSites, shared_bridge: OpenShared) -> None:
    sites.chatgpt.set_next(count=1, chunks=100, intervalMs=100, firstTokenMs=100)
    sites.chatgpt.set_next(append=True, **FAST)
    async with shared_bridge() as b, b.devtools() as dt:
        results: list[Any] = []

        async def long_ask() -> None:
            results.append(await b.call("ask_chatgpt_web", {"question": "List 30 prime numbers."}))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(long_ask)
            await trio.to_thread.run_sync(lambda: sites.chatgpt.wait_log(
                lambda qs: qs and qs[0]["status"] == "streaming", timeout=20))
            [page] = await dt.pages("https://chatgpt.com/")
            await dt.send("Target.closeTarget", {"targetId": page["targetId"]})
        res = results[0]
        # The close event fails the ask (tab_closed, not a timeout's code), cutting the answer's stream midway.
        assert res.is_error and res.structured_content["error"]["code"] == "tab_closed", res.content[0].text
        # The site sees the stream cut when its connection closes, a moment after the tab went.
        await trio.to_thread.run_sync(lambda: sites.chatgpt.wait_log(
            lambda qs: qs[0]["status"] in ("disconnected", "aborted"), timeout=10))
        # Inspecting a closed tab: a typed error saying what to do, and no tab is opened for it.
        snap = await b.call("take_cdp_snapshot", {"target": "chatgpt", "screenshot": True})
        assert snap.is_error and snap.structured_content["error"]["code"] == "tab_closed"
        assert "no ChatGPT tab is open" in snap.content[0].text
        assert "Ask ChatGPT something first" in snap.content[0].text
        assert await dt.pages("https://chatgpt.com/") == []
        # Recovery: the next ask opens a new tab, and inspection works on it.
        await ask(b, "chatgpt", "What is 5 times 5?")
        snap = await b.call("take_cdp_snapshot", {"target": "chatgpt"})
        assert not snap.is_error, snap.content[0].text
        [new_page] = await dt.pages("https://chatgpt.com/")
        st = await b.status()
        history = b.history()
    assert new_page["targetId"] != page["targetId"]
    assert snap.structured_content["tabId"] in st["extension"]["attachedTabs"]
    assert [h["status"] for h in history] == ["failed", "ok"]
    assert "[tab_closed]" in history[0]["error"]


# --- 9. shutdown and crash clean-up ----------------------------------------------------------------------------------


async def pids_of(b: Bridge) -> tuple[int, int]:
    st = await linked_status(b)
    serve_pid, browser_pid = st["pid"], st["browser"]["pid"]
    assert live_processes(browser_pid), "browser not running"
    assert os.getpgid(browser_pid) == browser_pid  # it leads its own process group
    return serve_pid, browser_pid


async def wait_group_gone(pgid: int, timeout: float = 30) -> None:
    """Until no process of the group is left (`timeout`: a guard for a hang)."""
    async def gone() -> bool:
        return not live_processes(pgid)

    await eventually(gone, timeout, f"the browser's process group {pgid} gone")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
async def test_killing_serve_takes_the_headless_browser_down(sites: FakeSites, tmp_path: Path, sig: int) -> None:
    async with open_bridge(sites, tmp_path) as b:
        serve_pid, browser_pid = await pids_of(b)
        os.kill(serve_pid, sig)
        await wait_group_gone(browser_pid)
        log = b.log_text()
    if sig == signal.SIGTERM:
        assert "shutting down (SIGTERM)" in log and f"closing the browser we launched (pid {browser_pid})" in log


async def test_launched_browser_outlives_an_idle_worker_thread(tmp_path: Path) -> None:
    """PR_SET_PDEATHSIG fires when the *thread* that forked the child exits. The browser must stay up while we run
    — also in-process without the MCP front (``ai-bridge ask``/``doctor``), where no stdin reader keeps trio's
    worker threads busy (trio retires an idle worker thread after 10 s)."""
    from actors.protocol.browser import BROWSER, BrowserState, BrowserStatus, EnsureBrowser
    from actors.protocol.relay import RELAY, ExtCommand
    from supervisor.app import open_bridge
    from supervisor.config import load

    from .e2e import CHROMIUM

    config = load({"state_dir": str(tmp_path / "state"), "browser": "launch", "headless": True,
                   "profile_dir": str(tmp_path / "profile"), "browser_path": CHROMIUM},
                  env={}, config_file=tmp_path / "none.toml")
    async with open_bridge(config) as bridge:
        browser = bridge.ref(BROWSER)
        await browser.call(EnsureBrowser(timeout_s=20), timeout=30)
        pid = (await browser.call(BrowserStatus(), timeout=5)).pid
        # Every worker thread that ran during the launch retires once idle: wait until the kernel has them gone
        # (their /proc task entries), when a browser forked from one of them got its death signal.
        workers = [t.native_id for t in threading.enumerate() if t is not threading.main_thread()]

        async def retired() -> bool:
            return not any(os.path.exists(f"/proc/self/task/{tid}") for tid in workers)

        await eventually(retired, 30, "trio's worker threads of the launch retired")
        # Then the browser still opens a tab for its extension: work for the browser process's UI thread, queued
        # behind the shutdown a death signal would have started there.
        await bridge.ref(RELAY).call(ExtCommand("tabs.create", {"url": "about:blank", "policy": {"hosts": []},
                                                                "waitMs": 10_000}, 15), timeout=20)
        alive = pid is not None and bool(live_processes(pid))
        status = await browser.call(BrowserStatus(), timeout=5)
    assert alive, "the launched browser died while ai-bridge was idle"
    assert status.pid == pid and status.state is BrowserState.CONNECTED


# --- 10. inspection tools --------------------------------------------------------------------------------------------


async def test_snapshot_and_dom_inspection(sites: FakeSites, shared_bridge: OpenShared) -> None:
    sites.gemini.set_page(shape="2025")  # the spec's page, all in shadow roots: their inlining is checked below
    sites.gemini.set_next(**FAST)
    async with shared_bridge() as b, b.devtools() as dt:
        await linked_status(b)
        # No provider tab yet: a clear typed error, and inspection never opens a tab.
        for tool, args in (("take_cdp_snapshot", {"target": "gemini"}), ("get_page_dom", {"target": "gemini"})):
            res = await b.call(tool, args)
            assert res.is_error and res.structured_content["error"]["code"] == "tab_closed"
            assert "no Gemini tab is open" in res.content[0].text
            assert "https://gemini.google.com/app" in res.content[0].text
        assert await dt.pages("https://gemini.google.com/") == []
        q = "What is 12 times 12?"
        sc = await ask(b, "gemini", q)
        snap = await b.call("take_cdp_snapshot", {"target": "gemini"})
        shot = await b.call("take_cdp_snapshot", {"target": "gemini", "screenshot": True})
        dom = await b.call("get_page_dom", {"target": "gemini", "selector": "model-response"})
        capped = await b.call("get_page_dom", {"target": "gemini", "max_chars": 1000})
        missing = await b.call("get_page_dom", {"target": "gemini", "selector": "#no-such-element"})
        st = await b.status()
    assert not snap.is_error and [c.type for c in snap.content] == ["text"]
    s = snap.structured_content
    assert s["url"] == sc["url"] and s["readyState"] == "complete" and s["tabId"] in st["extension"]["attachedTabs"]
    assert any(line.startswith("textbox") for line in s["accessibility"])
    assert s["watcherState"]["assistantCount"] >= 1 and "screenshot" not in s
    # With a screenshot: an MCP image, a real PNG.
    assert not shot.is_error and [c.type for c in shot.content] == ["text", "image"]
    image = shot.content[1]
    assert image.mime_type == "image/png"
    png = base64.b64decode(image.data)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert width > 100 and height > 100
    assert "screenshot" not in shot.structured_content  # the image is not duplicated as base64 text
    # The selector reaches into Gemini's shadow DOM; shadow roots are inlined.
    assert not dom.is_error, dom.content[0].text
    html = dom.content[0].text
    assert html.startswith("<model-response") and '<template shadowrootmode="open">' in html
    assert answer_ref(q) in html and "12 and 12" in html
    assert dom.structured_content["truncated"] is False
    # The size cap.
    assert capped.structured_content["truncated"] is True
    assert capped.structured_content["chars"] <= 1000
    body, note = capped.content[0].text.rsplit("\n", 1)
    assert len(body) <= 1000 and note == f"<!-- truncated at {capped.structured_content['chars']} characters -->"
    assert missing.is_error and missing.structured_content["error"]["code"] == "invalid_argument"
    assert "#no-such-element" in missing.content[0].text


# --- 11. connect mode without the extension --------------------------------------------------------------------------


@pytest.mark.slow
async def test_connect_mode_without_extension_fails_with_install_hint(sites: FakeSites, tmp_path: Path) -> None:
    """Right after the server starts, the user's extension may be asleep (it looks for servers every 30 s): the ask
    waits that out, then fails with how to install the extension — not after the ask's whole timeout."""
    async with open_bridge(sites, tmp_path, extra=("--browser", "connect")) as b:
        res = await b.call("ask_chatgpt_web", {"question": "What is 1 plus 1?"})
        st = await b.status()
        snap = await b.call("take_cdp_snapshot", {"target": "chatgpt"})
    # How long it waits (the extension's alarm window, not the ask's timeout): test_browser_actor, on a mock clock.
    assert res.is_error and res.structured_content["error"]["code"] == "extension_not_connected"
    text = res.content[0].text
    assert "extension-path" in text and "Load unpacked" in text and "chrome://extensions" in text
    assert st["extension"]["connected"] is False
    assert st["browser"]["mode"] == "connect" and st["browser"]["state"] == "degraded"
    assert st["browser"]["pid"] is None and st["browser"]["ownership"] is None
    assert snap.is_error and snap.structured_content["error"]["code"] == "extension_not_connected"
    assert "extension-path" in snap.content[0].text
    assert sites.chatgpt.log() == []
