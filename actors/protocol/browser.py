"""browser: makes sure a browser with our extension is connected (waits for the user's Chrome, wakes the extension of
the browser we launched, or launches one)."""

from __future__ import annotations

import enum

import attrs

from supervisor.otp import Address, Progress, Request


class BrowserState(enum.StrEnum):
    """Seed 004's runtime states, plus `waiting` (nothing asked for a browser yet)."""

    WAITING = "waiting"  # nothing connected yet, nothing asked for
    LAUNCHING = "launching"  # starting a browser, or waiting for one already on our profile (seed: starting)
    CONNECTED = "connected"
    DEGRADED = "degraded"  # no usable browser but we are alive: the next ask recovers (re-attach, else relaunch)
    CLOSING = "closing"  # the browser we launched is shutting down (its debugging pipe ended), or we are closing it


class Ownership(enum.StrEnum):
    LAUNCHED = "launched"  # we started it
    ATTACHED = "attached"  # a browser already running on our profile
    USER = "user"  # the user's own Chrome


class RecoveryResult(enum.StrEnum):
    REATTACHED = "reattached"  # the same browser came back: a woken worker, the user's Chrome, one on our profile
    RELAUNCHED = "relaunched"  # a new browser was launched
    FAILED = "failed"


@attrs.frozen
class RecoveryCounts:
    """How the link was restored after it had been up (seed 004: recoveryAttempt / recoveryResult)."""

    attempts: int = 0  # asks that found the link down after it had been up
    reattached: int = 0
    relaunched: int = 0
    failed: int = 0
    worker_wakes: int = 0  # stopped extension workers woken over the browser channel (asked for or not)
    handovers: int = 0  # auto mode: our browser closed because the user's Chrome came back (no two browsers)

    def as_json(self) -> dict[str, int]:
        return {"attempts": self.attempts, "reattached": self.reattached, "relaunched": self.relaunched,
                "failed": self.failed, "workerWakes": self.worker_wakes, "handovers": self.handovers}


class DropCause(enum.StrEnum):
    BROWSER_CLOSED = "browser closed"  # its process exited normally (a closed window, a quit)
    BROWSER_CRASHED = "browser crashed"  # killed by a signal, or a failure exit code
    WORKER_STOPPED = "worker stopped"  # the browser runs; its extension's service worker stopped (idle, or reloaded)
    REPLACED = "replaced"  # another connection (another browser's extension) took the link
    HANDED_OVER = "handed over"  # we closed our browser for the user's Chrome
    SERVER_DROPPED = "dropped by the server"  # heartbeat timeout, not reading
    EXTENSION_CLOSED = "extension closed"  # the extension closed it; nothing more is known


@attrs.frozen
class LastDrop:
    """Why and when the browser link last dropped."""

    at: float  # time.time()
    cause: DropCause
    detail: str

    def as_json(self) -> dict[str, object]:
        return {"at": self.at, "cause": self.cause.value, "detail": self.detail}


@attrs.frozen
class BrowserReport:
    mode: str
    state: BrowserState
    ownership: Ownership | None
    pid: int | None
    path: str | None
    headless: bool | None
    launch_to_connected_s: float | None  # of the current browser (None until it connected, or not launched by us)
    profile: str
    extension_dir: str
    last_error: str | None
    channel: str | None = None
    version: str | None = None
    debugging_pipe: bool = False  # a browser-level CDP channel to the browser is open (only one we launched)
    extensions: tuple[str, ...] = ()  # the user's own extensions loaded next to ours (--load-extension)
    recovery: RecoveryCounts = RecoveryCounts()
    last_recovery: RecoveryResult | None = None
    last_drop: LastDrop | None = None

    def as_json(self) -> dict[str, object]:
        return {"mode": self.mode, "state": self.state.value,
                "ownership": self.ownership.value if self.ownership else None, "pid": self.pid, "path": self.path,
                "headless": self.headless, "launchToConnectedS": self.launch_to_connected_s,
                "profile": self.profile, "extensionDir": self.extension_dir, "lastError": self.last_error,
                "channel": self.channel, "version": self.version, "debuggingPipe": self.debugging_pipe,
                "extensions": list(self.extensions), "recovery": self.recovery.as_json(),
                "lastRecovery": self.last_recovery.value if self.last_recovery else None,
                "lastDrop": self.last_drop.as_json() if self.last_drop else None}


class BrowserPhase(enum.StrEnum):
    WAITING_FOR_EXTENSION = "waiting for the extension"
    WAKING_WORKER = "waking the extension"
    LAUNCHING = "launching a browser"
    ATTACHING = "attaching to a running browser"
    WAITING_FOR_CLOSE = "waiting for the browser to close"


@attrs.frozen
class BrowserProgress(Progress):
    """Streamed on an `EnsureBrowser` while it waits; `message` is written for the person watching the ask."""

    phase: BrowserPhase
    message: str
    waited_s: float = 0.0


@attrs.frozen
class EnsureBrowser(Request[None]):
    """→ None once a browser with our extension is connected: waits (connect), wakes or launches (launch / auto),
    streaming `BrowserProgress` meanwhile. Fails with `ExtensionNotConnected`, `BrowserLaunchFailed`,
    `BrowserNotFound` or `ProfileInUse`."""

    timeout_s: float = 30.0


@attrs.frozen
class BrowserStatus(Request[BrowserReport]):
    pass


@attrs.frozen
class DownloadArmed(Progress):
    """Streamed on a `CatchDownload` once the browser saves downloads for us: the click that starts one may go."""


@attrs.frozen
class DownloadBegun(Progress):
    """Streamed on a `CatchDownload` when its download begins: the requester checks `url` against its policy (and
    gives up on the request to have it cancelled)."""

    url: str


@attrs.frozen
class CaughtDownload:
    guid: str
    url: str  # what the browser downloaded (a blob: or data: URL for a file the page made itself)
    suggested_name: str  # the browser's name for it (Content-Disposition, the download attribute, the URL)
    path: str  # the whole file: `staging`/`guid`
    size: int


@attrs.frozen
class CatchDownload(Request[CaughtDownload]):
    """→ the first download begun in one of `frame_ids` after `DownloadArmed`, written whole into `staging` (an
    existing, empty folder). Only a browser we launched can: the download commands are browser-level, which
    chrome.debugger refuses. Fails with `DownloadUnavailable` (not our browser), `BrowserTimeout` (none began within
    `start_s`, or it did not end within `timeout_s`), `NavigationFailed` (the browser cancelled it) or
    `InvalidArgument` (over `max_bytes`: cancelled)."""

    frame_ids: tuple[str, ...]
    staging: str
    start_s: float
    timeout_s: float
    max_bytes: int


BrowserRequest = EnsureBrowser | BrowserStatus | CatchDownload
BROWSER = Address[BrowserRequest]("browser", BrowserRequest)
