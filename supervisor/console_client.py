"""``ai-bridge console``: connect to a running server's console socket (see actors/console.py)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

PROMPT = b">>> "


def find_socket(state_dir: Path, pid: int | None) -> Path:
    if pid is not None:
        path = state_dir / f"console-{pid}.sock"
        if not path.exists():
            raise SystemExit(f"ai-bridge console: no server with pid {pid} in {state_dir}")
        return path
    found = sorted(state_dir.glob("console-*.sock"))
    if not found:
        raise SystemExit(f"ai-bridge console: no running server found in {state_dir} (is `ai-bridge serve` up?)")
    if len(found) > 1:
        pids = ", ".join(p.stem.split("-", 1)[1] for p in found)
        raise SystemExit(f"ai-bridge console: several servers are running (pids {pids}); pick one with --pid")
    return found[0]


def _read_prompt(sock: socket.socket) -> str:
    buf = b""
    while not buf.endswith(PROMPT):
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf.removesuffix(PROMPT).decode("utf-8", errors="replace")


def console_main(state_dir: Path, pid: int | None, commands: list[str]) -> int:
    path = find_socket(state_dir, pid)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except OSError as exc:
            raise SystemExit(f"ai-bridge console: cannot connect to {path}: {exc} (stale socket?)") from exc
        banner = _read_prompt(sock)
        interactive = not commands and sys.stdin.isatty()
        if interactive:
            print(banner, end="")
        lines = iter(commands) if commands else None
        while True:
            try:
                line = next(lines) if lines is not None else input(PROMPT.decode() if interactive else "")
            except (StopIteration, EOFError):
                return 0
            sock.sendall(line.encode() + b"\n")
            out = _read_prompt(sock)
            print(out, end="")
