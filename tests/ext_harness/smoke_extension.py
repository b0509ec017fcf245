#!/usr/bin/env python3
"""Smoke test of the ai-bridge extension in real headless Chromium against fake servers.

Not a pytest test: a script that prints what it sees and exits non-zero on the first failed expectation. The idle
behaviour it shows (keep-alive over 30 s, the alarm, the popup wake) is also in the suite, against the real server:
tests/test_extension_idle.py.

    /work/main/.venv/bin/python tests/ext_harness/smoke_extension.py [--idle 40] [--keep-profile]

Fake servers (each = h11 discovery/self-test HTTP server + trio-websocket relay on a free port):
  A on 8775, B on 8774 (two live servers at once: tab leases), V on 8773 answering protocolVersion 2 (must be
  refused without a WebSocket attempt). The relay checks the Origin, the hello token, replies welcome (with the
  proof of its pairing key over the hello's nonce), and answers the extension's pings. The browser is paired with
  each server's key through DevTools right after launch, as `ai-bridge pair` and the popup would.

Runs itself in a private network namespace (`unshare --net`) when it can, so that other browsers on the machine
that have the extension loaded (they poll the same ports) cannot connect to the fake servers. --idle 40 plus the
30 s backoff and worker-restart phases make a run take about two minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import urllib.request
import uuid
from functools import partial
from pathlib import Path

import h11
import trio
from trio_websocket import ConnectionClosed, open_websocket_url, serve_websocket

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from supervisor import pairing  # noqa: E402  (the repo on the path first: this runs as a script)

EXT_VERSION = json.loads((REPO / "extension" / "manifest.json").read_text())["version"]
EXT_DIR = REPO / "extension"  # --ext-dir overrides (e.g. a patched copy for a negative control)
EXT_ID = "dehbpnglmiedeaaddfipmnmhmblajpci"
ORIGIN = f"chrome-extension://{EXT_ID}"
CHROMIUM = "/usr/lib/chromium/chromium"
MAX_FRAME_BYTES = 4 * 1024 * 1024  # the real server's limit (protocol.md); trio-websocket's default is 1 MiB

SELFTEST_HTML = b"""<!doctype html><html><head><meta charset="utf-8"><title>ai-bridge self-test</title></head>
<body><h1>ai-bridge self-test</h1><textarea id="prompt"></textarea></body></html>"""

T0 = 0.0  # trio.current_time() at Chromium launch


def log(msg: str) -> None:
    print(f"[{trio.current_time() - T0:7.3f}s] {msg}", flush=True)


class SmokeFailure(Exception):
    pass


def expect(cond: object, what: str, detail: object = "") -> None:
    if not cond:
        raise SmokeFailure(f"{what}: {detail!r}")
    log(f"ok  {what}")


# ---- the relay side of one WebSocket connection ---------------------------------------------------------------------


class Peer:
    """One accepted, welcomed extension connection."""

    def __init__(self, ws, hello: dict, name: str):
        self.ws = ws
        self.hello = hello
        self.name = name
        self.next_id = 1
        self.pending: dict[int, list] = {}  # id -> [trio.Event, frame]
        self.events: list[dict] = []
        self.bad_frames: list[dict] = []  # error frames with id null
        self.ext_pings: list[float] = []
        self.arrived = trio.Event()  # replaced after every event
        self.closed = trio.Event()
        self.close_code: int | None = None

    async def run(self) -> None:
        try:
            while True:
                frame = json.loads(await self.ws.get_message())
                kind = frame.get("type")
                if kind in ("result", "error") and frame.get("id") in self.pending:
                    slot = self.pending.pop(frame["id"])
                    slot[1] = frame
                    slot[0].set()
                elif kind == "error" and frame.get("id") is None:
                    self.bad_frames.append(frame)
                    self._wake()
                elif kind == "event":
                    self.events.append(frame)
                    self._wake()
                elif kind == "ping":
                    self.ext_pings.append(trio.current_time())
                    await self.ws.send_message(json.dumps({"type": "pong", "id": frame.get("id")}))
                elif kind == "pong":
                    pass
                else:
                    raise SmokeFailure(f"{self.name}: unexpected frame {frame}")
        except ConnectionClosed as e:
            self.close_code = e.reason.code
        finally:
            self.closed.set()
            self._wake()

    def _wake(self) -> None:
        self.arrived.set()
        self.arrived = trio.Event()

    async def call(self, method: str, params: dict | None = None, timeout: float = 35) -> dict:
        cid = self.next_id
        self.next_id += 1
        slot: list = [trio.Event(), None]
        self.pending[cid] = slot
        frame = {"type": "command", "id": cid, "method": method}
        if params is not None:
            frame["params"] = params
        await self.ws.send_message(json.dumps(frame))
        with trio.fail_after(timeout):
            await slot[0].wait()
        return slot[1]

    async def result(self, method: str, params: dict | None = None) -> dict:
        frame = await self.call(method, params)
        if frame["type"] != "result":
            raise SmokeFailure(f"{self.name} {method} {params}: {frame}")
        return frame["result"]

    async def error(self, method: str, params: dict | None = None) -> str:
        frame = await self.call(method, params)
        if frame["type"] != "error":
            raise SmokeFailure(f"{self.name} {method} {params}: expected an error, got {frame}")
        return frame["error"]["code"]

    async def wait_for(self, pred, since: int = 0, timeout: float = 10, source: str = "events") -> dict:
        with trio.fail_after(timeout):
            while True:
                for item in getattr(self, source)[since:]:
                    if pred(item):
                        return item
                if self.closed.is_set():
                    raise SmokeFailure(f"{self.name} closed while waiting")
                await self.arrived.wait()


# ---- one fake ai-bridge server --------------------------------------------------------------------------------------


class FakeServer:
    def __init__(self, name: str, http_port: int, protocol_version: int = 1):
        self.name = name
        self.http_port = http_port
        self.protocol_version = protocol_version
        self.server_id = uuid.uuid4().hex
        self.token = secrets.token_hex(32)  # the token the relay accepts
        self.key = pairing.generate()  # the browser is paired with it at launch (pair_browser)
        self.advertised_token = self.token  # the token discovery hands out (differs only in the 4401 test)
        self.ws_port = 0
        self.peer_send, self.peer_recv = trio.open_memory_channel(math.inf)
        self.ws_attempts = 0
        self.hellos: list[float] = []
        self.discovery_hits: list[float] = []
        self.discovery_origins: set = set()

    @property
    def selftest_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/selftest"

    def discovery(self) -> dict:
        return {
            "wsUrl": f"ws://127.0.0.1:{self.ws_port}",
            "token": self.advertised_token,
            "serverId": self.server_id,
            "keyId": self.key.key_id,
            "project": f"smoke-{self.name}",
            "startedAt": "2026-11-26T00:00:00.000Z",
            "protocolVersion": self.protocol_version,
            "serverVersion": "0.0.0-smoke",
            "selfTestUrl": self.selftest_url,
        }

    async def start(self, nursery: trio.Nursery) -> None:
        listeners = await trio.open_tcp_listeners(self.http_port, host="127.0.0.1")
        nursery.start_soon(trio.serve_listeners, self._http, listeners)
        await self.start_ws(nursery)

    async def start_ws(self, nursery: trio.Nursery) -> None:
        """(Re)start the relay on a new free port; discovery advertises the newest one."""
        server = await nursery.start(
            partial(serve_websocket, self._ws, "127.0.0.1", 0, None, max_message_size=MAX_FRAME_BYTES)
        )
        self.ws_port = server.port

    async def _http(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        request = None
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await stream.receive_some(65536))
                elif isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.EndOfMessage):
                    await stream.send_all(self._respond(conn, request))
                    if conn.our_state is h11.MUST_CLOSE:
                        break
                    conn.start_next_cycle()
                elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                    break
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            pass
        finally:
            await stream.aclose()

    def _respond(self, conn: h11.Connection, request: h11.Request) -> bytes:
        path = request.target.decode().split("?")[0]
        if path == "/mcp-discovery":
            self.discovery_hits.append(trio.current_time())
            self.discovery_origins.add(dict(request.headers).get(b"origin"))
            status, ctype, body = 200, b"application/json", json.dumps(self.discovery()).encode()
        elif path.startswith("/selftest"):
            status, ctype, body = 200, b"text/html; charset=utf-8", SELFTEST_HTML
        else:
            status, ctype, body = 404, b"text/plain", b"not found"
        headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode()), (b"cache-control", b"no-store")]
        return (
            conn.send(h11.Response(status_code=status, headers=headers))
            + conn.send(h11.Data(data=body))
            + conn.send(h11.EndOfMessage())
        )

    async def _ws(self, request) -> None:
        self.ws_attempts += 1
        origin = dict(request.headers).get(b"origin", b"").decode()
        if origin != ORIGIN:
            log(f"{self.name}: rejecting WebSocket from Origin {origin!r}")
            await request.reject(403)
            return
        ws = await request.accept()
        try:
            with trio.move_on_after(5) as timeout:
                first = await ws.get_message()
            if timeout.cancelled_caught:
                await ws.aclose(4408, "no hello")
                return
            self.hellos.append(trio.current_time())
            try:
                hello = json.loads(first)
            except ValueError:
                await ws.aclose(4400, "malformed hello")
                return
            if not isinstance(hello, dict) or hello.get("type") != "hello" or hello.get("protocolVersion") != 1:
                await ws.aclose(4400, "malformed hello")
                return
            if hello.get("token") != self.token:
                await ws.aclose(4401, "bad token")
                return
            nonce = hello.get("nonce")
            await ws.send_message(json.dumps({
                "type": "welcome", "serverId": self.server_id, "protocolVersion": 1,
                "proof": self.key.server_proof(nonce, self.server_id, self.token) if isinstance(nonce, str) else None}))
        except ConnectionClosed:
            return
        peer = Peer(ws, hello, self.name)
        self.peer_send.send_nowait(peer)
        await peer.run()

    async def next_peer(self, timeout: float = 15) -> Peer:
        with trio.fail_after(timeout):
            return await self.peer_recv.receive()


# ---- Chromium ---------------------------------------------------------------------------------------------------------


def chromium_args(profile: str, ext_log: bool) -> list[str]:
    # --enable-logging=stderr puts the extension's console output (and uncaught errors) into chromium.log
    return ([
        CHROMIUM,
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
        f"--load-extension={EXT_DIR}", f"--disable-extensions-except={EXT_DIR}",
        # only for the harness's look at the popup page; the extension does not depend on it
        "--remote-debugging-port=0",
        "about:blank",
    ] + (["--enable-logging=stderr", "--v=0"] if ext_log else []))


async def popup_status(profile: str) -> tuple[str, list]:
    """Open popup.html as a page through the DevTools endpoint; return its text and the stored status rows."""
    port = int((Path(profile) / "DevToolsActivePort").read_text().split()[0])
    url = f"chrome-extension://{EXT_ID}/popup.html"

    def new_target() -> dict:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/json/new?{url}", method="PUT")
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.load(resp)

    target = await trio.to_thread.run_sync(new_target)
    try:
        async with open_websocket_url(target["webSocketDebuggerUrl"]) as ws:
            expr = """new Promise(r => setTimeout(r, 700)).then(async () => JSON.stringify({
                text: document.body.innerText,
                servers: (await chrome.storage.session.get('servers')).servers}))"""
            # The first evaluation can land in the initial about:blank document while popup.html commits
            # ("Execution context was destroyed"): retry a few times.
            for attempt in range(1, 6):
                await ws.send_message(json.dumps({"id": attempt, "method": "Runtime.evaluate",
                                                  "params": {"expression": expr, "awaitPromise": True,
                                                             "returnByValue": True}}))
                with trio.fail_after(10):
                    while True:
                        msg = json.loads(await ws.get_message())
                        if msg.get("id") == attempt:
                            break
                if "value" in msg.get("result", {}).get("result", {}):
                    value = json.loads(msg["result"]["result"]["value"])
                    return value["text"], value["servers"]
                await trio.sleep(0.3)
            raise SmokeFailure(f"popup evaluation failed: {msg}")
    finally:
        def close_target() -> None:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/json/close/{target['id']}", timeout=5).close()

        await trio.to_thread.run_sync(close_target)


async def devtools(profile: str, method: str, params: dict | None = None) -> dict:
    """One call on the browser's DevTools endpoint (harness-only instrumentation)."""
    port = int((Path(profile) / "DevToolsActivePort").read_text().split()[0])

    def browser_ws_url() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=5) as resp:
            return json.load(resp)["webSocketDebuggerUrl"]

    async with open_websocket_url(await trio.to_thread.run_sync(browser_ws_url)) as ws:
        await ws.send_message(json.dumps({"id": 1, "method": method, "params": params or {}}))
        with trio.fail_after(10):
            while True:
                msg = json.loads(await ws.get_message())
                if msg.get("id") == 1:
                    return msg


async def pair_browser(profile: str, servers: list[FakeServer]) -> None:
    """Give the extension every server's pairing key, in its worker (what pasting `ai-bridge pair`'s code does)."""
    with trio.fail_after(15):
        while not (Path(profile) / "DevToolsActivePort").exists():
            await trio.sleep(0.05)
        paired: set[str] = set()
        while len(paired) < len(servers):
            targets = (await devtools(profile, "Target.getTargets"))["result"]["targetInfos"]
            worker = [t for t in targets if t["type"] == "service_worker" and t["url"].startswith(ORIGIN)]
            if worker:
                port = int((Path(profile) / "DevToolsActivePort").read_text().split()[0])
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=5) as resp:
                    url = json.load(resp)["webSocketDebuggerUrl"]
                async with open_websocket_url(url) as ws:
                    async def call(n: int, method: str, params: dict, session: str | None = None) -> dict:
                        await ws.send_message(json.dumps({"id": n, "method": method, "params": params,
                                                          **({"sessionId": session} if session else {})}))
                        while True:
                            msg = json.loads(await ws.get_message())
                            if msg.get("id") == n:
                                return msg

                    session = (await call(1, "Target.attachToTarget", {"targetId": worker[0]["targetId"],
                                                                       "flatten": True}))["result"]["sessionId"]
                    for i, srv in enumerate(servers, 2):
                        got = await call(i, "Runtime.evaluate", {
                            "expression": f"typeof aiBridgePair === 'function' ? aiBridgePair('{srv.key.code}') : null",
                            "awaitPromise": True, "returnByValue": True}, session)
                        if got.get("result", {}).get("result", {}).get("value") == srv.key.key_id:
                            paired.add(srv.name)
            await trio.sleep(0.05)
    log(f"paired the extension with {sorted(paired)}")


async def stop_worker(profile: str) -> None:
    """Stop the extension's service worker the way Chrome does when it idles out (DevTools Target.closeTarget)."""
    targets = (await devtools(profile, "Target.getTargets"))["result"]["targetInfos"]
    worker = [t for t in targets if t["type"] == "service_worker" and t["url"].startswith(ORIGIN)]
    expect(len(worker) == 1, "found the extension's service worker", targets)
    reply = await devtools(profile, "Target.closeTarget", {"targetId": worker[0]["targetId"]})
    expect(reply.get("result", {}).get("success"), "service worker stopped", reply)


async def page_attached(profile: str, url: str) -> bool:
    """Whether some debugger client (ours) is still attached to the page at `url`."""
    targets = (await devtools(profile, "Target.getTargets"))["result"]["targetInfos"]
    return any(t["type"] == "page" and t["url"] == url and t["attached"] for t in targets)


# ---- the scenario -----------------------------------------------------------------------------------------------------


async def scenario(a: FakeServer, b: FakeServer, v: FakeServer, nursery: trio.Nursery, profile: str, idle: float):
    pa, pb = await a.next_peer(), await b.next_peer()
    log(f"launch -> A connected (welcome sent) {a.hellos[0] - T0:.3f}s, B {b.hellos[0] - T0:.3f}s; "
        f"first discovery hit at {min(a.discovery_hits) - T0:.3f}s")
    expect(pa.hello["extensionVersion"] == EXT_VERSION and pa.hello["protocolVersion"] == 1, "hello fields", pa.hello)
    expect(a.discovery_origins == {None}, "discovery fetch carries no Origin", a.discovery_origins)

    # -- keepalive, first and with no debugger attached (an attached chrome.debugger session alone keeps the worker
    #    alive): the relay sends nothing for `idle` seconds, it only answers the extension's pings
    attempts = (a.ws_attempts, b.ws_attempts)
    ping_mark, hits_mark, t = len(pa.ext_pings), len(v.discovery_hits), trio.current_time()
    log(f"idle for {idle:.0f} s ...")
    await trio.sleep(idle + 1)  # + 1 s: a ping due exactly at +idle s is counted
    pings = [round(p - t, 1) for p in pa.ext_pings[ping_mark:]]
    log(f"extension pings on A during idle at +{pings} s; B got {len(pb.ext_pings)} in total; "
        f"discovery hits on V during idle: {len(v.discovery_hits) - hits_mark} (slow mode: one per 5 s)")
    expect(not pa.closed.is_set() and not pb.closed.is_set(), "both connections survived the idle period")
    expect(len(pings) >= int(idle // 20), "extension pinged every 20 s", pings)
    expect((a.ws_attempts, b.ws_attempts) == attempts, "no reconnects during idle", (attempts, a.ws_attempts))
    expect((await pa.result("ext.info", {}))["attached"] == [], "connection usable after idle")

    # -- basics on A
    info = await pa.result("ext.info", {})
    expect(info == {"version": EXT_VERSION, "extensionId": EXT_ID, "attached": []}, "ext.info", info)
    q = await pa.result("tabs.query", {"urlPatterns": ["http://127.0.0.1/*", "https://chatgpt.com/*"]})
    expect(q == {"tabs": []}, "passive: no tab opened on its own", q)

    t = trio.current_time()
    tab = (await pa.result("tabs.create", {"url": a.selftest_url}))["tab"]
    log(f"tabs.create took {1000 * (trio.current_time() - t):.0f} ms: {tab}")
    expect(tab["status"] == "complete" and tab["url"] == a.selftest_url and tab["active"], "tabs.create waits", tab)
    ta = tab["tabId"]
    expect(await pa.error("tabs.create", {"url": "https://example.com/"}) == "site_not_allowed", "tabs.create off-list")
    expect(await pa.error("tabs.create", {"url": b.selftest_url}) == "site_not_allowed",
           "another server's selfTestUrl is not on A's allowlist")

    expect(await pa.result("debugger.attach", {"tabId": ta}) == {}, "debugger.attach")
    expect(await pa.result("debugger.attach", {"tabId": ta}) == {}, "debugger.attach is idempotent")
    info = await pa.result("ext.info", {})
    expect(info["attached"] == [ta], "ext.info lists the attached tab", info)

    def evaluate(expr: str, **extra) -> dict:
        return {"tabId": ta, "method": "Runtime.evaluate", "params": {"expression": expr, "returnByValue": True, **extra}}

    r = await pa.result("cdp.send", evaluate("1+1"))
    expect(r == {"result": {"type": "number", "value": 2, "description": "2"}}, "Runtime.evaluate 1+1 -> 2", r)
    r = await pa.result("cdp.send", evaluate("undefined"))
    expect(r.get("result", {}).get("type") == "undefined" and "value" not in r["result"], "undefined passes through", r)
    r = await pa.result("cdp.send", {"tabId": ta, "method": "Runtime.evaluate", "params": {"expression": "1+"}})
    expect("exceptionDetails" in r, "a syntax error comes back verbatim as exceptionDetails", list(r))

    # -- subscribed CDP events
    mark = len(pa.events)
    await pa.result("cdp.subscribe", {"tabId": ta, "methods": ["Runtime.bindingCalled"]})
    await pa.result("cdp.send", {"tabId": ta, "method": "Runtime.enable", "params": {}})  # emits unsubscribed events
    await pa.result("cdp.send", {"tabId": ta, "method": "Runtime.addBinding", "params": {"name": "aiBridgeSmoke"}})
    t = trio.current_time()
    await pa.result("cdp.send", evaluate("aiBridgeSmoke('hello from the page'); 0"))
    ev = await pa.wait_for(lambda e: e["event"] == "cdp", since=mark)
    log(f"binding event after {1000 * (trio.current_time() - t):.1f} ms: {ev}")
    expect(ev["tabId"] == ta and ev["method"] == "Runtime.bindingCalled"
           and ev["params"]["name"] == "aiBridgeSmoke" and ev["params"]["payload"] == "hello from the page",
           "subscribed Runtime.bindingCalled is forwarded", ev)
    await trio.sleep(0.3)
    others = [e["method"] for e in pa.events[mark:] if e["event"] == "cdp" and e["method"] != "Runtime.bindingCalled"]
    expect(not others, "unsubscribed CDP events (Runtime.executionContextCreated...) are not forwarded", others)

    # -- refusals and bad input
    expect(await pa.error("cdp.send", {"tabId": ta, "method": "Network.getCookies", "params": {}})
           == "method_not_allowed", "Network.getCookies -> method_not_allowed")
    expect(await pa.error("cdp.send", {"tabId": ta, "method": "Page.navigate", "params": {"url": "https://example.com/"}})
           == "site_not_allowed", "Page.navigate off the allowlist -> site_not_allowed")
    expect(await pa.error("no.such.method", {}) == "unknown_method", "unknown method -> unknown_method")
    expect(await pa.error("constructor", {}) == "unknown_method", "prototype names are not methods")
    expect(await pa.error("tabs.get", {"tabId": "x"}) == "bad_params", "tabId 'x' -> bad_params")
    expect(await pa.error("tabs.query", {}) == "bad_params", "tabs.query without urlPatterns -> bad_params")
    expect(await pa.error("cdp.send", {"tabId": ta, "method": "Runtime.evaluate", "params": [1]}) == "bad_params",
           "cdp params not an object -> bad_params")
    expect(await pa.error("tabs.get", {"tabId": 999999}) == "no_such_tab", "tabs.get unknown tab -> no_such_tab")
    frame = await pa.call("ext.info", None)
    expect(frame["type"] == "result", "a command without params is fine", frame)
    frame = await pa.call("tabs.get", {"tabId": ta})
    expect(frame["type"] == "result" and frame["result"]["tab"]["attachedByMe"], "tabs.get", frame)
    mark = len(pa.bad_frames)
    for raw in ["not json", '{"type":"bogus"}', "[1,2]", '{"type":"command","id":"7","method":"ext.info"}']:
        await pa.ws.send_message(raw)
    await pa.wait_for(lambda f: True, since=mark + 3, source="bad_frames")
    codes = [f["error"]["code"] for f in pa.bad_frames[mark:]]
    expect(codes == ["bad_frame"] * 4, "malformed frames -> bad_frame with id null", pa.bad_frames[mark:])
    expect((await pa.result("ext.info", {}))["attached"] == [ta], "connection survives bad frames")

    # -- frame size: a 3 MB result passes, a result over the 4 MiB frame limit fails just that command
    r = await pa.result("cdp.send", evaluate("'x'.repeat(3000000)"))
    expect(len(r["result"]["value"]) == 3_000_000, "3 MB result arrives")
    frame = await pa.call("cdp.send", evaluate("'x'.repeat(5000000)"))
    expect(frame["type"] == "error" and frame["error"]["code"] == "internal" and "too large" in frame["error"]["message"],
           "oversized result -> error instead of a 1009 close", frame)
    expect(not pa.closed.is_set() and (await pa.result("ext.info", {}))["attached"] == [ta], "connection still up")

    # -- second server B: leases
    qb = await pb.result("tabs.query", {"urlPatterns": ["http://127.0.0.1/*"]})
    expect(all(t["tabId"] != ta for t in qb["tabs"]), "A's attached tab is invisible to B", qb)
    qa = await pa.result("tabs.query", {"urlPatterns": ["http://127.0.0.1/*"]})
    expect([(t["tabId"], t["attachedByMe"]) for t in qa["tabs"]] == [(ta, True)], "A sees its own tab", qa)
    for method, params in [("debugger.attach", {"tabId": ta}), ("tabs.get", {"tabId": ta}),
                           ("cdp.send", {"tabId": ta, "method": "Runtime.evaluate", "params": {"expression": "1"}}),
                           ("tabs.close", {"tabId": ta}), ("debugger.detach", {"tabId": ta})]:
        expect(await pb.error(method, params) == "tab_busy", f"B {method} on A's tab -> tab_busy")

    t = trio.current_time()
    tb = (await pb.result("tabs.create", {"url": b.selftest_url, "newWindow": True}))["tab"]
    log(f"tabs.create newWindow took {1000 * (trio.current_time() - t):.0f} ms: {tb}")
    tb = tb["tabId"]
    expect(await pa.error("cdp.send", {"tabId": tb, "method": "Runtime.evaluate", "params": {"expression": "1"}})
           == "not_attached", "A cdp.send on an unattached tab -> not_attached")
    expect(await pa.error("debugger.attach", {"tabId": tb}) == "site_not_allowed", "A may not attach B's self-test")
    await pb.result("debugger.attach", {"tabId": tb})
    expect(await pa.error("cdp.send", {"tabId": tb, "method": "Runtime.evaluate", "params": {"expression": "1"}})
           == "tab_busy", "A cdp.send on B's tab -> tab_busy")
    vis_a = await pa.result("cdp.send", evaluate("document.visibilityState"))
    vis_b = await pb.result("cdp.send", {"tabId": tb, "method": "Runtime.evaluate",
                                         "params": {"expression": "document.visibilityState", "returnByValue": True}})
    log(f"visibilityState: A's tab (main window) {vis_a['result']['value']}, "
        f"B's tab (own window) {vis_b['result']['value']}")
    expect(vis_b["result"]["value"] == "visible", "a tab in its own window is visible")

    # -- detach / reattach
    expect(await pa.result("debugger.detach", {"tabId": ta}) == {}, "debugger.detach")
    expect(await pa.result("debugger.detach", {"tabId": ta}) == {}, "debugger.detach is idempotent")
    expect(await pa.error("cdp.send", evaluate("1")) == "not_attached", "cdp.send after detach -> not_attached")
    qb = await pb.result("tabs.query", {"urlPatterns": ["http://127.0.0.1/*"]})
    expect(ta in [t["tabId"] for t in qb["tabs"]], "a detached tab is visible to B again", qb)
    await pa.result("debugger.attach", {"tabId": ta})

    # -- latency
    samples = []
    for _ in range(200):
        t = trio.current_time()
        await pa.result("cdp.send", evaluate("1+1"))
        samples.append(1000 * (trio.current_time() - t))
    samples.sort()
    log(f"cdp.send Runtime.evaluate round trip over 200: median {statistics.median(samples):.2f} ms, "
        f"p90 {samples[179]:.2f} ms, max {samples[-1]:.2f} ms")

    # -- the tab navigates off the allowlist by itself: driving it stops, closing it (A created it) still works
    mark = len(pa.events)
    elsewhere = f"http://127.0.0.1:{a.http_port}/elsewhere"
    await pa.result("cdp.send", evaluate(f"location.href = {elsewhere!r}; 0"))
    await pa.wait_for(lambda e: e["event"] == "tabUpdated" and e["url"] == elsewhere, since=mark)
    expect(await pa.error("cdp.send", evaluate("1")) == "site_not_allowed", "cdp.send after navigating away -> site_not_allowed")

    # -- tab close events
    mark = len(pa.events)
    expect(await pa.result("tabs.close", {"tabId": ta}) == {}, "tabs.close")
    ev = await pa.wait_for(lambda e: e["event"] == "tabClosed", since=mark)
    expect(ev == {"type": "event", "event": "tabClosed", "tabId": ta}, "tabClosed event", ev)
    await trio.sleep(0.3)
    log(f"A events after tabs.close: {[e['event'] + ('/' + e['reason'] if 'reason' in e else '') for e in pa.events[mark:]]}")
    updates = [e for e in pa.events if e["event"] == "tabUpdated" and e["tabId"] == ta]
    expect(any(u["status"] == "complete" and u["url"] == a.selftest_url for u in updates),
           "tabUpdated events for the tab A created", updates[:3])
    expect(not any(e.get("tabId") == tb for e in pa.events), "A got no events about B's tab")
    info = await pa.result("ext.info", {})
    expect(info["attached"] == [], "lease gone after close", info)

    # -- popup / protocol-version refusal
    text, rows = await popup_status(profile)
    log(f"popup text:\n{text}")
    by_port = {r["port"]: r for r in rows}
    expect(by_port[8775]["state"] == "open" and by_port[8774]["state"] == "open", "popup rows: A and B open", rows)
    expect(by_port[8773]["state"] == "refused" and "protocolVersion 2" in by_port[8773]["lastError"],
           "popup row: V refused for its protocolVersion", by_port.get(8773))
    expect(v.ws_attempts == 0, "no WebSocket attempt to the protocolVersion 2 server", v.ws_attempts)

    # -- reconnect after the server drops the connection
    t = trio.current_time()
    await pa.ws.aclose(1001, "going away")
    pa = await a.next_peer()
    log(f"reconnect after 1001: {1000 * (trio.current_time() - t):.0f} ms")
    expect((await pa.result("ext.info", {}))["attached"] == [], "new connection after 1001")

    # -- server restart: same serverId, new wsUrl and token -> the extension replaces its connection
    old = pa
    a.token = a.advertised_token = secrets.token_hex(32)
    await a.start_ws(nursery)
    t = trio.current_time()
    pa = await a.next_peer()
    with trio.fail_after(5):
        await old.closed.wait()
    log(f"replaced connection after wsUrl/token change: {1000 * (trio.current_time() - t):.0f} ms "
        f"(old one closed with {old.close_code})")
    expect(pa.hello["token"] == a.token, "hello carries the new token")

    # -- 4401: no hammering until the discovery answer changes
    a.advertised_token = "f" * 64
    hellos = len(a.hellos)
    await pa.ws.aclose(1001, "going away")
    await trio.sleep(12)
    tries = len(a.hellos) - hellos
    expect(tries == 1, "after 4401 the extension waits (one hello in 12 s)", tries)
    _, rows = await popup_status(profile)
    row = next(r for r in rows if r["port"] == 8775)
    log(f"popup row for A while backing off: {row}")
    expect(row["state"] == "backing off" and "4401" in (row["lastError"] or ""), "4401 is visible in the popup", row)
    await trio.sleep(26)  # unchanged answer: the next try comes 30 s after the refusal (+ up to one 5 s poll)
    tries = [round(h - a.hellos[hellos], 1) for h in a.hellos[hellos:]]
    log(f"hellos since the 4401 at +{tries} s")
    expect(len(tries) == 2 and 30 <= tries[1] <= 36.5, "one retry 30 s after the 4401", tries)
    a.advertised_token = a.token
    t = trio.current_time()
    pa = await a.next_peer()
    log(f"reconnect once the discovery answer changed: {1000 * (trio.current_time() - t):.0f} ms")
    expect((await pa.result("ext.info", {}))["extensionId"] == EXT_ID, "connected again")
    expect(not pb.closed.is_set(), "B was untouched by all of A's reconnects")

    # -- the worker is stopped (as Chrome does after 30 s idle): every socket dies with it, the chrome.alarms alarm
    #    (period 30 s) wakes a fresh worker, whose module evaluation restarts polling
    t = trio.current_time()
    await stop_worker(profile)
    with trio.fail_after(5):
        await pa.closed.wait()
        await pb.closed.wait()
    pa, pb = await a.next_peer(timeout=45), await b.next_peer(timeout=45)
    log(f"reconnected after the worker was stopped: A {trio.current_time() - t:.1f} s (alarm-driven, <= 30 s + poll)")
    qb = await pb.result("tabs.query", {"urlPatterns": ["http://127.0.0.1/*"]})
    expect(tb in [t["tabId"] for t in qb["tabs"]], "B finds its tab again (the lease table died with the worker)", qb)
    log(f"B's tab still has a debugger session from the stopped worker: {await page_attached(profile, b.selftest_url)}")
    expect(await pb.result("debugger.attach", {"tabId": tb}) == {}, "B re-attaches the tab the old worker had attached")
    r = await pb.result("cdp.send", {"tabId": tb, "method": "Runtime.evaluate",
                                     "params": {"expression": "1+1", "returnByValue": True}})
    expect(r["result"]["value"] == 2, "and drives it", r)


async def main(idle: float, keep_profile: bool, ext_log: bool) -> int:
    global T0
    a, b, v = FakeServer("A", 8775), FakeServer("B", 8774), FakeServer("V", 8773, protocol_version=2)
    profile = tempfile.mkdtemp(prefix="ai-bridge-smoke-")
    chrome_log = Path(profile) / "chromium.log"
    rc = 1
    try:
        async with trio.open_nursery() as nursery:
            for s in (a, b, v):
                await s.start(nursery)
            T0 = trio.current_time()
            with open(chrome_log, "wb") as out:
                proc = await trio.lowlevel.open_process(chromium_args(profile, ext_log), stdout=out, stderr=out)
            try:
                with trio.fail_after(240 + idle):
                    await pair_browser(profile, [a, b, v])
                    await scenario(a, b, v, nursery, profile, idle)
                log("PASS")
                rc = 0
            except (SmokeFailure, trio.TooSlowError) as e:
                log(f"FAIL: {type(e).__name__}: {e}")
                tail = chrome_log.read_text(errors="replace").splitlines()[-20:]
                print("chromium log tail:\n  " + "\n  ".join(tail))
            finally:
                proc.terminate()
                with trio.move_on_after(5):
                    await proc.wait()
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
                nursery.cancel_scope.cancel()
        if ext_log:
            lines = [line for line in chrome_log.read_text(errors="replace").splitlines() if EXT_ID in line]
            print(f"extension log lines ({len(lines)}):\n  " + "\n  ".join(lines))
    finally:
        if keep_profile:
            print(f"profile kept in {profile}")
        else:
            shutil.rmtree(profile, ignore_errors=True)
    return rc


def isolate() -> None:
    """Re-run this script in a private network namespace (own loopback) when possible.

    Any other Chromium on the machine with this extension loaded polls the same ports 8766-8775 and would connect to
    our fake servers (seen in practice: parallel test runs), making counts of hellos/reconnects flaky.
    """
    if os.environ.get(_NETNS_ENV) == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return
    if shutil.which("unshare") is None or subprocess.run(["unshare", "--net", "true"]).returncode != 0:
        print("warning: cannot create a network namespace; other browsers may interfere", file=sys.stderr)
        return
    os.environ[_NETNS_ENV] = "1"
    os.execvp("unshare", ["unshare", "--net", "--", sys.executable, *sys.argv])


_NETNS_ENV = "AI_BRIDGE_SMOKE_IN_NETNS"

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--idle", type=float, default=40, help="keepalive idle period in seconds (default 40)")
    ap.add_argument("--ext-dir", type=Path, default=EXT_DIR, help="extension directory to load")
    ap.add_argument("--no-isolate", action="store_true", help="share the machine's loopback (no network namespace)")
    ap.add_argument("--ext-log", action="store_true", help="print the extension's console/error lines at the end")
    ap.add_argument("--keep-profile", action="store_true", help="keep the Chromium profile directory")
    args = ap.parse_args()
    EXT_DIR = args.ext_dir.resolve()
    if not args.no_isolate:
        isolate()
    sys.exit(trio.run(main, args.idle, args.keep_profile, args.ext_log))
