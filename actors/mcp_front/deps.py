"""What tool handlers get: peers by address, the config, the live system, and the MCP call they serve.

`ToolCall` is the only place tool code meets the SDK's request context: progress notifications and the
project the call belongs to."""

from __future__ import annotations

import json
import logging
import platform
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

import supervisor
from supervisor.config import Config
from supervisor.otp import ActorContext, ActorSystem, Message
from supervisor.safetext import encodable


def client_connection(sdk_context: Any) -> Any:
    """What stays the same across one client's requests, for what is kept per client (its root, its tasks, its
    turn): the SDK's per-client connection. The SDK (2.x) makes a `ServerSession` per request over it, and keeps it
    private; without it (another SDK release), the session itself."""
    session = getattr(sdk_context, "session", None)
    return getattr(session, "_connection", None) or session


@attrs.define(eq=False)
class ToolCall:
    """One tools/call: reports progress to the client and names the project it is for."""

    sdk_context: Any = attrs.field(repr=False)  # the SDK's request context (its types change between releases)
    project_of: Callable[[Any, str | None], Awaitable[str]] = attrs.field(repr=False)
    step: int = 0

    async def project(self, explicit: str | None = None) -> str:
        return await self.project_of(self.sdk_context, explicit)

    def client(self) -> str:
        """Who asks, for the turns waiting asks take (issue 38): the MCP client as it names itself (2025-era
        `initialize`, or a 2026-07-28 request's own client info), and its session: over HTTP two agents of one
        kind (two Claude Code windows) are two clients and take turns."""
        session = getattr(self.sdk_context, "session", None)
        info = getattr(getattr(session, "client_params", None), "client_info", None)
        name, version = getattr(info, "name", None), getattr(info, "version", None)
        who = f"mcp:{name}/{version}"[:200] if isinstance(name, str) and name else "mcp"
        connection = self.session()
        return who if connection is None else f"{who}#{id(connection):x}"

    def session(self) -> Any:
        """The client connection of this call (None without one): what its tasks belong to."""
        return client_connection(self.sdk_context)


    async def progress(self, message: str) -> bool:
        """Send a progress notification (a no-op when the client asked for none). False once the client is gone."""
        self.step += 1
        try:
            await self.sdk_context.session.report_progress(self.step, None, encodable(message))
        except Exception:  # the client went away; the call itself will notice
            return False
        return True


    async def elicit(self, message: str, *, url: str | None = None) -> bool | None:
        """Ask the user through the client (MCP elicitation): accept or decline a plain form, or, with `url`, open
        that page and say when done (URL mode). True: accepted; False: declined or dismissed; None: this client
        cannot be asked (no elicitation of that mode declared, a 2026-07-28 session, which has no server-to-client
        requests, or the request failed), and the caller goes on as it would without elicitation."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        session = self.sdk_context.session
        caps = session.client_capabilities
        can = caps.elicitation if caps is not None else None
        if can is None or session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None
        related = getattr(self.sdk_context, "request_id", None)
        try:
            if url is not None:
                if can.url is None:
                    return None
                got = await session.elicit_url(message, url, uuid.uuid4().hex, related_request_id=related)
            else:
                if can.form is None and can.url is not None:  # an empty capability means form (2025-06-18)
                    return None
                got = await session.elicit_form(message, {"type": "object", "properties": {}},
                                                related_request_id=related)
        except Exception as exc:  # a client that declared elicitation but fails it: go on without
            log.info("elicitation failed (%s): going on without it", exc)
            return None
        return bool(got.action == "accept")


log = logging.getLogger("ai_bridge.mcp_front")


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
