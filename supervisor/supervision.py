"""OTP-style supervision on trio.

A `Supervisor` starts its children in order (each counts as started only once it calls `task_status.started()`),
watches them, and when one ends applies its restart type (permanent / transient / temporary) and the supervisor's
strategy (one_for_one / one_for_all / rest_for_one). Restarts are counted per supervisor within a sliding period;
exceeding the intensity stops every child (in reverse order) and raises `SupervisorEscalation` to the parent —
which, if the parent is a supervisor too, sees an ordinary child failure.

Stopping a child follows OTP's shutdown protocol: ask (``ctx.stop_requested``), wait up to its shutdown timeout,
then cancel.
"""

from __future__ import annotations

import collections
import enum
import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from .errors import SupervisorEscalation
from .runtime import ActorContext, Mailbox, Registry, receive_unless

log = logging.getLogger("ai_bridge.supervisor")


class Restart(enum.Enum):
    PERMANENT = "permanent"  # always restarted
    TRANSIENT = "transient"  # restarted only after an abnormal exit (an exception)
    TEMPORARY = "temporary"  # never restarted


class Strategy(enum.Enum):
    ONE_FOR_ONE = "one_for_one"
    ONE_FOR_ALL = "one_for_all"
    REST_FOR_ONE = "rest_for_one"


class ChildState(enum.Enum):
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    RESTARTING = "restarting"
    STOPPED = "stopped"


StartFn = Callable[..., Awaitable[None]]


@attrs.frozen
class ChildSpec:
    """How to run one child. `start` is ``async def run(ctx, *, task_status)`` (extra kwargs via functools.partial)."""

    id: str
    start: StartFn
    restart: Restart = Restart.PERMANENT
    shutdown: float = 5.0  # seconds between the stop request and cancellation
    mailbox_size: int = 64
    # A nested supervisor is also a child; it gets no mailbox of its own.
    supervisor: SupervisorSpec | None = None


@attrs.frozen
class SupervisorSpec:
    id: str
    children: tuple[ChildSpec, ...]
    strategy: Strategy = Strategy.ONE_FOR_ONE
    max_restarts: int = 3
    period: float = 5.0
    backoff: float = 0.0  # first restart delay; doubles per consecutive restart of the same child, capped below
    backoff_max: float = 5.0

    def as_child(self, *, restart: Restart = Restart.PERMANENT, shutdown: float = 10.0) -> ChildSpec:
        return ChildSpec(id=self.id, start=_run_nested, restart=restart, shutdown=shutdown, supervisor=self)


async def _run_nested(ctx: ActorContext, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
    raise AssertionError("nested supervisors are started by their parent directly")  # pragma: no cover


_NORMAL = object()  # exit marker for a child that returned


@attrs.define(eq=False)
class _RestartRequest:
    """Not an exit: an operator asked for a restart (console); handled in the supervision loop."""

    done: trio.Event = attrs.field(factory=trio.Event)


@attrs.define(eq=False)
class Child:
    spec: ChildSpec
    mailbox: Mailbox | None
    state: ChildState = ChildState.STOPPED
    restarts: int = 0
    consecutive: int = 0
    last_error: str | None = None
    started_at: float | None = None
    scope: trio.CancelScope | None = None
    stop_requested: trio.Event = attrs.field(factory=trio.Event)
    finished: trio.Event = attrs.field(factory=trio.Event)
    nested: Supervisor | None = None
    ctx: ActorContext | None = None

    def info(self) -> dict[str, Any]:
        current = []
        if self.mailbox is not None:
            for env in self.mailbox.current():
                current.append({"message": type(env.message).__name__, "attempt": env.attempt,
                                "waitingS": round(trio.current_time() - env.enqueued_at, 3)})
        out: dict[str, Any] = {
            "id": self.spec.id,
            "state": self.state.value,
            "restart": self.spec.restart.value,
            "restarts": self.restarts,
            "lastError": self.last_error,
            "inboxDepth": self.mailbox.depth if self.mailbox is not None else None,
            "current": current,
        }
        if self.nested is not None:
            out["strategy"] = self.nested.spec.strategy.value
            out["children"] = [c.info() for c in self.nested.children]
        return out


class Supervisor:
    def __init__(self, spec: SupervisorSpec, registry: Registry) -> None:
        self.spec = spec
        self.registry = registry
        self.children: list[Child] = []
        for cs in spec.children:
            if cs.supervisor is None:
                mailbox = Mailbox(cs.id, cs.mailbox_size)
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

    def tree(self) -> dict[str, Any]:
        return {"id": self.spec.id, "strategy": self.spec.strategy.value, "children": [c.info() for c in self.children]}

    def find(self, child_id: str) -> Child | None:
        """Depth-first search for a child id anywhere below this supervisor."""
        for c in self.children:
            if c.spec.id == child_id:
                return c
            if c.nested is not None and (found := c.nested.find(child_id)) is not None:
                return found
        return None

    def parent_of(self, child_id: str) -> Supervisor | None:
        for c in self.children:
            if c.spec.id == child_id:
                return self
            if c.nested is not None and (found := c.nested.parent_of(child_id)) is not None:
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
                            await self._start(child)
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
                    await self._apply_strategy(child, None)
                result.done.set()
                continue
            abnormal = result is not _NORMAL
            child.last_error = _describe(result) if abnormal else child.last_error
            restart = child.spec.restart is Restart.PERMANENT or (
                child.spec.restart is Restart.TRANSIENT and abnormal
            )
            if abnormal:
                log.warning("%s/%s crashed: %s", self.spec.id, child.spec.id, child.last_error,
                            exc_info=result if isinstance(result, BaseException) else None)
            else:
                log.info("%s/%s exited normally", self.spec.id, child.spec.id)
            if not restart:
                child.state = ChildState.STOPPED
                if child.mailbox is not None:
                    child.mailbox.settle_after_exit(restarting=False, error=_as_exc(result))
                    child.mailbox.close_down()
                continue
            try:
                self._count_restart(child)
            except SupervisorEscalation as exc:
                log.error("%s", exc)
                return exc
            await self._apply_strategy(child, _as_exc(result))

    def _count_restart(self, child: Child) -> None:
        # trio's clock, so MockClock/autojump tests of restart intensity are deterministic.
        now = trio.current_time()
        self._restart_times.append(now)
        while self._restart_times and self._restart_times[0] <= now - self.spec.period:
            self._restart_times.popleft()
        if len(self._restart_times) > self.spec.max_restarts:
            if child.mailbox is not None:
                child.mailbox.settle_after_exit(restarting=False, error=None)
            child.state = ChildState.STOPPED
            raise SupervisorEscalation(
                f"supervisor {self.spec.id!r}: {len(self._restart_times)} restarts within {self.spec.period:g}s "
                f"(limit {self.spec.max_restarts}); last failure in {child.spec.id!r}: {child.last_error}"
            )

    async def _apply_strategy(self, failed: Child, error: BaseException | None) -> None:
        idx = self.children.index(failed)
        if self.spec.strategy is Strategy.ONE_FOR_ONE:
            group = [failed]
        elif self.spec.strategy is Strategy.ONE_FOR_ALL:
            group = list(self.children)
        else:
            group = self.children[idx:]
        # The failed child's held requests go back to its inbox before anything restarts.
        failed.state = ChildState.RESTARTING
        if failed.mailbox is not None:
            failed.mailbox.settle_after_exit(restarting=True, error=error)
        others = [c for c in group if c is not failed and c.state in (ChildState.RUNNING, ChildState.STARTING)]
        await self._stop_all(reversed(others), restarting=True)
        delay = self._backoff(failed)
        if delay > 0:
            await trio.sleep(delay)
        for child in group:
            if child is not failed and child not in others:
                continue  # already stopped for good (e.g. a temporary child that finished)
            if child.spec.restart is Restart.TEMPORARY and child is not failed:
                child.state = ChildState.STOPPED  # OTP: a temporary child is not restarted by a sibling's failure
                continue
            child.restarts += 1
            try:
                await self._start(child)
            except Exception as exc:
                # A failed restart is one more failure of that child: it counts against the intensity.
                child.state = ChildState.RESTARTING
                self._exits_send.send_nowait((child, exc, False))
                return

    def _backoff(self, child: Child) -> float:
        if self.spec.backoff <= 0:
            return 0.0
        delay = min(self.spec.backoff * 2 ** max(child.consecutive - 1, 0), self.spec.backoff_max)
        return float(delay)

    # -- start / stop -----------------------------------------------------------------------------------------------

    async def _start(self, child: Child) -> None:
        assert self._nursery is not None
        child.state = ChildState.STARTING
        child.stop_requested = trio.Event()
        child.finished = trio.Event()
        if child.mailbox is not None:
            child.mailbox.reopen()
        try:
            await self._nursery.start(self._run_child, child)
        except Exception as exc:
            child.state = ChildState.STOPPED
            child.last_error = _describe(exc)
            log.error("%s/%s failed to start: %s", self.spec.id, child.spec.id, child.last_error)
            raise
        child.state = ChildState.RUNNING
        child.started_at = trio.current_time()

    async def _run_child(self, child: Child, *, task_status: trio.TaskStatus[None]) -> None:
        started = False

        class _Status:
            def started(self, value: Any = None) -> None:
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
                        assert child.mailbox is not None
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

    async def _stop_all(self, children: Any, *, restarting: bool = False) -> None:
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


def _describe(result: object) -> str:
    while isinstance(result, BaseExceptionGroup) and len(result.exceptions) == 1:
        result = result.exceptions[0]  # an actor's nursery wraps its one real error
    if isinstance(result, BaseException):
        return f"{type(result).__name__}: {result}"
    return str(result)


@attrs.define
class Runtime:
    """The root of the actor system: a registry plus the root supervisor, for introspection and fault injection."""

    registry: Registry = attrs.field(factory=Registry)
    root: Supervisor | None = None
    started_at: float = attrs.field(factory=time.time)

    async def run(
        self, spec: SupervisorSpec, *, task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED
    ) -> None:
        self.root = Supervisor(spec, self.registry)
        await self.root.run(task_status=task_status)

    def tree(self) -> dict[str, Any]:
        return self.root.tree() if self.root is not None else {}

    def find(self, child_id: str) -> Child | None:
        return self.root.find(child_id) if self.root is not None else None

    async def restart(self, child_id: str, *, timeout: float = 15.0) -> dict[str, Any]:
        """Restart one actor (or nested supervisor) by id, the way its supervisor's strategy says; returns its
        info once it runs again."""
        parent = self.root.parent_of(child_id) if self.root is not None else None
        if parent is None:
            raise KeyError(f"no actor named {child_id!r}")
        done = parent.request_restart(child_id)
        with trio.fail_after(timeout):
            await done.wait()
        return parent.child(child_id).info()


def child(id: str, start: StartFn, /, *, restart: Restart = Restart.PERMANENT, shutdown: float = 5.0,
          mailbox_size: int = 64, **kwargs: Any) -> ChildSpec:
    """Convenience: a ChildSpec whose start function gets `kwargs` bound."""
    fn = functools.partial(start, **kwargs) if kwargs else start
    return ChildSpec(id=id, start=fn, restart=restart, shutdown=shutdown, mailbox_size=mailbox_size)
