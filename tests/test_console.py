"""The live console against a live `ai-bridge serve`: the registry, the helpers, faults only with --allow-faults, and
the interactive REPL driven through a pseudo-terminal (line editing, multi-line blocks, Ctrl-C, completion, history,
leaving without disturbing the server, and a console left open not holding up shutdown)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import stat
import sys
import termios
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .conftest import REPO, find_actor, serve_command


async def console(env: dict[str, str], *lines: str, args: tuple[str, ...] = ()) -> tuple[int, str, str]:
    cmd = [*serve_command(), "console", *args]
    for line in lines:
        cmd += ["-c", line]
    proc = await trio.run_process(cmd, env=env, cwd=REPO, capture_stdout=True, capture_stderr=True, check=False)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


async def ok(env: dict[str, str], *lines: str, args: tuple[str, ...] = ()) -> str:
    code, out, err = await console(env, *lines, args=args)
    assert code == 0, out + err
    return out


async def evaluating_a_sleep(env: dict[str, str]) -> None:
    """Until the server runs another console's evaluation (a sleep): its task tree, seen from a console of our own,
    shows that console's task waiting inside `evaluate`."""
    async def seen() -> bool:
        out = await ok(env, "tasks()")
        return any(re.search(r"actors/console\.py:\d+ evaluate$", line) and "(this console)" not in line
                   for line in out.splitlines())

    with trio.fail_after(30):
        while not await seen():
            await trio.sleep(0.1)


@contextlib.asynccontextmanager
async def serving(env: dict[str, str], *args: str, errlog: Path | None = None,
                  ) -> AsyncIterator[tuple[ClientSession, int]]:
    params = StdioServerParameters(command=serve_command()[0], args=[*serve_command()[1:], "serve", *args],
                                   env=env, cwd=str(REPO))
    with contextlib.ExitStack() as files:
        err = files.enter_context(open(errlog, "w")) if errlog else sys.stderr  # stderr: shown when a test fails
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            pid = (await session.call_tool("bridge_status", {})).structured_content["pid"]
            yield session, pid


async def test_registry_and_helpers(server_env: dict[str, str], state_dir: Path) -> None:
    async with serving(server_env) as (session, pid):
        record_path = state_dir / "servers" / f"{pid}.json"
        with trio.fail_after(10):
            while not record_path.exists() or not json.loads(record_path.read_text()).get("relayPort"):
                await trio.sleep(0.05)
        record = json.loads(record_path.read_text())
        assert record["pid"] == pid and 8766 <= record["discoveryPort"] <= 8775 and record["relayPort"] > 0
        sock = Path(record["socket"])
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600 and stat.S_IMODE(os.stat(record_path).st_mode) == 0o600

        out = await ok(server_env, "tree()")
        assert re.search(r"session_store\s+running · restarts 0 · inbox 0", out), out
        assert "link (rest_for_one)" in out and "jobs" in out and "mcp_front" in out
        out = await ok(server_env, "tasks()")
        # The trio task tree, with where each task waits: the relay's expiry loop, this console's own task.
        assert re.match(r"\d+ tasks\n", out) and "Relay.expire" in out and "(this console)" in out
        assert "'connected': False" in await ok(server_env, "relay()")
        out = await ok(server_env, "tabs()")
        assert re.search(r"'chatgpt': \{'provider': 'chatgpt',\s+'tabId': None", out), out
        assert "'browserTabs': '[extension_not_connected]" in out  # the browser's tab list needs the extension
        assert (await ok(server_env, "history()")).strip() == "[]"
        assert (await ok(server_env, "await jobs()")).strip() == "[]"
        # Blocks, statements and top-level await run in the server's loop; the last expression is shown.
        assert (await ok(server_env, "x = 0\nfor i in range(4):\n    x += i\nawait trio.sleep(0)\nx")).strip() == "6"
        assert (await ok(server_env, "print('from', 'server'); trio.lowlevel.current_root_task().name")) == (
            "from server\n'<init>'\n")

        # Errors are shown (exit 1 for scripts); the server and the console live on.
        code, out, _ = await console(server_env, "1/0")
        assert code == 1 and "ZeroDivisionError: division by zero" in out and "console.py" not in out
        # Faults are off without --allow-faults.
        code, out, _ = await console(server_env, "crash('session_store')")
        assert code == 1 and "--allow-faults" in out
        code, out, _ = await console(server_env, "drop_extension()")
        assert code == 1 and "--allow-faults" in out
        assert "Fault helpers are off" in await ok(server_env, "help()")

        # Restart from the console: graceful, through the supervisor.
        assert "restarted session_store: running, restarts 1" in await ok(server_env, "restart('session_store')")
        status = (await session.call_tool("bridge_status", {})).structured_content
        store = find_actor(status, "session_store")
        assert store["restarts"] == 1 and store["lastError"] == "restarted on request"
        code, out, _ = await console(server_env, "restart('nope')")
        assert code == 1 and "no actor named 'nope'" in out
    assert not sock.exists() and not record_path.exists()  # removed on shutdown
    code, _, err = await console(server_env, "tree()")
    assert code == 2 and "no running ai-bridge server" in err


async def test_faults_only_with_allow_faults(server_env: dict[str, str]) -> None:
    async with serving(server_env, "--allow-faults") as (session, _pid):
        assert "crash('actor')" in await ok(server_env, "help()")
        assert "armed crash on session_store" in await ok(server_env, "crash('session_store')")
        assert "armed slow on session_store" in await ok(server_env, "slow('session_store', 0.2)")
        status = (await session.call_tool("bridge_status", {})).structured_content  # the crash fires here
        store = find_actor(status, "session_store")
        assert store["restarts"] == 1 and "injected fault" in store["lastError"]
        assert "no extension was connected" in await ok(server_env, "drop_extension()")


async def test_choosing_among_several_servers(server_env: dict[str, str], state_dir: Path) -> None:
    async with serving(server_env) as (_s1, pid1), serving(server_env) as (_s2, pid2):
        code, _, err = await console(server_env, "1")
        assert code == 2 and "several servers are running" in err and str(pid1) in err and str(pid2) in err
        got = await ok(server_env, "import os; os.getpid()", args=("--pid", str(pid2)))
        assert got.strip() == str(pid2)
        sock = json.loads((state_dir / "servers" / f"{pid1}.json").read_text())["socket"]
        assert (await ok(server_env, "import os; os.getpid()", args=("--socket", sock))).strip() == str(pid1)
        code, _, err = await console(server_env, "1", args=("--pid", "1"))
        assert code == 2 and "no running ai-bridge server with pid 1" in err
    # A record left by a killed server is ignored and cleaned up.
    stale = state_dir / "servers" / "999999.json"
    stale.write_text(json.dumps({"pid": 999999, "socket": str(state_dir / "gone.sock")}))
    code, _, err = await console(server_env, "1")
    assert code == 2 and "no running ai-bridge server" in err and not stale.exists()


class Pty:
    """`ai-bridge console` on a pseudo-terminal, as a person would run it (it is the session leader)."""

    def __init__(self, master: int, proc: trio.Process) -> None:
        self.stream = trio.lowlevel.FdStream(master)
        self.proc = proc
        self.seen = ""

    async def expect(self, pattern: str, timeout: float = 15) -> str:
        with trio.move_on_after(timeout) as waited:
            while not (m := re.search(pattern, self.seen)):
                data = await self.stream.receive_some(65536)
                if not data:
                    raise AssertionError(f"console closed; waiting for {pattern!r} in {self.seen!r}")
                self.seen += data.decode(errors="replace").replace("\r\n", "\n")
        if waited.cancelled_caught:
            raise AssertionError(f"no {pattern!r} within {timeout} s; the console printed {self.seen!r}")
        before, self.seen = self.seen[: m.end()], self.seen[m.end():]
        return before

    async def send(self, text: str) -> None:
        await self.stream.send_all(text.encode())


@contextlib.asynccontextmanager
async def pty_console(env: dict[str, str]) -> AsyncIterator[Pty]:
    master, slave = os.openpty()

    def make_controlling_tty() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # so Ctrl-C on the terminal becomes SIGINT, as in a real shell

    proc = await trio.lowlevel.open_process(
        [*serve_command(), "console"], stdin=slave, stdout=slave, stderr=slave, env={**env, "TERM": "dumb"},
        cwd=REPO, start_new_session=True, preexec_fn=make_controlling_tty)
    os.close(slave)
    pty = Pty(master, proc)  # the stream owns the master fd from here on
    try:
        yield pty
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        await pty.stream.aclose()


async def test_interactive_console_on_a_pty(server_env: dict[str, str], state_dir: Path) -> None:
    async with serving(server_env) as (session, pid):
        async with pty_console(server_env) as con:
            await con.expect(rf"console — pid {pid}.*\n>>> ")
            await con.send("tree()\n")
            assert "session_store" in await con.expect(r"\n>>> ")
            # A multi-line block: continuation prompts, then it runs in the server with top-level await.
            await con.send("async with trio.open_nursery() as n:\n")
            await con.expect(r"\.\.\. ")
            await con.send("    n.start_soon(trio.sleep, 0.01)\n")
            await con.expect(r"\.\.\. ")
            await con.send("\n")
            await con.expect(r">>> ")
            await con.send("tasks_before = len(trio.lowlevel.current_root_task().child_nurseries); 'block ok'\n")
            assert "'block ok'" in await con.expect(r"\n>>> ")
            # Ctrl-C cancels a long await in the server and gives the prompt back.
            await con.send("await trio.sleep(1000)\n")
            await con.expect(r"trio\.sleep\(1000\)\n")  # readline echoed the line: the console has read it
            await evaluating_a_sleep(server_env)  # and the server runs it
            await con.send("\x03")
            assert "KeyboardInterrupt" in await con.expect(r"\n>>> ")
            # Tab completion asks the server's namespace.
            await con.send("restar\t")
            await con.expect(r"restart")
            await con.send("\x15")  # Ctrl-U: clear the line
            await con.send("'still here'\n")
            assert "'still here'" in await con.expect(r"\n>>> ")
            await con.send("\x04")  # Ctrl-D leaves
            with trio.fail_after(10):
                assert await con.proc.wait() == 0
        history = state_dir / "console_history"
        assert "await trio.sleep(1000)" in history.read_text()
        assert stat.S_IMODE(os.stat(history).st_mode) == 0o600
        # Leaving never disturbed the server.
        status = (await session.call_tool("bridge_status", {})).structured_content
        assert find_actor(status, "console")["restarts"] == 0



async def test_an_open_console_does_not_hold_up_shutdown(server_env: dict[str, str], tmp_path: Path) -> None:
    errlog = tmp_path / "serve.log"
    async with contextlib.AsyncExitStack() as outer:
        async with serving(server_env, errlog=errlog):
            con = await outer.enter_async_context(pty_console(server_env))
            await con.expect(r">>> ")
            await con.send("await trio.sleep(1000)\n")  # even in the middle of an evaluation
            await evaluating_a_sleep(server_env)
        # The MCP client closed stdin and `serving` waited for the server process to exit.
        await con.expect(r"server closed the console")
        with trio.fail_after(10):
            assert await con.proc.wait() == 1
    # It stopped by itself: all the way to its last line, which a kill by the SDK client (after 2 s) would cut off.
    log = errlog.read_text()
    assert "shutting down (stdin closed)" in log and "app: stopped" in log and "cancelling them" not in log


def test_socket_path_falls_back_to_a_private_dir_for_deep_state_dirs(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from actors.console import socket_path
    from supervisor.errors import StateFileError

    assert socket_path(tmp_path, 42) == tmp_path / "console-42.sock"
    deep = tmp_path / ("d" * 120)
    runtime_dir = tmp_path / "run"
    runtime_dir.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime_dir))
    path = socket_path(deep, 42)
    assert path == runtime_dir / f"ai-bridge-{os.getuid()}" / "console-42.sock"
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    # Someone else's name in a shared temp dir (here: a symlink) is refused, not used.
    path.parent.rmdir()
    path.parent.symlink_to(tmp_path)
    with pytest.raises(StateFileError, match="not a directory of ours"):
        socket_path(deep, 42)


async def test_an_interrupt_that_overtakes_its_eval_still_cancels_it() -> None:
    """Ctrl-C right after Enter: the interrupt can reach the server before the eval has started (it is still
    queued behind another one). It must cancel that eval, not be dropped and leave it running forever."""
    from actors.console import ClientSession as ConsoleSession

    ours, theirs = trio.socket.socketpair()
    client = trio.SocketStream(ours)
    session = ConsoleSession(trio.SocketStream(theirs), {"trio": trio})
    buf = b""

    async def reply() -> dict[str, object]:
        nonlocal buf
        while b"\n" not in buf:
            buf += await client.receive_some(65536)
        line, buf = buf.split(b"\n", 1)
        out: dict[str, object] = json.loads(line)
        return out

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.run, {"banner": "test"})
            assert (await reply()) == {"banner": "test"}
            # Both evals and the interrupt in one write: the interrupt is read while the first eval runs and the
            # second is still queued.
            await client.send_all(b"".join(json.dumps(m).encode() + b"\n" for m in (
                {"op": "eval", "src": "await trio.sleep(1000)"},
                {"op": "eval", "src": "await trio.sleep(1000)"},
                {"op": "interrupt"})))
            first, second = await reply(), await reply()
            assert first["error"] and "KeyboardInterrupt" in str(first["out"])
            assert second["error"] and "KeyboardInterrupt" in str(second["out"])
            # Evals after the interrupt run normally.
            await client.send_all(json.dumps({"op": "eval", "src": "6 * 7"}).encode() + b"\n")
            assert "42" in str((await reply())["out"])
            await client.aclose()
