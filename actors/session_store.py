"""Session-store actor: owns ``sessions.json`` and ``history.jsonl`` in the state dir (seed section 8).

- ``sessions.json`` is rewritten atomically (temp file + fsync + rename + fsync of the directory) under an
  exclusive ``flock`` on ``state.lock``, re-reading the file inside the lock so two ``serve`` processes sharing a
  state dir merge instead of overwriting each other.
- A corrupt ``sessions.json`` is moved aside (``sessions.json.corrupt-<time>``) with a warning and rebuilt.
- ``history.jsonl`` lines are appended whole with one ``write`` under the same lock. A torn tail left by a crash
  of some earlier writer is cut back to the last newline first, and an entry id already in the tail is not
  written again, so re-delivery after a crash never doubles a line.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import trio

from supervisor.errors import InvalidArgument, StateFileError
from supervisor.runtime import ActorContext, Envelope

from .messages import AppendHistory, ForgetSession, GetSession, ReadHistory, SaveSession, SessionEntry

log = logging.getLogger("ai_bridge.session_store")

SESSIONS = "sessions.json"
HISTORY = "history.jsonl"
LOCK = "state.lock"
TAIL_BYTES = 256 * 1024  # how far back an entry id is looked for before appending


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class StateFiles:
    """Synchronous, lock-protected file operations; the actor runs them in a worker thread."""

    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir
        self.sessions_path = state_dir / SESSIONS
        self.history_path = state_dir / HISTORY
        self.lock_path = state_dir / LOCK

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    # -- sessions.json ------------------------------------------------------------------------------------------------

    def _read_sessions(self) -> dict[str, Any]:
        try:
            raw = self.sessions_path.read_bytes()
        except FileNotFoundError:
            return {"projects": {}}
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or not isinstance(data.get("projects"), dict):
                raise ValueError("top level must be an object with a 'projects' object")
            for name, providers in data["projects"].items():
                if not isinstance(providers, dict):
                    raise ValueError(f"project {name!r} is not an object")
            return data
        except (ValueError, UnicodeDecodeError) as exc:
            aside = self.sessions_path.with_name(f"{SESSIONS}.corrupt-{dt.datetime.now():%Y%m%d-%H%M%S-%f}")
            os.replace(self.sessions_path, aside)
            log.warning("sessions.json was corrupt (%s); moved it to %s and started a fresh one", exc, aside.name)
            return {"projects": {}}

    def _write_atomic(self, path: Path, data: bytes) -> None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        dfd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(dfd)  # the rename itself must survive a crash
        finally:
            os.close(dfd)

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
        entry = data["projects"].get(project, {}).get(provider)
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            return None
        tab = entry.get("tabId")
        return SessionEntry(url=entry["url"], tab_id=tab if isinstance(tab, int) else None,
                            last_used=str(entry.get("lastUsed", "")))

    def save(self, project: str, provider: str, url: str, tab_id: int | None) -> None:
        with self.locked():
            data = self._read_sessions()
            data["projects"].setdefault(project, {})[provider] = {"url": url, "tabId": tab_id, "lastUsed": now_iso()}
            self._write_atomic(self.sessions_path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())

    def forget(self, project: str, provider: str) -> None:
        with self.locked():
            data = self._read_sessions()
            if data["projects"].get(project, {}).pop(provider, None) is not None:
                self._write_atomic(self.sessions_path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())

    # -- history.jsonl ------------------------------------------------------------------------------------------------

    def append(self, entry_id: str, record: dict[str, Any]) -> bool:
        line = json.dumps({**record, "id": entry_id}, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = line.encode("utf-8")
        with self.locked():
            fd = os.open(self.history_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                size = os.fstat(fd).st_size
                start = max(0, size - TAIL_BYTES)
                tail = os.pread(fd, size - start, start) if size else b""
                if tail and not tail.endswith(b"\n"):
                    # A writer died mid-line (kill -9 of an older version, full disk): drop the torn fragment.
                    cut = start + tail.rfind(b"\n") + 1
                    os.ftruncate(fd, cut)
                    log.warning("history.jsonl had a torn last line; cut %d bytes", size - cut)
                    tail = tail[: cut - start]
                if f'"id":"{entry_id}"'.encode() in tail:
                    return False  # already written (re-delivered request)
                written = os.write(fd, data)
                if written != len(data):
                    os.ftruncate(fd, os.fstat(fd).st_size - written)
                    raise StateFileError(f"short write to {self.history_path} (disk full?)")
                os.fsync(fd)
                return True
            finally:
                os.close(fd)

    def read_history(self, limit: int) -> list[dict[str, Any]]:
        try:
            lines = self.history_path.read_bytes().splitlines()
        except FileNotFoundError:
            return []
        out: list[dict[str, Any]] = []
        for raw in reversed(lines):
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if isinstance(rec, dict):
                out.append(rec)
            if len(out) >= limit:
                break
        return list(reversed(out))


def _check_name(value: str, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 512:
        raise InvalidArgument(f"{what} must be a non-empty string of at most 512 characters")
    return value


async def run(
    ctx: ActorContext, *, state_dir: Path, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    files = StateFiles(state_dir)
    try:
        await trio.to_thread.run_sync(lambda: state_dir.mkdir(parents=True, exist_ok=True))
        await trio.to_thread.run_sync(files.clean_stale_temp_files)
    except OSError as exc:
        raise StateFileError(f"cannot create state dir {state_dir}: {exc}",
                             hint="Pass --state-dir or set AI_BRIDGE_STATE_DIR to a writable folder.") from exc
    task_status.started()

    async def handle(env: Envelope[Any]) -> Any:
        msg = env.message
        try:
            if isinstance(msg, GetSession):
                return await trio.to_thread.run_sync(files.get, _check_name(msg.project, "project"), msg.provider)
            if isinstance(msg, SaveSession):
                _check_name(msg.project, "project")
                return await trio.to_thread.run_sync(files.save, msg.project, msg.provider, msg.url, msg.tab_id)
            if isinstance(msg, ForgetSession):
                return await trio.to_thread.run_sync(files.forget, msg.project, msg.provider)
            if isinstance(msg, AppendHistory):
                return await trio.to_thread.run_sync(files.append, msg.entry_id, msg.record)
            if isinstance(msg, ReadHistory):
                return await trio.to_thread.run_sync(files.read_history, max(1, min(msg.limit, 1000)))
        except OSError as exc:
            raise StateFileError(f"state file error in {state_dir}: {exc}") from exc
        raise InvalidArgument(f"session_store does not accept {type(msg).__name__}")

    async for env in ctx.messages():
        await ctx.handle(env, handle)
