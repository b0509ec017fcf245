"""Supervisor semantics, each test reading like its OTP spec. Time runs on an autojump MockClock."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from supervisor.errors import ActorCrashed, ActorDown, BridgeError, RequestTimeout, SupervisorEscalation
from supervisor.runtime import ActorContext
from supervisor.supervision import ChildState, Restart, Runtime, Strategy, Supervisor, SupervisorSpec, child
from supervisor.testing import inject


@attrs.frozen
class Echo:
    value: Any


@attrs.frozen
class Crash:
    pass


@attrs.frozen
class Fail:
    pass


class Journal:
    """Records lifecycle events of fake actors so tests can assert order."""

    def __init__(self) -> None:
        self.events: list[str] = []


async def echo_actor(ctx: ActorContext, *, journal: Journal, hang_on_stop: bool = False,
                     task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    journal.events.append(f"start {ctx.name}")
    task_status.started()
    try:
        async for env in ctx.messages():
            msg = env.message

            async def handle(env: Any, msg: Any = msg) -> Any:
                if isinstance(msg, Crash):
                    raise RuntimeError("boom")
                if isinstance(msg, Fail):
                    raise BridgeError("typed failure")
                return (msg.value, env.attempt)

            await ctx.handle(env, handle)
        if hang_on_stop:
            await trio.sleep_forever()
    finally:
        journal.events.append(f"stop {ctx.name}")


async def failing_start(ctx: ActorContext, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    raise RuntimeError("cannot start")


async def quits(ctx: ActorContext, *, journal: Journal, error: bool,
                task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    journal.events.append(f"start {ctx.name}")
    task_status.started()
    await trio.sleep(1)
    if error:
        raise RuntimeError("abnormal")


@contextlib.asynccontextmanager
async def running(spec: SupervisorSpec) -> AsyncIterator[tuple[Runtime, Supervisor]]:
    """A live tree for the test body; shut down gracefully at the end."""
    runtime = Runtime()
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, spec)
        yield runtime, sup
        sup.shutdown()


def three(journal: Journal, strategy: Strategy, **kw: Any) -> SupervisorSpec:
    return SupervisorSpec(
        "root",
        tuple(child(n, echo_actor, journal=journal) for n in ("a", "b", "c")),
        strategy=strategy,
        **kw,
    )


async def crash(runtime: Runtime, name: str) -> None:
    """Crash `name` once while it handles a request; the request survives through re-delivery."""
    inject(runtime.registry, name, "crash")
    await runtime.registry.ref(name).call(Echo(0))


async def test_start_in_order_stop_in_reverse() -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE)) as (_runtime, sup):
        assert [c.state for c in sup.children] == [ChildState.RUNNING] * 3
    assert journal.events == ["start a", "start b", "start c", "stop c", "stop b", "stop a"]


async def test_failed_start_fails_loudly_at_once() -> None:
    runtime = Runtime()
    spec = SupervisorSpec("root", (child("bad", failing_start),))
    with pytest.raises(RuntimeError, match="cannot start"):
        await runtime.run(spec)


async def test_one_for_one_restarts_only_the_failed_child(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE)) as (runtime, sup):
        journal.events.clear()
        # Crash with a request that is *not* re-deliverable forever: the fault kit crashes once on receive.
        inject(runtime.registry, "b", "crash")
        assert await runtime.registry.ref("b").call(Echo(1)) == (1, 2)
        assert journal.events == ["stop b", "start b"]
        assert sup.child("b").restarts == 1 and sup.child("a").restarts == 0


async def test_one_for_all_restarts_everyone_in_order(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ALL)) as (runtime, _sup):
        journal.events.clear()
        inject(runtime.registry, "b", "crash")
        assert await runtime.registry.ref("b").call(Echo("x")) == ("x", 2)
        await trio.testing.wait_all_tasks_blocked()  # the restart finishes after b already answered
        # b died; the others are stopped in reverse order, then all start again in order.
        assert journal.events == ["stop b", "stop c", "stop a", "start a", "start b", "start c"]


async def test_rest_for_one_restarts_the_failed_child_and_those_after_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.REST_FOR_ONE)) as (runtime, sup):
        journal.events.clear()
        inject(runtime.registry, "b", "crash")
        await runtime.registry.ref("b").call(Echo(0))
        await trio.testing.wait_all_tasks_blocked()
        assert journal.events == ["stop b", "stop c", "start b", "start c"]
        assert sup.child("a").restarts == 0


async def test_intensity_exceeded_stops_children_and_escalates(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    runtime = Runtime()
    spec = three(journal, Strategy.ONE_FOR_ONE, max_restarts=2, period=10)
    with pytest.RaisesGroup(pytest.RaisesExc(SupervisorEscalation, match="3 restarts within 10s")):
        async with trio.open_nursery() as nursery:
            await nursery.start(runtime.run, spec)
            # A request that crashes its actor every time: re-delivered until the supervisor gives up.
            with pytest.raises(ActorCrashed, match="stopped while handling Crash"):
                await runtime.registry.ref("a").call(Crash())
            await trio.sleep_forever()
    # Everything was stopped, in reverse order, before the escalation left the supervisor.
    assert journal.events[-2:] == ["stop c", "stop b"]  # the survivors, in reverse start order
    with pytest.raises(ActorDown):
        await runtime.registry.ref("b").call(Echo(1))


async def test_restarts_spread_over_time_stay_within_intensity(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE, max_restarts=1, period=5)) as (runtime, sup):
        for _ in range(4):
            await crash(runtime, "a")
            await trio.sleep(6)  # outside the period: the window forgets the old restart
        assert sup.child("a").restarts == 4


async def test_escalation_reaches_the_parent_supervisor(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    runtime = Runtime()
    inner = SupervisorSpec("inner", (child("x", echo_actor, journal=journal),), max_restarts=0, period=5)
    outer = SupervisorSpec("outer", (child("y", echo_actor, journal=journal), inner.as_child()), max_restarts=3)
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, outer)
        inject(runtime.registry, "x", "crash")
        with pytest.raises(ActorCrashed):  # inner gives up at once and escalates; outer restarts inner
            await runtime.registry.ref("x").call(Echo(0))
        await trio.testing.wait_all_tasks_blocked()
        assert sup.child("inner").restarts == 1
        assert "SupervisorEscalation" in (sup.child("inner").last_error or "")
        assert await runtime.registry.ref("x").call(Echo(5)) == (5, 1)
        assert sup.child("y").restarts == 0
        sup.shutdown()


@pytest.mark.parametrize(
    ("restart", "error", "restarted"),
    [
        (Restart.PERMANENT, False, True),
        (Restart.PERMANENT, True, True),
        (Restart.TRANSIENT, False, False),
        (Restart.TRANSIENT, True, True),
        (Restart.TEMPORARY, True, False),
    ],
)
async def test_restart_types(autojump_clock: trio.testing.MockClock, restart: Restart, error: bool,
                             restarted: bool) -> None:
    journal = Journal()
    runtime = Runtime()
    spec = SupervisorSpec("root", (child("q", quits, journal=journal, error=error, restart=restart),),
                          max_restarts=100, period=1)
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, spec)
        await trio.sleep(1.5)
        assert (journal.events.count("start q") == 2) is restarted
        if not restarted:
            assert sup.child("q").state is ChildState.STOPPED
        sup.shutdown()


async def test_hung_child_is_cancelled_at_its_shutdown_deadline(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    runtime = Runtime()
    spec = SupervisorSpec("root", (child("h", echo_actor, journal=journal, hang_on_stop=True, shutdown=2.5),))
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.run, spec)
        t0 = trio.current_time()
        runtime.root.shutdown()  # type: ignore[union-attr]
    assert trio.current_time() - t0 == pytest.approx(2.5)
    assert journal.events[-1] == "stop h"


async def test_request_in_flight_during_crash_is_redelivered_exactly_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    journal = Journal()
    runtime = Runtime()
    seen: list[int] = []

    async def counting(ctx: ActorContext, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        async for env in ctx.messages():
            seen.append(env.attempt)
            if env.attempt == 1:
                raise RuntimeError("crash while handling")
            env.reply("done")
            ctx.inbox.done(env)

    spec = SupervisorSpec("root", (child("w", counting), child("other", echo_actor, journal=journal)))
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, spec)
        assert await runtime.registry.ref("w").call(Echo(1)) == "done"
        await trio.sleep(1)
        assert seen == [1, 2]  # handled twice in all: the original and exactly one redelivery
        sup.shutdown()


async def test_hang_fault_then_request_deadline_is_a_typed_error(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE)) as (runtime, _sup):
        inject(runtime.registry, "a", "hang")
        with pytest.raises(RequestTimeout, match="a did not answer Echo within 3s"):
            await runtime.registry.ref("a").call(Echo(1), timeout=3)
        tree = runtime.tree()
        a = tree["children"][0]
        assert a["current"][0]["message"] == "Echo"


async def test_slow_fault_delays_but_answers(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE)) as (runtime, _sup):
        inject(runtime.registry, "c", "slow", delay=7)
        t0 = trio.current_time()
        assert await runtime.registry.ref("c").call(Echo(2)) == (2, 1)
        assert trio.current_time() - t0 == pytest.approx(7)


async def test_typed_errors_do_not_crash_the_actor(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE)) as (runtime, sup):
        with pytest.raises(BridgeError, match="typed failure"):
            await runtime.registry.ref("a").call(Fail())
        assert sup.child("a").restarts == 0


async def test_stopped_actor_fails_fast(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    runtime = Runtime()
    spec = SupervisorSpec("root", (child("q", quits, journal=journal, error=False, restart=Restart.TEMPORARY),))
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, spec)
        await trio.sleep(2)
        with pytest.raises(ActorDown, match="'q' is stopped"):
            await runtime.registry.ref("q").call(Echo(1))
        sup.shutdown()


async def test_restart_backoff_delays_the_restart(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE, backoff=0.5, max_restarts=10)) as (runtime, _sup):
        t0 = trio.current_time()
        inject(runtime.registry, "a", "crash", times=2)
        await runtime.registry.ref("a").call(Echo(1))
        assert trio.current_time() - t0 == pytest.approx(0.5 + 1.0)  # doubles for the second consecutive crash


async def test_operator_restart_follows_the_strategy_and_keeps_the_intensity(
    autojump_clock: trio.testing.MockClock,
) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.REST_FOR_ONE, max_restarts=0, period=10)) as (runtime, sup):
        journal.events.clear()
        info = await runtime.restart("b")
        # Graceful stop of b (then c, after it), start again in order; a is untouched.
        assert journal.events == ["stop b", "stop c", "start b", "start c"]
        assert info["state"] == "running" and info["restarts"] == 1 and info["lastError"] == "restarted on request"
        # max_restarts=0: an operator restart counted as a crash would have escalated; the tree still serves.
        assert await runtime.registry.ref("c").call(Echo(3)) == (3, 1)
        assert sup.child("a").restarts == 0
        with pytest.raises(KeyError, match="nope"):
            await runtime.restart("nope")


async def test_operator_restart_redelivers_the_request_in_hand(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE)) as (runtime, _sup):
        inject(runtime.registry, "a", "hang")  # a takes the request, then hangs holding it
        async with trio.open_nursery() as nursery:
            got: list[Any] = []

            async def ask() -> None:
                got.append(await runtime.registry.ref("a").call(Echo("kept")))

            nursery.start_soon(ask)
            await trio.testing.wait_all_tasks_blocked()
            await runtime.restart("a")  # the hung actor is cancelled at its shutdown deadline, then restarted
        assert got == [("kept", 2)]
