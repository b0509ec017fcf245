"""Benchmark: the same script of browser-tool calls against ai-bridge and Microsoft's Playwright MCP, side by side.

    # Playwright MCP is not a dependency: install it outside the repository (or in a .gitignored folder).
    mkdir -p /tmp/pwmcp && (cd /tmp/pwmcp && npm init -y >/dev/null && npm install @playwright/mcp)
    unshare --net sh -c 'ip link set lo up && .venv/bin/python -m tests.benchmarks.browser_tools_vs_playwright \
        [--runs 20] [--playwright /tmp/pwmcp]'

Both servers run headless on the same installed Chromium and are driven by the same MCP client (the SDK's stdio
client), against the same local page (tests/toolsite, /bench: a documentation-like page with navigation, an article,
a table and a search form) reached over TLS at https://allowed.test. One run of the script is: navigate, snapshot,
click by ref (a button found in that snapshot), type by ref (into the search box), viewport screenshot, full-page
screenshot, get the page's text (Playwright MCP has no such tool: `browser_evaluate` of document.body.innerText).
Then, on a second page (/bench-extra, reached untimed), the calls issue 24 added: upload a project file into a file
input (Playwright MCP: click the input, then `browser_file_upload`), click a button inside a same-origin iframe,
click one inside a cross-site iframe (https://widget.test, an out-of-process frame; ai-bridge allows that site too),
emulate a viewport size (Playwright MCP: `browser_resize`; the size alternates so no call is a no-op) and read the
network log (`browser_network_requests`).
Runs alternate between the two servers (ABAB..., the first of each pair swapped every run) so both see the same
machine load; the first two runs of each are warm-up and not counted. Wall time per call is measured at the client.
RSS is the server process plus its browser processes (every descendant), after the runs.

The figures go to docs/benchmarks.md. This is a script that prints numbers, not a timed test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.benchmarks.procs import process_tree
from tests.conftest import REPO
from tests.toolsite.fixture import Browsed, ToolSite, start_toolsite

CHROMIUM = os.environ.get("AI_BRIDGE_CHROMIUM", "/usr/lib/chromium/chromium")
URL = "https://allowed.test/bench"
CALLS = ("navigate", "snapshot", "click", "type", "screenshot", "screenshot_full", "get_text")
EXTRA_URL = "https://allowed.test/bench-extra"
EXTRA_CALLS = ("upload", "frame_click", "xframe_click", "emulate", "network_log")
UPLOAD = "README.md"  # relative to the project folder (ai-bridge's working directory, the repository)
WARMUP = 2


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def ref_in(snapshot: str, needle: str) -> str:
    for line in snapshot.splitlines():
        if needle in line and "[ref=" in line:
            return line.rsplit("[ref=", 1)[1].split("]")[0]
    raise AssertionError(f"no {needle!r} with a ref in the snapshot:\n{snapshot[:2000]}")


def tree_rss_mib(pid: int) -> float:
    """RSS of `pid` and all its descendants (the server and its browser), from /proc."""
    total = 0
    for p in process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


class Server:
    name: str

    def __init__(self, session: ClientSession, pid: int) -> None:
        self.session = session
        self.pid = pid

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        res = await self.session.call_tool(tool, args)
        if res.is_error:
            raise RuntimeError(f"{self.name} {tool}: {res.content[0].text[:500]}")
        return res

    async def script(self) -> dict[str, float]:
        raise NotImplementedError

    async def extra(self, run: int) -> dict[str, float]:
        raise NotImplementedError


async def timed(out: dict[str, float], key: str, call: Awaitable[Any]) -> Any:
    t0 = trio.current_time()
    res = await call
    out[key] = (trio.current_time() - t0) * 1000
    return res


class AiBridge(Server):
    name = "ai-bridge"

    async def script(self) -> dict[str, float]:
        t: dict[str, float] = {}
        await timed(t, "navigate", self.call("navigate", {"url": URL}))
        snap = (await timed(t, "snapshot", self.call("snapshot", {}))).structured_content["snapshot"]
        await timed(t, "click", self.call("click", {"ref": ref_in(snap, 'button "Load more"')}))
        await timed(t, "type", self.call("type", {"ref": ref_in(snap, 'searchbox "Search"'), "text": "snapshot"}))
        await timed(t, "screenshot", self.call("screenshot", {}))
        await timed(t, "screenshot_full", self.call("screenshot", {"mode": "full_page"}))
        text = (await timed(t, "get_text", self.call("get_text", {}))).structured_content["text"]
        assert "Loaded more" in text and "Getting started" in text, text[:300]
        return t

    async def extra(self, run: int) -> dict[str, float]:
        t: dict[str, float] = {}
        await self.call("navigate", {"url": EXTRA_URL})
        snap = (await self.call("snapshot", {})).structured_content["snapshot"]
        await timed(t, "upload", self.call("upload_file", {"ref": ref_in(snap, 'Attachment'), "paths": [UPLOAD]}))
        await timed(t, "frame_click", self.call("click", {"ref": ref_in(snap, 'button "Frame button"')}))
        await timed(t, "xframe_click", self.call("click", {"ref": ref_in(snap, 'button "Pay now"')}))
        await timed(t, "emulate", self.call("emulate", {"width": 800 + run % 2 * 100, "height": 600}))
        log = await timed(t, "network_log", self.call("network_log", {}))
        assert any(e["url"].endswith("/api/data") for e in log.structured_content["entries"])
        return t


class PlaywrightMcp(Server):
    name = "Playwright MCP"
    upload_path = REPO / UPLOAD  # set to a copy inside its allowed roots (its working directory) before the runs

    async def script(self) -> dict[str, float]:
        t: dict[str, float] = {}
        await timed(t, "navigate", self.call("browser_navigate", {"url": URL}))
        snap = (await timed(t, "snapshot", self.call("browser_snapshot", {}))).content[0].text
        await timed(t, "click", self.call("browser_click", {"element": "Load more button",
                                                            "target": ref_in(snap, 'button "Load more"')}))
        await timed(t, "type", self.call("browser_type", {"element": "Search box", "target": ref_in(snap, "searchbox"),
                                                          "text": "snapshot"}))
        await timed(t, "screenshot", self.call("browser_take_screenshot", {"type": "png"}))
        await timed(t, "screenshot_full", self.call("browser_take_screenshot", {"type": "png", "fullPage": True}))
        res = await timed(t, "get_text", self.call("browser_evaluate", {"function": "() => document.body.innerText"}))
        assert "Loaded more" in res.content[0].text, res.content[0].text[:300]
        return t

    async def extra(self, run: int) -> dict[str, float]:
        t: dict[str, float] = {}
        await self.call("browser_navigate", {"url": EXTRA_URL})
        snap = (await self.call("browser_snapshot", {})).content[0].text

        async def upload() -> None:
            await self.call("browser_click", {"element": "Attachment", "target": ref_in(snap, "Attachment")})
            await self.call("browser_file_upload", {"paths": [str(self.upload_path)]})

        await timed(t, "upload", upload())
        await timed(t, "frame_click", self.call("browser_click", {"element": "Frame button",
                                                                  "target": ref_in(snap, 'button "Frame button"')}))
        await timed(t, "xframe_click", self.call("browser_click", {"element": "Pay now button",
                                                                   "target": ref_in(snap, 'button "Pay now"')}))
        await timed(t, "emulate", self.call("browser_resize", {"width": 800 + run % 2 * 100, "height": 600}))
        log = await timed(t, "network_log", self.call("browser_network_requests", {}))
        assert "/api/data" in log.content[0].text, log.content[0].text[:300]
        return t


@asynccontextmanager
async def session(params: StdioServerParameters, errlog: Path) -> AsyncIterator[tuple[ClientSession, int]]:
    with open(errlog, "w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            yield s, server_pid(params)


def server_pid(params: StdioServerParameters) -> int:
    """The pid of the server the client spawned: our newest child running that command."""
    me = os.getpid()
    best = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == me and params.args[0].encode() in cmd:
            best = max(best, int(entry))
    return best


async def run(runs: int, playwright: Path) -> None:
    site: ToolSite = start_toolsite()
    tmp = Path(tempfile.mkdtemp(prefix="bench-tools-"))
    try:
        browser_args = Browsed(site).chromium_args()
        env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
        env.update(AI_BRIDGE_STATE_DIR=str(tmp / "state"), XDG_CONFIG_HOME=str(tmp / "config"), PYTHONUNBUFFERED="1")
        ours = StdioServerParameters(command=sys.executable, cwd=str(REPO), env=env, args=[
            "-m", "supervisor.app.cli", "serve", "--browser", "launch", "--headless", "--isolated",
            f"--browser-path={CHROMIUM}", "--enable-mutations", "--allow-domain", "allowed.test", "--allow-domain",
            "widget.test", "--log-level",
            "warning", *[f"--browser-arg={a}" for a in browser_args]])
        config = tmp / "playwright.json"
        config.write_text(json.dumps({"browser": {"browserName": "chromium", "isolated": True, "launchOptions": {
            "executablePath": CHROMIUM, "headless": True, "chromiumSandbox": False,
            "args": [*browser_args, "--disable-background-networking", "--disable-component-update"]}},
            "outputDir": str(tmp / "pw-out")}))
        theirs = StdioServerParameters(command="node", cwd=str(tmp), args=[
            str(playwright / "node_modules" / "@playwright" / "mcp" / "cli.js"), "--headless", "--no-sandbox",
            "--executable-path", CHROMIUM, "--isolated", "--config", str(config)])
        async with session(ours, tmp / "ai-bridge.log") as (s1, pid1), session(theirs, tmp / "pw.log") as (s2, pid2):
            pw = PlaywrightMcp(s2, pid2)
            pw.upload_path = tmp / Path(UPLOAD).name
            shutil.copyfile(REPO / UPLOAD, pw.upload_path)
            servers: list[Server] = [AiBridge(s1, pid1), pw]
            await servers[0].call("tab_new", {})
            times: dict[str, dict[str, list[float]]] = {s.name: {c: [] for c in CALLS + EXTRA_CALLS}
                                                          for s in servers}
            for i in range(runs + WARMUP):
                order = servers if i % 2 == 0 else servers[::-1]
                for server in order:
                    got = await server.script()
                    got.update(await server.extra(i))
                    if i >= WARMUP:
                        for call, ms in got.items():
                            times[server.name][call].append(ms)
                print(f"run {i + 1}/{runs + WARMUP}", file=sys.stderr)
            rss = {s.name: tree_rss_mib(s.pid) for s in servers}
        report(times, rss, runs)
    finally:
        site.close()
        shutil.rmtree(tmp, ignore_errors=True)


def report(times: dict[str, dict[str, list[float]]], rss: dict[str, float], runs: int) -> None:
    ours, theirs = times["ai-bridge"], times["Playwright MCP"]
    print(f"\n{runs} runs each, interleaved (load average {os.getloadavg()[0]:.2f})\n")
    print("| call | ai-bridge p50 | ai-bridge p90 | Playwright MCP p50 | Playwright MCP p90 | p50 ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for call in CALLS + EXTRA_CALLS:
        a, b = ours[call], theirs[call]
        print(f"| {call} | {statistics.median(a):.1f} ms | {pct(a, 90):.1f} ms | {statistics.median(b):.1f} ms | "
              f"{pct(b, 90):.1f} ms | {statistics.median(b) / statistics.median(a):.2f}× |")
    both_a = [s + c for s, c in zip(ours["snapshot"], ours["click"], strict=True)]
    both_b = [s + c for s, c in zip(theirs["snapshot"], theirs["click"], strict=True)]
    print(f"| snapshot + click | {statistics.median(both_a):.1f} ms | {pct(both_a, 90):.1f} ms | "
          f"{statistics.median(both_b):.1f} ms | {pct(both_b, 90):.1f} ms | "
          f"{statistics.median(both_b) / statistics.median(both_a):.2f}× |")
    whole_a = [sum(ours[c][i] for c in CALLS) for i in range(runs)]
    whole_b = [sum(theirs[c][i] for c in CALLS) for i in range(runs)]
    print(f"| whole script | {statistics.median(whole_a):.1f} ms | {pct(whole_a, 90):.1f} ms | "
          f"{statistics.median(whole_b):.1f} ms | {pct(whole_b, 90):.1f} ms | "
          f"{statistics.median(whole_b) / statistics.median(whole_a):.2f}× |")
    print(f"\nRSS after the runs (server + browser processes): ai-bridge {rss['ai-bridge']:.0f} MiB, "
          f"Playwright MCP {rss['Playwright MCP']:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--playwright", type=Path, default=Path(os.environ.get("PLAYWRIGHT_MCP_DIR", "/tmp/pwmcp")),
                        help="folder where `npm install @playwright/mcp` was run")
    args = parser.parse_args()
    if not (args.playwright / "node_modules" / "@playwright" / "mcp" / "cli.js").is_file():
        sys.exit(f"Playwright MCP not found under {args.playwright}: "
                 f"(cd {args.playwright} && npm init -y && npm install @playwright/mcp)")
    trio.run(run, args.runs, args.playwright)


if __name__ == "__main__":
    main()
