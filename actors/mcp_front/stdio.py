"""MCP's stdio transport, our side of it: stdin lines checked before the SDK sees them, and one writer for stdout.

- Stdin is read by our own line iterator over a dup of fd 0 in an abandonable worker thread: the SDK's default
  reader blocks in a thread that cannot be abandoned, so cancelling the server while stdin is still open would hang
  (NOTES.md, "stdin pitfall").
- Every line must be one JSON-RPC 2.0 message. A line that is not JSON gets ``-32700``; one that is JSON but not a
  valid message (``"jsonrpc": "1.0"``, array params, a batch, no method) gets ``-32600``, with its ``id`` when one
  can be read. Either way the client is never left waiting, and the SDK only sees valid messages.
- A line may hold at most `MAX_LINE` bytes (documented in docs/install.md); a longer one is read through to its end
  (never buffered whole) and answered with ``-32600``.
- stdout belongs to JSON-RPC: every line goes through `StdoutWriter`, one lock for all writers.
- One task reads stdin for the server's whole life (`StdinPump`), so a client that closes stdin while the SDK is
  still importing is seen at once.
- At stdin EOF, requests already read get up to `EOF_GRACE_S` to be answered before the SDK sees the EOF (it
  cancels whatever is still running then): a client that pipes a few requests and closes stdin gets its replies.
"""

from __future__ import annotations

import io
import json
import logging
import os
from pathlib import Path
from typing import Any

import trio

import supervisor

log = logging.getLogger("ai_bridge.mcp_front")

MAX_LINE = 8 * 1024 * 1024  # bytes in one JSON-RPC line; questions are capped far below this
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
EOF_GRACE_S = 0.5  # long calls (asks) are not waited for: the client that closed stdin has gone


class StdoutWriter:
    """The SDK's stdout: a private dup of fd 1, one lock for every line, and the SDK's own reply to an
    initialize we already answered dropped (compared with ours first: they must agree)."""

    def __init__(self, fd: int = 1) -> None:
        self._stream = trio.lowlevel.FdStream(os.dup(fd))
        self._lock = trio.Lock()
        self._buf = ""
        self.suppress: dict[object, dict[str, object]] = {}  # JSON-RPC id -> the reply we sent early
        self._pending: set[object] = set()  # ids of requests read and not answered yet
        self._all_answered = trio.Event()
        self._all_answered.set()

    def expect(self, request_id: object) -> None:
        """A request was read: its reply is due."""
        self._pending.add(request_id)
        if self._all_answered.is_set():
            self._all_answered = trio.Event()

    @property
    def unanswered(self) -> bool:
        """Is a request read still waiting for its reply?"""
        return bool(self._pending)

    async def drain(self, within: float) -> None:
        """Wait until every request read has been answered, at most `within` seconds."""
        with trio.move_on_after(within):
            await self._all_answered.wait()

    def _answered(self, line: str) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            return
        if isinstance(msg, dict) and "method" not in msg:
            self._pending.discard(msg.get("id"))
            if not self._pending:
                self._all_answered.set()

    async def write(self, text: str) -> None:
        self._buf += text
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            await self._emit(line)

    async def flush(self) -> None:
        pass  # every complete line is written at once

    async def _emit(self, line: str) -> None:
        if self.suppress:
            try:
                msg = json.loads(line)
            except ValueError:
                msg = None
            if isinstance(msg, dict) and "method" not in msg and msg.get("id") in self.suppress:
                ours = self.suppress.pop(msg["id"])
                if msg.get("result") != ours.get("result"):
                    log.warning("early initialize reply differed from the SDK's: ours %s, SDK %s",
                                ours.get("result"), msg.get("result"))
                return
        await self.send_line(line)

    async def send_line(self, line: str) -> None:
        async with self._lock:
            await self._stream.send_all((line + "\n").encode("utf-8"))
        if self._pending:
            self._answered(line)

    async def send_error(self, request_id: object, code: int, message: str) -> None:
        reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
        await self.send_line(json.dumps(reply, separators=(",", ":")))


def check_message(line: str) -> tuple[object, int, str] | dict[str, Any]:
    """The message, for a valid JSON-RPC 2.0 message; else (id, error code, message) to reply with."""
    try:
        msg = json.loads(line)
    except RecursionError:
        return None, PARSE_ERROR, "Parse error: nested too deeply"
    except ValueError as exc:
        return None, PARSE_ERROR, f"Parse error: {exc}"
    if isinstance(msg, list):
        return None, INVALID_REQUEST, "Invalid Request: batches are not supported"
    if not isinstance(msg, dict):
        return None, INVALID_REQUEST, "Invalid Request: a message must be a JSON object"
    raw_id = msg.get("id")
    rid = raw_id if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) else None
    if msg.get("jsonrpc") != "2.0":
        return rid, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"'
    if "id" in msg and rid is None:
        return None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer"
    if "method" in msg:
        if not isinstance(msg["method"], str):
            return rid, INVALID_REQUEST, "Invalid Request: method must be a string"
        if "params" in msg and not isinstance(msg["params"], dict):
            return rid, INVALID_REQUEST, "Invalid Request: params must be an object"
        if "\\ud" in line.lower() and _has_lone_surrogate(msg):
            # JSON lets "\udcff" through, Unicode does not: the SDK's parser drops such a request unanswered.
            return rid, INVALID_PARAMS, "Invalid params: a string holds a lone surrogate (an escape such as \\udcff " \
                "that is no Unicode character)"
        return msg
    if "id" in msg and ("result" in msg or "error" in msg):
        return msg  # a response to one of our requests
    return rid, INVALID_REQUEST, "Invalid Request: neither a request, a notification nor a response"


def _has_lone_surrogate(msg: object) -> bool:
    stack = [msg]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if any("\ud800" <= c <= "\udfff" for c in v):
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


class StdinLines:
    """Async iterator of valid JSON-RPC lines from a private dup of fd 0; every read can be abandoned on cancel.
    Invalid lines are answered on `stdout` and skipped."""

    def __init__(self, stdout: StdoutWriter, fd: int = 0) -> None:
        self._file = io.open(os.dup(fd), "rb", buffering=65536, closefd=True)  # noqa: UP020 - explicit fd open
        self._stdout = stdout

    def __aiter__(self) -> StdinLines:
        return self

    def close(self) -> None:
        """Close our dup of the fd, once nothing reads it (a read still running in an abandoned thread would fail)."""
        self._file.close()

    def _readline(self) -> bytes | None:
        """One line, or None for a line over MAX_LINE (read through to its newline, not kept)."""
        line = self._file.readline(MAX_LINE + 1)
        if len(line) <= MAX_LINE or line.endswith(b"\n"):
            return line
        while True:
            rest = self._file.readline(1 << 20)
            if not rest or rest.endswith(b"\n"):
                return None

    async def __anext__(self) -> str:
        while True:
            raw = await trio.to_thread.run_sync(self._readline, abandon_on_cancel=True)
            if raw is None:
                log.warning("a JSON-RPC line over %d bytes was refused", MAX_LINE)
                await self._stdout.send_error(None, INVALID_REQUEST,
                                              f"Invalid Request: line longer than {MAX_LINE} bytes")
                continue
            if not raw:
                raise StopAsyncIteration
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            checked = check_message(line)
            if isinstance(checked, dict):
                if "method" in checked and "id" in checked:
                    self._stdout.expect(checked["id"])
                return line
            rid, code, message = checked
            log.info("refused a JSON-RPC line: %s", message)
            await self._stdout.send_error(rid, code, message)


class StdinPump:
    """Stdin read by one task for the server's whole life, into a channel that the boot (which answers
    ``initialize`` while the SDK imports) and then the SDK read from. A read in a worker thread cannot be cancelled
    without losing the line it is reading, so no other reader may ever take over from it; and EOF is seen even
    while the SDK is still importing (`eof`)."""

    def __init__(self, lines: StdinLines, stdout: StdoutWriter, buffer: int = 16) -> None:
        self._lines = lines
        self._stdout = stdout
        self._send, self._recv = trio.open_memory_channel[str](buffer)
        self.eof = trio.Event()

    async def run(self) -> None:
        async with self._send:
            async for line in self._lines:
                await self._send.send(line)
        self.eof.set()

    def __aiter__(self) -> StdinPump:
        return self

    async def __anext__(self) -> str:
        try:
            return await self._recv.receive()
        except trio.EndOfChannel:
            # Here, where the reader meets EOF, not where the pump did: what was read has been handed on.
            await self._stdout.drain(EOF_GRACE_S)
            raise StopAsyncIteration from None


class Replay:
    """Lines already read (the early-answered initialize) first, then the rest of stdin."""

    def __init__(self, first: list[str], rest: StdinPump) -> None:
        self._first = list(first)
        self._rest = rest

    def __aiter__(self) -> Replay:
        return self

    async def __anext__(self) -> str:
        if self._first:
            return self._first.pop(0)
        return await self._rest.__anext__()


def handshake_versions() -> tuple[str, ...]:
    """The SDK's own table of handshake protocol versions, read without importing the SDK (its import costs
    over a second and this is needed before it finishes)."""
    import importlib.util

    spec = importlib.util.find_spec("mcp_types")
    if spec is None or not spec.submodule_search_locations:
        return ()
    path = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    module_spec = importlib.util.spec_from_file_location("_ai_bridge_mcp_versions", path)
    if module_spec is None or module_spec.loader is None:
        return ()
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except (OSError, SyntaxError, ImportError):
        return ()
    return tuple(getattr(module, "HANDSHAKE_PROTOCOL_VERSIONS", ()))


def early_initialize_reply(line: str, versions: tuple[str, ...], instructions: str,
                           icons: tuple[dict[str, Any], ...] = ()) -> dict[str, Any] | None:
    """The reply to a plain ``initialize`` whose protocol version the SDK supports — exactly what the SDK answers
    (tools and tasks capabilities as actor.py sets them, server info, instructions, the requested version echoed as
    MCP negotiation requires; `StdoutWriter` compares it with the SDK's own reply and logs any difference).
    None for anything else: then the SDK answers when it is loaded."""
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(msg, dict) or msg.get("method") != "initialize" or "id" not in msg:
        return None
    params = msg.get("params")
    version = params.get("protocolVersion") if isinstance(params, dict) else None
    if version not in versions:
        return None
    return {"jsonrpc": "2.0", "id": msg["id"], "result": {
        "capabilities": {"tools": {"listChanged": False},
                         "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}},
        "instructions": instructions,
        "protocolVersion": version,
        "serverInfo": {"name": "ai-bridge", "version": supervisor.__version__, **({"icons": list(icons)} if icons
                                                                                   else {})},
    }}
