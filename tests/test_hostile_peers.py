"""Local floods and hostile requests against the listeners (issue 36), without a browser: the discovery server's
request handling (an overlong Host was a traceback per request, before the peer check), half-open connections
closed after a deadline, the per-peer cap at accept, and refusal logs that stay a few lines per interval whatever
the flood. Timing runs on trio's MockClock; sockets are real loopback ones where the kernel matters. Hypothesis
over request heads: every one is answered or closed, none raises, none gets the token unless it is the extension's.
(Another *user's* flood, refused at accept, is in test_hardening.py: it needs a second uid.)"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
from pathlib import Path

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors import discovery
from actors.protocol.discovery import DISCOVERY, DiscoveryPort
from actors.protocol.relay import RelayInfoReply
from supervisor.app import open_bridge
from supervisor.constants import SHARED
from supervisor.peergate import GatedListener, RefusalLog

from .conftest import REPO

TOKEN = "f" * 64
PORT = 8766


class FakeRelay:
    async def call(self, msg: object, timeout: float) -> RelayInfoReply:
        return RelayInfoReply("ws://127.0.0.1:1", TOKEN, "s" * 32, "now", "k" * 16, "aib1-x")


def make(burst: int = discovery.DETAIL_LINES) -> tuple[discovery.Discovery, RefusalLog]:
    refusals = RefusalLog("discovery", burst=burst)
    return discovery.Discovery(FakeRelay(), port=PORT, project="p", refusals=refusals), refusals  # type: ignore[arg-type]


async def exchange(server: discovery.Discovery, request: bytes, *, close: bool = True) -> bytes:
    """Send `request` to one connection of `server`; what it answered before closing."""
    client, ours = trio.testing.memory_stream_pair()
    got = b""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve, ours)
        if request:
            await client.send_all(request)
        if close:
            await client.send_eof()
        while chunk := await client.receive_some(65536):
            got += chunk
    return got


def get(headers: str, path: str = SHARED.discovery_path) -> bytes:
    return f"GET {path} HTTP/1.1\r\n{headers}\r\n".encode()


async def test_the_extension_gets_its_answer_and_pages_do_not() -> None:
    server, _ = make()
    ok = await exchange(server, get(f"Host: 127.0.0.1:{PORT}\r\nOrigin: {SHARED.extension_origin}\r\n"))
    assert ok.startswith(b"HTTP/1.1 200 OK\r\n") and TOKEN.encode() in ok and b"Cache-Control: no-store" in ok
    assert b"access-control" not in ok.lower()
    for head in (f"Host: 127.0.0.1:{PORT}\r\nOrigin: https://evil.example\r\n",
                 f"Host: 127.0.0.1:{PORT}\r\nSec-Fetch-Site: cross-site\r\n", "Host: evil.example\r\n",
                 f"Host: 127.0.0.1:{PORT}\r\nHost: evil.example\r\n", ""):
        got = await exchange(server, get(head))
        assert got.startswith((b"HTTP/1.1 403", b"HTTP/1.1 400")) and TOKEN.encode() not in got, (head, got)


async def test_an_overlong_host_is_a_refusal_not_a_traceback(caplog: pytest.LogCaptureFixture) -> None:
    server, refusals = make()
    got = await exchange(server, get("Host: " + "a" * 10_000 + "\r\n"))
    assert got.startswith(b"HTTP/1.1 403")
    got = await exchange(server, get("Host: " + "é" * 30 + "\r\n"))  # not ASCII: no IDNA, no exception
    assert got.startswith(b"HTTP/1.1 403")
    got = await exchange(server, get("Host: " + "a" * 40_000 + "\r\n"))
    assert got.startswith(b"HTTP/1.1 431")
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert refusals.total == {"requests (host)": 2, "malformed requests (HTTP 431)": 1}


async def test_a_half_open_connection_is_closed_after_its_deadline(autojump_clock: trio.testing.MockClock) -> None:
    server, refusals = make()
    t0 = trio.current_time()
    assert await exchange(server, b"GET /mcp-discovery HTTP/1.1\r\nHost: 127", close=False) == b""
    assert trio.current_time() - t0 == pytest.approx(discovery.REQUEST_S)
    assert await exchange(server, b"", close=False) == b""  # nothing at all
    assert refusals.total == {"connections that sent no request in time": 2}


async def test_a_flood_logs_a_few_lines_per_interval(autojump_clock: trio.testing.MockClock,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    refusals = RefusalLog("relay", burst=3, interval_s=10)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(refusals.run)
        for i in range(3000):  # 3000 refusals over 30 s, of two kinds
            refusals.note("origin" if i % 3 else "token", f"detail {i}")
            await trio.sleep(0.01)
        await trio.sleep(11)
        nursery.cancel_scope.cancel()
    lines = [r.getMessage() for r in caplog.records if r.name == "ai_bridge.security"]
    assert len(lines) == refusals.lines <= 3 * (3 + 3) + 4, lines  # per interval: 3 of each kind, one summary
    counted = sum(int(part.split()[0]) for ln in lines if "also refused" in ln
                  for part in ln.split("also refused ", 1)[1].split(" in ")[0].split(", "))
    assert counted + sum(ln.startswith("relay: detail") for ln in lines) == 3000  # each in a count or a line


async def test_a_peer_holds_at_most_its_share_of_connections() -> None:
    sock = trio.socket.socket()
    await sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    refusals = RefusalLog("test", burst=5)
    listener = GatedListener(sock, refusals, max_per_peer=3)
    clients = [socket.create_connection(("127.0.0.1", listener.port)) for _ in range(5)]
    try:
        held = [await listener.accept() for _ in range(3)]

        async def fourth() -> None:
            await listener.accept()
            raise AssertionError("a fourth connection was let in")

        async with trio.open_nursery() as nursery:  # the 4th and 5th wait in the backlog: both are refused
            nursery.start_soon(fourth)
            with trio.fail_after(5):
                while sum(refusals.total.values()) < 2:
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
        assert all(_closed(c) for c in clients[3:5])
        assert refusals.total == {"connections over the limit of 3 at once": 2}
        for h, c in zip(held, clients, strict=False):  # the three held ones are open
            await h.send_all(b"x")
            assert c.recv(1) == b"x"
        await held[0].aclose()  # one leaves: a place is free again
        clients.append(socket.create_connection(("127.0.0.1", listener.port)))
        with trio.fail_after(5):
            again = await listener.accept()
        await again.aclose()
        for h in held[1:]:
            await h.aclose()
    finally:
        for c in clients:
            c.close()
        await listener.aclose()


def _closed(c: socket.socket) -> bool:
    c.settimeout(5)
    try:
        return c.recv(1) == b""
    except ConnectionResetError:
        return True


heads = st.lists(st.tuples(st.sampled_from(["Host", "Origin", "Sec-Fetch-Site", "X", "Content-Length",
                                            "Transfer-Encoding"]),
                           st.text(max_size=30) | st.sampled_from([f"127.0.0.1:{PORT}", SHARED.extension_origin,
                                                                   "none", "chunked", "5"])), max_size=5)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(method=st.sampled_from(["GET", "POST", "OPTIONS", "G\x00T", ""]),
       path=st.sampled_from([SHARED.discovery_path, "/healthz", "/selftest", "/x", "*", "%", ""]), headers=heads,
       tail=st.binary(max_size=40))
def test_no_request_head_breaks_discovery(method: str, path: str, headers: list[tuple[str, str]],
                                          tail: bytes) -> None:
    raw = (f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)).encode(
        "utf-8", "surrogatepass") + b"\r\n" + tail

    async def one() -> bytes:
        server, _ = make()
        with trio.fail_after(30):
            return await exchange(server, raw)

    got = trio.run(one, clock=trio.testing.MockClock(autojump_threshold=0))
    assert got == b"" or got.startswith(b"HTTP/1.1 ")
    names = [k.lower() for k, _ in headers]
    if TOKEN.encode() in got:
        assert dict((k.lower(), v) for k, v in headers).get("host") == f"127.0.0.1:{PORT}"
        assert names.count("host") == 1 and method == "GET" and path == SHARED.discovery_path


async def test_the_live_discovery_refuses_an_overlong_host_without_a_traceback(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Through the real actor tree: an overlong Host was an IDNA traceback per request (6,000 of them rotated the log
    files); now a 403 and a counted refusal, and the extension's request is answered as before."""
    from .test_hardening import config, http_get

    async with open_bridge(config(tmp_path)) as bridge:
        port = await bridge.ref(DISCOVERY).call(DiscoveryPort(), timeout=5)

        def send(host: bytes) -> bytes:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(b"GET /mcp-discovery HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
                return s.recv(100)

        for _ in range(50):
            assert (await trio.to_thread.run_sync(send, b"a" * 10_000)).startswith(b"HTTP/1.1 403")
        status, body = await trio.to_thread.run_sync(http_get, port)
    assert status == 200 and json.loads(body)["wsUrl"].startswith("ws://127.0.0.1:")
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    security = [r.getMessage() for r in caplog.records if r.name == "ai_bridge.security"]
    assert len(security) <= discovery.DETAIL_LINES + 1 and all(len(line) < 600 for line in security)


def test_the_extension_reads_a_discovery_answer_up_to_its_cap(tmp_path: Path) -> None:
    """Any local process can answer on a discovery port: the extension reads at most 4 KiB of an answer (declared or
    streamed without end), never the whole of what it is sent."""
    script = tmp_path / "cap.mjs"
    script.write_text(
        "globalThis.chrome = {storage: {local: {get: async () => ({})}}, runtime: {getManifest: () => ({})}};\n"
        f"const {{ readCapped }} = await import({json.dumps((REPO / 'extension' / 'discovery.js').as_uri())});\n"
        "const answer = {wsUrl: 'ws://127.0.0.1:1', project: 'p'.repeat(3000)};\n"
        "const endless = new ReadableStream({pull(c) { c.enqueue(new Uint8Array(65536).fill(32)); }});\n"
        "console.log(JSON.stringify([await readCapped(new Response(JSON.stringify(answer))),\n"
        "  await readCapped(new Response(JSON.stringify({...answer, project: 'p'.repeat(5000)}))),\n"
        "  await readCapped(new Response(endless))]));\n")
    out = subprocess.run(["node", str(script)], capture_output=True, text=True, check=True, timeout=30)
    small, big, endless = json.loads(out.stdout)
    assert small["project"] == "p" * 3000 and big is None and endless is None
