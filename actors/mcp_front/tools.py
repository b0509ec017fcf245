"""The MCP tool table: names, descriptions the agent reads, input schemas, validation and handlers.

Handlers talk to other actors only through `deps.ctx.ref(name).call(message)`.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs

from supervisor.errors import BridgeError, InvalidArgument

from ..messages import BrowserStatus, LinkStatus, ReadHistory

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

    status: dict[str, Any] = {
        "versions": versions(),
        "stateDir": str(deps.config.state_dir),
        "logFile": str(deps.config.log_file),
        "pid": os.getpid(),
        "project": await deps.project_of(mcp_ctx),
        "actors": deps.runtime.tree(),
        "recentAsks": await _recent_asks(deps),
    }
    for extra in _STATUS_SOURCES:
        status.update(await extra(deps))
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


def build_table() -> dict[str, ToolDef]:
    defs = [
        ToolDef(
            "bridge_status",
            "Show ai-bridge's health: versions, state dir, the live actor tree (state, restarts, last error, "
            "queued requests) and the browser/extension link. Use it when an ask fails to see what is wrong.",
            {"type": "object", "properties": {}, "additionalProperties": False},
            bridge_status,
        ),
    ]
    return {d.name: d for d in defs}
