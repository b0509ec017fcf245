"""Fault-injection kit: make a named actor crash, hang or slow down on its next message.

Shipped in the package (not only in tests) so the live console can use it on a running server — but only on a
system whose registry allows faults (``serve --allow-faults``, or a test building its own registry). Without that
flag nothing here can arm a fault, and an armed one would never fire::

    inject(system.registry, "session_store", FaultKind.CRASH)

The fault fires inside the actor's own task when it takes its next envelope, *after* the envelope is marked in
flight — so a crash exercises exactly the re-delivery path a real crash would.
"""

from __future__ import annotations

from .messaging import Fault, FaultKind, InjectedFault, Registry

__all__ = ["Fault", "FaultKind", "FaultsDisabled", "InjectedFault", "inject"]


class FaultsDisabled(PermissionError):
    """The system was started without fault injection (``--allow-faults``)."""


def inject(registry: Registry, actor: str, kind: FaultKind | str, *, delay: float = 0.0, times: int = 1,
           error: str = "injected fault") -> None:
    """Arm `times` faults of `kind` (crash | hang | slow) on `actor`'s next messages."""
    if not registry.faults_allowed:
        raise FaultsDisabled("fault injection is off: start the server with --allow-faults")
    try:
        fault_kind = FaultKind(kind)
    except ValueError:
        raise ValueError(f"unknown fault kind {kind!r}; use crash, hang or slow") from None
    mailbox = registry.mailbox(actor)
    for _ in range(times):
        mailbox.faults.append(Fault(fault_kind, delay=delay, error=error))
