"""The ask flow's vocabulary (flow.py runs it): the `Page` it drives, its stages, the ask's budget and outcome, and
the plain judgements on text and pages the flow and the actor share — how a question is recognised, how an answer is
cleaned, when one looks odd, and the typed errors a notice or an unreachable site becomes."""

from __future__ import annotations

import enum
import re
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

import attrs
import trio

from supervisor.errors import ProviderError, RateLimited, SiteError, SiteUnreachable, StuckError

from ..protocol.provider import AskWarning
from .page import Box, Extracted, Notice, NoticeKind, PageState, Predicate
from .table import Newline, ProviderTable


class Page(Protocol):
    """What the flow needs of a page. `TabSession` is the real one; tests drive the flow with a fake."""

    fresh: bool

    async def current(self) -> PageState: ...
    async def wait_for(self, pred: Predicate, timeout_s: float, what: str,
                       on_state: Callable[[PageState], Awaitable[None]] | None = None) -> PageState: ...
    async def navigate(self, url: str) -> None: ...
    async def bring_to_front(self) -> None: ...
    async def activate_window(self) -> None: ...
    async def clear(self) -> bool: ...
    async def fill(self, text: str) -> str: ...
    async def begin(self, question: str) -> tuple[PageState, str | None]: ...
    async def insert_text(self, text: str) -> None: ...
    async def type_keys(self, text: str, newline: Newline) -> None: ...
    async def input_text(self) -> str: ...
    async def click_send(self, mark_notices: bool) -> bool: ...
    async def send_box(self) -> Box | None: ...
    async def mouse_click(self, box: Box) -> None: ...
    async def press_enter(self) -> None: ...
    async def click_stop(self) -> bool: ...
    async def mark_notices(self, keep_after_last_user: bool) -> None: ...
    async def expand_thinking(self) -> bool: ...
    async def extract(self, own_only: bool = False) -> Extracted: ...
    async def research_start_box(self) -> Box | None: ...
    async def expect(self, question: str) -> None: ...
    async def extract_by(self, how: str) -> Extracted: ...
    async def load_error(self) -> str: ...


class Stage(enum.Enum):
    """Where the flow is: names the state an ask ends in when its deadline comes."""

    PREPARING = "preparing the page"
    TYPING = "typing the question"
    SENDING = "sending the question"
    WAITING = "waiting for the answer to start"  # sent, no response yet
    ANSWERING = "answering"
    EXTRACTING = "reading the answer"


class StuckKind(enum.StrEnum):
    LEFTOVER_STOP = "stop button"  # an earlier answer's stop button never went (seed 9.3)
    NO_RESPONSE = "no response"  # sent, and no response started
    STALLED = "stalled"  # stop button up, no thinking, no new text


class Stuck(StuckError):
    """A stuck page: the actor retries it (fresh tab connection, re-delivered ask) while the budget allows."""

    def __init__(self, message: str, kind: StuckKind, *, partial: str | None = None) -> None:
        super().__init__(message, partial=partial)
        self.kind = kind


@attrs.frozen
class AskBudget:
    """The ask's deadline (trio time) and which attempt this is."""

    deadline: float
    attempt: int  # 1 = the first try
    max_attempts: int

    def remaining(self) -> float:
        return max(0.0, self.deadline - trio.current_time())

    def share(self, cap: float, floor: float, reserve: float) -> float:
        """A threshold for this attempt: `cap`, or less so that this attempt and every one still to come (each
        keeping `reserve` for its reload, typing and first token) fit before the deadline; never below `floor`."""
        left = max(1, self.max_attempts - self.attempt + 1)
        fair = (self.remaining() - reserve * left) / left
        return max(floor, min(cap, fair))


@attrs.define
class Outcome:
    answer: str
    url: str
    reason: str
    extracted_by: str
    thinking: bool
    detected_ms: float
    resumed: bool  # a retry found the question already sent and read its answer
    model: str = ""  # the model that answered, as the page names it ("" when it does not)
    warnings: list[AskWarning] = attrs.Factory(list)


def squash(text: str) -> str:
    """Whitespace removed: how typed text is compared with what the editor shows (line breaks become paragraphs)."""
    return re.sub(r"\s+", "", text)


def question_shown(question: str, last_user: str) -> bool:
    """Is the last user message of the conversation this question? (The watcher sends its first 300 characters,
    perhaps behind a "You said" label.)"""
    want = squash(question)[:200]
    return bool(want) and want in squash(last_user)


def normalize(text: str) -> str:
    """Seed 3.4 / 4.4 clean-up outside fenced code: drop Thinking-time button text (a plain-text fallback can carry
    it), trailing spaces and extra blank lines. Code is returned as written (two blank lines between functions)."""
    drop = re.compile(r"^(Thinking time[:：]?\s*[\dms ]+|思考時間[:：]\s*[\d分秒ms ]+|Thought for .+)$")
    out: list[str] = []
    fence = ""
    for line in text.replace("\r\n", "\n").split("\n"):
        opener = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence:
            out.append(line)
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = ""
            continue
        if opener:
            fence = opener.group(1)
        elif drop.match(line.strip()):
            continue
        elif not line.strip() and out and not out[-1].strip():
            continue  # one blank line between blocks is enough
        out.append(line.rstrip())
    return "\n".join(out).strip()


IMAGES_ONLY = re.compile(r"(\s*!\[[^\]\n]*\]\([^)\s]+\))+\s*")


def is_suspicious(answer: str, question: str) -> bool:
    """Seed 10.5's heuristic. It only ever adds a warning: it misfires on ordinary questions."""
    trimmed = answer.strip()
    if not trimmed:
        return True
    if IMAGES_ONLY.fullmatch(trimmed):
        return False  # an image-only answer (issue 35) is an answer
    if question.strip() == "OK":
        return False
    if re.search(r"\d", question) and not re.search(r"\d", trimmed):
        return True
    return bool(re.fullmatch(r"ok", trimmed, re.IGNORECASE))


def notice_error(table: ProviderTable, notice: Notice, partial: str | None = None) -> ProviderError:
    """A limit or error notice: the ask ends, and the question is never sent again."""
    if notice.kind is NoticeKind.RATE_LIMIT:
        return RateLimited(f"{table.title} says you reached its limit: “{notice.text}”",
                           hint="Wait until the limit resets, or ask the other provider. ai-bridge did not send the "
                           "question again.", partial=partial)
    return SiteError(f"{table.title} showed an error: “{notice.text}”",
                     hint=f"Retry later, or open {table.home_url} to see the page; ai-bridge did not send the "
                     "question again.", partial=partial)


def unreachable(t: ProviderTable, error: str) -> SiteUnreachable:
    """The page did not load: the browser's error name, and what each usual one means."""
    host = t.home_url.split("//", 1)[-1].split("/", 1)[0]
    why = error or "the browser showed its error page"
    return SiteUnreachable(f"{t.title} ({host}) did not load: {why}",
                           hint=f"The browser could not reach {host}: check the network of the machine the browser "
                           "runs on (ERR_INTERNET_DISCONNECTED: no network at all; ERR_NAME_NOT_RESOLVED: DNS; "
                           "ERR_CONNECTION_REFUSED / _RESET / _TIMED_OUT: a proxy, firewall or VPN in the way; "
                           "ERR_CERT_…: something intercepts TLS), then ask again. Nothing was sent.")


def dump_hint(hint: str, where: str) -> str:
    """A hint that names the debug dump kept for this failure (or says why none was kept)."""
    return f"{hint} Debug dump: {where}".strip()


def trio_wall_ms() -> float:
    """Wall clock ms: the fakes stamp their own completion on the same clock (detection latency)."""
    return time.time() * 1000
