"""The MCP tool table: names, descriptions the agent reads, input schemas, validation and handlers.

Handlers talk to other actors only through `deps.ctx.ref(name).call(message)`.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs

from supervisor.errors import BridgeError, InvalidArgument

from ..messages import Ask, AskProgress, AskResult, BrowserStatus, GetDom, LinkStatus, ReadHistory, Snapshot

if TYPE_CHECKING:
    from .actor import FrontDeps

INSTRUCTIONS = (
    "ai-bridge asks ChatGPT and Gemini through their web UIs in the user's own logged-in browser (no API keys). "
    "Use ask_chatgpt_gemini_web for a second opinion from both; ask_chatgpt_web / ask_gemini_web for one. "
    "bridge_status shows whether the browser extension is connected."
)


@attrs.frozen
class ToolResult:
    text: str
    structured: dict[str, Any] | None = None
    images: tuple[str, ...] = ()  # base64 PNGs
    is_error: bool = False


Handler = Callable[["FrontDeps", Any, dict[str, Any]], Awaitable[ToolResult]]


@attrs.frozen
class ToolDef:
    name: str
    description: str
    schema: dict[str, Any]
    handler: Handler


def validate(tool: ToolDef, args: dict[str, Any]) -> dict[str, Any]:
    """Check arguments against the tool's (flat) schema; unknown or mistyped arguments are clear errors."""
    props: dict[str, Any] = tool.schema.get("properties", {})
    for name in tool.schema.get("required", []):
        if name not in args:
            raise InvalidArgument(f"{tool.name}: missing required argument {name!r}")
    out: dict[str, Any] = {}
    for name, value in args.items():
        spec = props.get(name)
        if spec is None:
            raise InvalidArgument(f"{tool.name}: unknown argument {name!r}",
                                  hint=f"Accepted: {', '.join(props) or 'none'}.")
        out[name] = _check(tool.name, name, spec, value)
    for name, spec in props.items():
        if name not in out and "default" in spec:
            out[name] = spec["default"]
    return out


def _check(tool: str, name: str, spec: dict[str, Any], value: Any) -> Any:
    kind = spec.get("type")
    where = f"{tool}: argument {name!r}"
    if kind == "string":
        if not isinstance(value, str):
            raise InvalidArgument(f"{where} must be a string, got {type(value).__name__}")
        if "enum" in spec and value not in spec["enum"]:
            raise InvalidArgument(f"{where} must be one of {', '.join(spec['enum'])}, got {value!r}")
        if len(value) < spec.get("minLength", 0):
            raise InvalidArgument(f"{where} must not be empty")
        if len(value) > spec.get("maxLength", 1 << 30):
            raise InvalidArgument(f"{where} is too long ({len(value)} > {spec['maxLength']} characters)")
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise InvalidArgument(f"{where} must be true or false, got {value!r}")
        return value
    if kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidArgument(f"{where} must be a number, got {value!r}")
        if kind == "integer" and not float(value).is_integer():
            raise InvalidArgument(f"{where} must be a whole number, got {value!r}")
        lo, hi = spec.get("minimum"), spec.get("maximum")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise InvalidArgument(f"{where} must be between {lo} and {hi}, got {value!r}")
        return int(value) if kind == "integer" else float(value)
    return value


# --- bridge_status ---------------------------------------------------------------------------------------------------


async def bridge_status(deps: FrontDeps, mcp_ctx: Any, args: dict[str, Any]) -> ToolResult:
    from .actor import dumps, versions

    recent = await _recent_asks(deps)
    extras: dict[str, Any] = {}
    for extra in _STATUS_SOURCES:
        extras.update(await extra(deps))
    status: dict[str, Any] = {
        "versions": versions(),
        "stateDir": str(deps.config.state_dir),
        "logFile": str(deps.config.log_file),
        "pid": os.getpid(),
        "project": await deps.project_of(mcp_ctx),
        "actors": deps.runtime.tree(),  # taken last: the calls above may have changed it
        "recentAsks": recent,
        **extras,
    }
    return ToolResult(text=dumps(status), structured=status)


async def _recent_asks(deps: FrontDeps) -> list[dict[str, Any]]:
    records = await deps.ctx.ref("session_store").call(ReadHistory(limit=5), timeout=60)
    return [{k: r.get(k) for k in ("ts", "provider", "status", "url", "error")} for r in records]


async def _link_status(deps: FrontDeps) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, actor, msg in (("extension", "relay", LinkStatus()), ("browser", "browser", BrowserStatus())):
        try:
            out[key] = await deps.ctx.ref(actor).call(msg, timeout=5)
        except BridgeError as exc:
            out[key] = {"error": f"[{exc.code}] {exc}"}
    return out


# Each capability adds its part of the status here, keeping bridge_status one tool.
_STATUS_SOURCES: list[Callable[[FrontDeps], Awaitable[dict[str, Any]]]] = [_link_status]


# --- asking ----------------------------------------------------------------------------------------------------------

PROVIDERS = {"chatgpt": "ChatGPT", "gemini": "Gemini"}
MAX_QUESTION = 100_000
ATTEMPTS = 3  # the provider's own stuck retries (2) plus the first try


def _ask_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION,
                         "description": "The question, as you would type it into the chat. Include the context the "
                         "other model needs (code, error messages); it cannot see your files."},
            "new_chat": {"type": "boolean", "default": False,
                         "description": "Start a fresh conversation instead of continuing this project's one."},
            "timeout_s": {"type": "number", "minimum": 5, "maximum": 3600, "default": 480,
                          "description": "Give up waiting for the answer after this many seconds (default 480)."},
        },
        "required": ["question"],
        "additionalProperties": False,
    }


class _ProgressPump:
    """Actor progress (sync callback) → MCP progress notifications (async), throttled by the actor."""

    def __init__(self, mcp_ctx: Any) -> None:
        import trio

        self.mcp_ctx = mcp_ctx
        self.send, self.recv = trio.open_memory_channel[tuple[str, AskProgress]](256)
        self.step = 0

    def sink(self, provider: str) -> Callable[[Any], None]:
        import trio

        def put(item: Any) -> None:
            try:
                self.send.send_nowait((provider, item))
            except trio.WouldBlock:
                pass  # progress is advisory; never block an actor on a slow client

        return put

    async def run(self) -> None:
        async for provider, item in self.recv:
            self.step += 1
            title = PROVIDERS.get(provider, provider)
            if item.phase == "answering":
                tail = item.text[-300:].replace("\n", " ")
                msg = f"{title} is answering ({item.chars} chars): …{tail}"
            else:
                msg = f"{title}: {item.phase}"
            try:
                await self.mcp_ctx.session.report_progress(self.step, None, msg)
            except Exception:  # the client went away; the call itself will notice
                return


async def _ask_one(deps: FrontDeps, provider: str, args: dict[str, Any], project: str,
                   on_progress: Callable[[Any], None] | None) -> AskResult:
    import uuid

    question = args["question"].strip()
    if not question:
        raise InvalidArgument("question must not be blank")
    timeout_s = float(args.get("timeout_s", deps.config.response_timeout_s))
    msg = Ask(question, project, bool(args.get("new_chat", False)), timeout_s, uuid.uuid4().hex)
    result: AskResult = await deps.ctx.ref(provider).call(
        msg, timeout=ATTEMPTS * (timeout_s + 120), on_progress=on_progress)
    return result


def _structured(r: AskResult) -> dict[str, Any]:
    return {"provider": r.provider, "answer": r.answer, "url": r.url, "timings": r.timings, "retries": r.retries,
            "completion": {"reason": r.completion_reason, "detectedAtMs": r.detected_at_ms, "thinking": r.thinking}}


def ask_tool(provider: str) -> Handler:
    async def handler(deps: FrontDeps, mcp_ctx: Any, args: dict[str, Any]) -> ToolResult:
        import trio

        project = await deps.project_of(mcp_ctx)
        pump = _ProgressPump(mcp_ctx)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump.run)
            try:
                r = await _ask_one(deps, provider, args, project, pump.sink(provider))
            finally:
                nursery.cancel_scope.cancel()
        return ToolResult(text=r.answer, structured=_structured(r))

    return handler


async def ask_both(deps: FrontDeps, mcp_ctx: Any, args: dict[str, Any]) -> ToolResult:
    import trio

    project = await deps.project_of(mcp_ctx)
    pump = _ProgressPump(mcp_ctx)
    results: dict[str, AskResult | BridgeError] = {}

    async def one(provider: str) -> None:
        try:
            results[provider] = await _ask_one(deps, provider, args, project, pump.sink(provider))
        except BridgeError as exc:
            results[provider] = exc  # one failing still returns the other's answer

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pump.run)
        async with trio.open_nursery() as asks:
            for p in PROVIDERS:
                asks.start_soon(one, p)
        nursery.cancel_scope.cancel()
    parts, structured = [], {}
    for p, title in PROVIDERS.items():
        r = results[p]
        if isinstance(r, AskResult):
            parts.append(f"## {title}\n\n{r.answer}")
            structured[p] = _structured(r)
        else:
            parts.append(f"## {title}\n\n(failed) [{r.code}] {r}")
            structured[p] = {"error": {"code": r.code, "message": r.message, "hint": r.hint}}
    failed = all(isinstance(r, BridgeError) for r in results.values())
    return ToolResult(text="\n\n".join(parts), structured=structured, is_error=failed)


# --- inspection ---------------------------------------------------------------------------------------------------

_TARGET = {"type": "string", "enum": list(PROVIDERS), "description": "Which provider tab: chatgpt or gemini."}


async def take_cdp_snapshot(deps: FrontDeps, mcp_ctx: Any, args: dict[str, Any]) -> ToolResult:
    from .actor import dumps

    snap: dict[str, Any] = await deps.ctx.ref(args["target"]).call(
        Snapshot(screenshot=bool(args.get("screenshot", False)), project=await deps.project_of(mcp_ctx)), timeout=60)
    shot = snap.pop("screenshot", None)
    return ToolResult(text=dumps(snap), structured=snap, images=(shot,) if shot else ())


async def get_page_dom(deps: FrontDeps, mcp_ctx: Any, args: dict[str, Any]) -> ToolResult:
    got: dict[str, Any] = await deps.ctx.ref(args["target"]).call(
        GetDom(args.get("selector") or None, int(args.get("max_chars", 100_000)), await deps.project_of(mcp_ctx)),
        timeout=60)
    note = f"\n<!-- truncated at {got['chars']} characters -->" if got.get("truncated") else ""
    return ToolResult(text=got["html"] + note, structured={k: v for k, v in got.items() if k != "html"})


def build_table() -> dict[str, ToolDef]:
    defs = [
        ToolDef(
            "bridge_status",
            "Show ai-bridge's health: versions, state dir, the live actor tree (state, restarts, last error, "
            "queued requests) and the browser/extension link. Use it when an ask fails to see what is wrong.",
            {"type": "object", "properties": {}, "additionalProperties": False},
            bridge_status,
        ),
        ToolDef(
            "ask_chatgpt_gemini_web",
            "Ask ChatGPT and Gemini the same question at once through their web UIs (recommended for a second "
            "opinion, design reviews, debugging help). Returns both answers; if one fails you still get the other "
            "plus the error. Continues this project's conversations unless new_chat is true. Streams progress.",
            _ask_schema(), ask_both,
        ),
        ToolDef(
            "ask_chatgpt_web",
            "Ask ChatGPT through chatgpt.com in the user's browser (no API key). Use when you want ChatGPT "
            "specifically; for two opinions use ask_chatgpt_gemini_web. Continues this project's conversation "
            "unless new_chat is true. Long answers can take minutes; progress is streamed.",
            _ask_schema(), ask_tool("chatgpt"),
        ),
        ToolDef(
            "ask_gemini_web",
            "Ask Gemini through gemini.google.com in the user's browser (no API key). Use when you want Gemini "
            "specifically; for two opinions use ask_chatgpt_gemini_web. Continues this project's conversation "
            "unless new_chat is true. Progress is streamed.",
            _ask_schema(), ask_tool("gemini"),
        ),
        ToolDef(
            "take_cdp_snapshot",
            "Inspect the ChatGPT or Gemini tab ai-bridge uses: URL, title, ready state, visible text excerpt, "
            "accessibility summary, the watcher's view of the page, and optionally a screenshot. Use it when an "
            "ask fails to see what the page shows (login page, error banner, changed layout).",
            {"type": "object", "properties": {
                "target": _TARGET,
                "screenshot": {"type": "boolean", "default": False, "description": "Include a PNG screenshot."},
            }, "required": ["target"], "additionalProperties": False},
            take_cdp_snapshot,
        ),
        ToolDef(
            "get_page_dom",
            "Get the HTML of the ChatGPT or Gemini tab (or of the first element matching a CSS selector), with "
            "open shadow roots inlined as <template shadowrootmode=open>. Capped at max_chars.",
            {"type": "object", "properties": {
                "target": _TARGET,
                "selector": {"type": "string", "maxLength": 1000, "description": "CSS selector (searched in "
                             "shadow roots too). Default: the whole document."},
                "max_chars": {"type": "integer", "minimum": 1000, "maximum": 2_000_000, "default": 100_000},
            }, "required": ["target"], "additionalProperties": False},
            get_page_dom,
        ),
    ]
    return {d.name: d for d in defs}
