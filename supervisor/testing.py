"""Fault-injection kit: make a named actor crash, hang or slow down on its next message.

Shipped in the package (not only in tests) so the live console can use it on a running server::

    inject(runtime.registry, "session_store", "crash")

The fault fires inside the actor's own task when it takes its next envelope, *after* the envelope is marked in
flight — so a crash exercises exactly the re-delivery path a real crash would.
"""

from __future__ import annotations

from .runtime import Fault, InjectedFault, Registry

__all__ = ["Fault", "InjectedFault", "clear", "inject"]


def inject(registry: Registry, actor: str, kind: str, *, delay: float = 0.0, times: int = 1,
           error: str = "injected fault") -> None:
    """Arm `times` faults of `kind` ("crash" | "hang" | "slow") on `actor`'s next messages."""
    if kind not in ("crash", "hang", "slow"):
        raise ValueError(f"unknown fault kind {kind!r}; use crash, hang or slow")
    mailbox = registry.get(actor)
    for _ in range(times):
        mailbox.faults.append(Fault(kind, delay=delay, error=error))


def clear(registry: Registry, actor: str) -> None:
    registry.get(actor).faults.clear()
