"""Every command ends an error with one line that names it and its fix, and a non-zero exit (issue 33): no
traceback unless --debug, a closed stdout ends quietly. Real `ai-bridge` processes, no browser: each error here
comes before a browser would start."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
import trio

from supervisor.constants import SHARED

from .conftest import REPO, serve_command
from .e2e import CHROMIUM


async def run(env: dict[str, str], *args: str, stdout: int | None = None) -> trio.CompletedProcess[bytes]:
    out: dict[str, object] = {"capture_stdout": True} if stdout is None else {"stdout": stdout}
    return await trio.run_process([*serve_command(), *args], env=env, cwd=REPO, capture_stderr=True, check=False,
                                  stdin=b"", **out)  # type: ignore[arg-type]


async def test_busy_discovery_ports_are_one_line_from_every_command(server_env: dict[str, str]) -> None:
    port = SHARED.discovery_ports.start + 3
    holder = socket.socket()
    # Another program listening there. (SO_REUSEADDR: a connection an earlier test left in TIME_WAIT on this port,
    # test_hardening's pinned-port restart makes one on purpose, must not stop the holder itself.)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", port))
    holder.listen(1)
    expected = (f"ai-bridge: [ports_in_use] discovery: port {port} all in use ([Errno 98] Address already in use) "
                "Stop some other ai-bridge servers, or pin a free port of that range with --discovery-port.")
    pinned = ("--discovery-port", str(port), f"--browser-path={CHROMIUM}")
    try:
        for command in (["ask", *pinned, "What is 2+2?"], ["doctor", "--live", *pinned],
                        ["check", "--tag", "smoke", *pinned]):
            done = await run(server_env, *command)
            err = done.stderr.decode()
            assert done.returncode == 1, (command, err)
            assert err.splitlines() == [expected], (command, err)  # that one line, nothing around it
            assert done.stdout == b"", command
        # doctor still prints its table, the failure a row with its fix.
        done = await run(server_env, "doctor", *pinned)
        out = done.stdout.decode()
        assert done.returncode == 1 and "Traceback" not in done.stderr.decode(), out + done.stderr.decode()
        row = next(ln for ln in out.splitlines() if ln.startswith("ai-bridge started"))
        assert "FAIL" in row and f"[ports_in_use] discovery: port {port} all in use" in row, out
        assert "fix: Stop some other ai-bridge servers" in out and out.rstrip().endswith("some checks failed")
        assert next(ln for ln in out.splitlines() if ln.startswith("browser found")).split()[2] == "ok", out
        # --debug adds the traceback, and the same line still ends it.
        done = await run(server_env, "ask", "--debug", *pinned, "What is 2+2?")
        err = done.stderr.decode()
        assert done.returncode == 1 and "Traceback (most recent call last)" in err and "PortsInUse" in err
        assert err.rstrip().splitlines()[-1] == expected
    finally:
        holder.close()


async def test_a_closed_stdout_ends_quietly(server_env: dict[str, str]) -> None:
    """`ai-bridge … | head` once head has gone: no BrokenPipeError, no "Exception ignored", the status of a program
    SIGPIPE ended (141), as `yes | head` leaves for `yes`."""
    for command in (["check", "--list"], ["ask", "--dry-run", "What is 2+2?"], ["extension-path"]):
        read, write = os.pipe()
        os.close(read)  # the reader is gone before anything is written
        try:
            done = await run(server_env, *command, stdout=write)
        finally:
            os.close(write)
        assert done.returncode == 141, (command, done.stderr.decode())
        assert done.stderr == b"", (command, done.stderr.decode())


@pytest.mark.parametrize("job_id", ["nope", "job-0123456789abcdef0123"])
async def test_jobs_get_of_an_unknown_job_is_one_line_and_exit_1(server_env: dict[str, str], job_id: str) -> None:
    """docs/cli.md: "its typed error … (exit 1, also for an unknown id)" — a malformed id too (it exited 2)."""
    done = await run(server_env, "jobs", "get", job_id)
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert len(err.splitlines()) == 1 and job_id in err and "ai-bridge jobs" in err, err
    assert done.stdout == b""


async def test_an_unusable_profile_folder_is_named_with_its_os_error(server_env: dict[str, str],
                                                                      tmp_path: Path) -> None:
    """--profile-dir naming a file: each provider's one line names the folder and the system's word for it (it was
    `internal_error`, "a bug in ai-bridge", after the browser actor crashed twice)."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    done = await run(server_env, "ask", "--browser", "launch", f"--browser-path={CHROMIUM}", "--profile-dir",
                     str(blocker), "What is 2+2?")
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert all(ln.startswith(("ai-bridge: ", "[chatgpt] ", "[gemini] ")) for ln in err.splitlines()), err
    assert [ln for ln in err.splitlines() if ln.startswith("ai-bridge: ")] == [
        f"ai-bridge: {p} failed: [browser_launch_failed] cannot use the browser profile folder {blocker}: File "
        "exists Pass a --profile-dir (config profile_dir) that is a folder you can write, or one that can be made; or "
        "--isolated for a temporary profile." for p in ("chatgpt", "gemini")], err


async def test_a_program_that_is_not_a_browser_is_named_as_such(server_env: dict[str, str]) -> None:
    """--browser-path /bin/true (it was profile_in_use: "another browser holds this profile")."""
    done = await run(server_env, "ask", "--browser", "launch", "--isolated", "--browser-path", "/bin/true",
                     "What is 2+2?")
    err = done.stderr.decode()
    assert done.returncode == 1, err
    failed = [ln for ln in err.splitlines() if ln.startswith("ai-bridge: ")]
    assert len(failed) == 2 and all(
        "[browser_not_found] /bin/true is not a browser: its --version says 'true (GNU coreutils)" in ln
        and "Point --browser-path" in ln for ln in failed), err
    assert "profile" not in err.lower(), err
