"""console and mcp_front take no requests: they are doors into the system, not services inside it."""

from __future__ import annotations

from supervisor.otp import Address, Message

CONSOLE = Address[Message]("console", ())
MCP_FRONT = Address[Message]("mcp_front", ())
