"""When the user's own Chrome was last seen, kept in the state dir: auto mode waits out its extension's alarm on the
first ask when it was seen lately, instead of launching a browser that is not logged in."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from supervisor import files
from supervisor.errors import BridgeError

log = logging.getLogger("ai_bridge.browser")

# Auto mode: the user's Chrome (an extension connection from a browser we neither launched nor attached to) seen within
# this many days makes the first ask wait out its extension's alarm before launching a browser that is not logged in.
USERS_CHROME_RECENT_DAYS = 14
USERS_CHROME_FILE = "users-chrome.json"  # in the state dir: {"lastSeen": <unix time>}


def read_users_chrome(state_dir: Path) -> float | None:
    """When the user's Chrome was last seen (unix time), from the state dir; None when unknown or not believable."""
    try:
        raw = files.read_private(state_dir / USERS_CHROME_FILE, 4096)
        data = json.loads(raw) if raw is not None else None
    except (OSError, ValueError, BridgeError):
        return None
    seen = data.get("lastSeen") if isinstance(data, dict) else None
    if not isinstance(seen, int | float) or isinstance(seen, bool) or not 0 < seen <= time.time() + 86400:
        return None
    return float(seen)


def write_users_chrome(state_dir: Path, seen: float) -> None:
    try:
        files.ensure_private_dir(state_dir)
        files.write_atomic(state_dir / USERS_CHROME_FILE, json.dumps({"lastSeen": round(seen, 3)}).encode())
    except (OSError, BridgeError) as exc:
        log.info("could not record when your Chrome was seen: %s", exc)
