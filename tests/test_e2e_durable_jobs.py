"""Jobs that outlive the server (issue 21), end to end: a real `ai-bridge serve` killed with SIGKILL, a new one on the
same state dir. A finished job nobody collected still hands out its answer; a job killed mid-answer, in a browser
that outlives the server (the user's own Chrome, `--browser connect`), is reattached: its conversation is read again
and the whole answer comes back, the question sent once. `ai-bridge jobs` reads the same records from the terminal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from .conftest import REPO, process_alive
from .e2e import Bridge, open_bridge, requires_chromium
from .fakesites.fixture import FakeSites
from .fakesites.scripting import answer_ref
from .user_chrome import open_user_chrome

pytestmark = [requires_chromium, pytest.mark.chromium]

FAST = {"chunks": 4, "intervalMs": 40, "firstTokenMs": 100}


def ok(res: Any) -> dict[str, Any]:
    assert not res.is_error, res.content[0].text
    return res.structured_content  # type: ignore[no-any-return]


def record(state_dir: Path, job_id: str) -> dict[str, Any]:
    path = state_dir / "jobs" / f"{job_id}.json"
    return json.loads(path.read_text()) if path.exists() else {}


async def wait_record(state_dir: Path, job_id: str, pred: Any, what: str, timeout: float = 30) -> dict[str, Any]:
    with trio.fail_after(timeout):
        while not pred(rec := record(state_dir, job_id)):
            await trio.sleep(0.1)
    return rec


async def kill_server(b: Bridge) -> None:
    """SIGKILL the `ai-bridge serve` process (it registered itself in <state-dir>/servers/<pid>.json)."""
    [entry] = list((b.state_dir / "servers").glob("*.json"))
    pid = int(json.loads(entry.read_text())["pid"])
    os.kill(pid, signal.SIGKILL)
    with trio.fail_after(10):
        while process_alive(pid):
            await trio.sleep(0.05)


def jobs_cli(state_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    return subprocess.run([sys.executable, "-m", "supervisor.app.cli", "jobs", "--state-dir", str(state_dir), *args],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=60)


async def test_a_finished_job_nobody_collected_survives_sigkill(sites: FakeSites, tmp_path: Path) -> None:
    sites.chatgpt.set_next(**FAST)
    q = "Name 3 prime numbers below 20."
    async with open_bridge(sites, tmp_path) as b:
        job_id = ok(await b.call("ask_chatgpt_web", {"question": q, "background": True}))["jobId"]
        rec = await wait_record(b.state_dir, job_id, lambda r: r.get("status") == "done", "the job done")
        await kill_server(b)
    assert (tmp_path / "state" / "jobs").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "state" / "jobs" / f"{job_id}.json").stat().st_mode & 0o777 == 0o600
    assert q not in json.dumps(rec)  # the question is kept as a digest only
    answer = rec["asks"]["chatgpt"]["result"]["answer"]
    assert answer_ref(q) in answer

    # No server: the terminal reads the record.
    got = await trio.to_thread.run_sync(lambda: jobs_cli(tmp_path / "state", "get", job_id))
    assert got.returncode == 0 and got.stdout.strip() == answer, got.stderr
    listed = await trio.to_thread.run_sync(lambda: jobs_cli(tmp_path / "state", "--json"))
    assert [(j["jobId"], j["status"]) for j in json.loads(listed.stdout)["jobs"]] == [(job_id, "done")]

    async with open_bridge(sites, tmp_path) as b2:
        res = await b2.call("get_answer", {"job_id": job_id, "wait_s": 0})
        sc = ok(res)
        assert sc["status"] == "done" and res.content[0].text == answer
        assert [(j["jobId"], j["status"]) for j in ok(await b2.call("list_jobs", {}))["jobs"]] == [(job_id, "done")]
    assert len(sites.chatgpt.log()) == 1


async def test_a_job_killed_mid_answer_is_reattached_and_read_whole(sites: FakeSites, tmp_path: Path) -> None:
    """The browser outlives the server (the user's Chrome, connect mode): SIGKILL mid-answer, a new server on the
    same state dir reattaches the job — its conversation opened, the question never sent again — and get_answer
    returns the whole answer. A Claude job killed alongside is reattached too: the newer sites' tables carry what
    reattaching needs (issue 40)."""
    sites.chatgpt.set_next(chunks=60, intervalMs=200, firstTokenMs=200)  # about 12 s of answer
    sites.claude.set_next(chunks=60, intervalMs=200, firstTokenMs=200)
    q = "Explain 4 differences between TCP and UDP."
    q_claude = "Explain 3 differences between HTTP/1.1 and HTTP/2."
    connect = ("--browser", "connect")
    async with open_user_chrome(sites, tmp_path / "users-chrome") as chrome:
        async with open_bridge(sites, tmp_path, extra=connect) as b:
            job_id = ok(await b.call("ask_chatgpt_web", {"question": q, "background": True}))["jobId"]
            claude_job = ok(await b.call("ask_claude_web", {"question": q_claude, "background": True}))["jobId"]
            for site in (sites.chatgpt, sites.claude):
                await trio.to_thread.run_sync(lambda site=site: site.wait_log(
                    lambda qs: qs and qs[0]["status"] == "streaming", timeout=30))
            rec = await wait_record(b.state_dir, job_id, lambda r: r.get("asks", {}).get("chatgpt", {}).get("url"),
                                    "the conversation's URL in the record")
            await wait_record(b.state_dir, claude_job, lambda r: r.get("asks", {}).get("claude", {}).get("url"),
                              "Claude's conversation URL in its record")
            await kill_server(b)
        url = rec["asks"]["chatgpt"]["url"]
        assert url.startswith("https://chatgpt.com/c/") and rec["status"] == "running"
        assert sites.chatgpt.log()[0]["status"] == "streaming"  # killed mid-answer

        async with open_bridge(sites, tmp_path, extra=connect) as b2:
            listed = ok(await b2.call("list_jobs", {}))["jobs"]
            assert sorted((j["jobId"], j["status"]) for j in listed) == sorted([(job_id, "running"),
                                                                                (claude_job, "running")])
            res = await b2.call("get_answer", {"job_id": job_id, "wait_s": 90})
            sc = ok(res)
            claude_sc = ok(await b2.call("get_answer", {"job_id": claude_job, "wait_s": 90}))
            log = b2.log_text()
        assert chrome.proc.poll() is None
    assert sc["status"] == "done", sc
    answer = sc["results"]["chatgpt"]["answer"]
    assert sc["results"]["chatgpt"]["url"] == url
    [asked] = sites.chatgpt.log()  # the question was sent once
    assert asked["status"] == "complete"
    words = asked["answer"].split()
    assert words[0] in answer and words[-1].strip(".") in answer and answer_ref(q) in answer
    assert "reattaching chatgpt" in log and "reading its answer instead of sending it again" in log
    assert claude_sc["status"] == "done", claude_sc
    [asked_claude] = sites.claude.log()  # sent once, read whole after the restart
    assert asked_claude["status"] == "complete" and "reattaching claude" in log
    claude_answer = claude_sc["results"]["claude"]["answer"]
    assert answer_ref(q_claude) in claude_answer and asked_claude["answer"].split()[-1].strip(".") in claude_answer
