"""Real servers and browsers (`open_bridge`) kept open in threads of their own, shared by many tests.

A server start and its Chromium cost about 2 CPU-s together; the ask a test makes on them about 0.4 (measured, 2
cores). pytest-trio runs each test (and each Hypothesis example) in a trio run of its own, and its async fixtures
cannot outlive a test, so a bridge that serves many tests runs in a thread with its own trio loop:

- `BridgeThread`: one bridge in a thread; `call` (sync, from any thread) or `run` (async, from another trio run)
  hands it work. tests/test_drift.py runs its Hypothesis examples on two.
- `SharedBridges` (the session fixture ``shared_bridge_pool``; tests take ``shared_bridge``): a worker's bridge for
  one server setting (a test's ``bridge_env`` mark), lent to one test at a time as a `Lease`. The run order sends
  the tests of a setting to one worker in groups (conftest.py `shared_groups`), so a group costs one start.

A lease gives the test what a bridge of its own would have: the fake sites reset (the ``sites`` fixture), no tab of
an earlier test (their tabs are closed first, so the first ask opens and loads its page anew, with the test's page
settings), no cookie or cached page of one, a project of its own (added to every call that takes one), and the
history, log and restarts of its own time only. A test that fails inside its lease, or leaves a call running,
retires the bridge: the next test gets a new one.

What a shared bridge cannot give stays with `open_bridge`: a state dir, profile or flags of the test's own, a
browser the test kills or restarts, a server it stops, the first start itself.

A bridge left idle would be one more server on the worker's discovery ports and one more extension polling them, in
a network namespace that every other test has to itself: `SharedBridges.close` (conftest.py's autouse fixture) stops
them before any test that does not use them.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import trio

from .conftest import find_actor
from .e2e import Bridge, DevTools, open_bridge, open_devtools
from .fakesites.fixture import FakeSites

T = TypeVar("T")
SHARED_PROJECT = "shared-bridge"  # the server's --project; each lease passes its own in the calls


class BridgeThread:
    def __init__(self, sites: FakeSites, tmp: Path, **kw: Any) -> None:
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stop: trio.Event | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self.bridge: Bridge | None = None
        self.project_tools: frozenset[str] = frozenset()  # the tools that take a `project` argument
        self.in_flight = 0  # calls running in the bridge's loop (only that loop changes it)
        self.pid: int | None = None  # the server's
        self._thread = threading.Thread(target=self._run, args=(sites, tmp, kw), name="bridge", daemon=True)
        self._thread.start()
        self._ready.wait(180)
        if self._error is not None:
            raise self._error
        if self.bridge is None:
            raise TimeoutError("the bridge did not start within 180 s")

    def _run(self, sites: FakeSites, tmp: Path, kw: dict[str, Any]) -> None:
        async def main() -> None:
            self._stop = trio.Event()
            self._token = trio.lowlevel.current_trio_token()
            async with open_bridge(sites, tmp, **kw) as bridge:
                listed = await bridge.session.list_tools()
                self.project_tools = frozenset(t.name for t in listed.tools
                                               if "project" in (t.input_schema or {}).get("properties", {}))
                self.pid = int((await bridge.status())["pid"])
                self.bridge = bridge
                self._ready.set()
                await self._stop.wait()

        try:
            trio.run(main)
        except BaseException as exc:  # reported to the test that started it (or at close)
            self._error = exc
        finally:
            self._ready.set()

    def alive(self) -> bool:
        return self._thread.is_alive() and self._error is None and not (self._stop is not None and self._stop.is_set())

    def call(self, tool: str, args: dict[str, Any], timeout: float = 300) -> Any:
        """The tool's result, from the bridge's own loop."""
        assert self.bridge is not None and self._token is not None
        bridge = self.bridge

        async def one() -> Any:
            with trio.fail_after(timeout):
                return await bridge.call(tool, args)

        return trio.from_thread.run(one, trio_token=self._token)

    async def run(self, fn: Callable[[Bridge], Awaitable[T]]) -> T:
        """``await fn(bridge)`` in the bridge's own loop, awaited from another trio run. Cancelling the caller
        cancels it there too (an MCP call then sends notifications/cancelled, as a client of its own would)."""
        assert self.bridge is not None and self._token is not None
        bridge, token = self.bridge, self._token
        box: dict[str, Any] = {}

        async def remote() -> T:
            self.in_flight += 1
            try:
                with trio.CancelScope() as scope:
                    box["scope"] = scope
                    if box.get("cancelled"):  # cancelled before it started: run nothing
                        scope.cancel()
                    return await fn(bridge)
                raise trio.TooSlowError("cancelled by the caller")  # no one waits for this any more
            finally:
                self.in_flight -= 1

        try:
            return await trio.to_thread.run_sync(lambda: trio.from_thread.run(remote, trio_token=token),
                                                 abandon_on_cancel=True)
        except trio.Cancelled:
            box["cancelled"] = True  # set before reading the scope; remote sets the scope before reading this
            if (scope := box.get("scope")) is not None:
                token.run_sync_soon(scope.cancel)
            raise

    def close(self) -> None:
        """Stop the bridge and wait for it (from any thread but a trio run's: it blocks)."""
        if self._stop is not None and self._token is not None and self._thread.is_alive():
            try:
                self._token.run_sync_soon(self._stop.set)
            except trio.RunFinishedError:
                pass
        self._thread.join(60)
        if self._thread.is_alive():
            raise TimeoutError("the bridge did not stop within 60 s")
        if self._error is not None:
            raise self._error


class Lease:
    """One test's use of a shared bridge: `Bridge`'s interface, limited to what this test did."""

    def __init__(self, shared: BridgeThread, project: str) -> None:
        assert shared.bridge is not None
        self._shared = shared
        self._bridge = shared.bridge
        self.project = project
        self.state_dir = self._bridge.state_dir
        self.profile_dir = self._bridge.profile_dir
        self.stderr_path = self._bridge.stderr_path  # the whole of it: `log_text` is this lease's part
        self.progress: list[tuple[float, str]] = []
        self._log_start = self._bridge.stderr_path.stat().st_size
        self._file_log_start = self._log_file().stat().st_size if self._log_file().exists() else 0
        self._restarts: dict[str, int] = {}

    def _log_file(self) -> Path:
        return self.state_dir / "ai-bridge.log"

    async def call(self, tool: str, args: dict[str, Any], **kw: Any) -> Any:
        if tool in self._shared.project_tools and "project" not in args:
            args = {**args, "project": self.project}

        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            self.progress.append((p, message or ""))

        return await self._shared.run(lambda b: b.session.call_tool(tool, args, progress_callback=on_progress, **kw))

    async def status(self) -> dict[str, Any]:
        return await self._shared.run(lambda b: b.status())

    def restarts(self, status: Mapping[str, Any], actor_id: str) -> int:
        """An actor's restarts in `status` since this lease began."""
        return int(find_actor(dict(status), actor_id)["restarts"]) - self._restarts.get(actor_id, 0)

    def history(self) -> list[dict[str, Any]]:
        return [h for h in self._bridge.history() if h.get("project") == self.project]

    def sessions(self) -> dict[str, Any]:
        return self._bridge.sessions()

    def log_text(self) -> str:
        """What the server wrote on stderr during this lease."""
        with open(self._bridge.stderr_path, "rb") as f:
            f.seek(self._log_start)
            return f.read().decode(errors="replace")

    def whole_log_text(self) -> str:
        """Everything the server wrote on stderr and to its log file since it started (what happened before this
        lease too: the extension's first connection, say), for checks that hold for the server's whole life."""
        with open(self._bridge.stderr_path, "rb") as f, open(self._log_file(), "rb") as g:
            return (f.read() + g.read()).decode(errors="replace")

    def log_file_text(self) -> str:
        """What the server wrote to its log file (<state-dir>/ai-bridge.log) during this lease."""
        with open(self._log_file(), "rb") as f:
            f.seek(self._file_log_start)
            return f.read().decode(errors="replace")

    @asynccontextmanager
    async def devtools(self) -> AsyncIterator[DevTools]:
        async with open_devtools(self.profile_dir) as dt:
            yield dt

    async def begin(self) -> None:
        """Close every tab an earlier test left (but one blank page, so the browser keeps a window), clear the
        cookies and cache they left as a new browser has none, wait until the server has seen the tabs go, and note
        the actors' restarts so far."""
        async with self.devtools() as dt:
            pages = [t for t in (await dt.send("Target.getTargets"))["targetInfos"] if t["type"] == "page"]
            # Always a new blank page, in a window of its own: an earlier test's blank page may be one the tools own (a
            # popup is about:blank too), and a new tab beside a tools tab gets it as its opener, so the tools claim it.
            keep = (await dt.send("Target.createTarget", {"url": "about:blank", "newWindow": True}))["targetId"]
            for t in pages:
                if t["targetId"] != keep:
                    await dt.send("Target.closeTarget", {"targetId": t["targetId"]})
            session = (await dt.send("Target.attachToTarget", {"targetId": keep, "flatten": True}))["sessionId"]
            await dt.send("Network.clearBrowserCookies", {}, session)
            await dt.send("Network.clearBrowserCache", {}, session)
            await dt.send("Target.detachFromTarget", {"sessionId": session})
        status: dict[str, Any] = {}
        try:
            with trio.fail_after(30):
                while True:
                    status = await self.status()
                    link = status.get("extension") or {}
                    if link.get("connected") and not link.get("attachedTabs"):
                        if not status["browserTools"].get("tabs"):
                            break
                        # The browser tools forget a tab that is gone when they next list the browser's tabs.
                        await self.call("tabs_list", {})
                    await trio.sleep(0.05)
        except trio.TooSlowError as e:
            raise AssertionError(f"the tabs an earlier test left did not go: extension {status.get('extension')}, "
                                 f"browser tools {status.get('browserTools')}") from e

        def walk(node: Mapping[str, Any]) -> None:
            for c in node.get("children", []):
                self._restarts[c["id"]] = int(c.get("restarts", 0))
                walk(c)

        walk(status["actors"])


class SharedBridges:
    """A worker's shared bridges, one per set of server settings (env and extra flags), lent one test at a time."""

    def __init__(self, tmp: Callable[[], Path]) -> None:
        self._tmp = tmp
        self._bridges: dict[tuple[Any, ...], BridgeThread] = {}
        self._projects = itertools.count(1)
        self.starts = 0

    @asynccontextmanager
    async def lease(self, sites: Any, *, env: Mapping[str, str] | None = None,
                    extra: tuple[str, ...] = ()) -> AsyncIterator[Lease]:
        key = (tuple(sites.chromium_args()), tuple(sorted((env or {}).items())), tuple(extra))
        for other in [k for k, b in self._bridges.items() if k != key or not b.alive()]:
            await self._retire_async(other)  # one bridge at a time: the run order groups the tests of one setting
        shared = self._bridges.get(key)
        if shared is None:
            shared = await trio.to_thread.run_sync(lambda: BridgeThread(
                sites, self._tmp(), project=SHARED_PROJECT, env=dict(env or {}), extra=extra))
            self._bridges[key] = shared
            self.starts += 1
        lease = Lease(shared, f"test-{next(self._projects)}")
        ok = False
        try:
            await lease.begin()
            yield lease
            with trio.move_on_after(10):  # a call the test cancelled winds down
                while shared.in_flight:
                    await trio.sleep(0.02)
            ok = not shared.in_flight
        finally:
            if not ok:  # the test failed inside, or left a call running: nobody else gets this bridge
                with trio.CancelScope(shield=True):  # bounded: close() gives up after 60 s
                    await self._retire_async(key)

    async def _retire_async(self, key: tuple[Any, ...]) -> None:
        await trio.to_thread.run_sync(self._retire, key)

    def _retire(self, key: tuple[Any, ...]) -> None:
        shared = self._bridges.pop(key)
        try:
            shared.close()
        except Exception:  # the bridge's own failure: the test that used it has failed with it already
            if shared._thread.is_alive():
                raise

    def close(self) -> None:
        for key in list(self._bridges):
            self._retire(key)


# The ``shared_bridge`` fixture: ``async with shared_bridge() as b`` (the server's environment: the test's bridge_env
# mark).
OpenShared = Callable[[], AbstractAsyncContextManager[Lease]]

_pools: list[SharedBridges] = []


def pools() -> list[SharedBridges]:
    """The pools of this process (conftest.py stops their bridges before a test that starts its own processes)."""
    return _pools


def live_cpu() -> float:
    """CPU the running shared bridges' processes (each server and its browser) used so far. They are reaped only
    when the bridge stops, so the resource figures of the tests that use them miss it (conftest.py `cpu_seconds`
    adds it): each test's CPU figure, which the run order plans with, then counts what its lease cost."""
    return sum(process_tree_cpu(b.pid) for pool in _pools for b in pool._bridges.values() if b.pid is not None)


def process_tree_cpu(root: int) -> float:
    """CPU seconds of a process and its descendants, reaped ones included (from /proc; 0 if it is gone)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    used: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            children.setdefault(int(fields[1]), []).append(int(name))
            used[int(name)] = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    total, todo = used.get(root, 0), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            total += used.get(child, 0)
            todo.append(child)
    return total / tick
