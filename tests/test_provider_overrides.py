"""providers.toml: validation (one line per problem, typed errors only, fuzzed), the merge onto the shipped tables
(which stay untouched), start-up failure with exit code 2; and the probe's judgement of what a page showed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.protocol.common import ProviderName
from actors.protocol.provider import ProbeReport, ProbeStatus
from actors.provider import overrides
from actors.provider.page import BadPageReport
from actors.provider.probe import Match, Seen, judge
from actors.provider.sites import chatgpt, claude, gemini, grok, perplexity
from supervisor.app.providers import SHIPPED, provider_tables
from supervisor.config import Config
from supervisor.errors import ConfigError

from .conftest import REPO

TABLES = {t.name: t for t in SHIPPED}


def parse(text: str) -> overrides.Overrides:
    return overrides.parse(text, TABLES, source="p.toml")


def errors(text: str) -> list[str]:
    with pytest.raises(overrides.OverrideErrors) as info:
        parse(text)
    return list(info.value.lines)


# -- validation ---------------------------------------------------------------------------------------------------


def test_a_valid_file_prepends_and_leaves_the_shipped_tables_alone() -> None:
    before = (dict(chatgpt.TABLE.selectors), dict(chatgpt.TABLE.labels), dict(gemini.TABLE.selectors))
    patch = parse("""
        [chatgpt.selectors]
        send = ['button[data-testid="composer-send"]', 'button[data-testid="send-button"]']
        [gemini.labels]
        stop = ["Antwort anhalten"]
    """)
    c = overrides.apply(chatgpt.TABLE, patch)
    g = overrides.apply(gemini.TABLE, patch)
    # Prepended, and a shipped selector named again keeps its first place only once.
    assert c.selectors["send"] == ('button[data-testid="composer-send"]', 'button[data-testid="send-button"]',
                                   'button[aria-label*="送信"]', 'button[aria-label*="Send"]')
    assert g.labels["stop"] == ("Antwort anhalten", *gemini.TABLE.labels["stop"])
    # Everything else is the shipped table's own value (no copies), and the module tables did not change.
    assert c.selectors["input"] is chatgpt.TABLE.selectors["input"]
    assert c.labels is not chatgpt.TABLE.labels and c.labels == chatgpt.TABLE.labels
    assert c.timeouts is chatgpt.TABLE.timeouts and c.completion is chatgpt.TABLE.completion
    assert (dict(chatgpt.TABLE.selectors), dict(chatgpt.TABLE.labels), dict(gemini.TABLE.selectors)) == before
    assert c.overridden == ("chatgpt.selectors.send",) and g.overridden == ("gemini.labels.stop",)
    assert chatgpt.TABLE.overridden == () and gemini.TABLE.overridden == ()
    # The watcher gets the merged lists.
    assert c.watcher_config()["sel"]["send"][0] == 'button[data-testid="composer-send"]'  # type: ignore[index]


def test_the_newer_sites_tables_are_patched_the_same_way() -> None:
    """Issue 40: Claude's, Grok's and Perplexity's tables take a providers.toml like the first two; their own entries
    (Claude's busy marker, Grok's picker label) included."""
    patch = parse("""
        [claude.selectors]
        busy = ['[data-streaming="yes"]']
        [grok.selectors]
        pickerLabel = ["span.model-name"]
        [perplexity.labels]
        stop = ["Antwort anhalten"]
    """)
    c, g, p = (overrides.apply(t, patch) for t in (claude.TABLE, grok.TABLE, perplexity.TABLE))
    assert c.selectors["busy"] == ('[data-streaming="yes"]', *claude.TABLE.selectors["busy"])
    assert g.selectors["pickerLabel"][0] == "span.model-name" and g.choice_on_trigger
    assert p.labels["stop"] == ("Antwort anhalten", *perplexity.TABLE.labels["stop"])
    assert (c.overridden, g.overridden, p.overridden) == (
        ("claude.selectors.busy",), ("grok.selectors.pickerLabel",), ("perplexity.labels.stop",))
    assert errors("[grok.selectors]\nbusy = ['x']\n") == [
        "p.toml: grok.selectors.busy: unknown entry (known: " + ", ".join(sorted(grok.TABLE.selectors)) + ")"]


def test_an_empty_file_changes_nothing() -> None:
    patch = parse("# nothing yet\n")
    assert overrides.apply(chatgpt.TABLE, patch) is chatgpt.TABLE


def test_every_problem_gets_its_own_line() -> None:
    lines = errors("""
        [copilot.selectors]
        input = ["textarea"]
        [chatgpt.colors]
        x = 1
        [chatgpt.selectors]
        nope = ["a"]
        send = "button"
        stop = []
        input = ["", "   ", 3, "div {color: red}", "button[aria-label='x'", "a >", "a,,b", "ok-one"]
        [gemini.labels]
        stop = ["Stop\\u0007"]
        thinking = [true]
    """)
    assert lines == [
        "p.toml: unknown provider 'copilot' (known: chatgpt, claude, gemini, grok, perplexity)",
        "p.toml: unknown section chatgpt.colors (known: selectors, labels)",
        "p.toml: chatgpt.selectors.nope: unknown entry (known: assistant, attachment, attachmentBusy, challenge, "
        "chrome, content, expandThinking, feedback, fileInput, fileLink, generatedImage, input, login, main, menu, "
        "model, notice, picker, pickerChecked, pickerItem, researchDoc, researchFrame, send, stop, toolChip, "
        "toolSearch, toolsMenu, turn, user, voice)",
        "p.toml: chatgpt.selectors.send: must be a list of strings, got a string",
        "p.toml: chatgpt.selectors.stop: an empty list adds nothing (leave the entry out)",
        "p.toml: chatgpt.selectors.input[0]: an empty string",
        "p.toml: chatgpt.selectors.input[1]: an empty string",
        "p.toml: chatgpt.selectors.input[2]: must be a string, got a number",
        "p.toml: chatgpt.selectors.input[3]: not a CSS selector (a selector has no { } or ; (that is a style "
        "rule)): 'div {color: red}'",
        "p.toml: chatgpt.selectors.input[4]: not a CSS selector (missing ']'): \"button[aria-label='x'\"",
        "p.toml: chatgpt.selectors.input[5]: not a CSS selector (starts or ends with a combinator, comma or open "
        "bracket): 'a >'",
        "p.toml: chatgpt.selectors.input[6]: not a CSS selector (an empty selector between commas): 'a,,b'",
        "p.toml: gemini.labels.stop[0]: a control character",
        "p.toml: gemini.labels.thinking[0]: must be a string, got a boolean",
    ]


def test_toml_syntax_errors_and_wrong_shapes() -> None:
    [line] = errors("[chatgpt.selectors\nsend = [")
    assert line.startswith("p.toml: not valid TOML: ")
    assert errors("chatgpt = 3") == ["p.toml: chatgpt must be a table ([chatgpt.selectors] or [chatgpt.labels])"]
    assert errors("[chatgpt]\nselectors = 3") == ["p.toml: chatgpt.selectors must be a table of entries"]
    many = "[gemini.selectors]\ninput = [" + ", ".join(['"a"'] * 51) + "]"
    assert errors(many) == ["p.toml: gemini.selectors.input: at most 50 items, got 51"]
    long = "[gemini.labels]\nstop = [\"" + "x" * 501 + "\"]"
    assert errors(long) == ["p.toml: gemini.labels.stop[0]: longer than 500 characters"]


@pytest.mark.parametrize("selector", [
    'button[data-testid="send-button"]', "button:has(mat-icon[data-mat-icon-name='send'])", "a > b ~ c + d",
    'div[aria-label*="送信"]', r"#a\]b", ".x:not(.y, .z)", '[title="a,b"]', "a, b",
])
def test_good_selectors_pass_the_cheap_check(selector: str) -> None:
    assert overrides.css_problem(selector) is None


@pytest.mark.parametrize("selector", ["a)", "(a", "a[", '"a', "a;b", "> a", "a,", "a\nb", "a]"])
def test_garbage_selectors_fail_the_cheap_check(selector: str) -> None:
    assert overrides.css_problem(selector) is not None


def _toml_string(s: str) -> str:
    return json.dumps(s)  # a JSON string is a TOML basic string (a lone surrogate is refused as invalid TOML)


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return _toml_string(v)
    assert isinstance(v, list)
    return "[" + ", ".join(_toml_value(x) for x in v) + "]"


providers = st.sampled_from(["chatgpt", "gemini", "claude", ""])
sections = st.sampled_from(["selectors", "labels", "timeouts"])
entries = st.sampled_from(["input", "send", "stop", "feedback", "answerMarkers", "rateLimit", "nope", "a b"])
leaf = st.one_of(st.text(max_size=40), st.integers(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False))
values = st.one_of(leaf, st.lists(leaf, max_size=6))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(providers, sections, entries, values), max_size=8))
def test_fuzzed_files_give_overrides_or_typed_errors(rows: list[tuple[str, str, str, object]]) -> None:
    text = "".join(f"[{_toml_string(p)}.{_toml_string(s)}]\n{_toml_string(e)} = {_toml_value(v)}\n"
                   for p, s, e, v in rows)
    try:
        patch = parse(text)
    except overrides.OverrideErrors as exc:
        assert exc.lines and all(isinstance(line, str) and line.startswith("p.toml: ") and "\n" not in line
                                 for line in exc.lines)
        return
    for table in SHIPPED:
        merged = overrides.apply(table, patch)
        assert merged.selectors.keys() == table.selectors.keys() and merged.labels.keys() == table.labels.keys()
        for name in merged.overridden:
            provider, section, entry = name.split(".")
            assert provider == table.name and entry in getattr(table, section)


@settings(max_examples=300)
@given(st.text(max_size=300))
def test_fuzzed_text_gives_overrides_or_typed_errors(text: str) -> None:
    try:
        parse(text)
    except overrides.OverrideErrors as exc:
        assert exc.lines


# -- start-up -------------------------------------------------------------------------------------------------------


def test_provider_tables_from_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert provider_tables(Config(state_dir=tmp_path)) == SHIPPED  # no file: the shipped tables themselves
    default = tmp_path / "config" / "ai-bridge" / "providers.toml"
    default.parent.mkdir(parents=True)
    default.write_text('[gemini.selectors]\nfeedback = [\'img[alt="thumbs_up"]\']\n', encoding="utf-8")
    tables = {t.name: t for t in provider_tables(Config(state_dir=tmp_path))}
    assert tables["chatgpt"] is chatgpt.TABLE and tables["gemini"].selectors["feedback"][0] == 'img[alt="thumbs_up"]'
    with pytest.raises(ConfigError, match="does not exist"):
        provider_tables(Config(state_dir=tmp_path, providers_file=tmp_path / "missing.toml"))


def test_an_invalid_file_stops_the_start_with_one_line_per_problem(tmp_path: Path) -> None:
    bad = tmp_path / "providers.toml"
    bad.write_text('[chatgpt.selectors]\nsend = "x"\nnope = ["a"]\n', encoding="utf-8")
    env = {"AI_BRIDGE_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "PATH": "/usr/bin:/bin"}
    for args in (["ask", "--providers", str(bad), "What does HTTP 404 mean?"], ["doctor", "--live"]):
        if args[0] == "doctor":  # the default place: $XDG_CONFIG_HOME/ai-bridge/providers.toml
            (tmp_path / "config" / "ai-bridge").mkdir(parents=True, exist_ok=True)
            (tmp_path / "config" / "ai-bridge" / "providers.toml").write_text(bad.read_text())
        proc = subprocess.run([sys.executable, "-m", "supervisor.app.cli", *args], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 2 and "Traceback" not in proc.stderr
        assert lines[0].endswith("chatgpt.selectors.send: must be a list of strings, got a string")
        assert lines[1].startswith("ai-bridge: ") and "chatgpt.selectors.nope: unknown entry" in lines[1]


# -- the probe's judgement -------------------------------------------------------------------------------------------


def seen(url: str = "https://gemini.google.com/app", **changes: object) -> Seen:
    base = Seen(url=url, lang="en", kana=False, shadow_roots=3, responses=0,
                selectors={"input": Match(0, '[role="textbox"][contenteditable="true"]'),
                           "send": Match(0, "button:has(...)"), "mic": Match(0, 'img[alt="mic"]')},
                labels={})
    return attrs.evolve(base, **changes)  # type: ignore[arg-type]


def by_entry(report: ProbeReport) -> dict[str, tuple[ProbeStatus, bool]]:
    return {i.entry: (i.status, i.required) for i in report.items}


def test_judge_a_home_page() -> None:
    r = judge(gemini.TABLE, seen())
    got = by_entry(r)
    assert r.signed_in is True and r.language == "en" and r.ok and r.broken == ()
    assert got["gemini.selectors.input"] == (ProbeStatus.OK, True)
    assert got["gemini.selectors.assistant"] == (ProbeStatus.NOT_APPLICABLE, True)  # a new chat shows no answer
    assert got["gemini.selectors.stop"] == (ProbeStatus.NOT_APPLICABLE, False)
    assert got["gemini.selectors.sendIcon"] == (ProbeStatus.MISSING, False)  # optional: still ok overall
    assert got["gemini.shadow_dom"] == (ProbeStatus.OK, False)
    # One item per non-empty entry of the table, plus language and shadow roots.
    assert len(r.items) == len(gemini.TABLE.selectors) + sum(1 for v in gemini.TABLE.labels.values() if v) + 2


def test_judge_a_conversation_page_with_drift() -> None:
    s = seen("https://gemini.google.com/app/abc123", responses=2, lang="de",
             selectors={"input": Match(2, 'div[contenteditable="true"]'), "send": Match(None, None),
                        "user": Match(0, "user-query"), "assistant": Match(None, None),
                        "content": Match(None, None, ("bad[",)), "feedback": Match(0, 'img[alt="thumb_up"]')})
    r = judge(gemini.TABLE, s)
    assert {i.entry for i in r.broken} == {"gemini.selectors.send", "gemini.selectors.assistant",
                                            "gemini.selectors.content"}
    assert not r.ok
    got = {i.entry: i for i in r.items}
    assert got["gemini.selectors.input"].status is ProbeStatus.FALLBACK
    assert "only selector 3 of 4" in got["gemini.selectors.input"].detail
    assert "bad syntax: bad[" in got["gemini.selectors.content"].detail
    assert got["gemini.labels"].status is ProbeStatus.MISSING and got["gemini.labels"].matched == "de"
    # With the user's labels the unknown language is a known workaround, not a problem.
    r2 = judge(gemini.TABLE, s, overridden=("gemini.labels.stop",))
    assert {i.entry: i for i in r2.items}["gemini.labels"].status is ProbeStatus.FALLBACK


def test_judge_a_stop_button_only_the_labels_find() -> None:
    s = seen(labels={"stop": Match(0, "Stop response")}, selectors={
        "input": Match(0, "x"), "send": Match(None, None), "stop": Match(None, None)})
    got = {i.entry: i for i in judge(gemini.TABLE, s).items}
    assert got["gemini.selectors.stop"].status is ProbeStatus.MISSING and got["gemini.selectors.stop"].required
    assert got["gemini.labels.stop"].status is ProbeStatus.OK


def test_judge_signed_out_and_language_from_kana() -> None:
    s = seen("https://chatgpt.com/", lang="", kana=True, selectors={"login": Match(0, 'button[data-testid="x"]')},
             labels={"login": Match(1, "ログイン")})
    r = judge(chatgpt.TABLE, s)
    got = by_entry(r)
    assert r.signed_in is False and r.language == "ja" and not r.ok and r.broken == ()
    assert got["chatgpt.selectors.input"] == (ProbeStatus.NOT_APPLICABLE, True)
    assert got["chatgpt.labels.login"] == (ProbeStatus.OK, False)  # a Japanese page matches the Japanese label
    assert r.as_json()["signedIn"] is False and r.provider is ProviderName.CHATGPT


@pytest.mark.parametrize("raw", [
    None, [], {"selectors": {}, "labels": {}}, {"selectors": [], "labels": {}, "url": "", "lang": "", "kana": False,
                                                 "shadowRoots": 0, "responses": 0},
    {"selectors": {"input": [{"selector": 1}]}, "labels": {}, "url": "", "lang": "", "kana": False,
     "shadowRoots": 0, "responses": 0},
    {"selectors": {"input": [{"selector": "a", "count": -1, "visible": 0}]}, "labels": {}, "url": "", "lang": "",
     "kana": False, "shadowRoots": 0, "responses": 0},
    {"selectors": {}, "labels": {"stop": [{"label": "x", "shown": "yes"}]}, "url": "", "lang": "", "kana": False,
     "shadowRoots": 0, "responses": 0},
    {"selectors": {}, "labels": {}, "url": "", "lang": "", "kana": False, "shadowRoots": True, "responses": 0},
])
def test_a_malformed_probe_result_is_refused(raw: object) -> None:
    with pytest.raises(BadPageReport):
        Seen.parse(raw)  # type: ignore[arg-type]


def test_a_probe_result_is_parsed() -> None:
    got = Seen.parse({"selectors": {"input": [{"selector": "a", "invalid": True, "count": 0, "visible": 0},
                                              {"selector": "b", "invalid": False, "count": 2, "visible": 0},
                                              {"selector": "c", "invalid": False, "count": 1, "visible": 1}],
                                    "send": [{"selector": "d", "invalid": False, "count": 1, "visible": 0}]},
                      "labels": {"stop": [{"label": "S", "shown": False}, {"label": "T", "shown": True}]},
                      "url": "https://x/", "lang": "en-US", "kana": False, "shadowRoots": 0, "responses": 1})
    assert got.selectors["input"] == Match(2, "c", ("a",))  # the input must be visible, not merely present
    assert got.selectors["send"] == Match(0, "d")
    assert got.labels["stop"] == Match(1, "T")


def test_judge_an_idle_2026_chatgpt_page_is_ok_without_a_send_button() -> None:
    """Issue 23: with an empty composer the 2026 ChatGPT shows 'Start Voice' and a dictate button, no send button. On
    an idle conversation page the probe reports send as not applicable, and the turn actions as the completion
    signal they are."""
    s = seen("https://chatgpt.com/c/1234-abcd", responses=2, composer_empty=True,
             selectors={"input": Match(0, "#prompt-textarea"), "send": Match(None, None),
                        "voice": Match(0, 'button[aria-label="Start Voice"]'), "user": Match(0, "u"),
                        "assistant": Match(0, "a"), "turn": Match(0, "t"), "content": Match(0, ".markdown.prose"),
                        "feedback": Match(0, '[data-testid="copy-turn-action-button"]'),
                        "model": Match(0, "[data-message-model-slug]"), "main": Match(0, "main")},
             labels={"answerMarkers": Match(0, "ChatGPT said:"), "endMarkers": Match(0, "You said:")})
    r = judge(chatgpt.TABLE, s)
    got = {i.entry: i for i in r.items}
    assert r.ok and r.broken == ()
    assert got["chatgpt.selectors.send"].status is ProbeStatus.NOT_APPLICABLE
    assert "voice button" in got["chatgpt.selectors.send"].detail
    assert got["chatgpt.selectors.feedback"].status is ProbeStatus.OK and got["chatgpt.selectors.feedback"].required
    # The same page with text in the composer and still no send button: that is a broken send selector.
    r2 = judge(chatgpt.TABLE, attrs.evolve(s, composer_empty=False))
    assert [i.entry for i in r2.broken] == ["chatgpt.selectors.send"]
