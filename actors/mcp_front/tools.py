"""The MCP tool table: names, descriptions the agent reads, input schemas, validation and handlers.

Handlers talk to other actors only through `deps.ctx.ref(name).call(message)`.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs

from supervisor.errors import BridgeError, InvalidArgument

from ..messages import (
    Ask,
    AskProgress,
    AskResult,
    BrowserStatus,
    CancelJob,
    GetDom,
    GetJob,
    JobView,
    LinkStatus,
    ListJobs,
    ReadHistory,
    Snapshot,
    StartJob,
)

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


async def _jobs_status(deps: FrontDeps) -> dict[str, Any]:
    try:
        views: tuple[JobView, ...] = await deps.ctx.ref("jobs").call(ListJobs(limit=0), timeout=5)
    except BridgeError as exc:
        return {"jobs": {"error": f"[{exc.code}] {exc}"}}
    return {"jobs": {"running": [v.row() for v in views]}}


# Each capability adds its part of the status here, keeping bridge_status one tool.
_STATUS_SOURCES: list[Callable[[FrontDeps], Awaitable[dict[str, Any]]]] = [_link_status, _jobs_status]


# --- asking ----------------------------------------------------------------------------------------------------------

PROVIDERS = {"chatgpt": "ChatGPT", "gemini": "Gemini"}
MAX_QUESTION = 100_000


def _ask_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION,
                         "description": "The question, as you would type it into the chat. Include the context the "
                         "other model needs (code, error messages); it cannot see your files."},
            "new_chat": {"type": "boolean", "default": False,
                         "description": "Start a fresh conversation instead of continuing this project's one."},
            # No schema default: an absent timeout_s means the server's response_timeout_s setting.
            "timeout_s": {"type": "number", "minimum": 5, "maximum": 3600,
                          "description": "Give up waiting for the answer after this many seconds (default: the "
                          "server's response_timeout_s setting, 480)."},
            "background": {"type": "boolean", "default": False,
                           "description": "Return at once with a job_id instead of waiting; then call get_answer "
                           "(it can wait, and shows the partial answer meanwhile). Use it when your MCP client "
                           "times out long calls or you want to work while the answer forms."},
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


def _ask_message(deps: FrontDeps, args: dict[str, Any], project: str) -> Ask:
    import uuid

    question = args["question"].strip()
    if not question:
        raise InvalidArgument("question must not be blank")
    timeout_s = float(args.get("timeout_s", deps.config.response_timeout_s))
    return Ask(question, project, bool(args.get("new_chat", False)), timeout_s, uuid.uuid4().hex)


async def _ask_one(deps: FrontDeps, provider: str, args: dict[str, Any], project: str,
                   on_progress: Callable[[Any], None] | None) -> AskResult:
    msg = _ask_message(deps, args, project)
    result: AskResult = await deps.ctx.ref(provider).call(
        msg, timeout=msg.call_timeout_s, on_progress=on_progress)
    return result


async def _start_job(deps: FrontDeps, mcp_ctx: Any, tool: str, providers: tuple[str, ...],
                     args: dict[str, Any]) -> ToolResult:
    msg = _ask_message(deps, args, await deps.project_of(mcp_ctx))
    view: JobView = await deps.ctx.ref("jobs").call(StartJob(tool, providers, msg), timeout=10)
    text = (f"Started background job {view.job_id} ({', '.join(PROVIDERS[p] for p in providers)}). "
            f"Call get_answer with job_id {view.job_id!r} to wait for the answer (wait_s up to 600).")
    return ToolResult(text=text, structured={"jobId": view.job_id, "status": view.status})


def _structured(r: AskResult) -> dict[str, Any]:
    return {"provider": r.provider, "answer": r.answer, "url": r.url, "timings": r.timings, "retries": r.retries,
            "completion": {"reason": r.completion_reason, "detectedAtMs": r.detected_at_ms, "thinking": r.thinking}}


def ask_tool(provider: str) -> Handler:
    async def handler(deps: FrontDeps, mcp_ctx: Any, args: dict[str, Any]) -> ToolResult:
        import trio

        if args.get("background"):
            return await _start_job(deps, mcp_ctx, f"ask_{provider}_web", (provider,), args)
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

    if args.get("background"):
        return await _start_job(deps, mcp_ctx, "ask_chatgpt_gemini_web", tuple(PROVIDERS), args)
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
    return _both_result({p: r if isinstance(r, AskResult) else r.as_dict() for p, r in results.items()})


def _error_text(err: dict[str, str | None]) -> str:
    hint = f" {err['hint']}" if err.get("hint") else ""
    return f"[{err['code']}] {err['message']}{hint}"


def _both_result(results: dict[str, AskResult | dict[str, str | None]]) -> ToolResult:
    """Both providers' answers as one result; one failing still returns the other's answer."""
    parts, structured = [], {}
    for p, title in PROVIDERS.items():
        r = results[p]
        if isinstance(r, AskResult):
            parts.append(f"## {title}\n\n{r.answer}")
            structured[p] = _structured(r)
        else:
            parts.append(f"## {title}\n\n(failed) {_error_text(r)}")
            structured[p] = {"error": r}
    failed = all(not isinstance(r, AskResult) for r in results.values())
    return ToolResult(text="\n\n".join(parts), structured=structured, is_error=failed)


# --- background jobs -------------------------------------------------------------------------------------------------

MAX_WAIT_S = 600


def _job_structured(v: JobView) -> dict[str, Any]:
    out: dict[str, Any] = {**v.row(), "finishedAt": v.finished_at}
    if v.status == "running":
        out["partial"] = v.partial
    out["results"] = {p: _structured(r) for p, r in v.results.items()}
    out["errors"] = v.errors
    return out


def _job_result(v: JobView) -> ToolResult:
    structured = _job_structured(v)
    if v.status == "running":
        lines = [f"Job {v.job_id} is still running ({v.elapsed_s:.0f}s). Call get_answer again to keep waiting."]
        for p in v.providers:
            if p in v.results:
                lines.append(f"## {PROVIDERS[p]} (done)\n\n{v.results[p].answer}")
            elif p in v.errors:
                lines.append(f"## {PROVIDERS[p]} (failed) [{v.errors[p]['code']}] {v.errors[p]['message']}")
            else:
                text = v.partial.get(p, "")
                lines.append(f"## {PROVIDERS[p]} ({v.phase.get(p, 'queued')}, partial)\n\n{text}")
        return ToolResult(text="\n\n".join(lines), structured=structured)
    if len(v.providers) > 1:
        merged = _both_result({p: v.results.get(p) or v.errors.get(p) or {} for p in v.providers})
        return ToolResult(text=merged.text, structured=structured, is_error=merged.is_error)
    p = v.providers[0]
    if p in v.results:
        return ToolResult(text=v.results[p].answer, structured=structured)
    err = v.errors.get(p) or {"code": "bridge_error", "message": "the job ended without an answer", "hint": None}
    return ToolResult(text=_error_text(err), structured=structured, is_error=True)


async def get_answer(deps: FrontDeps, mcp_ctx: Any, args: dict[str, Any]) -> ToolResult:
    wait_s = float(args.get("wait_s", 30))
    view: JobView = await deps.ctx.ref("jobs").call(GetJob(args["job_id"], wait_s), timeout=wait_s + 10)
    return _job_result(view)


async def list_jobs(deps: FrontDeps, mcp_ctx: Any, args: dict[str, Any]) -> ToolResult:
    from .actor import dumps

    views: tuple[JobView, ...] = await deps.ctx.ref("jobs").call(ListJobs(int(args.get("limit", 20))), timeout=10)
    rows = [v.row() for v in views]
    text = dumps(rows) if rows else "No background jobs on this server yet."
    return ToolResult(text=text, structured={"jobs": rows})


async def cancel_job(deps: FrontDeps, mcp_ctx: Any, args: dict[str, Any]) -> ToolResult:
    view: JobView = await deps.ctx.ref("jobs").call(CancelJob(args["job_id"]), timeout=30)
    if view.status == "running":
        text = f"Job {view.job_id}: cancel requested, still stopping."
    else:
        text = f"Job {view.job_id} is {view.status}."
    return ToolResult(text=text, structured=_job_structured(view))


# --- inspection ---------------------------------------------------------------------------------------------------

_JOB_ID = {"type": "string", "minLength": 1, "maxLength": 64, "description": "The job id an ask with background: "
           "true returned."}
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
            "queued requests), the browser/extension link and running background jobs. Use it when an ask fails to "
            "see what is wrong.",
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
            "get_answer",
            "Get the result of a background ask (started with background: true). Waits up to wait_s seconds for "
            "it to finish, then returns the answer, or the partial answer so far with status running, or the "
            "typed error. Call it again to keep waiting.",
            {"type": "object", "properties": {
                "job_id": _JOB_ID,
                "wait_s": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_S, "default": 30,
                           "description": "How long to wait for the job to finish (0 = just look)."},
            }, "required": ["job_id"], "additionalProperties": False},
            get_answer,
        ),
        ToolDef(
            "list_jobs",
            "List this server's background asks: every running one and the most recent finished ones, with "
            "status and progress phase. Jobs end when the server stops.",
            {"type": "object", "properties": {
                "limit": {"type": "integer", "minimum": 0, "maximum": 100, "default": 20,
                          "description": "How many finished jobs to include."},
            }, "additionalProperties": False},
            list_jobs,
        ),
        ToolDef(
            "cancel_job",
            "Cancel a running background ask: clicks Stop in the ChatGPT/Gemini page and marks the job cancelled.",
            {"type": "object", "properties": {"job_id": _JOB_ID}, "required": ["job_id"],
             "additionalProperties": False},
            cancel_job,
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
