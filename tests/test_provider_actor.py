"""The provider actor in a small tree with fake browser and session-store actors, on an autojump clock: the browser
actor's "waiting for the extension" progress reaches the requester as an AskProgress, and the ask's deadline bounds
the browser wait too (a typed error and a history line within `timeout_s`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import attrs
import pytest
import trio
import trio.testing

from actors import provider
from actors.protocol.browser import BrowserPhase, BrowserProgress, BrowserRequest, EnsureBrowser
from actors.protocol.provider import CHATGPT, Ask, AskPhase, AskProgress
from actors.protocol.session_store import AppendHistory, GetSession, HistoryRecord, SessionStoreRequest
from actors.provider.actor import transient
from actors.provider.sites import chatgpt
from supervisor.errors import CdpError, ExtensionNotConnected, ResponseTimeout, TabClosed
from supervisor.otp import ActorContext, ActorSystem, Registry, Strategy, SupervisorSpec, child


@attrs.define
class Browser:
    wait_s: float  # how long EnsureBrowser takes
    progress_every_s: float = 1.0


async def fake_browser(ctx: ActorContext[BrowserRequest], *, browser: Browser,
                       task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    async with trio.open_nursery() as nursery:

        async def ensure(env_msg: EnsureBrowser, env: object) -> None:
            assert isinstance(env_msg, EnsureBrowser)
            t0 = trio.current_time()
            while trio.current_time() - t0 < browser.wait_s:  # even past its own timeout_s: a stuck browser actor
                env.progress(BrowserProgress(BrowserPhase.WAITING_FOR_EXTENSION,  # type: ignore[attr-defined]
                                             "Waiting for the ai-bridge extension to connect"))
                await trio.sleep(browser.progress_every_s)
            env.fail(ExtensionNotConnected("the extension did not connect"))  # type: ignore[attr-defined]

        async for env in ctx.messages():
            nursery.start_soon(ensure, env.message, env)
        nursery.cancel_scope.cancel()


async def fake_store(ctx: ActorContext[SessionStoreRequest], *, history: list[HistoryRecord],
                     task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    async for env in ctx.messages():
        msg = env.message
        if isinstance(msg, GetSession):
            env.reply(msg.reply(None))
        elif isinstance(msg, AppendHistory):
            history.append(msg.record)
            env.reply(msg.reply(True))
        else:
            raise AssertionError(f"unexpected {msg!r}")


@contextlib.asynccontextmanager
async def tree(browser: Browser, history: list[HistoryRecord]) -> AsyncIterator[ActorSystem]:
    runtime = ActorSystem(registry=Registry())
    spec = SupervisorSpec("root", (
        child("browser", fake_browser, browser=browser),
        child("session_store", fake_store, history=history),
        child("chatgpt", provider.run, table=chatgpt.TABLE, memory=provider.ProviderMemory()),
    ), strategy=Strategy.ONE_FOR_ONE)
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, spec)
        yield runtime
        sup.shutdown()


async def test_waiting_for_the_extension_is_forwarded_as_progress(autojump_clock: trio.testing.MockClock) -> None:
    history: list[HistoryRecord] = []
    seen: list[AskProgress] = []
    async with tree(Browser(wait_s=3), history) as runtime:
        ask = Ask("What is 1 plus 1?", "proj", timeout_s=60, ask_id="a1")
        with pytest.raises(ExtensionNotConnected):
            await runtime.registry.ref(CHATGPT).call(ask, timeout=ask.call_timeout_s,
                                                     on_progress=lambda p: seen.append(p))  # type: ignore[arg-type]
    phases = [p.phase for p in seen]
    assert phases[0] is AskPhase.CONNECTING
    assert phases.count(AskPhase.WAITING_EXTENSION) == 3  # one per browser progress item
    assert [h.status for h in history] == ["failed"] and "extension_not_connected" in (history[0].error or "")


async def test_the_deadline_bounds_the_browser_wait_too(autojump_clock: trio.testing.MockClock) -> None:
    history: list[HistoryRecord] = []
    async with tree(Browser(wait_s=1000), history) as runtime:
        ask = Ask("What is 2 plus 2?", "proj", timeout_s=12, ask_id="a2")
        t0 = trio.current_time()
        with pytest.raises(ResponseTimeout, match="deadline came while connecting") as info:
            await runtime.registry.ref(CHATGPT).call(ask, timeout=ask.call_timeout_s)
        took = trio.current_time() - t0
    assert took == pytest.approx(12, abs=0.01)  # timeout_s bounds the whole call, the browser wait included
    assert "the question was not sent" in info.value.message
    assert len(history) == 1 and history[0].status == "failed"


@pytest.mark.parametrize("exc, retried", [
    (CdpError("cdp.send failed: Debugger is not attached to the tab with id: 12."), True),
    (CdpError("cdp.send failed: Target closed"), True),
    (CdpError("cdp.send failed: No tab with given id 5."), True),
    (CdpError("Inspected target navigated or closed"), True),
    (TabClosed("the tab was closed"), True),
    (CdpError("cdp.send failed: Cannot find default execution context"), False),
    (CdpError("Runtime.evaluate: Uncaught SyntaxError"), False),
    (ExtensionNotConnected("the extension did not connect"), False),
])
def test_a_transient_detach_before_sending_is_retried_on_a_fresh_lease(exc: Exception, retried: bool) -> None:
    """Issue 19.6: a debugger that went away under us (the tab replaced, closed, detached) is re-leased once before the
    question is sent, never surfaced as cdp_error; other CDP failures are real errors."""
    assert transient(exc) is retried
