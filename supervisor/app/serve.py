"""``ai-bridge serve``: run the actor tree with the MCP front on stdio until the client goes away or a signal comes.

With ``--http-port`` the MCP front serves Streamable HTTP on loopback instead, to many clients, and stdin is not
read: the server runs until a signal.

Shutdown: stdin EOF (the MCP client went away) ends the MCP front, which ends the tree (a significant child);
SIGTERM, SIGINT or SIGHUP (the terminal closed) ask the tree to stop. Either way the children stop in reverse start
order; after a 3 s grace everything still running is cancelled; a watchdog thread hard-exits the process after 5 s
if even that hangs (the reference implementation's zombie problem, seed section 14).

A failure to start is one line on stderr naming the cause and the fix, and exit code 1 — never a traceback.
"""

from __future__ import annotations

import logging
import os
import signal
import sys

import trio

from ..config import Config
from ..errors import BridgeError
from ..otp.faults import FaultKind, inject
from . import Bridge, open_bridge
from .failure import leaf, one_line

log = logging.getLogger("ai_bridge.app")


def _arm_faults(bridge: Bridge, config: Config) -> None:
    """``AI_BRIDGE_INJECT_FAULTS=actor:kind[:seconds],...`` arms the fault kit at start-up, so process-level tests
    (and people reproducing a bug) can make an actor crash, hang or slow down without editing code. Like the
    console's fault helpers it needs ``--allow-faults``: a stray variable must not break a user's server."""
    spec = os.environ.get("AI_BRIDGE_INJECT_FAULTS", "").strip()
    if spec and not config.allow_faults:
        log.error("AI_BRIDGE_INJECT_FAULTS is set but faults are off (--allow-faults); ignoring it")
        return
    for item in filter(None, (p.strip() for p in spec.split(","))):
        actor, _, rest = item.partition(":")
        kind, _, delay = rest.partition(":")
        try:
            inject(bridge.system.registry, actor, FaultKind(kind), delay=float(delay or 0))
        except (ValueError, BridgeError) as exc:
            log.error("AI_BRIDGE_INJECT_FAULTS: cannot arm %r: %s", item, exc)
            continue
        log.warning("fault armed on %s: %s %s", actor, kind, delay)


async def serve(config: Config, *, stdin_fd: int = 0) -> int:
    from .. import __version__

    reason = "stdin closed"
    started = False
    try:
        async with open_bridge(config, front=True, stdin_fd=stdin_fd) as bridge, trio.open_nursery() as nursery:
            started = True
            _arm_faults(bridge, config)
            log.info("ai-bridge %s serving (pid %d, state dir %s)", __version__, os.getpid(), config.state_dir)

            async def on_signal() -> None:
                nonlocal reason
                with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                    async for signum in signals:
                        reason = signal.Signals(signum).name
                        log.info("shutting down (%s)", reason)
                        nursery.cancel_scope.cancel()

            nursery.start_soon(on_signal)
            await bridge.finished.wait()
            nursery.cancel_scope.cancel()
            log.info("shutting down (%s)", reason)
    except (BridgeError, OSError, BaseExceptionGroup) as failure:
        exc = leaf(failure)
        if not isinstance(exc, BridgeError | OSError):
            raise
        log.debug("start-up failed", exc_info=exc)
        print(f"ai-bridge: {'stopped' if started else 'cannot start'}: {one_line(exc)}", file=sys.stderr,
              flush=True)
        return 1
    log.info("stopped (%s)", reason)
    return 0
