"""The browser as a process: finding the executable (by channel), its command line, starting it with a debugging pipe,
knowing who holds a profile, and reading why a browser died from its own stderr. No actor code here.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs
import trio

from supervisor.config import Config
from supervisor.errors import BrowserNotFound

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
FIXED = ("/usr/lib/chromium/chromium", "/opt/google/chrome/chrome")
# Debian's /usr/bin/chromium is a shell wrapper adding flags from /etc/chromium.d (NOTES.md): use the real binary.
REAL_BINARIES = {"/usr/bin/chromium": "/usr/lib/chromium/chromium"}

# Where each Google Chrome channel installs: the commands its Linux package puts on PATH, then fixed locations
# (Linux packages, macOS app bundles).
CHANNEL_COMMANDS = {
    "stable": ("google-chrome-stable", "google-chrome"),
    "beta": ("google-chrome-beta",),
    "dev": ("google-chrome-unstable", "google-chrome-dev"),
    "canary": ("google-chrome-canary",),
}
CHANNEL_PATHS = {
    "stable": ("/opt/google/chrome/chrome", "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome"),
    "beta": ("/opt/google/chrome-beta/chrome",
             "/Applications/Google Chrome Beta.app/Contents/MacOS/Google Chrome Beta"),
    "dev": ("/opt/google/chrome-unstable/chrome",
            "/Applications/Google Chrome Dev.app/Contents/MacOS/Google Chrome Dev"),
    "canary": ("/opt/google/chrome-canary/chrome",
               "/Applications/Google Chrome Canary.app/Contents/MacOS/Google Chrome Canary"),
}


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_browser(explicit: str | None, channel: str | None = None) -> str:
    """The browser to launch: `explicit` (--browser-path) if given, else the Chrome of `channel`, else the first
    Chromium or Chrome found."""
    if explicit:
        path = shutil.which(explicit) or explicit
        if not _executable(path):
            raise BrowserNotFound(f"browser executable {explicit!r} not found or not executable",
                                  hint="Fix --browser-path / AI_BRIDGE_BROWSER.")
        real = REAL_BINARIES.get(path)
        return real if real and _executable(real) else path
    if channel is not None:
        for name in CHANNEL_COMMANDS[channel]:
            if found := shutil.which(name):
                return found
        for fixed in CHANNEL_PATHS[channel]:
            if _executable(fixed):
                return fixed
        looked = ", ".join((*CHANNEL_COMMANDS[channel], *CHANNEL_PATHS[channel]))
        raise BrowserNotFound(f"no Google Chrome {channel} found (looked for {looked})",
                              hint=f"Install Chrome {channel}, pass its executable with --browser-path, or drop "
                              "--channel to use any Chromium or Chrome.")
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            real = REAL_BINARIES.get(found)
            return real if real and _executable(real) else found
    for fixed in FIXED:
        if _executable(fixed):
            return fixed
    raise BrowserNotFound(
        "no Chromium or Chrome found",
        hint="Install one (Debian/Ubuntu: `apt-get install -y chromium`) or pass --browser-path.")


def browser_version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip()


def needs_pipe_loading(version: str) -> bool:
    """Branded Google Chrome >= 137 ignores --load-extension; it needs CDP Extensions.loadUnpacked over a pipe."""
    m = re.search(r"Google Chrome (\d+)", version)
    return bool(m and int(m.group(1)) >= 137)


# A headless browser has no address bar, yet Chromium starts the omnibox popup's WebUI (two pages in a renderer of
# their own) with it: half the CPU of its start (0.65 of 1.3 CPU-s measured, Chromium 156, 2 cores).
HEADLESS_DISABLED_FEATURES = ["WebUIOmniboxPopup", "WebUIOmniboxAimPopup"]
# Page.captureScreenshot renders into a new surface instead of waiting out the frame the page is drawing: a viewport
# screenshot right after typing took 36 ms at the capture (p50), 19-23 ms with it (Chromium 156, 2 cores); Playwright
# launches Chromium with it too. A hidden tab's capture then fails at once ("Unable to capture screenshot") where it
# could hang: the tools bring a tab to front before they capture it. Only in a browser we launch: a user's own Chrome
# keeps its own features.
LAUNCH_ENABLED_FEATURES = ["CDPScreenshotNewSurface"]
# No "started debugging this browser" bar in a headless browser we launch: nobody can see it there, yet it is laid out
# in the window all the same, and under an emulated viewport every capture resized the page around it: a viewport
# screenshot took 45-52 ms (p50) with the bar and 28 without (the capture in Chromium 35-42 → 14-25 ms; Chromium
# 156, 2 cores). A window a user can see keeps the bar: it is how they know an extension drives the browser.
HEADLESS_ONLY_ARGS = ["--silent-debugger-extension-api"]


def launch_args(config: Config, extensions: Sequence[Path], profile: Path, *, pipe_loading: bool) -> list[str]:
    """The command line of a browser we launch. `extensions` is ours first, then the user's own. The debugging pipe
    is always there: it is our browser-level channel (loading by pipe only adds the unsafe-extension flag)."""
    args = [
        f"--user-data-dir={profile}",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--remote-debugging-pipe",
    ]
    disabled: list[str] = []
    if config.headless:
        args += ["--headless=new", "--disable-gpu", "--disable-dev-shm-usage", *HEADLESS_ONLY_ARGS]
        disabled = HEADLESS_DISABLED_FEATURES
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    if pipe_loading:
        args.append("--enable-unsafe-extension-debugging")
    else:
        joined = ",".join(str(e) for e in extensions)
        args += [f"--load-extension={joined}", f"--disable-extensions-except={joined}"]
    return [*with_disabled_features([*args, *config.browser_args], disabled, LAUNCH_ENABLED_FEATURES), "about:blank"]


def with_disabled_features(args: Sequence[str], ours: Sequence[str], enabled: Sequence[str] = ()) -> list[str]:
    """`args` with `ours` and every ``--disable-features`` list in them as one switch at the end, and `enabled` with
    every ``--enable-features`` list likewise: Chromium heeds only the last of each, so the user's list would drop
    ours (and ours theirs)."""
    lists: dict[str, list[str]] = {"--enable-features=": list(enabled), "--disable-features=": list(ours)}
    kept: list[str] = []
    for arg in args:
        switch = next((k for k in lists if arg.startswith(k)), None)
        if switch is None:
            kept.append(arg)
        else:
            lists[switch] += [f for f in arg.removeprefix(switch).split(",") if f]
    return [*kept, *(f"{k}{','.join(dict.fromkeys(v))}" for k, v in lists.items() if v)]


# --- who holds a profile ------------------------------------------------------------------------------------------


@attrs.frozen
class ProfileOwner:
    """A live browser process whose command line names the profile (the holder of its SingletonLock)."""

    pid: int
    has_our_extension: bool  # started with our extension on its command line (by an earlier ai-bridge, or by hand)


def process_command(pid: int) -> list[str] | None:
    """The command line of a live, non-zombie process, or None (gone, or not ours to read)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return None
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        if not Path("/proc/self").exists():  # no procfs (macOS): ask ps
            return _ps_command(pid)
        return None
    except OSError:
        return None
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def link_holder(peer_port: int, server_port: int) -> int | None:
    """The pid of the process holding the loopback TCP connection from `peer_port` to our `server_port` (a browser's
    network service, for the extension's WebSocket), or None when it cannot be told (no procfs, not ours to read).
    Linux only: /proc/net/tcp{,6} gives the socket's inode, our processes' fds name it."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) < 10:
                continue
            local, remote = cols[1].rpartition(":")[2], cols[2].rpartition(":")[2]
            try:
                if int(local, 16) == peer_port and int(remote, 16) == server_port:
                    inodes.add(cols[9])
            except ValueError:
                continue
    if not inodes:
        return None
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            fds = list((proc / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in wanted:
                    return int(proc.name)
            except OSError:
                continue
    return None


def browser_root(pid: int) -> int | None:
    """The browser process `pid` belongs to: itself or the nearest ancestor started without ``--type=`` (Chromium's
    helpers — network service, renderers, zygote — all carry one). None when it cannot be told."""
    for _ in range(16):
        command = process_command(pid)
        if not command:
            return None
        # a helper retitles itself: its command line may be one string with spaces, not separate arguments
        if not any(re.search(r"(?:^|\s)--type=", a) for a in command):
            return pid
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[1])
        except (OSError, ValueError, IndexError):
            return None
        if pid <= 1:
            return None
    return None


def link_browser(peer_port: int, server_port: int) -> int | None:
    """The browser process behind our WebSocket link from `peer_port`, or None when it cannot be told."""
    holder = link_holder(peer_port, server_port)
    return browser_root(holder) if holder is not None else None


def _ps_command(pid: int) -> list[str] | None:
    try:
        out = subprocess.run(["ps", "-ww", "-o", "command=", "-p", str(pid)], capture_output=True, text=True,
                             timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.split() if out.returncode == 0 and out.stdout.strip() else None


def _same_path(a: str, b: Path) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False


def profile_owner(profile: Path, extension_dir: Path | None = None) -> ProfileOwner | None:
    """The browser really running on `profile`, or None.

    Chrome's SingletonLock is a symlink to 'hostname-pid'. The lock alone proves little: it outlives a browser that
    was killed, and its PID may since belong to any other process. So the PID must be alive on this host *and* its
    command line must name this profile with --user-data-dir. Every other lock is stale, and launching is safe:
    Chrome takes a stale lock over by itself (and refuses a live one, which `diagnose` then reports)."""
    try:
        target = os.readlink(profile / "SingletonLock")
    except OSError:
        return None
    host, _, pid_s = target.rpartition("-")
    if host != socket.gethostname() or not pid_s.isdigit():
        return None
    pid = int(pid_s)
    command = process_command(pid)
    if not command or not any(a.startswith("--user-data-dir=") and _same_path(a.split("=", 1)[1], profile)
                              for a in command):
        return None
    ours = False
    if extension_dir is not None:
        for arg in command:
            if arg.startswith("--load-extension="):
                ours = ours or any(_same_path(p, extension_dir) for p in arg.split("=", 1)[1].split(","))
        # a pipe-loaded extension is not on the command line; ai-bridge's pipe launch is recognisable by its flags
        ours = ours or ("--remote-debugging-pipe" in command and "--enable-unsafe-extension-debugging" in command)
    return ProfileOwner(pid, ours)


# --- why a browser died -------------------------------------------------------------------------------------------


@attrs.frozen
class Diagnosis:
    line: str  # the browser's own line that says why (its log prefix removed)
    hint: str
    profile_in_use: bool = False
    not_a_browser: bool = False  # silent on --version and at its launch: not a Chromium or Chrome at all


NO_DISPLAY_HINT = ("There is no display for a headed browser: add --headless, or run ai-bridge where a display is "
                   "available (for example under xvfb-run).")
PROFILE_IN_USE_HINT = ("Another browser holds this profile: close it, or give ai-bridge a profile of its own with "
                       "--profile-dir or --isolated.")
_CAUSES: tuple[tuple[re.Pattern[str], str, bool], ...] = (
    (re.compile(r"Missing X server or \$DISPLAY|cannot open display|Could not connect to any X display"),
     NO_DISPLAY_HINT, False),
    (re.compile(r"Opening in existing browser session"),
     "It handed over to a browser already running on this profile. " + PROFILE_IN_USE_HINT, True),
    (re.compile(r"ProcessSingleton|profile appears to be in use"), PROFILE_IN_USE_HINT, True),
    (re.compile(r"Running as root without --no-sandbox"),
     "Add --browser-arg=--no-sandbox (Chromium refuses to run as root with its sandbox).", False),
    (re.compile(r"No usable sandbox|setuid sandbox|Failed to move to new namespace"),
     "The browser's sandbox cannot start here: enable unprivileged user namespaces, or add "
     "--browser-arg=--no-sandbox on a machine you trust.", False),
    (re.compile(r"error while loading shared libraries"),
     "A library the browser needs is missing: install the browser from your distribution's packages, which pull "
     "its libraries in.", False),
)
# Lines every Chromium prints on a machine without a session bus, when its helpers lose their parent, or as its crash
# handler records a crash (crashpad, looking for cpufreq files a container does not have): never the cause, so never
# the line we show.
_NOISE = re.compile(r"dbus/|zygote|Fontconfig|GetTerminationStatus|Broken pipe|gcm/|DevTools listening|crashpad/")
_PREFIX = re.compile(r"^\[[\d:/.]+:[A-Z]+:[^\]]*\]\s*")
RESULT_CODE_PROFILE_IN_USE = 21  # chrome/common/chrome_result_codes.h


# What every Chromium-based browser's --version names ("Chromium 156…", "Google Chrome 137…", "Microsoft Edge …").
BROWSER_NAME = re.compile(r"chrom|edge|brave|opera|vivaldi|yandex|browser", re.IGNORECASE)
NOT_A_BROWSER_HINT = ("Point --browser-path (config browser_path, env AI_BRIDGE_BROWSER_PATH) at a Chromium or Chrome "
                      "executable, for example /usr/lib/chromium/chromium, or drop it to use the first one found.")


def diagnose(output: str, code: int | None, version: str | None = None) -> Diagnosis:
    """Why the browser exited, from what it printed (this launch's part of browser.log), its exit code and, when
    known, what it printed for ``--version`` (every Chromium and Chrome names itself there)."""
    raw = [line for line in output.splitlines() if line.strip()]
    lines = [_PREFIX.sub("", line).strip() for line in raw]
    for pattern, hint, in_use in _CAUSES:
        for line in lines:
            if pattern.search(line):
                return Diagnosis(line[:300], hint, in_use)
    said = (version or "").strip().splitlines()
    if version is not None and not BROWSER_NAME.search(version) and (said or not raw) \
            and code != RESULT_CODE_PROFILE_IN_USE:
        # `--browser-path /bin/true` ("true (GNU coreutils) 9.1"): gone at once, and no browser by its own name.
        # (A --version that failed, with words at the launch, is left to the lines below.)
        return Diagnosis(f"its --version says {said[0][:120]!r}" if said else "it printed nothing for --version",
                         NOT_A_BROWSER_HINT, not_a_browser=True)
    telling = [line for line, full in zip(lines, raw, strict=True) if not _NOISE.search(full)]
    if not telling and code is not None and code < 0:
        # A crash (Chromium's failed checks end in SIGTRAP) that printed nothing of its own: say so, not the noise.
        return Diagnosis(f"it crashed ({_signal_name(-code)})", "It may be a one-off: ai-bridge tries once more. If it "
                         "stays, read <state-dir>/browser.log and try --browser-path to another Chromium or Chrome.")
    line = (telling or lines or ["(it printed nothing)"])[-1][:300]
    if code == RESULT_CODE_PROFILE_IN_USE:
        return Diagnosis(line, PROFILE_IN_USE_HINT, True)
    if code == 0:
        # A headed Chrome that finds its profile open elsewhere hands its arguments over and exits 0.
        return Diagnosis(line, "It may have handed over to a browser already running on this profile. "
                         + PROFILE_IN_USE_HINT, True)
    return Diagnosis(line, "Read <state-dir>/browser.log for the browser's full output; try --headless, or "
                     "--browser-path to another Chromium or Chrome.")


def _signal_name(number: int) -> str:
    try:
        return f"{signal.Signals(number).name}, signal {number}"
    except ValueError:
        return f"signal {number}"


# --- the process ----------------------------------------------------------------------------------------------------


def _die_with_parent() -> None:  # runs in the child between fork and exec
    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def _high(fd: int) -> int:
    """`fd` moved to a number above 4, so that placing the child's ends on 3 and 4 can never overwrite one another."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


class BrowserProcess:
    """The launched browser, forked from the trio thread itself.

    PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, not the process. trio.lowlevel.open_process
    forks in a worker thread, and trio retires idle worker threads after 10 s: the browser got SIGTERM ~10 s after
    launch whenever nothing happened to reuse that thread (always in ``ask``/``doctor``). Forking here (a few ms on
    the event loop, once per launch) ties the death signal to the thread that runs trio, i.e. to us.
    """

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    async def wait(self) -> int:
        """The exit code, as soon as the process exits (a pidfd where the OS has them, else a short poll)."""
        if self.popen.poll() is None and hasattr(os, "pidfd_open"):
            try:
                pidfd = os.pidfd_open(self.pid)
            except OSError:
                pidfd = None
            if pidfd is not None:
                try:
                    await trio.lowlevel.wait_readable(pidfd)
                finally:
                    os.close(pidfd)
        while (code := self.popen.poll()) is None:  # noqa: ASYNC110 - no pidfd: poll, rarely and briefly
            await trio.sleep(0.05)
        return code


def spawn(path: str, args: list[str], log_fd: int, *, tied: bool) -> tuple[BrowserProcess, int, int]:
    """Start the browser with a debugging pipe → (process, fd we write commands to, fd we read replies from).

    `tied`: the browser must not outlive us (headless, or --close-browser): it gets PR_SET_PDEATHSIG, and the pipe
    closing at our death ends it too. Otherwise a keeper process holds the pipe's far ends open after our death
    (Chrome exits when its command pipe closes), so a headed window the user logs in to stays theirs."""
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    to_child_r, to_child_w, from_child_r, from_child_w = map(_high, (to_child_r, to_child_w, from_child_r,
                                                                    from_child_w))

    def setup() -> None:
        # Chrome reads commands on fd 3 and writes replies on fd 4.
        os.dup2(to_child_r, 3)
        os.dup2(from_child_w, 4)
        if tied:
            _die_with_parent()

    keeper: int | None = None  # where the keeper reads the browser's pid; closed unwritten, it leaves
    try:
        # The keeper holds the pipe before the browser starts: killed right after the launch, we leave no moment in
        # which the browser's pipe has no other holder (it would close, and the user's window with it).
        if not tied:
            keeper = _spawn_keeper(to_child_w, from_child_r)
        popen = subprocess.Popen(
            [path, *args], stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, start_new_session=True,
            preexec_fn=setup, pass_fds=(3, 4))
        if keeper is not None:
            os.write(keeper, f"{popen.pid}\n".encode())
    except BaseException:
        for fd in (to_child_w, from_child_r):
            os.close(fd)
        raise
    finally:
        for fd in (to_child_r, from_child_w) if keeper is None else (to_child_r, from_child_w, keeper):
            os.close(fd)
    return BrowserProcess(popen), to_child_w, from_child_r


# The keeper: while we live it only holds the pipe ends; once we are gone (or a zombie) it drains what the browser
# writes (a full pipe would stall its DevTools thread) until the browser exits. It forks away at once, so that nobody
# has to reap it. It starts before the browser and reads the browser's pid on stdin: none (end of input) while we
# live means the launch failed; none because we died mid-launch, it drains the pipe until the browser is gone.
KEEPER = """
import os, sys, time
if os.fork():
    os._exit(0)
owner, w, r = map(int, sys.argv[1:4])
got = b""
while not got.endswith(b"\\n"):
    part = os.read(0, 32)
    if not part:
        break
    got += part
browser = int(got) if got.strip().isdigit() else None
def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True
while alive(owner):
    if browser is None or not alive(browser):
        sys.exit(0)
    time.sleep(1)
os.set_blocking(r, True)
try:
    while os.read(r, 65536):
        pass
except OSError:
    pass
"""


def _spawn_keeper(write_fd: int, read_fd: int) -> int:
    """Start the keeper holding the pipe ends; the fd to write the browser's pid to."""
    pid_r, pid_w = os.pipe()
    try:
        keeper = subprocess.Popen(
            [sys.executable, "-S", "-c", KEEPER, str(os.getpid()), str(write_fd), str(read_fd)],
            stdin=pid_r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            pass_fds=(write_fd, read_fd))
    except BaseException:
        os.close(pid_w)
        raise
    finally:
        os.close(pid_r)
    keeper.wait(5)
    return pid_w


def kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # the renderer and helper processes too (the browser leads its own session)
    except ProcessLookupError:
        pass


def read_log_since(path: Path, offset: int, limit: int = 1 << 16) -> str:
    """What a launch wrote to browser.log (its last `limit` bytes)."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(offset, size - limit))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def exit_reason(code: int | None) -> str:
    """An exit code as words: a negative one is the signal that killed the browser (-6: SIGABRT, Chromium's CHECK
    failures and crashes)."""
    if code is None:
        return "it is gone (no exit code)"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name} (signal {-code}{', a crash' if -code in _CRASH_SIGNALS else ''})"
    return f"exit code {code}"


_CRASH_SIGNALS = {signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGTRAP}


def log_tail(output: str, lines: int = 5, width: int = 300) -> str:
    """The last telling lines a launch wrote to browser.log (noise left out), each cut to `width`, joined with
    " | " for one log line."""
    raw = [line for line in output.splitlines() if line.strip() and not _NOISE.search(line)]
    return " | ".join(line.strip()[:width] for line in raw[-lines:]) or "(nothing)"

