"""Answer scripts, the default answer rule and per-site control state (no web framework in here).

Everything a test can script lives here so it can be unit-tested and imported without quart:
:class:`Script` (how the next answer behaves), :class:`PageOptions` (how the next page loads behave),
:func:`default_answer` and :func:`split_chunks`, and :class:`SiteState` (queue, log, conversations, in-flight
generations) that the web apps in ``server.py`` drive.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import re
import secrets
import struct
import time
import uuid
import zlib
from dataclasses import dataclass, field
from typing import Any

import trio


def now_ms() -> float:
    """Wall-clock epoch milliseconds (same clock as ``performance.timeOrigin + performance.now()``)."""
    return time.time() * 1000.0


class ControlError(ValueError):
    """A control request is malformed (HTTP 400)."""


NOTICE_PLACES = ("turn", "alert", "toast", "banner")
LAYOUTS = ("standard", "bare", "divs", "detached", "nofeedback")
# "2026": the markup captured from the real sites in Jan-Feb 2026 (the default); "2025": the spec's older picture
# (ChatGPT send button always present; Gemini in shadow roots with img[alt] icons), kept so it stays testable.
SHAPES = ("2026", "2025")
_MODEL = re.compile(r"^[0-9a-z][0-9a-z.]{0,15}$")


# ---------------------------------------------------------------------------------------------------------------
# Scripts


@dataclass(frozen=True)
class Script:
    """How one answer is produced. Field names are the JSON keys of the control API.

    Defaults give the benchmark's standard generation: 400 ms to the first token, then 10 chunks 100 ms apart,
    i.e. the answer is complete 1.3 s after the question arrives.
    """

    text: str | None = None        # literal markdown answer; None = use ``rule``
    rule: str = "default"          # "default" (derived from the question) | "echo" (the question itself)
    chunks: int = 10               # number of streamed chunks
    intervalMs: float = 100.0      # pause between chunks
    firstTokenMs: float = 400.0    # pause between receiving the question and the first chunk (or thinking start)
    thinking: bool = False         # think first: ChatGPT "Skip thinking" then "Thinking time: Xs"; Gemini a
                                   # "Thinking" label in <model-thoughts>, then "Show thinking"
    thinkingMs: float = 2000.0     # thinking duration (cut short by a click on ChatGPT's "Skip thinking")
    stuck: bool = False            # stream the text but never finish on this page: the stop button stays
    hangsOnReload: bool = False    # with stuck: the server hangs too, so a reload shows the partial answer still
                                   # generating (stop button up); without it the server finished and a reload
                                   # shows the whole answer
    neverAnswer: bool = False      # accept the question (user turn shows) but never start an answer
    rateLimited: bool = False      # answer with the site's rate-limit message instead
    notice: str = "turn"           # where the limit shows: "turn" (ChatGPT: an error-styled assistant turn;
                                   # Gemini: a plain model response), "alert" (role=alert box in the thread),
                                   # "toast", "banner"
    siteError: bool = False        # the stream breaks after `errorAfterChunks` chunks: "Something went wrong"
                                   # with a Retry button (ChatGPT: in the thread; Gemini: an alert)
    errorAfterChunks: int = 0
    renderLagMs: float = 0.0       # the text renders only this long AFTER the stop button went (the turn stays
                                   # empty while streaming; turn actions / feedback show first, the text later).
                                   # The completion report is stamped when the text rendered
    deepResearch: bool = False     # Gemini: a Deep Research report. The response shows a short note and a chip
                                   # naming the report; ``text`` (the report) streams into a side panel
                                   # <deep-research-immersive-panel>. Citations: ``{{cite:Label|URL}}`` as in any
                                   # answer; the panel lists the sources (``sources`` in that order, then cited
                                   # URLs not in it, in order of first citation) and each citation's footnote
                                   # carries its URL's 1-based place in that list (so numbers repeat and need not
                                   # be sequential). The log entry's ``sources`` holds the list
    sources: list | None = None    # Deep Research: the panel's source URLs in order (optional, see above)
    researchMs: float = 1500.0     # ChatGPT Deep Research: how long the research runs once its plan started (its
                                   # frame shows progress meanwhile; ``text`` is the report)
    planCountdownS: int = 60       # ChatGPT Deep Research: the plan starts by itself after this many seconds
    files: list | None = None      # issue 35, files back: what the answer makes, each {"kind": "image" | "file",
                                   # "name": ...}. Images show in the response as each site shows them
                                   # (common/generated.js); a "file" is ChatGPT's code-sandbox file, which the
                                   # answer's text links as sandbox:/mnt/data/<name>. The site serves their bytes
                                   # (the log's ``made`` lists them with their SHA-256)

    @classmethod
    def from_json(cls, data: Any) -> Script:
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise ControlError("a script must be a JSON object")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ControlError(f"unknown script fields: {sorted(unknown)}; known: {sorted(names)}")
        script = cls(**data)
        script.validate()
        return script

    def validate(self) -> None:
        if self.text is not None and not isinstance(self.text, str):
            raise ControlError("text must be a string or null")
        if self.rule not in ("default", "echo"):
            raise ControlError("rule must be 'default' or 'echo'")
        if not isinstance(self.chunks, int) or self.chunks < 1:
            raise ControlError("chunks must be an integer >= 1")
        for name in ("intervalMs", "firstTokenMs", "thinkingMs", "researchMs"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < 0:
                raise ControlError(f"{name} must be a number >= 0")
        for name in ("thinking", "stuck", "hangsOnReload", "neverAnswer", "rateLimited", "siteError"):
            if not isinstance(getattr(self, name), bool):
                raise ControlError(f"{name} must be a boolean")
        if self.notice not in NOTICE_PLACES:
            raise ControlError(f"notice must be one of {', '.join(NOTICE_PLACES)}")
        if not isinstance(self.errorAfterChunks, int) or self.errorAfterChunks < 0:
            raise ControlError("errorAfterChunks must be an integer >= 0")
        if not isinstance(self.renderLagMs, (int, float)) or isinstance(self.renderLagMs, bool) \
                or self.renderLagMs < 0:
            raise ControlError("renderLagMs must be a number >= 0")
        if not isinstance(self.planCountdownS, int) or isinstance(self.planCountdownS, bool) \
                or not 0 <= self.planCountdownS <= 3600:
            raise ControlError("planCountdownS must be an integer from 0 to 3600")
        if not isinstance(self.deepResearch, bool):
            raise ControlError("deepResearch must be a boolean")
        if self.sources is not None and (not isinstance(self.sources, list)
                                         or not all(isinstance(u, str) and u for u in self.sources)):
            raise ControlError("sources must be a list of URLs or null")
        if self.files is not None and (not isinstance(self.files, list) or not all(
                isinstance(f, dict) and f.get("kind") in ("image", "file") and isinstance(f.get("name"), str)
                and f["name"] for f in self.files)):
            raise ControlError('files must be a list of {"kind": "image" | "file", "name": ...} or null')

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


# The redesigns common/drift.js applies (PageOptions.mutation), one at a time ("": none).
MUTATIONS = ("", "testids", "classes", "labels", "icons", "unnamed", "wrappers", "split", "editor", "elements",
             "dialog")


@dataclass(frozen=True)
class PageOptions:
    """How a page load behaves (the HTML document of ``/``, ``/c/<id>``, ``/app``, ``/app/<id>``)."""

    lang: str = "en"               # "en" | "ja": UI labels, <html lang>, rate-limit text
    login: bool = False            # serve the logged-out page: no input box, a "Log in" button
    slowBootMs: float = 0.0        # the app's boot request is answered this late, so the input box appears late
    historyDelayMs: float = 0.0    # an existing conversation's turns arrive this late after the input box
    slowLoadMs: float = 0.0        # the HTML document itself is served this late (a long conversation, a slow
                                   # network): the tab stays 'loading' well past the seed's 5 s for a new tab
    editor: str = "prosemirror"    # ChatGPT only: "prosemirror" (contenteditable div) | "textarea"
    sendClick: str = "any"         # what the send button answers: "any" click, "trusted" (real mouse) clicks
                                   # only, or "none" (only Enter sends)
    layout: str = "standard"       # where the answer text lives, to pin the extraction anchors: ChatGPT
                                   # "standard" (.markdown), "bare" (no markdown class: <p>s), "divs" (no class,
                                   # no <p>), "detached" (text outside the turn); Gemini "standard" (feedback
                                   # icons), "nofeedback", "detached" (an aria-live region outside the response)
    drift: bool = False            # the site changed its markup under us: test ids / icon names renamed
                                   # (ChatGPT send-button → send-prompt-button, stop-button → composer-stop-button;
                                   # Gemini mat-icon send → arrow_upward, stop → stop_circle), the input moved (ChatGPT
                                   # #prompt-textarea → #composer-input in another container; Gemini's editor loses
                                   # role=textbox and leaves rich-textarea) and the UI speaks German (<html lang=de>,
                                   # aria-labels and screen-reader headings), a language neither table knows
    shape: str = "2026"            # "2026": the markup of the real sites as captured in Jan-Feb 2026 (see the
                                   # app.js headers); "2025": the spec's older markup, exactly as before
    extensionButtons: bool = True  # 2026: another extension (QuillBot) added its buttons to every assistant turn's
                                   # actions and to the composer. Ignored by the 2025 shape
    model: str = "5.2"             # ChatGPT 2026: the header's current model ("Model selector, current model is
                                   # 5.2") and each answer's data-message-model-slug ("gpt-5-2")
    rerenderDelayMs: float = 0.0   # a hidden tab's stale answer text re-renders this long after the page became
                                   # visible (0: in the next animation frame)
    stopDelayMs: float = 0.0       # ChatGPT only: the site answers this long after the user turn shows. Until then
                                   # the composer stays idle (no stop button, no new turn): the moment in which the
                                   # previous answer still looks finished
    # Uploads (issue 20): the composer's file input makes a chip per file with a progress indicator until the
    # upload (POST to the site) is done; a refused file shows a toast naming it and is not attached.
    uploadMs: float = 300.0        # how long each file's chip shows its progress (the upload itself is real)
    uploadMaxBytes: int = 20 * 1024 * 1024  # a bigger file is refused: "<name> is too large"
    uploadMaxFiles: int = 10       # more files in the composer at once are refused: "You can upload up to N files"
    uploadRefuse: tuple = (".exe", ".dmg")  # refused types: "File type not supported: <name>"
    # Issue 35: uploads as awkward as the real sites.
    uploadFail: tuple = ()         # name endings whose upload the site answers with an error (ChatGPT: "Unable to
                                   # upload <name>"); the chip goes
    uploadStall: tuple = ()        # name endings whose upload never finishes (the chip keeps its progress)
    uploadNoChip: bool = False     # no chips at all; the input keeps the files and the send button says when ready
    fileTile: str = "group"        # ChatGPT 2026: "group" (div[role=group][aria-label=<name>].group/file-tile, the
                                   # real tile) or "testid" (data-testid=file-tile, an earlier guess)
    uploadQuota: bool = False      # Gemini: the quota notice shows (freemium-file-upload-quota-exceeded-disclaimer)
                                   # and nothing is attached
    uploadAccept: str = ""         # the file input's accept list ("" takes any file)
    mutation: str = ""             # issue 37: one redesign of the page (common/drift.js lists the kinds)
    challenge: bool = False        # a bot check (Cloudflare's "Just a moment…" interstitial) instead of the site:
                                   # no app, no input box (ChatGPT, Claude, Grok, Perplexity)
    # Models, effort and tools (issue 34; the app.js / menus.js headers cite the captures each shape follows).
    picker: str = "pill"           # ChatGPT 2026: "pill" (the composer pill with its model submenu, July 2026) or
                                   # "header" (the header's model switcher, Jan 2026)
    proPlan: bool = False          # ChatGPT's pill also offers "Extra High" and "Pro" (on some plans)
    pickerIgnoresClicks: bool = False  # a picker or tools row's click closes the menu and changes nothing
    toolsMenu: str = "search"      # ChatGPT 2026: "search" (July: the "+" menu shows its tools only when searched
                                   # for) or "rows" (June: Deep research / Web search are rows of the "+" menu)
    uploadChooser: str = "input"   # Gemini 2026: "input" (the page's new file input is in the document) or
                                   # "detached" (only the chooser it opens reaches it)

    @classmethod
    def from_json(cls, data: Any) -> PageOptions:
        if not isinstance(data, dict):
            raise ControlError("page must be a JSON object")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ControlError(f"unknown page fields: {sorted(unknown)}; known: {sorted(names)} (+ count)")
        opts = cls(**data)
        if opts.lang not in ("en", "ja"):
            raise ControlError("lang must be 'en' or 'ja'")
        if opts.editor not in ("prosemirror", "textarea"):
            raise ControlError("editor must be 'prosemirror' or 'textarea'")
        if opts.sendClick not in ("any", "trusted", "none"):
            raise ControlError("sendClick must be 'any', 'trusted' or 'none'")
        if opts.layout not in LAYOUTS:
            raise ControlError(f"layout must be one of {', '.join(LAYOUTS)}")
        if opts.shape not in SHAPES:
            raise ControlError(f"shape must be one of {', '.join(SHAPES)}")
        if not isinstance(opts.model, str) or not _MODEL.match(opts.model):
            raise ControlError("model must be a short model name like '5.2' or '4o'")
        if opts.picker not in ("pill", "header"):
            raise ControlError("picker must be 'pill' or 'header'")
        for name in ("uploadFail", "uploadStall"):
            value = getattr(opts, name)
            if isinstance(value, list):
                opts = dataclasses.replace(opts, **{name: tuple(value)})
            if not all(isinstance(x, str) for x in getattr(opts, name)):
                raise ControlError(f"{name} must be a list of file name endings")
        if opts.fileTile not in ("group", "testid"):
            raise ControlError("fileTile must be 'group' or 'testid'")
        if not isinstance(opts.uploadAccept, str):
            raise ControlError("uploadAccept must be a string")
        if opts.mutation not in MUTATIONS:
            raise ControlError(f"mutation must be one of {', '.join(MUTATIONS)}")
        if opts.toolsMenu not in ("search", "rows"):
            raise ControlError("toolsMenu must be 'search' or 'rows'")
        if opts.uploadChooser not in ("input", "detached"):
            raise ControlError("uploadChooser must be 'input' or 'detached'")
        for name in ("login", "drift", "extensionButtons", "proPlan", "pickerIgnoresClicks", "uploadNoChip",
                     "uploadQuota", "challenge"):
            if not isinstance(getattr(opts, name), bool):
                raise ControlError(f"{name} must be a boolean")
        if isinstance(opts.uploadRefuse, list):
            opts = dataclasses.replace(opts, uploadRefuse=tuple(opts.uploadRefuse))
        if not isinstance(opts.uploadRefuse, tuple) or not all(isinstance(x, str) for x in opts.uploadRefuse):
            raise ControlError("uploadRefuse must be a list of file name endings like '.exe'")
        for name in ("uploadMaxBytes", "uploadMaxFiles"):
            value = getattr(opts, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ControlError(f"{name} must be an integer >= 0")
        for name in ("slowBootMs", "historyDelayMs", "slowLoadMs", "rerenderDelayMs", "uploadMs", "stopDelayMs"):
            value = getattr(opts, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ControlError(f"{name} must be a number >= 0")
        return opts

    def to_json(self) -> dict:
        out = dataclasses.asdict(self)
        out["uploadRefuse"] = list(self.uploadRefuse)
        return out


def _count(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ControlError("count must be a positive integer or null (= until reset)")
    return value


# ---------------------------------------------------------------------------------------------------------------
# The default answer rule

_JA = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff00-\uffef]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_CODE = re.compile(
    r"\b(code|function|program|script|snippet|implement\w*|python|javascript|typescript|sql|regex)\b"
    r"|コード|関数|プログラム|スクリプト|実装",
    re.IGNORECASE,
)
# Asked for a long answer: the site writes one (a real model answers "explain in detail" at length).
_DETAIL = re.compile(r"\b(in detail|detailed|in depth|in-depth|comprehensive\w*|thorough\w*|step[- ]by[- ]step)\b"
                     r"|詳しく|詳細|段階的に", re.IGNORECASE)
# Asked to think: an unscripted question like this makes the site think first, as a model in "auto" mode does.
_THINK = re.compile(r"\b(think|reason)\s+(carefully|hard|it through|step[- ]by[- ]step)\b|よく考えて|じっくり考えて",
                    re.IGNORECASE)
_TOPIC_WORD = re.compile(r"[^\W\d_]{3,}")
_TOPIC_JA = re.compile(r"[\u30a0-\u30ff\u3400-\u9fff]{2,}")

RATE_LIMIT_TEXT = {
    "chatgpt": {
        "en": "You've reached our limit of messages. Please try again later.",
        "ja": "メッセージの上限に達しました。しばらくしてからもう一度お試しください。",
    },
    "gemini": {
        "en": "You've reached your limit for now. Please try again later.",
        "ja": "現在、上限に達しています。しばらくしてからもう一度お試しください。",
    },
    # The three newer sites' limit texts are not captured: guesses in their voice (their tables' labels match them).
    "claude": {
        "en": "You are out of free messages until 5:00 PM. Usage limit reached.",
        "ja": "メッセージの上限に達しました。午後5時まで新しいメッセージは送れません。",
    },
    "grok": {
        "en": "You've reached your limit of 20 Grok questions per 2 hours for now. Please try again later.",
        "ja": "現在、上限に達しました。しばらくしてからもう一度お試しください。",
    },
    "perplexity": {
        "en": "You've reached your daily limit of Pro searches. It resets tomorrow.",
        "ja": "本日のProサーチの上限に達しました。明日リセットされます。",
    },
}


def is_japanese(text: str) -> bool:
    return bool(_JA.search(text))


def wants_code(question: str) -> bool:
    return bool(_CODE.search(question))


def answer_ref(question: str) -> str:
    """An 8-hex-digit tag that identifies the question; every default answer contains it."""
    return hashlib.sha256(question.encode("utf-8")).hexdigest()[:8]


def numbers_in(question: str) -> list[str]:
    return _NUMBER.findall(question)


def wants_detail(question: str) -> bool:
    return bool(_DETAIL.search(question))


def wants_thinking(question: str) -> bool:
    return bool(_THINK.search(question))


def topic_of(question: str) -> list[str]:
    """The words the answer is about: the question's words of 3+ letters (Japanese: its kanji/katakana runs), in
    order, each once — an answer on topic uses the question's own words, as a real model's answer does."""
    pattern = _TOPIC_JA if is_japanese(question) else _TOPIC_WORD
    return list(dict.fromkeys(w.lower() for w in pattern.findall(question)))


def default_answer(question: str) -> str:
    """A deterministic markdown answer: mentions ``answer_ref(question)``, names the question's topic words
    (`topic_of`), repeats every number of the question, has a bullet list and a numbered list, a fenced code block
    when code is asked for, and a long section of details when detail is asked for (`wants_detail`). Japanese
    questions get a Japanese answer."""
    ref = answer_ref(question)
    nums = numbers_in(question)
    code = wants_code(question)
    topic = topic_of(question)
    py_list = "[" + ", ".join(f'"{n}"' for n in nums) + "]"
    if is_japanese(question):
        parts = [f"回答 {ref}：ご質問への決まった回答です。"]
        if topic:
            parts.append("話題：" + "、".join(topic) + "。")
        if nums:
            parts.append("ご質問に含まれていた数字：" + "、".join(nums))
        else:
            parts.append("ご質問には数字が含まれていませんでした。")
        parts.append("ポイント：")
        parts.append("\n".join([
            f"- 質問は{len(question)}文字でした。",
            f"- この回答の参照番号は {ref} です。",
            "- 同じ質問には常に同じ回答を返します。",
        ]))
        if code:
            parts.append("ご依頼のコードです：")
            parts.append(f"```python\ndef answer():\n    # 参照 {ref}\n    return {py_list}\n```")
        parts.append("1. 回答を読みます。\n2. 数字を確認します。")
        if wants_detail(question):
            parts += [f"詳細 {i}：{'、'.join(topic) or '話題'}について、{i}つ目の観点から説明します。" * 3
                      for i in range(1, 9)]
        parts.append("以上です。")
    else:
        words = len(question.split())
        parts = [f"Answer {ref}: here is a deterministic reply to your question."]
        if topic:
            parts.append("It is about " + ", ".join(topic) + ".")
        if nums:
            listed = nums[0] if len(nums) == 1 else ", ".join(nums[:-1]) + " and " + nums[-1]
            parts.append(f"The numbers in your question were: {listed}.")
        else:
            parts.append("Your question had no numbers in it.")
        parts.append("Points to keep in mind:")
        parts.append("\n".join([
            f"- It had {words} words and {len(question)} characters.",
            f"- The reference for this answer is **{ref}**.",
            "- The same question always gets the same answer.",
        ]))
        if code:
            parts.append("Here is the code you asked for:")
            parts.append(f"```python\ndef answer():\n    # reference {ref}\n    return {py_list}\n```")
        parts.append("1. Read the answer.\n2. Check the numbers.")
        if wants_detail(question):
            about = ", ".join(topic) or "the topic"
            parts += [f"### Detail {i}\n\nPoint {i} about {about}: this paragraph looks at it from one more angle, "
                      f"so that the answer is as long as a detailed explanation would be. " * 2 for i in range(1, 9)]
        parts.append("That is all.")
    return "\n\n".join(parts)


def answer_for(script: Script, question: str) -> str:
    if script.text is not None:
        return script.text
    if script.rule == "echo":
        return question
    return default_answer(question)


_CITE = re.compile(r"\{\{cite:[^|}]*\|([^}]+)\}\}")
# ChatGPT's Deep Research plan card: a title and 4-5 rows (agbrowse's live probe, 2026-06-15; the rows are ours).
RESEARCH_PLAN = ("Survey the question's sources", "Compare what they report", "Check the figures",
                 "Write the report with citations")


def report_sources(text: str, listed: list | None = None) -> list[str]:
    """A Deep Research report's source list: ``listed`` in order, then every URL cited in ``text`` (``{{cite:Label|
    URL}}``) that is not listed yet, in order of first citation. A citation's footnote number is its URL's 1-based
    place in this list."""
    out = list(dict.fromkeys(listed or []))
    for url in _CITE.findall(text):
        url = url.strip()
        if url not in out:
            out.append(url)
    return out


def tiny_png(seed: str, side: int) -> bytes:
    """A valid PNG of `side` x `side` pixels in a colour drawn from `seed` (a generated image's stand-in)."""
    rgb = hashlib.sha256(seed.encode()).digest()[:3]
    raw = b"".join(b"\x00" + rgb * side for _ in range(side))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def split_chunks(text: str, n: int) -> list[str]:
    """Split ``text`` into ``n`` (or fewer, if it is shorter) consecutive, nearly equal, non-empty pieces."""
    if not text:
        return [""]
    n = max(1, min(n, len(text)))
    size, extra = divmod(len(text), n)
    out, pos = [], 0
    for i in range(n):
        step = size + (1 if i < extra else 0)
        out.append(text[pos:pos + step])
        pos += step
    return out


# ---------------------------------------------------------------------------------------------------------------
# Per-site state


@dataclass(eq=False)
class Generation:
    """One question being answered; its ``entry`` is the public log record."""

    entry: dict
    script: Script
    answer: str
    skip_thinking: trio.Event = field(default_factory=trio.Event)
    aborted: trio.Event = field(default_factory=trio.Event)

    async def pause(self, ms: float, *, also: trio.Event | None = None) -> None:
        """Sleep ``ms`` unless aborted (or ``also`` fires) first."""
        if ms <= 0:
            return
        with trio.move_on_after(ms / 1000.0):
            if also is None:
                await self.aborted.wait()
            else:
                async with trio.open_nursery() as nursery:
                    async def watch(ev: trio.Event) -> None:
                        await ev.wait()
                        nursery.cancel_scope.cancel()
                    nursery.start_soon(watch, self.aborted)
                    nursery.start_soon(watch, also)


@dataclass(eq=False)
class _QueueItem:
    script: Script
    remaining: int | None  # None = until reset / replaced


class SiteState:
    """Scripting queue, page options, log, conversations and in-flight generations of one fake site."""

    def __init__(self, name: str):
        self.name = name
        self.reset()

    def reset(self) -> None:
        for gen in getattr(self, "inflight", {}).values():
            gen.aborted.set()
        self.queue: list[_QueueItem] = []
        self.page: PageOptions = PageOptions()
        self.page_remaining: int | None = None
        self.questions: list[dict] = []
        self.sends = 0  # every POST to the conversation endpoint, well-formed or not (a probe must make none)
        self.uploads: dict[str, dict] = {}  # file id -> {id, name, size, sha256}: what the page uploaded
        self.upload_texts: dict[str, str] = {}  # sha256 -> the text of an uploaded text file (what a model reads)
        self.made: dict[str, dict] = {}  # file id -> {id, kind, name, messageId, sha256, size, data, full}: files back
        self.token = "fake-access-" + secrets.token_hex(8)  # ChatGPT's session token (api/auth/session)
        self.pages: list[dict] = []
        self.conversations: dict[str, list[dict]] = {}
        self.deleted: set[str] = set()  # conversation ids that no longer load ("conversation not available")
        self.temporary: set[str] = set()  # temporary chats: kept while they run, never loaded again
        self.inflight: dict[str, Generation] = {}
        self.plans: dict[str, Generation] = {}  # a Deep Research plan's message id -> its ask, until started
        self.tasks: dict[str, dict] = {}  # ChatGPT Deep Research: message id -> {gen, created, started}
        self.boots: dict[str, float] = {}  # boot token -> delay ms
        self.history_delays: dict[str, float] = {}  # boot token -> conversation fetch delay ms
        self._seq = 0

    # -- control ---------------------------------------------------------------------------------------------

    def control(self, body: Any) -> dict:
        if not isinstance(body, dict):
            raise ControlError("body must be a JSON object")
        allowed = {"next", "count", "answers", "append", "page", "delete"}
        unknown = set(body) - allowed
        if unknown:
            raise ControlError(f"unknown control fields: {sorted(unknown)}; known: {sorted(allowed)}")
        items: list[_QueueItem] = []
        if "answers" in body:
            if "next" in body:
                raise ControlError("give either 'next' or 'answers', not both")
            answers = body["answers"]
            if not isinstance(answers, list):
                raise ControlError("answers must be a list of scripts")
            items = [_QueueItem(Script.from_json(a), 1) for a in answers]
        elif "next" in body:
            items = [_QueueItem(Script.from_json(body["next"]), _count(body.get("count")))]
        page = None
        if "page" in body:
            raw = dict(body["page"]) if isinstance(body["page"], dict) else body["page"]
            page_count = _count(raw.pop("count", None)) if isinstance(raw, dict) else None
            page = (PageOptions.from_json(raw), page_count)
        delete = body.get("delete", [])
        if not isinstance(delete, list) or not all(isinstance(c, str) and c for c in delete):
            raise ControlError("delete must be a list of conversation ids")
        # apply only after everything validated
        if "answers" in body or "next" in body:
            if body.get("append"):
                self.queue.extend(items)
            else:
                self.queue = items
        if page is not None:
            self.page, self.page_remaining = page
        for cid in delete:   # deleted elsewhere (another tab, another device): its page no longer loads
            self.conversations.pop(cid, None)
            self.deleted.add(cid)
        return self.state()

    def state(self) -> dict:
        return {
            "site": self.name,
            "queue": [{"script": it.script.to_json(), "remaining": it.remaining} for it in self.queue],
            "page": {**self.page.to_json(), "count": self.page_remaining},
            "defaults": Script().to_json(),
            "deleted": sorted(self.deleted),
        }

    def take_script(self) -> Script:
        if not self.queue:
            return Script()
        head = self.queue[0]
        if head.remaining is not None:
            head.remaining -= 1
            if head.remaining <= 0:
                self.queue.pop(0)
        return head.script

    def take_page(self, path: str) -> tuple[PageOptions, str]:
        """Options for one page load, and the boot token its app will present when booting."""
        opts = self.page
        if self.page_remaining is not None:
            self.page_remaining -= 1
            if self.page_remaining <= 0:
                self.page, self.page_remaining = PageOptions(), None
        token = secrets.token_hex(8)
        self.boots[token] = opts.slowBootMs
        self.history_delays[token] = opts.historyDelayMs
        self.pages.append({"path": path, "atMs": now_ms(), **opts.to_json(), "boot": token})
        return opts, token

    def boot_delay_ms(self, token: str) -> float:
        return self.boots.pop(token, 0.0)

    def history_delay_ms(self, token: str) -> float:
        return self.history_delays.pop(token, 0.0)

    # -- questions -------------------------------------------------------------------------------------------

    def new_conversation_id(self) -> str:
        if self.name == "gemini":
            return secrets.token_hex(8)  # /app/<16 hex>
        if self.name == "perplexity":
            return "question-" + secrets.token_urlsafe(16).replace("_", "x").replace("-", "y")  # /search/<slug>
        return str(uuid.uuid4())  # ChatGPT /c/, Claude /chat/, Grok /c/

    def upload(self, name: str, data: bytes) -> dict:
        """The page uploaded a file: keep its name, size and the SHA-256 of its bytes, and the text of a text file
        (what the model would read: a bundle's files are checked by it, issue 35)."""
        record = {"id": "file-" + secrets.token_hex(8), "name": name, "size": len(data),
                  "sha256": hashlib.sha256(data).hexdigest()}
        self.uploads[record["id"]] = record
        if len(data) <= 16 * 2**20:
            with contextlib.suppress(UnicodeDecodeError):
                self.upload_texts[record["sha256"]] = data.decode("utf-8")
        return record

    def begin(self, question: str, conversation_id: str | None, lang: str = "en", *,
              attachments: list | None = None, model: str | None = None, effort: str | None = None,
              tools: list | None = None, place: Any = None, temporary: bool = False) -> Generation:
        """Log a question and decide how it is answered. ``lang`` is the UI language the page reported;
        ``attachments`` the ids of the files uploaded with it, ``model``, ``effort`` and ``tools`` what the page had
        chosen; ``place`` the Project or Gem its chat is in; ``temporary``: a temporary chat, which the site does not
        keep (its conversation does not load again)."""
        scripted = bool(self.queue)
        script = self.take_script()
        if not scripted and wants_thinking(question):
            script = dataclasses.replace(script, thinking=True)  # the site's own choice for an unscripted question
        if conversation_id in self.deleted:
            conversation_id = None   # a deleted conversation does not come back: the question starts a new one
        if conversation_id is None or conversation_id not in self.conversations:
            conversation_id = conversation_id or self.new_conversation_id()
            self.conversations.setdefault(conversation_id, [])
        self._seq += 1
        message_id = str(uuid.uuid4())
        if script.rateLimited:
            answer = RATE_LIMIT_TEXT[self.name]["ja" if lang == "ja" else "en"]
        else:
            answer = answer_for(script, question)
        entry = {
            "seq": self._seq,
            "site": self.name,
            "question": question,
            "receivedAtMs": now_ms(),
            "conversationId": conversation_id,
            "messageId": message_id,
            "script": script.to_json(),
            "status": "received",
            "answer": answer,
            "firstTokenAtMs": None,
            "thinkingSeconds": None,
            "thinkingSkipped": False,
            "streamEndAtMs": None,
            "completedAtMs": None,
            "sources": report_sources(answer, script.sources) if script.deepResearch else None,
            "attachments": [{k: v for k, v in self.uploads[i].items() if k != "id"}
                            for i in (attachments or []) if isinstance(i, str) and i in self.uploads],
            "model": model,
            "effort": effort,
            "tools": [t for t in tools if isinstance(t, str)] if isinstance(tools, list) else [],
            "place": place if isinstance(place, str) else None,
            "temporary": temporary,
        }
        self.questions.append(entry)
        self.conversations[conversation_id].append({"role": "user", "text": question, "messageId": message_id})
        if temporary:
            self.temporary.add(conversation_id)
        gen = Generation(entry, script, answer)
        self.inflight[message_id] = gen
        return gen

    def hold_plan(self, gen: Generation, text: str) -> None:
        """A Deep Research ask answered with its plan: kept until the page starts it (`start_research`)."""
        gen.entry["status"] = "plan"
        self.plans[gen.entry["messageId"]] = gen
        self.inflight.pop(gen.entry["messageId"], None)
        self.conversations.setdefault(gen.entry["conversationId"], []).append(
            {"role": "assistant", "text": text, "messageId": gen.entry["messageId"], "inProgress": False})

    def start_research(self, plan_id: str) -> Generation | None:
        """The page pressed "Start research" on a plan: the same ask goes on as its report (its log entry says
        ``researchStarted``; no second question is logged), answered as the next response."""
        plan = self.plans.pop(plan_id, None)
        if plan is None:
            return None
        entry = plan.entry
        script = dataclasses.replace(plan.script, deepResearch=True)
        message_id = str(uuid.uuid4())
        entry.update(researchStarted=True, planMessageId=plan_id, messageId=message_id, status="received",
                     sources=report_sources(plan.answer, script.sources))
        self.conversations.setdefault(entry["conversationId"], []).append(
            {"role": "user", "text": "Start research", "messageId": message_id})
        gen = Generation(entry, script, plan.answer)
        self.inflight[message_id] = gen
        return gen

    def research_task(self, gen: Generation) -> None:
        """ChatGPT: a Deep Research ask runs in its frame; the frame reads its task (`research_state`)."""
        gen.entry.update(status="plan", researchStarted=False)
        self.tasks[gen.entry["messageId"]] = {"gen": gen, "created": now_ms(), "started": None}

    def research_state(self, task_id: str, *, start: bool = False) -> dict | None:
        """What the research frame shows: its plan (until Start is pressed or the countdown ends), then progress for
        ``researchMs``, then the report. ``start``: the frame's Start button was pressed."""
        task = self.tasks.get(task_id)
        if task is None:
            return None
        gen, now = task["gen"], now_ms()
        left = gen.script.planCountdownS - (now - task["created"]) / 1000
        if task["started"] is None and (start or left <= 0):
            task["started"] = now
            gen.entry.update(researchStarted=True, researchStartedBy="button" if start else "countdown",
                             status="researching")
        if task["started"] is None:
            return {"phase": "plan", "countdownS": max(0, int(left + 0.999)), "steps": list(RESEARCH_PLAN)}
        ran = now - task["started"]
        if ran < gen.script.researchMs:
            return {"phase": "researching", "step": int(ran / max(1.0, gen.script.researchMs) * 4)}
        if gen.entry["status"] != "complete":
            gen.entry["status"] = "complete"
            gen.entry["streamEndAtMs"] = now
            self.record_answer(gen, gen.answer, in_progress=False)
        return {"phase": "done", "report": gen.answer, "searches": 32, "citations": len(_CITE.findall(gen.answer))}

    def record_answer(self, gen: Generation, text: str, *, in_progress: bool) -> None:
        """Put (or update) the answer in its conversation, as a reload of the page will show it."""
        entry = gen.entry
        convo = self.conversations.get(entry["conversationId"])
        if convo is None:
            return
        msg = {"role": "assistant", "text": text, "messageId": entry["messageId"],
               "thinkingSeconds": entry["thinkingSeconds"], "inProgress": in_progress,
               "sources": entry["sources"]}
        for i, old in enumerate(convo):
            if old.get("messageId") == entry["messageId"] and old["role"] == "assistant":
                convo[i] = msg
                return
        convo.append(msg)

    def finish(self, gen: Generation, status: str) -> None:
        """The stream ended (``complete``/``rate_limited``) or was cut (``disconnected``/``aborted``)."""
        entry = gen.entry
        entry["status"] = status
        if status in ("complete", "rate_limited"):
            entry["streamEndAtMs"] = now_ms()
            self.record_answer(gen, gen.answer, in_progress=False)
        else:
            self.inflight.pop(entry["messageId"], None)
        # complete answers stay in ``inflight`` until the page reports when its UI went idle

    def report_complete(self, message_id: str, t_ms: float) -> bool:
        """The page says it switched the UI to idle for ``message_id`` at ``t_ms`` (epoch ms)."""
        gen = self.inflight.pop(message_id, None)
        if gen is None or gen.entry["completedAtMs"] is not None:
            return False
        gen.entry["completedAtMs"] = float(t_ms)
        return True

    def skip_thinking(self, message_id: str) -> bool:
        gen = self.inflight.get(message_id)
        if gen is None:
            return False
        gen.skip_thinking.set()
        return True

    def log(self) -> dict:
        return {"site": self.name, "questions": self.questions, "pages": self.pages, "sends": self.sends,
                "uploadTexts": self.upload_texts,
                "made": [{k: v for k, v in m.items() if k not in ("data", "small")} for m in self.made.values()]}

    def make_files(self, gen: Generation) -> list[dict]:
        """The files the answer brings back (`Script.files`): made now, served by id; what the page is told."""
        out = []
        for f in gen.script.files or []:
            file_id = secrets.token_hex(12)
            if f["kind"] == "image":
                data, small = tiny_png(file_id, 64), tiny_png(file_id, 16)  # full size, and as the page shows it
            else:
                data, small = (f"{f['name']}: made by the sandbox for {gen.entry['messageId']}\n" * 40).encode(), b""
            self.made[file_id] = {"id": file_id, "kind": f["kind"], "name": f["name"],
                                  "messageId": gen.entry["messageId"], "sha256": hashlib.sha256(data).hexdigest(),
                                  "size": len(data), "data": data, "small": small}
            out.append({"kind": f["kind"], "id": file_id, "name": f["name"]})
        return out
