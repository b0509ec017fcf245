"""Job records: one file per background job, ``<state-dir>/jobs/<job_id>.json``, so that a job outlives the server.

The jobs actor writes a job's record as it changes (its asks' phases, conversation URLs, partial answers, results
and errors); the next server reads them back (`JobFiles.load`), and ``ai-bridge jobs`` reads them with no server.

- A record is written atomically (temp file, fsync, rename, fsync of the folder), 0600, never through a link
  (`supervisor.files`). The folder is 0700.
- A record is validated field by field when it is read back (`parse`). One that does not parse — torn, garbage,
  the wrong shape, too large — is renamed ``<name>.bad`` with a log line and never stops anything.
- Records older than the retention (``jobs_keep_days``, by their last change) are deleted, ``.bad`` ones too.
- The question is kept as its digest (`question_digest`), never as text: enough to recognise it in the
  conversation when a job is reattached.
- A running job names its owner, the server process running it (pid and start time): a record whose owner is gone
  is claimed, under an exclusive ``flock``, by the one server that reattaches it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import logging
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from supervisor.errors import ErrorInfo, StateFileError
from supervisor.files import ensure_private_dir, open_private, open_state_folder, read_private, set_aside, write_atomic
from supervisor.safetext import shown_name

from .protocol.common import ProviderName
from .protocol.jobs import JobPhase, JobStatus, TaskRef
from .protocol.provider import AskPhase, AskResult, AskTimings, AskWarning, Choice, SavedFile

log = logging.getLogger("ai_bridge.jobs")

FOLDER = "jobs"
LOCK = ".lock"
VERSION = 1
MAX_RECORD_BYTES = 16 * 1024 * 1024
JOB_ID = re.compile(r"job-[A-Za-z0-9_-]{1,60}")
DIGEST = re.compile(r"\d{1,4}:[0-9a-f]{64}")
MAX_TEXT = 8 * 1024 * 1024  # characters of one answer, partial or error text


def now_utc() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def iso(t: dt.datetime) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@attrs.define
class AskRecord:
    """One provider's part of a job, as recorded."""

    phase: AskPhase | JobPhase = JobPhase.QUEUED
    url: str | None = None
    partial: str = ""
    result: AskResult | None = None
    error: ErrorInfo | None = None


@attrs.define
class JobRecord:
    job_id: str
    tool: str
    providers: tuple[ProviderName, ...]
    project: str
    digest: str  # protocol.provider.question_digest of the question
    new_chat: bool
    timeout_s: float
    created: dt.datetime
    updated: dt.datetime
    status: JobStatus
    finished: dt.datetime | None = None
    owner: str | None = None  # "<pid>:<start time>" of the server running it (running jobs)
    asks: dict[ProviderName, AskRecord] = attrs.field(factory=dict)
    task: TaskRef | None = None
    save_to: str = ""  # where the answers' images and files go (issue 35)

    def as_json(self) -> dict[str, Any]:
        return {
            "version": VERSION, "jobId": self.job_id, "tool": self.tool,
            "providers": [p.value for p in self.providers], "project": self.project, "question": self.digest,
            "newChat": self.new_chat, "timeoutS": self.timeout_s, "createdAt": iso(self.created),
            "updatedAt": iso(self.updated), "finishedAt": iso(self.finished) if self.finished else None,
            "status": self.status.value, "owner": self.owner,
            "asks": {p.value: _ask_json(a) for p, a in self.asks.items()},
            "task": None if self.task is None else {"taskId": self.task.task_id, "modern": self.task.modern,
                                                    "ttlMs": self.task.ttl_ms, "createdAt": self.task.created_at},
            **({"saveTo": self.save_to} if self.save_to else {}),
        }

    def encode(self) -> bytes:
        return (json.dumps(self.as_json(), ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def _ask_json(a: AskRecord) -> dict[str, Any]:
    return {"phase": a.phase.value, "url": a.url, "partial": a.partial,
            "result": None if a.result is None else result_json(a.result),
            "error": None if a.error is None else _error_json(a.error)}


def result_json(r: AskResult) -> dict[str, Any]:
    return {"provider": r.provider.value, "answer": r.answer, "url": r.url, "timings": r.timings.as_json(),
            "retries": r.retries, "detectedAtMs": r.detected_at_ms, "completionReason": r.completion_reason,
            "thinking": r.thinking, "extractedBy": r.extracted_by, "model": r.model,
            "warnings": [{"code": w.code, "message": w.message, "debugDump": w.debug_dump} for w in r.warnings],
            **({"chosen": r.chosen.as_json()} if r.chosen is not None else {}),
            **({"files": [{**f.as_json(), "source": f.source} for f in r.files]} if r.files else {})}


def _error_json(e: ErrorInfo) -> dict[str, Any]:
    return {"code": e.code, "message": e.message, "hint": e.hint, "partial": e.partial, "url": e.url}


# -- reading back: every field checked ------------------------------------------------------------------------------


class BadRecord(ValueError):
    pass


def _obj(v: object, what: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise BadRecord(f"{what} is not an object")
    return v


def _str(o: dict[str, Any], key: str, *, limit: int = 4096, optional: bool = False) -> str | None:
    v = o.get(key)
    if v is None and optional:
        return None
    if not isinstance(v, str) or len(v) > limit:
        raise BadRecord(f"{key} is not a string of at most {limit} characters")
    return v


def _req(o: dict[str, Any], key: str, *, limit: int = 4096) -> str:
    v = _str(o, key, limit=limit)
    assert v is not None
    return v


def _bool(o: dict[str, Any], key: str) -> bool:
    v = o.get(key)
    if not isinstance(v, bool):
        raise BadRecord(f"{key} is not true or false")
    return v


def _num(o: dict[str, Any], key: str) -> float:
    v = o.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise BadRecord(f"{key} is not a finite number")
    return float(v)


def _int(o: dict[str, Any], key: str) -> int:
    v = o.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not -(2**53) <= v <= 2**53:
        raise BadRecord(f"{key} is not a whole number")
    return v


def _time(o: dict[str, Any], key: str, *, optional: bool = False) -> dt.datetime | None:
    text = _str(o, key, limit=40, optional=optional)
    if text is None:
        return None
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadRecord(f"{key} is not an ISO 8601 time") from None
    if t.tzinfo is None:
        raise BadRecord(f"{key} has no time zone")
    return t.astimezone(dt.UTC)


def _provider(v: object) -> ProviderName:
    try:
        return ProviderName(str(v))
    except ValueError:
        raise BadRecord(f"unknown provider {str(v)[:40]!r}") from None


def _phase(v: object) -> AskPhase | JobPhase:
    for kind in (JobPhase, AskPhase):
        with contextlib.suppress(ValueError):
            return kind(str(v))
    raise BadRecord(f"unknown phase {str(v)[:40]!r}")


def parse_error(v: object) -> ErrorInfo:
    o = _obj(v, "error")
    code = _req(o, "code", limit=64)
    if not re.fullmatch(r"[a-z_]{1,64}", code):
        raise BadRecord("error code is not a code")
    return ErrorInfo(code, _req(o, "message", limit=MAX_TEXT), _str(o, "hint", limit=MAX_TEXT, optional=True),
                     _str(o, "partial", limit=MAX_TEXT, optional=True), _str(o, "url", optional=True))


def parse_result(v: object) -> AskResult:
    o = _obj(v, "result")
    t = _obj(o.get("timings"), "timings")
    timings = AskTimings(*(_int(t, k) for k in ("connectMs", "waitInputMs", "inputMs", "sendMs", "waitResponseMs",
                                                 "totalMs")))
    warnings = o.get("warnings")
    if not isinstance(warnings, list) or len(warnings) > 100:
        raise BadRecord("warnings is not a list")
    ws = tuple(AskWarning(_req(w, "code", limit=64), _req(w, "message", limit=MAX_TEXT),
                          _str(w, "debugDump", optional=True))
               for w in (_obj(x, "warning") for x in warnings))
    chosen = None
    if (c := o.get("chosen")) is not None:  # records before issue 34 have none
        c = _obj(c, "chosen")
        tools = c.get("tools", [])
        if not isinstance(tools, list) or len(tools) > 10 or not all(isinstance(x, str) and len(x) <= 100
                                                                    for x in tools):
            raise BadRecord("chosen.tools is not a list of names")
        chosen = Choice(_str(c, "model", optional=True) or "", _str(c, "effort", optional=True) or "", tuple(tools))
    files = o.get("files", [])  # records before issue 35 have none
    if not isinstance(files, list) or len(files) > 100:
        raise BadRecord("files is not a list")
    saved = tuple(SavedFile(_req(f, "path"), _req(f, "name"), _req(f, "mimeType"), _int(f, "size"), _req(f, "kind"),
                            _str(f, "source", optional=True) or "") for f in (_obj(x, "file") for x in files))
    return AskResult(_provider(o.get("provider")), _req(o, "answer", limit=MAX_TEXT), _req(o, "url"), timings,
                     _int(o, "retries"), _num(o, "detectedAtMs"), _req(o, "completionReason"), _bool(o, "thinking"),
                     ws, _req(o, "extractedBy"), _req(o, "model"), chosen, saved)


def parse(raw: bytes) -> JobRecord:
    """A record as written by `JobRecord.encode`, every field checked; `BadRecord` (a ValueError) otherwise."""
    try:
        data = json.loads(raw)
    except RecursionError:
        raise BadRecord("nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRecord(f"not JSON ({str(exc)[:80]})") from None
    o = _obj(data, "the record")
    if o.get("version") != VERSION:
        raise BadRecord(f"unknown version {str(o.get('version'))[:20]!r}")
    job_id = _req(o, "jobId", limit=64)
    if not JOB_ID.fullmatch(job_id):
        raise BadRecord("jobId is not a job id")
    providers_raw = o.get("providers")
    if not isinstance(providers_raw, list) or not 1 <= len(providers_raw) <= len(ProviderName):
        raise BadRecord("providers is not a list of providers")
    providers = tuple(_provider(p) for p in providers_raw)
    if len(set(providers)) != len(providers):
        raise BadRecord("providers repeats a provider")
    digest = _req(o, "question", limit=80)
    if not DIGEST.fullmatch(digest):
        raise BadRecord("question is not a digest")
    timeout_s = _num(o, "timeoutS")
    if not 0 < timeout_s <= 86_400:
        raise BadRecord("timeoutS is out of range")
    try:
        status = JobStatus(str(o.get("status")))
    except ValueError:
        raise BadRecord("unknown status") from None
    asks_raw = _obj(o.get("asks"), "asks")
    asks: dict[ProviderName, AskRecord] = {}
    for name, a in asks_raw.items():
        p = _provider(name)
        if p not in providers:
            raise BadRecord(f"asks names {p.value}, not one of the job's providers")
        ao = _obj(a, f"asks.{p.value}")
        result = None if ao.get("result") is None else parse_result(ao.get("result"))
        if result is not None and result.provider is not p:
            raise BadRecord(f"asks.{p.value} holds another provider's result")
        asks[p] = AskRecord(_phase(ao.get("phase")), _str(ao, "url", optional=True),
                            _req(ao, "partial", limit=MAX_TEXT), result,
                            None if ao.get("error") is None else parse_error(ao.get("error")))
    task = None
    if o.get("task") is not None:
        to = _obj(o.get("task"), "task")
        task_id = _req(to, "taskId", limit=64)
        if not re.fullmatch(r"[A-Za-z0-9_-]{16,64}", task_id):
            raise BadRecord("taskId is not a task id")
        task = TaskRef(task_id, _bool(to, "modern"), _int(to, "ttlMs"), _req(to, "createdAt", limit=40))
    created = _time(o, "createdAt")
    updated = _time(o, "updatedAt")
    assert created is not None and updated is not None
    owner = _str(o, "owner", limit=64, optional=True)
    if owner is not None and not OWNER.fullmatch(owner):
        raise BadRecord("owner is not <pid>:<start time>")
    return JobRecord(job_id, _req(o, "tool", limit=64), providers, _req(o, "project", limit=1024), digest,
                     _bool(o, "newChat"), timeout_s, created, updated, status, _time(o, "finishedAt", optional=True),
                     owner, asks, task, _str(o, "saveTo", optional=True) or "")


# -- who runs a job --------------------------------------------------------------------------------------------------

PID_MAX = 4_194_304  # Linux's highest possible pid (PID_MAX_LIMIT): a record's pid beyond it is nonsense
OWNER = re.compile(r"([0-9]{1,20}):([0-9]{1,20}|\?)")  # ASCII digits only ('²'.isdigit() is True)


def process_token(pid: int) -> str | None:
    """``<pid>:<start time>`` of a live process (its start time from /proc tells a reused pid apart), or None (also
    for a pid no process can have)."""
    if not 0 < pid <= PID_MAX:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        start = stat.rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        start = "?"
    return f"{pid}:{start}"


def my_token() -> str:
    return process_token(os.getpid()) or f"{os.getpid()}:?"


def owner_pid(owner: str | None) -> int | None:
    """The pid an owner field names, when it is one a process can have (None: no process runs it)."""
    m = OWNER.fullmatch(owner or "")
    pid = int(m.group(1)) if m else 0
    return pid if 0 < pid <= PID_MAX else None


def owner_alive(owner: str | None) -> bool:
    pid = owner_pid(owner)
    if pid is None or owner is None:
        return False
    start = owner.partition(":")[2]
    now = process_token(pid)
    return now is not None and (start in ("?", "") or now.partition(":")[2] in ("?", start))


# -- the files -------------------------------------------------------------------------------------------------------


class JobFiles:
    """Synchronous file operations on ``<state-dir>/jobs``; the jobs actor runs them in a worker thread.

    Records are data, never trusted (issue 36): the folder is opened without following a link (`open_state_folder`)
    and every record relative to it, as a regular file only, without blocking (a FIFO named like a record), at most
    `MAX_RECORD_BYTES`; a bad one is renamed ``.bad`` within that folder, and nothing outside it is ever touched."""

    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir / FOLDER

    def path(self, job_id: str) -> Path:
        if not JOB_ID.fullmatch(job_id):
            raise ValueError(f"{job_id!r} is not a job id")
        return self.dir / f"{job_id}.json"

    @contextlib.contextmanager
    def folder(self) -> Iterator[int | None]:
        """The folder's descriptor (None when there is none); `StateFileError` for a link or a stranger's."""
        fd = open_state_folder(self.dir)
        try:
            yield fd
        finally:
            if fd is not None:
                os.close(fd)

    def prepare(self) -> None:
        ensure_private_dir(self.dir)
        with self.folder() as fd:
            assert fd is not None
            for name in os.listdir(fd):
                if not (name.startswith(".job-") and name.endswith(".tmp")):
                    continue  # writers that died between write and rename leave these
                pid = owner_pid(name.split(".")[-2] + ":?") if name.count(".") >= 3 else None
                if pid is not None and process_token(pid) is None:
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=fd)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with self.folder() as dfd:
            if dfd is None:
                raise StateFileError(f"{self.dir} does not exist")
            fd = open_private(LOCK, os.O_RDWR | os.O_CREAT, dir_fd=dfd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def write(self, record: JobRecord) -> None:
        write_atomic(self.path(record.job_id), record.encode())

    def read(self, job_id: str) -> JobRecord | None:
        """The record of `job_id`, or None (none, or a bad one, which is moved aside)."""
        name = self.path(job_id).name
        with self.folder() as fd:
            return None if fd is None else self._read_at(fd, name, job_id)

    def _read_at(self, fd: int, name: str, job_id: str) -> JobRecord | None:
        try:
            raw = read_private(name, MAX_RECORD_BYTES, dir_fd=fd)
        except (StateFileError, OSError) as exc:
            self._aside(fd, name, str(exc))
            return None
        if raw is None:
            return None
        try:
            record = parse(raw)
        except BadRecord as exc:
            self._aside(fd, name, str(exc))
            return None
        if record.job_id != job_id:
            self._aside(fd, name, f"it holds job {record.job_id}")
            return None
        return record

    def load(self, keep_days: float, now: dt.datetime) -> list[JobRecord]:
        """Every record changed within `keep_days`, oldest first; older ones (and old ``.bad`` files) deleted, bad
        ones moved aside."""
        out: list[JobRecord] = []
        cutoff = now - dt.timedelta(days=keep_days)
        with self.folder() as fd:
            if fd is None:
                return out
            for name in sorted(os.listdir(fd)):
                if name.endswith(".bad"):
                    with contextlib.suppress(OSError):
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                        if dt.datetime.fromtimestamp(st.st_mtime, dt.UTC) < cutoff:
                            os.unlink(name, dir_fd=fd)
                    continue
                if not name.endswith(".json") or name.startswith("."):
                    continue
                if not JOB_ID.fullmatch(name[:-5]):
                    self._aside(fd, name, "its name is not a job id")
                    continue
                record = self._read_at(fd, name, name[:-5])
                if record is None:
                    continue
                if record.updated < cutoff:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(name, dir_fd=fd)
                    log.info("job %s is older than %g days: its record was deleted", record.job_id, keep_days)
                    continue
                out.append(record)
        out.sort(key=lambda r: r.created)
        return out

    def claim(self, job_id: str, me: str) -> JobRecord | None:
        """Take over a running job whose server is gone: its record with `me` as owner, written; None when another
        live server runs it (or it is gone, or ended)."""
        with self.locked():
            record = self.read(job_id)
            if record is None or record.status is not JobStatus.RUNNING:
                return None
            if record.owner != me and owner_alive(record.owner):
                return None
            record.owner = me
            record.updated = now_utc()
            self.write(record)
            return record

    def _aside(self, fd: int, name: str, why: str) -> None:
        shown = shown_name(name)
        try:
            bad = set_aside(fd, name)
        except OSError as exc:
            log.warning("job record %s is unreadable (%s) and could not be moved aside: %s", shown, why[:200], exc)
            return
        if bad is not None:
            log.warning("job record %s could not be read (%s); moved it to %s", shown, why[:200], shown_name(bad))
