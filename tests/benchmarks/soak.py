"""Soak: many asks on the fake sites with faults mixed in, watching the server for leaks.

Real path: MCP stdio client → `ai-bridge serve --allow-faults` → extension in headless Chromium → fake ChatGPT and
Gemini. Every `--fault-every` asks one fault is injected, in turn:
- the extension's WebSocket is dropped (the console's `drop_extension()`),
- the extension's service worker is stopped (DevTools `Target.closeTarget` on the worker),
- the provider tab is closed (DevTools `Target.closeTarget` on the page, as a user closing it).
An ask may fail right after a fault (a typed error); the next one must succeed.

Reported: RSS, open file descriptors and trio tasks of the server at the start (after a warm-up) and at the end,
with their growth; asks answered / failed by error code; faults injected.

    unshare -n sh -c 'ip link set lo up && .venv/bin/python -m tests.benchmarks.soak [--asks 1000]'
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import trio

from tests.e2e import Bridge, DevTools, open_bridge
from tests.fakesites.fixture import start_fakesites

REPO = Path(__file__).resolve().parents[2]
EXT_ORIGIN = "chrome-extension://"


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def console(b: Bridge, code: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env["AI_BRIDGE_STATE_DIR"] = str(b.state_dir)
    proc = await trio.run_process([sys.executable, "-m", "supervisor.app.cli", "console", "-c", code], env=env,
                                  cwd=REPO, capture_stdout=True, capture_stderr=True, check=False)
    return proc.stdout.decode() + proc.stderr.decode()


async def tasks(b: Bridge) -> int:
    m = re.search(r"(\d+) tasks", await console(b, "tasks()"))
    return int(m.group(1)) if m else -1


async def fault(b: Bridge, dt: DevTools, kind: str) -> None:
    if kind == "drop":
        await console(b, "drop_extension()")
        return
    targets = (await dt.send("Target.getTargets"))["targetInfos"]
    if kind == "worker":
        hits = [t for t in targets if t["type"] == "service_worker" and t["url"].startswith(EXT_ORIGIN)]
    else:
        hits = [t for t in targets if t["type"] == "page" and t["url"].startswith(("https://chatgpt.com",
                                                                                    "https://gemini.google.com"))]
    for t in hits[:1]:
        await dt.send("Target.closeTarget", {"targetId": t["targetId"]})


async def main(asks: int, fault_every: int) -> None:
    sites = start_fakesites()
    outcomes: collections.Counter[str] = collections.Counter()
    injected: collections.Counter[str] = collections.Counter()
    kinds = ["drop", "worker", "tab"]
    unrecovered: list[str] = []  # a failed ask that was not its provider's first since a fault
    first_since_fault = {"chatgpt": False, "gemini": False}
    try:
        sites.chatgpt.set_next(chunks=3, intervalMs=10, firstTokenMs=20)
        sites.gemini.set_next(chunks=3, intervalMs=10, firstTokenMs=20)
        with tempfile.TemporaryDirectory() as tmp:
            async with open_bridge(sites, Path(tmp), project="soak", extra=("--allow-faults",)) as b, \
                    b.devtools() as dt:
                pid = (await b.status())["pid"]
                for p in ("chatgpt", "gemini"):  # warm-up: tabs open, imports done, caches full
                    for _ in range(5):
                        await b.call(f"ask_{p}_web", {"question": "Warm-up: what is 1 plus 1?"})
                start = (rss_kib(pid), fds(pid), await tasks(b))
                t0 = time.monotonic()
                for i in range(asks):
                    if fault_every and i and i % fault_every == 0:
                        kind = kinds[(i // fault_every) % len(kinds)]
                        await fault(b, dt, kind)
                        injected[kind] += 1
                        first_since_fault = {"chatgpt": True, "gemini": True}
                    provider = ("chatgpt", "gemini")[i % 2]
                    res = await b.call(f"ask_{provider}_web", {"question": f"Soak question {i}: what is {i} plus 2?",
                                                                "timeout_s": 60})
                    code = "ok" if not res.is_error else res.structured_content["error"]["code"]
                    outcomes[code] += 1
                    if code != "ok" and not first_since_fault[provider]:
                        unrecovered.append(f"ask {i} ({provider}): {code}")
                    first_since_fault[provider] = False
                    if (i + 1) % 100 == 0:
                        print(f"{i + 1} asks, {time.monotonic() - t0:.0f} s, rss {rss_kib(pid)} KiB, "
                              f"fds {fds(pid)}", file=sys.stderr, flush=True)
                await trio.sleep(2)  # let restarts and reconnects settle
                end = (rss_kib(pid), fds(pid), await tasks(b))
                pages = [t for t in (await dt.send("Target.getTargets"))["targetInfos"] if t["type"] == "page"
                         and t["url"].startswith(("https://chatgpt.com", "https://gemini.google.com"))]
    finally:
        sites.close()

    def growth(a: int, z: int) -> str:
        return f"{(z - a) / a * 100:+.1f} %" if a > 0 else "?"

    print(f"\nSoak: {asks} asks (ChatGPT and Gemini alternating), one fault every {fault_every} asks")
    print(f"{'':<22}{'start':>10}{'end':>10}{'growth':>10}")
    for name, a, z in (("RSS (KiB)", start[0], end[0]), ("open fds", start[1], end[1]),
                       ("trio tasks", start[2], end[2])):
        print(f"{name:<22}{a:>10}{z:>10}{growth(a, z):>10}")
    print("outcomes:", dict(outcomes))
    print("faults injected:", dict(injected))
    print(f"provider tabs open at the end: {len(pages)} (one per provider expected; more means tabs left behind)")
    print(f"failures not right after a fault: {len(unrecovered)}" + "".join(f"\n  {u}" for u in unrecovered[:20]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--asks", type=int, default=1000)
    parser.add_argument("--fault-every", type=int, default=25)
    args = parser.parse_args()
    trio.run(main, args.asks, args.fault_every)
