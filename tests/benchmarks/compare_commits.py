"""Benchmark: this tree against an earlier commit, in one run — ask overhead and the time from the page finishing to
the result in the client's hands, per site at several spacings, with a profile of where the milliseconds go; and,
with --calls, the relay's CDP round trip.

Both trees run the same real path (their own `serve` with an MCP stdio client, headless Chromium with their own
extension, the fake sites of *this* tree). Only one server and browser live at a time (two browsers with the
extension would contend for both servers), so the run alternates blocks: base, head, base, head, ... and drift hits
both alike.

    unshare -n sh -c 'ip link set lo up && .venv/bin/python -m tests.benchmarks.compare_commits [--base main]'
        [--providers chatgpt,gemini,claude,grok,perplexity]
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
from typing import Any

import trio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.benchmarks.ask_overhead import TITLES, pct, run_spaced
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
    """The commit's files in a temporary folder (git archive: the repository's worktrees are left alone)."""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", commit], check=True, capture_output=True,
                         text=True).stdout.strip()
    where = Path(tempfile.gettempdir()) / f"aib-base-{sha}"
    if not where.exists():
        where.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", sha], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where


def cli_module(tree: Path) -> str:
    return "supervisor.app.cli" if (tree / "supervisor" / "app" / "cli.py").exists() else "supervisor.cli"


Record = dict[str, float]  # one ask: its site (index in the run's providers), spacing, wall, the site's own time, and
                            # the profile's parts (ms)


async def ask_block(tree: Path, sites: FakeSites, asks: int, tmp: Path, spacings: list[float],
                    providers: list[str]) -> list[Record]:
    """`asks` asks per provider and spacing on a reused tab (run_spaced: 0 and 1 s back to back, longer spacings
    interleaving the providers, each tab idle for exactly the spacing). Each record: overhead (wall − the site's own
    question→complete), to-client (the page's own completion → the result in the client's hands, one wall clock),
    and where the milliseconds went: before the question reached the site (and the ask's own connect / wait-input /
    input / send parts of it), detection (completion → our detection), after detection (→ the client)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    # Every tool listed (the newer sites' are not by default); a tree from before tool sets ignores it.
    env.update({"AI_BRIDGE_STATE_DIR": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "config"),
                "PYTHONPATH": str(tree), "AI_BRIDGE_TOOLS": "all"})
    args = ["-m", cli_module(tree), "serve", "--browser", "launch", "--headless", "--isolated", "--project", "bench",
            f"--browser-path={CHROMIUM}", *(f"--browser-arg={a}" for a in sites.chromium_args())]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(tree))
    out: list[Record] = []
    with open(tmp / "serve.log", "a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for provider in providers:
                await session.call_tool(f"ask_{provider}_web", {"question": "Warm-up question number 0."})

            def runner(provider: str, spacing: float) -> Any:
                site = sites.site(provider)

                async def ask(i: int) -> Record:
                    q = f"Compare question {time.time_ns()} {i}: what is {i} plus {i}?"
                    t0, e0 = time.perf_counter(), time.time() * 1000
                    res = await session.call_tool(f"ask_{provider}_web", {"question": q})
                    wall, e1 = (time.perf_counter() - t0) * 1000, time.time() * 1000
                    assert not res.is_error, res.content[0].text
                    log = await trio.to_thread.run_sync(lambda: site.wait_log(
                        lambda qs: any(e["question"] == q and e.get("completedAtMs") for e in qs)))
                    e = next(x for x in log if x["question"] == q)
                    sc = res.structured_content
                    t = sc["timings"]
                    detected = sc["completion"]["detectedAtMs"]
                    return {"site": float(providers.index(provider)), "spacing": spacing, "wall": wall,
                            "overhead": wall - (e["completedAtMs"] - e["receivedAtMs"]),
                            "to_client": e1 - e["completedAtMs"], "pre": e["receivedAtMs"] - e0,
                            "connect": t["connectMs"], "wait_input": t["waitInputMs"], "input": t["inputMs"],
                            "send": t["sendMs"], "detect": detected - e["completedAtMs"], "post": e1 - detected,
                            "extract": t["totalMs"] - sum(t[k] for k in ("connectMs", "waitInputMs", "inputMs",
                                                                          "sendMs", "waitResponseMs")),
                            "reply": e1 - detected - (t["totalMs"] - sum(t[k] for k in (
                                "connectMs", "waitInputMs", "inputMs", "sendMs", "waitResponseMs")))}

                return ask

            for spacing in spacings:
                got = await run_spaced({p: runner(p, spacing) for p in providers}, asks, spacing)
                out += [r for rs in got.values() for r in rs]
    return out


async def relay_block(tree: Path, calls: int) -> list[float]:
    code = RELAY_NEW if cli_module(tree) == "supervisor.app.cli" else RELAY_OLD
    proc = await trio.run_process([sys.executable, "-c", code, str(calls), CHROMIUM], cwd=tree, capture_stdout=True,
                                  capture_stderr=True, env={**os.environ, "PYTHONPATH": str(tree)}, check=False)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.decode()[-2000:])
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])  # type: ignore[no-any-return]


async def main(base: str, rounds: int, asks: int, calls: int, spacings: list[float], providers: list[str]) -> None:
    head = REPO
    old = base_tree(base)
    sites = start_fakesites()
    records: dict[str, list[Record]] = {"base": [], "head": []}
    rtt: dict[str, list[float]] = {"base": [], "head": []}
    try:
        for provider in providers:
            sites.site(provider).set_next(**SCRIPT)
        for r in range(rounds):
            for name, tree in (("base", old), ("head", head)) if r % 2 == 0 else (("head", head), ("base", old)):
                with tempfile.TemporaryDirectory() as tmp:
                    records[name] += await ask_block(tree, sites, asks, Path(tmp), spacings, providers)
                if calls:
                    rtt[name] += await relay_block(tree, calls)
                print(f"round {r + 1}/{rounds} {name} done", file=sys.stderr, flush=True)
    finally:
        sites.close()
    report(base, rounds, records, rtt, spacings, providers)


def report(base: str, rounds: int, records: dict[str, list[Record]], rtt: dict[str, list[float]],
           spacings: list[float], providers: list[str]) -> None:
    def col(name: str, key: str, spacing: float, site: float) -> list[float]:
        return [r[key] for r in records[name] if r["spacing"] == spacing and r["site"] == site]

    n = len(col("head", "wall", spacings[0], 0.0))
    print(f"\nbase {base} vs head (this tree), {rounds} alternating rounds, {n} asks per tree, site and spacing on a "
          f"reused tab; scripted generation {SCRIPTED_MS} ms. overhead = wall − the site's own question→complete; "
          "to client = the page's own completion → the result in the client's hands. ms.\n")
    head_row = (f"{'site':<10}{'spacing':>6} | {'overhead p50 base':>17} {'head':>6} | {'to client p50 base':>18} "
                f"{'head':>6} | {'to client p95 base':>18} {'head':>6}")
    print(head_row)
    print("-" * len(head_row))
    for index, site in enumerate(TITLES[p] for p in providers):
        for sp in spacings:
            cells = []
            for key, p in (("overhead", 50), ("to_client", 50), ("to_client", 95)):
                for name in ("base", "head"):
                    v = col(name, key, sp, float(index))
                    cells.append(statistics.median(v) if p == 50 else pct(v, p))
            print(f"{site:<10}{sp:>5g}s | {cells[0]:>17.0f} {cells[1]:>6.0f} | {cells[2]:>18.0f} {cells[3]:>6.0f} | "
                  f"{cells[4]:>18.0f} {cells[5]:>6.0f}")
    parts = ("pre", "connect", "wait_input", "input", "send", "detect", "post", "extract", "reply")
    print("\nwhere the milliseconds go (p50 over every ask of the tree; pre = client → the site has the question, "
          "of which connect / wait_input / input / send are the ask's own marks; detect = the page's completion → "
          "our detection; post = detection → the client has the result, of which extract is reading the answer and "
          "reply the rest: history, the reply, the MCP front and its JSON-RPC)")
    print(f"{'site':<10}{'tree':<6}" + "".join(f"{p:>12}" for p in parts))
    for index, site in enumerate(TITLES[p] for p in providers):
        for name in ("base", "head"):
            mine = [r for r in records[name] if r["site"] == index]
            print(f"{site[:10]:<10}{name:<6}" + "".join(f"{statistics.median([r[p] for r in mine]):>12.1f}"
                                                        for p in parts))
    if rtt["head"]:
        print(f"\n{'relay Runtime.evaluate round trip':<40}{'base':>10}{'head':>10}")
        for p in (50, 90):
            b = statistics.median(rtt["base"]) if p == 50 else pct(rtt["base"], p)
            h = statistics.median(rtt["head"]) if p == 50 else pct(rtt["head"], p)
            print(f"{'  p' + str(p):<40}{b:>8.2f}ms{h:>8.2f}ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="main", help="the commit to compare with (default: main, the release before "
                        "this branch's work)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--asks", type=int, default=6, help="asks per provider and spacing per block")
    parser.add_argument("--calls", type=int, default=0, help="relay round trips per block (0: none)")
    parser.add_argument("--spacings", default="0,1,10,40", help="seconds a tab idles between asks, comma-separated")
    parser.add_argument("--providers", default="chatgpt,gemini", help="the sites to measure, comma-separated")
    a = parser.parse_args()
    trio.run(main, a.base, a.rounds, a.asks, a.calls, [float(x) for x in a.spacings.split(",")],
             a.providers.split(","))
