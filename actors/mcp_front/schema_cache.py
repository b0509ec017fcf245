"""The tools' JSON Schemas, kept between server starts.

Building every tool's input and output schema from its pydantic models is most of what ``tools/list`` costs, and
every client lists the tools once per server start (the official clients before their first call, to check results
against ``outputSchema``). The schemas are a pure function of our source and of pydantic, so a file keyed by a
fingerprint of both holds them: a start whose code matches reads it (and builds only the models of the tools it
is then called with: `Args` and `Output` defer their build); any other start computes them and writes the file.

The file is a cache, never a source of truth: one that is missing, unreadable, not ours, of another shape or of
other code is ignored and rewritten, and failing to write it only costs the next start the same work.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pydantic

import supervisor

from .toolkit import Tool, seed_schemas

log = logging.getLogger("ai_bridge.mcp_front")

MAX_BYTES = 4 << 20  # the real file is about 100 kB
PREFIX = "tool-schemas-"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ai-bridge"


def fingerprint() -> str:
    """What the schemas depend on: every source file of our packages, pydantic's and Python's versions."""
    h = hashlib.sha256(f"{supervisor.__version__}|{pydantic.VERSION}|{sys.version_info[:3]}".encode())
    for package in ("actors", "supervisor"):
        root = Path(sys.modules[package].__file__ or "").parent
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0")
            h.update(path.read_bytes())
    return h.hexdigest()


def warm(tools: Mapping[str, Tool], cache_dir: Path) -> bool:
    """Give every tool its schemas, from the cache when it was written for this code (True), else computed and
    written for the next start (False)."""
    try:
        key = fingerprint()
    except OSError as exc:  # a source file that cannot be read: nothing to key the cache by
        log.debug("tool schema cache off: %s", exc)
        key = None
    path = cache_dir / f"{PREFIX}{key[:32]}.json" if key else None
    if path is not None:
        cached = _read(path, key or "", tools)
        if cached is not None:
            for name, tool in tools.items():
                seed_schemas(tool, cached[name]["input"], cached[name]["output"])
            return True
    schemas = {name: {"input": t.args.tool_schema(), "output": t.output_schema()} for name, t in tools.items()}
    if path is not None:
        _write(path, {"fingerprint": key, "tools": schemas})
    return False


def _read(path: Path, key: str, tools: Mapping[str, Tool]) -> dict[str, Any] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        # Only a regular file of ours that no one else may write: its schemas go to the client as ours.
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022 or st.st_size > MAX_BYTES:
            log.debug("tool schema cache %s ignored: not a private file of ours", path)
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = json.loads(f.read(MAX_BYTES + 1))
    except (OSError, ValueError) as exc:
        log.debug("tool schema cache %s unreadable: %s", path, exc)
        return None
    finally:
        os.close(fd)
    if not (isinstance(data, dict) and data.get("fingerprint") == key and isinstance(data.get("tools"), dict)):
        return None
    got: dict[str, Any] = data["tools"]
    if set(got) != set(tools) or not all(
            isinstance(s, dict) and isinstance(s.get("input"), dict)
            and (s.get("output") is None if tools[name].output is None else isinstance(s.get("output"), dict))
            for name, s in got.items()):
        log.debug("tool schema cache %s ignored: not this server's tools", path)
        return None
    return got


def _write(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)  # 0600; replaced whole, never half-written
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, separators=(",", ":"))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        for old in path.parent.glob(f"{PREFIX}*.json"):  # earlier versions' files
            if old != path:
                old.unlink(missing_ok=True)
    except OSError as exc:
        log.debug("tool schema cache not written to %s: %s", path, exc)
