"""chatgpt, gemini, claude, grok, perplexity: one provider actor per site, each owning its tab."""

from __future__ import annotations

import enum
import hashlib
import re
from typing import ClassVar

import attrs

from supervisor.bundles import UploadLimits
from supervisor.otp import Address, Progress, Request

from .common import ProviderName

ASK_ATTEMPTS = 3  # a provider's first try plus its 2 stuck retries (seed 9.2)
ASK_REPLY_MARGIN_S = 15.0  # after an ask's deadline: Stop clicked, partial answer read, history written


class AskPhase(enum.StrEnum):
    QUEUED = "queued"
    WAITING_EXTENSION = "waiting for the extension"
    CONNECTING = "connecting"
    TYPING = "typing"
    SENT = "sent"
    THINKING = "thinking"
    ANSWERING = "answering"
    EXTRACTING = "extracting"


@attrs.frozen
class AskProgress(Progress):
    provider: ProviderName
    phase: AskPhase
    chars: int = 0
    text: str = ""  # the partial answer so far (answering)
    url: str = ""  # the conversation the question went to, once known (a background job keeps it to reattach)
    place: int = 0  # queued: its place in line (1 = next), among the asks waiting for this site's tabs


@attrs.frozen
class AskTimings:
    connect_ms: int
    wait_input_ms: int
    input_ms: int
    send_ms: int
    wait_response_ms: int
    total_ms: int

    def as_json(self) -> dict[str, int]:
        return {"connectMs": self.connect_ms, "waitInputMs": self.wait_input_ms, "inputMs": self.input_ms,
                "sendMs": self.send_ms, "waitResponseMs": self.wait_response_ms, "totalMs": self.total_ms}


@attrs.frozen
class AskWarning:
    """Something about an answer worth a second look; the answer is delivered anyway."""

    code: str  # e.g. "suspicious_answer"
    message: str
    debug_dump: str | None = None


@attrs.frozen
class Choice:
    """What an ask chooses on the page before it types (issue 34), in the user's words: a model or family ("GPT-5.5",
    "o3", "3.1 Pro", "Pro"), an effort tier ("instant", "medium", "high", "extra high", "pro"; Gemini's "extended"),
    and the site's tools ("deep research", "web search", "deep think", "canvas"). As a result field
    (`AskResult.chosen`), the same three as the page showed them when the question was sent: the labels of its
    checked rows and its tool chips."""

    model: str = ""
    effort: str = ""
    tools: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.model or self.effort or self.tools)

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.model:
            out["model"] = self.model
        if self.effort:
            out["effort"] = self.effort
        if self.tools:
            out["tools"] = list(self.tools)
        return out

    def words(self) -> str:
        """For deadlines and consent: every name the choice uses, in one string."""
        return " ".join((self.model, self.effort, *self.tools))


# The tools an ask may switch on, per site (the others have none; the tables name their rows). ChatGPT's Deep
# Research report is read in its own frame (actors/provider/research.py).
SITE_TOOLS: dict[ProviderName, tuple[str, ...]] = {
    ProviderName.CHATGPT: ("deep research", "web search"),
    ProviderName.GEMINI: ("deep research", "deep think", "canvas")}


@attrs.frozen
class SavedFile:
    """A file the answer brought back (issue 35): a generated image or a file the site made, saved where the ask
    said (`Ask.save_to`) under a free name."""

    path: str  # absolute
    name: str
    mime: str
    size: int
    kind: str  # "image" or "file"
    source: str = ""  # the page's URL for it (logged and shown, never fetched again)

    def as_json(self) -> dict[str, object]:
        return {"path": self.path, "name": self.name, "mimeType": self.mime, "size": self.size, "kind": self.kind}


@attrs.frozen
class Target:
    """Where an ask goes on one site, when not this project's kept conversation (issue 38): `conversation_url`
    continues that conversation (it must be the site's own; the project's kept conversation is left as it is);
    `chat_base_url` starts the new chat inside a ChatGPT Project or a Gemini Gem (and the project keeps it)."""

    conversation_url: str = ""
    chat_base_url: str = ""

    def __bool__(self) -> bool:
        return bool(self.conversation_url or self.chat_base_url)


@attrs.frozen
class AskResult:
    provider: ProviderName
    answer: str
    url: str
    timings: AskTimings
    retries: int
    detected_at_ms: float  # wall clock when completion was detected (benchmarks)
    completion_reason: str = ""
    thinking: bool = False
    warnings: tuple[AskWarning, ...] = ()
    extracted_by: str = ""  # which anchor gave the text (content, paragraphs, turn, body, feedback, aria-live)
    model: str = ""  # the model that answered as the page names it (ChatGPT's message slug, Gemini's mode label)
    chosen: Choice | None = None  # what the page showed chosen when the question was sent (only when asked to choose)
    files: tuple[SavedFile, ...] = ()  # the answer's generated images and files, saved (issue 35)


@attrs.frozen
class Ask(Request[AskResult]):
    """Progress items (`AskProgress`) stream to the requester while the answer forms. `timeout_s` bounds the whole
    ask from the moment it was sent (its envelope's `enqueued_at`): queueing, retries, reloads and waits included."""

    max_attempts: ClassVar[int] = ASK_ATTEMPTS

    question: str
    project: str
    new_chat: bool = False
    timeout_s: float = 480.0
    ask_id: str = ""
    # Files to upload through the site's own file input: absolute paths the server checked (supervisor/attachments).
    files: tuple[str, ...] = ()
    # The model, effort and tools to choose first, per provider (one ask may go to both sites, which name their
    # models differently); a provider absent here chooses nothing.
    choices: tuple[tuple[ProviderName, Choice], ...] = ()
    # Where the answer's images and files are saved (an existing folder the front or the CLI chose and checked);
    # "" keeps them on the page.
    save_to: str = ""
    # Where it goes, per provider (issue 38); a provider absent here asks in the project's kept conversation (or a new
    # chat with `new_chat`).
    targets: tuple[tuple[ProviderName, Target], ...] = ()
    temporary: bool = False  # the site's temporary chat: a new chat the site does not keep, and neither does ai-bridge
    # Who asked (the MCP session, the terminal, a reattached job): when the site's tabs are all busy, waiting asks
    # take turns by requester, so one client's burst never starves another's ask.
    client: str = ""

    def choice_for(self, provider: ProviderName) -> Choice:
        return next((c for p, c in self.choices if p is provider), Choice())

    def target_for(self, provider: ProviderName) -> Target:
        return next((t for p, t in self.targets if p is provider), Target())

    @property
    def call_timeout_s(self) -> float:
        """How long a requester waits for the reply: the ask's own deadline (every attempt is inside it) plus the
        time it takes to end it cleanly."""
        return self.timeout_s + ASK_REPLY_MARGIN_S


# -- what one message takes (issue 35) ---------------------------------------------------------------------------------


# ChatGPT: 10 files a message is oracle's cap, kept "to stay under ChatGPT's upload cap" (steipete/oracle
# src/browser/prompt.ts:20); the page says "Max {maxUploads} uploads at a time" without our seeing the number (a
# guess, then). 512 MB a file (OpenAI help 8983719). Gemini: 10 files a prompt, 100 MB a file (secondary sources
# only: a guess). A site not listed here gets the smallest of these.
UPLOAD_LIMITS = {ProviderName.CHATGPT: UploadLimits(files=10, file_bytes=512 * 10**6),
                 ProviderName.GEMINI: UploadLimits(files=10, file_bytes=100 * 10**6)}


def upload_limits(providers: tuple[ProviderName, ...] | list[ProviderName]) -> UploadLimits:
    """What every one of `providers` takes: an ask to two sites sends the same uploads to both."""
    known = list(UPLOAD_LIMITS.values())
    chosen = [UPLOAD_LIMITS.get(p) for p in providers] or known
    floor = UploadLimits(min(x.files for x in known), min(x.file_bytes for x in known))
    return UploadLimits(min((x or floor).files for x in chosen), min((x or floor).file_bytes for x in chosen))


# -- long asks and reattaching ---------------------------------------------------------------------------------------

LONG_ASK_TIMEOUT_S = 4200.0  # Pro / Deep Think / heavy thinking: up to 60 minutes of answer, plus queueing and margin
MAX_ASK_TIMEOUT_S = 7200.0
LONG_MODES = re.compile(r"\bpro\b|deep\s*think|deep\s*research|thinking|heavy|extended|extra\s*high|\bmax\b",
                        re.IGNORECASE)
QUESTION_KEY_CHARS = 200  # the part of a question a conversation's last user message is compared on (flow.py)


def default_timeout_s(response_timeout_s: float, mode: str | None = None) -> float:
    """An ask's deadline when the caller gave none: the server's ``response_timeout_s``, or for a model or mode
    whose answers take up to an hour (its label names Pro, Deep Think, Deep Research, Thinking or heavy) at least
    `LONG_ASK_TIMEOUT_S`. The ask tools pass every name of the ask's choices here (`Choice.words`)."""
    if mode and LONG_MODES.search(mode):
        return max(response_timeout_s, LONG_ASK_TIMEOUT_S)
    return response_timeout_s


def question_digest(question: str) -> str:
    """A question as a job record keeps it: ``<n>:<sha256>`` of its first `QUESTION_KEY_CHARS` characters with the
    whitespace removed (how `flowkit.question_shown` compares it with the conversation), never its text."""
    key = re.sub(r"\s+", "", question)[:QUESTION_KEY_CHARS]
    return f"{len(key)}:{hashlib.sha256(key.encode()).hexdigest()}"


def digest_shown(digest: str, last_user: str) -> bool:
    """Is the conversation's last user message (its first 300 characters, perhaps behind a "You said" label) the
    question of `digest`? The `question_shown` test, on the digest: some window of the message hashes to it."""
    n_text, _, want = digest.partition(":")
    if not n_text.isdigit() or not want or int(n_text) == 0:
        return False
    n = int(n_text)
    seen = re.sub(r"\s+", "", last_user)
    return any(hashlib.sha256(seen[i:i + n].encode()).hexdigest() == want for i in range(len(seen) - n + 1))


@attrs.frozen
class Reattach(Ask):
    """An ask whose question a server that stopped already sent (a background job it ran): open `url`, wait for the
    conversation's turns, check that its last user message is this question (`digest`), then wait for that turn's
    answer within the deadline and read it. Never types, never sends. A question that is not the last user message,
    or a page that cannot be read, ends it with `Interrupted` carrying `url` and the best partial answer known
    (`partial`: what the job recorded before the stop). `question` is empty: only its digest is kept."""

    url: str = ""
    digest: str = ""
    partial: str = ""


@attrs.frozen
class SnapshotReport:
    provider: ProviderName
    tab_id: int
    url: str
    title: str
    ready_state: str
    visibility: str
    text: str
    accessibility: tuple[str, ...]
    watcher_state: dict[str, object] | None = None
    screenshot_png_b64: str | None = attrs.field(default=None, repr=False)

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"provider": self.provider.value, "tabId": self.tab_id, "url": self.url,
                                  "title": self.title, "readyState": self.ready_state,
                                  "visibility": self.visibility, "text": self.text,
                                  "accessibility": list(self.accessibility)}
        if self.watcher_state is not None:
            out["watcherState"] = self.watcher_state
        return out


@attrs.frozen
class Snapshot(Request[SnapshotReport]):
    screenshot: bool = False
    max_text: int = 4000
    project: str | None = None  # prefer the tab the session store names for this project


@attrs.frozen
class DomReport:
    provider: ProviderName
    url: str
    html: str
    truncated: bool
    chars: int


@attrs.frozen
class GetDom(Request[DomReport]):
    """The HTML (open shadow roots inlined as <template shadowrootmode>), capped at `max_chars`."""

    selector: str | None = None
    max_chars: int = 100_000
    project: str | None = None


@attrs.frozen
class BusyAsk:
    ask_id: str
    question: str  # the first 80 characters
    attempt: int
    phase: AskPhase
    chars: int
    age_s: float


@attrs.frozen
class SiteTab:
    tab_id: int
    url: str
    attached_by_me: bool
    active: bool


@attrs.frozen
class PoolTab:
    """One tab of a provider's pool (issue 38): the ask leasing it, or how long it has been idle."""

    tab_id: int
    url: str | None
    leased_by: str  # the ask id ("" when idle)
    idle_s: float  # 0 while leased
    kept: bool  # the tab of the conversation kept last: never closed for being idle
    broken: str | None = None

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "leasedBy": self.leased_by or None,
                "idleS": self.idle_s, "kept": self.kept, "broken": self.broken}


@attrs.frozen
class ProviderReport:
    provider: ProviderName
    tab_id: int | None  # the pool's most recently used tab
    url: str | None
    context_id: int | None
    broken: str | None
    busy: BusyAsk | None  # the longest-running ask
    queued: int  # asks waiting for a tab (or for an earlier ask in their conversation)
    browser_tabs: tuple[SiteTab, ...] | str  # the site's tabs in the browser, or why they could not be listed
    site_changed: str = ""  # the last ask's site_changed warning (issue 37): what of the table missed, and when
    asks: tuple[BusyAsk, ...] = ()  # every running ask, each in its own tab
    pool: tuple[PoolTab, ...] = ()
    tabs_per_site: int = 1

    def as_json(self) -> dict[str, object]:
        def ask(b: BusyAsk) -> dict[str, object]:
            return {"askId": b.ask_id, "question": b.question, "attempt": b.attempt, "phase": b.phase.value,
                    "chars": b.chars, "ageS": b.age_s}

        tabs: object = self.browser_tabs if isinstance(self.browser_tabs, str) else [
            {"tabId": t.tab_id, "url": t.url, "attachedByMe": t.attached_by_me, "active": t.active}
            for t in self.browser_tabs]
        return {"provider": self.provider.value, "tabId": self.tab_id, "url": self.url,
                "contextId": self.context_id, "broken": self.broken,
                "busy": None if self.busy is None else ask(self.busy), "queued": self.queued,
                "pool": self.pool_json(), "browserTabs": tabs,
                **({"siteChanged": self.site_changed} if self.site_changed else {})}

    def pool_json(self) -> dict[str, object]:
        """The pool as bridge_status shows it: its tabs, their leases, the running asks and the queue's length."""
        return {"tabsPerSite": self.tabs_per_site, "tabs": [t.as_json() for t in self.pool],
                "leases": sum(1 for t in self.pool if t.leased_by), "running": len(self.asks),
                "queued": self.queued}


@attrs.frozen
class ProviderStatus(Request[ProviderReport]):
    # False: only what the actor holds, without asking the browser for the site's tabs (bridge_status's cheap part)
    tabs: bool = True


class ProbeStatus(enum.StrEnum):
    OK = "ok"  # the entry's first selector (or label) matched
    FALLBACK = "fallback"  # only a later one in the list matched: the first has drifted
    MISSING = "missing"  # none matched
    NOT_APPLICABLE = "not_applicable"  # cannot be judged on this page (detail says why), e.g. stop while idle


@attrs.frozen
class ProbeItem:
    """One checked entry of a provider table, named as the table spells it (`chatgpt.selectors.input`)."""

    entry: str
    status: ProbeStatus
    matched: str | None  # the selector or label that matched
    detail: str
    required: bool = True  # a missing required item breaks asks; an optional one only weakens a fallback

    def as_json(self) -> dict[str, object]:
        return {"entry": self.entry, "status": self.status.value, "matched": self.matched, "detail": self.detail,
                "required": self.required}


@attrs.frozen
class OfferedRow:
    """A row a page's picker or tools menu offers, as the site labels it."""

    label: str
    detail: str = ""  # the row's other text ("Leaving on July 23", "5.5")
    checked: bool = False
    disabled: bool = False

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"label": self.label, "checked": self.checked}
        if self.detail:
            out["detail"] = self.detail
        if self.disabled:
            out["disabled"] = True
        return out


@attrs.frozen
class Offered:
    """What can be chosen on a provider page now (issue 34): the picker's models, its efforts (tiers, or the effort
    switch), the tools menu's tools, and what is chosen. `problem` says what could not be read."""

    models: tuple[OfferedRow, ...] = ()
    efforts: tuple[OfferedRow, ...] = ()
    tools: tuple[OfferedRow, ...] = ()
    current: Choice = Choice()
    problem: str = ""

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"models": [r.as_json() for r in self.models],
                                  "efforts": [r.as_json() for r in self.efforts],
                                  "tools": [r.as_json() for r in self.tools], "current": self.current.as_json()}
        if self.problem:
            out["problem"] = self.problem
        return out

    def text(self, site: str) -> str:
        """As lines a person reads (`ai-bridge models`, list_models): ✓ marks what is chosen."""
        def rows(kind: str, rs: tuple[OfferedRow, ...]) -> str:
            shown = [f"{r.label}{' (' + r.detail + ')' if r.detail else ''}{' ✓' if r.checked else ''}"
                     f"{' [disabled]' if r.disabled else ''}" for r in rs]
            return f"  {kind}: {', '.join(shown) or '(none shown)'}"
        current = ", ".join(f"{k} {v}" for k, v in self.current.as_json().items()) or "nothing"
        lines = [f"{site}:", rows("models", self.models), rows("efforts", self.efforts), rows("tools", self.tools),
                 f"  chosen now: {current}"]
        if self.problem:
            lines.append(f"  could not read everything: {self.problem}")
        return "\n".join(lines)


@attrs.frozen
class ProbeReport:
    """What a probe saw on a provider page; nothing was typed or sent."""

    provider: ProviderName
    url: str
    signed_in: bool | None  # None: could not tell
    language: str  # "en", "ja" or "" (unknown)
    items: tuple[ProbeItem, ...]
    overridden: tuple[str, ...]  # the table entries the user's providers.toml prepends to
    offered: Offered | None = None  # with `Probe.choices`: what the pickers offer (read by opening them)
    site_changed: str = ""  # the last ask's site_changed warning on this server (issue 37)
    # The project's kept conversation, when the site no longer has it (deleted, or never there): the probe read a new
    # chat instead. Not a changed site: an ask in that state asks in a new chat.
    conversation_gone: str | None = None

    @property
    def broken(self) -> tuple[ProbeItem, ...]:
        """The required items that are missing: the entries to update."""
        return tuple(i for i in self.items if i.required and i.status is ProbeStatus.MISSING)

    @property
    def ok(self) -> bool:
        return not self.broken and self.signed_in is not False

    def as_json(self) -> dict[str, object]:
        return {"provider": self.provider.value, "url": self.url, "signedIn": self.signed_in,
                "language": self.language, "ok": self.ok, "broken": [i.entry for i in self.broken],
                "overridden": list(self.overridden), "conversationGone": self.conversation_gone,
                "items": [i.as_json() for i in self.items],
                **({"offered": self.offered.as_json()} if self.offered is not None else {}),
                **({"siteChanged": self.site_changed} if self.site_changed else {})}


@attrs.frozen
class Probe(Request[ProbeReport]):
    """Open the provider page as an ask would (the project's kept conversation when it has one, else the site's
    home page) and check every entry of the provider table against it. Never types, clicks or sends. Queued with
    the asks (it may navigate the tab); `timeout_s` bounds it from when it was sent."""

    project: str | None = None
    timeout_s: float = 60.0
    # Also open the picker (and its submenus) and the tools menu, read what they offer, and close them: clicks, but
    # nothing is chosen, typed or sent (`ai-bridge models`, list_models, doctor --live).
    choices: bool = False

    @property
    def call_timeout_s(self) -> float:
        return self.timeout_s + 10.0


ProviderRequest = Ask | Snapshot | GetDom | ProviderStatus | Probe
# One address per site, named as the site: the providers branch of the tree runs one actor per table.
ADDRESSES: dict[ProviderName, Address[ProviderRequest]] = {p: Address[ProviderRequest](p.value, ProviderRequest)
                                                           for p in ProviderName}
CHATGPT = ADDRESSES[ProviderName.CHATGPT]
GEMINI = ADDRESSES[ProviderName.GEMINI]


def provider_address(name: ProviderName) -> Address[ProviderRequest]:
    return ADDRESSES[name]
