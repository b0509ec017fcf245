"""A scenario's assertions (seed 10.4, docs/check.md) judged on its asks' results: one `Verdict` each, per provider
where the assertion is about one answer."""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from actors.protocol.common import ProviderName
from actors.protocol.provider import AskResult

from ...errors import BridgeError
from .relevance import relevance
from .scenarios import Scenario

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n(.*?)^ {0,3}\1[ \t]*$", re.MULTILINE | re.DOTALL)
_MARKUP = re.compile(r"[#*_>`~|\-\[\]()!:=+.\s\\]")


@attrs.frozen
class Verdict:
    name: str  # the assertion: "answered", "bothMustSucceed", "minAnswerLength", ..., "sameConversation"
    provider: ProviderName | None  # None: about the scenario as a whole
    passed: bool
    expected: str
    actual: str

    def as_json(self) -> dict[str, object]:
        return {"assertion": self.name, "provider": self.provider.value if self.provider else None,
                "passed": self.passed, "expected": self.expected, "actual": self.actual}

    def line(self) -> str:
        who = f" ({self.provider.value})" if self.provider else ""
        return f"{self.name}{who}: expected {self.expected}, got {self.actual}"


def code_blocks(markdown: str) -> list[str]:
    """The contents of the fenced code blocks."""
    return [m.group(2) for m in _FENCE.finditer(markdown)]


def has_visible_text(markdown: str) -> bool:
    """A letter or digit outside markdown syntax (code counts as text)."""
    return bool(_MARKUP.sub("", markdown))


def _err(e: BridgeError) -> str:
    return f"[{e.code}] {e.message}"


RESEARCH_READS = ("report", "research frame")  # how a Deep Research report is read when nothing fell back


def judge(scenario: Scenario, results: Mapping[ProviderName, AskResult | BridgeError], *,
          first_anchor: Mapping[ProviderName, str], conversation: str | None = None) -> list[Verdict]:
    """Every assertion of `scenario` on `results`. `first_anchor`: each provider table's primary extraction anchor
    (noFallback). `conversation`: for a follow-up, the URL of the conversation it must have stayed in."""
    a = scenario.assertions
    out: list[Verdict] = []
    answered = {p: r for p, r in results.items() if isinstance(r, AskResult)}
    failed = {p: r for p, r in results.items() if isinstance(r, BridgeError)}
    if len(scenario.providers) == 1 or a.bothMustSucceed:
        name = "answered" if len(scenario.providers) == 1 else "bothMustSucceed"
        for p in scenario.providers:
            r = results.get(p)
            got = "an answer" if isinstance(r, AskResult) else _err(r) if isinstance(r, BridgeError) else "not asked"
            out.append(Verdict(name, p, isinstance(r, AskResult), "an answer", got))
    else:
        got = ", ".join(f"{p.value}: {_err(e)}" for p, e in failed.items()) or "no answer"
        out.append(Verdict("answered", None, bool(answered), "an answer from at least one provider",
                           f"{len(answered)} answer(s)" if answered else got))
    for p, r in answered.items():
        text = r.answer.strip()
        if conversation is not None:
            out.append(Verdict("sameConversation", p, r.url == conversation, conversation, r.url))
        if a.minAnswerLength is not None:
            out.append(Verdict("minAnswerLength", p, len(text) >= a.minAnswerLength,
                               f">= {a.minAnswerLength} characters", f"{len(text)}"))
        if a.relevanceThreshold is not None:
            score = relevance(scenario.question, text)
            out.append(Verdict("relevanceThreshold", p, score >= a.relevanceThreshold,
                               f">= {a.relevanceThreshold:g}", f"{score:.2f}"))
        if a.maxTotalMs is not None:
            out.append(Verdict("maxTotalMs", p, r.timings.total_ms <= a.maxTotalMs, f"<= {a.maxTotalMs} ms",
                               f"{r.timings.total_ms} ms"))
        if a.noFallback:
            primary = first_anchor[p]
            # A Deep Research answer is read where its report is (Gemini's panel, ChatGPT's frame): its own first.
            ok = r.extracted_by in (primary, *RESEARCH_READS) and r.retries == 0
            out.append(Verdict("noFallback", p, ok, f"extracted by {primary!r}, no retry",
                               f"extracted by {r.extracted_by or '?'!r}, {r.retries} retr"
                               f"{'y' if r.retries == 1 else 'ies'}"))
        if a.noEmptyMarkdown:
            empty = sum(1 for block in code_blocks(text) if not block.strip())
            ok = has_visible_text(text) and not empty
            got = "no visible text" if not has_visible_text(text) else f"{empty} empty code block(s)" if empty else (
                "visible text")
            out.append(Verdict("noEmptyMarkdown", p, ok, "visible text and no empty code block", got))
        if a.codeBlock:
            blocks = [b for b in code_blocks(text) if b.strip()]
            out.append(Verdict("codeBlock", p, bool(blocks), "a fenced code block with content",
                               f"{len(blocks)} code block(s)"))
    return out
