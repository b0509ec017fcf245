"""Process entry for ``ai-bridge serve``: build the actor tree, run it, stop it as structured cancellation.

Shutdown: stdin EOF (the MCP client went away), SIGTERM or SIGINT → the root supervisor asks its children to stop in
reverse start order; after a 3 s grace everything still running is cancelled; a watchdog thread hard-exits the
process after 5 s if even that hangs (the reference implementation's zombie problem, seed section 14).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Any

import trio

from .config import Config
from .supervision import Runtime, SupervisorSpec

log = logging.getLogger("ai_bridge.app")

GRACE_S = 3.0
HARD_EXIT_S = 5.0


def build_tree(config: Config, runtime: Runtime, front_exit: trio.Event, *, with_front: bool = True,
               stdin_fd: int = 0) -> SupervisorSpec:
    """The actor tree. Infrastructure starts first and the MCP front last, so no tool is served before the
    actors behind it are up; shutdown runs in reverse."""
    from actors import browser, console, discovery, jobs, mcp_front, provider, relay, session_store
    from actors.provider import chatgpt, gemini

    from .paths import extension_path
    from .supervision import Restart, Strategy, child

    children = [
        child("session_store", session_store.run, state_dir=config.state_dir, shutdown=1.0),
        # The browser link: discovery hands out the relay's URL and token and the browser actor waits on the relay,
        # so when the relay restarts (new port, new token) the two after it restart too (rest_for_one).
        SupervisorSpec("link", (
            child("relay", relay.run, shutdown=1.0),
            child("discovery", discovery.run, port=config.discovery_port, project=config.project, shutdown=1.5),
            child("browser", browser.run, config=config, extension_dir=extension_path(), shutdown=2.5),
        ), strategy=Strategy.REST_FOR_ONE, max_restarts=5, period=30).as_child(shutdown=3.0),
        # Stuck-state retry is this supervisor's restart policy: a stuck provider crashes and is restarted with a
        # fresh tab connection, its request re-delivered. Room for a few stuck asks at once before escalating.
        SupervisorSpec("providers", tuple(
            child(t.name, provider.run, table=t, state_dir=config.state_dir, stall_s=config.stall_s,
                  dumps_keep=config.debug_dumps_keep, shutdown=1.5)
            for t in (chatgpt.TABLE, gemini.TABLE)
        ), strategy=Strategy.ONE_FOR_ONE, max_restarts=10, period=60).as_child(shutdown=2.0),
        # Background asks. The job table outlives restarts of the actor, as mailboxes do; stopping before the
        # providers means a shutdown cancels running jobs first (their asks click Stop in the page).
        child("jobs", jobs.run, book=jobs.JobBook(), shutdown=2.0),
        child("console", console.run, runtime=runtime, config=config, shutdown=0.5),
    ]
    if with_front:
        # Last to start, first to stop. Its MCP session cannot survive a restart, so when it ends the process
        # ends (on_exit), whatever the reason.
        children.append(child("mcp_front", mcp_front.run, restart=Restart.TRANSIENT, shutdown=1.0,
                              config=config, runtime=runtime, on_exit=front_exit, stdin_fd=stdin_fd))
    # one_for_one at the top: a crash in one branch (say the session store) never restarts the MCP front.
    return SupervisorSpec("root", tuple(children), strategy=Strategy.ONE_FOR_ONE, max_restarts=5, period=30)


def _arm_faults(runtime: Runtime, config: Config) -> None:
    """``AI_BRIDGE_INJECT_FAULTS=actor:kind[:seconds],...`` arms the fault kit at start-up, so process-level tests
    (and people reproducing a bug) can make an actor crash, hang or slow down without editing code. Like the
    console's fault helpers it needs ``--allow-faults``: a stray variable must not break a user's server."""
    from .testing import inject

    spec = os.environ.get("AI_BRIDGE_INJECT_FAULTS", "").strip()
    if spec and not config.allow_faults:
        log.error("AI_BRIDGE_INJECT_FAULTS is set but faults are off (--allow-faults); ignoring it")
        return
    for item in filter(None, (p.strip() for p in spec.split(","))):
        actor, _, rest = item.partition(":")
        kind, _, delay = rest.partition(":")
        inject(runtime.registry, actor, kind, delay=float(delay or 0))
        log.warning("fault armed on %s: %s %s", actor, kind, delay)


def _start_watchdog() -> threading.Timer:
    def hard_exit() -> None:
        # Cleanup hung past every deadline: do not become a zombie holding the browser and ports.
        os.write(2, b"ai-bridge: shutdown hung for 5 s, exiting hard\n")
        os._exit(1)

    timer = threading.Timer(HARD_EXIT_S, hard_exit)
    timer.daemon = True
    timer.start()
    return timer


async def serve(config: Config, *, stdin_fd: int = 0, with_front: bool = True,
                task_status: trio.TaskStatus[Runtime] = trio.TASK_STATUS_IGNORED,
                stop: trio.Event | None = None) -> int:
    runtime = Runtime()
    front_exit = trio.Event()
    if stop is None:
        stop = trio.Event()
    spec = build_tree(config, runtime, front_exit, with_front=with_front, stdin_fd=stdin_fd)
    reason = "?"
    watchdog: threading.Timer | None = None
    async with trio.open_nursery() as nursery:
        root_done = trio.Event()

        async def run_root(*, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
            try:
                await runtime.run(spec, task_status=task_status)
            finally:
                root_done.set()
                stop.set()

        await nursery.start(run_root)
        _arm_faults(runtime, config)
        log.info("ai-bridge %s serving (pid %d, state dir %s)", _version(), os.getpid(), config.state_dir)
        task_status.started(runtime)

        async def on_signal() -> None:
            nonlocal reason
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for signum in signals:
                    reason = signal.Signals(signum).name
                    stop.set()

        async def on_front_exit() -> None:
            nonlocal reason
            await front_exit.wait()
            reason = "stdin closed" if reason == "?" else reason
            stop.set()

        nursery.start_soon(on_signal)
        nursery.start_soon(on_front_exit)
        await stop.wait()
        if not root_done.is_set():
            log.info("shutting down (%s)", reason)
            watchdog = _start_watchdog()
            assert runtime.root is not None
            runtime.root.shutdown()
            with trio.move_on_after(GRACE_S) as grace:
                await root_done.wait()
            if grace.cancelled_caught:
                log.warning("actors still running after %.0f s grace; cancelling them", GRACE_S)
        nursery.cancel_scope.cancel()
    if watchdog is not None:
        # Shutdown finished: disarm, or the timer would hard-exit a process that runs serve() in-process and goes
        # on (ask/doctor printing their results, tests, benchmarks) 5 s later.
        watchdog.cancel()
    log.info("stopped")
    return 0


def _version() -> str:
    from . import __version__

    return __version__
