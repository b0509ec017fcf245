"""Benchmark: the relay's CDP round trip next to direct CDP, and launch → extension connected.

    unshare --net sh -c 'ip link set lo up && .venv/bin/python -m tests.benchmarks.relay_vs_direct [--calls 500]'

Relay side: the real actor tree in-process (`supervisor.app.open_bridge`, no MCP front) launches headless Chromium
with the extension; the calls go `bridge.ref(RELAY).call(ExtCommand("cdp.send", ...))` through `CdpTab` — the exact path
the providers use: relay actor → WebSocket → extension service worker → `chrome.debugger.sendCommand` → back.

Direct side: a second headless Chromium driven over `--remote-debugging-pipe` (tests/cdp_pipe.py), on the same page
(the server's self-test page, same URL and content).

Both sides evaluate `1+1` by value; calls alternate relay/direct one by one, so both see the same machine load.
A third row, `ext.info` over the relay, is the floor of the path without any CDP (WebSocket + worker + actor).

Launch → connected: a fresh `serve()` with `--browser launch --headless --isolated` per run; measured from the
browser process's start (/proc starttime) to the relay accepting the extension's hello (`since`), and — as a user
would see it — from calling `serve()` to the relay reporting the link.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from actors.cdp import CdpTab
from actors.protocol.browser import BROWSER, BrowserStatus
from actors.protocol.discovery import DISCOVERY, DiscoveryPort
from actors.protocol.relay import RELAY, ExtCommand, LinkStatus, WaitConnected
from supervisor.app import open_bridge
from supervisor.config import Config, load
from tests.cdp_pipe import CHROMIUM, open_chromium

EXPRESSION = {"expression": "1+1", "returnByValue": True}
CLK_TCK = os.sysconf("SC_CLK_TCK")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def config(state_dir: str) -> Config:
    return load({"state_dir": state_dir, "browser": "launch", "headless": True, "isolated": True,
                 "browser_path": CHROMIUM, "log_level": "warning"},
                env={}, config_file=Path(state_dir) / "no-config.toml")


def process_start_boottime(pid: int) -> float:
    """When `pid` started, in CLOCK_BOOTTIME seconds (10 ms resolution)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[19]) / CLK_TCK


def wall_to_boottime(wall: float) -> float:
    return wall - time.time() + time.clock_gettime(time.CLOCK_BOOTTIME)


async def launch_once(state_dir: str) -> tuple[float, float, float | None]:
    """(browser process start → hello accepted, serve() call → link reported, ai-bridge's own figure) in seconds."""
    t0 = trio.current_time()
    async with open_bridge(config(state_dir)) as bridge:
        relay = bridge.ref(RELAY)
        await relay.call(WaitConnected(20), timeout=25)
        seen = trio.current_time() - t0
        link = await relay.call(LinkStatus(), timeout=5)
        browser = await bridge.ref(BROWSER).call(BrowserStatus(), timeout=5)
        assert link.since is not None and browser.pid is not None
        from_process = wall_to_boottime(link.since) - process_start_boottime(browser.pid)
        await trio.sleep(0.6)  # the browser actor notices the link on its 0.5 s status poll
        own = (await bridge.ref(BROWSER).call(BrowserStatus(), timeout=5)).launch_to_connected_s
    return from_process, seen, own


async def round_trips(calls: int, warmup: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"direct": [], "relay": [], "floor": [], "actor": []}
    with tempfile.TemporaryDirectory(prefix="bench-relay-") as state:
        async with open_bridge(config(state)) as bridge:
            relay = bridge.ref(RELAY)
            await relay.call(WaitConnected(20), timeout=25)
            port = await bridge.ref(DISCOVERY).call(DiscoveryPort(), timeout=5)
            url = f"http://127.0.0.1:{port}/selftest"
            created = await relay.call(ExtCommand("tabs.create", {"url": url, "newWindow": True}, 30), timeout=40)
            tab_id = created["tab"]["tabId"]  # type: ignore[call-overload,index]
            await relay.call(ExtCommand("debugger.attach", {"tabId": tab_id}), timeout=15)
            tab = CdpTab(relay, tab_id)
            assert await tab.evaluate("document.title") == "ai-bridge self-test"

            async with open_chromium() as direct_browser:
                page = await direct_browser.new_page(url)
                assert await page.evaluate("document.title") == "ai-bridge self-test"

                async def relay_eval() -> Any:
                    return await tab.send("Runtime.evaluate", EXPRESSION)

                async def direct_eval() -> Any:
                    return await page.send("Runtime.evaluate", EXPRESSION)

                async def floor() -> Any:
                    return await relay.call(ExtCommand("ext.info", {}, 5), timeout=10)

                async def actor() -> Any:
                    return await relay.call(LinkStatus(), timeout=5)

                runners = {"relay": relay_eval, "direct": direct_eval, "floor": floor, "actor": actor}
                for i in range(warmup + calls):
                    order = ("relay", "direct") if i % 2 == 0 else ("direct", "relay")
                    for name in (*order, "floor", "actor"):
                        t = time.perf_counter()
                        got = await runners[name]()
                        ms = (time.perf_counter() - t) * 1000
                        if name in ("relay", "direct"):
                            assert got["result"]["value"] == 2, got
                        if i >= warmup:
                            samples[name].append(ms)
    return samples


async def main(calls: int, launches: int) -> None:
    samples = await round_trips(calls, warmup=30)
    launch = []
    with tempfile.TemporaryDirectory(prefix="bench-launch-") as state:
        for _ in range(launches):
            launch.append(await launch_once(state))

    d, r, f, a = samples["direct"], samples["relay"], samples["floor"], samples["actor"]
    print(f"\nRuntime.evaluate('1+1') round trip, {calls} calls per side, interleaved (Chromium headless, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})\n")
    print(f"{'path':<52}{'p50':>9}{'p90':>9}{'p99':>9}{'mean':>9}")
    for name, values in (("direct CDP over --remote-debugging-pipe", d),
                         ("relay: actor → WS → extension → chrome.debugger", r),
                         ("relay floor: ext.info (no CDP)", f),
                         ("actor call alone: LinkStatus (no I/O)", a)):
        print(f"{name:<52}{pct(values, 50):>7.2f}ms{pct(values, 90):>7.2f}ms{pct(values, 99):>7.2f}ms"
              f"{statistics.fmean(values):>7.2f}ms")
    ratio50, ratio90 = pct(r, 50) / pct(d, 50), pct(r, 90) / pct(d, 90)
    verdict = "met" if ratio50 <= 1.5 else "NOT met"
    ratio_mean = statistics.fmean(r) / statistics.fmean(d)
    print(f"{'ratio relay / direct':<52}{ratio50:>8.2f}x{ratio90:>8.2f}x{'':>9}{ratio_mean:>8.2f}x"
          f"   goal ≤ 1.5x: {verdict}")
    print(f"{'relay − direct (absolute)':<52}{pct(r, 50) - pct(d, 50):>7.2f}ms{pct(r, 90) - pct(d, 90):>7.2f}ms")

    proc = [x[0] * 1000 for x in launch]
    seen = [x[1] * 1000 for x in launch]
    own = [x[2] * 1000 for x in launch if x[2] is not None]
    print(f"\nlaunch → extension connected, {launches} launches (fresh temporary profile each)\n")
    print(f"{'measured from':<52}{'median':>9}{'min':>9}{'max':>9}{'goal':>11}")
    print(f"{'browser process start → relay accepted the hello':<52}{statistics.median(proc):>7.0f}ms"
          f"{min(proc):>7.0f}ms{max(proc):>7.0f}ms{'≤ 1000ms':>11}")
    print(f"{'serve() called → link reported (tree start-up incl.)':<52}{statistics.median(seen):>7.0f}ms"
          f"{min(seen):>7.0f}ms{max(seen):>7.0f}ms")
    if own:
        print(f"{'bridge_status launchToConnectedS':<52}{statistics.median(own):>7.0f}ms"
              f"{min(own):>7.0f}ms{max(own):>7.0f}ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--launches", type=int, default=5)
    args = parser.parse_args()
    trio.run(main, args.calls, args.launches)
