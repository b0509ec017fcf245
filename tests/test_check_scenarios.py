"""`ai-bridge check`'s scenario files and relevance score: the schema (one clear line per problem), the question
rule, selection and run order, and the scoring rule's properties (Hypothesis). Plain tests: no browser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.protocol.common import PAIR, ProviderName
from supervisor.app.check import relevance as rel
from supervisor.app.check import scenarios as sc

SEED_IDS = ["chatgpt-new-chat", "chatgpt-existing-chat", "chatgpt-thinking-mode", "chatgpt-code-block",
            "chatgpt-long-response", "gemini-new-chat", "gemini-existing-chat", "gemini-code-block", "parallel-query"]
# Issue 40: the three newer sites' own, run by `check --provider <site>` or `all` (the default runs the seeds').
SITES_IDS = ["claude-new-chat", "grok-code-block", "perplexity-new-chat", "sites-parallel-query"]


def good(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"id": "my-check", "name": "Mine", "tags": ["chatgpt"], "providers": ["chatgpt"],
                            "question": "How do I parse command line arguments in Rust with clap?",
                            "assertions": {"minAnswerLength": 20}}
    base.update(over)
    return base


def write(tmp_path: Path, scenarios: list[Any], name: str = "mine.json", **top: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "scenarios": scenarios, **top}))
    return path


def problems(tmp_path: Path, scenarios: list[Any], **top: Any) -> list[str]:
    with pytest.raises(sc.ScenarioError) as info:
        sc.load([write(tmp_path, scenarios, **top)])
    return list(info.value.problems)


# --- the shipped file ------------------------------------------------------------------------------------------------


def test_shipped_scenarios_are_the_seeds_nine_and_the_newer_sites_four() -> None:
    shipped = sc.load()
    assert [s.id for s in shipped] == [*SEED_IDS, *SITES_IDS]
    assert [s.id for s in sc.select(shipped, sites=PAIR)] == SEED_IDS  # `check` by default
    assert [s.id for s in sc.select(shipped, sites=(ProviderName.GROK,))] == ["grok-code-block"]
    assert sc.select(shipped, tags=["parallel"])[-1].providers == (ProviderName.CLAUDE, ProviderName.GROK,
                                                                   ProviderName.PERPLEXITY)
    with pytest.raises(sc.ScenarioError, match="--id claude-new-chat: it asks claude, which --provider leaves out"):
        sc.select(shipped, ids=["claude-new-chat"], sites=PAIR)
    shipped = [s for s in shipped if s.id in SEED_IDS]
    by_id = {s.id: s for s in shipped}
    assert by_id["parallel-query"].providers == (ProviderName.CHATGPT, ProviderName.GEMINI)
    assert by_id["parallel-query"].assertions.bothMustSucceed
    assert by_id["chatgpt-existing-chat"].follow_up == "chatgpt-new-chat"
    assert by_id["gemini-existing-chat"].follow_up == "gemini-new-chat"
    assert {t.value for s in sc.load() for t in s.tags} == {t.value for t in sc.Tag}
    # seed 10.3: smoke = new chat, parallel, code block; regression = existing chat, thinking
    assert {s.id for s in shipped if sc.Tag.SMOKE in s.tags} == {
        "chatgpt-new-chat", "chatgpt-code-block", "gemini-new-chat", "gemini-code-block", "parallel-query"}
    assert {s.id for s in shipped if sc.Tag.REGRESSION in s.tags} == {
        "chatgpt-existing-chat", "chatgpt-thinking-mode", "gemini-existing-chat"}
    for s in shipped:  # every seed 10.4 assertion is used somewhere, and each scenario has a deadline
        assert s.deadline_s(480) > 0
    used = {k for s in shipped for k, v in s.assertions.model_dump().items() if v not in (None, False)}
    assert used == {"bothMustSucceed", "minAnswerLength", "relevanceThreshold", "maxTotalMs", "noFallback",
                    "noEmptyMarkdown", "codeBlock"}


def test_user_file_adds_scenarios_after_the_shipped_ones(tmp_path: Path) -> None:
    got = sc.load([write(tmp_path, [good()])])
    assert [s.id for s in got] == [*SEED_IDS, *SITES_IDS, "my-check"]
    assert got[-1].source == str(tmp_path / "mine.json")


# --- the schema ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("change", "expected"), [
    ({"colour": "red"}, "colour: Extra inputs are not permitted"),
    ({"tags": ["chatgpt", "nightly"]}, "unknown tag 'nightly'"),
    ({"tags": "chatgpt"}, "tags: Input should be a valid list"),
    ({"tags": []}, "tags: List should have at least 1 item"),
    ({"providers": ["bard"]}, "providers.0: Input should be 'chatgpt', 'gemini', 'claude', 'grok' or 'perplexity'"),
    ({"id": "Bad Id"}, "id: String should match pattern"),
    ({"question": 42}, "question: Input should be a valid string"),
    ({"timeoutS": -1}, "timeoutS: Input should be greater than 0"),
    ({"timeoutS": "60"}, "timeoutS: Input should be a valid number"),
    ({"assertions": {"minAnswerLength": "50"}}, "assertions.minAnswerLength: Input should be a valid integer"),
    ({"assertions": {"minAnswerLength": 10.5}}, "assertions.minAnswerLength: Input should be a valid integer"),
    ({"assertions": {"relevanceThreshold": 1.5}}, "assertions.relevanceThreshold: Input should be less than"),
    ({"assertions": {"noFallback": 1}}, "assertions.noFallback: Input should be a valid boolean"),
    ({"assertions": {"mustBeFast": True}}, "assertions.mustBeFast: Extra inputs are not permitted"),
    ({"tags": ["chatgpt", "chatgpt"]}, "tags: listed twice"),
    ({"tags": ["smoke"]}, "a chatgpt scenario carries the 'chatgpt' tag"),
    ({"tags": ["chatgpt", "gemini"]}, "'gemini' on a scenario that only asks chatgpt"),
    ({"tags": ["chatgpt", "grok"]}, "'grok' on a scenario that only asks chatgpt"),
    ({"tags": ["chatgpt", "parallel"]}, "'parallel' needs two providers or more"),
    ({"providers": ["chatgpt", "gemini"], "tags": ["smoke"]}, "carries the 'parallel' tag"),
    ({"assertions": {"bothMustSucceed": True}}, "bothMustSucceed: only for a scenario that asks several"),
    ({"followUp": "nowhere"}, "followUp 'nowhere' is not a scenario listed before it"),
    ({"followUp": "gemini-new-chat"}, "followUp 'gemini-new-chat' asks gemini, not chatgpt"),
    ({"followUp": "chatgpt-existing-chat"}, "is itself a follow-up"),
    ({"id": "chatgpt-new-chat"}, "duplicate id"),
])
def test_each_problem_gets_a_clear_line(tmp_path: Path, change: dict[str, Any], expected: str) -> None:
    found = problems(tmp_path, [good(**change)])
    assert any(expected in p for p in found), found
    assert all(p.startswith(str(tmp_path / "mine.json")) for p in found)


def test_every_problem_of_every_file_is_reported_at_once(tmp_path: Path) -> None:
    a = write(tmp_path, [good(id="one", tags=["nope"]), good(id="two", question="Hello")], "a.json")
    b = tmp_path / "b.json"
    b.write_text("{not json")
    c = write(tmp_path, [good(id="one")], "c.json", extra=True)
    d = tmp_path / "d.json"
    d.write_text('{"version": 1, "scenarios": [{"id": "x", "timeoutS": NaN}]}')
    with pytest.raises(sc.ScenarioError) as info:
        sc.load([a, b, c, d, tmp_path / "missing.json"])
    text = str(info.value)
    assert "a.json: scenarios[0] (one): tags: unknown tag 'nope'" in text
    assert "a.json: scenarios[1] (two): question: a greeting" in text
    assert "b.json: not valid JSON" in text
    assert "c.json: extra: Extra inputs are not permitted" in text
    assert "d.json: not valid JSON: NaN is not a JSON number" in text
    assert "missing.json: cannot read it" in text


@pytest.mark.parametrize("top", [[], {"scenarios": []}, {"version": 2, "scenarios": []}, {"version": 1}])
def test_file_shape(tmp_path: Path, top: Any) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps(top))
    with pytest.raises(sc.ScenarioError):
        sc.load([path])


# --- the question rule -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("question", [
    "Hello", "OK", "ok.", "What's 1+1?", "1+1", "Connection test", "Hello, can you explain Rust lifetimes to me?",
    "hi there", "test message for the bridge", "Ping", "What is 12 * 7?", "こんにちは", "接続テストです、応答して",
    "Why?", "Is this working now?", "Tell me more.",
])
def test_question_rule_refuses_probes_and_empty_questions(tmp_path: Path, question: str) -> None:
    assert sc.question_problems(question)
    assert any("question:" in p for p in problems(tmp_path, [good(question=question)]))


@pytest.mark.parametrize("question", [
    "Tell me one way to deep copy an object in JavaScript. Include a code example.",
    "How do I read files asynchronously in Python?",
    "Explain how to use generic types in TypeScript briefly.",
    "Why does 0.1 + 0.2 not equal 0.3 in JavaScript floating point?",
    "Pythonでファイルを非同期に読む方法を教えてください",
    "Testing frameworks for Rust: which one handles async tests well?",
    "OK, so how does Rust's borrow checker decide lifetimes of references?",
])
def test_question_rule_accepts_natural_technical_questions(question: str) -> None:
    assert sc.question_problems(question) == []


# --- selection and order ---------------------------------------------------------------------------------------------


def test_select_by_ids_and_every_tag() -> None:
    every = sc.load()
    assert [s.id for s in sc.select(every, tags=["gemini"])] == [
        "gemini-new-chat", "gemini-existing-chat", "gemini-code-block"]
    assert [s.id for s in sc.select(every, tags=["smoke", "code"])] == ["chatgpt-code-block", "gemini-code-block",
                                                                         "grok-code-block"]
    assert [s.id for s in sc.select(every, ids=["parallel-query", "chatgpt-new-chat"])] == [
        "chatgpt-new-chat", "parallel-query"]
    with pytest.raises(sc.ScenarioError, match="--id nope: no such scenario"):
        sc.select(every, ids=["nope"])
    with pytest.raises(sc.ScenarioError, match="--tag nightly: unknown tag"):
        sc.select(every, tags=["nightly"])
    with pytest.raises(sc.ScenarioError, match="no scenario has every tag of parallel, code"):
        sc.select(every, tags=["parallel", "code"])


def test_plan_puts_a_follow_up_right_after_the_conversation_it_continues(tmp_path: Path) -> None:
    every = sc.load([write(tmp_path, [good(id="mine-later", followUp="chatgpt-new-chat")])])
    order = sc.plan(sc.select(every, ids=["gemini-existing-chat", "chatgpt-code-block", "mine-later",
                                          "chatgpt-existing-chat"]), every)
    assert [(s.id, added) for s, added in order] == [
        ("chatgpt-new-chat", True), ("chatgpt-existing-chat", False), ("mine-later", False),
        ("chatgpt-code-block", False), ("gemini-new-chat", True), ("gemini-existing-chat", False)]
    whole = sc.plan(every, every)
    assert [s.id for s, _ in whole][:3] == ["chatgpt-new-chat", "chatgpt-existing-chat", "mine-later"]
    assert not any(added for _, added in whole) and len(whole) == len(every)


def test_deadline() -> None:
    s = sc.load()[0]
    assert s.deadline_s(480) == 60 + 30  # maxTotalMs 60000, plus the margin
    long = next(x for x in sc.load() if x.id == "chatgpt-long-response")
    assert long.deadline_s(480) == 360


# --- relevance ---------------------------------------------------------------------------------------------------


def test_relevance_rule_worked_examples() -> None:
    q = "How do I read files asynchronously in Python?"
    assert rel.content_terms(q) == {"read", "fil", "asynchronous", "python"}
    assert rel.relevance(q, "Use asyncio and aiofiles to read a file asynchronously.") == 0.75
    assert rel.relevance(q, "ok") == 0.0 and rel.relevance(q, "") == 0.0
    assert rel.relevance(q, "PYTHON: Reading FILES, asynchronously.") == 1.0  # case and endings do not matter
    # seed 10.5: the question's numbers are terms, an answer without them loses them
    q2 = "Why is port 8080 used for HTTP proxies?"
    assert rel.content_terms(q2) == {"port", "8080", "http", "proxy"}
    assert rel.relevance(q2, "HTTP proxies often listen on a port like this.") == 0.75
    # Japanese: katakana runs whole, kanji bigrams, hiragana dropped; instruction words are not content
    assert rel.content_terms("Pythonでファイルを非同期に読む方法を教えてください") == {
        "python", "ファイル", "非同", "同期", "読"}
    ja = "Pythonでファイルを非同期に読む方法を教えてください"
    assert rel.relevance(ja, "asyncio で ファイル を 非同期 に 読み込む") == 0.8
    assert rel.content_terms("Hello") == {"hello"} and rel.relevance("the of and", "the of and") == 0.0


@pytest.mark.parametrize(("word", "stem"), [("files", "fil"), ("file", "fil"), ("typed", "typ"), ("types", "typ"),
                                            ("copies", "copy"), ("copied", "copy"), ("reading", "read"),
                                            ("classes", "class"), ("asynchronously", "asynchronous"), ("is", "is"),
                                            ("bus", "bus"), ("c++", "c++")])
def test_stem(word: str, stem: str) -> None:
    assert rel.stem(word) == stem


texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200) | st.lists(
    st.sampled_from(["Python", "files", "非同期", "ファイル", "読む", "asyncio", "8080", "the", "ß", "ｶﾞ", "é", " ", ".",
                     "\u0301", "İ", "ﬁ"]), max_size=30).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(texts, texts, texts)
def test_relevance_properties(question: str, answer: str, more: str) -> None:
    score = rel.relevance(question, answer)
    assert 0.0 <= score <= 1.0
    assert rel.relevance(question, answer) == score  # deterministic
    assert rel.relevance(question, answer + " " + more) >= score  # added text never lowers it
    assert rel.relevance(question, more + " " + answer) >= score
    if rel.content_terms(question):
        assert rel.relevance(question, question) == 1.0
        assert rel.relevance(question, f"{answer} {question}") == 1.0
