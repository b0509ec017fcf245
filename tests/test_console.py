"""The live console: a running server's actor tree and fault kit, from another process."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import trio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .conftest import REPO, serve_command


async def console(env: dict[str, str], *lines: str) -> str:
    args = [*serve_command(), "console"]
    for line in lines:
        args += ["-c", line]
    proc = await trio.run_process(args, env=env, cwd=REPO, capture_stdout=True, capture_stderr=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode()


async def test_console_inspects_and_faults_a_running_server(server_env: dict[str, str], state_dir: Path) -> None:
    params = StdioServerParameters(command=serve_command()[0], args=[*serve_command()[1:], "serve"],
                                   env=server_env, cwd=str(REPO))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        pid = (await session.call_tool("bridge_status", {})).structured_content["pid"]
        sock = state_dir / f"console-{pid}.sock"
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600  # same user only

        out = await console(server_env, "actors()", "sorted(c['id'] for c in runtime.tree()['children'])")
        assert "'session_store'" in out and "'mcp_front'" in out
        tree = json.loads(await console(server_env, "print(tree())"))
        assert [c["state"] for c in tree["children"]] == ["running"] * len(tree["children"])
        # Top-level await runs in the server's own trio loop.
        out = await console(server_env, "(await call('relay', messages.LinkStatus()))['connected']")
        assert out.strip() == "False"
        # The fault kit, live: the session store crashes on its next message and is restarted by its supervisor.
        out = await console(server_env, "inject('session_store', 'crash')")
        assert "armed crash on session_store" in out
        status = (await session.call_tool("bridge_status", {})).structured_content
        store = next(c for c in status["actors"]["children"] if c["id"] == "session_store")
        assert store["restarts"] == 1 and "injected fault" in store["lastError"]
        out = await console(server_env, "1/0")
        assert "ZeroDivisionError" in out  # errors are shown, the console and server live on
        assert "True" in await console(server_env, "len(actors()) > 3")
    assert not sock.exists()  # removed on shutdown
