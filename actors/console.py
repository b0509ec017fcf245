"""Console actor: a Python REPL evaluated inside the server's own trio loop, over a Unix socket (mode 0600).

``ai-bridge console`` (supervisor/console_client.py) attaches to it. ``python -m trio`` cannot serve here: it owns
its own loop and the process's stdin, which MCP needs. Code is compiled with ``PyCF_ALLOW_TOP_LEVEL_AWAIT`` and run
as a task of this actor, so ``await`` works and everything it touches is the live server.

The server registers itself in ``<state-dir>/servers/<pid>.json`` (pid, ports, socket, project) so the client can
find it; the record is removed on exit. Only the same user can connect (0600 socket in a 0700 directory), the trust
boundary of docs/security.md. Fault helpers exist only when the server runs with ``--allow-faults``.

Wire format: one JSON object per line each way. Client: ``{"op": "eval", "src": ...}``, ``{"op": "complete",
"text": ...}``, ``{"op": "interrupt"}``. Server: a banner first, then ``{"out": ..., "error": bool}`` per eval and
``{"matches": [...]}`` per completion.
"""

from __future__ import annotations

import ast
import contextlib
import datetime as dt
import inspect
import json
import logging
import os
import pprint
import rlcompleter
import socket
import stat
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

import supervisor
from supervisor.config import Config
from supervisor.errors import BridgeError, InvalidArgument, StateFileError
from supervisor.files import ensure_private_dir, write_atomic
from supervisor.otp import ActorContext, ActorSystem, Address, Message, Request
from supervisor.otp.faults import FaultKind, FaultsDisabled, inject
from supervisor.paths import server_records

from .protocol import browser, discovery, jobs, provider, relay, session_store
from .protocol.common import ProviderName

log = logging.getLogger("ai_bridge.console")

MAX_LINE = 1024 * 1024
SUN_PATH_MAX = 100  # AF_UNIX paths are limited to 107 bytes; leave room
REGISTRY_REFRESH_S = 5.0
HELPERS_DOC = """\
Helpers (those that talk to actors are async: `await` them inside code; a bare call as the whole line works too):
  tree()                 supervisor tree: state, restarts, last error, inbox depth, requests in hand
  tasks()                trio task tree, with the line each task waits on
  relay()                the extension link: connection, attached tabs, pending commands with ages
  tabs()                 provider tabs: what each provider actor holds, and the browser's tabs with our lease
  history(n=10)          the last n asks from history.jsonl
  jobs()                 background jobs
  restart('actor')       restart an actor (or a supervisor) gracefully, as its supervisor's strategy says
  call('actor', msg)     send a request (classes in `protocol`, e.g. protocol.relay.LinkStatus()) and await the reply
  system, config, protocol, trio    the live objects
{faults}"""
FAULTS_ON = """\
Faults (--allow-faults is on):
  crash('actor')  hang('actor')  slow('actor', seconds)   fire on the actor's next message
  drop_extension()       close the extension's WebSocket; it reconnects through discovery"""
FAULTS_OFF = "Fault helpers are off: start the server with --allow-faults to use crash/hang/slow/drop_extension."


class Shown(str):
    """A helper's preformatted text: shown as is, not repr'd."""


def socket_path(state_dir: Path, pid: int | None = None) -> Path:
    path = state_dir / f"console-{pid or os.getpid()}.sock"
    if len(os.fsencode(path)) <= SUN_PATH_MAX:
        return path
    # A deep state dir: fall back to a private runtime dir; the registry record says where the socket is.
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / f"ai-bridge-{os.getuid()}"
    base.mkdir(mode=0o700, exist_ok=True)
    st = os.lstat(base)
    # In a shared /tmp someone else may have made this name first (or a symlink to elsewhere): never use theirs.
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise StateFileError(f"{base} is not a directory of ours; cannot place the console socket there",
                             hint="Use a shorter --state-dir, or set XDG_RUNTIME_DIR.")
    os.chmod(base, 0o700)
    return base / f"console-{pid or os.getpid()}.sock"


# --- rendering ----------------------------------------------------------------------------------------------------


def render_tree(node: dict[str, Any]) -> str:  # the JSON form of ChildInfo, as bridge_status shows it too
    lines = [f"{node.get('id', 'root')} ({node.get('strategy', '?')})"]

    def walk(children: list[dict[str, Any]], prefix: str) -> None:
        for i, c in enumerate(children):
            last = i == len(children) - 1
            head = prefix + ("└─ " if last else "├─ ")
            kind = f" ({c['strategy']})" if "strategy" in c else ""
            facts = [c["state"], f"restarts {c['restarts']}"]
            if c.get("inboxDepth") is not None:
                facts.append(f"inbox {c['inboxDepth']}")
            for cur in c.get("current") or []:
                facts.append(f"handling {cur['message']} (attempt {cur['attempt']}, {cur['waitingS']:.1f}s)")
            if c.get("lastError"):
                facts.append(f"last error: {c['lastError']}")
            lines.append(f"{head}{c['id']}{kind}  " + " · ".join(facts))
            if "children" in c:
                walk(c["children"], prefix + ("   " if last else "│  "))

    walk(node.get("children", []), "")
    return "\n".join(lines)


def _short(filename: str) -> str:
    for marker in ("/site-packages/", "/actors/", "/supervisor/", "/tests/"):
        if marker in filename:
            keep = marker.strip("/") + "/" if marker != "/site-packages/" else ""
            return keep + filename.rsplit(marker, 1)[1]
    return filename


def _where(task: trio.lowlevel.Task) -> str:
    frames = [(f.f_code.co_filename, lineno, f.f_code.co_name) for f, lineno in task.iter_await_frames()]
    if not frames:
        return "(running)"
    inner = frames[-1]
    ours = next((fr for fr in reversed(frames) if "/actors/" in fr[0] or "/supervisor/" in fr[0]), None)
    text = f"{_short(inner[0])}:{inner[1]} {inner[2]}"
    if ours is not None and ours != inner:
        text += f"  ← {_short(ours[0])}:{ours[1]} {ours[2]}"
    return text


def render_tasks() -> str:
    root = trio.lowlevel.current_root_task()
    me = trio.lowlevel.current_task()
    lines: list[str] = []

    def walk(task: trio.lowlevel.Task, prefix: str, last: bool, top: bool) -> None:
        mark = "" if top else ("└─ " if last else "├─ ")
        note = "  (this console)" if task is me else ""
        lines.append(f"{prefix}{mark}{task.name}  — {_where(task)}{note}")
        kids = [c for n in task.child_nurseries for c in n.child_tasks]
        for i, child in enumerate(kids):
            walk(child, prefix + ("" if top else ("   " if last else "│  ")), i == len(kids) - 1, False)

    if root is not None:
        walk(root, "", True, True)
    return f"{len(lines)} tasks\n" + "\n".join(lines)


def show(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Shown):
        return str(value)
    return pprint.pformat(value, width=110, sort_dicts=False)


# --- the namespace ------------------------------------------------------------------------------------------------


_SERVICES: tuple[Address[Any], ...] = (relay.RELAY, discovery.DISCOVERY, browser.BROWSER, session_store.SESSION_STORE,
                                      jobs.JOBS)
ADDRESSES: dict[str, Address[Any]] = {a.name: a for a in (*_SERVICES, *provider.ADDRESSES.values())}


class _Protocol:
    """`protocol.relay.LinkStatus()` and friends: every actor's request classes, for call()."""

    relay = relay
    discovery = discovery
    browser = browser
    session_store = session_store
    jobs = jobs
    provider = provider


def namespace(system: ActorSystem, config: Config) -> dict[str, Any]:
    registry = system.registry

    async def call(actor: str, message: Request[Any], timeout: float = 30) -> Any:
        address = ADDRESSES.get(actor)
        if address is None:
            raise ValueError(f"no actor {actor!r} takes requests; actors: {', '.join(ADDRESSES)}")
        if isinstance(message, relay.DropLink) and not config.allow_faults:
            raise PermissionError(FAULTS_OFF)
        return await registry.ref(address).call(message, timeout=timeout)

    def tree() -> Shown:
        info = system.tree()
        return Shown(render_tree(info.as_json()) if info is not None else "(not running)")

    def tasks() -> Shown:
        return Shown(render_tasks())

    async def relay_() -> Any:
        return (await registry.ref(relay.RELAY).call(relay.LinkStatus(), timeout=5)).as_json()

    async def tabs() -> dict[str, Any]:
        out: dict[str, Any] = {}
        for p in ProviderName:
            try:
                report = await registry.ref(provider.provider_address(p)).call(provider.ProviderStatus(), timeout=15)
                out[p.value] = report.as_json()
            except BridgeError as exc:
                out[p.value] = f"[{exc.code}] {exc}"
        return out

    async def history(n: int = 10) -> list[dict[str, Any]]:
        records = await registry.ref(session_store.SESSION_STORE).call(session_store.ReadHistory(limit=n), timeout=10)
        return [{"ts": r.ts, "project": r.project, "provider": r.provider, "status": r.status, "error": r.error,
                 "url": r.url} for r in records]

    async def jobs_() -> list[dict[str, object]]:
        return [v.row() for v in await registry.ref(jobs.JOBS).call(jobs.ListJobs(), timeout=5)]

    async def restart(actor: str) -> Shown:
        try:
            info = await system.restart(actor)
        except KeyError:
            raise ValueError(f"no actor named {actor!r}; actors: {', '.join(registry.names())}") from None
        return Shown(f"restarted {actor}: {info.state.value}, restarts {info.restarts}")

    def fault(kind: FaultKind) -> Callable[..., str]:
        def arm(actor: str, seconds: float = 5.0) -> str:
            try:
                inject(registry, actor, kind, delay=seconds)
            except FaultsDisabled:
                raise PermissionError(FAULTS_OFF) from None
            return Shown(f"armed {kind.value} on {actor}'s next message")

        arm.__name__ = kind.value
        return arm

    async def drop_extension() -> Shown:
        if not config.allow_faults:
            raise PermissionError(FAULTS_OFF)
        dropped = await registry.ref(relay.RELAY).call(relay.DropLink(), timeout=5)
        return Shown("dropped the extension link" if dropped else "no extension was connected")

    def help_(obj: Any = None) -> Shown:
        if obj is not None:
            return Shown(inspect.getdoc(obj) or f"no documentation for {obj!r}")
        return Shown(HELPERS_DOC.format(faults=FAULTS_ON if config.allow_faults else FAULTS_OFF))

    return {
        "__name__": "__console__", "__builtins__": __builtins__,
        "system": system, "config": config, "protocol": _Protocol, "trio": trio,
        "tree": tree, "tasks": tasks, "relay": relay_, "tabs": tabs, "history": history, "jobs": jobs_,
        "restart": restart, "call": call, "help": help_,
        "crash": fault(FaultKind.CRASH), "hang": fault(FaultKind.HANG), "slow": fault(FaultKind.SLOW),
        "drop_extension": drop_extension,
    }


async def evaluate(source: str, ns: dict[str, Any]) -> str:
    """Run a block like the REPL does: statements run, and the value of a final expression is shown. A coroutine
    that results is awaited, so a helper typed as the final expression needs no ``await``."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    printed: list[str] = []
    # print() goes to the console, never to the server's stdout (which belongs to MCP).
    ns["print"] = lambda *args, sep=" ", end="\n", **_: printed.append(sep.join(map(str, args)) + end)
    module = ast.parse(source, "<console>", "exec")
    last: ast.expr | None = None
    if module.body and isinstance(module.body[-1], ast.Expr):
        last = module.body.pop().value  # type: ignore[attr-defined]
    if module.body:
        ran = eval(compile(module, "<console>", "exec", flags=flags), ns)  # the console's purpose; 0600 socket
        if inspect.iscoroutine(ran):
            await ran
    value = None
    if last is not None:
        value = eval(compile(ast.Expression(last), "<console>", "eval", flags=flags), ns)
        if inspect.iscoroutine(value):
            value = await value
        ns["_"] = value
    shown = show(value)
    return "".join(printed) + shown + ("\n" if shown and not shown.endswith("\n") else "")


def _format_error(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return "".join(traceback.format_exception_only(exc))
    tb = traceback.extract_tb(exc.__traceback__)
    # Drop this module's own frames: the user wants the frames of what they ran.
    frames = [f for f in tb if f.filename != __file__]
    head = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)) if frames else ""
    return head + "".join(traceback.format_exception_only(exc))


class ClientSession:
    """One attached console: its own namespace, one eval at a time, interruptible."""

    def __init__(self, stream: trio.SocketStream, ns: dict[str, Any]) -> None:
        self.stream = stream
        self.ns = ns
        self.current: trio.CancelScope | None = None
        # An interrupt can overtake its eval (Ctrl-C right after Enter, a busy server): evals are numbered as they
        # arrive, and an interrupt cancels every eval received before it, running or still queued.
        self.received = 0
        self.interrupted_upto = 0
        self.send_lock = trio.Lock()

    async def send(self, obj: dict[str, Any]) -> None:
        async with self.send_lock:
            await self.stream.send_all((json.dumps(obj, ensure_ascii=False) + "\n").encode())

    async def run(self, banner: dict[str, Any]) -> None:
        requests_send, requests_recv = trio.open_memory_channel[tuple[int, dict[str, Any]]](16)
        async with self.stream, trio.open_nursery() as nursery:
            await self.send(banner)

            async def reader() -> None:
                buf = b""
                async with requests_send:
                    while True:
                        data = await self.stream.receive_some(65536)
                        if not data:
                            break  # the client left: end this session (and any eval it started)
                        buf += data
                        if len(buf) > MAX_LINE:
                            await self.send({"out": "input too long\n", "error": True})
                            break
                        while b"\n" in buf:
                            line, buf = buf.split(b"\n", 1)
                            try:
                                req = json.loads(line)
                            except ValueError:
                                req = {"op": "bad"}
                            if not isinstance(req, dict):
                                req = {"op": "bad"}
                            if req.get("op") == "interrupt":
                                self.interrupted_upto = self.received
                                if self.current is not None:
                                    self.current.cancel()
                                continue
                            if req.get("op") == "eval":
                                self.received += 1
                            await requests_send.send((self.received, req))
                nursery.cancel_scope.cancel()

            nursery.start_soon(reader)
            async for seq, req in requests_recv:
                await self.answer(req, seq)

    async def answer(self, req: dict[str, Any], seq: int) -> None:
        op = req.get("op")
        if op == "complete":
            text = str(req.get("text", ""))
            completer = rlcompleter.Completer(self.ns)
            matches: list[str] = []
            for i in range(200):
                m = completer.complete(text, i)
                if m is None:
                    break
                matches.append(m)
            await self.send({"matches": matches})
            return
        if op != "eval" or not isinstance(req.get("src"), str):
            await self.send({"out": "bad request: expected {\"op\": \"eval\", \"src\": ...}\n", "error": True})
            return
        error = False
        with trio.CancelScope() as scope:
            self.current = scope
            if seq <= self.interrupted_upto:
                scope.cancel()  # interrupted before it started
            try:
                out = await evaluate(req["src"], self.ns)
            except Exception as exc:
                out, error = _format_error(exc), True
            finally:
                self.current = None
        if scope.cancelled_caught:
            out, error = "KeyboardInterrupt: cancelled\n", True
        await self.send({"out": out, "error": error})


# --- the actor ----------------------------------------------------------------------------------------------------


def _write_record(path: Path, record: dict[str, Any]) -> None:
    ensure_private_dir(path.parent)
    write_atomic(path, json.dumps(record, indent=2).encode())


async def _open_listener(path: Path) -> trio.SocketListener:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a stale socket of a dead server with our pid
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # the socket file is created 0600: same user only
    try:
        await sock.bind(str(path))
    except BaseException:
        sock.close()
        raise
    finally:
        os.umask(old_umask)
    sock.listen(8)
    return trio.SocketListener(sock)


async def _ports(system: ActorSystem) -> dict[str, int | None]:
    out: dict[str, int | None] = {"discoveryPort": None, "relayPort": None}
    with contextlib.suppress(BridgeError):
        port = await system.registry.ref(discovery.DISCOVERY).call(discovery.DiscoveryPort(), timeout=2)
        out["discoveryPort"] = port
    with contextlib.suppress(BridgeError):
        out["relayPort"] = (await system.registry.ref(relay.RELAY).call(relay.LinkStatus(), timeout=2)).relay_port
    return out


async def run(
    ctx: ActorContext[Message],
    *,
    system: ActorSystem,
    config: Config,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    state_dir = config.state_dir
    record_path = server_records(state_dir) / f"{os.getpid()}.json"
    try:
        path = socket_path(state_dir)
        listener = await _open_listener(path)
    except (OSError, StateFileError) as exc:
        # The console is a convenience: a server that cannot offer it still serves (and says why once).
        log.warning("the live console is off: cannot create its socket (%s)", exc)
        task_status.started()
        async for env in ctx.messages():
            env.fail(InvalidArgument(f"console does not accept {type(env.message).__name__}"))
        return
    base_ns = namespace(system, config)
    record: dict[str, Any] = {
        "pid": os.getpid(), "socket": str(path), "project": config.project or Path.cwd().name,
        "cwd": str(Path.cwd()), "stateDir": str(state_dir), "version": supervisor.__version__,
        "startedAt": dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "allowFaults": config.allow_faults, "discoveryPort": None, "relayPort": None,
    }
    banner = {"banner": f"ai-bridge {supervisor.__version__} console — pid {os.getpid()}, project "
                        f"{record['project']}. help() lists the helpers; exit or Ctrl-D leaves (the server keeps "
                        "running).", "pid": os.getpid(), "allowFaults": config.allow_faults}
    try:
        try:
            await trio.to_thread.run_sync(_write_record, record_path, record)
        except (OSError, StateFileError) as exc:
            log.warning("cannot register this server for `ai-bridge console` (%s); use --socket %s", exc, path)
        async with trio.open_nursery() as nursery:

            async def accept_loop() -> None:
                while True:
                    stream = await listener.accept()
                    session = ClientSession(stream, dict(base_ns))
                    nursery.start_soon(_serve_quietly, session, banner)

            async def keep_record() -> None:
                # Ports change when the link restarts; the record follows, so the console shows where to look.
                while True:
                    ports = await _ports(system)
                    if any(record[k] != v for k, v in ports.items()):
                        record.update(ports)
                        with contextlib.suppress(OSError, StateFileError):
                            await trio.to_thread.run_sync(_write_record, record_path, record)
                    await trio.sleep(REGISTRY_REFRESH_S)

            nursery.start_soon(accept_loop)
            nursery.start_soon(keep_record)
            task_status.started()
            async for env in ctx.messages():  # takes no requests (its Address accepts none); drained for stop
                env.fail(InvalidArgument(f"console does not accept {type(env.message).__name__}"))
            # Stopping: open consoles are cut off at once; they never hold up the server's shutdown.
            nursery.cancel_scope.cancel()
    finally:
        for p in (path, record_path):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        await listener.aclose()


async def _serve_quietly(session: ClientSession, banner: dict[str, Any]) -> None:
    try:
        await session.run(banner)
    except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        log.debug("console client went away: %s", exc)
