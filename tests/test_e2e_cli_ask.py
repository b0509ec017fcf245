"""`ai-bridge ask` from the terminal: the same actor tree without the MCP front, real Chromium and fake sites."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import trio

from .conftest import REPO, serve_command
from .e2e import CHROMIUM, requires_chromium
from .fakesites.fixture import FakeSites
from .fakesites.scripting import answer_ref

pytestmark = [requires_chromium, pytest.mark.chromium]


async def test_cli_ask_both_prints_answers_and_progress(sites: FakeSites, tmp_path: Path) -> None:
    for site in (sites.chatgpt, sites.gemini):
        site.set_next(chunks=4, intervalMs=40, firstTokenMs=100)
    q = "What is 6 times 9?"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env.update(AI_BRIDGE_STATE_DIR=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    args = [*serve_command(), "ask", "--provider", "both", "--json", "--browser", "launch", "--headless",
            "--isolated", f"--browser-path={CHROMIUM}", "--project", "cli-test"]
    args += [f"--browser-arg={a}" for a in sites.chromium_args()]
    proc = await trio.run_process([*args, q], env=env, cwd=REPO, capture_stdout=True, capture_stderr=True,
                                  check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    out = json.loads(proc.stdout)
    for p in ("chatgpt", "gemini"):
        assert answer_ref(q) in out[p]["answer"] and "6" in out[p]["answer"] and "9" in out[p]["answer"]
    assert "[chatgpt] typing" in err and "[gemini] sent" in err  # progress on stderr, stdout is only the result
    history = (tmp_path / "state" / "history.jsonl").read_text().splitlines()
    assert sorted(json.loads(h)["provider"] for h in history) == ["chatgpt", "gemini"]


async def test_cli_ask_reports_a_typed_failure(sites: FakeSites, tmp_path: Path) -> None:
    sites.gemini.set_page(login=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env.update(AI_BRIDGE_STATE_DIR=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    args = [*serve_command(), "ask", "--provider", "gemini", "--browser", "launch", "--headless", "--isolated",
            f"--browser-path={CHROMIUM}", *[f"--browser-arg={a}" for a in sites.chromium_args()], "Name 2 colors"]
    proc = await trio.run_process(args, env=env, cwd=REPO, capture_stdout=True, capture_stderr=True, check=False)
    assert proc.returncode == 1
    assert proc.stdout == b""
    assert "gemini failed: [login_required]" in proc.stderr.decode()


async def test_a_site_the_browser_cannot_reach_is_site_unreachable_with_its_error_name(tmp_path: Path) -> None:
    """The page does not load (here no host resolves; with no network Chrome says ERR_INTERNET_DISCONNECTED): the
    ask ends with the browser's own error name, not input_rejected after the input box's 30 s (issue 33)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env.update(AI_BRIDGE_STATE_DIR=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    args = [*serve_command(), "ask", "--provider", "chatgpt", "--browser", "launch", "--headless", "--isolated",
            f"--browser-path={CHROMIUM}", "--browser-arg=--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, "
            "EXCLUDE 127.0.0.1", "What is 2+2?"]
    proc = await trio.run_process(args, env=env, cwd=REPO, capture_stdout=True, capture_stderr=True, check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and proc.stdout == b"", err
    (line,) = [ln for ln in err.splitlines() if ln.startswith("ai-bridge: ")]
    # In the test's network namespace Chrome sees no network at all; elsewhere the name does not resolve.
    assert re.fullmatch(r"ai-bridge: chatgpt failed: \[site_unreachable\] ChatGPT \(chatgpt\.com\) did not load: "
                        r"net::ERR_(INTERNET_DISCONNECTED|NAME_NOT_RESOLVED) The browser could not reach chatgpt\.com: "
                        r".*Nothing was sent\.", line), err
