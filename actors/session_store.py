"""Session-store actor: owns ``sessions.json`` and ``history.jsonl`` in the state dir (seed section 8).

- ``sessions.json`` is rewritten atomically (temp file + fsync + rename + fsync of the directory) under an
  exclusive ``flock`` on ``state.lock``, re-reading the file inside the lock so two ``serve`` processes sharing a
  state dir merge instead of overwriting each other.
- A ``sessions.json`` that cannot be parsed (garbage, wrong shape, nesting too deep, too large) is moved aside
  (``sessions.json.corrupt-<time>``) with a warning and rebuilt, so a bad file never stops a server from starting.
- ``history.jsonl`` lines are appended whole with one ``write`` under the same lock. A torn tail left by a crash
  of some earlier writer is cut back to the last newline first, and an entry id already in the tail is not
  written again, so re-delivery after a crash never doubles a line. Lines that do not parse are skipped on read.
  The line is written before the reply (a reader sees it at once) and fsynced right after it, off the ask's path.
- Files are 0600 and never opened through a symlink (`supervisor.files`).
- A state dir we cannot write means no sessions and no history: one warning, and asks still work.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import assert_never

import attrs
import trio

from supervisor.errors import InvalidArgument, StateFileError
from supervisor.files import ensure_private_dir, open_private, read_private, write_atomic
from supervisor.otp import ActorContext, Reply

from .protocol.common import JSON
from .protocol.session_store import MAX_PROJECT as MAX_NAME
from .protocol.session_store import (
    AppendHistory,
    ForgetSession,
    GetSession,
    HistoryRecord,
    ReadHistory,
    SaveSession,
    SessionEntry,
    SessionStoreRequest,
)

log = logging.getLogger("ai_bridge.session_store")

SESSIONS = "sessions.json"
HISTORY = "history.jsonl"
LOCK = "state.lock"
TAIL_BYTES = 256 * 1024  # how far back an entry id is looked for before appending
MAX_SESSIONS_BYTES = 16 * 1024 * 1024
MAX_HISTORY_READ = 64 * 1024 * 1024

Sessions = dict[str, dict[str, dict[str, JSON]]]  # project -> provider -> {url, tabId, lastUsed}


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_json(raw: bytes) -> JSON:
    """`json.loads` for untrusted bytes: too deep a nesting is a ValueError like any other bad input."""
    try:
        value: JSON = json.loads(raw)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    return value


class StateFiles:
    """Synchronous, lock-protected file operations; the actor runs them in a worker thread."""

    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir
        self.sessions_path = state_dir / SESSIONS
        self.history_path = state_dir / HISTORY
        self.lock_path = state_dir / LOCK

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        fd = open_private(self.lock_path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    # -- sessions.json ------------------------------------------------------------------------------------------------

    def _read_sessions(self) -> Sessions:
        try:
            raw = read_private(self.sessions_path, MAX_SESSIONS_BYTES)
            if raw is None:
                return {}
            data = parse_json(raw)
            if not isinstance(data, dict) or not isinstance(data.get("projects"), dict):
                raise ValueError("top level must be an object with a 'projects' object")
            projects = data["projects"]
            assert isinstance(projects, dict)
            out: Sessions = {}
            for name, providers in projects.items():
                if not isinstance(providers, dict):
                    raise ValueError(f"project {name!r} is not an object")
                out[name] = {p: e for p, e in providers.items() if isinstance(e, dict)}
            return out
        except (ValueError, UnicodeDecodeError, StateFileError) as exc:
            aside = self.sessions_path.with_name(f"{SESSIONS}.corrupt-{dt.datetime.now():%Y%m%d-%H%M%S-%f}")
            with contextlib.suppress(FileNotFoundError):
                os.replace(self.sessions_path, aside)
            log.warning("sessions.json could not be read (%s); moved it to %s and started a fresh one",
                        str(exc)[:200], aside.name)
            return {}

    def _write_sessions(self, sessions: Sessions) -> None:
        data = {"projects": sessions}
        write_atomic(self.sessions_path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())

    def clean_stale_temp_files(self) -> None:
        """Remove temp files of writers that died between write and rename (their pid is gone)."""
        for tmp in self.dir.glob(f".{SESSIONS}.*.tmp"):
            try:
                pid = int(tmp.name.split(".")[-2])
                os.kill(pid, 0)
            except ProcessLookupError:
                tmp.unlink(missing_ok=True)
            except (ValueError, PermissionError, IndexError):
                continue

    def get(self, project: str, provider: str) -> SessionEntry | None:
        with self.locked():
            data = self._read_sessions()
        entry = data.get(project, {}).get(provider)
        if entry is None or not isinstance(entry.get("url"), str):
            return None
        url, tab, used = entry.get("url"), entry.get("tabId"), entry.get("lastUsed", "")
        assert isinstance(url, str)
        return SessionEntry(url=url, tab_id=tab if isinstance(tab, int) and not isinstance(tab, bool) else None,
                            last_used=str(used))

    def save(self, project: str, provider: str, url: str, tab_id: int | None) -> None:
        with self.locked():
            data = self._read_sessions()
            data.setdefault(project, {})[provider] = {"url": url, "tabId": tab_id, "lastUsed": now_iso()}
            self._write_sessions(data)

    def forget(self, project: str, provider: str) -> None:
        with self.locked():
            data = self._read_sessions()
            if data.get(project, {}).pop(provider, None) is not None:
                self._write_sessions(data)

    # -- history.jsonl ------------------------------------------------------------------------------------------------

    def append(self, entry_id: str, record: HistoryRecord, *, sync: bool = True) -> bool:
        line = json.dumps({**record.as_json(), "id": entry_id}, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = line.encode("utf-8")
        with self.locked():
            fd = open_private(self.history_path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
            try:
                size = os.fstat(fd).st_size
                start = max(0, size - TAIL_BYTES)
                tail = os.pread(fd, size - start, start) if size else b""
                if tail and not tail.endswith(b"\n"):
                    # A writer died mid-line (a kill -9 can end a write between pages; a full disk): drop the torn
                    # fragment, wherever it starts (it may be longer than the tail read here: then look further back).
                    nl = tail.rfind(b"\n")
                    if nl >= 0:
                        cut, tail = start + nl + 1, tail[: nl + 1]
                    else:  # the records before it are outside the tail: read theirs for the re-delivery check
                        cut = _line_start(fd, start)
                        before = max(0, cut - TAIL_BYTES)
                        tail = os.pread(fd, cut - before, before)
                    os.ftruncate(fd, cut)
                    log.warning("history.jsonl had a torn last line; cut %d bytes", size - cut)
                if f'"id":{json.dumps(entry_id)}'.encode() in tail:
                    return False  # already written (re-delivered request)
                written = os.write(fd, data)
                if written != len(data):
                    os.ftruncate(fd, os.fstat(fd).st_size - written)
                    raise StateFileError(f"short write to {self.history_path} (disk full?)")
                if sync:
                    os.fsync(fd)
                return True
            finally:
                os.close(fd)

    def sync_history(self) -> None:
        """fsync history.jsonl (what `append(sync=False)` wrote is readable at once; this makes it durable)."""
        try:
            fd = open_private(self.history_path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def read_history(self, limit: int) -> tuple[HistoryRecord, ...]:
        fd = None
        try:
            fd = open_private(self.history_path, os.O_RDONLY)
            size = os.fstat(fd).st_size
            start = max(0, size - MAX_HISTORY_READ)
            raw = os.pread(fd, size - start, start)
        except FileNotFoundError:
            return ()
        finally:
            if fd is not None:
                os.close(fd)
        out: list[HistoryRecord] = []
        for line in reversed(raw.splitlines()):
            record = parse_record(line)
            if record is not None:
                out.append(record)
            if len(out) >= limit:
                break
        return tuple(reversed(out))


def _line_start(fd: int, end: int) -> int:
    """Where the last line before `end` starts: just after the newline before it, or 0."""
    pos = end
    while pos > 0:
        start = max(0, pos - TAIL_BYTES)
        nl = os.pread(fd, pos - start, start).rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        pos = start
    return 0


def parse_record(line: bytes) -> HistoryRecord | None:
    """One history line as a record, or None for a line that is not one (garbage, older shapes, too deep)."""
    try:
        rec = parse_json(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(rec, dict):
        return None

    def text(key: str) -> str | None:
        v = rec.get(key)
        return v if isinstance(v, str) else None

    timings = rec.get("timings")
    retries = rec.get("retries")
    warnings = rec.get("warnings")
    return HistoryRecord(
        ts=text("ts") or "", project=text("project") or "", provider=text("provider") or "",
        question=text("question") or "", status=text("status") or "", answer=text("answer"), url=text("url"),
        timings={k: v for k, v in timings.items() if isinstance(v, int)} if isinstance(timings, dict) else None,
        retries=retries if isinstance(retries, int) and not isinstance(retries, bool) else None,
        error=text("error"),
        warnings=tuple(w for w in warnings if isinstance(w, str)) if isinstance(warnings, list) else (),
        entry_id=text("id"),
    )


def _check_name(value: str, what: str) -> str:
    if not value or len(value) > MAX_NAME or "\x00" in value:
        raise InvalidArgument(f"{what} must be a non-empty string of at most {MAX_NAME} characters")
    return value


def redact(record: HistoryRecord) -> HistoryRecord:
    """The record without the question's and the answer's text (``private_text``): their sizes stay."""
    answer = None if record.answer is None else f"[{len(record.answer)} characters, not kept]"
    return attrs.evolve(record, question=f"[{len(record.question)} characters, not kept]", answer=answer)


@attrs.define
class Store:
    """The actor's state: the files, or None once the state dir turned out unwritable (no sessions, no history)."""

    files: StateFiles | None
    warned: bool = False

    def disable(self, why: str) -> None:
        self.files = None
        if not self.warned:
            self.warned = True
            log.warning("no sessions or history will be kept: %s", why)


async def run(
    ctx: ActorContext[SessionStoreRequest], *, state_dir: Path, private_text: bool = False,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    files = StateFiles(state_dir)
    store = Store(files)
    try:
        await trio.to_thread.run_sync(ensure_private_dir, state_dir)
        await trio.to_thread.run_sync(files.clean_stale_temp_files)
        if not os.access(state_dir, os.W_OK | os.X_OK):
            raise StateFileError(f"state dir {state_dir} is not writable")
    except (OSError, StateFileError) as exc:
        store.disable(f"{exc} (pass --state-dir or set AI_BRIDGE_STATE_DIR to a writable folder)")
    task_status.started()

    unsynced = [False]  # history written and not yet fsynced

    async def handle(msg: SessionStoreRequest) -> Reply[object]:
        files = store.files
        try:
            match msg:
                case GetSession():
                    _check_name(msg.project, "project")
                    if files is None:
                        return msg.reply(None)
                    return msg.reply(await trio.to_thread.run_sync(files.get, msg.project, msg.provider.value))
                case SaveSession():
                    _check_name(msg.project, "project")
                    if files is not None:
                        await trio.to_thread.run_sync(files.save, msg.project, msg.provider.value, msg.url,
                                                      msg.tab_id)
                    return msg.reply(None)
                case ForgetSession():
                    if files is not None:
                        await trio.to_thread.run_sync(files.forget, msg.project, msg.provider.value)
                    return msg.reply(None)
                case AppendHistory():
                    if files is None:
                        return msg.reply(False)
                    record = redact(msg.record) if private_text else msg.record
                    # Written (so a reader sees it) before the reply; made durable right after it (below): an ask's
                    # answer does not wait on the disk (an fsync can take 10 ms on a busy one).
                    unsynced[0] = True
                    return msg.reply(await trio.to_thread.run_sync(
                        functools.partial(files.append, msg.entry_id, record, sync=False)))
                case ReadHistory():
                    if files is None:
                        return msg.reply(())
                    limit = max(1, min(msg.limit, 1000))
                    return msg.reply(await trio.to_thread.run_sync(files.read_history, limit))
                case _:
                    assert_never(msg)
        except PermissionError as exc:
            store.disable(f"{exc}")
            raise StateFileError(f"state file error in {state_dir}: {exc}",
                                 hint="Sessions and history are off until the state dir is writable.") from exc
        except OSError as exc:
            raise StateFileError(f"state file error in {state_dir}: {exc}") from exc

    async for env in ctx.messages():
        await ctx.answer(env, handle)
        if unsynced[0] and store.files is not None:
            unsynced[0] = False
            try:
                await trio.to_thread.run_sync(store.files.sync_history)
            except OSError as exc:
                log.warning("could not fsync the history: %s", exc)
