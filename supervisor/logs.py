"""Logging: stderr plus a log file in the state dir. stdout belongs to MCP JSON-RPC and is never written here.

The log holds conversation URLs and project paths: it is created 0600 and never opened through a symlink."""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
from pathlib import Path

from .errors import StateFileError
from .files import open_private

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """RotatingFileHandler whose file is 0600 and never a symlink (its rotations are renames inside the dir)."""

    def _open(self):  # type: ignore[no-untyped-def]  # the stdlib's untyped hook
        fd = open_private(Path(self.baseFilename), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        return os.fdopen(fd, "a", encoding=self.encoding or "utf-8", errors=self.errors)


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
            fh = PrivateRotatingFileHandler(log_file, maxBytes=5_000_000, backupCount=3, encoding="utf-8")
        except (OSError, StateFileError) as exc:
            logging.getLogger("ai_bridge").warning("cannot open log file %s: %s; logging to stderr only", log_file,
                                                   exc)
        else:
            fh.setFormatter(logging.Formatter(FORMAT))
            root.addHandler(fh)
    # Third-party chatter stays out of the way unless asked for.
    for noisy in ("hypercorn", "hypercorn.access", "hypercorn.error", "trio-websocket", "mcp", "httpx", "quart"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if verbose > 1 else logging.WARNING)
