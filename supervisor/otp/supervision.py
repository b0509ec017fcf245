"""OTP-style supervision on trio.

A `Supervisor` starts its children in order (each counts as started only once it calls `task_status.started()`),
watches them, and when one ends applies its restart type (permanent / transient / temporary) and the supervisor's
strategy (one_for_one / one_for_all / rest_for_one). Restarts are counted per supervisor within a sliding period; a
child that fails to start again counts as one more restart, and the group it belongs to is tried again. Exceeding the
intensity stops every child (in reverse order) and then, as OTP does, escalates (`SupervisorEscalation` to the
parent, which sees an ordinary child failure) — or, with ``on_intensity=CONTAIN``, keeps the failure inside: the
branch stays down (callers get `ActorDown` naming the last error) and is started afresh after ``revive_after``.

A child may be *significant* (OTP 24): with ``auto_shutdown=ANY_SIGNIFICANT`` the supervisor shuts down gracefully
when such a child ends for good — how the MCP front's end (stdin closed) ends the process.

Stopping a child follows OTP's shutdown protocol: ask (``ctx.stop_requested``), wait up to its shutdown timeout,
then cancel. Knows no actor: the tree is built by the application (`supervisor.app`).
"""

from __future__ import annotations

import collections
import enum
import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable

import attrs
import trio

from ..errors import SupervisorEscalation
from .messaging import ActorContext, Mailbox, Message, Registry, Retry, _describe, _leaf, receive_unless

log = logging.getLogger("ai_bridge.supervisor")


class Restart(enum.Enum):
    PERMANENT = "permanent"  # always restarted
    TRANSIENT = "transient"  # restarted only after an abnormal exit (an exception)
    TEMPORARY = "temporary"  # never restarted


class Strategy(enum.Enum):
    ONE_FOR_ONE = "one_for_one"
    ONE_FOR_ALL = "one_for_all"
    REST_FOR_ONE = "rest_for_one"


class AutoShutdown(enum.Enum):
    NEVER = "never"
    ANY_SIGNIFICANT = "any_significant"  # a significant child ending for good shuts the supervisor down
    ALL_SIGNIFICANT = "all_significant"


class OnIntensity(enum.Enum):
    ESCALATE = "escalate"  # OTP: stop the children and fail to the parent
    CONTAIN = "contain"  # stop the children, stay down for `revive_after`, then start afresh


class ChildState(enum.Enum):
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    RESTARTING = "restarting"
    STOPPED = "stopped"
    DOWN = "down"  # a contained branch that gave up, waiting to be revived


# ``async def run(ctx, *, task_status)``, extra keyword arguments bound by `child`. The one place the inbox type is
# erased: the supervisor hands each actor a context for its own closed message set without knowing that set.
StartFn = Callable[..., Awaitable[None]]


@attrs.frozen
class ChildSpec:
    """How to run one child. `start` is ``async def run(ctx, *, task_status)`` (extra kwargs via `child`)."""

    id: str
    start: StartFn | None
    restart: Restart = Restart.PERMANENT
    shutdown: float = 5.0  # seconds between the stop request and cancellation
    mailbox_size: int = 64
    significant: bool = False  # see AutoShutdown; only transient or temporary children may be significant
    # A nested supervisor is also a child; it gets no mailbox of its own.
    supervisor: SupervisorSpec | None = None

    def __attrs_post_init__(self) -> None:
        if self.significant and self.restart is Restart.PERMANENT:
            raise ValueError(f"{self.id}: a significant child must be transient or temporary (OTP)")
        if (self.start is None) == (self.supervisor is None):
            raise ValueError(f"{self.id}: give either a start function or a nested supervisor")


@attrs.frozen
class SupervisorSpec:
    id: str
    children: tuple[ChildSpec, ...]
    strategy: Strategy = Strategy.ONE_FOR_ONE
    max_restarts: int = 3
    period: float = 5.0
    backoff: float = 0.0  # first restart delay; doubles per consecutive restart of the same child, capped below
    backoff_max: float = 5.0
    auto_shutdown: AutoShutdown = AutoShutdown.NEVER
    on_intensity: OnIntensity = OnIntensity.ESCALATE
    revive_after: float = 30.0  # CONTAIN: how long the branch stays down before it is started afresh

    def as_child(self, *, restart: Restart = Restart.PERMANENT, shutdown: float = 10.0) -> ChildSpec:
        return ChildSpec(id=self.id, start=None, restart=restart, shutdown=shutdown, supervisor=self)


_NORMAL = object()  # exit marker for a child that returned


@attrs.define(eq=False)
class _RestartRequest:
    """Not an exit: an operator asked for a restart (console); handled in the supervision loop."""

    done: trio.Event = attrs.field(factory=trio.Event)


@attrs.frozen
class HeldRequest:
    message: str
    attempt: int
    waiting_s: float


@attrs.frozen
class ChildInfo:
    """One node of the live tree (console `tree()`, `bridge_status`)."""

    id: str
    state: ChildState
    restart: Restart
    restarts: int
    last_error: str | None
    inbox_depth: int | None
    current: tuple[HeldRequest, ...]
    strategy: Strategy | None = None
    children: tuple[ChildInfo, ...] = ()

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "id": self.id, "state": self.state.value, "restart": self.restart.value, "restarts": self.restarts,
            "lastError": self.last_error, "inboxDepth": self.inbox_depth,
            "current": [{"message": h.message, "attempt": h.attempt, "waitingS": h.waiting_s} for h in self.current],
        }
        if self.strategy is not None:
            out["strategy"] = self.strategy.value
            out["children"] = [c.as_json() for c in self.children]
        return out


@attrs.define(eq=False)
class Child:
    spec: ChildSpec
    mailbox: Mailbox[Message] | None
    state: ChildState = ChildState.STOPPED
    restarts: int = 0
    consecutive: int = 0
    last_error: str | None = None
    scope: trio.CancelScope | None = None
    stop_requested: trio.Event = attrs.field(factory=trio.Event)
    finished: trio.Event = attrs.field(factory=trio.Event)
    nested: Supervisor | None = None
    ctx: ActorContext[Message] | None = None

    def info(self) -> ChildInfo:
        held: tuple[HeldRequest, ...] = ()
        if self.mailbox is not None:
            now = trio.current_time()
            held = tuple(HeldRequest(type(env.message).__name__, env.attempt, round(now - env.enqueued_at, 3))
                         for env in self.mailbox.current())
        nested = self.nested
        return ChildInfo(
            id=self.spec.id, state=self.state, restart=self.spec.restart, restarts=self.restarts,
            last_error=self.last_error, inbox_depth=self.mailbox.depth if self.mailbox is not None else None,
            current=held, strategy=nested.spec.strategy if nested is not None else None,
            children=tuple(c.info() for c in nested.children) if nested is not None else (),
        )

    def mailboxes(self) -> Iterable[Mailbox[Message]]:
        if self.mailbox is not None:
            yield self.mailbox
        if self.nested is not None:
            for c in self.nested.children:
                yield from c.mailboxes()


class Supervisor:
    def __init__(self, spec: SupervisorSpec, registry: Registry) -> None:
        self.spec = spec
        self.registry = registry
        self.children: list[Child] = []
        for cs in spec.children:
            if cs.supervisor is None:
                mailbox: Mailbox[Message] = Mailbox(cs.id, cs.mailbox_size)
                registry.register(mailbox)
                self.children.append(Child(cs, mailbox))
            else:
                # Built once so its children's mailboxes survive restarts of the nested supervisor too.
                self.children.append(Child(cs, None, nested=Supervisor(cs.supervisor, registry)))
        self._restart_times: collections.deque[float] = collections.deque()
        self._exits_send, self._exits_recv = trio.open_memory_channel[tuple[Child, object, bool]](math.inf)
        self._shutdown = trio.Event()
        self._nursery: trio.Nursery | None = None

    # -- public -----------------------------------------------------------------------------------------------------

    def child(self, child_id: str) -> Child:
        for c in self.children:
            if c.spec.id == child_id:
                return c
        raise KeyError(child_id)

    def tree(self) -> ChildInfo:
        return ChildInfo(id=self.spec.id, state=ChildState.RUNNING, restart=Restart.PERMANENT, restarts=0,
                         last_error=None, inbox_depth=None, current=(), strategy=self.spec.strategy,
                         children=tuple(c.info() for c in self.children))

    def find(self, child_id: str) -> tuple[Supervisor, Child] | None:
        """Depth-first search for a child id anywhere below this supervisor: (its supervisor, the child)."""
        for c in self.children:
            if c.spec.id == child_id:
                return self, c
            if c.nested is not None and (found := c.nested.find(child_id)) is not None:
                return found
        return None

    def request_restart(self, child_id: str) -> trio.Event:
        """Restart a running child as its strategy says (rest_for_one takes the ones after it along), stopping it
        gracefully first so requests it holds are re-delivered. Runs in the supervision loop, so it never races a
        crash being handled. Operator restarts do not count against the restart intensity."""
        child = self.child(child_id)
        if child.state is not ChildState.RUNNING:
            raise ValueError(f"{child_id} is {child.state.value}, not running")
        request = _RestartRequest()
        self._exits_send.send_nowait((child, request, False))
        return request.done

    def shutdown(self) -> None:
        """Graceful stop: children are asked to stop in reverse start order, each within its shutdown timeout."""
        self._shutdown.set()

    async def run(self, *, task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED) -> None:
        # A supervisor may itself be restarted by its parent: every run starts with a fresh restart history.
        self._restart_times.clear()
        self._exits_send, self._exits_recv = trio.open_memory_channel[tuple[Child, object, bool]](math.inf)
        self._shutdown = trio.Event()
        failure: BaseException | None = None
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                try:
                    try:
                        for child in self.children:
                            await self._start(child, first=True)
                    except Exception as exc:
                        failure = exc  # re-raised below, outside the nursery, so it is not wrapped in a group
                    else:
                        task_status.started(self)
                        failure = await self._supervise()
                finally:
                    # Shielded but bounded: every child has a shutdown deadline.
                    with trio.CancelScope(shield=True):
                        await self._stop_all(reversed(self.children))
                    nursery.cancel_scope.cancel()
        finally:
            for child in self.children:
                if child.mailbox is not None:
                    child.mailbox.close_down()
        if failure is not None:
            raise failure

    # -- supervision loop ---------------------------------------------------------------------------------------------

    async def _supervise(self) -> SupervisorEscalation | None:
        while True:
            got = await receive_unless(self._exits_recv.receive, self._shutdown)
            if got is None:
                return None
            child, result, expected = got
            if expected:
                continue  # we asked it to stop: not a failure
            if isinstance(result, _RestartRequest):
                if child.state is ChildState.RUNNING:
                    log.warning("%s/%s: restart requested", self.spec.id, child.spec.id)
                    child.last_error = "restarted on request"
                    await self._stop(child, restarting=True)
                    escalation = await self._restart_group(child, None, counted=False)
                    if escalation is not None:
                        return escalation
                result.done.set()
                continue
            abnormal = result is not _NORMAL
            child.last_error = _describe(_as_exc(result)) if abnormal else child.last_error
            restart = child.spec.restart is Restart.PERMANENT or (
                child.spec.restart is Restart.TRANSIENT and abnormal
            )
            if abnormal and isinstance(_leaf(_as_exc(result)), Retry):
                # A deliberate restart (a stuck page: a fresh tab connection, the request again) is an expected
                # recovery: the actor says so in one line at info where it decides it; no crash, no traceback.
                log.debug("%s/%s restarts to retry: %s", self.spec.id, child.spec.id, _leaf(_as_exc(result)))
            elif abnormal:
                log.warning("%s/%s crashed: %s", self.spec.id, child.spec.id, child.last_error,
                            exc_info=result if isinstance(result, BaseException) else None)
            else:
                log.info("%s/%s exited normally", self.spec.id, child.spec.id)
            if not restart:
                child.state = ChildState.STOPPED
                if child.mailbox is not None:
                    child.mailbox.settle_after_exit(restarting=False, error=_as_exc(result))
                    child.mailbox.close_down()
                if child.spec.significant and self._auto_shutdown_due():
                    log.info("%s: significant child %s ended; shutting down", self.spec.id, child.spec.id)
                    return None
                continue
            escalation = await self._restart_group(child, _as_exc(result), counted=True)
            if escalation is not None:
                return escalation

    def _auto_shutdown_due(self) -> bool:
        significant = [c for c in self.children if c.spec.significant]
        if self.spec.auto_shutdown is AutoShutdown.ANY_SIGNIFICANT:
            return True
        if self.spec.auto_shutdown is AutoShutdown.ALL_SIGNIFICANT:
            return all(c.state is ChildState.STOPPED for c in significant)
        return False

    def _count_restart(self, child: Child) -> SupervisorEscalation | None:
        # trio's clock, so MockClock/autojump tests of restart intensity are deterministic.
        now = trio.current_time()
        self._restart_times.append(now)
        while self._restart_times and self._restart_times[0] <= now - self.spec.period:
            self._restart_times.popleft()
        if len(self._restart_times) > self.spec.max_restarts:
            return SupervisorEscalation(
                f"supervisor {self.spec.id!r}: {len(self._restart_times)} restarts within {self.spec.period:g}s "
                f"(limit {self.spec.max_restarts}); last failure in {child.spec.id!r}: {child.last_error}"
            )
        return None

    def _group(self, failed: Child) -> list[Child]:
        idx = self.children.index(failed)
        if self.spec.strategy is Strategy.ONE_FOR_ONE:
            return [failed]
        if self.spec.strategy is Strategy.ONE_FOR_ALL:
            return list(self.children)
        return self.children[idx:]

    async def _restart_group(self, failed: Child, error: BaseException | None, *,
                             counted: bool) -> SupervisorEscalation | None:
        """Apply the strategy to a child that ended. A member that fails to start again is one more failure: it
        counts against the intensity and its group is tried again, until it runs or the limit is reached."""
        while True:
            if counted and (escalation := self._count_restart(failed)) is not None:
                await self._give_up(failed, error)
                if self.spec.on_intensity is OnIntensity.ESCALATE:
                    log.error("%s", escalation)
                    return escalation
                await self._contain(escalation)
                return None
            counted = True
            group = self._group(failed)
            # The failed child's held requests go back to its inbox before anything restarts.
            failed.state = ChildState.RESTARTING
            if failed.mailbox is not None:
                failed.mailbox.settle_after_exit(restarting=True, error=error)
            others = [c for c in group if c is not failed and c.state in (ChildState.RUNNING, ChildState.STARTING)]
            await self._stop_all(reversed(others), restarting=True)
            delay = self._backoff(failed)
            if delay > 0:
                await trio.sleep(delay)
            retry: tuple[Child, BaseException] | None = None
            for child in group:
                if child is not failed and child not in others and child.state is not ChildState.RESTARTING:
                    continue  # already stopped for good (e.g. a temporary child that finished)
                if child.spec.restart is Restart.TEMPORARY and child is not failed:
                    # OTP: a temporary child is not restarted by a sibling's failure; it is gone for good.
                    child.state = ChildState.STOPPED
                    if child.mailbox is not None:
                        child.mailbox.close_down()
                    continue
                child.restarts += 1
                try:
                    await self._start(child)
                except Exception as exc:
                    retry = (child, exc)
                    break
            if retry is None:
                return None
            failed, error = retry
            failed.consecutive += 1
            # Members after it in the group never started: they wait for the next round, not forever.
            for child in group[group.index(failed) + 1:]:
                if child.state is ChildState.STOPPED and child.spec.restart is not Restart.TEMPORARY:
                    child.state = ChildState.RESTARTING

    async def _give_up(self, failed: Child, error: BaseException | None) -> None:
        if failed.mailbox is not None:
            failed.mailbox.settle_after_exit(restarting=False, error=error)
        failed.state = ChildState.STOPPED
        for child in self.children:
            if child.state is ChildState.RESTARTING:
                child.state = ChildState.STOPPED

    async def _contain(self, escalation: SupervisorEscalation) -> None:
        """Intensity reached under CONTAIN: stop everything, stay down (callers fail fast with the reason), then
        start afresh after `revive_after` — unless a shutdown comes first."""
        log.error("%s; staying down for %.0f s", escalation, self.spec.revive_after)
        await self._stop_all(reversed(self.children))
        reason = f" (gave up after repeated crashes: {escalation.message}; retrying in {self.spec.revive_after:g}s)"
        for child in self.children:
            child.state = ChildState.DOWN
            for box in child.mailboxes():
                box.close_down(reason)
        with trio.move_on_after(self.spec.revive_after):
            await self._shutdown.wait()
        if self._shutdown.is_set():
            return
        log.warning("%s: starting afresh after giving up", self.spec.id)
        self._restart_times.clear()
        for child in self.children:
            child.consecutive = 0
            try:
                await self._start(child)
            except Exception as exc:
                self._exits_send.send_nowait((child, exc, False))  # counted like any failed start
                for later in self.children[self.children.index(child) + 1:]:
                    later.state = ChildState.RESTARTING
                return

    def _backoff(self, child: Child) -> float:
        if self.spec.backoff <= 0:
            return 0.0
        delay = min(self.spec.backoff * 2 ** max(child.consecutive - 1, 0), self.spec.backoff_max)
        return float(delay)

    # -- start / stop -----------------------------------------------------------------------------------------------

    async def _start(self, child: Child, *, first: bool = False) -> None:
        """Start `child`; a failure is raised. On the supervisor's own start (`first`) it goes up to whoever started
        the tree, which reports it (one line from a command): logged here only at info. A restart's failure is
        counted like a crash, and this error line is its record."""
        assert self._nursery is not None
        child.state = ChildState.STARTING
        child.stop_requested = trio.Event()
        child.finished = trio.Event()
        for box in child.mailboxes():
            box.reopen()
        try:
            await self._nursery.start(self._run_child, child)
        except Exception as exc:
            child.state = ChildState.STOPPED
            child.last_error = _describe(exc)
            log.log(logging.INFO if first else logging.ERROR, "%s/%s failed to start: %s", self.spec.id,
                    child.spec.id, child.last_error)
            raise
        child.state = ChildState.RUNNING

    async def _run_child(self, child: Child, *, task_status: trio.TaskStatus[None]) -> None:
        started = False

        class _Status:
            def started(self, value: object = None) -> None:
                nonlocal started
                started = True
                task_status.started()

        result: object = _NORMAL
        try:
            with trio.CancelScope() as scope:
                child.scope = scope
                try:
                    if child.nested is not None:
                        nested = child.nested
                        async with trio.open_nursery() as watch:

                            async def relay_stop() -> None:
                                # A nested supervisor is asked to stop like any child: it stops its own children
                                # gracefully, in reverse order, within its shutdown timeout.
                                await child.stop_requested.wait()
                                nested.shutdown()

                            watch.start_soon(relay_stop)
                            await nested.run(task_status=_Status())
                            watch.cancel_scope.cancel()
                    else:
                        assert child.mailbox is not None and child.spec.start is not None
                        ctx = ActorContext(child.spec.id, child.mailbox, self.registry, child.stop_requested,
                                           restarts=child.restarts)
                        child.ctx = ctx
                        await child.spec.start(ctx, task_status=_Status())
                except Exception as exc:
                    if not started:
                        raise  # nursery.start re-raises it in _start: a failed start fails loudly at once
                    result = exc
            if scope.cancelled_caught and child.state is not ChildState.STOPPING:
                result = RuntimeError("cancelled unexpectedly")
            if not started and result is _NORMAL:
                raise RuntimeError(f"{child.spec.id} returned without calling task_status.started()")
        finally:
            expected = child.state is ChildState.STOPPING
            child.finished.set()
            child.consecutive = child.consecutive + 1 if result is not _NORMAL else 0
            if started:
                self._exits_send.send_nowait((child, result, expected))

    async def _stop_all(self, children: Iterable[Child], *, restarting: bool = False) -> None:
        for child in children:
            await self._stop(child, restarting=restarting)

    async def _stop(self, child: Child, *, restarting: bool = False) -> None:
        if child.state not in (ChildState.RUNNING, ChildState.STARTING) or child.scope is None:
            return
        t0 = trio.current_time()
        child.state = ChildState.STOPPING
        if child.ctx is not None:
            child.ctx.request_stop()
        else:
            child.stop_requested.set()
        # Ask, wait its shutdown timeout, then cancel (OTP shutdown).
        child.scope.deadline = min(child.scope.deadline, trio.current_time() + child.spec.shutdown)
        await child.finished.wait()
        log.debug("%s/%s stopped in %.3fs", self.spec.id, child.spec.id, trio.current_time() - t0)
        child.state = ChildState.RESTARTING if restarting else ChildState.STOPPED
        if child.mailbox is not None:
            child.mailbox.settle_after_exit(restarting=restarting, error=None)
            if not restarting:
                child.mailbox.close_down()


def _as_exc(result: object) -> BaseException | None:
    return result if isinstance(result, BaseException) else None


@attrs.define
class ActorSystem:
    """The root of an actor system: the registry plus the root supervisor, for introspection and operator
    restarts. ``faults_allowed`` arms the fault kit (`supervisor.otp.faults`); without it faults cannot fire."""

    registry: Registry = attrs.field(factory=Registry)
    root: Supervisor | None = None
    started_at: float = attrs.field(factory=time.time)

    async def run(
        self, spec: SupervisorSpec, *, task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED
    ) -> None:
        self.root = Supervisor(spec, self.registry)
        await self.root.run(task_status=task_status)

    def tree(self) -> ChildInfo | None:
        return self.root.tree() if self.root is not None else None

    def find(self, child_id: str) -> Child | None:
        found = self.root.find(child_id) if self.root is not None else None
        return found[1] if found is not None else None

    async def restart(self, child_id: str, *, timeout: float = 15.0) -> ChildInfo:
        """Restart one actor (or nested supervisor) by id, the way its supervisor's strategy says; returns its
        info once it runs again."""
        found = self.root.find(child_id) if self.root is not None else None
        if found is None:
            raise KeyError(f"no actor named {child_id!r}")
        parent, child = found
        done = parent.request_restart(child_id)
        with trio.fail_after(timeout):
            await done.wait()
        return child.info()


def child(id: str, start: StartFn, /, *, restart: Restart = Restart.PERMANENT,
          shutdown: float = 5.0, mailbox_size: int = 64, significant: bool = False,
          **kwargs: object) -> ChildSpec:
    """A ChildSpec whose start function gets `kwargs` bound (``child("relay", relay.run, port=0)``)."""
    fn = functools.partial(start, **kwargs) if kwargs else start
    return ChildSpec(id=id, start=fn, restart=restart, shutdown=shutdown, mailbox_size=mailbox_size,
                     significant=significant)
