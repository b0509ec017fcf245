"""The MCP protocol as third-party clients see it, with the official Python SDK client against the real
`ai-bridge serve` process, in both protocol eras (2025-11-25 via initialize; 2026-07-28 via server/discover, the
SDK's default). No browser: asks run in ``--browser connect`` mode with no extension, so they end with the typed
``extension_not_connected`` error after a few seconds, which is enough to drive the task machinery end to end
(tests/test_e2e_tasks.py does it with real answers).

Covered: annotations and output schemas in tools/list; structured content checked by the client against them;
the unknown tool as the specification's -32602; roots (escaped URIs decoded, no deprecation warning, list_changed);
tasks in both forms (creation, polling, result, cancel rules, missing capability)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import trio
from jsonschema import Draft202012Validator
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from .conftest import REPO
from .mcp_clients import (
    TaskLog,
    cancel_task,
    get_task,
    open_client,
    open_http_client,
    open_http_server,
    server_env,
    tasks_extension,
)
from .test_hardening import listening_on

SERVE = ["serve", "--browser", "connect"]
ASKS = {"ask_chatgpt_gemini_web", "ask_web", "ask_chatgpt_web", "ask_gemini_web", "ask_claude_web", "ask_grok_web",
        "ask_perplexity_web"}
READ_ONLY = {"bridge_status", "list_jobs", "get_answer", "take_cdp_snapshot", "get_page_dom"}
ERAS = ["legacy", "auto"]  # auto = the SDK default, which settles on 2026-07-28 with this server


@pytest.mark.parametrize("mode", ERAS)
async def test_tools_list_has_annotations_and_output_schemas(tmp_path: Path, mode: str) -> None:
    with open(tmp_path / "serve.log", "w") as errlog:
        async with open_client(SERVE, server_env(tmp_path), mode=mode, errlog=errlog) as client:
            assert client.session.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert ASKS | READ_ONLY | {"cancel_job"} <= set(tools)
            for name, tool in tools.items():
                a = tool.annotations
                assert a is not None, name  # every hint said on purpose: MCP's defaults for an unset one are grim
                hints = (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
                assert all(isinstance(h, bool) for h in hints), name
                Draft202012Validator.check_schema(tool.input_schema)
                # Every tool's result is structured: an output schema that is valid JSON Schema with an object root.
                assert tool.output_schema is not None and tool.output_schema["type"] == "object", name
                Draft202012Validator.check_schema(tool.output_schema)
            for name in ASKS | READ_ONLY | {"cancel_job"}:  # the list
                a, tool = tools[name].annotations, tools[name]
                assert a.read_only_hint is (name in READ_ONLY), name
                assert a.open_world_hint is (name in ASKS), name
                assert a.destructive_hint is (name == "cancel_job"), name
                assert tool.title and tool.output_schema is not None, name
            if mode == "legacy":  # 2025-11-25: which tools may run as tasks (the 2026 extension needs no flag)
                assert {n for n, t in tools.items() if t.execution and t.execution.task_support == "optional"} == ASKS
            # The client checks structured content against the output schema on every call.
            status = await client.call_tool("bridge_status", {})
            assert not status.is_error and status.structured_content["pid"] > 0
            assert (await client.call_tool("list_jobs", {})).structured_content == {"jobs": []}
            started = await client.call_tool("ask_gemini_web", {"question": "Hi?", "background": True})
            job_id = started.structured_content["jobId"]
            running = await client.call_tool("get_answer", {"job_id": job_id, "wait_s": 0})
            assert running.structured_content["status"] == "running"
            cancelled = await client.call_tool("cancel_job", {"job_id": job_id})
            assert cancelled.structured_content["status"] == "cancelled"
    assert "Deprecat" not in (tmp_path / "serve.log").read_text()


@pytest.mark.parametrize("mode", ERAS)
async def test_a_client_cancel_leaves_the_server_serving(tmp_path: Path, mode: str) -> None:
    """The client gives up on a call (notifications/cancelled): the server goes on, quietly. (With trio < 0.31 the
    SDK's anyio passes a reason to CancelScope.cancel() and this killed the server: the lowest-versions CI job
    runs this test at the trio floor.)"""
    with open(tmp_path / "serve.log", "w") as errlog:
        async with open_client(SERVE, server_env(tmp_path), mode=mode, errlog=errlog) as client:
            with trio.move_on_after(1.5) as scope:
                await client.call_tool("ask_chatgpt_web", {"question": "Will this be cancelled?"})
            assert scope.cancelled_caught
            await trio.sleep(0.3)
            assert not (await client.call_tool("bridge_status", {})).is_error
    log = (tmp_path / "serve.log").read_text()
    assert "Traceback" not in log, log[-3000:]


@pytest.mark.parametrize("mode", ERAS)
async def test_unknown_tool_is_a_protocol_error(tmp_path: Path, mode: str) -> None:
    # 2025-11-25 and 2026-07-28 (server/tools, "Error Handling"): unknown tools are JSON-RPC error -32602.
    async with open_client(SERVE, server_env(tmp_path), mode=mode) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("no_such_tool", {})
        assert info.value.error.code == types.INVALID_PARAMS
        assert info.value.error.message == "Unknown tool: no_such_tool"
        assert "bridge_status" in info.value.error.data["availableTools"]
        # The session goes on.
        assert not (await client.call_tool("bridge_status", {})).is_error


async def test_roots_are_decoded_quietly_and_follow_list_changed(tmp_path: Path) -> None:
    roots = ["file:///home/me/my%20project%C3%A9"]

    async def list_roots(ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=u) for u in roots])

    env = server_env(tmp_path, {"PYTHONWARNINGS": "default"})  # show every warning the server would print
    with open(tmp_path / "serve.log", "w") as errlog:
        async with open_client(SERVE, env, mode="legacy", errlog=errlog, list_roots_callback=list_roots) as client:
            status = await client.call_tool("bridge_status", {})
            assert status.structured_content["project"] == "my projecté"
            roots[:] = ["file:///srv/other%2Dproject/"]
            with pytest.warns(MCPDeprecationWarning):  # the client's own method says roots are deprecated
                await client.session.send_roots_list_changed()
            with trio.fail_after(5):
                while (await client.call_tool("bridge_status", {})).structured_content["project"] != "other-project":
                    await trio.sleep(0.05)
    assert "Deprecat" not in (tmp_path / "serve.log").read_text()


async def test_project_option_wins_over_roots(tmp_path: Path) -> None:
    async def list_roots(ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///home/me/rooted")])

    async with open_client([*SERVE, "--project", "pinned"], server_env(tmp_path), mode="legacy",
                           list_roots_callback=list_roots) as client:
        assert (await client.call_tool("bridge_status", {})).structured_content["project"] == "pinned"


async def test_task_extension_2026(tmp_path: Path) -> None:
    log = TaskLog()
    args = {"question": "What is 2 + 2?", "timeout_s": 5}
    async with open_client(SERVE, server_env(tmp_path), extensions=[tasks_extension(log)]) as client:
        assert client.session.protocol_version == "2026-07-28"
        caps = client.session.discover_result.capabilities
        assert "io.modelcontextprotocol/tasks" in (caps.extensions or {})
        with trio.fail_after(30):
            result = await client.call_tool("ask_chatgpt_web", args)
        # The ask ran as a task (created at once, polled) and ended with the ask's own typed error, as a result.
        (created,) = log.created
        assert created.status == "working" and created.ttl_ms and created.poll_interval_ms
        assert len(created.task_id) >= 22  # 128 random bits
        assert log.polls[0][0] == "working" and log.polls[0][1].startswith("ChatGPT")
        assert log.polls[-1][0] == "completed"  # a tool error is still a completed task in this extension
        assert result.is_error and result.structured_content["error"]["code"] == "extension_not_connected"
        again = await get_task(client.session, created.task_id)
        assert again.status == "completed" and again.result["isError"] is True
        # A cancel after the end is acknowledged and changes nothing; an unknown task is -32602.
        await cancel_task(client.session, created.task_id)
        assert (await get_task(client.session, created.task_id)).status == "completed"
        with pytest.raises(MCPError) as info:
            await get_task(client.session, "no-such-task")
        assert info.value.error.code == types.INVALID_PARAMS
        # Tools that are not asks answer directly.
        assert not (await client.call_tool("bridge_status", {})).is_error and len(log.created) == 1
        # The job behind the task is an ordinary background job.
        jobs = (await client.call_tool("list_jobs", {})).structured_content["jobs"]
        assert [j["tool"] for j in jobs] == ["ask_chatgpt_web"]

    # Without the extension the same ask is an ordinary call, and tasks/* are refused with -32021.
    async with open_client(SERVE, server_env(tmp_path)) as client:
        with pytest.raises(MCPError) as info:
            await get_task(client.session, created.task_id)
        assert info.value.error.code == -32021
        assert "io.modelcontextprotocol/tasks" in json.dumps(info.value.error.data)


def _rpc(proc: subprocess.Popen[bytes], msg: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()


def _read(proc: subprocess.Popen[bytes], want_id: int, seen: list[dict[str, Any]]) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        msg = json.loads(proc.stdout.readline())
        seen.append(msg)
        if msg.get("id") == want_id and "method" not in msg:
            return msg


async def test_tasks_2025_11_25_on_the_wire(tmp_path: Path) -> None:
    """The 2025-11-25 task methods byte for byte (the Python SDK 2.x client has no API for them; the TypeScript
    SDK client drives them in tests/test_third_party_clients.py)."""
    proc = subprocess.Popen([sys.executable, "-m", "supervisor.app.cli", *SERVE], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=server_env(tmp_path), cwd=REPO)
    seen: list[dict[str, Any]] = []

    async def call(n: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        _rpc(proc, {"jsonrpc": "2.0", "id": n, "method": method, "params": params})
        return await trio.to_thread.run_sync(_read, proc, n, seen)

    try:
        with trio.fail_after(60):
            init = await call(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                "clientInfo": {"name": "wire", "version": "1"}})
            assert init["result"]["capabilities"]["tasks"] == {"list": {}, "cancel": {},
                                                               "requests": {"tools": {"call": {}}}}
            _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            created = await call(2, "tools/call", {"name": "ask_gemini_web", "task": {"ttl": 120000},
                                                   "arguments": {"question": "Hi?", "timeout_s": 5},
                                                   "_meta": {"progressToken": "p1"}})
            task = created["result"]["task"]
            assert task["status"] == "working" and task["ttl"] == 120000 and task["pollInterval"] > 0
            tid = task["taskId"]
            got = await call(3, "tasks/get", {"taskId": tid})
            assert got["result"]["taskId"] == tid and got["result"]["status"] in ("working", "failed")
            listed = await call(4, "tasks/list", {})
            assert [t["taskId"] for t in listed["result"]["tasks"]] == [tid]
            # tasks/result blocks until the task ends, then answers exactly as the call would have.
            result = (await call(5, "tasks/result", {"taskId": tid}))["result"]
            assert result["isError"] is True and result["structuredContent"]["error"]["code"] == \
                "extension_not_connected"
            assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": tid}
            final = (await call(6, "tasks/get", {"taskId": tid}))["result"]
            assert final["status"] == "failed" and "extension_not_connected" in final["statusMessage"]
            # The rules for errors.
            terminal = await call(7, "tasks/cancel", {"taskId": tid})
            assert terminal["error"]["code"] == -32602 and "terminal status 'failed'" in terminal["error"]["message"]
            assert (await call(8, "tasks/get", {"taskId": "nope"}))["error"]["code"] == -32602
            no_task = await call(9, "tools/call", {"name": "bridge_status", "arguments": {}, "task": {}})
            assert no_task["error"]["code"] == -32601
            bad_args = await call(10, "tools/call", {"name": "ask_gemini_web", "arguments": {"nope": 1}, "task": {}})
            early = bad_args["result"]["task"]
            assert early["status"] == "failed" and "unknown argument 'nope'" in early["statusMessage"]
            unknown = await call(11, "tools/call", {"name": "no_such_tool", "arguments": {}, "task": {}})
            assert unknown["error"]["code"] == -32602
            # Cancelling a running task: cancelled at once, and so it stays.
            running = (await call(12, "tools/call", {"name": "ask_chatgpt_web", "task": {},
                                                     "arguments": {"question": "Hi again?"}}))["result"]["task"]
            cancelled = (await call(13, "tasks/cancel", {"taskId": running["taskId"]}))["result"]
            assert cancelled["status"] == "cancelled"
            assert (await call(14, "tasks/get", {"taskId": running["taskId"]}))["result"]["status"] == "cancelled"
            after = (await call(15, "tasks/result", {"taskId": running["taskId"]}))["result"]
            assert after["isError"] is True
            assert (await call(16, "tasks/get", {"taskId": running["taskId"]}))["result"]["status"] == "cancelled"
        # Progress kept flowing on the call's token after the call returned, tagged with the task.
        progress = [m["params"] for m in seen if m.get("method") == "notifications/progress"]
        assert progress and all(p["progressToken"] == "p1" for p in progress)
        assert progress[0]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": tid}
        assert progress[0]["message"].startswith("Gemini")
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        rc = await trio.to_thread.run_sync(proc.wait, 10)
        assert rc == 0
        if proc.stdout is not None:
            proc.stdout.close()


def test_requests_piped_before_eof_are_answered(tmp_path: Path) -> None:
    """A script that pipes its requests and closes stdin still gets the quick replies (stdio.EOF_GRACE_S)."""
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_jobs", "arguments": {}}}]
    done = subprocess.run([sys.executable, "-m", "supervisor.app.cli", *SERVE],
                          input="".join(json.dumps(m) + "\n" for m in lines).encode(), capture_output=True,
                          env=server_env(tmp_path), cwd=REPO, timeout=60)
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert set(replies) == {1, 2, 3} and replies[3]["result"]["structuredContent"] == {"jobs": []}
    assert done.returncode == 0


# --- MCP over HTTP: many clients on one server (issue 38 item 6) ---------------------------------------------------


# The SDK's HTTP client leaves its streams' async generators to the garbage collector when it closes under trio.
@pytest.mark.filterwarnings("ignore:Exception ignored in. <async_generator object"
                            ":pytest.PytestUnraisableExceptionWarning")
async def test_clients_of_both_eras_share_one_server_over_http_behind_its_door(tmp_path: Path) -> None:
    async with open_http_server(SERVE, server_env(tmp_path), tmp_path) as http:
        assert listening_on(http.port) == {"127.0.0.1"}  # loopback only
        # The door: no token, a wrong one, a web page's Origin, a rebinding Host: refused before the SDK sees them.
        for headers, status in (({}, 401), ({"Authorization": "Bearer " + "x" * 43}, 401),
                                ({**http.auth, "Origin": "https://evil.example"}, 403),
                                ({**http.auth, "Host": f"evil.example:{http.port}"}, 403)):
            assert await trio.to_thread.run_sync(http.post, headers) == status, headers
        seen: dict[str, Any] = {}

        async def client(mode: str) -> None:
            async with open_http_client(http, mode=mode) as c:
                seen[mode] = (c.session.protocol_version, len((await c.list_tools()).tools),
                              (await c.call_tool("bridge_status", {})).structured_content["pid"])

        async with trio.open_nursery() as n:  # two clients at once, one of each protocol era
            n.start_soon(client, "legacy")
            n.start_soon(client, "auto")
        assert seen["legacy"][0] == "2025-11-25" and seen["auto"][0] == "2026-07-28"
        assert seen["legacy"][1:] == seen["auto"][1:]  # the same tools, the same server
    stderr = http.stderr()
    assert "refused: missing or wrong bearer token" in stderr and "Origin" in stderr and "Traceback" not in stderr
