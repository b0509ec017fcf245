"""What the in-page watcher reports, as typed values: `PageState` (one report), `Notice` (a limit or error notice
that appeared after sending) and `Extracted` (the answer as the page shows it).

The watcher runs in a page we do not control, so a report is external input: `PageState.parse` checks every field
and refuses a report of the wrong shape (`BadPageReport`) instead of letting a missing key crash the actor later.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from typing import TypeVar

import attrs

from ..protocol.common import JSON, JSONObject

T = TypeVar("T")

MAX_TEXT = 4000  # characters of any text field a report may carry (the watcher sends less)


class BadPageReport(ValueError):
    """A watcher report (or page-script result) of the wrong shape."""


class NoticeKind(enum.StrEnum):
    RATE_LIMIT = "rate_limit"  # "You've reached our limit", usage caps, too many requests
    SITE_ERROR = "site_error"  # "Something went wrong", a network error with a Retry button


@attrs.frozen
class Notice:
    kind: NoticeKind
    text: str  # what the notice says (first 300 characters)
    where: str  # "alert", "toast", "banner", "error", "response": how the watcher found it


def _field(obj: JSONObject, key: str, kind: type[T], what: str) -> T:
    value = obj.get(key)
    # bool is an int in Python: a flag must not pass as a count, nor a count as a flag
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadPageReport(f"{what}: {key!r} must be {kind.__name__}, got {value!r:.80}")
    return value


def _text(obj: JSONObject, key: str, what: str) -> str:
    return _field(obj, key, str, what)[:MAX_TEXT]


def _count(obj: JSONObject, key: str, what: str) -> int:
    value = _field(obj, key, int, what)
    if value < 0:
        raise BadPageReport(f"{what}: {key!r} must be >= 0, got {value}")
    return value


def _names(value: JSON, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > 20 or not all(isinstance(v, str) and len(v) <= 40 for v in value):
        raise BadPageReport(f"{what}: 'fallbacks' must be a short list of entry names, got {value!r:.80}")
    return tuple(str(v) for v in value)


def _flag(obj: JSONObject, key: str, what: str) -> bool:
    return _field(obj, key, bool, what)


def _optional(obj: JSONObject, key: str, kind: type[T], default: T, what: str) -> T:
    """A field a watcher of an older build did not send: absent is the default, the wrong type is an error."""
    return default if obj.get(key) is None else _field(obj, key, kind, what)


def _object(value: JSON, what: str) -> JSONObject:
    if not isinstance(value, dict):
        raise BadPageReport(f"{what}: expected an object, got {type(value).__name__}")
    return value


ERROR_PAGE = "chrome-error:"  # the document Chrome shows for a page that failed to load


@attrs.frozen
class PageState:
    """One watcher report: the provider page as the completion rules and the ask flow see it (seed 3.3 / 4.3)."""

    url: str
    ready: str  # document.readyState
    visible: bool  # document.visibilityState == "visible" (a hidden React page renders no answer text)
    doc: str  # the watcher's id for this document: a new one means the page was loaded afresh
    input_found: bool
    input_empty: bool
    send_found: bool
    send_enabled: bool
    stop: bool  # a stop button is shown (an answer is being generated)
    user_count: int
    assistant_count: int
    last_len: int  # characters of the last response's text
    last_head: str  # its first 80 characters
    last_user: str  # the last user message, whitespace collapsed (first 300 characters)
    answered: bool  # an assistant response follows the last user message
    thinking: bool  # a thinking indicator is shown (ChatGPT "Skip thinking", either site's "Thinking" label)
    skip_thinking: bool  # ChatGPT's "Skip thinking" / "今すぐ回答" button
    thinking_done: bool  # ChatGPT's "Thinking time: Xs" button in the last turn
    generating_text: bool  # visible text says the answer is still being generated
    mic_found: bool  # Gemini: the mic button is back
    last_has_feedback: bool  # the last response has its finished-turn buttons (Gemini's feedback icons,
                             # ChatGPT's turn actions)
    login: bool
    notice: Notice | None  # a limit or error notice that appeared after sending (see `mark_notices`)
    seq: int = 0
    at_ms: float = 0.0  # wall clock of the report (page clock)
    unavailable: bool = False  # the page says the conversation is gone (deleted, or never there)
    model: str = ""  # the model that answered (ChatGPT's message slug) or is chosen (Gemini's mode label)
    research_start: bool = False  # a Deep Research plan's start button shows in the last response
    report_open: bool = False  # the last response opened a Deep Research report
    research_frame: bool = False  # a Deep Research frame (ChatGPT's) follows the last user message
    # The table entries a structural finder stood in for on this page (issue 37: "input", "user", "assistant"):
    # the ask still works, and the result says the site changed.
    fallbacks: tuple[str, ...] = ()
    last_solid: int = 0  # the last response's text without whitespace: how much answer the page shows
    last_media: int = 0  # generated images and file links in the last response (issue 35)
    # A bot check stands where the site should be (Cloudflare's "Verify you are human", "Just a moment…"): the
    # table's `challenge` selectors or labels (issue 40). Nothing can be typed until a person completes it.
    challenge: bool = False
    # Read ahead (watcher.js): the answer's own-content extraction of the DOM this state describes, on a state that
    # looks finished; the flow uses it when this state completes the ask, instead of reading again.
    read: Extracted | None = None

    @property
    def load_failed(self) -> bool:
        """The browser shows its own error page where the site should be (no network, DNS, TLS): the tab keeps the
        site's address, the document is Chrome's."""
        return self.url.startswith(ERROR_PAGE)

    @classmethod
    def parse(cls, value: JSON) -> PageState:
        what = "watcher report"
        obj = _object(value, what)
        raw_notice = obj.get("notice")
        notice = None
        if raw_notice is not None:
            n = _object(raw_notice, "watcher notice")
            try:
                kind = NoticeKind(_field(n, "kind", str, "watcher notice"))
            except ValueError as exc:
                raise BadPageReport(f"watcher notice: unknown kind {n.get('kind')!r:.40}") from exc
            notice = Notice(kind, _text(n, "text", "watcher notice")[:300], _text(n, "where", "watcher notice"))
        at = obj.get("at", 0.0)
        if not isinstance(at, int | float) or isinstance(at, bool) or not math.isfinite(at):
            raise BadPageReport(f"{what}: 'at' must be a finite number, got {at!r:.40}")
        return cls(
            url=_text(obj, "url", what), ready=_text(obj, "ready", what), visible=_flag(obj, "visible", what),
            doc=_text(obj, "doc", what), input_found=_flag(obj, "inputFound", what),
            input_empty=_flag(obj, "inputEmpty", what), send_found=_flag(obj, "sendFound", what),
            send_enabled=_flag(obj, "sendEnabled", what), stop=_flag(obj, "stop", what),
            user_count=_count(obj, "userCount", what), assistant_count=_count(obj, "assistantCount", what),
            last_len=_count(obj, "lastLen", what), last_head=_text(obj, "lastHead", what)[:80],
            last_user=_text(obj, "lastUser", what)[:300], answered=_flag(obj, "answered", what),
            thinking=_flag(obj, "thinking", what), skip_thinking=_flag(obj, "skipThinking", what),
            thinking_done=_flag(obj, "thinkingDone", what), generating_text=_flag(obj, "generatingText", what),
            mic_found=_flag(obj, "micFound", what), last_has_feedback=_flag(obj, "lastHasFeedback", what),
            login=_flag(obj, "login", what), notice=notice, seq=_count(obj, "seq", what), at_ms=float(at),
            unavailable=_optional(obj, "unavailable", bool, False, what),
            model=_optional(obj, "model", str, "", what)[:80],
            research_start=_optional(obj, "researchStart", bool, False, what),
            report_open=_optional(obj, "reportOpen", bool, False, what),
            research_frame=_optional(obj, "researchFrame", bool, False, what),
            fallbacks=_names(obj.get("fallbacks", []), what),
            last_solid=_optional(obj, "lastSolid", int, 0, what),
            last_media=_optional(obj, "lastMedia", int, 0, what),
            challenge=_optional(obj, "challenge", bool, False, what), read=_read_ahead(obj.get("read")))

    def as_json(self) -> dict[str, object]:
        """For snapshots and debug dumps, with the watcher's own (camelCase) names."""
        out: dict[str, object] = {}
        for key, value in attrs.asdict(self, recurse=False).items():
            if key == "read":
                value = None if self.read is None else {"how": self.read.how, "chars": len(self.read.text)}
            head, *rest = key.split("_")
            out[head + "".join(w.title() for w in rest)] = value
        out["notice"] = None if self.notice is None else {"kind": self.notice.kind.value, "text": self.notice.text,
                                                          "where": self.notice.where}
        return out


@attrs.frozen
class Extracted:
    text: str
    # which anchor gave the text (seed 3.5 / 4.4): report, content, feedback, paragraphs, turn, aria-live, body;
    # "none" (nothing), "chrome" (only page chrome was found: no answer)
    how: str
    error: str | None = None  # the markdown converter failed: the text is the element's plain text
    plain: bool = False  # plain text without the answer's markdown structure (a text fallback, or no converter)

    @classmethod
    def parse(cls, value: JSON) -> Extracted:
        obj = _object(value, "extracted answer")
        error = obj.get("error")
        return cls(_field(obj, "text", str, "extracted answer"), _field(obj, "how", str, "extracted answer")[:40],
                   error[:300] if isinstance(error, str) else None,
                   _optional(obj, "plain", bool, False, "extracted answer"))


def _read_ahead(value: JSON) -> Extracted | None:
    """A report's read-ahead answer, or None: a malformed one is only a missed shortcut (the flow reads itself)."""
    if value is None:
        return None
    try:
        return Extracted.parse(value)
    except BadPageReport:
        return None


@attrs.frozen
class Box:
    """A point in the page's viewport (CSS pixels): where a mouse event lands."""

    x: float
    y: float

    @classmethod
    def parse(cls, value: JSON) -> Box | None:
        if value is None:
            return None
        obj = _object(value, "element box")
        x, y = obj.get("x"), obj.get("y")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in (x, y)):
            raise BadPageReport(f"element box: x and y must be finite numbers, got {obj!r:.80}")
        assert isinstance(x, int | float) and isinstance(y, int | float)
        return cls(float(x), float(y))


Predicate = Callable[[PageState], bool]
