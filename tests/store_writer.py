"""A second process for session-store tests: runs the real session_store actor and hammers it.

    python -m tests.store_writer STATE_DIR COUNT LABEL
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

from actors import session_store
from actors.protocol.common import ProviderName
from actors.protocol.session_store import SESSION_STORE, AppendHistory, HistoryRecord, SaveSession
from supervisor.otp import ActorSystem, SupervisorSpec, child


async def main(state_dir: Path, count: int, label: str) -> None:
    runtime = ActorSystem()
    spec = SupervisorSpec("root", (child("session_store", session_store.run, state_dir=state_dir),))
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, spec)
        store = runtime.registry.ref(SESSION_STORE)
        big = "x" * 3000  # long lines make a torn write more likely if appends were not whole
        for i in range(count):
            await store.call(AppendHistory(f"{label}-{i}", HistoryRecord(
                ts=str(i), project=label, provider="chatgpt", question="q", status="ok", answer=big)))
            await store.call(SaveSession(f"proj-{label}", ProviderName.CHATGPT, f"https://chatgpt.com/c/{label}-{i}",
                                         i))
            print(i, flush=True)
        sup.shutdown()


if __name__ == "__main__":
    trio.run(main, Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
