"""``ai-bridge console``: attach to a running server's console (actors/console.py).

The REPL runs here, in the client: readline editing, history (``<state-dir>/console_history``), tab completion
(asked of the server's namespace), multi-line blocks (``code.InteractiveConsole`` with top-level ``await`` allowed,
as ``python -m asyncio`` does). Each complete block is sent to the server and evaluated in its trio loop. Ctrl-C
while a block runs cancels it in the server; Ctrl-D or ``exit`` leaves, and the server never notices.
"""

from __future__ import annotations

import ast
import code
import contextlib
import json
import logging
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import attrs

from ..errors import StateFileError
from ..files import ensure_private_dir, open_private, open_state_folder, read_private, set_aside
from ..paths import server_records
from ..safetext import for_terminal, shown_name

log = logging.getLogger("ai_bridge.console")

HISTORY_FILE = "console_history"
HISTORY_LENGTH = 2000


class ConsoleError(Exception):
    """Printed as one line, exit 2."""


PID_MAX = 4_194_304  # Linux's highest possible pid
MAX_RECORD_BYTES = 64 * 1024


@attrs.frozen
class ServerRecord:
    """A server's registration (``<state-dir>/servers/<pid>.json``, actors/console.py), every field checked."""

    pid: int
    socket: Path
    project: str
    started_at: str

    def describe(self) -> str:
        return f"pid {self.pid} (project {self.project}, since {self.started_at})"


def parse_record(raw: bytes) -> ServerRecord:
    """A server record, or ValueError: records are data another process left, never trusted (issue 36)."""
    try:
        data = json.loads(raw)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(data, dict):
        raise ValueError("not an object")
    pid, sock = data.get("pid"), data.get("socket")
    if isinstance(pid, bool) or not isinstance(pid, int) or not 0 < pid <= PID_MAX:
        raise ValueError("pid is not a process id")
    if not isinstance(sock, str) or not sock.startswith("/") or not 0 < len(sock) <= 4096 or "\x00" in sock:
        raise ValueError("socket is not an absolute path")
    project, started = data.get("project", ""), data.get("startedAt", "")
    if not isinstance(project, str) or not isinstance(started, str) or len(project) > 1024 or len(started) > 64:
        raise ValueError("project or startedAt is not a short string")
    return ServerRecord(pid, Path(sock), shown_name(project), shown_name(started))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive, though not ours to attach to
    return True


def running_servers(state_dir: Path) -> list[ServerRecord]:
    """Registered servers of this state dir whose process is alive; records of dead ones are removed, bad ones set
    aside (``.bad``). Only regular files in a real ``servers`` folder of ours are read, never blocking."""
    out: list[ServerRecord] = []
    try:
        fd = open_state_folder(server_records(state_dir))
    except StateFileError as exc:
        raise ConsoleError(str(exc)) from None
    if fd is None:
        return out
    try:
        for name in sorted(os.listdir(fd)):
            if not name.endswith(".json") or name.startswith("."):
                continue
            try:
                raw = read_private(name, MAX_RECORD_BYTES, dir_fd=fd)
                if raw is None:
                    continue
                record = parse_record(raw)
            except (OSError, StateFileError, ValueError, UnicodeDecodeError) as exc:
                log.warning("server record %s is unreadable (%s); set aside", shown_name(name), exc)
                with contextlib.suppress(OSError):
                    set_aside(fd, name)
                continue
            if _alive(record.pid):
                out.append(record)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)  # left by a server that was killed
    finally:
        os.close(fd)
    return out


def choose(state_dir: Path, pid: int | None, socket_path: Path | None) -> Path:
    if socket_path is not None:
        return socket_path
    servers = running_servers(state_dir)
    if pid is not None:
        for record in servers:
            if record.pid == pid:
                return record.socket
        raise ConsoleError(f"no running ai-bridge server with pid {pid} in {state_dir}")
    if not servers:
        raise ConsoleError(f"no running ai-bridge server found in {state_dir} (is `ai-bridge serve` up? "
                           "pass --state-dir if it uses another one)")
    if len(servers) > 1:
        listing = "; ".join(r.describe() for r in servers)
        raise ConsoleError(f"several servers are running: {listing}. Pick one with --pid")
    return servers[0].socket


class Connection:
    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(str(path))
        except OSError as exc:
            self.sock.close()
            raise ConsoleError(f"cannot connect to {path}: {exc.strerror or exc} (did the server stop?)") from exc
        self.file = self.sock.makefile("rb")

    def receive(self) -> dict[str, Any]:
        line = self.file.readline()
        if not line:
            raise EOFError("the server closed the console (it is shutting down)")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def send(self, obj: dict[str, Any]) -> None:
        self.sock.sendall((json.dumps(obj) + "\n").encode())

    def evaluate(self, src: str) -> dict[str, Any]:
        self.send({"op": "eval", "src": src})
        while True:
            try:
                return self.receive()
            except KeyboardInterrupt:
                self.send({"op": "interrupt"})  # cancel it in the server, then read its answer

    def complete(self, text: str) -> list[str]:
        self.send({"op": "complete", "text": text})
        matches: list[str] = self.receive().get("matches", [])
        return matches

    def close(self) -> None:
        self.file.close()
        self.sock.close()


class RemoteConsole(code.InteractiveConsole):
    """InteractiveConsole whose complete blocks run in the server."""

    def __init__(self, conn: Connection, *, interactive: bool) -> None:
        super().__init__()
        self.conn = conn
        self.interactive = interactive
        self.failed = False
        # Compile locally only to tell complete blocks from incomplete ones; top-level await must count as valid.
        self.compile.compiler.flags |= ast.PyCF_ALLOW_TOP_LEVEL_AWAIT

    def runsource(self, source: str, filename: str = "<console>", symbol: str = "single") -> bool:
        try:
            if self.compile(source, filename, symbol) is None:
                return True  # incomplete: read more lines
        except (SyntaxError, ValueError, OverflowError):
            pass  # let the server report the error exactly as Python words it
        if source.strip() in ("exit", "quit", "exit()", "quit()"):
            raise SystemExit(0)
        reply = self.conn.evaluate(source)
        self.failed = self.failed or bool(reply.get("error"))
        self.write_out(reply.get("out", ""))
        return False

    def write_out(self, text: str) -> None:
        sys.stdout.write(for_terminal(text))  # what the server printed may be a page's text (jobs(), history())
        sys.stdout.flush()

    def raw_input(self, prompt: str = "") -> str:
        return input(prompt if self.interactive else "")


def _setup_readline(conn: Connection, state_dir: Path) -> None:
    try:
        import readline
    except ImportError:
        return
    history = state_dir / HISTORY_FILE
    with contextlib.suppress(OSError):
        readline.read_history_file(history)
    readline.set_history_length(HISTORY_LENGTH)
    matches: list[str] = []

    def complete(text: str, state: int) -> str | None:
        nonlocal matches
        if state == 0:
            try:
                matches = conn.complete(text)
            except (OSError, EOFError, ValueError):
                matches = []
        return matches[state] if state < len(matches) else None

    readline.set_completer(complete)
    readline.set_completer_delims(" \t\n`~!@#$%^&*()-=+[{]}\\|;:'\",<>/?")
    readline.parse_and_bind("tab: complete")

    def save() -> None:
        # What was typed may include secrets: a 0600 file, never written through a planted symlink (readline
        # would follow one), so it goes to a fresh temp file that replaces the history atomically.
        with contextlib.suppress(OSError, StateFileError):
            ensure_private_dir(state_dir)
            tmp = history.with_name(f".{HISTORY_FILE}.{os.getpid()}.tmp")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            os.close(open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
            readline.write_history_file(tmp)
            os.replace(tmp, history)

    import atexit

    atexit.register(save)


def console_main(state_dir: Path, *, pid: int | None = None, socket_path: Path | None = None,
                 commands: list[str] | None = None) -> int:
    try:
        conn = Connection(choose(state_dir, pid, socket_path))
    except ConsoleError as exc:
        print(for_terminal(f"ai-bridge console: {exc}"), file=sys.stderr)
        return 2
    try:
        banner = conn.receive()
        interactive = not commands and sys.stdin.isatty()
        console = RemoteConsole(conn, interactive=interactive)
        if commands:
            for src in commands:
                reply = conn.evaluate(src)
                console.failed = console.failed or bool(reply.get("error"))
                console.write_out(reply.get("out", ""))
            return 1 if console.failed else 0
        if interactive:
            _setup_readline(conn, state_dir)
            # Ctrl-C must interrupt the evaluation even when we were started with SIGINT ignored (a background job
            # of a non-interactive shell inherits SIG_IGN, and Python then leaves it ignored).
            signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            console.interact(banner=banner.get("banner", "") if interactive else "", exitmsg="")
        except SystemExit:
            pass
        return 1 if console.failed and not interactive else 0
    except EOFError as exc:
        print(f"\nai-bridge console: {exc}", file=sys.stderr)
        return 1
    finally:
        conn.close()
