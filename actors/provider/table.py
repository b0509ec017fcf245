"""The shape of a provider table: everything site-specific (selectors, labels, timeouts, completion rule, typing
rules, extraction anchors) lives in one `ProviderTable` per provider (one module per site in sites/); the tab
session, the ask flow and the in-page watcher are generic.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import attrs

from .page import PageState


@attrs.frozen
class Timeouts:
    """Seed section 9.1, and every other number of the ask flow. "Max" values: the flow proceeds as soon as the
    condition holds; they are failure thresholds, never fixed waits. The ask's own deadline (`timeout_s`, from when
    it was sent) bounds all of them."""

    reuse_tab_s: float = 3.0  # the session's tab must answer tabs.get within this
    new_tab_s: float = 5.0  # create a tab and see it loaded
    new_tab_retries: int = 2
    new_tab_retry_after_s: float = 1.0
    extension_wait_s: float = 60.0  # EnsureBrowser: the extension connects, or the browser is launched
    browser_margin_s: float = 1.0  # EnsureBrowser gives up this long before the ask's deadline (its error is clearer)
    page_load_s: float = 30.0  # readyState complete after a navigation
    input_s: float = 30.0  # the input box appears
    earlier_turns_s: float = 10.0  # a conversation page shows its earlier turns (reconnect guard, seed v2.0.10)
    settle_s: float = 0.15  # counts unchanged this long on a freshly loaded page (replaces the seed's fixed 500 ms)
    settle_max_s: float = 5.0  # a page whose counts keep changing is counted as it is after this
    stuck_check_s: float = 5.0  # seed 9.3: a stop button left over from an earlier answer must go within this
    send_button_s: float = 60.0  # the send button is enabled (and no stop button shown)
    send_confirm_s: float = 2.0  # each send method (click, mouse, Enter) is confirmed within this, else the next
    user_message_s: float = 15.0  # the question appears as a user message after the site took it
    new_response_s: float = 30.0  # a response starts; capped by the ask's budget (see `AskBudget`)
    text_render_s: float = 120.0  # answer text is rendered after completion (thinking, hidden tab)
    own_content_s: float = 3.0  # a finished turn's own content renders (render lag, a re-shown hidden tab) before
                                # any wider anchor is tried; then the wait goes on up to `text_render_s`
    visible_s: float = 0.5  # a tab brought to the front reports itself visible (within ms when it works)
    health_check_s: float = 4.0
    alive_s: float = 5.0  # a tab whose watcher reported this recently needs no health check (its events would say
                          # at once if it closed or detached)
    stall_s: float = 120.0  # stop button up, no thinking, no new text this long: stuck (capped by the budget)
    stall_report_s: float = 2.0  # seeing a stall (up to one safety poll late) and keeping its dump and partial text
    min_stall_s: float = 2.0  # the shortest stall threshold a short deadline may impose
    attempt_reserve_s: float = 3.0  # kept for each later attempt's reload and typing when sharing the budget
    progress_every_s: float = 0.5  # partial text goes to the requester at most this often
    safety_poll_s: float = 1.0  # the watcher reports changes; this slow poll only covers lost reports
    script_s: float = 10.0  # one page-script call
    stop_click_s: float = 3.0  # clicking Stop at cancel or deadline
    inspect_s: float = 20.0  # snapshot: the accessibility tree and the screenshot
    upload_s: float = 120.0  # attached files all show as uploaded (issue 20)


class Newline(enum.Enum):
    """How the key-typing phase types a line break without submitting."""

    SHIFT_ENTER = "shift+enter"  # ChatGPT and Gemini: Enter sends, Shift+Enter breaks the line
    INSERT_TEXT = "insert_text"  # Input.insertText("\n")


class TypePhase(enum.Enum):
    """Seed 5.1 / 5.2: how the question gets into the input box, tried in the table's order, each verified."""

    JS = "js"  # textarea value setter + input event; contenteditable execCommand('insertText')
    INSERT_TEXT = "insert_text"  # CDP Input.insertText
    KEYS = "keys"  # CDP key events, one per character


class Anchor(enum.StrEnum):
    """Where the watcher finds the answer text (seed 3.5 / 4.4), tried in the table's order. The first three read the
    new turn's own content; the others look wider and are tried only once that content had its time to render
    (`Timeouts.own_content_s`), and never return page chrome. PARAGRAPHS and BODY give plain text (no markdown
    structure): the result says so."""

    REPORT = "report"  # Gemini Deep Research: the report panel the last response opened, citations as links
    FEEDBACK = "feedback"  # Gemini P1: the last thumb_up icon → its button → parent → parent (the container)
    CONTENT = "content"  # the `content` selectors inside the last response (.markdown, .prose)
    PARAGRAPHS = "paragraphs"  # the p elements of the last turn
    TURN = "turn"  # the last response element's own text
    ARIA_LIVE = "aria-live"  # Gemini P3: the last [aria-live="polite"] region
    BODY = "body"  # ChatGPT P5: main/body text after the last answer marker, cut at the next end marker


# The tools an ask may switch on (issue 34), in the user's words → the table's label entry that names the menu row.
# A site offers a tool when its table has that entry.
TOOL_LABELS = {"deep research": "toolDeepResearch", "web search": "toolWebSearch", "deep think": "toolDeepThink",
               "canvas": "toolCanvas"}
# An effort that switches a table's effort toggle (Gemini's "Extended thinking", Claude's "Thinking") off; any other
# turns it on, except on a table that also has an effort menu (Claude's Effort submenu), where only these turn it on
# and the rest name a row of that menu.
OFF_WORDS = frozenset({"standard", "off", "default", "normal", "none"})
ON_WORDS = frozenset({"on", "thinking", "extended", "think"})

OWN_ANCHORS = frozenset({Anchor.REPORT, Anchor.FEEDBACK, Anchor.CONTENT})
PLAIN_ANCHORS = frozenset({Anchor.PARAGRAPHS, Anchor.BODY})


@attrs.frozen
class Watch:
    """What the completion rule remembers of one wait (besides the page state)."""

    initial_assistant: int  # responses before we sent (seed: initialAssistantCount)
    saw_stop: bool  # a stop button was seen since sending
    elapsed_s: float  # since the question was confirmed sent
    text_stable_s: float  # since the last response's text last changed
    quiet_s: float = 0.0  # since the page last changed at all (any watcher report that differed)


# Issue 37: a page whose stop control went and which has stayed quiet this long has finished, whatever its icons are
# named. Measured on the fakes (tests/test_drift.py): streamed chunks come 30-300 ms apart and a finished page's last
# render lands within 0.3 s of its stop control going; 1 s stays clear of both and well under the 5 s of the
# text-stability rule.
QUIET_S = 1.0


@attrs.frozen
class Completion:
    done: bool
    reason: str = ""


NOT_YET = Completion(False)


def settled(s: PageState, w: Watch) -> Completion:
    """The rules behind a site's own signal, whatever its markup is called (issue 37): the stop control seen and gone
    with the page quiet, else the text unchanged for 5 s. The newer sites' tables end their rules with it."""
    if w.saw_stop and not s.stop and w.quiet_s >= QUIET_S and s.last_len > 0:
        return Completion(True, "stop gone, page quiet")
    if w.text_stable_s >= 5 and s.last_len > 0:
        return Completion(True, "text stable for 5 s")
    return NOT_YET


def finished_turn_rule(bar: str, *, submit_back: bool = False) -> Callable[[PageState, Watch], Completion]:
    """The newer sites' rule (issue 40): never before a new response, nor while a stop shows or it thinks; then the
    new response's finished-turn buttons (`bar`: the reason, as the site names them); with `submit_back`, the submit
    button back once a stop was seen (Grok's composer swaps the two); then `settled`."""
    def completion(s: PageState, w: Watch) -> Completion:
        if s.assistant_count <= w.initial_assistant or s.stop or s.thinking:
            return NOT_YET
        if s.last_has_feedback:
            return Completion(True, bar)
        if submit_back and w.saw_stop and s.send_found:
            return Completion(True, "submit button back")
        return settled(s, w)
    return completion


@attrs.frozen
class ProviderTable:
    name: str  # the site's `ProviderName` value: "chatgpt", "gemini", "claude", "grok", "perplexity"
    title: str  # for messages: "ChatGPT", "Gemini", ...
    home_url: str
    url_patterns: tuple[str, ...]  # tabs.query patterns of this site
    conversation_re: str  # a URL of an existing conversation
    shadow_dom: bool  # search inside open shadow roots (Gemini)
    selectors: dict[str, tuple[str, ...]]  # input, send, stop, user, assistant, content, notice, ...
    labels: dict[str, tuple[str, ...]]  # texts / aria-label fragments, English and Japanese
    timeouts: Timeouts
    completion: Callable[[PageState, Watch], Completion]
    type_phases: tuple[TypePhase, ...]  # seed 5.1 (ChatGPT: 3 phases) / 5.2 (Gemini: 2)
    newline: Newline
    anchors: tuple[Anchor, ...]  # extraction order
    # The site gives its limit as an answer (Gemini): a short answer that says so is the limit. ChatGPT shows limits
    # as notices only, so an answer that quotes a limit message is an answer.
    limit_as_answer: bool = False
    # A generated image's URL at full size (pattern, replacement), where the page shows a smaller one (issue 35).
    image_full_size: tuple[str, str] | None = None
    # The model picker marks no row as chosen (no aria-checked): its trigger's own label names the choice (Grok,
    # grok-2607-model-menu-open.html). The rows are read as checked where their label is the trigger's.
    choice_on_trigger: bool = False
    # No send button while the composer is empty, and nothing else standing in its place (Claude's composer): the probe
    # does not miss it there. (ChatGPT's 2026 composer has its voice button there instead: `selectors.voice`. Its
    # 2025 page shows the send button always, so a renamed one is found missing there.)
    send_when_typed: bool = False
    # The entries the user's providers.toml prepends to ("chatgpt.selectors.send"); set by `overrides.apply`.
    overridden: tuple[str, ...] = ()
    # Conversations the user chooses (issue 38). `chat_base_re`: a page inside the site where new chats start and
    # stay together (a ChatGPT Project, a Gemini Gem); "" when the site has none ai-bridge knows.
    chat_base_re: str = ""
    # The site's temporary chat: a URL that opens a new one (ChatGPT), or a button that switches a new chat to one
    # (Gemini); `temporary_on` shows that it is on. Neither set: the site has none ai-bridge knows.
    temporary_url: str = ""
    temporary_toggle: tuple[str, ...] = ()
    temporary_on: tuple[str, ...] = ()

    @property
    def has_temporary(self) -> bool:
        return bool(self.temporary_url or self.temporary_toggle)

    @property
    def primary_anchor(self) -> Anchor:
        """The anchor an ordinary answer is read by on a healthy page (a report is read by its own)."""
        return next(a for a in self.anchors if a is not Anchor.REPORT)

    def watcher_config(self) -> dict[str, object]:
        return {"name": self.name, "shadow": self.shadow_dom, "sel": {k: list(v) for k, v in self.selectors.items()},
                "labels": {k: list(v) for k, v in self.labels.items()}, "anchors": [a.value for a in self.anchors]}


def rate_limit_text(table: ProviderTable, text: str) -> bool:
    """Is `text` (a short response) the site's limit message? Gemini gives its limit as a model response."""
    if not table.limit_as_answer:
        return False
    low = text.lower()
    return any(label.lower() in low for label in table.labels.get("rateLimit", ()))
