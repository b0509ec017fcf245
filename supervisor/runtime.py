"""Mailboxes, envelopes and request/reply: how actors talk.

Every actor owns nothing but its own state; it receives `Envelope`s from a `Mailbox` the *supervisor* owns, so the
mailbox (and whatever is queued in it) outlives a crash of the actor. An envelope taken by an actor is "in flight"
until the actor replies; if the actor dies first, the supervisor puts the envelope back at the head of the mailbox
for the restarted actor with ``attempt + 1`` — the mechanism behind stuck-state retry.

Requesters use `ActorRef.call`, which enforces a per-request deadline and raises typed errors (`ActorDown`,
`RequestTimeout`). If a requester stops waiting (deadline or cancellation), the envelope is marked *abandoned*: a
queued one is dropped, an in-flight one lets the handler notice (`Envelope.abandoned`) and clean up — this is how
an MCP client's cancellation reaches the provider tab.
"""

from __future__ import annotations

import collections
import enum
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import attrs
import outcome
import trio

from .errors import ActorCrashed, ActorDown, RequestTimeout

log = logging.getLogger("ai_bridge.runtime")

T = TypeVar("T")
_ids = itertools.count(1)


async def receive_unless(receive: Callable[[], Awaitable[T]], event: trio.Event) -> T | None:
    """`await receive()`, or None as soon as `event` is set (whichever comes first; the other is cancelled).

    A receive from a trio memory channel is atomic under cancellation, so no item is lost to the race."""
    got: list[T] = []
    async with trio.open_nursery() as nursery:

        async def take() -> None:
            got.append(await receive())
            nursery.cancel_scope.cancel()

        async def stop() -> None:
            await event.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(take)
        nursery.start_soon(stop)
    return got[0] if got else None


class InjectedFault(Exception):
    """Raised inside an actor by the fault-injection kit (`supervisor.testing`)."""


class MailboxState(enum.Enum):
    UP = "up"  # an actor is (or soon will be) reading it
    DOWN = "down"  # no actor will ever read it again: callers fail fast


@attrs.define(eq=False)
class Envelope(Generic[T]):
    """One request in a mailbox: the message, its reply slot, its attempt counter."""

    message: Any
    reply_required: bool = True
    on_progress: Callable[[Any], None] | None = None
    attempt: int = 1
    # False while an actor merely holds the envelope in an internal queue: a crash then re-delivers it without
    # counting an attempt (only work actually begun is retried).
    started: bool = True
    id: int = attrs.field(factory=lambda: next(_ids))
    enqueued_at: float = attrs.field(factory=trio.current_time)
    _done: trio.Event = attrs.field(factory=trio.Event)
    _abandoned: trio.Event = attrs.field(factory=trio.Event)
    _outcome: outcome.Outcome[T] | None = None

    # -- actor side ---------------------------------------------------------------------------------------------

    @property
    def answered(self) -> bool:
        return self._done.is_set()

    @property
    def abandoned(self) -> bool:
        """The requester stopped waiting (cancelled or timed out)."""
        return self._abandoned.is_set()

    async def wait_abandoned(self) -> None:
        await self._abandoned.wait()

    def reply(self, value: T) -> None:
        """Answer the request. Answering twice is a bug in the actor, so it raises."""
        if self._done.is_set():
            raise RuntimeError(f"envelope {self.id} ({type(self.message).__name__}) answered twice")
        self._outcome = outcome.Value(value)
        self._done.set()

    def fail(self, exc: BaseException) -> None:
        if self._done.is_set():
            raise RuntimeError(f"envelope {self.id} ({type(self.message).__name__}) answered twice")
        self._outcome = outcome.Error(exc)
        self._done.set()

    def progress(self, item: Any) -> None:
        """Report progress to the requester; never blocks, never fails the actor."""
        if self.on_progress is not None and not self.abandoned:
            try:
                self.on_progress(item)
            except Exception:  # a broken progress sink must not take down the actor
                log.exception("progress callback failed")

    # -- requester side -------------------------------------------------------------------------------------------

    def abandon(self) -> None:
        self._abandoned.set()

    async def result(self) -> T:
        await self._done.wait()
        assert self._outcome is not None
        return self._outcome.unwrap()


@attrs.define(eq=False)
class Fault:
    """A fault armed on a mailbox; fires inside the actor's task when it takes its next message."""

    kind: str  # "crash" | "hang" | "slow"
    delay: float = 0.0
    error: str = "injected fault"


class Mailbox:
    """A bounded inbox owned by a supervisor; survives restarts of the actor reading it."""

    def __init__(self, name: str, size: int = 64) -> None:
        self.name = name
        self._send, self._recv = trio.open_memory_channel[Envelope[Any]](size)
        self._redeliver: collections.deque[Envelope[Any]] = collections.deque()
        self.in_flight: dict[int, Envelope[Any]] = {}
        self.state = MailboxState.UP
        self.faults: collections.deque[Fault] = collections.deque()

    @property
    def depth(self) -> int:
        return self._send.statistics().current_buffer_used + len(self._redeliver)

    async def put(self, env: Envelope[Any]) -> None:
        if self.state is MailboxState.DOWN:
            raise ActorDown(f"actor {self.name!r} is stopped")
        await self._send.send(env)

    async def receive(self) -> Envelope[Any]:
        """Next live envelope, redeliveries first; marked in flight before it is returned (so an injected fault
        that fires next, in the actor's task, exercises the real re-delivery path)."""
        while True:
            # Redeliveries are queued only while no actor reads this mailbox (the supervisor settles a dead actor's
            # envelopes before restarting it), so checking them first, then waiting on the channel, loses nothing.
            env = self._redeliver.popleft() if self._redeliver else await self._recv.receive()
            if env.abandoned or env.answered:
                continue  # the requester gave up while it sat in the queue
            if env.reply_required:
                self.in_flight[env.id] = env
            return env

    async def fire_fault(self) -> None:
        if not self.faults:
            return
        fault = self.faults.popleft()
        log.warning("fault injection: %s in actor %s", fault.kind, self.name)
        if fault.kind == "crash":
            raise InjectedFault(fault.error)
        if fault.kind == "hang":
            await trio.sleep_forever()
        if fault.kind == "slow":
            await trio.sleep(fault.delay)

    def done(self, env: Envelope[Any]) -> None:
        self.in_flight.pop(env.id, None)

    def settle_after_exit(self, *, restarting: bool, error: BaseException | None) -> None:
        """Called by the supervisor when the actor's task ended: re-queue or fail what it held."""
        held = [env for env in self.in_flight.values() if not env.answered and not env.abandoned]
        self.in_flight.clear()
        for env in reversed(held):  # keep their original order at the head of the queue
            if restarting:
                if env.started:
                    env.attempt += 1
                self._redeliver.appendleft(env)
            else:
                env.fail(ActorCrashed(f"actor {self.name!r} stopped while handling {type(env.message).__name__}"))
        if error is not None and held:
            log.info("actor %s held %d request(s) when it ended: %s", self.name, len(held),
                     "re-delivering" if restarting else "failed")

    def close_down(self) -> None:
        """No actor will read this mailbox again: fail everything queued so callers are not left waiting."""
        self.state = MailboxState.DOWN
        pending = list(self._redeliver) + list(self.in_flight.values())
        self._redeliver.clear()
        self.in_flight.clear()
        while True:
            try:
                pending.append(self._recv.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                break
        for env in pending:
            if not env.answered:
                env.fail(ActorDown(f"actor {self.name!r} stopped before handling {type(env.message).__name__}"))

    def reopen(self) -> None:
        self.state = MailboxState.UP

    def current(self) -> list[Envelope[Any]]:
        return list(self.in_flight.values())


class Registry:
    """Name → mailbox for the whole process. Supervisors register their children's mailboxes here."""

    def __init__(self) -> None:
        self._boxes: dict[str, Mailbox] = {}

    def register(self, mailbox: Mailbox) -> None:
        if mailbox.name in self._boxes and self._boxes[mailbox.name] is not mailbox:
            raise ValueError(f"duplicate actor name {mailbox.name!r}")
        self._boxes[mailbox.name] = mailbox

    def get(self, name: str) -> Mailbox:
        try:
            return self._boxes[name]
        except KeyError:
            raise ActorDown(f"no actor named {name!r} is running") from None

    def ref(self, name: str) -> ActorRef:
        return ActorRef(self, name)

    def names(self) -> list[str]:
        return list(self._boxes)


@attrs.frozen
class ActorRef:
    """A handle to send requests to a named actor; resolves the mailbox at send time so restarts are invisible."""

    registry: Registry
    name: str

    async def call(
        self,
        message: Any,
        *,
        timeout: float | None = None,
        on_progress: Callable[[Any], None] | None = None,
    ) -> Any:
        """Send `message`, wait for the reply. Raises what the actor failed with, `ActorDown` or `RequestTimeout`."""
        env: Envelope[Any] = Envelope(message, on_progress=on_progress)
        mailbox = self.registry.get(self.name)
        deadline = trio.current_time() + timeout if timeout is not None else float("inf")
        try:
            with trio.CancelScope(deadline=deadline) as scope:
                await mailbox.put(env)
                return await env.result()
        finally:
            if not env.answered:
                env.abandon()
        # only reached when the deadline fired (a cancel from outside propagates out of the with-block)
        assert scope.cancelled_caught
        raise RequestTimeout(
            f"{self.name} did not answer {type(message).__name__} within {timeout:g}s",
            hint="See `bridge_status` for the actor's state.",
        )


@attrs.define(eq=False)
class ActorContext:
    """What an actor gets from its supervisor: its name, inbox, a way to find peers, and a stop request."""

    name: str
    inbox: Mailbox
    registry: Registry
    stop_requested: trio.Event
    restarts: int = 0
    _waiting: trio.CancelScope | None = None

    @property
    def log(self) -> logging.Logger:
        return logging.getLogger(f"ai_bridge.{self.name}")

    def ref(self, name: str) -> ActorRef:
        return self.registry.ref(name)

    def messages(self) -> _Messages:
        """``async for env in ctx.messages()``: envelopes until the supervisor asks this actor to stop."""
        return _Messages(self)

    def request_stop(self) -> None:
        """Ask the actor to stop: `next_message` returns None (a waiting one at once)."""
        self.stop_requested.set()
        if self._waiting is not None:
            self._waiting.cancel()

    async def next_message(self) -> Envelope[Any] | None:
        """The next envelope, or None once a stop was requested (graceful shutdown)."""
        if self.stop_requested.is_set():
            return None
        # One cancel scope per wait instead of a racing nursery: this is every message's path, so it must be cheap.
        # A memory-channel receive is atomic under cancellation, so a stop never loses an envelope.
        got: Envelope[Any] | None = None
        with trio.CancelScope() as scope:
            self._waiting = scope
            try:
                got = await self.inbox.receive()
            finally:
                self._waiting = None
        if got is not None:
            await self.inbox.fire_fault()  # in the actor's own task, so a crash is the actor's crash
        return got

    async def handle(self, env: Envelope[Any], handler: Callable[[Any], Any]) -> None:
        """Run an async handler for an envelope and route its result or `BridgeError` to the requester.

        Errors that are not `BridgeError` are bugs or crashes: they propagate and crash the actor, and the
        supervisor re-delivers the envelope.
        """
        from .errors import BridgeError

        try:
            value = await handler(env)
        except BridgeError as exc:
            if not env.answered:
                env.fail(exc)
            self.inbox.done(env)
            return
        if env.reply_required and not env.answered:
            env.reply(value)
        self.inbox.done(env)


class _Messages:
    # A plain async iterator rather than an async generator: an actor that crashes mid-loop leaves nothing to
    # finalize.
    def __init__(self, ctx: ActorContext) -> None:
        self._ctx = ctx

    def __aiter__(self) -> _Messages:
        return self

    async def __anext__(self) -> Envelope[Any]:
        env = await self._ctx.next_message()
        if env is None:
            raise StopAsyncIteration
        return env
