"""Browser actor: how it finds, launches and loads the extension into a browser."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from actors.browser.pipe import BrowserPipe, CdpFailed, PipeClosed, PipeTimeout
from actors.browser.process import ProfileOwner, diagnose, find_browser, launch_args, needs_pipe_loading, profile_owner
from supervisor import config as cfg
from supervisor.errors import BrowserNotFound, ConfigError

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


def _lock(profile: Path, pid: int, host: str | None = None) -> None:
    lock = profile / "SingletonLock"
    if lock.is_symlink():
        lock.unlink()
    os.symlink(f"{host or socket.gethostname()}-{pid}", lock)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start processes whose command line looks like a browser's (they only sleep)."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *args])
        procs.append(proc)
        while b"time.sleep" not in Path(f"/proc/{proc.pid}/cmdline").read_bytes():  # exec'd yet?
            time.sleep(0.01)
        return proc

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def test_profile_owner_is_verified_not_just_a_live_pid(tmp_path: Path, holder: Callable[..., Any]) -> None:
    profile, ext = tmp_path / "profile", tmp_path / "ext"
    profile.mkdir()
    ext.mkdir()
    assert profile_owner(profile) is None  # no lock
    _lock(profile, os.getpid())
    assert profile_owner(profile) is None  # a live PID that is no browser on this profile (a reused PID)
    _lock(profile, 999999999)
    assert profile_owner(profile) is None  # the stale lock of a killed browser
    other = holder(f"--user-data-dir={tmp_path / 'elsewhere'}")
    _lock(profile, other.pid)
    assert profile_owner(profile) is None  # a browser, but on another profile
    by_hand = holder(f"--user-data-dir={profile}", "--no-first-run")
    _lock(profile, by_hand.pid)
    assert profile_owner(profile, ext) == ProfileOwner(by_hand.pid, has_our_extension=False)
    _lock(profile, by_hand.pid, host="some-other-host")
    assert profile_owner(profile, ext) is None  # a profile on a shared disk, owned elsewhere
    # Ours from an earlier run: the extension on its command line (flag loading, among the user's own) ...
    link = tmp_path / "link-to-profile"
    link.symlink_to(profile)
    flagged = holder(f"--user-data-dir={link}", f"--load-extension={tmp_path / 'theirs'},{ext}")
    _lock(profile, flagged.pid)
    assert profile_owner(profile, ext) == ProfileOwner(flagged.pid, has_our_extension=True)
    # ... or loaded over the debugging pipe, which only ai-bridge's launch flags show.
    piped = holder(f"--user-data-dir={profile}", "--remote-debugging-pipe", "--enable-unsafe-extension-debugging")
    _lock(profile, piped.pid)
    assert profile_owner(profile, ext) == ProfileOwner(piped.pid, has_our_extension=True)
    piped.kill()
    piped.wait()
    assert profile_owner(profile, ext) is None


# What Chromium 156 printed, verbatim, when started headed without a display, and as a second headless instance on
# a profile in use.
NO_DISPLAY = """\
[18238:18238:1126/080038.605982:ERROR:ui/ozone/platform/x11/ozone_platform_x11.cc:257] Missing X server or $DISPLAY
[18238:18238:1126/080038.606025:ERROR:ui/aura/env.cc:253] The platform failed to initialize.  Exiting.
[18238:18254:1126/080038.607258:ERROR:dbus/bus.cc:405] Failed to connect to the bus: Failed to connect to socket \
/run/dbus/system_bus_socket: No such file or directory
[18245:18245:0100/000000.659311:ERROR:content/zygote/zygote_linux.cc:662] write: Broken pipe (32)
"""
IN_USE = """\
[18436:18436:1126/080046.453458:ERROR:chrome/browser/process_singleton_posix.cc:349] Failed to create \
/tmp/tmp.vzGCCuzg27/SingletonLock: File exists (17)
[18436:18436:1126/080046.453691:ERROR:chrome/app/chrome_main_delegate.cc:624] Failed to create a ProcessSingleton \
for your profile directory. This means that running multiple instances would start multiple browser processes \
rather than opening a new window in the existing process. Aborting now to avoid profile corruption.
[18442:18442:0100/000000.488508:ERROR:content/zygote/zygote_linux.cc:662] write: Broken pipe (32)
"""


# A crash at start seen in a full test run (Chromium 156, a fresh profile): SIGTRAP, and nothing of its own printed but
# its crash handler's complaints about a container's missing cpufreq files and the zygotes' broken pipes.
CRASHED = """\
[1128/073829.951919:ERROR:third_party/crashpad/crashpad/util/file/file_io_posix.cc:145] open \
/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq: No such file or directory (2)
[1128/073829.952037:ERROR:third_party/crashpad/crashpad/util/file/file_io_posix.cc:145] open \
/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq: No such file or directory (2)
[25739:25739:0100/000000.106913:ERROR:content/zygote/zygote_linux.cc:662] write: Broken pipe (32)
"""


@pytest.mark.parametrize(("output", "code", "line", "hint", "in_use"), [
    (NO_DISPLAY, 1, "Missing X server or $DISPLAY", "--headless", False),
    (CRASHED, -5, "it crashed (SIGTRAP, signal 5)", "tries once more", False),
    (IN_USE, 21, "Failed to create a ProcessSingleton for your profile directory", "--profile-dir", True),
    ("[1:1:0101/0:ERROR:x.cc:1] Unknown thing went wrong\n[2:2:0101/0:ERROR:dbus/bus.cc:405] Failed to connect\n", 3,
     "Unknown thing went wrong", "browser.log", False),  # the last line that is not the usual noise
    ("", 21, "(it printed nothing)", "--isolated", True),  # Chrome's exit code for a profile in use
    ("Opening in existing browser session.\n", 0, "Opening in existing browser session.", "handed over", True),
    ("/usr/lib/chromium/chromium: error while loading shared libraries: libnss3.so: cannot open shared object file",
     127, "error while loading shared libraries", "library", False),
])
def test_diagnose_names_the_browsers_own_line_and_the_fix(output: str, code: int, line: str, hint: str,
                                                          in_use: bool) -> None:
    got = diagnose(output, code)
    assert line in got.line and not got.line.startswith("[")  # Chrome's log prefix removed
    assert hint in got.hint and got.profile_in_use is in_use


def test_a_silent_program_is_not_a_browser_and_not_a_profile_in_use() -> None:
    """`--browser-path /bin/true`: nothing for --version, nothing at its launch, exit 0. That is not a browser that
    handed over to another on its profile (issue 33: it was reported as profile_in_use)."""
    got = diagnose("", 0, "true (GNU coreutils) 9.1\nCopyright (C) 2022 Free Software Foundation, Inc.")
    assert got.not_a_browser and not got.profile_in_use and "--browser-path" in got.hint
    assert got.line == "its --version says 'true (GNU coreutils) 9.1'"
    assert diagnose("", 1, "").line == "it printed nothing for --version"
    assert diagnose("ls: unrecognized option '--user-data-dir=/x'\n", 2, "ls (GNU coreutils) 9.1").not_a_browser
    # A browser that says nothing and exits 0 did hand over; one whose version is unknown is not judged.
    for version in ("Chromium 156.0.8078.108", "Google Chrome 137.0.7151.55", "Microsoft Edge 120.0.2210.91"):
        assert diagnose("", 0, version).profile_in_use
    assert not diagnose("", 0, None).not_a_browser
    assert not diagnose("", 21, "").not_a_browser  # Chrome's own profile-in-use code


def test_channel_finds_that_chrome_and_gets_a_profile_of_its_own(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    beta = bin_dir / "google-chrome-beta"
    beta.write_text("#!/bin/sh\n")
    beta.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert find_browser(None, "beta") == str(beta)
    with pytest.raises(BrowserNotFound, match="no Google Chrome canary found") as info:
        find_browser(None, "canary")
    assert "google-chrome-canary" in str(info.value) and "--browser-path" in str(info.value)
    assert find_browser(str(beta), "canary") == str(beta)  # --browser-path wins over the channel's search
    c = cfg.load({"state_dir": str(tmp_path / "state"), "channel": "beta"}, env={},
                 config_file=tmp_path / "none.toml")
    assert c.effective_profile_dir == tmp_path / "state" / "chrome-profile-beta"
    assert cfg.load({"state_dir": str(tmp_path / "state")}, env={},
                    config_file=tmp_path / "none.toml").effective_profile_dir == tmp_path / "state" / "chrome-profile"
    with pytest.raises(ConfigError, match="option --channel: expected one of stable, beta, dev, canary"):
        cfg.load({"channel": "nightly"}, env={}, config_file=tmp_path / "none.toml")


def _extension(path: Path, manifest: str = '{"manifest_version": 3, "name": "x", "version": "1"}') -> Path:
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(manifest)
    return path


def test_load_extension_is_validated_and_loaded_next_to_ours(tmp_path: Path) -> None:
    one, two = _extension(tmp_path / "one"), _extension(tmp_path / "two")
    c = cfg.load({"load_extensions": [str(one), str(two), str(one)]}, env={}, config_file=tmp_path / "none.toml")
    assert c.load_extensions == (one, two)  # resolved, duplicates dropped
    env = cfg.load({}, env={"AI_BRIDGE_LOAD_EXTENSIONS": f"{one}\n{two}\n"}, config_file=tmp_path / "none.toml")
    assert env.load_extensions == (one, two)
    flags = launch_args(c, [tmp_path / "ours", *c.load_extensions], tmp_path / "p", pipe_loading=False)
    assert f"--load-extension={tmp_path / 'ours'},{one},{two}" in flags
    assert f"--disable-extensions-except={tmp_path / 'ours'},{one},{two}" in flags
    for bad, why in ((tmp_path / "missing", "no manifest.json"),
                     (_extension(tmp_path / "broken", "{not json"), "cannot read it as JSON"),
                     (_extension(tmp_path / "app", '{"name": "x"}'), "no manifest_version"),
                     (_extension(tmp_path / "a,b"), "comma")):
        with pytest.raises(ConfigError, match=f"option --load-extension: .*{why}"):
            cfg.load({"load_extensions": [str(bad)]}, env={}, config_file=tmp_path / "none.toml")


def test_launch_args_pass_browser_args_verbatim(tmp_path: Path) -> None:
    c = cfg.load({"headless": True, "browser_args": ["--host-resolver-rules=MAP x 127.0.0.1:1", "--foo=a b"]},
                 env={}, config_file=tmp_path / "none.toml")
    args = launch_args(c, [tmp_path / "ext"], tmp_path / "profile", pipe_loading=False)
    assert "--headless=new" in args and f"--load-extension={tmp_path / 'ext'}" in args
    assert args[-5:] == ["--host-resolver-rules=MAP x 127.0.0.1:1", "--foo=a b",
                         "--enable-features=CDPScreenshotNewSurface",
                         "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup", "about:blank"]
    assert "--remote-debugging-pipe" in args  # our browser-level channel, whatever the loading mode
    # The debugging bar is laid out in a headless window nobody sees (and slows every emulated capture); a window the
    # user sees keeps it.
    assert "--silent-debugger-extension-api" in args
    seen = cfg.load({"headless": False}, env={}, config_file=tmp_path / "none.toml")
    assert "--silent-debugger-extension-api" not in launch_args(seen, [tmp_path / "ext"], tmp_path / "p",
                                                                 pipe_loading=False)
    piped = launch_args(c, [tmp_path / "ext"], tmp_path / "profile", pipe_loading=True)
    assert "--remote-debugging-pipe" in piped and not any(a.startswith("--load-extension") for a in piped)


def test_disabled_features_are_one_switch_with_the_users_own(tmp_path: Path) -> None:
    """Chromium heeds only the last --disable-features (and --enable-features): the user's would drop ours (and
    ours theirs)."""
    def disabled(headless: bool, *extra: str, switch: str = "--disable-features") -> list[str]:
        c = cfg.load({"headless": headless, "browser_args": list(extra)}, env={}, config_file=tmp_path / "none.toml")
        return [a for a in launch_args(c, [tmp_path / "ext"], tmp_path / "p", pipe_loading=False)
                if a.startswith(switch)]

    assert disabled(True, "--disable-features=Translate,,WebUIOmniboxPopup", "--disable-features=X") == [
        "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,Translate,X"]
    assert disabled(False) == []  # a browser you see keeps Chrome's own address bar popup
    assert disabled(False, "--disable-features=Translate") == ["--disable-features=Translate"]
    # Screenshots render a new surface in every browser we launch, beside the user's own features.
    assert disabled(True, "--enable-features=A,B", "--enable-features=C", switch="--enable-features") == [
        "--enable-features=CDPScreenshotNewSurface,A,B,C"]
    assert disabled(False, switch="--enable-features") == ["--enable-features=CDPScreenshotNewSurface"]
    # The doctor's and probe's offline browser goes through the same merge.
    from supervisor.app.saved_page import browser_args
    assert [a for a in browser_args(tmp_path, ["--disable-features=X"]) if a.startswith("--disable-features")] == [
        "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,X"]


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


# Behaves like Chrome on its debugging pipe: answers every command, and exits when the pipe's far end closes.
FAKE_BROWSER = """#!{python}
import json, os, sys
if "--version" in sys.argv:
    print("Chromium 150.0.0.0")
    sys.exit(0)
with open({pidfile!r}, "w") as f:
    f.write(str(os.getpid()))
buf = b""
while chunk := os.read(3, 65536):
    buf += chunk
    while b"\\0" in buf:
        raw, buf = buf.split(b"\\0", 1)
        os.write(4, json.dumps({{"id": json.loads(raw)["id"], "result": {{}}}}).encode() + b"\\0")
sys.exit(0)  # the pipe closed: Chrome shuts down
"""


def holders(pid: int, fd: int) -> list[int]:
    """The other live processes that hold the pipe `pid` has on `fd` (any end of it)."""
    pipe = os.readlink(f"/proc/{pid}/fd/{fd}")
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == pid:
            continue
        try:
            if any(os.readlink(f"/proc/{entry}/fd/{f}") == pipe for f in os.listdir(f"/proc/{entry}/fd")):
                found.append(int(entry))
        except OSError:
            continue  # gone, or not ours to read
    return [p for p in found if process_alive(p)]


@pytest.mark.parametrize(("headless", "survives"), [(True, False), (False, True)])
async def test_only_a_headed_browser_outlives_a_killed_server(tmp_path: Path, server_env: dict[str, str],
                                                              headless: bool, survives: bool) -> None:
    """A headless browser dies with us even on SIGKILL (nobody could close it); a headed one is the user's window
    (they may be logging in to it) and stays, whatever happens to the server — although a browser exits when its
    debugging pipe closes, which our death does (a keeper process holds the pipe for a headed one)."""
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
        if survives:
            # It exits when its command pipe has no writer left (EOF), and our death closed ours: another process
            # (the keeper) must hold it, so that no EOF is coming.
            assert process_alive(browser_pid) and holders(browser_pid, 3) != []
        else:
            with trio.fail_after(30):  # a guard for a hang
                while process_alive(browser_pid):
                    await trio.sleep(0.02)
    finally:
        if pidfile.exists() and pidfile.read_text() and process_alive(int(pidfile.read_text())):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        if proc.returncode is None:
            proc.kill()
        await proc.wait()



async def test_browser_log_is_never_written_through_a_symlink(tmp_path: Path, state_dir: Path,
                                                             server_env: dict[str, str]) -> None:
    """browser.log is a state file: a link planted in the state dir (by another user, before it was made private)
    must not redirect the browser's output into a file of their choosing. The launch is refused, the target kept."""
    pidfile = tmp_path / "browser.pid"
    fake = tmp_path / "fake-chrome"
    fake.write_text(FAKE_BROWSER.format(python=sys.executable, pidfile=str(pidfile)))
    fake.chmod(0o755)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "browser.log").symlink_to(victim)
    args = [*serve_command(), "serve", "--browser", "launch", "--headless", f"--browser-path={fake}"]
    proc = await trio.lowlevel.open_process(args, stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=server_env,
                                            cwd=REPO)
    assert proc.stderr is not None
    seen = b""
    try:
        with trio.fail_after(20):
            while b"is a symlink" not in seen:
                chunk = await proc.stderr.receive_some(65536)
                assert chunk, seen.decode(errors="replace")
                seen += chunk
    finally:
        proc.kill()
        await proc.wait()
    assert victim.read_text() == "keep me\n"
    assert not pidfile.exists()  # the browser was never started with its output going there


# --- the browser-level CDP channel (a fake browser on real pipes) ---------------------------------------------------


async def test_browser_pipe_replies_events_bad_input_and_the_end() -> None:
    """Replies by id, events to the event channel, malformed messages skipped (NaN included), errors and timeouts
    typed, and EOF — the browser going away — closing the channel and failing what waits."""
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    pipe = BrowserPipe(to_browser_w, from_browser_r)
    browser_in = trio.lowlevel.FdStream(to_browser_r)
    browser_out = trio.lowlevel.FdStream(from_browser_w)

    async def browser() -> None:
        """Answers like Chrome: a result, an error, silence; and some garbage in between."""
        buf = b""
        while (chunk := await browser_in.receive_some()):
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                out = [b"not json", b"[1, 2]", b'{"id": 99, "result": {}}',
                       b'{"method": "X.nan", "params": {"v": NaN}}',
                       json.dumps({"method": "Target.targetCreated", "params": {"targetInfo": {"type": "page"}}}
                                  ).encode()]
                if msg["method"] == "Browser.getVersion":
                    out.append(json.dumps({"id": msg["id"], "result": {"product": "Chrome/1"}}).encode())
                elif msg["method"] == "Bad.method":
                    out.append(json.dumps({"id": msg["id"], "error": {"code": -32601, "message": "not found"}}
                                          ).encode())
                elif msg["method"] == "Weird.result":
                    out.append(json.dumps({"id": msg["id"], "result": [1]}).encode())
                for item in out:
                    await browser_out.send_all(item + b"\0")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pipe.run)
        nursery.start_soon(browser)
        assert await pipe.send("Browser.getVersion") == {"product": "Chrome/1"}
        with pytest.raises(CdpFailed, match=r"Bad\.method: not found"):
            await pipe.send("Bad.method")
        with pytest.raises(CdpFailed, match="not an object"):
            await pipe.send("Weird.result")
        with pytest.raises(PipeTimeout):
            await pipe.send("Silent.method", timeout=0.2)
        event = pipe.events.receive_nowait()
        assert event.method == "Target.targetCreated" and event.params == {"targetInfo": {"type": "page"}}
        waiting: list[BaseException] = []

        async def waits_forever() -> None:
            try:
                await pipe.send("Silent.method", timeout=30)
            except PipeClosed as exc:
                waiting.append(exc)

        nursery.start_soon(waits_forever)
        await trio.testing.wait_all_tasks_blocked()  # its command sent, it waits for the reply
        await browser_out.aclose()  # the browser exits: its end of the pipe closes
        with trio.fail_after(2):
            await pipe.closed.wait()
        await trio.testing.wait_all_tasks_blocked()  # every task has seen the close
        assert len(waiting) == 1  # failed at once, not after its 30 s
        with pytest.raises(PipeClosed):
            await pipe.send("Browser.getVersion")
        await pipe.aclose()
        await browser_in.aclose()
        nursery.cancel_scope.cancel()


class _Launches:
    """A browser actor's stand-in for `Browser.launch`: each launch fails with the next error given, or succeeds."""

    def __init__(self, *errors: Exception | None) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def launch_once(self, deadline: float, progress: Callable[..., Any]) -> None:
        self.calls += 1
        err = self.errors.pop(0)
        if err is not None:
            raise err


async def test_a_browser_that_crashed_at_launch_is_launched_once_more(autojump_clock: trio.testing.MockClock) -> None:
    """A one-off crash at start (SIGTRAP, seen once in a full run) no longer leaves the server without a browser, at
    its start or at an ask; a failure that is no crash, a second crash, or one with no time left, is the error."""
    from actors.browser.actor import Browser
    from supervisor.errors import BrowserCrashedAtLaunch, BrowserLaunchFailed

    def launch(fake: _Launches, deadline_in: float = 60) -> Any:
        return Browser.launch(fake, trio.current_time() + deadline_in, lambda *a: lambda s: None)  # type: ignore[arg-type]

    crash = BrowserCrashedAtLaunch("the browser exited at once (exit code -5): it crashed (SIGTRAP, signal 5)")
    once = _Launches(crash, None)
    await launch(once)
    assert once.calls == 2
    twice = _Launches(crash, crash, None)
    with pytest.raises(BrowserCrashedAtLaunch, match="crashed"):
        await launch(twice)
    assert twice.calls == 2
    late = _Launches(crash, None)
    with pytest.raises(BrowserCrashedAtLaunch):
        await launch(late, deadline_in=0.5)
    assert late.calls == 1
    refused = _Launches(BrowserLaunchFailed("the browser exited at once (exit code 1): Missing X server"), None)
    with pytest.raises(BrowserLaunchFailed, match="Missing X server"):
        await launch(refused)
    assert refused.calls == 1
