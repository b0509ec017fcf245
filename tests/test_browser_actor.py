"""The browser actor's waiting rules against a fake relay, on an autojump clock: how long connect mode waits for the
user's extension, that auto mode waits for the user's Chrome after a drop before it launches, the progress it
streams meanwhile, its states and recovery counts; and, against a fake debugging pipe, when it wakes the stopped
worker of the browser it launched. (The launching itself runs on real Chromium in test_e2e_lifecycle.py.)"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
import trio
import trio.testing

from actors import browser
from actors.browser import process as browser_process
from actors.protocol.browser import (
    BROWSER,
    BrowserPhase,
    BrowserProgress,
    BrowserReport,
    BrowserState,
    BrowserStatus,
    DropCause,
    EnsureBrowser,
    Ownership,
)
from actors.protocol.common import JSONObject
from actors.protocol.relay import LinkReport, LinkStatus, RelayInfo, RelayInfoReply, RelayRequest, WaitConnected
from supervisor.config import Config, load
from supervisor.errors import BrowserNotFound, ExtensionNotConnected
from supervisor.otp import ActorContext, ActorSystem, Envelope, Progress, Registry, Strategy, SupervisorSpec, child


class FakeLink:
    """The user's extension as the relay sees it: connected or not, changed by the test."""

    def __init__(self) -> None:
        self.since: float | None = None
        self.changed = trio.Event()
        self.peer_port: int | None = None  # the browser side's port: which browser holds the link

    def connect(self, peer_port: int | None = None) -> None:
        self.peer_port = peer_port
        self.since = time.time() + (0.001 if self.since is not None else 0)
        self.changed.set()
        self.changed = trio.Event()

    def drop(self) -> None:
        self.since = None
        self.changed.set()
        self.changed = trio.Event()


async def fake_relay(ctx: ActorContext[RelayRequest], *, link: FakeLink,
                     task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    async with trio.open_nursery() as nursery:
        async def wait(env: Envelope[RelayRequest], msg: WaitConnected) -> None:
            with trio.move_on_after(msg.timeout_s):
                while link.since is None:
                    await link.changed.wait()
                env.reply(msg.reply(None))
                return
            env.fail(ExtensionNotConnected(f"no ai-bridge extension connected within {msg.timeout_s:g}s"))

        async for env in ctx.messages():
            msg = env.message
            match msg:
                case LinkStatus():
                    env.reply(msg.reply(LinkReport(link.since is not None, link.since, "0.1.0", "fake", (), 0, (),
                                                   1, peer_port=link.peer_port)))
                case WaitConnected():
                    nursery.start_soon(wait, env, msg)
                case RelayInfo():
                    env.reply(msg.reply(RelayInfoReply("ws://127.0.0.1:1", "t", "server-1", "now", "0" * 16,
                                                       "aib1-fake")))
                case _:
                    env.fail(AssertionError(f"unexpected {msg}"))
        nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def actors(config: Config, link: FakeLink) -> AsyncIterator[ActorSystem]:
    runtime = ActorSystem(registry=Registry())
    spec = SupervisorSpec("root", (
        child("relay", fake_relay, link=link),
        child("browser", browser.run, config=config, extension_dir=Path("/nonexistent/extension")),
    ), strategy=Strategy.REST_FOR_ONE)
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, spec)
        yield runtime
        sup.shutdown()


def make_config(tmp_path: Path, mode: str) -> Config:
    # A browser that cannot be found: any launch attempt shows as BrowserNotFound, at the moment it happens
    # (isolated: no look at a profile's lock, which runs in a thread, during which the autojump clock would drift).
    return load({"state_dir": str(tmp_path / "state"), "browser": mode, "browser_path": "/nonexistent/chrome",
                 "isolated": True}, env={}, config_file=tmp_path / "none.toml")


async def ensure(runtime: ActorSystem, timeout_s: float = 60) -> tuple[float, list[BrowserProgress]]:
    """→ how long EnsureBrowser took and what progress it streamed (raises what it failed with)."""
    got: list[BrowserProgress] = []

    def sink(item: Progress) -> None:
        assert isinstance(item, BrowserProgress)
        got.append(item)

    t0 = trio.current_time()
    await runtime.registry.ref(BROWSER).call(EnsureBrowser(timeout_s), timeout=timeout_s + 10, on_progress=sink)
    return trio.current_time() - t0, got


async def status(runtime: ActorSystem) -> BrowserReport:
    return await runtime.registry.ref(BROWSER).call(BrowserStatus(), timeout=5)


async def test_connect_mode_waits_out_the_extensions_alarm_then_gives_the_install_hint(
        autojump_clock: trio.testing.MockClock, tmp_path: Path) -> None:
    link = FakeLink()
    async with actors(make_config(tmp_path, "connect"), link) as runtime:
        t0 = trio.current_time()
        with pytest.raises(ExtensionNotConnected, match="Load unpacked") as info:
            await ensure(runtime)
        took = trio.current_time() - t0
        st = await status(runtime)
        # Long after the start, an extension that would come has come: the next ask waits only a little.
        await trio.sleep(100)
        t1 = trio.current_time()
        with pytest.raises(ExtensionNotConnected):
            await ensure(runtime)
        later = trio.current_time() - t1
    assert took == pytest.approx(35, abs=0.5)  # an idle extension looks every 30 s: up to 35 s after our start
    assert later == pytest.approx(6, abs=0.5)
    assert "toolbar icon" in str(info.value)
    assert st.state is BrowserState.DEGRADED and st.ownership is None and st.last_error


async def test_connect_mode_streams_progress_and_goes_on_when_the_extension_wakes(
        autojump_clock: trio.testing.MockClock, tmp_path: Path) -> None:
    link = FakeLink()
    async with actors(make_config(tmp_path, "connect"), link) as runtime:
        link.connect()
        await ensure(runtime)
        assert (await status(runtime)).ownership is Ownership.USER
        link.drop()
        await trio.sleep(1)

        async def wakes_after(delay: float) -> None:
            await trio.sleep(delay)
            link.connect()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wakes_after, 12)
            took, progress = await ensure(runtime)
        st = await status(runtime)
    assert took == pytest.approx(12, abs=0.5)
    assert [p.waited_s for p in progress] == [0.0, 5.0, 10.0]  # at once, then every 5 s
    assert {p.phase for p in progress} == {BrowserPhase.WAITING_FOR_EXTENSION}
    assert st.state is BrowserState.CONNECTED and st.recovery.attempts == 1 and st.recovery.reattached == 1


async def test_auto_mode_waits_for_the_users_chrome_after_a_drop_before_launching(
        autojump_clock: trio.testing.MockClock, tmp_path: Path) -> None:
    link = FakeLink()
    async with actors(make_config(tmp_path, "auto"), link) as runtime:
        link.connect()
        await ensure(runtime)  # the user's Chrome
        link.drop()
        await trio.sleep(1)
        dropped = trio.current_time() - 1

        async def comes_back_after(delay: float) -> None:
            await trio.sleep(delay)
            link.connect()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(comes_back_after, 20)
            took, progress = await ensure(runtime)  # no launch: it would have raised BrowserNotFound
        back = await status(runtime)
        # Gone for good: waited for until it could be expected back, and only then a launch.
        link.drop()
        await trio.sleep(1)
        dropped = trio.current_time() - 1
        with pytest.raises(BrowserNotFound):
            await ensure(runtime)
        launched_at = trio.current_time() - dropped
        st = await status(runtime)
    assert took == pytest.approx(20, abs=0.5) and progress[0].phase is BrowserPhase.WAITING_FOR_EXTENSION
    assert back.ownership is Ownership.USER and back.recovery.reattached == 1 and back.pid is None
    assert launched_at == pytest.approx(35, abs=0.5)
    assert st.recovery.attempts == 2 and st.recovery.failed == 1 and st.state is BrowserState.DEGRADED


async def test_auto_mode_first_ask_gives_the_users_chrome_its_short_wait(
        autojump_clock: trio.testing.MockClock, tmp_path: Path) -> None:
    link = FakeLink()
    async with actors(make_config(tmp_path, "auto"), link) as runtime:
        assert (await status(runtime)).state is BrowserState.WAITING
        t0 = trio.current_time()
        with pytest.raises(BrowserNotFound):
            await ensure(runtime)
        took = trio.current_time() - t0
        st = await status(runtime)
    assert took == pytest.approx(2.5, abs=0.3)  # extension_wait_s, then a launch
    assert st.state is BrowserState.DEGRADED and "not found" in (st.last_error or "")


# --- the stopped worker of the browser we launched: woken, unless Chrome brought it back itself ----------------------


class FakePipe:
    """The launched browser's debugging pipe: records what the actor sends; opening the wake page starts the worker
    (as the popup's runtime message does)."""

    def __init__(self, actor: browser.actor.Browser) -> None:
        self.actor = actor
        self.launched: browser.ours.Launched | None = None
        self.sent: list[tuple[str, dict[str, object]]] = []

    async def send(self, method: str, params: dict[str, object] | None = None, **_: object) -> dict[str, object]:
        self.sent.append((method, params or {}))
        if method == "Target.createTarget":
            if self.launched is not None:
                self.actor.on_target_event(self.launched, worker_event("Target.targetCreated", "w-woken"))
            return {"targetId": "popup-1"}
        return {}


def worker_event(method: str, target: str) -> browser.pipe.CdpEvent:
    info: JSONObject = {"targetId": target, "type": "service_worker", "url": browser.ours.WORKER_URL}
    return browser.pipe.CdpEvent(method, {"targetInfo": info} if method != "Target.targetDestroyed"
                                 else {"targetId": target})


class _NoRelay:
    def ref(self, name: str) -> None:
        return None


@contextlib.asynccontextmanager
async def launched_browser(
        tmp_path: Path) -> AsyncIterator[tuple[browser.actor.Browser, browser.ours.Launched, FakePipe]]:
    async with trio.open_nursery() as nursery:
        actor = browser.actor.Browser(_NoRelay(), make_config(tmp_path, "launch"),  # type: ignore[arg-type]
                                      Path("/nonexistent/extension"), nursery)
        pipe = FakePipe(actor)
        launched = browser.ours.Launched(SimpleNamespace(pid=4242), "/usr/bin/chromium",  # type: ignore[arg-type]
                                          "156", True, tmp_path / "profile", None,
                                          pipe, 0)  # type: ignore[arg-type]
        pipe.launched = launched
        actor.launched = launched
        actor.on_target_event(launched, worker_event("Target.targetCreated", "w-1"))
        yield actor, launched, pipe
        nursery.cancel_scope.cancel()


async def test_a_stopped_worker_is_woken_within_a_second(tmp_path: Path, autojump_clock: trio.testing.MockClock,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", "ai_bridge.browser")
    async with launched_browser(tmp_path) as (actor, launched, pipe):
        t0 = trio.current_time()
        actor.on_target_event(launched, worker_event("Target.targetDestroyed", "w-1"))
        assert launched.worker_target is None
        await launched.worker_seen.wait()
        woken_after = trio.current_time() - t0
        await trio.sleep(1)  # the popup is closed again once the worker runs
    assert 0.5 <= woken_after < 1
    assert [m for m, _ in pipe.sent] == ["Target.createTarget", "Target.closeTarget"]
    assert pipe.sent[0][1]["url"] == browser.ours.WAKE_URL and pipe.sent[1][1] == {"targetId": "popup-1"}
    assert actor.counts.worker_wakes == 1 and launched.worker_target == "w-woken"
    assert "woke the extension's service worker in the browser (pid 4242) (it had stopped)" in caplog.text


async def test_a_worker_chrome_restarts_by_itself_is_not_woken(tmp_path: Path,
                                                                autojump_clock: trio.testing.MockClock,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", "ai_bridge.browser")
    async with launched_browser(tmp_path) as (actor, launched, pipe):
        actor.on_target_event(launched, worker_event("Target.targetDestroyed", "w-1"))
        await trio.sleep(0.1)  # an event due for the extension: Chrome starts its worker again
        actor.on_target_event(launched, worker_event("Target.targetCreated", "w-2"))
        await trio.sleep(2)
    assert pipe.sent == [] and actor.counts.worker_wakes == 0
    assert "service worker in the browser (pid 4242) came back by itself" in caplog.text


async def test_an_ask_waking_the_worker_first_is_not_reported_as_by_itself(
        tmp_path: Path, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", "ai_bridge.browser")
    async with launched_browser(tmp_path) as (actor, launched, pipe):
        actor.on_target_event(launched, worker_event("Target.targetDestroyed", "w-1"))
        await trio.sleep(0.1)
        assert await actor.wake_worker(launched, asked=True)  # an ask came before the 0.5 s grace ended
        await trio.sleep(2)
    assert [m for m, _ in pipe.sent] == ["Target.createTarget", "Target.closeTarget"]  # one wake, the ask's
    assert actor.counts.worker_wakes == 1
    assert "came back by itself" not in caplog.text


async def test_a_worker_that_keeps_stopping_is_not_woken_in_a_loop(tmp_path: Path,
                                                                    autojump_clock: trio.testing.MockClock,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    async with launched_browser(tmp_path) as (actor, launched, pipe):
        for _ in range(browser.ours.MAX_UNASKED_WAKES + 1):  # each stop 2 s after the last wake
            assert launched.worker_target is not None
            actor.on_target_event(launched, worker_event("Target.targetDestroyed", launched.worker_target))
            await trio.sleep(2)
        opened = sum(m == "Target.createTarget" for m, _ in pipe.sent)
        still_stopped = launched.worker_target is None
        await trio.sleep(60)  # its alarm starts it again; a minute on, a stop is woken again
        actor.on_target_event(launched, worker_event("Target.targetCreated", "w-alarm"))
        actor.on_target_event(launched, worker_event("Target.targetDestroyed", "w-alarm"))
        await trio.sleep(2)
    assert opened == browser.ours.MAX_UNASKED_WAKES and still_stopped
    assert "keeps stopping; not waking it again until an ask needs it" in caplog.text
    assert sum(m == "Target.createTarget" for m, _ in pipe.sent) == opened + 1
    assert launched.worker_target == "w-woken"


# --- issue 25.1: a browser we attached to is tracked like one we launched ------------------------------------------


class FakeProcesses:
    """Browser processes as procfs would show them: which ones run, which holds a link port, which runs on our
    profile; `kill` ends one (as Chrome does on SIGTERM)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, profile_pid: int) -> None:
        self.running: set[int] = set()
        self.holders: dict[int, int] = {}  # link peer port -> browser pid
        self.profile_pid = profile_pid
        self.killed: list[tuple[int, int]] = []
        proc = browser_process
        monkeypatch.setattr(proc, "process_command", lambda pid: ["chrome"] if pid in self.running else None)
        monkeypatch.setattr(proc, "link_browser", lambda peer, server: self.holders.get(peer))
        monkeypatch.setattr(proc, "profile_owner", lambda profile, ext=None: (
            proc.ProfileOwner(self.profile_pid, True) if self.profile_pid in self.running else None))
        monkeypatch.setattr("actors.browser.links.os.kill", self.kill)

        # These fakes do not block: called in place, not in a thread (a thread would let the autojump clock leap to
        # the next deadline while it runs, the test's own included).
        async def in_place(fn: Callable[..., object], *args: object, **_: object) -> object:
            return fn(*args)

        monkeypatch.setattr(trio.to_thread, "run_sync", in_place)

    def kill(self, pid: int, sig: int) -> None:
        self.killed.append((pid, sig))
        self.running.discard(pid)


def profile_config(tmp_path: Path, mode: str) -> Config:
    return load({"state_dir": str(tmp_path / "state"), "browser": mode, "browser_path": "/nonexistent/chrome",
                 "profile_dir": str(tmp_path / "profile")}, env={}, config_file=tmp_path / "none.toml")


async def until(predicate: Callable[[], Awaitable[bool]], within: float = 30) -> None:
    with trio.fail_after(within):
        while not await predicate():
            await trio.sleep(0.1)


async def test_a_browser_on_our_profile_is_attached_then_handed_over_to_the_users_chrome(
        autojump_clock: trio.testing.MockClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The dedicated browser an earlier run left open connects first: it is `attached` (not the user's Chrome).
    When the user's Chrome connects, ai-bridge closes that browser (SIGTERM) instead of letting the two take turns."""
    procs = FakeProcesses(monkeypatch, profile_pid=4242)
    procs.running |= {4242, 5151}
    procs.holders = {40001: 4242, 40002: 5151}
    link = FakeLink()
    async with actors(profile_config(tmp_path, "auto"), link) as runtime:
        link.connect(peer_port=40001)

        async def attached() -> bool:
            st = await status(runtime)
            return st.ownership is Ownership.ATTACHED and st.pid == 4242

        await until(attached)
        link.connect(peer_port=40002)  # the user's Chrome takes the link

        async def handed_over() -> bool:
            return (await status(runtime)).recovery.handovers == 1

        await until(handed_over)
        await trio.sleep(5)
        st = await status(runtime)
    assert procs.killed == [(4242, signal.SIGTERM)]
    assert st.ownership is Ownership.USER and st.pid is None and st.state is BrowserState.CONNECTED
    assert "closing the dedicated browser (pid 4242) that ai-bridge attached to" in capsys.readouterr().err


async def test_the_users_own_reconnection_is_not_a_handover(
        autojump_clock: trio.testing.MockClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    procs = FakeProcesses(monkeypatch, profile_pid=4242)
    procs.running |= {4242}
    procs.holders = {40001: 4242, 40003: 4242}
    link = FakeLink()
    async with actors(profile_config(tmp_path, "auto"), link) as runtime:
        link.connect(peer_port=40001)
        await trio.sleep(3)
        link.drop()  # its worker stopped; the browser runs
        await trio.sleep(3)
        dropped = await status(runtime)
        link.connect(peer_port=40003)  # the same browser, back
        await trio.sleep(3)
        st = await status(runtime)
    assert procs.killed == [] and st.recovery.handovers == 0
    assert st.ownership is Ownership.ATTACHED and st.pid == 4242
    assert dropped.last_drop is not None and dropped.last_drop.cause is DropCause.WORKER_STOPPED
    assert "pid 4242" in dropped.last_drop.detail


async def test_the_browser_we_attached_to_exiting_clears_the_ownership(
        autojump_clock: trio.testing.MockClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bridge_status must not show `attached` with a dead pid once that browser is gone."""
    procs = FakeProcesses(monkeypatch, profile_pid=4242)
    procs.running |= {4242}
    procs.holders = {40001: 4242}
    link = FakeLink()
    async with actors(profile_config(tmp_path, "launch"), link) as runtime:
        link.connect(peer_port=40001)
        await trio.sleep(3)
        before = await status(runtime)
        procs.running.discard(4242)  # the user closes that browser
        link.drop()

        async def cleared() -> bool:
            st = await status(runtime)
            return st.ownership is None and st.last_drop is not None

        await until(cleared)
        after = await status(runtime)
    assert before.ownership is Ownership.ATTACHED and before.pid == 4242
    assert after.ownership is None and after.pid is None and after.state is BrowserState.DEGRADED
    assert after.last_drop is not None and after.last_drop.cause is DropCause.BROWSER_CLOSED
    assert "(pid 4242) exited" in after.last_drop.detail


# --- issue 25.6: auto mode's first ask and a user's Chrome seen lately ---------------------------------------------


async def test_the_first_ask_wait_depends_on_when_the_users_chrome_was_seen(
        autojump_clock: trio.testing.MockClock, tmp_path: Path) -> None:
    got: dict[str, float] = {}
    messages: dict[str, str] = {}
    cases = {"recent": time.time() - 2 * 86400, "old": time.time() - 30 * 86400, "never": None,
             "future": time.time() + 10 * 86400}
    for name, seen in cases.items():
        config = make_config(tmp_path / name, "auto")
        if seen is not None:
            browser.users_chrome.write_users_chrome(config.state_dir, seen)
        progress: list[Progress] = []
        async with actors(config, FakeLink()) as runtime:
            t0 = trio.current_time()
            with pytest.raises(BrowserNotFound):
                await runtime.registry.ref(BROWSER).call(EnsureBrowser(60), timeout=70, on_progress=progress.append)
            got[name] = trio.current_time() - t0
        messages[name] = progress[0].message if progress and isinstance(progress[0], BrowserProgress) else ""
    assert got["recent"] == pytest.approx(35, abs=0.6)
    assert "seen 2 days ago" in messages["recent"] and "not be logged in" in messages["recent"]
    for name in ("old", "never", "future"):  # a date in the future is not believed
        assert got[name] == pytest.approx(2.5, abs=0.6), name


async def test_the_users_chrome_connecting_is_remembered_in_a_private_file(
        autojump_clock: trio.testing.MockClock, tmp_path: Path) -> None:
    config = make_config(tmp_path, "auto")
    link = FakeLink()
    async with actors(config, link) as runtime:
        link.connect()
        await trio.sleep(2)
        st = await status(runtime)
    path = config.state_dir / browser.users_chrome.USERS_CHROME_FILE
    seen = browser.users_chrome.read_users_chrome(config.state_dir)
    assert st.ownership is Ownership.USER
    assert seen is not None and abs(seen - time.time()) < 60
    assert path.stat().st_mode & 0o777 == 0o600
    path.write_text("{not json")
    assert browser.users_chrome.read_users_chrome(config.state_dir) is None
    path.write_text('{"lastSeen": true}')
    assert browser.users_chrome.read_users_chrome(config.state_dir) is None


@pytest.mark.parametrize("drops_after_s, connected", [(1.0, False), (None, True)])
async def test_the_link_of_our_exited_browser_is_waited_out_not_used(
        tmp_path: Path, autojump_clock: trio.testing.MockClock, drops_after_s: float | None, connected: bool) -> None:
    """Our browser exited but the relay has not yet seen its link close: an ask waits for the drop (and then
    relaunches) instead of sending a command on a dying link. A link that stays is taken as live after a while."""
    link = SimpleNamespace(connected=True, since=100.0, peer_port=None, relay_port=None, browser_id=None,
                           server_id="s-1")

    class Relay:
        async def call(self, msg: object, timeout: float) -> object:
            return link

    async with launched_browser(tmp_path) as (actor, launched, _):
        actor.relay = Relay()  # type: ignore[assignment]
        assert await actor.link_connected()
        actor.dead_link_since = launched.link_since = 100.0  # its own link; then it exited (watch_process)
        async with trio.open_nursery() as nursery:
            if drops_after_s is not None:
                async def drop() -> None:
                    await trio.sleep(drops_after_s)
                    link.connected = False
                nursery.start_soon(drop)
            t0 = trio.current_time()
            assert await actor.link_connected() is connected
            waited = trio.current_time() - t0
        assert waited == pytest.approx(drops_after_s or browser.links.DEAD_LINK_S, abs=0.1)
        link.since = 200.0  # a new link (the relaunched browser's): used at once
        link.connected = True
        t0 = trio.current_time()
        assert await actor.link_connected() and trio.current_time() == t0
