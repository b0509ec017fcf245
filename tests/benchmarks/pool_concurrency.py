"""Benchmark (issue 38): asks side by side in a provider's pool of tabs, and what a tab costs the browser.

Real path end to end: MCP stdio client → `ai-bridge serve --tabs-per-site 3` → extension in headless Chromium → the
fake sites with the standard scripted generation (first token 400 ms, 10 chunks 100 ms apart = 1.3 s).

    unshare -n sh -c 'ip link set lo up && .venv/bin/python -m tests.benchmarks.pool_concurrency [--rounds 5]'

Figures (printed, never asserted):
- wall time of 1, 3 and 6 concurrent new-chat asks to one site from one MCP session, median over the rounds, and
  its ratio to one ask (goal with 3 tabs: 3 asks ≤ 1.3×, 6 asks ≤ 2.6×); each batch's asks all answered, each
  question sent once;
- the browser's memory per open pool tab: the browser's whole process tree (its renderers included), RSS and PSS
  (PSS shares the pages processes have in common; RSS counts them in each), with one tab per site and with the pools
  full (3 per site), and the difference per added tab.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from tests.benchmarks.procs import process_tree
from tests.e2e import Bridge, open_bridge
from tests.fakesites.fixture import FakeSites, start_fakesites


def memory_kb(pid: int) -> tuple[int, int, int]:
    """(RSS, PSS, processes) of the process tree, in kB."""
    rss = pss = n = 0
    for p in process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
            n += 1
        except OSError:
            continue
    return rss, pss, n


async def batch(b: Bridge, sites: FakeSites, provider: str, n: int, tag: str) -> float:
    """`n` new-chat asks at once (each its own project); the wall time until the last answer."""
    site = getattr(sites, provider)
    before = len(site.log())
    questions = [f"Pool benchmark {tag} ask {i} of {n}: what is {i} plus {n}?" for i in range(n)]
    failures: list[str] = []

    async def one(i: int, q: str) -> None:
        res = await b.call(f"ask_{provider}_web", {"question": q, "project": f"{tag}-{i}", "new_chat": True})
        if res.is_error:
            failures.append(res.content[0].text)

    t0 = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for i, q in enumerate(questions):
            nursery.start_soon(one, i, q)
    wall = (time.perf_counter() - t0) * 1000
    sent = [e["question"] for e in site.log()[before:]]
    if failures or sorted(sent) != sorted(questions):
        raise RuntimeError(f"batch {tag}: failures {failures[:2]}, sent {len(sent)} for {len(questions)} questions")
    return wall


async def main(rounds: int, sizes: list[int], tabs: int) -> None:
    sites = start_fakesites()
    walls: dict[tuple[str, int], list[float]] = {}
    mem: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            env = {"AI_BRIDGE_TABS_PER_SITE": str(tabs)}
            async with open_bridge(sites, Path(tmp), project="bench", env=env) as b:
                for provider in ("chatgpt", "gemini"):
                    res = await b.call(f"ask_{provider}_web", {"question": "Warm-up question 0.", "new_chat": True})
                    assert not res.is_error, res.content[0].text
                pid = int((await b.status())["browser"]["pid"])
                await trio.sleep(2)
                mem["one per site"] = memory_kb(pid)
                for r in range(rounds):
                    for provider in ("chatgpt", "gemini"):
                        for n in sizes:
                            walls.setdefault((provider, n), []).append(
                                await batch(b, sites, provider, n, f"r{r}-{provider}-{n}"))
                    print(f"round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
                await trio.sleep(2)
                status = await b.status()
                mem["pools full"] = memory_kb(pid)
                open_tabs = {p: len(status["pools"][p]["tabs"]) for p in ("chatgpt", "gemini")}
    finally:
        sites.close()

    print(f"\nai-bridge pool benchmark — --tabs-per-site {tabs}, {rounds} rounds, new-chat asks, scripted generation "
          "1.3 s\n")
    print(f"{'site':<8}{'asks':>5}{'wall p50':>11}{'min':>8}{'max':>8}{'× one ask':>11}{'goal':>8}")
    for provider in ("chatgpt", "gemini"):
        one = statistics.median(walls[provider, 1])
        for n in sizes:
            w = walls[provider, n]
            goal = {3: "1.3×", 6: "2.6×"}.get(n, "")
            print(f"{provider:<8}{n:>5}{statistics.median(w):>9.0f}ms{min(w):>6.0f}ms{max(w):>6.0f}ms"
                  f"{statistics.median(w) / one:>10.2f}×{goal:>8}")
    (rss1, pss1, n1), (rss2, pss2, n2) = mem["one per site"], mem["pools full"]
    added = sum(open_tabs.values()) - 2
    print(f"\nbrowser process tree: one tab per site: RSS {rss1 / 1024:.0f} MiB, PSS {pss1 / 1024:.0f} MiB "
          f"({n1} processes); pools full ({open_tabs}): RSS {rss2 / 1024:.0f} MiB, PSS {pss2 / 1024:.0f} MiB "
          f"({n2} processes)")
    if added > 0:
        print(f"per added tab: RSS +{(rss2 - rss1) / added / 1024:.1f} MiB, PSS +{(pss2 - pss1) / added / 1024:.1f} "
              "MiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="1,3,6", help="concurrent asks per batch, comma-separated")
    parser.add_argument("--tabs", type=int, default=3, help="--tabs-per-site")
    a = parser.parse_args()
    trio.run(main, a.rounds, [int(x) for x in a.sizes.split(",")], a.tabs)
