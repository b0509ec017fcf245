"""Where bundled files live."""

from __future__ import annotations

from pathlib import Path


def server_records(state_dir: Path) -> Path:
    """Where each running server registers itself (``<pid>.json``) for ``ai-bridge console`` to find it."""
    return state_dir / "servers"


def extension_path() -> Path:
    """The unpacked extension: packaged into the wheel as supervisor/_extension, or the repo's extension/."""
    packaged = Path(__file__).parent / "_extension"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "extension"


def icons_dir() -> Path:
    """The server's icons (MCP icons of the server and its tools), inside the package."""
    return Path(__file__).parent / "icons"
def fakesites_path() -> Path:
    """The imitations of chatgpt.com and gemini.google.com (`ai-bridge demo`): packaged into the wheel as
    supervisor/_fakesites, or the repo's tests/fakesites, whose copy it is."""
    packaged = Path(__file__).parent / "_fakesites"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "tests" / "fakesites"
