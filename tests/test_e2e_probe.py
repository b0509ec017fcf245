"""`ai-bridge doctor --live`, the no-send health probe, end to end: the real CLI, the same actor tree as `serve`,
real headless Chromium with our extension, the fake sites — healthy, signed out, and with drifted markup — and a
providers.toml that patches the drift."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import trio

from .conftest import REPO, serve_command
from .e2e import CHROMIUM, requires_chromium
from .fakesites.fixture import FakeSites
from .fakesites.scripting import answer_ref

pytestmark = [requires_chromium, pytest.mark.chromium]

PROJECT = "probe-test"
# What patches the drifted fakes (tests/fakesites: PageOptions.drift): the renamed test ids and icons, the moved
# input, and German labels for the screen-reader headings and the stop buttons.
OVERRIDES = """\
[chatgpt.selectors]
send = ['button[data-testid="send-prompt-button"]']
stop = ['button[data-testid="composer-stop-button"]']
input = ['#composer-input[contenteditable="true"]', 'textarea#composer-input']

[chatgpt.labels]
answerMarkers = ["ChatGPT hat gesagt:"]
endMarkers = ["Du hast gesagt:"]
stop = ["Generierung anhalten"]

[gemini.selectors]
send = ['button:has(mat-icon[data-mat-icon-name="arrow_upward"])']
sendIcon = ['mat-icon[data-mat-icon-name="arrow_upward"]']
stop = ['button:has(mat-icon[data-mat-icon-name="stop_circle"])']
input = ['.prompt-editor > [contenteditable="true"]']

[gemini.labels]
stop = ["Antwort anhalten"]
"""


async def cli(sites: FakeSites, tmp_path: Path, *args: str) -> trio.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env.update(AI_BRIDGE_STATE_DIR=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    command, *rest = args
    full = [*serve_command(), command, "--browser", "launch", "--headless", "--isolated",
            f"--browser-path={CHROMIUM}", "--project", PROJECT, *[f"--browser-arg={a}" for a in sites.chromium_args()],
            *rest]
    return await trio.run_process(full, env=env, cwd=REPO, capture_stdout=True, capture_stderr=True, check=False)


async def probe(sites: FakeSites, tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    proc = await cli(sites, tmp_path, "doctor", "--live", "--json", *extra)
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return proc.returncode, json.loads(proc.stdout)


def items(report: dict[str, Any], provider: str) -> dict[str, dict[str, Any]]:
    return {i["entry"]: i for i in report["providers"][provider]["items"]}


async def sends(sites: FakeSites) -> tuple[int, int]:
    return (await sites.chatgpt.aio.full_log())["sends"], (await sites.gemini.aio.full_log())["sends"]


async def ask(sites: FakeSites, tmp_path: Path, question: str, *extra: str) -> None:
    proc = await cli(sites, tmp_path, "ask", "--json", *extra, question)
    assert proc.returncode == 0, proc.stderr.decode()
    out = json.loads(proc.stdout)
    for p in ("chatgpt", "gemini"):
        assert answer_ref(question) in out[p]["answer"]


async def test_probe_on_healthy_pages_reads_the_kept_conversation_and_sends_nothing(
        sites: FakeSites, tmp_path: Path) -> None:
    # A project without a conversation: the home pages, where no answer can be checked.
    rc, report = await probe(sites, tmp_path)
    assert rc == 0 and report["ok"] is True
    assert await sends(sites) == (0, 0)
    for p in ("chatgpt", "gemini"):
        r = report["providers"][p]
        assert r["signedIn"] is True and r["language"] == "en" and r["broken"] == [] and r["overridden"] == []
        got = items(report, p)
        if p == "chatgpt":  # the 2026 page: no send button on an empty composer, the voice button stands there
            assert got[f"{p}.selectors.send"]["status"] == "not_applicable"
            assert "voice button" in got[f"{p}.selectors.send"]["detail"]
            assert got[f"{p}.selectors.voice"]["status"] == "ok"
        else:
            assert got[f"{p}.selectors.send"]["status"] == "ok"
        assert got[f"{p}.selectors.stop"]["status"] == "not_applicable"
        assert "generating" in got[f"{p}.selectors.stop"]["detail"]
        assert got[f"{p}.selectors.assistant"]["status"] == "not_applicable"
        assert "no earlier answer" in got[f"{p}.selectors.assistant"]["detail"]
    chatgpt = items(report, "chatgpt")
    # The fake's composer is the ProseMirror div, as today's site: the table's first input selector.
    assert chatgpt["chatgpt.selectors.input"]["status"] == "ok"
    assert chatgpt["chatgpt.selectors.input"]["matched"] == '#prompt-textarea[contenteditable="true"]'
    gemini = items(report, "gemini")
    assert gemini["gemini.selectors.input"] == {
        "entry": "gemini.selectors.input", "status": "ok", "matched": '[role="textbox"][contenteditable="true"]',
        "detail": "", "required": True}
    # The 2026 page renders in the light DOM: no shadow roots needed, none to judge.
    assert gemini["gemini.shadow_dom"]["status"] == "not_applicable"

    await ask(sites, tmp_path, "Which HTTP status code means that a resource was not found?")
    assert await sends(sites) == (1, 1)

    # The kept conversation: read (never typed into), so the response selectors are checked on its answer.
    rc, report = await probe(sites, tmp_path)
    assert rc == 0, report
    assert await sends(sites) == (1, 1)
    for p, entries in (("chatgpt", ("user", "assistant", "turn", "content", "feedback", "model")),
                       ("gemini", ("user", "assistant", "content", "feedback", "mic", "model"))):
        assert "/c/" in report["providers"][p]["url"] or "/app/" in report["providers"][p]["url"]
        got = items(report, p)
        for e in entries:
            assert got[f"{p}.selectors.{e}"]["status"] == "ok", got[f"{p}.selectors.{e}"]
    chatgpt = items(report, "chatgpt")
    assert chatgpt["chatgpt.labels.answerMarkers"]["matched"] == "ChatGPT said:"
    assert chatgpt["chatgpt.labels.endMarkers"]["matched"] == "You said:"
    assert len(await sites.chatgpt.aio.log()) == 1 and len(await sites.gemini.aio.log()) == 1
    assert report["providers"]["chatgpt"]["conversationGone"] is None

    # The user deleted both conversations on the sites: a gone conversation, not a changed site (issue 33: user,
    # assistant, content and feedback were MISSING, with advice to patch providers.toml). A new chat is probed.
    kept = {p: report["providers"][p]["url"] for p in ("chatgpt", "gemini")}
    await sites.chatgpt.aio.delete_conversation(kept["chatgpt"].rsplit("/", 1)[1])
    await sites.gemini.aio.delete_conversation(kept["gemini"].rsplit("/", 1)[1])
    rc, report = await probe(sites, tmp_path)
    assert rc == 0 and report["ok"] is True, report
    for p, home in (("chatgpt", "https://chatgpt.com/"), ("gemini", "https://gemini.google.com/app")):
        r = report["providers"][p]
        assert r["conversationGone"] == kept[p] and r["url"] == home and r["broken"] == [], r
        assert items(report, p)[f"{p}.selectors.assistant"]["status"] == "not_applicable"
    assert await sends(sites) == (1, 1)


async def test_probe_names_exactly_the_drifted_entries_and_an_override_file_fixes_them(
        sites: FakeSites, tmp_path: Path) -> None:
    # ChatGPT on the spec's 2025 page, whose idle composer shows its send button: on the 2026 page an idle
    # composer has none, so a renamed send button cannot be seen without typing (and the probe types nothing).
    await sites.chatgpt.aio.set_page(shape="2025")
    await ask(sites, tmp_path, "Which command lists the files of a directory on Linux, with their sizes?")
    _, healthy = await probe(sites, tmp_path)
    assert healthy["ok"] is True

    await sites.chatgpt.aio.set_page(drift=True, shape="2025")
    await sites.gemini.aio.set_page(drift=True)
    proc = await cli(sites, tmp_path, "doctor", "--live")  # the human table first
    table = proc.stdout.decode()
    assert proc.returncode == 1, table + proc.stderr.decode()
    assert "update: chatgpt.selectors.send" in table and "update: gemini.selectors.send" in table
    assert "some providers need attention" in table

    rc, drifted = await probe(sites, tmp_path)
    assert rc == 1 and drifted["ok"] is False
    assert await sends(sites) == (1, 1)  # probing a broken page sends nothing either
    assert drifted["providers"]["chatgpt"]["broken"] == ["chatgpt.selectors.send"]
    assert drifted["providers"]["gemini"]["broken"] == ["gemini.selectors.send"]
    expected_changes = {
        "chatgpt": {"chatgpt.selectors.input", "chatgpt.selectors.send", "chatgpt.labels.answerMarkers",
                    "chatgpt.labels.endMarkers", "chatgpt.labels"},
        # (the German disclaimer carries none of the chrome labels either)
        # (its "Upload and tools" button speaks German: the language-free selector after the label finds it)
        "gemini": {"gemini.selectors.input", "gemini.selectors.send", "gemini.selectors.sendIcon", "gemini.labels",
                   "gemini.labels.chrome", "gemini.selectors.toolsMenu", "gemini.selectors.uploadMenu"},
    }
    for p, expected in expected_changes.items():
        before, after = items(healthy, p), items(drifted, p)
        assert before.keys() == after.keys()
        changed = {e for e in before if (before[e]["status"], before[e]["matched"]) != (
            after[e]["status"], after[e]["matched"])}
        assert changed == expected, (p, sorted(changed ^ expected))
        assert drifted["providers"][p]["language"] == "de"
    c, g = items(drifted, "chatgpt"), items(drifted, "gemini")
    assert (c["chatgpt.selectors.input"]["status"], c["chatgpt.selectors.input"]["matched"]) == (
        "fallback", '.ProseMirror[contenteditable="true"]')
    assert (g["gemini.selectors.input"]["status"], g["gemini.selectors.input"]["matched"]) == (
        "fallback", 'div[contenteditable="true"]')
    assert g["gemini.selectors.sendIcon"]["status"] == "missing" and not g["gemini.selectors.sendIcon"]["required"]
    assert c["chatgpt.labels"]["status"] == "missing" and c["chatgpt.labels"]["matched"] == "de"

    # The user's patch: the probe passes again and says what is overridden; so does an ask.
    patch = tmp_path / "providers.toml"
    patch.write_text(OVERRIDES, encoding="utf-8")
    rc, fixed = await probe(sites, tmp_path, "--providers", str(patch))
    assert rc == 0 and fixed["ok"] is True, fixed
    c, g = items(fixed, "chatgpt"), items(fixed, "gemini")
    for entry in ("chatgpt.selectors.send", "chatgpt.selectors.input", "chatgpt.labels.answerMarkers",
                  "gemini.selectors.send", "gemini.selectors.input", "gemini.selectors.sendIcon"):
        got = c.get(entry) or g[entry]
        assert got["status"] == "ok", got
    assert c["chatgpt.selectors.send"]["matched"] == 'button[data-testid="send-prompt-button"]'
    assert c["chatgpt.labels"]["status"] == "fallback"  # German: the patch carries the labels, the table does not
    assert set(fixed["providers"]["chatgpt"]["overridden"]) == {
        "chatgpt.selectors.send", "chatgpt.selectors.stop", "chatgpt.selectors.input", "chatgpt.labels.answerMarkers",
        "chatgpt.labels.endMarkers", "chatgpt.labels.stop"}
    assert await sends(sites) == (1, 1)
    proc = await cli(sites, tmp_path, "doctor", "--live", "--providers", str(patch))
    assert "chatgpt.selectors.send *" in proc.stdout.decode()
    assert "overridden by providers.toml" in proc.stdout.decode()

    await ask(sites, tmp_path, "How many bits are there in one IPv6 address?", "--providers", str(patch))
    assert await sends(sites) == (2, 2)


async def test_probe_of_a_signed_out_page_says_so(sites: FakeSites, tmp_path: Path) -> None:
    await sites.gemini.aio.set_page(login=True)
    proc = await cli(sites, tmp_path, "doctor", "--live", "--provider", "gemini")
    out = proc.stdout.decode()
    assert proc.returncode == 1, out + proc.stderr.decode()
    assert "NOT signed in" in out and "sign in to gemini" in out
    rc, report = await probe(sites, tmp_path, "--provider", "gemini")
    r = report["providers"]["gemini"]
    assert rc == 1 and r["signedIn"] is False and r["broken"] == []
    assert list(report["providers"]) == ["gemini"]
    got = items(report, "gemini")
    assert got["gemini.selectors.input"]["status"] == "not_applicable"
    assert "signed out" in got["gemini.selectors.input"]["detail"]
    assert got["gemini.labels.login"]["status"] == "ok"
    assert await sends(sites) == (0, 0)
