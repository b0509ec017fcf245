"""MCP tasks (actors/mcp_front/tasks.py) over the real jobs actor and fake provider actors, on an autojump clock:
both wire forms, status words, the partial answer in statusMessage and progress, blocking tasks/result, cancel
rules, calls that fail before a job starts, and the ttl."""

from __future__ import annotations

import types
from typing import Any

import pytest
import trio
import trio.testing

from actors.mcp_front.deps import FrontDeps, ToolCall
from actors.mcp_front.tasks import MIN_TTL_MS, RELATED_TASK, TaskError, TaskTable
from actors.mcp_front.tools import TOOLS
from supervisor.config import Config
from supervisor.errors import RateLimited

from .test_jobs import FakeSite, system

ASK = TOOLS["ask_chatgpt_web"]


async def _project(sdk_ctx: Any, explicit: str | None) -> str:
    return explicit or "proj"


def table(runtime: Any, nursery: trio.Nursery) -> TaskTable:
    ctx = types.SimpleNamespace(ref=runtime.registry.ref)  # what the table uses of the front's actor context
    return TaskTable(FrontDeps(ctx=ctx, config=Config(), system=runtime), nursery)  # type: ignore[arg-type]


CALL = ToolCall(None, _project)


async def test_2025_task_working_then_completed(autojump_clock: trio.testing.MockClock) -> None:
    sent: list[tuple[str, int, str]] = []

    async def progress(task_id: str, step: int, message: str) -> None:
        sent.append((task_id, step, message))

    async with system(chatgpt=FakeSite(seconds=10)) as (runtime, _), trio.open_nursery() as nursery:
        tasks = table(runtime, nursery)
        created = await tasks.create(ASK, {"question": "q?"}, CALL, modern=False, ttl_ms=120_000, progress=progress)
        task = created["task"]
        assert task["status"] == "working" and task["ttl"] == 120_000 and task["pollInterval"] == 1000
        await trio.sleep(3.5)
        got = await tasks.get(task["taskId"])
        assert got["status"] == "working" and got["statusMessage"].startswith("ChatGPT is answering (18 chars): …word0")
        t0 = trio.current_time()
        result = await tasks.result(task["taskId"])  # blocks until the job ends
        assert trio.current_time() - t0 == pytest.approx(6.5, abs=0.6)
        assert result["isError"] is False and result["structuredContent"]["answer"].startswith("word0 word1")
        assert result["_meta"] == {RELATED_TASK: {"taskId": task["taskId"]}}
        final = await tasks.get(task["taskId"])
        assert final["status"] == "completed" and "result" not in final  # 2025-11-25: the result is tasks/result's
        assert (await tasks.list_tasks(None))["tasks"] == [final]
        with pytest.raises(TaskError) as info:
            await tasks.cancel(task["taskId"])
        assert info.value.code == -32602 and "terminal status 'completed'" in info.value.message
        # Progress: one notification per change of the partial answer, numbered, for this task.
        assert {t for t, _, _ in sent} == {task["taskId"]} and [s for _, s, _ in sent] == list(range(1, len(sent) + 1))
        assert len(sent) >= 8 and sent[-1][2].startswith("ChatGPT is answering")
        nursery.cancel_scope.cancel()


async def test_2025_tool_error_fails_the_task_and_cancel_is_final(autojump_clock: trio.testing.MockClock) -> None:
    bad = FakeSite(seconds=2, fail=RateLimited("slow down", hint="wait"))
    async with system(chatgpt=bad) as (runtime, _), trio.open_nursery() as nursery:
        tasks = table(runtime, nursery)
        failing = (await tasks.create(ASK, {"question": "q?"}, CALL, modern=False))["task"]["taskId"]
        result = await tasks.result(failing)
        assert result["isError"] is True and result["structuredContent"]["error"]["code"] == "rate_limited"
        failed = await tasks.get(failing)
        assert failed["status"] == "failed" and failed["statusMessage"].startswith("[rate_limited] slow down")

        bad.seconds, bad.fail = 100, None
        running = (await tasks.create(ASK, {"question": "q?"}, CALL, modern=False))["task"]["taskId"]
        await trio.sleep(2)
        assert (await tasks.cancel(running))["status"] == "cancelled"
        await trio.sleep(1)
        assert bad.cancelled == 1  # the ask was stopped (in the page: Stop clicked)
        assert (await tasks.get(running))["status"] == "cancelled"
        assert (await tasks.result(running))["isError"] is True
        with pytest.raises(TaskError):
            await tasks.cancel(running)
        # A call that fails before its job starts is still a task (the client asked for one), already failed.
        early = (await tasks.create(ASK, {"question": "q?", "nope": 1}, CALL, modern=False))["task"]
        assert early["status"] == "failed" and "unknown argument 'nope'" in early["statusMessage"]
        nursery.cancel_scope.cancel()


class Session:
    """An MCP session as the table sees it: something a task can belong to."""


async def test_each_client_lists_its_own_tasks(autojump_clock: trio.testing.MockClock) -> None:
    """Over HTTP several clients share the server: tasks/list shows each its own, tasks/get still finds any by id (the
    id is the capability)."""
    a, b = Session(), Session()
    async with system(chatgpt=FakeSite(seconds=10)) as (runtime, _), trio.open_nursery() as nursery:
        tasks = table(runtime, nursery)
        mine = (await tasks.create(ASK, {"question": "a?"}, ToolCall(types.SimpleNamespace(session=a), _project),
                                   modern=False))["task"]["taskId"]
        theirs = (await tasks.create(ASK, {"question": "b?"}, ToolCall(types.SimpleNamespace(session=b), _project),
                                     modern=False))["task"]["taskId"]
        assert [t["taskId"] for t in (await tasks.list_tasks(None, a))["tasks"]] == [mine]
        assert [t["taskId"] for t in (await tasks.list_tasks(None, b))["tasks"]] == [theirs]
        assert (await tasks.get(theirs))["taskId"] == theirs
        nursery.cancel_scope.cancel()


async def test_2026_extension_form(autojump_clock: trio.testing.MockClock) -> None:
    site = FakeSite(seconds=4)
    async with system(chatgpt=site) as (runtime, _), trio.open_nursery() as nursery:
        tasks = table(runtime, nursery)
        created = await tasks.create(ASK, {"question": "q?"}, CALL, modern=True, ttl_ms=10)
        assert created["resultType"] == "task" and created["status"] == "working"
        assert created["ttlMs"] == MIN_TTL_MS and created["pollIntervalMs"] == 1000  # a 10 ms ttl is raised
        task_id = created["taskId"]
        assert "result" not in await tasks.get(task_id)
        await trio.sleep(5)
        done = await tasks.get(task_id)
        assert done["status"] == "completed" and done["result"]["structuredContent"]["provider"] == "chatgpt"
        assert await tasks.cancel(task_id) == {} and (await tasks.get(task_id))["status"] == "completed"
        assert await tasks.update(task_id) == {}
        # A tool error is a completed task in this form, with the error result inlined.
        site.fail = RateLimited("slow down")
        failing = (await tasks.create(ASK, {"question": "q?"}, CALL, modern=True))["taskId"]
        await trio.sleep(5)
        got = await tasks.get(failing)
        assert got["status"] == "completed" and got["result"]["isError"] is True
        # Tasks of this form are not listed (the extension has no tasks/list) and expire with their ttl.
        assert (await tasks.list_tasks(None))["tasks"] == []
        await trio.sleep(MIN_TTL_MS / 1000)
        with pytest.raises(TaskError) as info:
            await tasks.get(task_id)
        assert info.value.code == -32602
        nursery.cancel_scope.cancel()
