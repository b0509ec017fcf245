"""The general browser tools: tabs, navigation, interaction and reading on tabs of this server's own, behind safe
mode and a default-deny domain policy (docs/tools.md, docs/security.md)."""

from .actor import run
from .policy import Policy
from .tab import ToolsBook

__all__ = ["Policy", "ToolsBook", "run"]
