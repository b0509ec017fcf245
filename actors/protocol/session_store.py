"""session_store: ``sessions.json`` (per-project conversation URL and tab) and ``history.jsonl`` (every ask)."""

from __future__ import annotations

import enum

import attrs

from supervisor.otp import Address, Request

from .common import ProviderName

MAX_PROJECT = 512  # characters of a project name


@attrs.frozen
class SessionEntry:
    url: str
    tab_id: int | None
    last_used: str  # ISO 8601, UTC


class AskStatus(enum.StrEnum):
    OK = "ok"
    FAILED = "failed"
    STUCK = "stuck"
    RATE_LIMITED = "rate_limited"
    CANCELLED = "cancelled"


@attrs.frozen
class HistoryRecord:
    """One line of history.jsonl: a finished, failed or cancelled ask."""

    ts: str
    project: str
    provider: str
    question: str
    status: str  # an AskStatus value (older lines may carry others)
    answer: str | None = None
    url: str | None = None
    timings: dict[str, int] | None = None
    retries: int | None = None
    error: str | None = None
    warnings: tuple[str, ...] = ()
    entry_id: str | None = None  # the line's id, as read back (AppendHistory's entry_id)

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"ts": self.ts, "project": self.project, "provider": self.provider,
                                  "question": self.question, "status": self.status}
        for key, value in (("answer", self.answer), ("url", self.url), ("timings", self.timings),
                           ("retries", self.retries), ("error", self.error)):
            if value is not None:
                out[key] = value
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


@attrs.frozen
class GetSession(Request[SessionEntry | None]):
    project: str
    provider: ProviderName


@attrs.frozen
class SaveSession(Request[None]):
    project: str
    provider: ProviderName
    url: str
    tab_id: int | None


@attrs.frozen
class ForgetSession(Request[None]):
    project: str
    provider: ProviderName


@attrs.frozen
class AppendHistory(Request[bool]):
    """One finished (or failed/cancelled) ask. `entry_id` makes the append idempotent under re-delivery. → whether
    the line was written (False: already there)."""

    entry_id: str
    record: HistoryRecord


@attrs.frozen
class ReadHistory(Request[tuple[HistoryRecord, ...]]):
    """→ the last `limit` records, oldest first (lines that do not parse are skipped)."""

    limit: int = 20


SessionStoreRequest = GetSession | SaveSession | ForgetSession | AppendHistory | ReadHistory
SESSION_STORE = Address[SessionStoreRequest]("session_store", SessionStoreRequest)
