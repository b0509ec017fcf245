"""Every actor's protocol in one place: the closed set of frozen request classes each actor accepts, and the
values it replies with.

Actors import this module and `supervisor`, never each other. Each section is one actor's complete inbox.
"""

from __future__ import annotations

from typing import Any

import attrs

# --- session_store -----------------------------------------------------------------------------------------------


@attrs.frozen
class SessionEntry:
    url: str
    tab_id: int | None
    last_used: str  # ISO 8601, UTC


@attrs.frozen
class GetSession:
    project: str
    provider: str


@attrs.frozen
class SaveSession:
    project: str
    provider: str
    url: str
    tab_id: int | None


@attrs.frozen
class ForgetSession:
    project: str
    provider: str


@attrs.frozen
class AppendHistory:
    """One finished (or failed/cancelled) ask. `entry_id` makes the append idempotent under re-delivery."""

    entry_id: str
    record: dict[str, Any]


@attrs.frozen
class ReadHistory:
    limit: int = 20


SESSION_STORE = (GetSession, SaveSession, ForgetSession, AppendHistory, ReadHistory)


# --- relay (the extension link) ----------------------------------------------------------------------------------

PROTOCOL_VERSION = 1
EXTENSION_ID = "dehbpnglmiedeaaddfipmnmhmblajpci"  # fixed by the manifest "key"


@attrs.frozen
class RelayInfo:
    """→ `RelayInfoReply`. Asked by discovery for every /mcp-discovery answer."""


@attrs.frozen
class RelayInfoReply:
    ws_url: str
    token: str = attrs.field(repr=False)  # never in logs
    server_id: str
    started_at: str


@attrs.frozen
class LinkStatus:
    """→ dict: connected, since, extensionVersion, userAgent, attachedTabs, pendingCommands (count), pending (the
    oldest commands: id, method, tabId, ageS), relayPort."""


@attrs.frozen
class WaitConnected:
    """→ None once an extension is connected; `ExtensionNotConnected` after `timeout_s`."""

    timeout_s: float


@attrs.frozen
class ExtCommand:
    """One extension command (protocol.md): tabs.*, debugger.*, cdp.*, ext.info. → the result object."""

    method: str
    params: dict[str, Any] = attrs.field(factory=dict)
    timeout_s: float = 30.0


@attrs.frozen
class Subscribe:
    """Deliver `TabEvent`s for `tab_id` into `sink` (CDP events whose method is in `methods`, plus detach/close
    notices). Replaces an earlier subscription for the same tab. → None"""

    tab_id: int
    methods: tuple[str, ...]
    sink: Any = attrs.field(eq=False, repr=False)  # trio.MemorySendChannel[TabEvent]


@attrs.frozen
class Unsubscribe:
    tab_id: int


@attrs.frozen
class TabEvent:
    """What a subscriber receives. kind: "cdp" | "detached" | "tabClosed" | "tabUpdated" | "disconnected"."""

    kind: str
    tab_id: int
    method: str = ""
    params: dict[str, Any] = attrs.field(factory=dict)
    received_at: float = 0.0  # time.time() when the relay read the frame


@attrs.frozen
class DiscoveryPort:
    """→ int: the port the discovery endpoint is bound to."""


@attrs.frozen
class DropLink:
    """Close the extension's WebSocket as if the network dropped it (a fault for the console). → bool: was one
    connected. The extension reconnects through discovery as after any drop."""

    reason: str = "dropped from the console"


RELAY = (RelayInfo, LinkStatus, WaitConnected, ExtCommand, Subscribe, Unsubscribe, DropLink)


class CdpTab:
    """The CDP-session API over the relay for one tab: send a command, await the reply, subscribe to events.

    A thin veneer over `ExtCommand`/`Subscribe` messages, so providers never see frames.
    """

    def __init__(self, relay: Any, tab_id: int) -> None:
        self.relay = relay  # ActorRef of the relay
        self.tab_id = tab_id

    async def send(self, method: str, params: dict[str, Any] | None = None, *, timeout_s: float = 30.0) -> Any:
        return await self.relay.call(
            ExtCommand("cdp.send", {"tabId": self.tab_id, "method": method, "params": params or {}}, timeout_s),
            timeout=timeout_s + 5,
        )

    async def evaluate(self, expression: str, *, timeout_s: float = 30.0, context_id: int | None = None,
                       await_promise: bool = False) -> Any:
        """`Runtime.evaluate` returning the value; a page exception becomes a `CdpError`."""
        from supervisor.errors import CdpError

        params: dict[str, Any] = {"expression": expression, "returnByValue": True, "awaitPromise": await_promise}
        if context_id is not None:
            params["contextId"] = context_id
        reply = await self.send("Runtime.evaluate", params, timeout_s=timeout_s)
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text", "exception")
            raise CdpError(f"page script failed: {text[:500]}", ext_code="page_exception")
        return reply.get("result", {}).get("value")

    async def subscribe(self, methods: tuple[str, ...], sink: Any) -> None:
        await self.relay.call(Subscribe(self.tab_id, methods, sink), timeout=10)

    async def unsubscribe(self) -> None:
        await self.relay.call(Unsubscribe(self.tab_id), timeout=10)


# --- browser ---------------------------------------------------------------------------------------------------------


@attrs.frozen
class EnsureBrowser:
    """→ None once a browser with our extension is connected: waits (connect), or launches (launch / auto when
    nothing connected in time). Fails with `ExtensionNotConnected` or `BrowserLaunchFailed`."""

    timeout_s: float = 30.0


@attrs.frozen
class BrowserStatus:
    """→ dict: mode, state (starting/connected/degraded/launching), ownership (attached/launched), pid, path."""


BROWSER = (EnsureBrowser, BrowserStatus)


# --- providers (one actor per provider tab: "chatgpt", "gemini") ------------------------------------------------------


ASK_ATTEMPTS = 3  # a provider's first try plus its 2 stuck retries (seed 9.2)
ASK_MARGIN_S = 120.0  # per attempt, on top of timeout_s: connect, type, extract


@attrs.frozen
class Ask:
    """→ `AskResult`. Progress items (`AskProgress`) stream to the requester while the answer forms."""

    question: str
    project: str
    new_chat: bool = False
    timeout_s: float = 480.0
    ask_id: str = ""

    @property
    def call_timeout_s(self) -> float:
        """How long a requester waits for the reply: every attempt may use its whole timeout."""
        return ASK_ATTEMPTS * (self.timeout_s + ASK_MARGIN_S)


@attrs.frozen
class AskProgress:
    provider: str
    phase: str  # connecting | typing | sent | answering | extracting
    chars: int = 0
    text: str = ""


@attrs.frozen
class AskResult:
    provider: str
    answer: str
    url: str
    timings: dict[str, int]
    retries: int
    detected_at_ms: float  # wall clock when completion was detected (benchmarks)
    completion_reason: str = ""
    thinking: bool = False


@attrs.frozen
class Snapshot:
    """→ dict: url, title, readyState, text excerpt, accessibility summary, optional PNG (base64)."""

    screenshot: bool = False
    max_text: int = 4000
    project: str | None = None  # prefer the tab the session store names for this project


@attrs.frozen
class GetDom:
    """→ dict: html (open shadow roots inlined as <template shadowrootmode>), truncated flag, url."""

    selector: str | None = None
    max_chars: int = 100_000
    project: str | None = None


@attrs.frozen
class ProviderStatus:
    """→ dict: provider, tabId, url, contextId, busy (the running ask: id, question head, phase, ageS), queued,
    browserTabs (the site's tabs in the browser, each with attachedByMe: our lease)."""


PROVIDER = (Ask, Snapshot, GetDom, ProviderStatus)


# --- jobs (background asks) ------------------------------------------------------------------------------------------


@attrs.frozen
class StartJob:
    """→ `JobView` at once. The asks (one per provider, in parallel) run inside the jobs actor until they finish,
    are cancelled, or the server stops. Jobs are not persisted; finished answers are also in the history."""

    tool: str
    providers: tuple[str, ...]
    ask: Ask


@attrs.frozen
class GetJob:
    """→ `JobView` once the job has ended or `wait_s` has passed, whichever is first. `JobNotFound` if unknown."""

    job_id: str
    wait_s: float = 0.0


@attrs.frozen
class ListJobs:
    """→ tuple of `JobView`, newest first: every running job plus up to `limit` recent ones."""

    limit: int = 20


@attrs.frozen
class CancelJob:
    """→ `JobView` after the job's asks were stopped (Stop clicked in the page). `JobNotFound` if unknown."""

    job_id: str


@attrs.frozen
class JobView:
    """A job's state. status: running | done (every ask answered, or some) | failed | cancelled."""

    job_id: str
    tool: str
    providers: tuple[str, ...]
    status: str
    created_at: str  # ISO 8601, UTC
    finished_at: str | None
    elapsed_s: float
    results: dict[str, AskResult]
    errors: dict[str, dict[str, str | None]]  # provider -> {code, message, hint}
    partial: dict[str, str]  # provider -> the answer text so far (while running)
    phase: dict[str, str]  # provider -> the last progress phase

    def row(self) -> dict[str, Any]:
        """One line of a job listing (list_jobs, bridge_status, the console)."""
        return {"jobId": self.job_id, "tool": self.tool, "status": self.status, "createdAt": self.created_at,
                "elapsedS": self.elapsed_s, "phase": self.phase}


JOBS = (StartJob, GetJob, ListJobs, CancelJob)
