"""Logging: stderr plus a log file in the state dir. stdout belongs to MCP JSON-RPC and is never written here."""

from __future__ import annotations

import logging
import logging.handlers
import sys
from pathlib import Path

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


def setup(level: str, log_file: Path | None, *, verbose: int = 0) -> None:
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    lvl = logging.DEBUG if verbose else getattr(logging, level.upper(), logging.INFO)
    root.setLevel(lvl)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(stderr)
    if log_file is not None:
        try:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            fh = logging.handlers.RotatingFileHandler(log_file, maxBytes=5_000_000, backupCount=3, encoding="utf-8")
        except OSError as exc:
            logging.getLogger("ai_bridge").warning("cannot open log file %s: %s", log_file, exc)
        else:
            fh.setFormatter(logging.Formatter(FORMAT))
            root.addHandler(fh)
    # Third-party chatter stays out of the way unless asked for.
    for noisy in ("hypercorn", "hypercorn.access", "hypercorn.error", "trio-websocket", "mcp", "httpx", "quart"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if verbose > 1 else logging.WARNING)
