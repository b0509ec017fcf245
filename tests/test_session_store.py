"""Session store: atomic, locked, self-healing state files (seed section 8 format)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
import trio
import trio.lowlevel

from actors import session_store
from actors.protocol.common import ProviderName
from actors.protocol.session_store import (
    SESSION_STORE,
    AppendHistory,
    ForgetSession,
    GetSession,
    HistoryRecord,
    ReadHistory,
    SaveSession,
)
from supervisor.otp import ActorSystem, Registry, SupervisorSpec, child
from supervisor.otp.faults import FaultKind, inject

from .conftest import REPO

CHATGPT, GEMINI = ProviderName.CHATGPT, ProviderName.GEMINI


def record(answer: str = "42", **kw: object) -> HistoryRecord:
    fields: dict[str, object] = {"ts": "2026-11-26T00:00:00Z", "project": "p", "provider": "chatgpt",
                                 "question": "q", "status": "ok", "answer": answer, **kw}
    return HistoryRecord(**fields)  # type: ignore[arg-type]


def Runtime() -> ActorSystem:
    return ActorSystem(registry=Registry(faults_allowed=True))



async def _with_store(state_dir: Path, body) -> None:  # type: ignore[no-untyped-def]
    runtime = Runtime()
    spec = SupervisorSpec("root", (child("session_store", session_store.run, state_dir=state_dir),))
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, spec)
        await body(runtime)
        sup.shutdown()


async def test_sessions_roundtrip_in_seed_format(state_dir: Path) -> None:
    async def body(runtime: ActorSystem) -> None:
        store = runtime.registry.ref(SESSION_STORE)
        assert await store.call(GetSession("proj", CHATGPT)) is None
        await store.call(SaveSession("proj", CHATGPT, "https://chatgpt.com/c/abc", 12))
        await store.call(SaveSession("proj", GEMINI, "https://gemini.google.com/app/f00", None))
        got = await store.call(GetSession("proj", CHATGPT))
        assert (got.url, got.tab_id) == ("https://chatgpt.com/c/abc", 12)
        await store.call(ForgetSession("proj", GEMINI))
        assert await store.call(GetSession("proj", GEMINI)) is None

    await _with_store(state_dir, body)
    data = json.loads((state_dir / "sessions.json").read_text())
    entry = data["projects"]["proj"]["chatgpt"]
    assert entry["url"] == "https://chatgpt.com/c/abc" and entry["tabId"] == 12
    assert entry["lastUsed"].endswith("Z")


async def test_corrupt_sessions_file_is_moved_aside_and_rebuilt(state_dir: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    (state_dir / "sessions.json").write_text('{"projects": {"p": ')  # truncated by some earlier accident

    async def body(runtime: ActorSystem) -> None:
        store = runtime.registry.ref(SESSION_STORE)
        assert await store.call(GetSession("p", CHATGPT)) is None
        await store.call(SaveSession("p", CHATGPT, "https://chatgpt.com/c/new", 1))

    await _with_store(state_dir, body)
    aside = list(state_dir.glob("sessions.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_text() == '{"projects": {"p": '
    assert json.loads((state_dir / "sessions.json").read_text())["projects"]["p"]["chatgpt"]["tabId"] == 1
    assert "moved it to sessions.json.corrupt-" in caplog.text


async def test_history_append_is_idempotent_and_heals_a_torn_tail(state_dir: Path) -> None:
    (state_dir / "history.jsonl").write_bytes(b'{"id":"old","ok":1}\n{"id":"torn","ans')

    async def body(runtime: ActorSystem) -> None:
        store = runtime.registry.ref(SESSION_STORE)
        assert await store.call(AppendHistory("e1", record())) is True
        assert await store.call(AppendHistory("e1", record())) is False
        recent = await store.call(ReadHistory(limit=10))
        assert [r.entry_id for r in recent] == ["old", "e1"]
        assert recent[1] == attrs.evolve(record(), entry_id="e1")

    await _with_store(state_dir, body)
    lines = (state_dir / "history.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(json.loads(x) for x in lines[:-1])


@pytest.mark.parametrize("torn", [300 * 1024, 600 * 1024 + 7], ids=["longer-than-the-tail", "two-tails-and-more"])
async def test_a_torn_line_longer_than_the_tail_read_is_cut_whole(state_dir: Path, torn: int) -> None:
    """Found by the long fuzz run: a torn last line longer than the 256 KiB looked at before appending was cut only
    within that window, and the new record was glued to the rest of it (and lost)."""
    (state_dir / "history.jsonl").write_bytes(b'{"id":"old","ok":1}\n' + b"[" * torn)

    async def body(runtime: ActorSystem) -> None:
        store = runtime.registry.ref(SESSION_STORE)
        # Re-delivered, with the torn line still there: the record before the cut is what says so.
        assert await store.call(AppendHistory("old", record())) is False
        assert await store.call(AppendHistory("e1", record())) is True
        assert [r.entry_id for r in await store.call(ReadHistory(limit=10))] == ["old", "e1"]

    await _with_store(state_dir, body)
    assert (state_dir / "history.jsonl").read_bytes().split(b"\n")[0] == b'{"id":"old","ok":1}'


async def test_crash_during_append_redelivers_without_doubling(state_dir: Path) -> None:
    async def body(runtime: ActorSystem) -> None:
        inject(runtime.registry, "session_store", FaultKind.CRASH)
        store = runtime.registry.ref(SESSION_STORE)
        assert await store.call(AppendHistory("only-once", record())) is True

    await _with_store(state_dir, body)
    assert (state_dir / "history.jsonl").read_text().count("only-once") == 1


def _writer(state_dir: Path, count: int, label: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "tests.store_writer", str(state_dir), str(count), label],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


async def test_two_processes_share_one_state_dir_without_corruption(state_dir: Path) -> None:
    a, b = _writer(state_dir, 60, "A"), _writer(state_dir, 60, "B")
    for p in (a, b):
        _out, err = await trio.to_thread.run_sync(p.communicate)
        assert p.returncode == 0, err.decode()
    records = [json.loads(line) for line in (state_dir / "history.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in records) == sorted([f"A-{i}" for i in range(60)] + [f"B-{i}" for i in range(60)])
    projects = json.loads((state_dir / "sessions.json").read_text())["projects"]
    # Both processes' sessions survived: each write merged with the other's under the lock.
    assert projects["proj-A"]["chatgpt"]["tabId"] == 59 and projects["proj-B"]["chatgpt"]["tabId"] == 59


async def test_kill_9_during_writes_never_leaves_a_torn_file(state_dir: Path) -> None:
    for round_ in range(3):
        p = _writer(state_dir, 100_000, f"K{round_}")
        assert p.stdout is not None
        # Let it write for a while, then kill it without warning in the middle of its loop.
        for _ in range(15 + 10 * round_):
            await trio.to_thread.run_sync(p.stdout.readline)
        os.kill(p.pid, signal.SIGKILL)
        await trio.to_thread.run_sync(p.wait)
        p.stdout.close()
        assert p.stderr is not None
        p.stderr.close()
        raw = (state_dir / "history.jsonl").read_bytes()
        # A line is one write, but the kernel ends a write between pages when a fatal signal comes (a loaded run
        # once saw it): a fragment may follow the last newline, which readers skip and the next append cuts.
        whole = raw[: raw.rfind(b"\n") + 1]
        assert whole
        for line in whole.splitlines():
            json.loads(line)  # every line is whole JSON
        json.loads((state_dir / "sessions.json").read_text())  # never half-written
        assert not [f for f in os.listdir(state_dir) if f.startswith("sessions.json.corrupt")]

    async def append_one(runtime: ActorSystem) -> None:
        store = runtime.registry.ref(SESSION_STORE)
        assert await store.call(ReadHistory(limit=50))  # a torn fragment, if any, is skipped
        assert await store.call(AppendHistory("after-kills", record())) is True

    await _with_store(state_dir, append_one)
    assert not list(state_dir.glob(".sessions.json.*.tmp"))  # a dead writer's temp file is swept at start
    raw = (state_dir / "history.jsonl").read_bytes()
    assert raw.endswith(b'"id":"after-kills"}\n')  # a torn tail was cut before the line went on
    for line in raw.splitlines():
        json.loads(line)


async def _noop(runtime: ActorSystem) -> None:
    await trio.lowlevel.checkpoint()


async def test_private_text_keeps_questions_and_answers_out_of_history(state_dir: Path) -> None:
    runtime = Runtime()
    spec = SupervisorSpec("root", (child("session_store", session_store.run, state_dir=state_dir,
                                         private_text=True),))
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, spec)
        store = runtime.registry.ref(SESSION_STORE)
        secret_q, secret_a = "my API key is sk-12345, why does it fail?", "Because sk-12345 is revoked."
        assert await store.call(AppendHistory("e1", record(answer=secret_a, question=secret_q))) is True
        (got,) = await store.call(ReadHistory(limit=5))
        sup.shutdown()
    raw = (state_dir / "history.jsonl").read_text()
    assert "sk-12345" not in raw
    assert got.question == f"[{len(secret_q)} characters, not kept]"
    assert got.answer == f"[{len(secret_a)} characters, not kept]" and got.status == "ok"
