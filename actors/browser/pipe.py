"""A browser-level CDP channel over ``--remote-debugging-pipe``: the browser reads NUL-terminated JSON commands on its
fd 3 and writes replies and events on its fd 4.

Only the browser we launched has one. It loads extensions (``Extensions.loadUnpacked``), wakes the extension's
stopped service worker, and its end tells at once that the browser is going away: Chrome closes the pipe when it
shuts down, and shuts down when the pipe's far end is closed. Every message read is checked; one of the wrong shape
is logged and skipped, never a crash.
"""

from __future__ import annotations

import json
import logging

import attrs
import trio

from ..protocol.common import JSON, JSONObject

log = logging.getLogger("ai_bridge.browser")

MAX_MESSAGE_BYTES = 64 << 20  # a getTargets reply of a huge session stays far below this
EVENT_BUFFER = 256  # events nobody reads in time are dropped (we only watch target life cycles)


class PipeError(Exception):
    """Base of this module's failures; the actor turns them into typed errors where they matter."""


class PipeClosed(PipeError):
    """The browser closed its end (it is shutting down or gone)."""


class PipeTimeout(PipeError):
    pass


class CdpFailed(PipeError):
    """The browser answered a command with an error."""


@attrs.frozen
class CdpEvent:
    method: str
    params: JSONObject
    session_id: str | None = None


@attrs.define(eq=False)
class _Slot:
    done: trio.Event = attrs.field(factory=trio.Event)
    result: JSONObject | None = None
    error: str | None = None


class BrowserPipe:
    """One CDP client over a pair of pipe fds (takes ownership of both). `run` reads until the browser closes."""

    def __init__(self, write_fd: int, read_fd: int) -> None:
        self._out = trio.lowlevel.FdStream(write_fd)
        self._in = trio.lowlevel.FdStream(read_fd)
        self._next_id = 0
        self._pending: dict[int, _Slot] = {}
        self._send_lock = trio.StrictFIFOLock()
        self.closed = trio.Event()
        self._event_send, self.events = trio.open_memory_channel[CdpEvent](EVENT_BUFFER)

    async def run(self) -> None:
        """Read replies and events until EOF (the browser closed the pipe), then fail what is still pending."""
        buf = bytearray()
        try:
            while True:
                chunk = await self._in.receive_some(1 << 16)
                if not chunk:
                    break
                buf += chunk
                while (end := buf.find(0)) >= 0:
                    raw = bytes(buf[:end])
                    del buf[:end + 1]
                    self._dispatch(raw)
                if len(buf) > MAX_MESSAGE_BYTES:
                    log.warning("browser pipe: a message over %d bytes; closing the channel", MAX_MESSAGE_BYTES)
                    break
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.debug("browser pipe: read ended: %r", exc)
        finally:
            self.closed.set()
            self._event_send.close()
            for slot in self._pending.values():
                slot.done.set()

    def _dispatch(self, raw: bytes) -> None:
        try:
            msg = json.loads(raw, parse_constant=_refuse_constant)
        except ValueError:
            log.warning("browser pipe: not JSON: %.120r", raw)
            return
        if not isinstance(msg, dict):
            log.warning("browser pipe: not an object: %.120r", raw)
            return
        msg_id = msg.get("id")
        if isinstance(msg_id, int) and not isinstance(msg_id, bool):
            slot = self._pending.get(msg_id)
            if slot is None:
                return  # a reply to a command whose caller gave up
            error = msg.get("error")
            result = msg.get("result", {})
            if error is not None:
                slot.error = str(error.get("message")) if isinstance(error, dict) else str(error)
            elif isinstance(result, dict):
                slot.result = result
            else:
                slot.error = f"reply result is not an object: {result!r:.80}"
            slot.done.set()
            return
        method, params, session = msg.get("method"), msg.get("params", {}), msg.get("sessionId")
        if isinstance(method, str) and isinstance(params, dict):
            try:
                self._event_send.send_nowait(CdpEvent(method, params, session if isinstance(session, str) else None))
            except trio.WouldBlock:
                log.debug("browser pipe: event %s dropped (nobody reading)", method)

    async def send(self, method: str, params: JSONObject | None = None, *, session_id: str | None = None,
                   timeout: float = 10.0) -> JSONObject:
        """One command → its result object. Raises `PipeClosed`, `PipeTimeout` or `CdpFailed`."""
        if self.closed.is_set():
            raise PipeClosed(f"{method}: the browser closed its debugging pipe")
        self._next_id += 1
        msg_id = self._next_id
        frame: dict[str, JSON] = {"id": msg_id, "method": method, "params": params or {}}
        if session_id is not None:
            frame["sessionId"] = session_id
        slot = _Slot()
        self._pending[msg_id] = slot
        try:
            with trio.move_on_after(timeout) as scope:
                async with self._send_lock:
                    await self._out.send_all(json.dumps(frame).encode() + b"\0")
                await slot.done.wait()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise PipeClosed(f"{method}: the browser closed its debugging pipe") from exc
        finally:
            del self._pending[msg_id]
        if scope.cancelled_caught:
            raise PipeTimeout(f"{method}: no answer on the debugging pipe within {timeout:g}s")
        if slot.error is not None:
            raise CdpFailed(f"{method}: {slot.error}")
        if slot.result is None:
            raise PipeClosed(f"{method}: the browser closed its debugging pipe")
        return slot.result

    async def aclose(self) -> None:
        with trio.CancelScope(shield=True):
            await self._out.aclose()
            await self._in.aclose()


def _refuse_constant(name: str) -> float:
    # NaN / Infinity are not JSON; Chrome never sends them, and nothing we read may carry them.
    raise ValueError(f"{name} is not JSON")

