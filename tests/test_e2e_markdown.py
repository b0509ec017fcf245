"""Answers come back as the markdown the model wrote, end to end: each answer of the corpus
(tests/fakesites/corpus/*.md) is scripted into the fake ChatGPT and Gemini, which render it the way the real sites
do (tests/fakesites/common/markdown.js and each site's markup hooks), asked through the real MCP server, extension
and Chromium, and the tool's answer is compared with the source markdown.

The comparison allows only the normalisations documented in docs/answers.md ("What comes back"), applied to both
sides outside fenced code:

- trailing spaces at the end of a line, and runs of blank lines (one blank line separates blocks);
- the bullet character: ``*`` and ``+`` list items come back as ``-``;
- the emphasis marker: ``_em_`` and ``__strong__`` come back as ``*em*`` and ``**strong**``;
- table rows: cell padding, and the dashes of the delimiter row (its alignment colons are kept; Gemini does not
  mark left alignment, so there ``:---`` is the same as ``---``);
- a citation, written here as ``{{cite:Label|URL}}`` where the model's answer carries the site's citation
  reference: ChatGPT shows it as a link pill and it comes back as `` [Label](URL)``; Gemini shows a footnote and a
  chip without the URL, and it is dropped.

One server and one browser serve every ask; both providers are asked at the same time.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import pytest
import trio

from .e2e import Bridge, requires_chromium
from .fakesites.fixture import FakeSites
from .shared_bridge import Lease, OpenShared

pytestmark = [requires_chromium, pytest.mark.chromium]

CORPUS = sorted((Path(__file__).parent / "fakesites" / "corpus").glob("*.md"))
STREAM = {"chunks": 3, "intervalMs": 15, "firstTokenMs": 20}  # streamed, so partial markdown renders on the way

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
DELIMITER_CELL = re.compile(r"^:?-+:?$")


def split_cells(row: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", row.strip())
    return [c.strip() for c in cells[1:-1]]


def canonical_row(line: str, site: str) -> str:
    cells = split_cells(line)
    if cells and all(DELIMITER_CELL.match(c) for c in cells):
        def align(c: str) -> str:
            left, right = c.startswith(":"), c.endswith(":")
            if left and right:
                return ":---:"
            if right:
                return "---:"
            return ":---" if left and site != "gemini" else "---"
        cells = [align(c) for c in cells]
    return "| " + " | ".join(cells) + " |"


def canonical_emphasis(text: str) -> str:
    parts = re.split(r"(`+[^`]*?`+)", text)  # leave code spans alone
    for i in range(0, len(parts), 2):
        p = re.sub(r"(?<![\w_])__(?=\S)(.+?)(?<=\S)__(?![\w_])", r"**\1**", parts[i])
        parts[i] = re.sub(r"(?<![\w_*])_(?=\S)(.+?)(?<=\S)_(?![\w_])", r"*\1*", p)
    return "".join(parts)


def canonical(md: str, site: str) -> str:
    out: list[str] = []
    fence = ""
    for raw in md.replace("\r\n", "\n").split("\n"):
        line = raw.rstrip()
        opener = FENCE.match(line)
        if fence:
            out.append(line)
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = ""
            continue
        if opener:
            fence = opener.group(1)
            out.append(line)
            continue
        if not line and out and not out[-1]:
            continue
        line = re.sub(r"^((?:\s|>\s?)*)[*+] ", r"\1- ", line)
        line = canonical_emphasis(line)
        if line.lstrip().startswith("|"):
            indent = line[: len(line) - len(line.lstrip())]
            line = indent + canonical_row(line, site)
        out.append(line)
    return "\n".join(out).strip()


def expected_for(source: str, site: str) -> str:
    cite = r" [\1](\2)" if site == "chatgpt" else ""
    return re.sub(r"\s*\{\{cite:([^|}]+)\|([^}]+)\}\}", cite, source)


def test_normalisation_is_only_what_is_documented() -> None:
    """The comparison itself: each documented normalisation applies, and nothing else is forgiven."""
    assert canonical("* a\n  + b  \n\n\n_x_ __y__ `_z_`", "chatgpt") == "- a\n  - b\n\n*x* **y** `_z_`"
    assert canonical("|a|b|\n|:-|-:|", "chatgpt") == "| a | b |\n| :--- | ---: |"
    assert canonical("|:-|:-:|", "gemini") == "| --- | :---: |"
    assert canonical("```\n* not a list  \n\n\n```", "chatgpt") == "```\n* not a list\n\n\n```"
    assert canonical("snake_case_name", "chatgpt") == "snake_case_name"
    for different in ("1. a", "## a", "[a](b)", "a\nb", "> a", "`a`", "**a**", "~~a~~", "$a$", "a\\*"):
        assert canonical(different, "chatgpt") != canonical("a", "chatgpt"), different
    assert expected_for("x{{cite:N|https://n.example/a}}.", "chatgpt") == "x [N](https://n.example/a)."
    assert expected_for("x{{cite:N|https://n.example/a}}.", "gemini") == "x."


async def ask_all(b: Bridge | Lease, site: str, control: Any, failures: list[str]) -> None:
    tool = f"ask_{site}_web"
    control.set_answers(*({"text": path.read_text(encoding="utf-8"), **STREAM} for path in CORPUS))
    for path in CORPUS:
        source = path.read_text(encoding="utf-8")
        res = await b.call(tool, {"question": f"Show the corpus answer named {path.stem.split('-', 1)[1]}."})
        if res.is_error:
            failures.append(f"{site} {path.name}: error {res.content[0].text}")
            continue
        got = canonical(res.structured_content["answer"], site)
        want = canonical(expected_for(source, site), site)
        if got != want:
            diff = "\n".join(difflib.unified_diff(want.splitlines(), got.splitlines(), "source", "answer",
                                                  lineterm=""))
            failures.append(f"{site} {path.name}:\n{diff}")


async def test_corpus_answers_come_back_as_their_markdown(sites: FakeSites, shared_bridge: OpenShared) -> None:
    assert len(CORPUS) >= 30
    failures: list[str] = []
    async with shared_bridge() as b:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask_all, b, "chatgpt", sites.chatgpt, failures)
            nursery.start_soon(ask_all, b, "gemini", sites.gemini, failures)
    assert len(sites.chatgpt.log()) == len(sites.gemini.log()) == len(CORPUS)  # each asked once, none retried
    assert not failures, f"{len(failures)} answers differ from their source:\n\n" + "\n\n".join(failures)
