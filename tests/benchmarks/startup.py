"""Benchmark: `ai-bridge serve` start → MCP initialize answered, and RSS at idle.

    .venv/bin/python -m tests.benchmarks.startup [--runs 7]

Spawns the server with a raw pipe (no client library in the measurement), writes `initialize` at once (clients do
the same), and times the first byte of the reply. RSS is read from /proc after 3 s idle.
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

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def one(state_dir: str) -> tuple[float, float, int, bool]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env["AI_BRIDGE_STATE_DIR"] = state_dir
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "supervisor.app.cli", "serve", "--log-level", "warning"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin and proc.stdout
    proc.stdin.write((json.dumps(INIT) + "\n").encode())
    proc.stdin.flush()
    line = proc.stdout.readline()
    t_init = time.perf_counter() - t0
    ok = json.loads(line).get("result", {}).get("serverInfo", {}).get("name") == "ai-bridge"
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    proc.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
    proc.stdin.flush()
    tools = json.loads(proc.stdout.readline())
    t_tools = time.perf_counter() - t0
    ok = ok and len(tools["result"]["tools"]) >= 6
    time.sleep(3)
    rss = rss_kb(proc.pid)
    proc.stdin.close()
    proc.wait(10)
    proc.stdout.close()
    return t_init, t_tools, rss, ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as state:
        results = [one(state) for _ in range(runs)]
    inits = [r[0] * 1000 for r in results]
    lists = [r[1] * 1000 for r in results]
    rss = [r[2] / 1024 for r in results]
    print(f"\nai-bridge serve start-up, {runs} runs (all replies valid: {all(r[3] for r in results)})\n")
    print(f"{'figure':<40}{'median':>10}{'min':>10}{'max':>10}{'goal':>10}")
    print(f"{'start → initialize answered':<40}{statistics.median(inits):>8.0f}ms{min(inits):>8.0f}ms"
          f"{max(inits):>8.0f}ms{'≤ 1000ms':>10}")
    print(f"{'start → tools/list answered':<40}{statistics.median(lists):>8.0f}ms{min(lists):>8.0f}ms"
          f"{max(lists):>8.0f}ms")
    print(f"{'RSS at idle (3 s after start)':<40}{statistics.median(rss):>7.1f}MiB{min(rss):>7.1f}MiB"
          f"{max(rss):>7.1f}MiB")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp.server.lowlevel, mcp.server.stdio"], check=True)
    print(f"\nfor scale: importing the MCP SDK alone in a fresh interpreter took "
          f"{(time.perf_counter() - t0) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
