"""MCP icons (SEP-973, in the 2025-11-25 and 2026-07-28 specifications) for the server and its tools, as data URIs:
a client shows them without fetching anything, and they work offline. The files are supervisor/icons/ (the plugin's
icon is the same drawing at 512 px).

Every icon in tools/list is paid for in every session's context (see docs/benchmarks.md), so a tool's icon is its bare
``src``: a small SVG as a plain-text data URI (~330 bytes; base64 and the optional keys would add a third). The
server's icons (sent once) are a PNG, which every client that shows icons must support, and the SVG."""

from __future__ import annotations

import base64
import functools
from typing import Any

from supervisor.paths import icons_dir


def _data_uri(name: str, mime: str) -> str:
    return f"data:{mime};base64," + base64.b64encode((icons_dir() / name).read_bytes()).decode("ascii")


@functools.cache
def server_icons() -> tuple[dict[str, Any], ...]:
    """The server's icons in wire form (serverInfo.icons)."""
    return ({"src": _data_uri("ai-bridge-48.png", "image/png"), "mimeType": "image/png", "sizes": ["48x48"]},
            {"src": _data_uri("ai-bridge.svg", "image/svg+xml"), "mimeType": "image/svg+xml", "sizes": ["any"]})


def _svg_text_uri(name: str) -> str:
    # RFC 2397 with the SVG as text: only '#' needs escaping here (the files use no '%'); single quotes need no
    # escaping in JSON, where double quotes would each cost a backslash.
    svg = (icons_dir() / name).read_text(encoding="utf-8").strip()
    return "data:image/svg+xml," + svg.replace("%", "%25").replace("#", "%23").replace('"', "'")


@functools.cache
def tool_icon(family: str | None) -> dict[str, Any]:
    """A tool's icon in wire form: the browser tools' own, else ai-bridge's."""
    return {"src": _svg_text_uri("browser.svg" if family == "browser" else "ai-bridge.svg")}
