"""Asks as MCP tasks end to end, with the official Python SDK client in its default era (2026-07-28, the tasks
extension on the SDK's extension hooks): real `ai-bridge serve` → real Chromium + extension → fake sites.

The 2025-11-25 form is driven by the TypeScript SDK client in tests/test_third_party_clients.py."""

from __future__ import annotations

import json
from pathlib import Path

import mcp_types as types
import pytest
import trio

from .e2e import requires_chromium, server_args
from .fakesites.fixture import FakeSites
from .fakesites.scripting import answer_ref
from .mcp_clients import TaskLog, cancel_task, get_task, open_client, server_env, tasks_extension

pytestmark = [requires_chromium, pytest.mark.chromium]


async def test_ask_as_task_to_completion_with_partial_text(sites: FakeSites, tmp_path: Path) -> None:
    sites.chatgpt.set_next(chunks=16, intervalMs=150, firstTokenMs=100)
    sites.gemini.set_next(chunks=3, intervalMs=40, firstTokenMs=100)
    q = "Name 4 ways to cache a web page."
    log = TaskLog()
    args = server_args(sites, profile_dir=tmp_path / "profile", project="tasks")[2:]
    with open(tmp_path / "serve.log", "w") as errlog:
        async with open_client(args, server_env(tmp_path), errlog=errlog, extensions=[tasks_extension(log)]) as c:
            with trio.fail_after(120):
                result = await c.call_tool("ask_chatgpt_gemini_web", {"question": q})
            # Client.call_tool resolved the task and checked the result against the tool's output schema.
            assert not result.is_error
            for provider in ("chatgpt", "gemini"):
                assert answer_ref(q) in result.structured_content[provider]["answer"]
            assert len(log.created) == 1 and log.polls[-1][0] == "completed"
            answering = [m for s, m in log.polls if s == "working" and m and "ChatGPT is answering" in m]
            assert answering, log.polls  # the status message carried the partial answer while it formed
            # The task's job is an ordinary background job, done.
            jobs = (await c.call_tool("list_jobs", {})).structured_content["jobs"]
            assert [(j["tool"], j["status"]) for j in jobs] == [("ask_chatgpt_gemini_web", "done")]


async def test_cancelling_a_task_clicks_stop(sites: FakeSites, tmp_path: Path) -> None:
    sites.chatgpt.set_next(chunks=200, intervalMs=100, firstTokenMs=100)
    args = server_args(sites, profile_dir=tmp_path / "profile", project="tasks")[2:]
    async with open_client(args, server_env(tmp_path), extensions=[tasks_extension(TaskLog())]) as c:
        created = await c.session.call_tool("ask_chatgpt_web", {"question": "Write a long essay about 7 protocols."},
                                            allow_claimed=True)
        task_id = created.task_id  # type: ignore[union-attr]
        with trio.fail_after(30):
            while "is answering" not in ((await get_task(c.session, task_id)).status_message or ""):
                await trio.sleep(0.2)
        await cancel_task(c.session, task_id)
        assert (await get_task(c.session, task_id)).status == "cancelled"
        log = await trio.to_thread.run_sync(lambda: sites.chatgpt.wait_log(
            lambda qs: qs and qs[0]["status"] == "disconnected", timeout=10))
        assert log[0]["status"] == "disconnected"  # Stop was clicked in the page
        with trio.fail_after(15):  # and the task stays cancelled once its job has stopped
            while (await c.call_tool("list_jobs", {})).structured_content["jobs"][0]["status"] == "running":
                await trio.sleep(0.2)
        assert (await get_task(c.session, task_id)).status == "cancelled"
        # The tab is free again: a foreground ask right after works (as a task, resolved by the client).
        sites.chatgpt.set_next(chunks=3, intervalMs=40, firstTokenMs=100)
        assert not (await c.call_tool("ask_chatgpt_web", {"question": "What is 1 plus 1?"})).is_error


async def test_project_argument_wins_over_escaped_roots(sites: FakeSites, tmp_path: Path) -> None:
    """A 2025-era client that advertises roots: its root names the conversation unless the ask says `project`."""
    sites.gemini.set_next(chunks=3, intervalMs=40, firstTokenMs=100)
    args = server_args(sites, profile_dir=tmp_path / "profile", project="unused")[2:]
    i = args.index("--project")
    del args[i:i + 2]

    async def list_roots(ctx: object) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///home/me/my%20project%C3%A9")])

    async with open_client(args, server_env(tmp_path), mode="legacy", list_roots_callback=list_roots) as c:
        assert not (await c.call_tool("ask_gemini_web", {"question": "What is 2 plus 3?"})).is_error
        assert not (await c.call_tool("ask_gemini_web", {"question": "What is 4 plus 3?",
                                                         "project": "named-by-the-call"})).is_error
    projects = json.loads((tmp_path / "state" / "sessions.json").read_text())["projects"]
    assert set(projects) == {"my projecté", "named-by-the-call"}
