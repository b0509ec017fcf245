"""The door of a loopback listener (discovery, relay): who may come in, how many at once, and how refusals are logged
(issue 36).

- **At accept, before a byte is read.** A connection from another user's process (supervisor/peercred.py) is closed
  at once: no request is parsed, no handshake made, nothing held. (The checks after it, Host, Origin, token, stay.)
- **A cap per peer.** A peer (a uid where the platform tells; else everyone) may hold at most `max_per_peer`
  connections at once; one more is closed at accept. So no local process can use up the server's file descriptors
  and starve its own discovery.
- **Logged once per interval, with counts** (`RefusalLog`): a flood makes one line per `interval_s`, never a line
  (let alone a traceback) per connection, so the log files and stderr stay bounded and the security lines before
  the flood are not rotated away.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
from collections import Counter

import trio

from .peercred import AVAILABLE, peer_uid

security = logging.getLogger("ai_bridge.security")
_CLOSED = {errno.EBADF, errno.ENOTSOCK}
_IGNORABLE = {getattr(errno, name) for name in ("EAGAIN", "ECONNABORTED", "EPROTO", "ENETDOWN", "ENOPROTOOPT",
                                                 "EHOSTDOWN", "ENONET", "EHOSTUNREACH", "EOPNOTSUPP", "ENETUNREACH")
              if hasattr(errno, name)}

LOG_INTERVAL_S = 10.0


class RefusalLog:
    """Refusals of one listener: the first `burst` of each interval logged one by one (with their details), the rest
    counted by reason and logged as one line at the end of the interval (`run`, or the next refusal after it)."""

    def __init__(self, what: str, *, burst: int = 1, interval_s: float = LOG_INTERVAL_S,
                 logger: logging.Logger = security) -> None:
        self.what = what
        self.burst = burst
        self.interval_s = interval_s
        self.logger = logger
        self.pending: Counter[str] = Counter()
        self.total: Counter[str] = Counter()
        self.window_start = -float("inf")
        self.in_window: Counter[str] = Counter()  # detailed lines of each kind in this interval
        self.lines = 0  # lines written in all (tests and status read it)

    def note(self, reason: str, detail: str | None = None, *, burst: int | None = None) -> None:
        """One refusal: `reason` names its kind (counted), `detail` is its own line while its kind is within its
        burst (`burst`, else the log's) in this interval."""
        self.total[reason] += 1
        now = trio.current_time()
        if now - self.window_start >= self.interval_s:
            self.flush()
            self.window_start = now
            self.in_window.clear()
        if self.in_window[reason] < (self.burst if burst is None else burst):
            self.in_window[reason] += 1
            self.lines += 1
            self.logger.warning("%s: %s", self.what, detail or f"refused {reason}")
        else:
            self.pending[reason] += 1

    def flush(self) -> None:
        if not self.pending:
            return
        parts = ", ".join(f"{n} {reason}" for reason, n in sorted(self.pending.items()))
        self.logger.warning("%s: also refused %s in %.0f s (detail is logged for the first few of each kind only)",
                            self.what, parts, self.interval_s)
        self.pending.clear()
        self.lines += 1

    async def run(self) -> None:
        """Log what a flood left pending at the end of each interval."""
        while True:
            await trio.sleep(self.interval_s)
            if trio.current_time() - self.window_start >= self.interval_s:
                self.flush()


def _close_now(sock: trio.socket.SocketType) -> None:
    # RST rather than a FIN: nothing is owed to a refused peer, and no TIME_WAIT is kept for it on our side.
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    except OSError:
        pass
    sock.close()


class GatedListener(trio.abc.Listener[trio.SocketStream]):
    """A `trio.SocketListener` that lets in only our own user's processes, at most `max_per_peer` at once each."""

    def __init__(self, sock: trio.socket.SocketType, refusals: RefusalLog, *, max_per_peer: int) -> None:
        self.socket = sock
        self.refusals = refusals
        self.max_per_peer = max_per_peer
        self._open: dict[int | None, list[trio.SocketStream]] = {}

    @property
    def port(self) -> int:
        return int(self.socket.getsockname()[1])

    def _peer(self, sock: trio.socket.SocketType) -> tuple[bool, int | None]:
        """(allowed, the peer's uid or None when this platform cannot tell)."""
        if not AVAILABLE:
            return True, None
        try:
            peer, local = sock.getpeername(), sock.getsockname()
        except OSError:
            return False, None  # gone already
        uid = peer_uid((str(peer[0]), int(peer[1])), (str(local[0]), int(local[1])))
        return uid == os.getuid(), uid

    def _held(self, uid: int | None) -> list[trio.SocketStream]:
        held = [s for s in self._open.get(uid, []) if s.socket.fileno() != -1]  # closed ones let go
        self._open[uid] = held
        return held

    async def accept(self) -> trio.SocketStream:
        while True:
            try:
                sock, _ = await self.socket.accept()
            except OSError as exc:  # as trio.SocketListener: a peer that left meanwhile is no error of ours
                if exc.errno in _CLOSED:
                    raise trio.ClosedResourceError from None
                if exc.errno not in _IGNORABLE:
                    raise  # EMFILE and the like: trio.serve_listeners waits and retries
                continue
            allowed, uid = self._peer(sock)
            if not allowed:
                _close_now(sock)
                self.refusals.note("connections from other users' processes",
                                   f"refused a connection from another user's process (uid {uid}) at accept",
                                   burst=1)
                continue
            held = self._held(uid)
            if len(held) >= self.max_per_peer:
                _close_now(sock)
                self.refusals.note(f"connections over the limit of {self.max_per_peer} at once",
                                   f"refused a connection: uid {uid} holds {len(held)} already (the limit)", burst=1)
                continue
            stream = trio.SocketStream(sock)
            held.append(stream)
            return stream

    async def aclose(self) -> None:
        self.socket.close()
        await trio.lowlevel.checkpoint()
