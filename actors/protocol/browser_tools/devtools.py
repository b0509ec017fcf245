"""The browser tools' DevTools requests: console and network logs, emulation (device, network, colour scheme),
resize, eval, and the page's dialogs."""

from __future__ import annotations

import enum

import attrs

from supervisor.otp import Request

from ..common import JSON


@attrs.frozen
class ConsoleEntry:
    id: int
    ts: float  # ms since the epoch
    level: str  # log, info, warning, error, debug, exception
    text: str
    source: str  # script URL:line, when known

    def as_json(self) -> dict[str, object]:
        return {"id": self.id, "ts": self.ts, "level": self.level, "text": self.text, "source": self.source}


@attrs.frozen
class ConsoleReport:
    tab_id: int
    url: str
    started: bool  # this call started collecting for the tab
    entries: tuple[ConsoleEntry, ...]
    total: int  # kept in the buffer
    dropped: int  # pushed out of the bounded buffer since collection began

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "started": self.started,
                "entries": [e.as_json() for e in self.entries], "total": self.total, "dropped": self.dropped}


@attrs.frozen
class ConsoleLogs(Request[ConsoleReport]):
    level: str | None = None  # only this level (warning also matches warn)
    since_id: int = 0  # entries after this id
    limit: int = 100
    clear: bool = False
    tab_id: int | None = None


@attrs.frozen
class NetworkEntry:
    id: int
    ts: float
    method: str
    url: str
    resource_type: str
    status: int | None
    status_text: str
    mime_type: str
    failed: bool
    error: str
    from_cache: bool
    duration_ms: float | None
    encoded_bytes: int | None
    # (name, value), credentials redacted unless the user allowed them; sent only when asked for (headers: true)
    request_headers: tuple[tuple[str, str], ...] = ()
    response_headers: tuple[tuple[str, str], ...] = ()

    def as_json(self, headers: bool = False) -> dict[str, object]:
        out: dict[str, object] = {
            "id": self.id, "ts": self.ts, "method": self.method, "url": self.url, "type": self.resource_type,
            "status": self.status, "statusText": self.status_text, "mimeType": self.mime_type,
            "failed": self.failed, "error": self.error, "fromCache": self.from_cache,
            "durationMs": self.duration_ms, "encodedBytes": self.encoded_bytes}
        if headers:
            out["requestHeaders"] = [{"name": n, "value": v} for n, v in self.request_headers]
            out["responseHeaders"] = [{"name": n, "value": v} for n, v in self.response_headers]
        return out


@attrs.frozen
class NetworkBody:
    """One response's body (network_log body_of): text, or base64 when binary was asked for; cut at the cap."""

    id: int
    mime_type: str
    text: str
    base64: bool
    size: int  # characters of the whole body (as text, or as base64)
    truncated: bool

    def as_json(self) -> dict[str, object]:
        return {"id": self.id, "mimeType": self.mime_type, "text": self.text, "base64": self.base64,
                "size": self.size, "truncated": self.truncated}


@attrs.frozen
class NetworkReport:
    tab_id: int
    url: str
    started: bool
    entries: tuple[NetworkEntry, ...]
    total: int
    dropped: int
    headers: bool = False  # the entries carry their headers
    body: NetworkBody | None = None

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "tabId": self.tab_id, "url": self.url, "started": self.started,
            "entries": [e.as_json(self.headers) for e in self.entries], "total": self.total,
            "dropped": self.dropped}
        if self.body is not None:
            out["body"] = self.body.as_json()
        return out


@attrs.frozen
class NetworkLog(Request[NetworkReport]):
    url_contains: str | None = None
    failed_only: bool = False
    since_id: int = 0
    limit: int = 100
    clear: bool = False
    tab_id: int | None = None
    headers: bool = False  # each entry's request and response headers
    body_of: int | None = None  # an entry id: its response body too
    body_max_chars: int = 20_000
    binary: bool = False  # a binary body as base64 (else refused: text only)
    earlier_pages: bool = False  # also the requests of the documents the tab showed before the current one


class NetworkPreset(enum.StrEnum):
    """emulate's network throttling (Chrome DevTools' presets)."""

    NONE = "none"  # no throttling
    OFFLINE = "offline"
    SLOW_3G = "slow-3g"
    FAST_3G = "fast-3g"
    SLOW_4G = "slow-4g"


class ColorScheme(enum.StrEnum):
    LIGHT = "light"
    DARK = "dark"
    NO_PREFERENCE = "no-preference"


@attrs.frozen
class Viewport:
    width: int
    height: int
    device_scale_factor: float  # 0: the browser's own
    mobile: bool = False

    def as_json(self) -> dict[str, object]:
        return {"width": self.width, "height": self.height, "deviceScaleFactor": self.device_scale_factor,
                "mobile": self.mobile}


@attrs.frozen
class Emulation:
    """What is emulated on a tab (None: the browser's own). Chrome drops all of it when the tools release the tab
    (the debugger detaches)."""

    viewport: Viewport | None = None
    user_agent: str | None = None
    color_scheme: ColorScheme | None = None
    network: NetworkPreset | None = None
    cpu_throttling: float | None = None  # a slowdown factor (4: four times slower)

    def as_json(self) -> dict[str, object]:
        return {"viewport": self.viewport.as_json() if self.viewport else None, "userAgent": self.user_agent,
                "colorScheme": self.color_scheme.value if self.color_scheme else None,
                "network": self.network.value if self.network else None, "cpuThrottling": self.cpu_throttling}


@attrs.frozen
class EmulateReport:
    tab_id: int
    url: str
    emulation: Emulation

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, **self.emulation.as_json()}


@attrs.frozen
class Emulate(Request[EmulateReport]):
    """Set what is given (the rest stays); `reset` first clears everything."""

    viewport: Viewport | None = None
    user_agent: str | None = None
    color_scheme: ColorScheme | None = None
    network: NetworkPreset | None = None
    cpu_throttling: float | None = None
    reset: bool = False
    tab_id: int | None = None


@attrs.frozen
class Resize(Request[EmulateReport]):
    """The page's viewport to width x height CSS px (the device scale and mobile flag stay as emulated)."""

    width: int
    height: int
    tab_id: int | None = None


@attrs.frozen
class EvalReport:
    tab_id: int
    url: str
    ok: bool
    value: JSON
    type: str
    error: str | None
    truncated: bool

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "ok": self.ok, "value": self.value, "type": self.type,
                "error": self.error, "truncated": self.truncated}


@attrs.frozen
class Eval(Request[EvalReport]):
    """JavaScript in the page's own world (only with --unsafe-enable-eval). A page exception is ``ok: false``."""

    expression: str
    await_promise: bool = True
    timeout_s: float = 10.0
    tab_id: int | None = None


class DialogType(enum.StrEnum):
    ALERT = "alert"
    CONFIRM = "confirm"
    PROMPT = "prompt"
    BEFOREUNLOAD = "beforeunload"


@attrs.frozen
class DialogInfo:
    type: DialogType
    message: str
    default_prompt: str
    url: str

    def as_json(self) -> dict[str, object]:
        return {"type": self.type.value, "message": self.message, "defaultPrompt": self.default_prompt,
                "url": self.url}


@attrs.frozen
class DialogReport:
    tab_id: int
    dialog: DialogInfo
    accepted: bool

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "dialog": self.dialog.as_json(), "accepted": self.accepted}


@attrs.frozen
class HandleDialog(Request[DialogReport]):
    accept: bool
    prompt_text: str | None = None
    tab_id: int | None = None
