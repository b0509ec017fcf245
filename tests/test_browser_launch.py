"""Browser actor: how it finds, launches and loads the extension into a browser."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from actors.browser import find_browser, launch_args, needs_pipe_loading, profile_owner
from supervisor import config as cfg
from supervisor.errors import BrowserNotFound

from .conftest import REPO, process_alive, serve_command
from .e2e import open_bridge, requires_chromium
from .fakesites.fixture import FakeSites


@pytest.mark.parametrize(("version", "pipe"), [
    ("Google Chrome 137.0.7151.55", True),
    ("Google Chrome 142.0.1 beta", True),
    ("Google Chrome 136.0.7103.92", False),
    ("Chromium 156.0.8078.108", False),
    ("", False),
])
def test_branded_chrome_137_and_later_needs_pipe_loading(version: str, pipe: bool) -> None:
    assert needs_pipe_loading(version) is pipe


def test_profile_owner_reads_chromes_singleton_lock(tmp_path: Path) -> None:
    assert profile_owner(tmp_path) is None
    os.symlink(f"{socket.gethostname()}-{os.getpid()}", tmp_path / "SingletonLock")
    assert profile_owner(tmp_path) == os.getpid()  # a live process owns it: reuse, do not launch a second
    (tmp_path / "SingletonLock").unlink()
    os.symlink(f"{socket.gethostname()}-999999999", tmp_path / "SingletonLock")
    assert profile_owner(tmp_path) is None  # stale lock of a dead browser
    (tmp_path / "SingletonLock").unlink()
    os.symlink(f"some-other-host-{os.getpid()}", tmp_path / "SingletonLock")
    assert profile_owner(tmp_path) is None  # a profile on a shared disk, owned elsewhere


def test_launch_args_pass_browser_args_verbatim(tmp_path: Path) -> None:
    c = cfg.load({"headless": True, "browser_args": ["--host-resolver-rules=MAP x 127.0.0.1:1", "--foo=a b"]},
                 env={}, config_file=tmp_path / "none.toml")
    args = launch_args(c, tmp_path / "ext", tmp_path / "profile", pipe=False)
    assert "--headless=new" in args and f"--load-extension={tmp_path / 'ext'}" in args
    assert args[-3:] == ["--host-resolver-rules=MAP x 127.0.0.1:1", "--foo=a b", "about:blank"]
    piped = launch_args(c, tmp_path / "ext", tmp_path / "profile", pipe=True)
    assert "--remote-debugging-pipe" in piped and not any(a.startswith("--load-extension") for a in piped)


def test_missing_browser_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BrowserNotFound, match="not found or not executable") as info:
        find_browser(str(tmp_path / "nope"))
    assert "--browser-path" in str(info.value)


@requires_chromium
@pytest.mark.chromium
async def test_extension_loaded_over_the_debugging_pipe(sites: FakeSites, tmp_path: Path) -> None:
    """The path branded Chrome >= 137 needs (it ignores --load-extension), exercised on Chromium."""
    async with open_bridge(sites, tmp_path, env={"AI_BRIDGE_EXTENSION_LOADING": "pipe"}) as b:
        sites.chatgpt.set_next(chunks=3, intervalMs=30, firstTokenMs=50)
        res = await b.call("ask_chatgpt_web", {"question": "What is 2 times 21?"})
        assert not res.is_error, res.content[0].text
        status = await b.status()
        assert status["extension"]["connected"] and status["browser"]["ownership"] == "launched"
        assert "extension loaded over the debugging pipe" in b.log_text()


FAKE_BROWSER = """#!{python}
import os, sys, time
if "--version" in sys.argv:
    print("Chromium 150.0.0.0")
    sys.exit(0)
with open({pidfile!r}, "w") as f:
    f.write(str(os.getpid()))
time.sleep(120)
"""


@pytest.mark.parametrize(("headless", "survives"), [(True, False), (False, True)])
async def test_only_a_headed_browser_outlives_a_killed_server(tmp_path: Path, server_env: dict[str, str],
                                                              headless: bool, survives: bool) -> None:
    """A headless browser dies with us even on SIGKILL (nobody could close it); a headed one is the user's window
    (they may be logging in to it) and stays, whatever happens to the server."""
    pidfile = tmp_path / "browser.pid"
    fake = tmp_path / "fake-chrome"
    fake.write_text(FAKE_BROWSER.format(python=sys.executable, pidfile=str(pidfile)))
    fake.chmod(0o755)
    args = [*serve_command(), "serve", "--browser", "launch", f"--browser-path={fake}"]
    if headless:
        args.append("--headless")
    proc = await trio.lowlevel.open_process(args, stdin=subprocess.PIPE, env=server_env, cwd=REPO)
    try:
        with trio.fail_after(15):
            while not pidfile.exists() or not pidfile.read_text():
                await trio.sleep(0.05)
        browser_pid = int(pidfile.read_text())
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        await trio.sleep(1.0)
        assert process_alive(browser_pid) is survives
    finally:
        if pidfile.exists() and pidfile.read_text() and process_alive(int(pidfile.read_text())):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        if proc.returncode is None:
            proc.kill()
        await proc.wait()

