"""Benchmark: what `tools/list` costs an agent's context, for each `serve --tools` choice.

    .venv/bin/python -m tests.benchmarks.tools_list_size [--sets asks,asks+inspect,browser,all]

Starts a real `ai-bridge serve` per choice with a raw pipe, sends `initialize` and `tools/list`, and measures the
`result` of the reply as the client receives it: its compact JSON bytes, the tool count, and a token estimate of
bytes / 4 (about 4 characters per token for English and JSON with a BPE tokenizer; an estimate, not a tokenizer's
count). No browser is started: listing tools needs none.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
CHARS_PER_TOKEN = 4


def measure(sets: str, state_dir: str, extra: list[str]) -> tuple[int, int]:
    """(tools listed, bytes of the tools/list result) for ``serve --tools SETS`` ("" = the default)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env.update({"AI_BRIDGE_STATE_DIR": state_dir, "XDG_CONFIG_HOME": os.path.join(state_dir, "config")})
    args = [sys.executable, "-m", "supervisor.app.cli", "serve", "--log-level", "warning", *extra]
    if sets:
        args += ["--tools", sets]
    requests = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    proc = subprocess.run(args, input="".join(json.dumps(r) + "\n" for r in requests), capture_output=True,
                          text=True, env=env, timeout=120)
    for line in proc.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("id") == 2:
            result = msg["result"]
            return len(result["tools"]), len(json.dumps(result, separators=(",", ":")).encode())
    raise RuntimeError(f"no tools/list reply (exit {proc.returncode}): {proc.stderr[-500:]}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="default,browser,default --allow-domain example.com,all",
                    help="comma-separated choices; + joins families; 'default' is no --tools flag")
    opts = ap.parse_args()
    print("| `serve` | tools | bytes | ~tokens (bytes/4) |\n|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for choice in opts.sets.split(","):
            words = choice.split()
            sets, extra = (words[0] if words else ""), words[1:]
            flag = "" if sets == "default" else sets.replace("+", ",")
            n, size = measure(flag, tmp, extra)
            shown = " ".join(["(default)" if not flag else f"--tools {flag}", *extra])
            print(f"| {shown} | {n} | {size:,} | {size // CHARS_PER_TOKEN:,} |")


if __name__ == "__main__":
    main()
