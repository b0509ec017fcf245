"""``ai-bridge jobs``: the background jobs of a state dir, from their records (``<state-dir>/jobs``), with or without
a server running. A running server writes each job's record as it changes, so this reads what it knows (the
partial answer a few seconds late); a job whose server is gone says so, and waits for the next ``ai-bridge serve``
to reattach it."""

from __future__ import annotations

import datetime as dt
import sys
import time
from pathlib import Path
from typing import Any

from actors.job_records import JobFiles, JobRecord, now_utc, owner_alive, owner_pid, result_json
from actors.protocol.jobs import JobStatus

from ..errors import StateFileError
from ..safetext import for_terminal, printable, printable_json

POLL_S = 0.5
EXIT_RUNNING = 3


def _who(rec: JobRecord) -> str:
    if rec.status is not JobStatus.RUNNING:
        return ""
    if owner_alive(rec.owner):
        return f"running in the server with pid {owner_pid(rec.owner)}"
    return "no server runs it now: the next `ai-bridge serve` on this state dir reattaches it"


def _row(rec: JobRecord) -> dict[str, Any]:
    return {"jobId": rec.job_id, "tool": rec.tool, "status": rec.status.value,
            "createdAt": rec.as_json()["createdAt"], "finishedAt": rec.as_json()["finishedAt"],
            "project": rec.project, "phase": {p.value: a.phase.value for p, a in rec.asks.items()},
            "urls": {p.value: a.url for p, a in rec.asks.items() if a.url}, "server": _who(rec) or None}


def _full(rec: JobRecord) -> dict[str, Any]:
    out = _row(rec)
    out["results"] = {p.value: result_json(a.result) for p, a in rec.asks.items() if a.result is not None}
    out["errors"] = {p.value: a.error.as_dict() for p, a in rec.asks.items() if a.error is not None}
    if rec.status is JobStatus.RUNNING:
        out["partial"] = {p.value: a.partial for p, a in rec.asks.items() if a.partial}
    return out


def _load(files: JobFiles, keep_days: float) -> list[JobRecord] | None:
    try:
        return files.load(keep_days, now_utc())
    except (StateFileError, OSError) as exc:
        print(for_terminal(f"ai-bridge jobs: {exc}"), file=sys.stderr)
        return None


def list_main(state_dir: Path, keep_days: float, as_json: bool, *, raw: bool = False) -> int:
    files = JobFiles(state_dir)
    loaded = _load(files, keep_days)
    if loaded is None:
        return 2
    records = sorted(loaded, key=lambda r: r.created, reverse=True)
    if as_json:
        print(printable_json({"jobs": [_row(r) for r in records]}, raw=raw))
        return 0
    if not records:
        print(for_terminal(f"No background jobs in {files.dir} (of the last {keep_days:g} days)."))
        return 0
    for r in records:
        phases = ", ".join(f"{p.value} {a.phase.value}" for p, a in r.asks.items())
        created = r.created.astimezone().strftime("%Y-%m-%d %H:%M")
        line = f"{r.job_id}  {r.status.value:<9} {created}  {r.tool}  [{phases}]"
        print(printable(line + (f"  ({_who(r)})" if r.status is JobStatus.RUNNING else ""), raw=raw))
    return 0


def get_main(state_dir: Path, job_id: str, wait_s: float, as_json: bool, *, raw: bool = False) -> int:
    files = JobFiles(state_dir)
    try:
        files.path(job_id)
    except ValueError:
        print(for_terminal(f"ai-bridge jobs: no job {job_id!r}: job ids look like job-… (`ai-bridge jobs` lists "
                           "them)"), file=sys.stderr)
        return 1  # unknown, as docs/cli.md says: whatever the id looks like
    give_up = time.monotonic() + wait_s
    while True:
        try:
            rec = files.read(job_id)
        except (StateFileError, OSError) as exc:
            print(for_terminal(f"ai-bridge jobs: {exc}"), file=sys.stderr)
            return 2
        if rec is None:
            print(for_terminal(f"ai-bridge jobs: no job {job_id} in {files.dir} (`ai-bridge jobs` lists them)"),
                  file=sys.stderr)
            return 1
        if rec.status is not JobStatus.RUNNING or time.monotonic() >= give_up:
            break
        if not owner_alive(rec.owner):
            break  # nothing will change it until a server runs
        time.sleep(POLL_S)
    if as_json:
        print(printable_json(_full(rec), raw=raw))
    else:
        _print(rec, raw)
    if rec.status is JobStatus.RUNNING:
        return EXIT_RUNNING
    return 0 if rec.status is JobStatus.DONE else 1


def _print(rec: JobRecord, raw: bool) -> None:
    """The job for a terminal: everything from the record (answers, errors, URLs, the tool's name) through
    `printable`, so that a page's escape sequences are shown, not obeyed."""
    def out(text: str, **kw: Any) -> None:
        print(printable(text, raw=raw and "file" not in kw), **kw)  # stderr is never raw

    age = (now_utc() - rec.created).total_seconds()
    out(f"Job {rec.job_id} ({rec.tool}) is {rec.status.value}, started {dt.timedelta(seconds=int(age))} ago.",
        file=sys.stderr)
    if rec.status is JobStatus.RUNNING:
        out(_who(rec) + ".", file=sys.stderr)
    many = len(rec.providers) > 1
    for p in rec.providers:
        a = rec.asks.get(p)
        if a is None:
            continue
        if many:
            out(f"## {p.display}\n")
        if a.result is not None:
            out(a.result.answer)
        elif a.error is not None:
            out(a.error.text() + (f" ({a.error.url})" if a.error.url else ""))
            if a.error.partial:
                out(f"\nPartial answer:\n{a.error.partial}")
        else:
            out(f"({a.phase.value}{', ' + a.url if a.url else ''}; partial answer so far:)\n{a.partial}")
        if many:
            print()
