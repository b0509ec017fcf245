"""Non-blocking asks end to end: background: true → get_answer (partial, then final) / list_jobs / cancel_job, and the
debug dumps written on anomalies. Real MCP client → `ai-bridge serve` → real Chromium + extension → fake sites."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp.shared.exceptions import MCPError

from .e2e import open_bridge, requires_chromium
from .fakesites.fixture import FakeSites
from .fakesites.scripting import answer_ref
from .shared_bridge import OpenShared

pytestmark = [requires_chromium, pytest.mark.chromium]

FAST = {"chunks": 4, "intervalMs": 40, "firstTokenMs": 100}


def ok(res: Any) -> dict[str, Any]:
    assert not res.is_error, res.content[0].text
    return res.structured_content  # type: ignore[no-any-return]


async def test_background_ask_partial_then_final(sites: FakeSites, tmp_path: Path) -> None:
    sites.chatgpt.set_next(chunks=30, intervalMs=100, firstTokenMs=100)
    q = "List 3 ways to speed up a Python loop."
    async with open_bridge(sites, tmp_path) as b:
        # It returns at once, without waiting for the answer (checked below: the fake has not completed it). The
        # guard is for a hang only: with seven workers on two cores the reply once took over 5 s.
        with trio.fail_after(20):
            started = ok(await b.call("ask_chatgpt_web", {"question": q, "background": True}))
        job_id = started["jobId"]
        assert all(e["status"] != "complete" for e in sites.chatgpt.log())  # the answer was not waited for
        assert started["status"] == "running" and job_id in (await b.call("list_jobs", {})).content[0].text
        assert [j["jobId"] for j in (await b.status())["jobs"]["running"]] == [job_id]

        # While it streams: status running with the partial text so far.
        await trio.to_thread.run_sync(lambda: sites.chatgpt.wait_log(
            lambda qs: qs and qs[0]["status"] == "streaming", timeout=20))
        partial: dict[str, Any] = {}
        with trio.fail_after(10):
            while not partial.get("partial", {}).get("chatgpt"):
                partial = ok(await b.call("get_answer", {"job_id": job_id, "wait_s": 0.3}))
                assert partial["status"] == "running"
        assert "still running" in (await b.call("get_answer", {"job_id": job_id, "wait_s": 0})).content[0].text

        # The client gives up on a long get_answer (its own timeout): the job does not mind and goes on.
        with pytest.raises(MCPError):
            await b.session.call_tool("get_answer", {"job_id": job_id, "wait_s": 60}, read_timeout_seconds=0.3)
        final = await b.call("get_answer", {"job_id": job_id, "wait_s": 60})
        sc = ok(final)
        assert sc["status"] == "done" and sc["finishedAt"]
        answer = sc["results"]["chatgpt"]["answer"]
        assert answer_ref(q) in answer and final.content[0].text == answer
        assert partial["partial"]["chatgpt"] in answer or answer.startswith(partial["partial"]["chatgpt"][:20])
        assert sites.chatgpt.log()[0]["answer"].split()[0] in answer

        jobs = ok(await b.call("list_jobs", {}))["jobs"]
        assert [(j["jobId"], j["status"]) for j in jobs] == [(job_id, "done")]
        assert [h["question"] for h in b.history()] == [q]


async def test_background_errors_and_unknown_ids(sites: FakeSites, shared_bridge: OpenShared) -> None:
    sites.chatgpt.set_page(login=True)
    sites.gemini.set_next(**FAST)
    q = "Name 2 sorting algorithms."
    async with shared_bridge() as b:
        one = ok(await b.call("ask_chatgpt_web", {"question": q, "background": True}))["jobId"]
        both = ok(await b.call("ask_chatgpt_gemini_web", {"question": q, "background": True}))["jobId"]
        failed = await b.call("get_answer", {"job_id": one, "wait_s": 60})
        assert failed.is_error and failed.structured_content["status"] == "failed"
        assert failed.structured_content["errors"]["chatgpt"]["code"] == "login_required"
        assert failed.content[0].text.startswith("[login_required]")

        # One provider failing in a two-provider job: done, with the other's answer and the typed error.
        res = await b.call("get_answer", {"job_id": both, "wait_s": 60})
        sc = ok(res)
        assert sc["status"] == "done"
        assert answer_ref(q) in sc["results"]["gemini"]["answer"]
        assert sc["errors"]["chatgpt"]["code"] == "login_required"
        assert "## Gemini" in res.content[0].text and "[login_required]" in res.content[0].text

        unknown = await b.call("get_answer", {"job_id": "job-nope"})
        assert unknown.is_error and unknown.structured_content["error"]["code"] == "job_not_found"
        assert "list_jobs" in unknown.content[0].text
        bad = await b.call("get_answer", {"job_id": one, "wait_s": 601})
        assert bad.is_error and bad.structured_content["error"]["code"] == "invalid_argument"
        cancel_unknown = await b.call("cancel_job", {"job_id": "job-nope"})
        assert cancel_unknown.structured_content["error"]["code"] == "job_not_found"


async def test_cancel_job_clicks_stop(sites: FakeSites, shared_bridge: OpenShared) -> None:
    sites.chatgpt.set_next(chunks=200, intervalMs=100, firstTokenMs=100)
    q = "Write a long essay about 7 network protocols."
    async with shared_bridge() as b:
        job_id = ok(await b.call("ask_chatgpt_web", {"question": q, "background": True}))["jobId"]
        await trio.to_thread.run_sync(lambda: sites.chatgpt.wait_log(
            lambda qs: qs and qs[0]["status"] == "streaming", timeout=20))
        sc = ok(await b.call("cancel_job", {"job_id": job_id}))
        assert sc["status"] == "cancelled" and sc["errors"]["chatgpt"]["code"] == "cancelled"
        log = await trio.to_thread.run_sync(lambda: sites.chatgpt.wait_log(
            lambda qs: qs[0]["status"] == "disconnected", timeout=10))
        assert log[0]["status"] == "disconnected"  # Stop was clicked in the page
        again = await b.call("get_answer", {"job_id": job_id, "wait_s": 0})
        assert again.is_error and again.structured_content["status"] == "cancelled"
        # The tab is free again: a foreground ask works right after.
        sites.chatgpt.set_next(**FAST)
        assert not (await b.call("ask_chatgpt_web", {"question": "What is 1 plus 1?"})).is_error


async def test_suspicious_answers_leave_debug_dumps_with_a_retention_limit(sites: FakeSites, tmp_path: Path) -> None:
    sites.gemini.set_next(text="I would rather not say.", **FAST)
    async with open_bridge(sites, tmp_path, env={"AI_BRIDGE_DEBUG_DUMPS_KEEP": "2"}) as b:
        for n in (3, 4, 5):
            res = await b.call("ask_gemini_web", {"question": f"What is {n} times 7?"})
            # Delivered with a warning naming the dump (never withheld as an error).
            assert not res.is_error and res.content[0].text == "I would rather not say."
            [warning] = res.structured_content["warnings"]
            assert warning["code"] == "suspicious_answer" and "/debug/gemini-" in warning["debugDump"]
        dumps = sorted((b.state_dir / "debug").glob("gemini-*-suspicious.json"))
    assert len(dumps) == 2  # the oldest of the three was pruned
    record = json.loads(dumps[-1].read_text())
    assert record["question"] == "What is 5 times 7?" and record["answer"] == "I would rather not say."
    assert record["pageUrl"].startswith("https://gemini.google.com/") and record["bodyLen"] > 0
    assert "I would rather not say." in record["bodySnippet"]
    # The page's finished requests, host and path only: a page stuck loading shows which of its own never came back.
    assert any(r.startswith("gemini.google.com/_/BardChatUi/data/bootstrap ") for r in record["loaded"]), record
    assert not any("?" in r for r in record["loaded"])
