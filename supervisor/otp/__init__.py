"""The OTP core: typed request/reply between trio actors, mailboxes that outlive crashes, and supervisors with
OTP's strategies, restart types, intensity and shutdown protocol. A library: it knows no actor of ai-bridge."""

from .messaging import (
    ActorContext,
    ActorRef,
    Address,
    Envelope,
    Mailbox,
    Message,
    Progress,
    Registry,
    Reply,
    Request,
    Retry,
    receive_unless,
)
from .supervision import (
    ActorSystem,
    AutoShutdown,
    ChildInfo,
    ChildSpec,
    ChildState,
    OnIntensity,
    Restart,
    Strategy,
    Supervisor,
    SupervisorSpec,
    child,
)

__all__ = [
    "ActorContext", "ActorRef", "ActorSystem", "Address", "AutoShutdown", "ChildInfo", "ChildSpec", "ChildState",
    "Envelope", "Mailbox", "Message", "OnIntensity", "Progress", "Registry", "Reply", "Request", "Restart", "Retry",
    "Strategy", "Supervisor", "SupervisorSpec", "child", "receive_unless",
]
