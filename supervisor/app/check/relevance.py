"""How relevant an answer is to its question: a documented, deterministic score in [0, 1] (docs/check.md).

Seed 10.5 flags answers that are empty, just "ok", or lack the question's numbers. The score generalises that:

1. Both texts are normalised: Unicode NFKC, then case-folded.
2. They are split into terms. Latin (and other non-CJK) letters and digits: maximal runs, each stemmed by a small
   fixed suffix rule (`stem`). Japanese: a katakana run is one term; a kanji run gives its character bigrams (a
   single kanji is a term of its own); hiragana runs are dropped (particles and inflections, Japanese's stop-words).
3. The question's *content terms* are its terms minus stop-words (English function words and the words that ask
   rather than say what about: "explain", "example", "briefly" ..., and their Japanese counterparts) and minus
   one-letter terms. Numbers are content terms, so an answer without the question's numbers loses them.
4. score = |content terms of the question that occur among the answer's terms| / |content terms of the question|,
   0.0 when the question has none (the question rule refuses such questions anyway).

Properties the tests hold: in [0, 1]; the same inputs give the same score; appending text to an answer never
lowers it; an answer that contains the question scores 1.0.
"""

from __future__ import annotations

import re
import unicodedata

_HIRAGANA = r"\u3040-\u309f"
_KATAKANA = r"\u30a0-\u30ff\u31f0-\u31ff"
_KANJI = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TERM = re.compile(rf"[{_HIRAGANA}]+|[{_KATAKANA}]+|[{_KANJI}]+|[^\W_{_HIRAGANA}{_KATAKANA}{_KANJI}]+")

# English function words, and words that ask for something rather than say what it is about.
STOP_EN = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between both
but by can could did do does doing done down during each either else few for from further get gets getting give
gives had has have having he her here hers him his how i if in into is it its itself just let lets like me might
more most much must my need no nor not now of off on once one only or other our ours out over own please quick
quickly same she should show so some such than that the their them then there these they this those through to too
two under until up us use using very want was way ways we were what when where whether which while who whom why
will with within without would you your yours
tell explain explained explaining describe give list write include includes including example examples briefly
brief short simple simply short shortly summary summarize mention provide help know sure thing things kind
code snippet sample demonstrate demonstration used uses work works working think thinking careful carefully
detail detailed details cover covers covering answer question
""".split())
STOP_JA = frozenset("""
方法 説明 教 例 簡単 簡潔 紹介 具体 具体例 一 使 書 場合 何 方 次 下 上 私
""".split())
STOP = STOP_EN | STOP_JA

# The suffix rule, first match wins; a rule applies only when at least 3 characters stay.
_SUFFIXES = (("ies", "y"), ("ied", "y"), ("sses", "ss"), ("ingly", ""), ("edly", ""), ("ly", ""), ("ing", ""),
             ("ed", ""), ("s", ""))


def normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def stem(word: str) -> str:
    """A deterministic light stemmer for ASCII words: plural, -ing, -ed and -ly endings go, then a final "e", so
    "files"/"file", "typed"/"types"/"type", "reading"/"reads" and "asynchronously"/"asynchronous" meet."""
    if not (word.isascii() and word.isalpha()) or len(word) <= 3:
        return word
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) + len(repl) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            word = word[: len(word) - len(suffix)] + repl
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _kind(run: str) -> str:
    ch = run[0]
    if "\u3040" <= ch <= "\u309f":
        return "hiragana"
    if "\u30a0" <= ch <= "\u30ff" or "\u31f0" <= ch <= "\u31ff":
        return "katakana"
    if re.match(rf"[{_KANJI}]", ch):
        return "kanji"
    return "word"


def terms(text: str, *, content: bool = False) -> set[str]:
    """The terms of `text` (step 2); with `content`, only its content terms (step 3)."""
    out: set[str] = set()
    for run in _TERM.findall(normalise(text)):
        kind = _kind(run)
        if kind == "hiragana":
            continue
        if kind == "katakana":
            if content and (run in STOP or run == "ー"):
                continue
            out.add(run)
        elif kind == "kanji":
            if len(run) == 1:
                if not (content and run in STOP):
                    out.add(run)
                continue
            if content and run in STOP:
                continue
            out.update(b for b in (run[i:i + 2] for i in range(len(run) - 1)) if not (content and b in STOP))
        else:
            term = stem(run)
            if content and (run in STOP or term in STOP or (len(run) < 2 and not run.isdigit())):
                continue
            out.add(term)
    return out


def content_terms(question: str) -> set[str]:
    return terms(question, content=True)


def relevance(question: str, answer: str) -> float:
    """Step 4: the share of the question's content terms the answer contains."""
    wanted = content_terms(question)
    if not wanted:
        return 0.0
    return len(wanted & terms(answer)) / len(wanted)
