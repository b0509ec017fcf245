"""`ai-bridge check` without a browser: the assertions judged on real result types, the probe's findings turned into
"not asked" reasons, the reports (content, private files, pruning), and the command line (`--list`, `--dry-run`,
`--id`, `--tag`, invalid files: exit 2)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import attrs
import pytest

from actors.protocol.common import ProviderName
from actors.protocol.provider import AskResult, AskTimings, AskWarning, ProbeItem, ProbeReport, ProbeStatus
from supervisor.app.check import report
from supervisor.app.check.judge import code_blocks, has_visible_text, judge
from supervisor.app.check.outcome import Options, Outcome
from supervisor.app.check.run import FIRST_ANCHOR, health_of
from supervisor.app.check.scenarios import load
from supervisor.config import Config
from supervisor.errors import ResponseTimeout, SiteError

from .conftest import REPO, serve_command

C, G = ProviderName.CHATGPT, ProviderName.GEMINI
SHIPPED = {s.id: s for s in load()}
ANSWER = ("To read files asynchronously in Python, use asyncio with aiofiles:\n\n```python\nimport aiofiles\n\n"
          "async def read(path):\n    async with aiofiles.open(path) as f:\n        return await f.read()\n```\n")


def result(p: ProviderName = C, answer: str = ANSWER, *, total_ms: int = 4000, extracted_by: str | None = None,
           retries: int = 0, url: str = "https://chatgpt.com/c/1") -> AskResult:
    return AskResult(p, answer, url, AskTimings(100, 200, 50, 30, total_ms - 380, total_ms), retries, 0.0,
                     extracted_by=extracted_by or FIRST_ANCHOR[p])


def names(verdicts: list, passed: bool) -> set[str]:  # type: ignore[type-arg]
    return {v.name for v in verdicts if v.passed is passed}


def test_first_anchors_are_the_tables() -> None:
    # Gemini's report anchor reads Deep Research turns only; every site reads its answer by its content first.
    assert FIRST_ANCHOR == {p: "content" for p in ProviderName}


def test_a_good_answer_passes_every_assertion() -> None:
    s = SHIPPED["chatgpt-new-chat"]
    verdicts = judge(s, {C: result()}, first_anchor=FIRST_ANCHOR)
    assert names(verdicts, False) == set()
    assert names(verdicts, True) == {"answered", "minAnswerLength", "relevanceThreshold", "maxTotalMs", "noFallback",
                                     "noEmptyMarkdown"}


@pytest.mark.parametrize(("scenario", "res", "failed"), [
    ("chatgpt-new-chat", result(answer="OK"), {"minAnswerLength", "relevanceThreshold"}),
    ("chatgpt-new-chat", result(total_ms=61_000), {"maxTotalMs"}),
    ("chatgpt-new-chat", result(extracted_by="body"), {"noFallback"}),
    ("chatgpt-new-chat", result(retries=1), {"noFallback"}),
    ("chatgpt-new-chat", result(answer=ANSWER + "\n```js\n\n```\n"), {"noEmptyMarkdown"}),
    ("chatgpt-new-chat", result(answer="**  **\n\n---\n\n> \n" * 20), {"noEmptyMarkdown", "relevanceThreshold"}),
    ("chatgpt-code-block", result(answer="Use structuredClone(obj) to deep copy an object in JavaScript; " * 3),
     {"codeBlock"}),
])
def test_each_assertion_can_fail(scenario: str, res: AskResult, failed: set[str]) -> None:
    verdicts = judge(SHIPPED[scenario], {C: res}, first_anchor=FIRST_ANCHOR)
    assert names(verdicts, False) == failed
    for v in verdicts:
        if not v.passed:
            assert v.line().startswith(f"{v.name} (chatgpt): expected ")


@pytest.mark.parametrize(("extracted_by", "passed"), [
    ("research frame", True), ("report", True), ("research frame (no heading)", False), ("turn", False)])
def test_a_deep_research_report_read_where_it_is_is_no_fallback(extracted_by: str, passed: bool) -> None:
    verdicts = judge(SHIPPED["chatgpt-new-chat"], {C: result(extracted_by=extracted_by)}, first_anchor=FIRST_ANCHOR)
    assert ("noFallback" in names(verdicts, True)) is passed


def test_an_error_fails_answered_and_skips_the_answer_assertions() -> None:
    err = SiteError("ChatGPT says: Something went wrong", hint="Retry later.")
    verdicts = judge(SHIPPED["chatgpt-new-chat"], {C: err}, first_anchor=FIRST_ANCHOR)
    assert [(v.name, v.passed, v.actual) for v in verdicts] == [
        ("answered", False, "[site_error] ChatGPT says: Something went wrong")]


def test_both_must_succeed_and_at_least_one() -> None:
    par = SHIPPED["parallel-query"]
    timeout = ResponseTimeout("Gemini did not finish answering within 120s")
    q = "A process has its own address space; a thread shares its process's memory in the operating system. " * 2
    ok = {C: result(answer=q), G: result(G, answer=q)}
    assert names(judge(par, ok, first_anchor=FIRST_ANCHOR), False) == set()
    half = {C: result(answer=q), G: timeout}
    verdicts = judge(par, half, first_anchor=FIRST_ANCHOR)
    assert [(v.name, v.provider, v.passed) for v in verdicts if v.name == "bothMustSucceed"] == [
        ("bothMustSucceed", C, True), ("bothMustSucceed", G, False)]
    lenient = attrs.evolve(par, assertions=par.assertions.model_copy(update={"bothMustSucceed": False}))
    verdicts = judge(lenient, half, first_anchor=FIRST_ANCHOR)
    assert names(verdicts, False) == set() and "answered" in names(verdicts, True)
    verdicts = judge(lenient, {C: timeout, G: timeout}, first_anchor=FIRST_ANCHOR)
    assert names(verdicts, False) == {"answered"}


def test_a_follow_up_must_stay_in_its_conversation() -> None:
    s = SHIPPED["chatgpt-existing-chat"]
    answer = "Wrap the asynchronous file read in asyncio.timeout() (or wait_for) to add a timeout. " * 2
    same = judge(s, {C: result(answer=answer)}, first_anchor=FIRST_ANCHOR, conversation="https://chatgpt.com/c/1")
    assert "sameConversation" in names(same, True)
    moved = judge(s, {C: result(answer=answer, url="https://chatgpt.com/c/2")}, first_anchor=FIRST_ANCHOR,
                  conversation="https://chatgpt.com/c/1")
    assert names(moved, False) == {"sameConversation"}


def test_markdown_helpers() -> None:
    assert code_blocks("a\n```py\nx = 1\n```\nb\n~~~\n~~~\n") == ["x = 1\n", ""]
    assert has_visible_text("# Title") and not has_visible_text("**\n---\n> \n|---|")
    assert has_visible_text("日本語")


def probe_report(p: ProviderName, *items: ProbeItem, signed_in: bool | None = True) -> ProbeReport:
    return ProbeReport(p, "https://x", signed_in, "en", items, ())


def test_probe_findings_become_reasons() -> None:
    ok = ProbeItem(f"{C.value}.selectors.input", ProbeStatus.FALLBACK, "x", "only selector 3 of 4 matched")
    gone = ProbeItem(f"{G.value}.selectors.send", ProbeStatus.MISSING, None, "no selector matched")
    optional = ProbeItem(f"{G.value}.selectors.sendIcon", ProbeStatus.MISSING, None, "", required=False)
    health = health_of({C: probe_report(C, ok), G: probe_report(G, gone, optional)})
    assert health[C] is None
    assert health[G] == "the probe found gemini's gemini.selectors.send missing (no selector matched)"
    assert health_of({C: probe_report(C, signed_in=False)})[C] == "chatgpt is not signed in (probe)"
    failed = health_of({G: ResponseTimeout("the probe took too long")})[G]
    assert failed == "the probe of gemini failed: [response_timeout] the probe took too long"


def test_a_gone_conversation_is_said_and_is_no_finding() -> None:
    """The kept conversation deleted on the site: the probe read a new chat; the table says so, without advice to
    patch providers.toml, and check asks its scenarios (issue 33)."""
    from supervisor.app.probe import render_table

    na = ProbeItem(f"{C.value}.selectors.assistant", ProbeStatus.NOT_APPLICABLE, None, "no earlier answer")
    report = attrs.evolve(probe_report(C, na), conversation_gone="https://chatgpt.com/c/1")
    assert health_of({C: report})[C] is None
    table = render_table({C: report})
    assert "the kept conversation https://chatgpt.com/c/1 is not available on the site (deleted, or never there): " \
           "probed a new chat instead" in table
    assert "update:" not in table and "MISSING" not in table and table.endswith("all providers healthy")
    assert report.as_json()["conversationGone"] == "https://chatgpt.com/c/1"


def outcomes() -> list[Outcome]:
    good = Outcome(SHIPPED["chatgpt-new-chat"], 1, False, "passed", started=1.7e9, wall_ms=4100,
                   results={C: attrs.evolve(result(), warnings=(AskWarning("suspicious_answer", "odd", "/d.json"),))})
    good.verdicts = judge(good.scenario, good.results, first_anchor=FIRST_ANCHOR)
    bad = Outcome(SHIPPED["gemini-new-chat"], 2, False, "failed", reason="not asked: the probe found gemini's "
                  "gemini.selectors.send missing")
    return [good, bad]


def test_reports(tmp_path: Path) -> None:
    config = Config(state_dir=tmp_path / "state")
    data = report.as_json(outcomes(), {C: probe_report(C)}, config=config, opts=Options(tags=("smoke",)),
                          project="ai-bridge-check", started=1.7e9, finished=1.7e9 + 12.5)
    assert data["ok"] is False and data["counts"] == {"passed": 1, "failed": 1} and data["durationMs"] == 12500
    first, second = data["scenarios"]  # type: ignore[index]
    assert first["results"]["chatgpt"]["timings"]["totalMs"] == 4000
    assert first["results"]["chatgpt"]["answer"]["chars"] == len(ANSWER.strip())
    assert first["results"]["chatgpt"]["warnings"] == [{"code": "suspicious_answer", "message": "odd",
                                                        "debugDump": "/d.json"}]
    assert {v["assertion"] for v in first["passed"]} >= {"minAnswerLength", "noFallback"} and not first["failed"]
    assert second["status"] == "failed" and second["results"] == {"gemini": {"asked": False}}
    assert json.loads(json.dumps(data)) == data  # plain JSON
    md = report.markdown(data)
    assert md.startswith("# ai-bridge check — FAILED") and "**Not asked:** not asked: the probe found" in md
    assert "| chatgpt-new-chat | pass | chatgpt | 4000 | 100 | 50 | 30 | 3620 |" in md

    private = report.as_json(outcomes(), {}, config=attrs.evolve(config, private_text=True), opts=Options(),
                             project="p", started=0, finished=1)
    text = json.dumps(private)
    assert "aiofiles" not in text and "read files asynchronously" not in text

    summary = report.summary(outcomes(), 12.5)
    assert "chatgpt-new-chat  pass" in summary and "gemini-new-chat   FAIL" in summary
    assert summary.endswith("2 scenario(s): 1 passed, 1 failed in 12.5 s")

    written = [report.write(config.state_dir, data, md) for _ in range(report.KEEP + 3)]
    folder = config.state_dir / "reports"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for path in written[-1]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(list(folder.glob("*.json"))) == len(list(folder.glob("*.md"))) == report.KEEP
    assert json.loads(written[-1][0].read_text()) == data


# --- the command line, without a browser ----------------------------------------------------------------------------


@pytest.fixture
def run_cli(tmp_path: Path):  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")

    def run(*args: str) -> tuple[int, str, str]:
        # A browser path that does not exist: none of these may need a browser.
        proc = subprocess.run([*serve_command(), "check", "--state-dir", str(tmp_path / "state"), "--browser-path",
                               "/nonexistent", *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
        return proc.returncode, proc.stdout, proc.stderr

    return run


def test_cli_list_and_selection(run_cli) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli("--list")  # the ChatGPT and Gemini scenarios by default; every site's with --provider all
    assert code == 0 and all((f". {i}  [" in out) == (SHIPPED[i].providers[0].value in ("chatgpt", "gemini"))
                             for i in SHIPPED), out
    code, out, _ = run_cli("--list", "--provider", "all")
    assert code == 0 and all(f". {i}  [" in out for i in SHIPPED)
    code, out, _ = run_cli("--list", "--provider", "perplexity")
    assert code == 0 and out.count("  [") == 1 and ". perplexity-new-chat  [smoke, perplexity]" in out
    code, out, _ = run_cli("--list", "--tag", "gemini", "--tag", "code")
    assert code == 0 and ". gemini-code-block  [smoke, gemini, code]" in out and "chatgpt" not in out
    code, out, _ = run_cli("--dry-run", "--id", "gemini-existing-chat")
    assert code == 0 and out.startswith("2 scenario(s) valid; they would run in this order (nothing is asked):")
    assert " 1. gemini-new-chat  [smoke, gemini]  gemini, new chat, deadline 90 s (added: opens" in out
    assert " 2. gemini-existing-chat" in out and "follow-up of gemini-new-chat" in out
    code, _, err = run_cli("--dry-run", "--id", "nope")
    assert code == 2 and "ai-bridge check: --id nope: no such scenario" in err
    code, _, err = run_cli("--list", "--tag", "nightly")
    assert code == 2 and "--tag nightly: unknown tag" in err


def test_cli_user_scenarios_validated(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"version": 1, "scenarios": [{
        "id": "rust-clap", "name": "Rust CLI", "tags": ["chatgpt", "code"], "providers": ["chatgpt"],
        "question": "How do I parse command line arguments in Rust with clap?", "assertions": {"codeBlock": True}}]}))
    code, out, _ = run_cli("--dry-run", "--scenarios", str(mine), "--tag", "code")
    assert code == 0 and "3 scenario(s) valid" in out and ". rust-clap  [chatgpt, code]" in out
    mine.write_text(json.dumps({"version": 1, "scenarios": [
        {"id": "hi", "name": "Hi", "tags": ["chatgpt", "nightly"], "providers": ["chatgpt"], "question": "Hello"},
        {"id": "chatgpt-new-chat", "name": "Again", "tags": ["chatgpt"], "providers": ["chatgpt"],
         "question": "How do I parse command line arguments in Rust with clap?", "extra": 1}]}))
    code, out, err = run_cli("--dry-run", "--scenarios", str(mine))
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 2, err
    assert all(line.startswith(f"ai-bridge check: {mine}: scenarios[") for line in lines)
    assert "(hi): tags: unknown tag 'nightly'" in err and "(chatgpt-new-chat): extra: Extra inputs" in err
    assert "(hi): question: a greeting" not in err  # a scenario that fails the schema is not judged further
