"""What tool handlers get: peers by address, the config, the live system, and the MCP call they serve.

`ToolCall` is the only place tool code meets the SDK's request context: progress notifications and the
project the call belongs to."""

from __future__ import annotations

import json
import platform
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

import supervisor
from supervisor.config import Config
from supervisor.otp import ActorContext, ActorSystem, Message
from supervisor.safetext import encodable


@attrs.define(eq=False)
class ToolCall:
    """One tools/call: reports progress to the client and names the project it is for."""

    sdk_context: Any = attrs.field(repr=False)  # the SDK's request context (its types change between releases)
    project_of: Callable[[Any, str | None], Awaitable[str]] = attrs.field(repr=False)
    step: int = 0

    async def project(self, explicit: str | None = None) -> str:
        return await self.project_of(self.sdk_context, explicit)

    async def progress(self, message: str) -> bool:
        """Send a progress notification (a no-op when the client asked for none). False once the client is gone."""
        self.step += 1
        try:
            await self.sdk_context.session.report_progress(self.step, None, encodable(message))
        except Exception:  # the client went away; the call itself will notice
            return False
        return True


@attrs.frozen
class FrontDeps:
    ctx: ActorContext[Message]
    config: Config
    system: ActorSystem


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"aiBridge": supervisor.__version__, "python": platform.python_version()}
    for dist in ("mcp", "trio", "trio-websocket", "hypercorn"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "?"
    return out


def dumps(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
