"""Who is on the other end of a loopback TCP connection.

Discovery hands out the relay token and the relay drives the user's browser, so both serve only processes of the
server's own user. For a TCP peer there is no SO_PEERCRED; on Linux the kernel's socket table
(``/proc/net/tcp``, ``/proc/net/tcp6``) names the owner of the peer's socket: the row whose local end is the peer's
address and whose remote end is ours. Elsewhere the check is not available (docs/security.md says what that means).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys

AVAILABLE = sys.platform.startswith("linux") and os.path.exists("/proc/net/tcp")


def _hex_v4(host: str, port: int) -> str:
    return f"{int.from_bytes(socket.inet_aton(host), 'little'):08X}:{port:04X}"


def _hex_v6(host: str, port: int) -> str:
    raw = ipaddress.IPv6Address(host).packed
    # /proc prints each 32-bit word in host (little-endian) order
    words = "".join(f"{int.from_bytes(raw[i:i + 4], 'little'):08X}" for i in range(0, 16, 4))
    return f"{words}:{port:04X}"


def _forms(host: str, port: int) -> set[str]:
    addr = ipaddress.ip_address(host)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    if isinstance(addr, ipaddress.IPv4Address):
        # An IPv4 peer may sit on an IPv6 socket as ::ffff:a.b.c.d
        return {_hex_v4(str(addr), port), _hex_v6(f"::ffff:{addr}", port)}
    return {_hex_v6(str(addr), port)}


def peer_uid(peer: tuple[str, int], local: tuple[str, int]) -> int | None:
    """The uid owning the socket at `peer` that is connected to our `local` end; None when unknown."""
    if not AVAILABLE:
        return None
    peer_forms, local_forms = _forms(*peer), _forms(*local)
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as f:
                next(f, None)
                for line in f:
                    fields = line.split()
                    if len(fields) > 7 and fields[1] in peer_forms and fields[2] in local_forms:
                        return int(fields[7])
        except OSError:
            continue
    return None


def same_user(peer: tuple[str, int], local: tuple[str, int]) -> bool:
    """True when the peer is ours, or when this platform cannot tell (then only loopback binding protects)."""
    if not AVAILABLE:
        return True
    uid = peer_uid(peer, local)
    return uid == os.getuid()
