"""The MCP front actor: stdio MCP server whose tools forward to the other actors."""

from .actor import run

__all__ = ["run"]
