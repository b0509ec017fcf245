"""The application: the one place that knows both the OTP core and the actors. `open_bridge` runs the actor tree;
`serve`, `ask`, `doctor`, the console client and the tests all start ai-bridge through it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TypeVar

import attrs
import trio

from ..config import Config
from ..otp import ActorRef, ActorSystem, Address, Message, Registry, Supervisor

M = TypeVar("M", bound=Message)

log = logging.getLogger("ai_bridge.app")

GRACE_S = 3.0  # a graceful stop gets this long before what still runs is cancelled
HARD_EXIT_S = 5.0  # ... and the process this long before it exits hard (seed 14: never a zombie)


@attrs.define(eq=False)
class Bridge:
    """The running tree: actors by address, and a way to stop it."""

    system: ActorSystem
    root: Supervisor
    finished: trio.Event  # the tree ended (the MCP front ended it, or it failed)

    def ref(self, address: Address[M]) -> ActorRef[M]:
        return self.system.registry.ref(address)

    def stop(self) -> None:
        self.root.shutdown()


@asynccontextmanager
async def open_bridge(config: Config, *, front: bool = False, stdin_fd: int = 0) -> AsyncIterator[Bridge]:
    """Start the actor tree (with the MCP front on stdio when `front`), yield it, stop it gracefully on exit:
    children are asked to stop in reverse start order; after `GRACE_S` what still runs is cancelled.

    A failure to start (a port taken, a bad profile) raises out of the ``async with`` as the error itself."""
    from .tree import build_tree

    system = ActorSystem(registry=Registry(faults_allowed=config.allow_faults))
    spec = build_tree(config, system, with_front=front, stdin_fd=stdin_fd)
    finished = trio.Event()
    watchdog: threading.Timer | None = None
    try:
        async with trio.open_nursery() as nursery:

            async def run_root(*, task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED) -> None:
                try:
                    await system.run(spec, task_status=task_status)
                finally:
                    finished.set()

            root: Supervisor = await nursery.start(run_root)
            try:
                yield Bridge(system, root, finished)
            finally:
                if not finished.is_set():
                    watchdog = _start_watchdog()
                    root.shutdown()
                    with trio.CancelScope(shield=True), trio.move_on_after(GRACE_S) as grace:
                        await finished.wait()
                    if grace.cancelled_caught:
                        log.warning("actors still running after %.0f s grace; cancelling them", GRACE_S)
                nursery.cancel_scope.cancel()
    finally:
        if watchdog is not None:
            # Disarmed once stopped, or it would hard-exit a process that goes on (ask, doctor, tests).
            watchdog.cancel()


def _start_watchdog() -> threading.Timer:
    def hard_exit() -> None:
        # Cleanup hung past every deadline: do not become a zombie holding the browser and ports.
        os.write(2, b"ai-bridge: shutdown hung for 5 s, exiting hard\n")
        os._exit(1)

    timer = threading.Timer(HARD_EXIT_S, hard_exit)
    timer.daemon = True
    timer.start()
    return timer
