"""Benchmark: this tree against an earlier commit, in one run — ask overhead and the relay's CDP round trip.

Both trees run the same real path (their own `serve` with an MCP stdio client, headless Chromium with their own
extension, the fake sites of *this* tree). Only one server and browser live at a time (two browsers with the
extension would contend for both servers), so the run alternates blocks: base, head, base, head, ... and drift hits
both alike.

    unshare -n sh -c 'ip link set lo up && .venv/bin/python -m tests.benchmarks.compare_commits [--base 28f6420]'
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.benchmarks.ask_overhead import pct
from tests.e2e import CHROMIUM
from tests.fakesites.fixture import FakeSites, start_fakesites

REPO = Path(__file__).resolve().parents[2]
SCRIPT = {"chunks": 4, "intervalMs": 100, "firstTokenMs": 300}
SCRIPTED_MS = 300 + 3 * 100

# Relay round trip, in the tree's own process: its actor tree launches Chromium, opens the self-test page and
# times `Runtime.evaluate` through its relay. Two spellings: before and after the renovation.
RELAY_OLD = """
import json, sys, tempfile, time, trio
from actors.messages import CdpTab, DiscoveryPort, ExtCommand, WaitConnected
from supervisor.app import serve
from supervisor.config import load
async def main(n):
    with tempfile.TemporaryDirectory() as d:
        cfg = load({"state_dir": d, "browser": "launch", "headless": True, "isolated": True,
                    "browser_path": sys.argv[2]}, env={}, config_file=None)
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            rt = await nursery.start(lambda task_status: serve(cfg, with_front=False, stop=stop,
                                                               task_status=task_status))
            relay = rt.registry.ref("relay")
            await relay.call(WaitConnected(20), timeout=25)
            port = await rt.registry.ref("discovery").call(DiscoveryPort(), timeout=5)
            url = f"http://127.0.0.1:{port}/selftest"
            got = await relay.call(ExtCommand("tabs.create", {"url": url, "newWindow": True}, 30), timeout=40)
            tab = got["tab"]["tabId"]
            await relay.call(ExtCommand("debugger.attach", {"tabId": tab}), timeout=15)
            t = CdpTab(relay, tab)
            out = []
            for i in range(n + 20):
                t0 = time.perf_counter()
                await t.send("Runtime.evaluate", {"expression": "1+1", "returnByValue": True})
                if i >= 20: out.append((time.perf_counter() - t0) * 1000)
            stop.set()
    print(json.dumps(out))
trio.run(main, int(sys.argv[1]))
"""
RELAY_NEW = """
import json, sys, tempfile, time, trio
from actors.cdp import CdpTab
from actors.protocol.discovery import DISCOVERY, DiscoveryPort
from actors.protocol.relay import RELAY, ExtCommand, WaitConnected
from supervisor.app import open_bridge
from supervisor.config import load
async def main(n):
    with tempfile.TemporaryDirectory() as d:
        cfg = load({"state_dir": d, "browser": "launch", "headless": True, "isolated": True,
                    "browser_path": sys.argv[2]}, env={}, config_file=None)
        async with open_bridge(cfg) as bridge:
            relay = bridge.ref(RELAY)
            await relay.call(WaitConnected(20), timeout=25)
            port = await bridge.ref(DISCOVERY).call(DiscoveryPort(), timeout=5)
            url = f"http://127.0.0.1:{port}/selftest"
            got = await relay.call(ExtCommand("tabs.create", {"url": url, "newWindow": True}, 30), timeout=40)
            tab = got["tab"]["tabId"]
            await relay.call(ExtCommand("debugger.attach", {"tabId": tab}), timeout=15)
            t = CdpTab(relay, tab)
            out = []
            for i in range(n + 20):
                t0 = time.perf_counter()
                await t.send("Runtime.evaluate", {"expression": "1+1", "returnByValue": True})
                if i >= 20: out.append((time.perf_counter() - t0) * 1000)
    print(json.dumps(out))
trio.run(main, int(sys.argv[1]))
"""


def base_tree(commit: str) -> Path:
    where = Path(tempfile.gettempdir()) / f"aib-base-{commit}"
    if not where.exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), commit], check=True,
                       capture_output=True)
    return where


def cli_module(tree: Path) -> str:
    return "supervisor.app.cli" if (tree / "supervisor" / "app" / "cli.py").exists() else "supervisor.cli"


async def ask_block(tree: Path, sites: FakeSites, asks: int, tmp: Path) -> list[float]:
    """Overhead (wall − the site's own question→complete) of `asks` asks per provider on a reused tab."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env.update({"AI_BRIDGE_STATE_DIR": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "config"),
                "PYTHONPATH": str(tree)})
    args = ["-m", cli_module(tree), "serve", "--browser", "launch", "--headless", "--isolated", "--project", "bench",
            f"--browser-path={CHROMIUM}", *(f"--browser-arg={a}" for a in sites.chromium_args())]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(tree))
    out: list[float] = []
    with open(tmp / "serve.log", "a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for provider in ("chatgpt", "gemini"):
                await session.call_tool(f"ask_{provider}_web", {"question": "Warm-up question number 0."})
            for i in range(asks):
                for provider in ("chatgpt", "gemini"):
                    site = sites.chatgpt if provider == "chatgpt" else sites.gemini
                    q = f"Compare question {time.time_ns()} {i}: what is {i} plus {i}?"
                    t0 = time.perf_counter()
                    res = await session.call_tool(f"ask_{provider}_web", {"question": q})
                    wall = (time.perf_counter() - t0) * 1000
                    assert not res.is_error, res.content[0].text
                    log = await trio.to_thread.run_sync(lambda: site.wait_log(  # noqa: B023
                        lambda qs: any(e["question"] == q and e.get("completedAtMs") for e in qs)))  # noqa: B023
                    e = next(x for x in log if x["question"] == q)
                    out.append(wall - (e["completedAtMs"] - e["receivedAtMs"]))
    return out


async def relay_block(tree: Path, calls: int) -> list[float]:
    code = RELAY_NEW if cli_module(tree) == "supervisor.app.cli" else RELAY_OLD
    proc = await trio.run_process([sys.executable, "-c", code, str(calls), CHROMIUM], cwd=tree, capture_stdout=True,
                                  capture_stderr=True, env={**os.environ, "PYTHONPATH": str(tree)}, check=False)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.decode()[-2000:])
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])  # type: ignore[no-any-return]


async def main(base: str, rounds: int, asks: int, calls: int) -> None:
    head = REPO
    old = base_tree(base)
    sites = start_fakesites()
    overhead: dict[str, list[float]] = {"base": [], "head": []}
    rtt: dict[str, list[float]] = {"base": [], "head": []}
    try:
        sites.chatgpt.set_next(**SCRIPT)
        sites.gemini.set_next(**SCRIPT)
        for r in range(rounds):
            for name, tree in (("base", old), ("head", head)) if r % 2 == 0 else (("head", head), ("base", old)):
                with tempfile.TemporaryDirectory() as tmp:
                    overhead[name] += await ask_block(tree, sites, asks, Path(tmp))
                rtt[name] += await relay_block(tree, calls)
                print(f"round {r + 1}/{rounds} {name} done", file=sys.stderr, flush=True)
    finally:
        sites.close()
    print(f"\nbase {base} vs head (this tree), {rounds} alternating rounds; ask overhead over {len(overhead['head'])} "
          f"asks per tree (ChatGPT and Gemini), relay round trip over {len(rtt['head'])} calls per tree\n")
    print(f"{'figure':<44}{'base':>10}{'head':>10}{'head/base':>11}")
    for label, data, p in (("ask overhead, p50", overhead, 50), ("ask overhead, p90", overhead, 90),
                           ("relay Runtime.evaluate round trip, p50", rtt, 50),
                           ("relay Runtime.evaluate round trip, p90", rtt, 90)):
        b = statistics.median(data["base"]) if p == 50 else pct(data["base"], p)
        h = statistics.median(data["head"]) if p == 50 else pct(data["head"], p)
        print(f"{label:<44}{b:>8.2f}ms{h:>8.2f}ms{h / b:>10.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="28f6420", help="the commit to compare with (default: before the renovation)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--asks", type=int, default=8, help="asks per provider per block")
    parser.add_argument("--calls", type=int, default=200, help="relay round trips per block")
    a = parser.parse_args()
    trio.run(main, a.base, a.rounds, a.asks, a.calls)
