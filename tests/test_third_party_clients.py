"""`ai-bridge serve` driven by MCP clients this project did not write, installed from npm with a Node of their own
(tests/npm_clients.py): the MCP Inspector CLI and the TypeScript SDK client (protocol 2025-11-25).

Without a browser: tools/list (annotations, output schemas, the Inspector's --strict portability check, Ajv strict
compilation of every schema), the structured result checked by the client, root URIs with escapes, the unknown
tool. With real Chromium and the fake sites: task-augmented asks to completion and to cancel (TypeScript SDK), the
`project` argument winning over the client's roots (Inspector), and a Python SDK client and a TypeScript SDK client
asking side by side through one server over HTTP (`serve --http-port`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from .e2e import requires_chromium, server_args
from .fakesites.fixture import FakeSites
from .fakesites.scripting import answer_ref
from .mcp_clients import open_http_client, open_http_server
from .npm_clients import clean_env, inspector_cli, install, run_ts_client, server_command
from .test_hardening import listening_on

ROOT = "file:///home/me/my%20project%C3%A9"
ASKS = {"ask_chatgpt_gemini_web", "ask_web", "ask_chatgpt_web", "ask_gemini_web", "ask_claude_web", "ask_grok_web",
        "ask_perplexity_web"}
READ_ONLY = {"bridge_status", "list_jobs", "get_answer", "take_cdp_snapshot", "get_page_dom"}


@pytest.fixture(scope="module")
def npm_prefix() -> Path:
    return install()


def inspector(prefix: Path, tmp: Path, server: dict[str, Any], *args: str, roots: list[str] = (),  # type: ignore[assignment]
              timeout: float = 120) -> tuple[int, dict[str, Any], str]:
    """One Inspector CLI run against `server` (from a config file, so that it can carry roots)."""
    config = tmp / "mcp.json"
    entry = {**server, "roots": [{"uri": uri, "name": "root"} for uri in roots]}
    config.write_text(json.dumps({"mcpServers": {"ai-bridge": entry}}))
    done = subprocess.run([*inspector_cli(prefix), "--config", str(config), "--server", "ai-bridge", "--format",
                           "json", *args], capture_output=True, text=True, timeout=timeout, cwd=tmp,
                          env=clean_env({"HOME": str(tmp)}))
    out = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, out, done.stderr


def no_warning_printed(stderr: str) -> None:
    assert "Deprecat" not in stderr and "Traceback" not in stderr, stderr[-3000:]


def plain_server(tmp: Path, *flags: str) -> dict[str, Any]:
    return {**server_command(["serve", "--browser", "connect", *flags]),
            "env": {"AI_BRIDGE_STATE_DIR": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "config"),
                    "AI_BRIDGE_TOOLS": "all"}}


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_lists_tools_strictly(npm_prefix: Path, tmp_path: Path, era: str) -> None:
    rc, out, err = inspector(npm_prefix, tmp_path, plain_server(tmp_path), "--method", "tools/list", "--strict",
                             "--protocol-era", era)
    assert rc == 0, err[-3000:]  # --strict exits 6 on any error-severity schema portability problem
    tools = {t["name"]: t for t in out["result"]["tools"]}
    assert ASKS | READ_ONLY <= set(tools)
    for name, tool in tools.items():  # every tool's result is structured
        assert tool["outputSchema"]["type"] == "object", name
    for name in ASKS | READ_ONLY | {"cancel_job"}:
        a = tools[name]["annotations"]
        assert a["readOnlyHint"] is (name in READ_ONLY) and a["openWorldHint"] is (name in ASKS), name
        assert a["destructiveHint"] is (name == "cancel_job"), name
    if era == "legacy":
        assert {n for n, t in tools.items() if t.get("execution", {}).get("taskSupport") == "optional"} == ASKS
    no_warning_printed(err)


def test_inspector_roots_with_escapes(npm_prefix: Path, tmp_path: Path) -> None:
    rc, out, err = inspector(npm_prefix, tmp_path, plain_server(tmp_path), "--method", "tools/call", "--tool-name",
                             "bridge_status", roots=[ROOT])
    assert rc == 0, err[-3000:]
    assert out["result"]["structuredContent"]["project"] == "my projecté"
    no_warning_printed(err)


def test_typescript_sdk_schemas_roots_and_unknown_tool(npm_prefix: Path, tmp_path: Path) -> None:
    server = plain_server(tmp_path)
    out = run_ts_client(npm_prefix, {**server, "env": clean_env(server["env"]), "scenario": "list", "root": ROOT})
    assert out["serverCapabilities"]["tasks"]["requests"]["tools"]["call"] == {}
    for name, tool in out["tools"].items():
        # Every tool has an input and an output schema, and each compiles in Ajv's strict mode.
        assert tool["compiled"] == {"inputSchema": "ok", "outputSchema": "ok"}, (name, tool["compiled"])
    for name in ASKS | READ_ONLY | {"cancel_job"}:
        assert out["tools"][name]["annotations"]["readOnlyHint"] is (name in READ_ONLY), name
    assert out["status"] == {"isError": False, "project": "my projecté"}
    assert out["unknownTool"]["code"] == -32602 and "Unknown tool: no_such_tool" in out["unknownTool"]["message"]


# --- with a browser --------------------------------------------------------------------------------------------------


def browser_server(sites: FakeSites, tmp: Path) -> dict[str, Any]:
    args = server_args(sites, profile_dir=tmp / "profile", project="unused")
    i = args.index("--project")
    del args[i:i + 2]  # no --project: the client's roots, or the call's `project`, name the conversation
    return {**server_command(args[2:]),
            "env": {"AI_BRIDGE_STATE_DIR": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "config"),
                    "AI_BRIDGE_TOOLS": "all"}}


@requires_chromium
@pytest.mark.chromium
async def test_typescript_sdk_task_to_completion(npm_prefix: Path, sites: FakeSites, tmp_path: Path) -> None:
    # The answer makes an image too (issue 35): the TypeScript SDK takes its resource_link content.
    sites.chatgpt.set_next(chunks=12, intervalMs=150, firstTokenMs=100, files=[{"kind": "image", "name": "map"}])
    q = "Name 3 uses of a hash map."
    server = browser_server(sites, tmp_path)
    spec = {**server, "env": clean_env(server["env"]), "scenario": "task", "tool": "ask_chatgpt_web",
            "arguments": {"question": q}}
    out = await trio.to_thread.run_sync(run_ts_client, npm_prefix, spec)
    kinds = [m["type"] for m in out["messages"]]
    assert kinds[0] == "taskCreated" and kinds[-1] == "result", kinds
    statuses = [m["task"]["status"] for m in out["messages"] if m["type"] == "taskStatus"]
    assert statuses[-1] == "completed" and set(statuses[:-1]) <= {"working"}
    result = out["messages"][-1]["result"]
    assert not result.get("isError") and answer_ref(q) in result["structuredContent"]["answer"]
    saved = result["structuredContent"]["files"]
    links = [c for c in result["content"] if c["type"] == "resource_link"]
    assert [link["uri"] for link in links] == [Path(f["path"]).as_uri() for f in saved] and len(saved) == 1, result
    assert Path(saved[0]["path"]).read_bytes().startswith(b"\x89PNG")
    assert result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == out["messages"][0]["task"]["taskId"]
    # Progress with the partial text reached the client through the task's life (the call had returned long before).
    assert any("is answering" in p for p in out["progress"]), out["progress"]


@requires_chromium
@pytest.mark.chromium
async def test_typescript_sdk_task_cancel_clicks_stop(npm_prefix: Path, sites: FakeSites, tmp_path: Path) -> None:
    sites.chatgpt.set_next(chunks=200, intervalMs=100, firstTokenMs=100)
    server = browser_server(sites, tmp_path)
    spec = {**server, "env": clean_env(server["env"]), "scenario": "task", "tool": "ask_chatgpt_web",
            "arguments": {"question": "Write a long essay about 7 network protocols."}, "cancel": True}
    out = await trio.to_thread.run_sync(run_ts_client, npm_prefix, spec)
    assert out["afterCancel"] == "cancelled"
    last = out["messages"][-1]
    assert last["type"] == "error" and "cancelled" in last["error"]["message"], out["messages"]
    log = await trio.to_thread.run_sync(lambda: sites.chatgpt.wait_log(
        lambda qs: qs and qs[0]["status"] == "disconnected", timeout=10))
    assert log[0]["status"] == "disconnected"  # Stop was clicked in the page


@requires_chromium
@pytest.mark.chromium
async def test_inspector_ask_project_argument_wins_over_roots(npm_prefix: Path, sites: FakeSites,
                                                              tmp_path: Path) -> None:
    sites.gemini.set_next(chunks=3, intervalMs=40, firstTokenMs=100)
    q = "What is 6 times 7?"
    server = browser_server(sites, tmp_path)
    rc, out, err = await trio.to_thread.run_sync(lambda: inspector(
        npm_prefix, tmp_path, server, "--method", "tools/call", "--tool-name", "ask_gemini_web", "--tool-args-json",
        json.dumps({"question": q, "project": "from-the-argument"}), roots=[ROOT], timeout=180))
    assert rc == 0, err[-3000:]
    assert answer_ref(q) in out["result"]["structuredContent"]["answer"]
    projects = json.loads((tmp_path / "state" / "sessions.json").read_text())["projects"]
    assert set(projects) == {"from-the-argument"}
    history = [json.loads(line) for line in (tmp_path / "state" / "history.jsonl").read_text().splitlines()]
    assert [h["project"] for h in history] == ["from-the-argument"]
    no_warning_printed(err)


# --- typed errors, as these clients show them -----------------------------------------------------------------------

# One call per error path of each tool family that needs no page, with the code it must give. The TypeScript SDK
# checks an error result's structuredContent against the tool's outputSchema like any other (and throws -32602 on a
# mismatch, losing the code and the hint), so each of these also proves the error shape is in every schema.
ERROR_CALLS: list[tuple[str, dict[str, Any], str]] = [
    # asks
    ("ask_chatgpt_web", {"question": "  "}, "invalid_argument"),
    ("ask_gemini_web", {"question": "x", "files": ["../outside.txt"]}, "file_refused"),
    ("ask_chatgpt_gemini_web", {"question": "x", "files": ["no-such-file.py"]}, "file_refused"),
    ("ask_chatgpt_web", {"question": "x", "timeout_s": 1}, "invalid_argument"),
    # jobs
    ("get_answer", {"job_id": "job-x"}, "job_not_found"),
    ("cancel_job", {"job_id": "job-x"}, "job_not_found"),
    ("list_jobs", {"limit": -1}, "invalid_argument"),
    # status and inspection
    ("bridge_status", {"verbose": True}, "invalid_argument"),
    ("get_page_dom", {"provider": "nope"}, "invalid_argument"),
    # browser tools, in safe mode
    ("click", {"selector": "#x"}, "mutations_disabled"),
    ("eval", {"expression": "1"}, "eval_disabled"),
    ("upload_file", {"selector": "#f", "paths": ["/etc/passwd"]}, "file_refused"),
    ("get_text", {"max_chars": 0}, "invalid_argument"),
]
# With --enable-mutations and no allowed domain: refused by the domain policy before any browser is waited for.
MUTATION_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("navigate", {"url": "https://example.com/"}, "policy_denied"),
    ("tab_new", {"url": "example.com"}, "policy_denied"),
]


def check_shown(call: tuple[str, dict[str, Any], str], shown: dict[str, Any]) -> None:
    name, _, code = call
    assert "threw" not in shown, (name, shown)  # the client kept the result: its structuredContent validated
    assert shown["isError"] is True, (name, shown)
    error = shown["structuredContent"]["error"]
    assert error["code"] == code, (name, shown)
    # What an agent reads first: the code, the message and the way out, in the text.
    assert shown["text"].startswith(f"[{code}] {error['message']}"), (name, shown)
    assert error["hint"] and error["hint"] in shown["text"], (name, shown)


@pytest.mark.parametrize(("flags", "calls"), [([], ERROR_CALLS), (["--enable-mutations"], MUTATION_CALLS)],
                         ids=["safe", "mutations"])
def test_typescript_sdk_shows_every_typed_error(npm_prefix: Path, tmp_path: Path, flags: list[str],
                                                calls: list[tuple[str, dict[str, Any], str]]) -> None:
    server = plain_server(tmp_path, *flags)
    out = run_ts_client(npm_prefix, {**server, "env": clean_env(server["env"]), "scenario": "calls",
                                     "calls": [{"name": n, "arguments": a} for n, a, _ in calls]})
    for call, shown in zip(calls, out["calls"], strict=True):
        check_shown(call, shown)


@pytest.mark.parametrize("call", [ERROR_CALLS[4], ERROR_CALLS[9], ERROR_CALLS[1]], ids=lambda c: c[0])
def test_inspector_shows_the_typed_error(npm_prefix: Path, tmp_path: Path, call: tuple[str, dict[str, Any], str]
                                         ) -> None:
    name, arguments, _ = call
    rc, out, err = inspector(npm_prefix, tmp_path, plain_server(tmp_path), "--method", "tools/call", "--tool-name",
                             name, "--tool-args-json", json.dumps(arguments))
    # Exit 5 is the CLI's "the tool returned isError" with the result on stdout; a result that failed its schema
    # check is exit 1 with only the validation message (the code and the hint lost).
    assert rc == 5, err[-3000:]
    result = out["result"]
    check_shown(call, {"isError": result.get("isError", False), "structuredContent": result.get("structuredContent"),
                       "text": "\n".join(c["text"] for c in result["content"] if c["type"] == "text")})
    no_warning_printed(err)


# --- many clients on one server: MCP over HTTP (issue 38 item 6) -----------------------------------------------------


@requires_chromium
@pytest.mark.chromium
# The Python SDK's HTTP client leaves its streams' async generators to the garbage collector when it closes under
# trio (httpx2's SSE and byte iterators): its own untidiness, not the server's.
@pytest.mark.filterwarnings("ignore:Exception ignored in. <async_generator object"
                            ":pytest.PytestUnraisableExceptionWarning")
async def test_two_clients_of_two_sdks_ask_side_by_side_over_http(npm_prefix: Path, sites: FakeSites,
                                                                  tmp_path: Path) -> None:
    # Each answer streams for ~8 s, so the second client's question (a Node process that starts meanwhile, 1-3 s on a
    # loaded machine) reaches the site while the first answer still streams: the two asks share the server and its
    # pool of tabs.
    sites.chatgpt.set_next(chunks=20, intervalMs=400, firstTokenMs=200)
    server = browser_server(sites, tmp_path)
    async with open_http_server(server["args"][2:], clean_env(server["env"]), tmp_path) as http:
        assert listening_on(http.port) == {"127.0.0.1"}  # loopback only
        q_py, q_ts = "What is 21 times 2 for the Python client?", "What is 22 times 2 for the TypeScript client?"
        got: dict[str, Any] = {}

        async def python_client() -> None:
            async with open_http_client(http, mode="legacy") as client:
                res = await client.call_tool("ask_chatgpt_web", {"question": q_py, "project": "http-py"})
                got["py"] = {"isError": res.is_error, "structuredContent": res.structured_content}

        async def typescript_client() -> None:
            spec = {"url": http.url, "headers": http.auth, "scenario": "calls",
                    "calls": [{"name": "ask_chatgpt_web", "arguments": {"question": q_ts, "project": "http-ts"}}]}
            got["ts"] = (await trio.to_thread.run_sync(run_ts_client, npm_prefix, spec))["calls"][0]

        async with trio.open_nursery() as n:
            n.start_soon(python_client)
            n.start_soon(typescript_client)
        for who, q, other in (("py", q_py, q_ts), ("ts", q_ts, q_py)):
            assert got[who]["isError"] is False, got[who]
            text = got[who]["structuredContent"]["answer"]
            assert answer_ref(q) in text and answer_ref(other) not in text, (who, text[:300])
        log = sites.chatgpt.log()
        assert sorted(e["question"] for e in log) == sorted([q_py, q_ts])  # each question sent once
        assert len({e["conversationId"] for e in log}) == 2
        assert max(e["receivedAtMs"] for e in log) < min(e["streamEndAtMs"] for e in log), log  # side by side
    no_warning_printed(http.stderr())
