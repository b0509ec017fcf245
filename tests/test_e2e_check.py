"""`ai-bridge check` end to end: the real CLI and actor tree, real headless Chromium with our extension, the fake
sites. Every shipped scenario passes on them; failures are reported with their reasons and the provider's debug
dumps; drifted markup is named by the probe before any question is sent, and a providers.toml makes the check pass
again. The fakes are not told the check's questions: they answer by their general rules (tests/fakesites)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import trio

from supervisor.app.check.scenarios import load

from .conftest import REPO, serve_command
from .e2e import CHROMIUM, requires_chromium
from .fakesites.fixture import FakeSites
from .test_e2e_probe import OVERRIDES

pytestmark = [requires_chromium, pytest.mark.chromium]

USER_PROJECT = "my-project"


async def cli(sites: FakeSites, tmp_path: Path, *args: str) -> trio.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env.update(AI_BRIDGE_STATE_DIR=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    command, *rest = args
    full = [*serve_command(), command, "--browser", "launch", "--headless", "--isolated",
            f"--browser-path={CHROMIUM}", *[f"--browser-arg={a}" for a in sites.chromium_args()], *rest]
    return await trio.run_process(full, env=env, cwd=REPO, capture_stdout=True, capture_stderr=True, check=False)


def reports(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "state" / "reports").glob("check-*.json"))


def last_report(tmp_path: Path) -> dict[str, Any]:
    path = reports(tmp_path)[-1]
    for p in (path, path.with_suffix(".md")):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def sessions(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "state" / "sessions.json").read_text())["projects"]  # type: ignore[no-any-return]


async def test_every_shipped_scenario_passes_on_the_fakes(sites: FakeSites, tmp_path: Path) -> None:
    # The user's own project has a conversation; the check must leave it alone.
    proc = await cli(sites, tmp_path, "ask", "--project", USER_PROJECT,
                     "Which Linux command shows the disk usage of a directory tree?")
    assert proc.returncode == 0, proc.stderr.decode()
    mine = sessions(tmp_path)[USER_PROJECT]
    # The check's conversations of an earlier run, since deleted on the sites (unknown ids fail to load as deleted
    # ones do): not a changed site, and no reason to fail a scenario (issue 33: both providers were BROKEN).
    stale = {"chatgpt": "https://chatgpt.com/c/00000000-0000-4000-8000-000000000000",
             "gemini": "https://gemini.google.com/app/0123456789abcdef"}
    path = tmp_path / "state" / "sessions.json"
    data = json.loads(path.read_text())
    data["projects"]["ai-bridge-check"] = {p: {**mine[p], "url": stale[p], "tabId": None} for p in stale}
    path.write_text(json.dumps(data))

    # Every site's scenarios (issue 40: Claude's, Grok's and Perplexity's run on their lanes beside the others).
    proc = await cli(sites, tmp_path, "check", "--provider", "all")
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 0, out + err
    shipped = load()
    assert len(shipped) == 13 and "13 scenario(s): 13 passed, 0 failed" in out
    # the probe ran first: one line per provider when all is well; the gone conversation said, nothing broken
    assert "check: probe: chatgpt healthy (language en; its kept conversation is gone from the site: probed a new " \
           "chat)\n" in err, err[:600]
    assert "BROKEN" not in err and "update:" not in err
    assert "check: probe: gemini healthy (language en; its kept conversation is gone" in err
    assert "gemini.selectors.send " not in err
    assert err.index("check: probe: gemini healthy") < err.index("asking")
    for s in shipped:  # a live progress line per scenario, with its timings
        assert f"] {s.id} PASS in " in err and f"{s.id} asking" in err, s.id
    assert "total " in err and "response " in err

    report = last_report(tmp_path)
    assert report["ok"] is True and report["counts"] == {"passed": 13, "failed": 0}
    assert {p: r["conversationGone"] for p, r in report["probe"].items() if r["conversationGone"]} == stale
    assert set(report["probe"]) == {"chatgpt", "gemini", "claude", "grok", "perplexity"}
    assert report["project"] == "ai-bridge-check"
    assert [s["id"] for s in report["scenarios"]] == [s.id for s in shipped]
    for s in report["scenarios"]:
        assert s["status"] == "passed" and s["failed"] == [] and s["reason"] is None, s
        names = {v["assertion"] for v in s["passed"]}
        spec = next(x for x in shipped if x.id == s["id"])
        wanted = {k for k, v in spec.assertions.model_dump().items() if v not in (None, False)}
        assert wanted - {"bothMustSucceed"} <= names, (s["id"], names)
        for r in s["results"].values():
            assert r["ok"] and r["timings"]["totalMs"] > 0 and r["retries"] == 0
    by_id = {s["id"]: s for s in report["scenarios"]}
    assert by_id["chatgpt-thinking-mode"]["results"]["chatgpt"]["thinking"] is True
    assert by_id["chatgpt-long-response"]["results"]["chatgpt"]["answer"]["chars"] >= 1500
    assert {v["assertion"] for v in by_id["chatgpt-existing-chat"]["passed"]} >= {"sameConversation"}
    assert by_id["parallel-query"]["results"].keys() == {"chatgpt", "gemini"}
    assert by_id["sites-parallel-query"]["results"].keys() == {"claude", "grok", "perplexity"}
    assert {v["assertion"] for v in by_id["grok-code-block"]["passed"]} >= {"codeBlock", "noFallback"}
    md = reports(tmp_path)[-1].with_suffix(".md").read_text()
    assert md.startswith("# ai-bridge check — passed") and "| chatgpt-long-response | pass | chatgpt |" in md

    # What the sites saw: each scenario's question once; every scenario but a follow-up in a new conversation,
    # a follow-up in the conversation of the scenario it follows.
    seen = {site: await sites.site(site).aio.log() for site in ("chatgpt", "gemini", "claude", "grok", "perplexity")}
    user_q = {"chatgpt": 1, "gemini": 1}  # the user's own ask above
    for site, entries in seen.items():
        asked = [e for e in entries[user_q.get(site, 0):]]
        expected = [s for s in shipped if any(p.value == site for p in s.providers)]
        assert [e["question"] for e in asked] == [s.question for s in expected], site
        convo = {s.id: e["conversationId"] for s, e in zip(expected, asked, strict=True)}
        for s in expected:
            if s.follow_up:
                assert convo[s.id] == convo[s.follow_up]
        new_chats = [convo[s.id] for s in expected if not s.follow_up]
        assert len(set(new_chats)) == len(new_chats)
        if site in user_q:
            assert entries[0]["conversationId"] not in new_chats
    now = sessions(tmp_path)
    assert now[USER_PROJECT] == mine  # the user's conversations untouched
    assert set(now["ai-bridge-check"]) == set(seen)


async def test_failures_are_named_with_the_providers_debug_dumps(sites: FakeSites, tmp_path: Path) -> None:
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"version": 1, "scenarios": [{
        "id": "gemini-tcp-deadline", "name": "Gemini under a short deadline", "tags": ["gemini"],
        "providers": ["gemini"], "question": "How does the TCP three-way handshake establish a connection?",
        "timeoutS": 6, "assertions": {"minAnswerLength": 20}}]}))
    await sites.chatgpt.aio.set_next(text="OK", count=1)  # the first answer: a bare "OK"
    await sites.gemini.aio.set_next(firstTokenMs=60_000)  # Gemini never starts within the deadline
    proc = await cli(sites, tmp_path, "check", "--scenarios", str(mine), "--id", "chatgpt-existing-chat",
                     "--id", "gemini-tcp-deadline")
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 1, out + err
    assert "3 scenario(s): 1 passed, 2 failed" in out
    assert "chatgpt-new-chat FAIL" in err and "failed: minAnswerLength (chatgpt): expected >= 50" in err

    report = last_report(tmp_path)
    by_id = {s["id"]: s for s in report["scenarios"]}
    assert list(by_id) == ["chatgpt-new-chat", "chatgpt-existing-chat", "gemini-tcp-deadline"]
    opened = by_id["chatgpt-new-chat"]
    assert opened["addedToOpenConversation"] is True and opened["status"] == "failed"
    assert {v["assertion"] for v in opened["failed"]} == {"minAnswerLength", "relevanceThreshold"}
    assert {v["assertion"] for v in opened["passed"]} >= {"answered", "noFallback", "maxTotalMs"}
    result = opened["results"]["chatgpt"]
    assert result["answer"] == {"chars": 2, "text": "OK"}
    (warning,) = result["warnings"]
    assert warning["code"] == "suspicious_answer"
    (dump,) = opened["debugDumps"]["chatgpt"]
    assert dump["path"] == warning["debugDump"] and dump["dump"]["why"] == "suspicious"
    # The follow-up still asks in the conversation its parent opened: it got an answer, so it passes.
    assert by_id["chatgpt-existing-chat"]["status"] == "passed"
    late = by_id["gemini-tcp-deadline"]
    assert late["status"] == "failed" and late["source"] == str(mine)
    error = late["results"]["gemini"]["error"]
    # A stop button with no text: stuck once the short deadline's stall threshold passes (or the deadline itself)
    assert error["code"] in ("stuck", "no_response", "response_timeout"), error
    assert [v["assertion"] for v in late["failed"]] == ["answered"]
    whys = {d["dump"]["why"] for d in late["debugDumps"]["gemini"]}
    assert whys & {"stalled", "no-response", "deadline"}, whys
    md = reports(tmp_path)[-1].with_suffix(".md").read_text()
    assert md.startswith("# ai-bridge check — FAILED")
    assert "Debug dump (gemini)" in md and f"**gemini failed:** `{error['code']}`" in md


async def test_drifted_markup_fails_before_any_question_and_an_override_file_fixes_it(
        sites: FakeSites, tmp_path: Path) -> None:
    # ChatGPT on the 2025 page: its idle composer shows the (renamed) send button; the 2026 one shows none until
    # text is typed, and the probe types nothing.
    await sites.chatgpt.aio.set_page(drift=True, shape="2025")
    await sites.gemini.aio.set_page(drift=True)
    proc = await cli(sites, tmp_path, "check", "--tag", "smoke")
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 1, out + err
    assert "5 scenario(s): 0 passed, 5 failed" in out
    assert "update: chatgpt.selectors.send" in err and "update: gemini.selectors.send" in err  # the whole table
    assert "check: probe: chatgpt BROKEN: the probe found chatgpt's chatgpt.selectors.send missing" in err
    sends = [(await s.aio.full_log())["sends"] for s in (sites.chatgpt, sites.gemini)]
    assert sends == [0, 0]  # not one question spent
    report = last_report(tmp_path)
    assert report["probe"]["chatgpt"]["broken"] == ["chatgpt.selectors.send"]
    for s in report["scenarios"]:
        assert s["status"] == "failed" and s["reason"].startswith("not asked: the probe found")
        assert all(r == {"asked": False} for r in s["results"].values())
    assert "chatgpt.selectors.send missing" in report["scenarios"][0]["reason"]

    patch = tmp_path / "providers.toml"
    patch.write_text(OVERRIDES, encoding="utf-8")
    proc = await cli(sites, tmp_path, "check", "--tag", "smoke", "--providers", str(patch), "--debug")
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 0, out + err
    assert "5 scenario(s): 5 passed, 0 failed" in out
    report = last_report(tmp_path)
    assert "chatgpt.selectors.send" in report["probe"]["chatgpt"]["overridden"]
    # --debug: the probe's whole table (overridden entries marked), each ask's phases, whole answers, snapshots
    assert "chatgpt.selectors.send *" in err and "overridden by providers.toml" in err
    assert "] chatgpt-new-chat [chatgpt] typing" in err and "] parallel-query [gemini] sent" in err
    for s in report["scenarios"]:
        assert s["snapshots"].keys() == set(s["providers"]), s["id"]
        for p, snap in s["snapshots"].items():
            assert snap["url"].startswith(("https://chatgpt.com/c/", "https://gemini.google.com/app/")), snap
            answer = s["results"][p]["answer"]
            assert len(answer["text"]) == answer["chars"] > 300  # whole, not an excerpt
