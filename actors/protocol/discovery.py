"""discovery: the loopback HTTP endpoint the extension polls to find this server."""

from __future__ import annotations

import attrs

from supervisor.otp import Address, Request


@attrs.frozen
class DiscoveryPort(Request[int]):
    """→ the port the discovery endpoint is bound to."""


DiscoveryRequest = DiscoveryPort
DISCOVERY = Address[DiscoveryRequest]("discovery", DiscoveryRequest)
