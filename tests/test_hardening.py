"""What an adversarial pass found, each as a test: other local users are refused, a peer that stops reading is
dropped while discovery stays up, start-up failures are one line, SIGHUP is a graceful stop, a restarted discovery
actor gets its port back."""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from actors.protocol.discovery import DISCOVERY, DiscoveryPort
from actors.protocol.relay import RELAY, LinkStatus, RelayInfo
from supervisor.app import open_bridge
from supervisor.config import load
from supervisor.constants import SHARED

from .conftest import REPO, process_alive, serve_command
from .other_user import as_other_user, public_folder, python_for_other_user
from .test_fuzz import Closed, RawClient

as_root = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                             reason="needs root and setpriv to act as another user")


def config(tmp_path: Path, **kw: object) -> object:
    return load({"state_dir": str(tmp_path / "state"), "browser": "connect", **kw}, env={},
                config_file=tmp_path / "none.toml")


def http_get(port: int, path: str = SHARED.discovery_path) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


AS_NOBODY = r"""
import socket, sys
port, relay_port, origin, path, flood = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])

def ask(p, request):
    try:
        s = socket.create_connection(("127.0.0.1", p), timeout=5)
        s.sendall(request)
        return s.recv(200).split(b"\r\n")[0].decode() or "closed"
    except OSError as e:
        return "closed"  # reset at accept

print("discovery", ask(port, ("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (path, port)).encode()))
print("relay", ask(relay_port, ("GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                                "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                "Sec-WebSocket-Version: 13\r\nOrigin: %s\r\n\r\n" % (relay_port, origin)).encode()))
held = []  # a flood of half-open connections, kept open
for i in range(flood):
    for p in (port, relay_port):
        try:
            held.append(socket.create_connection(("127.0.0.1", p), timeout=5))
        except OSError:
            pass
print("flood done", len(held))
sys.stdout.flush()
sys.stdin.read()  # hold them until told
"""


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@as_root
async def test_another_local_user_gets_neither_the_token_nor_the_link(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    """Another user's process is refused at accept, before its request is read (no 403 to parse even): one
    connection or a flood of 400 half-open ones, which the server does not hold (its descriptors stay as they were),
    logs in a few lines, and during which our own discovery answers."""
    async with open_bridge(config(tmp_path)) as bridge:
        port = await bridge.ref(DISCOVERY).call(DiscoveryPort(), timeout=5)
        info = await bridge.ref(RELAY).call(RelayInfo(), timeout=5)
        relay_port = int(info.ws_url.rsplit(":", 1)[1])
        args = ["-c", AS_NOBODY, str(port), str(relay_port), SHARED.extension_origin, SHARED.discovery_path]
        fds_before = open_fds()
        with public_folder() as folder:  # the checkout's venv may be out of that user's reach
            python = python_for_other_user(folder)
        nobody = await trio.lowlevel.open_process(as_other_user(*python, "-S", *args, "200"), cwd="/",
                                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                  stderr=subprocess.DEVNULL)
        try:
            assert nobody.stdout is not None and nobody.stdin is not None
            out = b""
            with trio.fail_after(60):
                while b"flood done" not in out:
                    chunk = await nobody.stdout.receive_some(4096)
                    assert chunk, out
                    out += chunk
            fds_during = open_fds()
            status, body = await trio.to_thread.run_sync(http_get, port)  # ours, while the flood is held open
            await nobody.stdin.aclose()
            with trio.fail_after(10):
                await nobody.wait()
        finally:
            if nobody.returncode is None:
                nobody.kill()
        ours = await trio.run_process([sys.executable, "-S", *args, "0"], capture_stdout=True, capture_stderr=True,
                                      check=False, stdin=subprocess.DEVNULL)
    log_text = "\n".join(r.getMessage() for r in caplog.records)
    text = out.decode()
    assert "discovery closed" in text and "relay closed" in text and info.token not in text, text
    assert fds_during - fds_before < 20, (fds_before, fds_during)  # nothing of the flood is held
    assert status == 200 and json.loads(body)["token"] == info.token
    # The same request from our own user is answered (so the refusal above is about the user, nothing else).
    mine = ours.stdout.decode()
    assert "discovery HTTP/1.1 200 OK" in mine and "relay HTTP/1.1 101" in mine, mine
    assert info.token not in log_text
    refusals = [ln for ln in log_text.splitlines() if "another user" in ln or "also refused" in ln]
    assert 2 <= len(refusals) <= 6, refusals  # a line or two per listener and interval, not one per connection
    assert "Traceback" not in log_text


def listening_on(port: int) -> set[str]:
    """The local addresses of the sockets listening on TCP `port` in this network namespace, as the kernel lists
    them (/proc/net/tcp and tcp6: hex address in host byte order, then the port; state 0A is LISTEN)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                addr, port_hex = local.split(":")
                if state != "0A" or int(port_hex, 16) != port:
                    continue
                raw = b"".join(bytes.fromhex(addr[i:i + 8])[::-1] for i in range(0, len(addr), 8))
                found.add(str(ipaddress.ip_address(raw)))
    return found


async def test_every_listener_binds_loopback_only(tmp_path: Path) -> None:
    """docs/security.md: every listener binds 127.0.0.1 only. The kernel's table of listening sockets says where
    discovery and the relay listen (the console is a Unix socket; MCP is stdio)."""
    async with open_bridge(config(tmp_path)) as bridge:
        port = await bridge.ref(DISCOVERY).call(DiscoveryPort(), timeout=5)
        info = await bridge.ref(RELAY).call(RelayInfo(), timeout=5)
        relay_port = int(info.ws_url.rsplit(":", 1)[1])
        listening = {p: listening_on(p) for p in (port, relay_port)}
    assert listening == {port: {"127.0.0.1"}, relay_port: {"127.0.0.1"}}


async def test_a_peer_that_stops_reading_is_dropped_and_discovery_stays_up(tmp_path: Path) -> None:

    async with open_bridge(config(tmp_path)) as bridge:
        relay = bridge.ref(RELAY)
        port = await bridge.ref(DISCOVERY).call(DiscoveryPort(), timeout=5)
        info = await relay.call(RelayInfo(), timeout=5)
        client = await RawClient.connect(info.ws_url, SHARED.extension_origin)
        try:
            await client.send(json.dumps({"type": "hello", "token": info.token,
                                          "protocolVersion": SHARED.protocol_version}))
            assert json.loads(await client.receive())["type"] == "welcome"
            big = "x" * (256 * 1024)
            for i in range(40):  # each pong echoes the id: 10 MiB the peer never reads
                await client.send(json.dumps({"type": "ping", "id": f"{i}{big}"}))
            assert (await relay.call(LinkStatus(), timeout=5)).connected
            # Discovery answers all along: the relay's inbox never waits on that socket.
            for _ in range(5):
                status, body = await trio.to_thread.run_sync(http_get, port)
                assert status == 200 and json.loads(body)["wsUrl"] == info.ws_url
                await trio.sleep(1)
            with trio.fail_after(60):  # a guard for a hang: why it was dropped is checked below
                while (report := await relay.call(LinkStatus(), timeout=5)).connected:
                    await trio.sleep(0.2)
            # Dropped by its send timeout (a frame it did not take: "not reading"), not by the heartbeat or anything
            # slower.
            assert report.last_drop is not None and report.last_drop.by_server
            assert (report.last_drop.code, report.last_drop.reason) == (1001, "not reading")
        finally:
            await client.aclose()
        # A new extension connection is welcome at once.
        again = await RawClient.connect(info.ws_url, SHARED.extension_origin)
        try:
            await again.send(json.dumps({"type": "hello", "token": info.token,
                                         "protocolVersion": SHARED.protocol_version}))
            assert json.loads(await again.receive())["type"] == "welcome"
        finally:
            await again.aclose()


async def test_a_restarted_discovery_actor_gets_its_pinned_port_back(tmp_path: Path) -> None:
    pinned = SHARED.discovery_ports.start + 3
    async with open_bridge(config(tmp_path, discovery_port=pinned)) as bridge:
        # An idle keep-alive connection from the last answer: its port sits in TIME_WAIT after the restart.
        conn = http.client.HTTPConnection("127.0.0.1", pinned, timeout=5)

        def keep_alive() -> int:
            conn.request("GET", "/healthz")
            resp = conn.getresponse()
            resp.read()
            return resp.status

        assert await trio.to_thread.run_sync(keep_alive) == 200
        for _ in range(3):
            info = await bridge.system.restart("relay")  # rest_for_one: discovery and browser restart too
            assert info.state.value == "running"
            assert await bridge.ref(DISCOVERY).call(DiscoveryPort(), timeout=5) == pinned
            status, _ = await trio.to_thread.run_sync(http_get, pinned, "/healthz")
            assert status == 200
        conn.close()
        link = bridge.system.find("discovery")
        assert link is not None and link.restarts == 3


async def test_a_busy_pinned_port_is_one_line_and_exit_1(server_env: dict[str, str]) -> None:
    port = SHARED.discovery_ports.start + 5
    holder = socket.socket()
    # Another program listening there. (SO_REUSEADDR: a connection an earlier test left in TIME_WAIT on this port,
    # test_hardening's pinned-port restart makes one on purpose, must not stop the holder itself.)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", port))
    holder.listen(1)
    try:
        proc = await trio.run_process([*serve_command(), "serve", "--discovery-port", str(port)], env=server_env,
                                      cwd=REPO, capture_stdout=True, capture_stderr=True, check=False, stdin=b"")
    finally:
        holder.close()
    err = proc.stderr.decode()
    assert proc.returncode == 1
    line = [ln for ln in err.splitlines() if ln.startswith("ai-bridge:")]
    assert line == [f"ai-bridge: cannot start: discovery: port {port} all in use ([Errno 98] Address already in "
                    f"use) Stop some other ai-bridge servers, or pin a free port of that range with "
                    f"--discovery-port."], err
    assert "Traceback" not in err and proc.stdout == b""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root for a read-only mount")
async def test_a_read_only_state_dir_still_serves(tmp_path: Path, server_env: dict[str, str]) -> None:
    state = tmp_path / "state"
    (state / "servers").mkdir(parents=True)
    state.chmod(0o700)
    # Root ignores file modes: a read-only bind mount is what makes the directory really unwritable here.
    inner = " ".join([*serve_command(), "serve"])
    params = StdioServerParameters(command="unshare", args=[
        "-m", "sh", "-c", f"mount --bind -o ro {state} {state} && exec {inner}"], env=server_env, cwd=str(REPO))
    errlog = tmp_path / "err.log"
    with open(errlog, "w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            status = await session.call_tool("bridge_status", {})
            assert not status.is_error
            assert status.structured_content["recentAsks"] == []
    text = errlog.read_text()
    assert "running without sessions, history or a log file" in text
    assert "the live console is off" in text
    assert "Traceback" not in text
    assert not (state / "ai-bridge.log").exists()


async def test_sighup_is_a_graceful_stop_that_cleans_up(server_env: dict[str, str], state_dir: Path) -> None:
    params = StdioServerParameters(command=serve_command()[0], args=[*serve_command()[1:], "serve"], env=server_env,
                                   cwd=str(REPO))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        pid = (await session.call_tool("bridge_status", {})).structured_content["pid"]
        record = state_dir / "servers" / f"{pid}.json"
        sock = Path(json.loads(record.read_text())["socket"])
        assert sock.exists()
        os.kill(pid, signal.SIGHUP)
        with trio.fail_after(4):
            while process_alive(pid):
                await trio.sleep(0.05)
    assert not record.exists() and not sock.exists()
    assert "shutting down (SIGHUP)" in (state_dir / "ai-bridge.log").read_text()


def test_state_dir_and_files_are_private(tmp_path: Path, server_env: dict[str, str]) -> None:
    state = tmp_path / "private-state"
    env = {**server_env, "AI_BRIDGE_STATE_DIR": str(state)}
    init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    subprocess.run([*serve_command(), "serve"], input=(init + "\n").encode(), env=env, cwd=REPO, capture_output=True,
                   timeout=60, check=True)
    assert state.stat().st_mode & 0o777 == 0o700
    assert (state / "ai-bridge.log").stat().st_mode & 0o777 == 0o600
    # Another user's state dir is refused outright.
    if os.geteuid() == 0:
        foreign = tmp_path / "foreign"
        foreign.mkdir()
        os.chown(foreign, 65534, 65534)
        out = subprocess.run([*serve_command(), "serve"], input=b"", env={**env, "AI_BRIDGE_STATE_DIR": str(foreign)},
                             cwd=REPO, capture_output=True, timeout=60, check=False)
        assert out.returncode == 1
        assert "belongs to another user (uid 65534)" in out.stderr.decode() and b"Traceback" not in out.stderr


@pytest.mark.parametrize("bad", ["x" * 100_000, "\ud800"])
async def test_a_malformed_hello_closes_the_socket_and_restarts_nothing(tmp_path: Path, bad: str) -> None:
    async with open_bridge(config(tmp_path)) as bridge:
        info = await bridge.ref(RELAY).call(RelayInfo(), timeout=5)
        for _ in range(12):  # nine frames in 32 s used to end the process
            client = await RawClient.connect(info.ws_url, SHARED.extension_origin)
            try:
                # json.dumps writes the lone surrogate as the escape "\ud800": valid JSON that used to crash
                await client.send(json.dumps({"type": "hello", "token": bad, "protocolVersion": 1}))
                with pytest.raises(Closed) as closed:
                    await client.receive()
                assert closed.value.code == SHARED.close.bad_token
            finally:
                await client.aclose()
        tree = bridge.system.tree()
        assert tree is not None
        assert all(c.restarts == 0 for branch in tree.children for c in (branch, *branch.children))
        assert bridge.system.find("discovery") is not None
