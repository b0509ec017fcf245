"""Configuration: defaults < TOML file < ``AI_BRIDGE_*`` environment < command-line flags.

Every value is validated here, once; a bad value raises `ConfigError` naming the key, which the CLI prints as one
line and exits 2.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from .constants import SHARED
from .errors import ConfigError

BROWSER_MODES = ("auto", "connect", "launch")
CHANNELS = ("stable", "beta", "dev", "canary")  # Google Chrome release channels (seed 000's --channel)
LOG_LEVELS = ("debug", "info", "warning", "error")
# Tool families `serve` lists (docs/tools.md#which-tools-are-listed); "asks" is the default, and "browser" joins it
# when browser tools are allowed a domain; "sites" lists the one-site asks of the sites ask_web reaches.
TOOL_SETS = ("asks", "sites", "browser", "all")
PORTS = SHARED.discovery_ports
PORT_RANGE = f"{PORTS.start}-{PORTS.stop - 1}"


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ai-bridge"


def default_config_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ai-bridge" / "config.toml"


@attrs.frozen
class Config:
    state_dir: Path = attrs.field(factory=default_state_dir)
    log_level: str = "info"
    discovery_port: int | None = None  # None: the first free port of the range the extension polls
    relay_port: int | None = None  # None: any free port; pinned for an SSH forward (docs/remote.md)
    http_port: int | None = None  # serve MCP over HTTP on 127.0.0.1:<port>/mcp, for many clients, instead of stdio
    browser: str = "auto"
    browser_path: str | None = None
    channel: str | None = None  # a Chrome channel to launch (finds its executable; a profile of its own)
    profile_dir: Path | None = None  # default: <state_dir>/chrome-profile (chrome-profile-<channel> with a channel)
    isolated: bool = False
    headless: bool = False
    browser_args: tuple[str, ...] = ()
    load_extensions: tuple[Path, ...] = ()  # the user's own unpacked extensions, loaded next to ours
    close_browser: bool = False
    project: str | None = None  # default: the MCP client's root, else the working directory
    response_timeout_s: float = 480.0
    extension_wait_s: float = 2.5  # auto mode: how long your own Chrome's extension gets before we launch one
    extension_loading: str = "auto"  # auto: --load-extension, or CDP over a pipe for branded Chrome >= 137
    stall_s: float | None = None  # stop button with no new text this long → stuck (default: per provider table)
    allow_faults: bool = False  # the console's fault helpers (crash/hang/slow an actor, drop the extension socket)
    debug_dumps_keep: int = 50  # newest debug dumps kept in <state_dir>/debug
    private_text: bool = False  # keep question and answer text out of history.jsonl and debug dumps
    # The general browser tools (docs/tools.md): safe mode (read-only tools only) unless these say otherwise, and a
    # default-deny domain policy: host patterns they may touch (none by default).
    enable_mutations: bool = False
    unsafe_enable_eval: bool = False
    allowed_domains: tuple[str, ...] = ()
    network_secrets: bool = False  # network_log shows credential headers (Cookie, Authorization, ...) unredacted
    download_dir: Path | None = None  # the folder the download tool saves into (none: the tool is refused)
    # providers.toml: selectors and labels prepended to the provider tables (default
    # $XDG_CONFIG_HOME/ai-bridge/providers.toml when it exists; one named here must exist)
    providers_file: Path | None = None
    use_open_tabs: bool = False  # may drive (and navigate) a ChatGPT / Gemini tab the user opened, when none is ours
    jobs_keep_days: float = 7.0  # background job records kept in <state_dir>/jobs (and known after a restart)
    # The tool families `serve` lists (None: asks, and browser too when allowed_domains names one). Each tool in
    # tools/list costs the agent's context in every session, so the 32 browser tools are not listed unasked.
    tools: tuple[str, ...] | None = None
    confirm_costly: bool = False  # a Pro / Deep Think / Deep Research ask asks the user first (MCP elicitation)
    # Issue 38: asks that can run side by side do, each in its own tab, up to this many tabs per site; an idle pooled
    # tab is closed after `tab_idle_s` (the kept conversation's stays).
    tabs_per_site: int = 3
    tab_idle_s: float = 300.0
    # Where new chats start, per site: a ChatGPT Project or a Gemini Gem URL (each matched to its site at start-up).
    chat_base_urls: tuple[str, ...] = ()

    @property
    def tool_sets(self) -> frozenset[str]:
        """The families listed: "all" spelled out, the default resolved."""
        chosen = set(self.tools if self.tools is not None else ("asks", *(("browser",) if self.allowed_domains
                                                                           else ())))
        return frozenset(TOOL_SETS[:-1]) if "all" in chosen else frozenset(chosen)

    @property
    def log_file(self) -> Path:
        return self.state_dir / "ai-bridge.log"

    @property
    def effective_profile_dir(self) -> Path:
        if self.profile_dir is not None:
            return self.profile_dir
        # One profile per channel (seed 000): a profile written by a newer Chrome must not be opened by an older one.
        return self.state_dir / ("chrome-profile" if self.channel is None else f"chrome-profile-{self.channel}")


# key -> (parser, env var). Parsers raise ValueError with a human message.
def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true/false, got {v!r}")


def _choice(options: tuple[str, ...]) -> Any:
    def parse(v: Any) -> str:
        s = str(v).strip().lower()
        if s not in options:
            raise ValueError(f"expected one of {', '.join(options)}, got {v!r}")
        return s

    return parse


def _port_number(v: Any) -> int | None:
    """A port as written (a number, or digits in a string); None when it is not one."""
    try:
        return int(v) if not isinstance(v, bool | float) else None
    except (TypeError, ValueError):
        return None


def _port(v: Any) -> int | None:
    if v is None or v == "":
        return None
    p = _port_number(v)
    if p is None:
        raise ValueError(f"expected a port number, got {v!r}")
    if p not in PORTS:
        # The extension looks for servers only on these ports: any other one could never be found.
        raise ValueError(f"{p} is not one of the ports the extension polls ({PORT_RANGE})")
    return p


def _relay_port(v: Any) -> int | None:
    if v is None or v == "":
        return None
    p = _port_number(v)
    if p is None or not 1024 <= p <= 65535:
        raise ValueError(f"expected a port number from 1024 to 65535, got {v!r}")
    if p in PORTS:
        raise ValueError(f"{p} is one of the discovery ports ({PORT_RANGE}): pick one outside them")
    return p


def _positive(v: Any) -> float:
    try:
        f = float(v) if not isinstance(v, bool) else math.nan
    except (TypeError, ValueError):
        raise ValueError(f"expected a number of seconds, got {v!r}") from None
    if not math.isfinite(f):
        raise ValueError(f"expected a finite number of seconds, got {v!r}")
    if f <= 0:
        raise ValueError(f"must be > 0, got {f:g}")
    return f


def _count(v: Any) -> int:
    try:
        n = int(v) if isinstance(v, int | str) and not isinstance(v, bool) else None
    except ValueError:
        n = None
    if n is None or n < 0:
        raise ValueError(f"expected a whole number >= 0, got {v!r}")
    return n


def _path(v: Any) -> Path:
    if not isinstance(v, str | Path) or not str(v):
        raise ValueError(f"expected a path, got {v!r}")
    return Path(v).expanduser()


def _opt_str(v: Any) -> str | None:
    if v is None or v == "":
        return None
    if not isinstance(v, str):
        raise ValueError(f"expected a string, got {v!r}")
    return v


def _opt_choice(options: tuple[str, ...]) -> Any:
    choice = _choice(options)

    def parse(v: Any) -> str | None:
        return None if v is None or v == "" else str(choice(v))

    return parse


def _extensions(v: Any) -> tuple[Path, ...]:
    """Unpacked extension folders: each must hold a manifest.json that parses (Chrome refuses the whole launch
    flag otherwise), and no comma (--load-extension takes a comma-separated list)."""
    if isinstance(v, str):
        items: list[Any] = [a for a in v.split("\n") if a.strip()]  # env var: one path per line
    elif isinstance(v, list | tuple):
        items = list(v)
    else:
        raise ValueError(f"expected a list of folders, got {v!r}")
    out: list[Path] = []
    for item in items:
        path = _path(item.strip() if isinstance(item, str) else item).resolve()
        if "," in str(path):
            raise ValueError(f"{path}: a folder with a comma in its path cannot be passed to Chrome")
        manifest = path / "manifest.json"
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"{path} is not an unpacked extension (no manifest.json)") from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"{manifest}: cannot read it as JSON ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("manifest_version"), int):
            raise ValueError(f"{manifest}: not an extension manifest (no manifest_version)")
        if path not in out:
            out.append(path)
    return tuple(out)


def _args(v: Any) -> tuple[str, ...]:
    if isinstance(v, str):
        return tuple(a for a in v.split("\n") if a)  # env var: one argument per line
    if isinstance(v, list | tuple) and all(isinstance(a, str) for a in v):
        return tuple(v)
    raise ValueError(f"expected a list of strings, got {v!r}")


_LABEL = r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?"
_HOST = re.compile(rf"{_LABEL}(?:\.{_LABEL})*|\[[0-9a-f:.]+\]")


def host_pattern(text: str) -> str:
    """One allowed-domain pattern, normalized: ``*``, ``example.com`` or ``*.example.com`` (lower case, IDN as
    punycode, no trailing dot). The extension's copy of the grammar is extension/policy.js."""
    p = text.strip().lower().rstrip(".")
    if p == "*":
        return p
    bare = p[2:] if p.startswith("*.") else p
    try:
        bare = bare.encode("idna").decode("ascii") if not bare.isascii() else bare
    except UnicodeError:
        raise ValueError(f"{text!r} is not a valid host name") from None
    if not _HOST.fullmatch(bare):
        raise ValueError(f"{text!r} is not a host pattern: write example.com, *.example.com or * (no scheme, port "
                         "or path)")
    return ("*." if p.startswith("*.") else "") + bare


def _tool_sets(v: Any) -> tuple[str, ...]:
    if isinstance(v, str):
        items = [a for a in re.split(r"[\s,]+", v) if a]  # flag or env var: comma-separated
    elif isinstance(v, list | tuple) and all(isinstance(a, str) for a in v):
        items = [a for raw in v for a in re.split(r"[\s,]+", raw) if a]
    else:
        raise ValueError(f"expected a list of tool families, got {v!r}")
    if not items:
        raise ValueError(f"name at least one of {', '.join(TOOL_SETS)}")
    bad = [a for a in items if a.lower() not in TOOL_SETS]
    if bad:
        raise ValueError(f"expected {', '.join(TOOL_SETS)} (comma-separated), got {bad[0]!r}")
    return tuple(dict.fromkeys(a.lower() for a in items))


def _items(v: Any, what: str) -> list[str]:
    """A list from the file or the flags, or a comma- or whitespace-separated string (an env var)."""
    if isinstance(v, str):
        return [a for a in re.split(r"[\s,]+", v) if a]
    if isinstance(v, list | tuple) and all(isinstance(a, str) for a in v):
        return list(v)
    raise ValueError(f"expected a list of {what}, got {v!r}")


def _domains(v: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(host_pattern(a) for a in _items(v, "host patterns")))


MAX_TABS_PER_SITE = 16


def _tabs(v: Any) -> int:
    n = _count(v)
    if not 1 <= n <= MAX_TABS_PER_SITE:
        raise ValueError(f"expected a whole number from 1 to {MAX_TABS_PER_SITE}, got {v!r}")
    return n


def _urls(v: Any) -> tuple[str, ...]:
    """https URLs (a Project's or Gem's page); which site each belongs to is checked when the tables are known."""
    items = _items(v, "URLs")
    for url in items:
        if len(url) > 2000 or not re.fullmatch(r"https://[^\s/]+/\S*", url):
            raise ValueError(f"expected an https URL, got {url[:100]!r}")
    return tuple(dict.fromkeys(items))


_FIELDS: dict[str, Any] = {
    "state_dir": _path,
    "log_level": _choice(LOG_LEVELS),
    "discovery_port": _port,
    "relay_port": _relay_port,
    "http_port": _relay_port,
    "browser": _choice(BROWSER_MODES),
    "browser_path": _opt_str,
    "channel": _opt_choice(CHANNELS),
    "profile_dir": _path,
    "isolated": _bool,
    "headless": _bool,
    "browser_args": _args,
    "load_extensions": _extensions,
    "close_browser": _bool,
    "project": _opt_str,
    "response_timeout_s": _positive,
    "extension_wait_s": _positive,
    "stall_s": _positive,
    "extension_loading": _choice(("auto", "flag", "pipe")),
    "allow_faults": _bool,
    "debug_dumps_keep": _count,
    "private_text": _bool,
    "enable_mutations": _bool,
    "unsafe_enable_eval": _bool,
    "allowed_domains": _domains,
    "network_secrets": _bool,
    "download_dir": _path,
    "use_open_tabs": _bool,
    "providers_file": _path,
    "jobs_keep_days": _positive,
    "tools": _tool_sets,
    "confirm_costly": _bool,
    "tabs_per_site": _tabs,
    "tab_idle_s": _positive,
    "chat_base_urls": _urls,
}

# repeatable flags are singular; the providers file's flag is --providers
_FLAGS = {"browser_args": "browser-arg", "load_extensions": "load-extension", "providers_file": "providers",
          "chat_base_urls": "chat-base-url"}
_ENV_ALIASES = {"browser_path": ("AI_BRIDGE_BROWSER_PATH", "AI_BRIDGE_BROWSER_BIN")}


CONFIG_FILE_MAX_BYTES = 1 << 20  # a config or providers file is a few KB; more is a mistake (or /dev/zero)


def read_config_file(path: Path, what: str, limit: int = CONFIG_FILE_MAX_BYTES) -> str:
    """The text of a small file the user named (config.toml, providers.toml). It must be a regular file of at most
    `limit` bytes: a FIFO would block the start forever and /dev/zero exhaust memory, so the file is opened without
    blocking and checked (fstat) before anything is read. Raises `ConfigError` with one line saying why;
    `FileNotFoundError` for a missing file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot open it: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{what} {path} is not a regular file ({_file_kind(st.st_mode)}): name a file of "
                              f"settings")
        if st.st_size > limit:
            raise ConfigError(f"{what} {path} is {st.st_size} bytes, more than the {limit} a settings file may have")
        chunks: list[bytes] = []
        got = 0
        while got <= limit:
            chunk = os.read(fd, limit + 1 - got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        data = b"".join(chunks)
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot read it: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ConfigError(f"{what} {path} grew past {limit} bytes while it was read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def load(cli: Mapping[str, Any] | None = None, *, env: Mapping[str, str] | None = None,
         config_file: Path | None = None, defaults: Mapping[str, Any] | None = None) -> Config:
    """Merge the sources; raise `ConfigError` on the first bad key. `defaults`: a command's own defaults, which any
    source overrides (``ask`` logs at warning unless a flag, the environment or the file says otherwise)."""
    env = os.environ if env is None else env
    values: dict[str, Any] = dict(defaults or {})

    path = config_file or default_config_file()
    text: str | None
    try:
        text = read_config_file(path, "config file")
    except FileNotFoundError:
        text = None
    if text is not None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path}: cannot parse: {exc}") from exc
        for key, raw in data.items():
            name = key.replace("-", "_")
            if name not in _FIELDS:
                raise ConfigError(f"config file {path}: unknown key {key!r}")
            values[name] = _parse(name, raw, f"config file {path}: key {key!r}")

    for name in _FIELDS:
        var = "AI_BRIDGE_" + name.upper()
        # AI_BRIDGE_BROWSER names the executable (issue text) when it is not a mode.
        if name == "browser" and var in env and env[var].strip().lower() not in BROWSER_MODES:
            values["browser_path"] = _parse("browser_path", env[var], f"environment {var}")
            continue
        if var in env:
            values[name] = _parse(name, env[var], f"environment {var}")
    for alias in _ENV_ALIASES.get("browser_path", ()):
        if alias in env:
            values["browser_path"] = _parse("browser_path", env[alias], f"environment {alias}")

    for name, raw in (cli or {}).items():
        if raw is None or name not in _FIELDS:
            continue
        if name in ("browser_args", "allowed_domains", "load_extensions", "tools", "chat_base_urls") and not raw:
            continue
        values[name] = _parse(name, raw, "option --" + _FLAGS.get(name, name.replace("_", "-")))
    return Config(**values)


def _parse(name: str, raw: Any, where: str) -> Any:
    try:
        return _FIELDS[name](raw)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
