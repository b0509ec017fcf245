"""Typed request/reply between actors: requests, envelopes, mailboxes, addresses and references.

Every request message subclasses `Request[R]`, naming its reply type ``R``; `ActorRef.call` therefore returns ``R``
and mypy follows a question from the tool call to the tab and back. An actor's inbox is a closed union of request
classes, declared once as an `Address`; the actor dispatches with ``match`` ending in ``assert_never``.

A handler answers with ``env.reply(msg.reply(value))`` (``msg.reply`` checks the value against ``R``) or by raising
a `BridgeError`, which becomes the caller's error. Either way the envelope is done: nothing is marked by hand.

Every actor owns nothing but its own state; it receives `Envelope`s from a `Mailbox` the *supervisor* owns, so the
mailbox (and whatever is queued in it) outlives a crash of the actor. An envelope taken by an actor is "in flight"
until it is answered; if the actor dies first, the supervisor re-delivers it to the restarted actor, by the
redelivery policy in `Mailbox.settle_after_exit`: a crash that is not a deliberate `Retry` re-delivers a request at
most once, after which its caller gets `InternalError` naming the actor (a poison message cannot crash-loop an
actor).

Requesters use `ActorRef.call`, which enforces a per-request deadline and raises typed errors (`ActorDown`,
`RequestTimeout`). If a requester stops waiting, the envelope is marked *abandoned*: a queued one is dropped, an
in-flight one lets the handler notice (`Envelope.abandoned`) and clean up — this is how an MCP client's cancellation
reaches the provider tab.
"""

from __future__ import annotations

import collections
import contextlib
import enum
import itertools
import logging
import typing
from collections.abc import Awaitable, Callable, Iterator
from typing import ClassVar, Generic, TypeVar, cast

import attrs
import outcome
import trio

from ..errors import ActorCrashed, ActorDown, BridgeError, InternalError, RequestTimeout

log = logging.getLogger("ai_bridge.otp")

T = TypeVar("T")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
M = TypeVar("M", bound="Message")
N = TypeVar("N", bound="Message")

_ids = itertools.count(1)


class Message:
    """What an inbox holds: every request is a `Message` (`Request[R]` below adds its reply type)."""

    __slots__ = ()

    #: A deliberate `Retry` crash re-delivers the request up to this many attempts in all (stuck-state retry).
    max_attempts: ClassVar[int] = 1


class Request(Message, Generic[R_co]):
    """Base of every request message. ``class Ask(Request[AskResult])`` says an `Ask` is answered by an
    `AskResult`. Subclasses are frozen attrs classes."""

    __slots__ = ()

    # Covariant, so an `Ask` is usable where a `Request[AskResult | BridgeError]` is expected (a caller's union);
    # `reply` still checks against the class's own R, since mypy binds it from the request's declared base.
    def reply(self, value: R_co) -> Reply[R_co]:  # type: ignore[misc]
        """The answer to this request, type-checked against ``R``."""
        return Reply(self, value)


@attrs.frozen
class Reply(Generic[R_co]):
    """An answer bound to the request it answers (`Envelope.reply` checks that they belong together)."""

    request: Message
    value: R_co


class Progress:
    """Base of progress items a handler streams to its requester while it works (see `Envelope.progress`)."""

    __slots__ = ()


class Retry(Exception):
    """Raised by an actor that wants to be restarted and get the request in hand again (stuck-state retry). The
    request is re-delivered while ``attempt < max_attempts`` of its class; then the caller gets `failure`."""

    def __init__(self, reason: str, failure: BridgeError) -> None:
        super().__init__(reason)
        self.failure = failure


class MailboxState(enum.Enum):
    UP = "up"  # an actor is (or soon will be) reading it
    DOWN = "down"  # no actor will ever read it again: callers fail fast


@attrs.define(eq=False)
class Envelope(Generic[M]):
    """One request in a mailbox: the message, its reply slot, its attempt counter."""

    message: M
    on_progress: Callable[[Progress], None] | None = None
    attempt: int = 1
    crashes: int = 0  # unexpected crashes while an actor held it (a second one drops it: poison message)
    # False while an actor merely holds the envelope in an internal queue: a crash then re-delivers it without
    # counting an attempt (only work actually begun is retried).
    started: bool = True
    id: int = attrs.field(factory=lambda: next(_ids))
    enqueued_at: float = attrs.field(factory=trio.current_time)
    _done: trio.Event = attrs.field(factory=trio.Event)
    _abandoned: trio.Event = attrs.field(factory=trio.Event)
    _on_abandon: list[trio.CancelScope] = attrs.field(factory=list)  # see cancelled_if_abandoned
    _outcome: outcome.Outcome[object] | None = None
    _mailbox: Mailbox[M] | None = None  # set when an actor takes it; answering removes it from the in-flight set

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

    @contextlib.contextmanager
    def cancelled_if_abandoned(self) -> Iterator[trio.CancelScope]:
        """A cancel scope that the requester giving up cancels (check its `cancelled_caught` after the block);
        no task has to watch for it."""
        with trio.CancelScope() as scope:
            if self.abandoned:
                scope.cancel()
            self._on_abandon.append(scope)
            try:
                yield scope
            finally:
                self._on_abandon.remove(scope)

    def reply(self, answer: Reply[object]) -> None:
        """Answer the request (``env.reply(msg.reply(value))``). Answering twice is a bug in the actor."""
        if answer.request is not self.message:
            raise RuntimeError(f"envelope {self.id}: a reply to {type(answer.request).__name__} given to "
                               f"{type(self.message).__name__}")
        self._settle(outcome.Value(answer.value))

    def fail(self, exc: BaseException) -> None:
        self._settle(outcome.Error(exc))

    def _settle(self, result: outcome.Outcome[object]) -> None:
        if self._done.is_set():
            raise RuntimeError(f"envelope {self.id} ({type(self.message).__name__}) answered twice")
        self._outcome = result
        self._done.set()
        if self._mailbox is not None:
            self._mailbox.done(self)

    def progress(self, item: Progress) -> None:
        """Report progress to the requester; never blocks, never fails the actor."""
        if self.on_progress is not None and not self.abandoned:
            try:
                self.on_progress(item)
            except Exception:  # a broken progress sink must not take down the actor
                log.exception("progress callback failed")

    # -- requester side -------------------------------------------------------------------------------------------

    def abandon(self) -> None:
        self._abandoned.set()
        for scope in self._on_abandon:
            scope.cancel()

    async def result(self) -> object:
        await self._done.wait()
        assert self._outcome is not None
        return self._outcome.unwrap()


class FaultKind(enum.Enum):
    CRASH = "crash"
    HANG = "hang"
    SLOW = "slow"


@attrs.frozen
class Fault:
    """A fault armed on a mailbox; fires inside the actor's task when it takes its next message."""

    kind: FaultKind
    delay: float = 0.0
    error: str = "injected fault"


class InjectedFault(Exception):
    """Raised inside an actor by the fault kit (`supervisor.otp.faults`)."""


class Mailbox(Generic[M]):
    """A bounded inbox owned by a supervisor; survives restarts of the actor reading it."""

    def __init__(self, name: str, size: int = 64) -> None:
        self.name = name
        self._send, self._recv = trio.open_memory_channel[Envelope[M]](size)
        self._redeliver: collections.deque[Envelope[M]] = collections.deque()
        self.in_flight: dict[int, Envelope[M]] = {}
        self.state = MailboxState.UP
        self.down_reason = ""
        self.faults: collections.deque[Fault] = collections.deque()

    @property
    def depth(self) -> int:
        return self._send.statistics().current_buffer_used + len(self._redeliver)

    async def put(self, env: Envelope[M]) -> None:
        if self.state is MailboxState.DOWN:
            raise ActorDown(f"actor {self.name!r} is stopped{self.down_reason}")
        await self._send.send(env)

    async def receive(self) -> Envelope[M]:
        """Next live envelope, redeliveries first; marked in flight before it is returned (so an injected fault
        that fires next, in the actor's task, exercises the real re-delivery path)."""
        while True:
            # Redeliveries are queued only while no actor reads this mailbox (the supervisor settles a dead actor's
            # envelopes before restarting it), so checking them first, then waiting on the channel, loses nothing.
            env = self._redeliver.popleft() if self._redeliver else await self._recv.receive()
            if env.abandoned or env.answered:
                continue  # the requester gave up while it sat in the queue
            env._mailbox = self
            self.in_flight[env.id] = env
            return env

    async def fire_fault(self) -> None:
        if not self.faults:
            return
        fault = self.faults.popleft()
        log.warning("fault injection: %s in actor %s", fault.kind.value, self.name)
        if fault.kind is FaultKind.CRASH:
            raise InjectedFault(fault.error)
        if fault.kind is FaultKind.HANG:
            await trio.sleep_forever()
        await trio.sleep(fault.delay)

    def done(self, env: Envelope[M]) -> None:
        self.in_flight.pop(env.id, None)

    def settle_after_exit(self, *, restarting: bool, error: BaseException | None) -> None:
        """Called by the supervisor when the actor's task ended: re-queue or fail what it held.

        Redelivery policy: work begun (``started``) counts an attempt. A deliberate `Retry` re-delivers up to the
        request's ``max_attempts``; any other crash re-delivers a request at most once, then its caller gets
        `InternalError` — so one poison message can never crash-loop an actor into its supervisor's limit."""
        held = [env for env in self.in_flight.values() if not env.answered and not env.abandoned]
        self.in_flight.clear()
        retry = _leaf(error) if isinstance(_leaf(error), Retry) else None
        requeued: list[Envelope[M]] = []
        for env in held:
            if not restarting:
                env.fail(ActorCrashed(f"actor {self.name!r} stopped while handling {type(env.message).__name__}"))
                continue
            if not env.started:
                requeued.append(env)  # queued but not begun: not an attempt
                continue
            if error is None:  # a graceful (operator) restart: another attempt, but not a crash
                env.attempt += 1
                requeued.append(env)
                continue
            if isinstance(retry, Retry) and env.attempt >= type(env.message).max_attempts:
                env.fail(retry.failure)
                continue
            if retry is None:
                env.crashes += 1
                if env.crashes >= 2:
                    log.error("actor %s crashed twice on %s; dropping it (%s)", self.name,
                              type(env.message).__name__, _describe(error))
                    env.fail(InternalError(
                        f"actor {self.name!r} crashed twice while handling {type(env.message).__name__}: "
                        f"{_describe(error)}",
                        hint="This is a bug in ai-bridge; the request was dropped. See the log file for the "
                        "traceback, and `bridge_status` for the actor's state."))
                    continue
            env.attempt += 1
            requeued.append(env)
        for env in reversed(requeued):  # keep their original order at the head of the queue
            env._mailbox = None
            self._redeliver.appendleft(env)
        if error is not None and held:
            log.log(logging.DEBUG if retry is not None else logging.INFO, "actor %s held %d request(s) when it "
                    "ended: %s", self.name, len(held), f"re-delivering {len(requeued)}" if restarting else "failed")

    def close_down(self, reason: str = "") -> None:
        """No actor will read this mailbox again: fail everything queued so callers are not left waiting."""
        self.state = MailboxState.DOWN
        self.down_reason = reason
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
                env.fail(ActorDown(f"actor {self.name!r} stopped before handling {type(env.message).__name__}"
                                   f"{reason}"))

    def reopen(self) -> None:
        self.state = MailboxState.UP
        self.down_reason = ""

    def current(self) -> list[Envelope[M]]:
        return list(self.in_flight.values())


def _members(union: object) -> tuple[type[Message], ...]:
    """The request classes of an inbox: a union, one class, or a tuple (empty for an actor that takes none)."""
    members = union if isinstance(union, tuple) else (typing.get_args(union) or (union,))
    for m in members:
        if not (isinstance(m, type) and issubclass(m, Message)):
            raise TypeError(f"an inbox holds Message subclasses, not {m!r}")
    return tuple(members)


def _leaf(exc: BaseException | None) -> BaseException | None:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]  # an actor's nursery wraps its one real error
    return exc


def _describe(exc: BaseException | None) -> str:
    leaf = _leaf(exc)
    return f"{type(leaf).__name__}: {leaf}" if leaf is not None else "no error"


@attrs.frozen
class Address(Generic[M]):
    """An actor's name and the closed set of requests it accepts, defined once beside its protocol.

    ``RELAY = Address[RelayRequest]("relay", RelayRequest)`` — the second argument is the union itself."""

    name: str
    accepts: tuple[type[Message], ...] = attrs.field(converter=_members)

    def __str__(self) -> str:
        return self.name


class Registry:
    """Name → mailbox for the whole process. Supervisors register their children's mailboxes here."""

    def __init__(self, *, faults_allowed: bool = False) -> None:
        self._boxes: dict[str, Mailbox[Message]] = {}
        # Fault injection is reachable only where the process was started with it allowed (--allow-faults).
        self.faults_allowed = faults_allowed

    def register(self, mailbox: Mailbox[M]) -> None:
        box = cast("Mailbox[Message]", mailbox)
        if mailbox.name in self._boxes and self._boxes[mailbox.name] is not box:
            raise ValueError(f"duplicate actor name {mailbox.name!r}")
        self._boxes[mailbox.name] = box

    def mailbox(self, name: str) -> Mailbox[Message]:
        try:
            return self._boxes[name]
        except KeyError:
            raise ActorDown(f"no actor named {name!r} is running") from None

    def ref(self, address: Address[M]) -> ActorRef[M]:
        return ActorRef(self, address)

    def names(self) -> list[str]:
        return list(self._boxes)


@attrs.frozen
class ActorRef(Generic[M]):
    """A handle to send requests to an actor; resolves the mailbox at send time so restarts are invisible."""

    registry: Registry
    address: Address[M]

    @property
    def name(self) -> str:
        return self.address.name

    async def call(
        self,
        message: Request[R],
        *,
        timeout: float | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> R:
        """Send `message`, wait for the reply. Raises what the actor failed with, `ActorDown` or `RequestTimeout`."""
        if not isinstance(message, self.address.accepts):
            raise TypeError(f"{self.name} does not accept {type(message).__name__}")
        env: Envelope[Message] = Envelope(message, on_progress=on_progress)
        mailbox = self.registry.mailbox(self.name)
        deadline = trio.current_time() + timeout if timeout is not None else float("inf")
        try:
            with trio.CancelScope(deadline=deadline) as scope:
                await mailbox.put(env)
                # The envelope's outcome was produced by `Envelope.reply`, which checked it against R.
                return cast(R, await env.result())
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
class ActorContext(Generic[M]):
    """What an actor gets from its supervisor: its name, inbox, a way to find peers, and a stop request."""

    name: str
    inbox: Mailbox[M]
    registry: Registry
    stop_requested: trio.Event
    restarts: int = 0
    _waiting: trio.CancelScope | None = None

    @property
    def log(self) -> logging.Logger:
        return logging.getLogger(f"ai_bridge.{self.name}")

    def ref(self, address: Address[N]) -> ActorRef[N]:
        return self.registry.ref(address)

    def messages(self) -> _Messages[M]:
        """``async for env in ctx.messages()``: envelopes until the supervisor asks this actor to stop."""
        return _Messages(self)

    def request_stop(self) -> None:
        """Ask the actor to stop: `next_message` returns None (a waiting one at once)."""
        self.stop_requested.set()
        if self._waiting is not None:
            self._waiting.cancel()

    async def next_message(self) -> Envelope[M] | None:
        """The next envelope, or None once a stop was requested (graceful shutdown)."""
        if self.stop_requested.is_set():
            return None
        # One cancel scope per wait instead of a racing nursery: this is every message's path, so it must be cheap.
        # A memory-channel receive is atomic under cancellation, so a stop never loses an envelope.
        got: Envelope[M] | None = None
        with trio.CancelScope() as scope:
            self._waiting = scope
            try:
                got = await self.inbox.receive()
            finally:
                self._waiting = None
        if got is not None and self.registry.faults_allowed:
            await self.inbox.fire_fault()  # in the actor's own task, so a crash is the actor's crash
        return got

    async def answer(self, env: Envelope[M], handler: Callable[[M], Awaitable[Reply[object]]]) -> None:
        """Run ``handler(env.message)`` and reply with its `Reply`, or fail the request with its `BridgeError`.

        Any other exception is a bug or a crash: it propagates and crashes the actor, and the supervisor
        re-delivers the request (at most once, see `Mailbox.settle_after_exit`)."""
        try:
            answer = await handler(env.message)
        except BridgeError as exc:
            if not env.answered:
                env.fail(exc)
            return
        if not env.answered:
            env.reply(answer)

    def answer_soon(self, nursery: trio.Nursery, env: Envelope[M],
                    handler: Callable[[M], Awaitable[Reply[object]]]) -> None:
        """`answer` in a task of `nursery`: for requests that wait (they must not block the inbox)."""
        nursery.start_soon(self.answer, env, handler)


class _Messages(Generic[M]):
    # A plain async iterator rather than an async generator: an actor that crashes mid-loop leaves nothing to
    # finalize.
    def __init__(self, ctx: ActorContext[M]) -> None:
        self._ctx = ctx

    def __aiter__(self) -> _Messages[M]:
        return self

    async def __anext__(self) -> Envelope[M]:
        env = await self._ctx.next_message()
        if env is None:
            raise StopAsyncIteration
        return env


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
