"""`ai-bridge serve` as a real subprocess, driven by the MCP SDK's own stdio client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .conftest import REPO, process_alive, serve_command


async def _wait_gone(pid: int) -> None:
    with trio.fail_after(30):  # a guard for a hang: how the process ended is checked in its log
        while process_alive(pid):
            await trio.sleep(0.02)


async def _handling(env: dict[str, str], actor: str) -> bool:
    """Is `actor` handling a request now? The server's own tree, seen through `ai-bridge console` (which does not
    go through the actors it shows)."""
    got = await trio.run_process([*serve_command(), "console", "-c", "tree()"], env=env, cwd=REPO,
                                 capture_stdout=True, capture_stderr=True, check=False)
    return any(actor in line and " handling " in line for line in got.stdout.decode().splitlines())


async def test_initialize_list_tools_and_bridge_status(server_env: dict[str, str], state_dir: Path) -> None:
    params = StdioServerParameters(command=serve_command()[0], args=[*serve_command()[1:], "serve"],
                                   env=server_env, cwd=str(REPO))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "ai-bridge"
        tools = await session.list_tools()
        names = {t.name for t in tools.tools}
        assert "bridge_status" in names
        result = await session.call_tool("bridge_status", {})
        assert not result.is_error
        status = result.structured_content
        assert status["stateDir"] == str(state_dir)
        assert status["versions"]["aiBridge"]
        ids = [c["id"] for c in status["actors"]["children"]]
        assert ids == ["store", "link", "providers", "tools", "services", "mcp_front"]

        def leaves(node: dict) -> list[dict]:  # type: ignore[type-arg]
            kids = node.get("children")
            return [leaf for c in kids for leaf in leaves(c)] if kids else [node]

        assert {leaf["id"]: leaf["state"] for leaf in leaves(status["actors"])} == {
            n: "running" for n in ("session_store", "relay", "discovery", "browser", "chatgpt", "gemini", "claude",
                                   "grok", "perplexity", "browser_tools", "jobs", "console", "mcp_front")}
        # Bad arguments are a clear tool error, not a crash.
        bad = await session.call_tool("bridge_status", {"nope": 1})
        assert bad.is_error and "unknown argument 'nope'" in bad.content[0].text
    # The log file went to the state dir, and stdout carried nothing but JSON-RPC (the client would have failed).
    log_text = (state_dir / "ai-bridge.log").read_text()
    assert "serving" in log_text
    # initialize was answered before the SDK finished importing; the SDK's own reply was identical.
    assert "early initialize reply differed" not in log_text


async def test_stdin_eof_exits_zero_quickly(server_env: dict[str, str], state_dir: Path) -> None:
    proc = subprocess.Popen([*serve_command(), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=server_env, cwd=REPO)
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps(init) + "\n").encode())
        proc.stdin.flush()
        line = await trio.to_thread.run_sync(proc.stdout.readline)
        assert json.loads(line)["id"] == 1
        proc.stdin.close()
        rc = await trio.to_thread.run_sync(proc.wait, 60)  # a guard for a hang
        assert rc == 0
        # Quickly: the graceful stop finished by itself, with nothing left to cancel after its grace.
        log = (state_dir / "ai-bridge.log").read_text()
        assert "shutting down (stdin closed)" in log and "app: stopped" in log and "cancelling them" not in log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
async def test_signal_during_a_slow_call_exits_within_3s(server_env: dict[str, str], state_dir: Path,
                                                         signum: int) -> None:
    # The fault kit makes the session store take 60 s over its next message: bridge_status's history read.
    env = {**server_env, "AI_BRIDGE_ALLOW_FAULTS": "1",
           "AI_BRIDGE_INJECT_FAULTS": "session_store:slow:0,session_store:slow:60"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "supervisor.app.cli", "serve"], env=env,
                                   cwd=str(REPO))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        status = await session.call_tool("bridge_status", {})  # consumes the 0 s fault; tells us the pid
        pid = status.structured_content["pid"]
        async with trio.open_nursery() as nursery:
            slow_call_ended = trio.Event()

            async def slow_call() -> None:
                try:
                    await session.call_tool("bridge_status", {})
                except Exception:
                    pass  # the connection dies with the server: that is the point
                finally:
                    slow_call_ended.set()

            nursery.start_soon(slow_call)
            with trio.fail_after(30):
                while not await _handling(env, "session_store"):  # the slow call is there
                    await trio.sleep(0.05)
            os.kill(pid, signum)
            await _wait_gone(pid)
            nursery.cancel_scope.cancel()
    # Within 3 s: the graceful stop finished inside its 3 s grace (nothing was left to cancel after it, and the 5 s
    # hard exit never came), the slow call notwithstanding.
    log = (state_dir / "ai-bridge.log").read_text()
    name = signal.Signals(signum).name
    assert f"shutting down ({name})" in log and f"stopped ({name})" in log
    assert "cancelling them" not in log and "exiting hard" not in log


async def test_bad_config_is_one_clear_line_and_exit_2(server_env: dict[str, str]) -> None:
    env = {**server_env, "AI_BRIDGE_BROWSER": "firefox-nightly-please"}
    env["AI_BRIDGE_LOG_LEVEL"] = "loud"
    proc = await trio.run_process([*serve_command(), "serve"], env=env, cwd=REPO, capture_stdout=True,
                                  capture_stderr=True, check=False, stdin=b"")
    assert proc.returncode == 2
    err = proc.stderr.decode().strip()
    assert err == "ai-bridge: environment AI_BRIDGE_LOG_LEVEL: expected one of debug, info, warning, error, got 'loud'"
    assert proc.stdout == b""
