"""Every actor's protocol in one place: the closed set of frozen request classes each actor accepts, and the
values it replies with.

Actors import this module and `supervisor`, never each other. Each section is one actor's complete inbox.
"""

from __future__ import annotations

from typing import Any

import attrs

# --- session_store -----------------------------------------------------------------------------------------------


@attrs.frozen
class SessionEntry:
    url: str
    tab_id: int | None
    last_used: str  # ISO 8601, UTC


@attrs.frozen
class GetSession:
    project: str
    provider: str


@attrs.frozen
class SaveSession:
    project: str
    provider: str
    url: str
    tab_id: int | None


@attrs.frozen
class ForgetSession:
    project: str
    provider: str


@attrs.frozen
class AppendHistory:
    """One finished (or failed/cancelled) ask. `entry_id` makes the append idempotent under re-delivery."""

    entry_id: str
    record: dict[str, Any]


@attrs.frozen
class ReadHistory:
    limit: int = 20


SESSION_STORE = (GetSession, SaveSession, ForgetSession, AppendHistory, ReadHistory)
