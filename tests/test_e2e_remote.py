"""A browser on another machine (issue 39, item 5; docs/remote.md): the server runs where the agent runs, and the
user's Chrome, elsewhere, reaches it through an SSH forward of the discovery and relay ports.

Two network namespaces stand in for the two machines: the server (and the fake sites, standing in for the
internet) in the test worker's, the user's Chrome in one of its own, joined only by tests/forwarder.py (the
stand-in for ``ssh -L``). The Chrome is the user's (the test starts it, not ai-bridge) and is paired as the user
pairs it; the ask goes through the forward; neither side listens beyond loopback. One server, one browser."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from trio_websocket import open_websocket_url

from .cdp_pipe import devtools_url
from .conftest import REPO
from .e2e import DevTools, open_bridge, requires_chromium
from .fakesites.fixture import FakeSites
from .test_e2e_link import FAST, ask, eventually
from .user_chrome import pair_over_devtools, user_chrome_args

pytestmark = [requires_chromium, pytest.mark.chromium]

DISCOVERY_PORT, RELAY_PORT = 8775, 8790


def listening(pid: int) -> set[str]:
    """The local addresses of the TCP sockets listening in `pid`'s network namespace (hex, as /proc shows them)."""
    found = set()
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as f:
            next(f)
            found |= {line.split()[1] for line in f if line.split()[3] == "0A"}  # 0A: LISTEN
    return found


LOOPBACK = re.compile(r"(0100007F|0000000000000000FFFF00000100007F|00000000000000000000000001000000):[0-9A-F]{4}")


async def test_an_ask_reaches_a_paired_chrome_on_another_machine_through_a_forward(sites: FakeSites,
                                                                                   tmp_path: Path) -> None:
    sites.chatgpt.set_next(**FAST)
    profile = tmp_path / "laptop-chrome"
    profile.mkdir()
    chrome = user_chrome_args(sites, profile, REPO / "extension")
    # The far side forwards what ssh -L would (discovery, relay), and the fake sites, which the laptop reaches over
    # its own internet; the DevTools port comes back the other way, for the test's hands only.
    forwards = [DISCOVERY_PORT, RELAY_PORT, sites.chatgpt_port, sites.gemini_port]
    log = open(tmp_path / "forwarder.log", "wb")  # closed below
    fwd = await trio.lowlevel.open_process(
        [sys.executable, str(REPO / "tests" / "forwarder.py"), *(a for p in forwards for a in ("--forward", str(p))),
         "--", *chrome], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
    assert fwd.stdin is not None and fwd.stdout is not None
    lines = fwd.stdout

    async def line() -> str:
        got = b""
        with trio.fail_after(30):
            while not got.endswith(b"\n"):
                chunk = await lines.receive_some(1)
                assert chunk, "the forwarder ended"
                got += chunk
        return got.decode().strip()

    try:
        _, far_pid, _chrome_pid = (await line()).split()
        url = await devtools_url(profile, timeout=60)
        port = int(url.split(":")[2].split("/")[0])
        await fwd.stdin.send_all(f"reverse {port}\n".encode())
        _, _, near_port = (await line()).split()
        async with open_websocket_url(url.replace(f":{port}/", f":{near_port}/"), max_message_size=64 << 20) as ws:
            # What the user does on the laptop: paste `ai-bridge pair`'s code (of the dev box's state dir).
            await pair_over_devtools(DevTools(ws), tmp_path / "state")
            extra = ("--browser", "connect", "--discovery-port", str(DISCOVERY_PORT), "--relay-port", str(RELAY_PORT))
            async with open_bridge(sites, tmp_path, extra=extra) as b:
                async def linked() -> dict[str, object] | None:
                    s = await b.status()
                    # The browser actor learns of the link when it next follows it: ownership may lag a moment.
                    return s if s["extension"].get("connected") and s["browser"].get("ownership") else None

                st = await eventually(linked, 40, "the laptop's extension connected through the forward")
                assert st["browser"]["ownership"] == "user"
                sc = await ask(b, "chatgpt", "What is 2 plus 5?")
                assert sc["answer"]
                # Nothing listens beyond loopback, on the dev box (the server, the fakes) or on the laptop.
                for pid in (os.getpid(), int(far_pid)):
                    assert all(LOOPBACK.fullmatch(a) for a in listening(pid)), (pid, listening(pid))
                assert f"{DISCOVERY_PORT:04X}" in {a.split(":")[1] for a in listening(int(far_pid))}
                # The forwarded connections were checked like local ones: none was refused for its peer.
                assert "another user's process" not in b.log_text()
    finally:
        await fwd.stdin.aclose()
        with trio.move_on_after(10):
            await fwd.wait()
        if fwd.returncode is None:
            fwd.kill()
            await fwd.wait()
        log.close()
