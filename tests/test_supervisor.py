"""Supervisor semantics, each test reading like its OTP spec. Time runs on an autojump MockClock."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from supervisor.errors import (
    ActorCrashed,
    ActorDown,
    BridgeError,
    InternalError,
    RequestTimeout,
    StuckError,
    SupervisorEscalation,
)
from supervisor.otp import (
    ActorContext,
    ActorSystem,
    Address,
    AutoShutdown,
    ChildState,
    OnIntensity,
    Registry,
    Reply,
    Request,
    Restart,
    Retry,
    Strategy,
    Supervisor,
    SupervisorSpec,
    child,
)
from supervisor.otp.faults import FaultKind, FaultsDisabled, inject


@attrs.frozen
class Echo(Request[tuple[Any, int]]):
    value: Any


@attrs.frozen
class Crash(Request[None]):
    pass


@attrs.frozen
class Fail(Request[None]):
    pass


@attrs.frozen
class Stuck(Request[str]):
    """Asks for a deliberate restart (stuck-state retry) until the third attempt."""

    max_attempts = 3


EchoRequest = Echo | Crash | Fail | Stuck


def at(name: str) -> Address[EchoRequest]:
    return Address(name, EchoRequest)


def Runtime() -> ActorSystem:
    return ActorSystem(registry=Registry(faults_allowed=True))


class Journal:
    """Records lifecycle events of fake actors so tests can assert order."""

    def __init__(self) -> None:
        self.events: list[str] = []


async def echo_actor(ctx: ActorContext[EchoRequest], *, journal: Journal, hang_on_stop: bool = False,
                     task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    journal.events.append(f"start {ctx.name}")
    task_status.started()
    try:
        async for env in ctx.messages():

            async def handle(msg: EchoRequest, attempt: int = env.attempt) -> Reply[object]:
                match msg:
                    case Crash():
                        raise RuntimeError("boom")
                    case Fail():
                        raise BridgeError("typed failure")
                    case Stuck():
                        if attempt < 3:
                            raise Retry("stuck", failure=StuckError("gave up"))
                        return msg.reply(f"answered on attempt {attempt}")
                    case Echo():
                        return msg.reply((msg.value, attempt))

            await ctx.answer(env, handle)
        if hang_on_stop:
            await trio.sleep_forever()
    finally:
        journal.events.append(f"stop {ctx.name}")


async def failing_start(ctx: ActorContext[EchoRequest], *,
                        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    raise RuntimeError("cannot start")


async def quits(ctx: ActorContext[EchoRequest], *, journal: Journal, error: bool,
                task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    journal.events.append(f"start {ctx.name}")
    task_status.started()
    await trio.sleep(1)
    if error:
        raise RuntimeError("abnormal")


@contextlib.asynccontextmanager
async def running(spec: SupervisorSpec) -> AsyncIterator[tuple[ActorSystem, Supervisor]]:
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


async def crash(runtime: ActorSystem, name: str) -> None:
    """Crash `name` once while it handles a request; the request survives through re-delivery."""
    inject(runtime.registry, name, FaultKind.CRASH)
    await runtime.registry.ref(at(name)).call(Echo(0))


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
        inject(runtime.registry, "b", FaultKind.CRASH)
        assert await runtime.registry.ref(at("b")).call(Echo(1)) == (1, 2)
        assert journal.events == ["stop b", "start b"]
        assert sup.child("b").restarts == 1 and sup.child("a").restarts == 0


async def test_one_for_all_restarts_everyone_in_order(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ALL)) as (runtime, _sup):
        journal.events.clear()
        inject(runtime.registry, "b", FaultKind.CRASH)
        assert await runtime.registry.ref(at("b")).call(Echo("x")) == ("x", 2)
        await trio.testing.wait_all_tasks_blocked()  # the restart finishes after b already answered
        # b died; the others are stopped in reverse order, then all start again in order.
        assert journal.events == ["stop b", "stop c", "stop a", "start a", "start b", "start c"]


async def test_rest_for_one_restarts_the_failed_child_and_those_after_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.REST_FOR_ONE)) as (runtime, sup):
        journal.events.clear()
        inject(runtime.registry, "b", FaultKind.CRASH)
        await runtime.registry.ref(at("b")).call(Echo(0))
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
            # A request that crashes its actor every time is re-delivered once, then dropped with a typed error
            # naming the actor: two restarts, still within the limit.
            with pytest.raises(InternalError, match="actor 'a' crashed twice while handling Crash"):
                await runtime.registry.ref(at("a")).call(Crash())
            # One more crash is over the limit: the supervisor gives up.
            with pytest.raises(ActorCrashed, match="stopped while handling Crash"):
                await runtime.registry.ref(at("a")).call(Crash())
            await trio.sleep_forever()
    # Everything was stopped, in reverse order, before the escalation left the supervisor.
    assert journal.events[-2:] == ["stop c", "stop b"]  # the survivors, in reverse start order
    with pytest.raises(ActorDown):
        await runtime.registry.ref(at("b")).call(Echo(1))


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
        inject(runtime.registry, "x", FaultKind.CRASH)
        with pytest.raises(ActorCrashed):  # inner gives up at once and escalates; outer restarts inner
            await runtime.registry.ref(at("x")).call(Echo(0))
        await trio.testing.wait_all_tasks_blocked()
        assert sup.child("inner").restarts == 1
        assert "SupervisorEscalation" in (sup.child("inner").last_error or "")
        assert await runtime.registry.ref(at("x")).call(Echo(5)) == (5, 1)
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
        assert runtime.root is not None
        runtime.root.shutdown()
    assert trio.current_time() - t0 == pytest.approx(2.5)
    assert journal.events[-1] == "stop h"


async def test_request_in_flight_during_crash_is_redelivered_exactly_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    journal = Journal()
    runtime = Runtime()
    seen: list[int] = []

    async def counting(ctx: ActorContext[EchoRequest], *,
                       task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        async for env in ctx.messages():
            seen.append(env.attempt)
            if env.attempt == 1:
                raise RuntimeError("crash while handling")
            msg = env.message
            assert isinstance(msg, Echo)
            env.reply(msg.reply(("done", env.attempt)))

    spec = SupervisorSpec("root", (child("w", counting), child("other", echo_actor, journal=journal)))
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, spec)
        assert await runtime.registry.ref(at("w")).call(Echo(1)) == ("done", 2)
        await trio.sleep(1)
        assert seen == [1, 2]  # handled twice in all: the original and exactly one redelivery
        sup.shutdown()


async def test_hang_fault_then_request_deadline_is_a_typed_error(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE)) as (runtime, _sup):
        inject(runtime.registry, "a", FaultKind.HANG)
        with pytest.raises(RequestTimeout, match="a did not answer Echo within 3s"):
            await runtime.registry.ref(at("a")).call(Echo(1), timeout=3)
        tree = runtime.tree()
        assert tree is not None
        a = tree.children[0]
        assert a.current[0].message == "Echo" and a.current[0].attempt == 1


async def test_slow_fault_delays_but_answers(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE)) as (runtime, _sup):
        inject(runtime.registry, "c", FaultKind.SLOW, delay=7)
        t0 = trio.current_time()
        assert await runtime.registry.ref(at("c")).call(Echo(2)) == (2, 1)
        assert trio.current_time() - t0 == pytest.approx(7)


async def test_typed_errors_do_not_crash_the_actor(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE)) as (runtime, sup):
        with pytest.raises(BridgeError, match="typed failure"):
            await runtime.registry.ref(at("a")).call(Fail())
        assert sup.child("a").restarts == 0


async def test_stopped_actor_fails_fast(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    runtime = Runtime()
    spec = SupervisorSpec("root", (child("q", quits, journal=journal, error=False, restart=Restart.TEMPORARY),))
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, spec)
        await trio.sleep(2)
        with pytest.raises(ActorDown, match="'q' is stopped"):
            await runtime.registry.ref(at("q")).call(Echo(1))
        sup.shutdown()


async def test_restart_backoff_delays_the_restart(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE, backoff=0.5, max_restarts=10)) as (runtime, _sup):
        t0 = trio.current_time()
        for n in (1, 2):  # two crashes in a row, each on its own request (each re-delivered once)
            inject(runtime.registry, "a", FaultKind.CRASH)
            assert await runtime.registry.ref(at("a")).call(Echo(n)) == (n, 2)
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
        assert info.state is ChildState.RUNNING and info.restarts == 1 and info.last_error == "restarted on request"
        # max_restarts=0: an operator restart counted as a crash would have escalated; the tree still serves.
        assert await runtime.registry.ref(at("c")).call(Echo(3)) == (3, 1)
        assert sup.child("a").restarts == 0
        with pytest.raises(KeyError, match="nope"):
            await runtime.restart("nope")


async def test_operator_restart_redelivers_the_request_in_hand(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE)) as (runtime, _sup):
        inject(runtime.registry, "a", FaultKind.HANG)  # a takes the request, then hangs holding it
        async with trio.open_nursery() as nursery:
            got: list[Any] = []

            async def ask() -> None:
                got.append(await runtime.registry.ref(at("a")).call(Echo("kept")))

            nursery.start_soon(ask)
            await trio.testing.wait_all_tasks_blocked()
            await runtime.restart("a")  # the hung actor is cancelled at its shutdown deadline, then restarted
        assert got == [("kept", 2)]


# -- poison messages, failed restarts, temporary and significant children, containment ------------------------------


async def test_a_poison_message_is_redelivered_once_then_dropped_with_a_typed_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE, max_restarts=10)) as (runtime, sup):
        with pytest.raises(InternalError, match="actor 'a' crashed twice while handling Crash: RuntimeError: boom"):
            await runtime.registry.ref(at("a")).call(Crash())
        assert sup.child("a").restarts == 2  # the first try and the one redelivery, then no more
        assert await runtime.registry.ref(at("a")).call(Echo("still serving")) == ("still serving", 1)
        assert sup.child("a").state is ChildState.RUNNING


async def test_a_deliberate_retry_is_redelivered_up_to_its_max_attempts(autojump_clock: trio.testing.MockClock,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    journal = Journal()
    async with running(three(journal, Strategy.ONE_FOR_ONE, max_restarts=10)) as (runtime, _sup):
        assert await runtime.registry.ref(at("b")).call(Stuck()) == "answered on attempt 3"
    # An expected recovery, not a crash: nothing at warning, no traceback (issue 33: a stuck-page retry printed
    # "providers/chatgpt crashed" and a 20-line traceback at the CLI's default level). The actor that asks for the
    # retry says so itself, in one line.
    loud = [f"{r.levelname} {r.getMessage()}" for r in caplog.records if r.levelno >= logging.INFO or r.exc_info]
    assert loud == [], loud


async def test_a_failed_first_start_is_left_to_the_caller_to_report(autojump_clock: trio.testing.MockClock,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """A tree that cannot start (a port taken) raises to whoever started it, which prints one line: no supervisor
    on the way up logs it as an error too (issue 33: two ERROR lines around the command's own line)."""
    caplog.set_level(logging.INFO)
    journal = Journal()
    spec = SupervisorSpec("root", (child("a", echo_actor, journal=journal),
                                   SupervisorSpec("inner", (child("b", FlakyStart(journal, fail_on={1})),)).as_child()))
    with pytest.RaisesGroup(pytest.RaisesExc(RuntimeError, match="start 1 of b failed"), allow_unwrapped=True,
                            flatten_subgroups=True):
        async with running(spec):
            pass
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert "inner/b failed to start: RuntimeError: start 1 of b failed" in caplog.text


class FlakyStart:
    """A start function that fails on the starts listed in `fail_on` (1-based)."""

    def __init__(self, journal: Journal, fail_on: set[int]) -> None:
        self.journal = journal
        self.fail_on = fail_on
        self.starts = 0

    async def __call__(self, ctx: ActorContext[EchoRequest], *,
                       task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self.starts += 1
        if self.starts in self.fail_on:
            self.journal.events.append(f"failed start {ctx.name}")
            raise RuntimeError(f"start {self.starts} of {ctx.name} failed")
        await echo_actor(ctx, journal=self.journal, task_status=task_status)


@pytest.mark.parametrize("strategy", [Strategy.ONE_FOR_ALL, Strategy.REST_FOR_ONE])
async def test_a_failed_start_in_the_middle_of_a_group_is_retried_not_stranded(
    autojump_clock: trio.testing.MockClock, strategy: Strategy,
) -> None:
    journal = Journal()
    flaky = FlakyStart(journal, fail_on={2})  # b's first restart fails, its second works
    spec = SupervisorSpec("root", (child("a", echo_actor, journal=journal), child("b", flaky),
                                   child("c", echo_actor, journal=journal)), strategy=strategy, max_restarts=5)
    async with running(spec) as (runtime, sup):
        journal.events.clear()
        await crash(runtime, "a" if strategy is Strategy.ONE_FOR_ALL else "b")
        await trio.testing.wait_all_tasks_blocked()
        assert {c.spec.id: c.state for c in sup.children} == {n: ChildState.RUNNING for n in "abc"}
        assert "failed start b" in journal.events
        assert journal.events[-1] == "start c"
        assert await runtime.registry.ref(at("c")).call(Echo(1)) == (1, 1)


async def test_a_start_that_keeps_failing_escalates_instead_of_stranding_siblings(
    autojump_clock: trio.testing.MockClock,
) -> None:
    journal = Journal()
    runtime = Runtime()
    flaky = FlakyStart(journal, fail_on=set(range(2, 100)))
    spec = SupervisorSpec("root", (child("a", echo_actor, journal=journal), child("b", flaky),
                                   child("c", echo_actor, journal=journal)), strategy=Strategy.ONE_FOR_ALL,
                          max_restarts=3, period=10)
    with pytest.RaisesGroup(pytest.RaisesExc(SupervisorEscalation, match="last failure in 'b'")):
        async with trio.open_nursery() as nursery:
            sup = await nursery.start(runtime.run, spec)
            inject(runtime.registry, "a", FaultKind.CRASH)
            # a restarts first and answers the redelivered request; then b fails to start, again and again
            assert await runtime.registry.ref(at("a")).call(Echo(0)) == (0, 2)
            await trio.sleep_forever()
    assert all(c.state is ChildState.STOPPED for c in sup.children)  # nobody left 'restarting'
    assert flaky.starts == 4  # the first start, then one try for each of the 3 restarts the limit allows


async def test_a_temporary_child_in_a_group_is_stopped_for_good_by_a_siblings_crash(
    autojump_clock: trio.testing.MockClock,
) -> None:
    journal = Journal()
    spec = SupervisorSpec("root", (child("a", echo_actor, journal=journal),
                                   child("t", echo_actor, journal=journal, restart=Restart.TEMPORARY),
                                   child("c", echo_actor, journal=journal)), strategy=Strategy.ONE_FOR_ALL)
    async with running(spec) as (runtime, sup):
        journal.events.clear()
        await crash(runtime, "a")
        await trio.testing.wait_all_tasks_blocked()
        assert journal.events == ["stop a", "stop c", "stop t", "start a", "start c"]
        assert sup.child("t").state is ChildState.STOPPED
        with pytest.raises(ActorDown):
            await runtime.registry.ref(at("t")).call(Echo(1))


async def test_a_significant_child_ending_shuts_the_supervisor_down(autojump_clock: trio.testing.MockClock) -> None:
    journal = Journal()
    runtime = Runtime()
    spec = SupervisorSpec("root", (child("a", echo_actor, journal=journal),
                                   child("front", quits, journal=journal, error=False, restart=Restart.TEMPORARY,
                                         significant=True)), auto_shutdown=AutoShutdown.ANY_SIGNIFICANT)
    t0 = trio.current_time()
    await runtime.run(spec)  # returns by itself once `front` quits (after 1 s)
    assert trio.current_time() - t0 == pytest.approx(1)
    assert journal.events == ["start a", "start front", "stop a"]
    with pytest.raises(ValueError, match="significant child must be transient or temporary"):
        child("x", quits, journal=journal, error=False, significant=True)


async def test_a_contained_branch_stays_down_then_revives_while_the_rest_serves(
    autojump_clock: trio.testing.MockClock,
) -> None:
    journal = Journal()
    branch = SupervisorSpec("branch", (child("x", echo_actor, journal=journal),), max_restarts=1, period=60,
                            on_intensity=OnIntensity.CONTAIN, revive_after=30)
    spec = SupervisorSpec("root", (child("y", echo_actor, journal=journal), branch.as_child()), max_restarts=0)
    async with running(spec) as (runtime, sup):
        with pytest.raises(ActorCrashed):  # the poison message's second crash is over the branch's limit
            await runtime.registry.ref(at("x")).call(Crash())
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(ActorDown, match=r"gave up after repeated crashes.*retrying in 30s"):
            await runtime.registry.ref(at("x")).call(Echo(1))
        # The rest of the tree never noticed (root allows no restart at all, and none happened).
        assert sup.child("branch").restarts == 0 and sup.child("branch").state is ChildState.RUNNING
        assert await runtime.registry.ref(at("y")).call(Echo(2)) == (2, 1)
        await trio.sleep(31)
        assert await runtime.registry.ref(at("x")).call(Echo(3)) == (3, 1)


async def test_faults_cannot_be_armed_or_fire_without_permission() -> None:
    journal = Journal()
    runtime = ActorSystem()  # a system started without --allow-faults
    spec = SupervisorSpec("root", (child("a", echo_actor, journal=journal),))
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, spec)
        with pytest.raises(FaultsDisabled):
            inject(runtime.registry, "a", FaultKind.CRASH)
        runtime.registry.mailbox("a").faults.append(  # armed by reaching around the kit: it still never fires
            __import__("supervisor.otp.messaging", fromlist=["Fault"]).Fault(FaultKind.CRASH))
        assert await runtime.registry.ref(at("a")).call(Echo(1)) == (1, 1)
        assert sup.child("a").restarts == 0
        sup.shutdown()


async def test_a_reply_must_answer_its_own_request() -> None:
    journal = Journal()
    runtime = Runtime()

    async def confused(ctx: ActorContext[EchoRequest], *,
                       task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        async for env in ctx.messages():
            with pytest.raises(RuntimeError, match="a reply to Fail given to Echo"):
                env.reply(Fail().reply(None))
            with pytest.raises(TypeError, match="does not accept"):
                await ctx.ref(Address("a", Fail)).call(Echo(1))
            assert isinstance(env.message, Echo)
            env.reply(env.message.reply((0, 0)))

    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, SupervisorSpec("root", (child("a", confused),
                                                                        child("b", echo_actor, journal=journal))))
        assert await runtime.registry.ref(at("a")).call(Echo(1)) == (0, 0)
        sup.shutdown()
