"""When the site changed under us (issue 37): never a partial answer as ok, and the change reported the day it lands.

- `solid_len` measures an answer the way the watcher measures what the page shows (its non-blank characters), so the
  flow can tell an answer shorter than what the page streamed: that one is read again by the whole turn's structure,
  and if it is still short it is `AnswerIncomplete`, never delivered as ok.
- `site_changed` is the warning an ask carries when it worked only through a fallback: a structural finder stood in
  for a table entry that matched nothing (the input, the question's turn, the answer's turn), or the answer was read
  by a wider anchor than the table's first. It names what missed and what worked instead, so the user can send it in
  (docs/providers.md) and patch providers.toml before anything breaks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..protocol.provider import AskWarning
from .table import Anchor, ProviderTable

# What each structural finder stood in for, and how it found the thing instead.
FOUND_BY = {
    "input": ("selectors.input", "a visible editable text box at the bottom of the page"),
    "user": ("selectors.user", "the question's own text in the thread"),
    "assistant": ("selectors.assistant", "the content that follows the question"),
}
# An answer this much shorter than what the page showed is not whole (markdown adds syntax; the page adds the
# labels of its code blocks' buttons, which markdown drops).
WHOLE = 0.85
MIN_SOLID = 40  # shorter answers are compared as they are: too little text to measure


def solid_len(markdown: str) -> int:
    """The non-blank characters of `markdown` without its syntax: fences and their languages, link targets, emphasis,
    heading, list, quote and table marks."""
    text = re.sub(r"^\s*(`{3,}|~{3,})", "", markdown, flags=re.MULTILINE)  # a fence's language is shown too
    # Math is not measured (the page shows it twice over; the watcher leaves it out too).
    text = re.sub(r"\$\$.*?\$\$|\\\[.*?\\\]|\\\(.*?\\\)|(?<![\\$])\$[^$\n]+\$", "", text, flags=re.DOTALL)
    text = re.sub(r"\]\([^)\s]*\)", "]", text)
    text = re.sub(r"^\s*([-*+]|\d+\.)\s+", "", text, flags=re.MULTILINE)
    text = re.sub(r"[#>*_`|~\[\]\\]", "", text)
    text = re.sub(r"^\s*:?-{3,}:?\s*$", "", text, flags=re.MULTILINE)
    return len(re.sub(r"\s+", "", text))


def short_of(answer: str, shown: int) -> bool:
    """Is `answer` shorter than the `shown` non-blank characters the page displayed for it?"""
    return shown >= MIN_SOLID and solid_len(answer) < WHOLE * shown


def site_changed(table: ProviderTable, fallbacks: Iterable[str], how: str) -> AskWarning | None:
    """The warning for an ask that worked through fallbacks (None when the table's own entries did the work)."""
    parts = [f"{FOUND_BY[f][0]} matched nothing (found {FOUND_BY[f][1]} instead)"
             for f in sorted(set(fallbacks)) if f in FOUND_BY]
    anchor = how.split(" ")[0]
    if anchor not in (table.primary_anchor.value, Anchor.REPORT.value) and anchor:
        parts.append(f"selectors.content matched nothing in the answer (read it by the {anchor!r} anchor instead)")
    if not parts:
        return None
    return AskWarning("site_changed", f"{table.title}'s page changed: " + "; ".join(parts) + ". The answer is "
                      "whole, but the provider table needs an update: run `ai-bridge doctor --live` and send its "
                      "output (docs/providers.md says how), or patch providers.toml.")
