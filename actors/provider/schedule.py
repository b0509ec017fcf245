"""Which of a provider's asks run now, and in what order the others wait (issue 38). No I/O and no clock: the
actor's tasks join, wait for their grant and leave; this decides.

- Up to `cap` asks run at once, each in a tab of its own (the pool, pool.py).
- Asks that would meet in one conversation run one after another, in arrival order: the site answers one question
  at a time in a conversation, and a second tab typing into it would count the other's turns as its own. So do
  asks that continue a project's kept conversation after an earlier ask that may change it (a new chat the project
  keeps, or an ask in that conversation).
- Beyond the cap, waiting asks take turns by requester (`client`): the one served least recently goes next, so one
  client's burst of asks never starves another's. Within a requester, arrival order.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import attrs
import trio


@attrs.frozen
class Lane:
    """Where an ask's question goes, for the order asks keep."""

    reads: str | None = None  # continues this project's kept conversation
    writes: str | None = None  # the project whose kept conversation it sets when it ends (its thread, a new chat)
    url: str | None = None  # the conversation it goes to, named up front (conversation_url, a reattached job)


@attrs.define(eq=False)
class Ticket:
    seq: int
    client: str
    lane: Lane
    on_place: Callable[[int], None]  # its place in line changed (1 = next); called synchronously, must not raise
    granted: trio.Event = attrs.Factory(trio.Event)
    place: int = 0
    url: str | None = None  # the conversation it is in, once known while it runs (a new chat's URL shows late)


def _key_url(url: str | None) -> str | None:
    """A conversation URL compared without its query or fragment (`?model=…` names no other conversation)."""
    return url.split("#", 1)[0].split("?", 1)[0].rstrip("/") if url else None


class Schedule:
    """The running and the waiting asks of one provider."""

    def __init__(self, cap: int, kept_url: Callable[[str], str | None]) -> None:
        if cap < 1:
            raise ValueError("a pool needs at least one tab")
        self.cap = cap
        self.kept_url = kept_url  # a project's kept conversation as the actor last knew it
        self.running: list[Ticket] = []
        self.waiting: list[Ticket] = []
        self._seq = itertools.count(1)
        self._grants = itertools.count()
        self._served: dict[str, int] = {}  # client → when it was last granted (a grant counter)

    def join(self, client: str, lane: Lane, on_place: Callable[[int], None] = lambda _: None) -> Ticket:
        ticket = Ticket(next(self._seq), client, lane, on_place)
        self.waiting.append(ticket)
        self._grant()
        return ticket

    def leave(self, ticket: Ticket) -> None:
        """The ask ended, or gave up while it waited (cancelled, its deadline): its slot goes to the next."""
        if ticket in self.running:
            self.running.remove(ticket)
        elif ticket in self.waiting:
            self.waiting.remove(ticket)
        else:
            return
        self._grant()

    def moved(self, ticket: Ticket, url: str | None) -> None:
        """A running ask's conversation is known now: an ask waiting for that conversation keeps waiting."""
        ticket.url = url

    def url_of(self, t: Ticket) -> str | None:
        if t.lane.url:
            return _key_url(t.lane.url)
        if t.url:
            return _key_url(t.url)
        return _key_url(self.kept_url(t.lane.reads)) if t.lane.reads is not None else None

    def blocks(self, first: Ticket, then: Ticket) -> bool:
        """Must `then` wait until `first` (running, or ahead of it in line) is done?"""
        if then.lane.reads is not None and then.lane.reads in (first.lane.writes, first.lane.reads):
            return True
        a, b = self.url_of(first), self.url_of(then)
        return a is not None and a == b

    def eligible(self, t: Ticket) -> bool:
        return not any(self.blocks(x, t) for x in self.running) and not any(
            self.blocks(x, t) for x in self.waiting if x.seq < t.seq)

    def _turn(self, t: Ticket, served: dict[str, int]) -> tuple[int, int]:
        return served.get(t.client, -1), t.seq

    def _grant(self) -> None:
        while len(self.running) < self.cap:
            ready = [t for t in self.waiting if self.eligible(t)]
            if not ready:
                break
            t = min(ready, key=lambda w: self._turn(w, self._served))
            self.waiting.remove(t)
            self.running.append(t)
            self._served[t.client] = next(self._grants)
            t.place = 0
            t.granted.set()
        self._places()

    def _places(self) -> None:
        """Each waiting ask's place in line, as the turns would go if every tab freed at once."""
        served = dict(self._served)
        stamp = itertools.count(next(self._grants))
        line = sorted(self.waiting, key=lambda w: w.seq)
        place = 0
        while line:
            t = min(line, key=lambda w: self._turn(w, served))
            line.remove(t)
            served[t.client] = next(stamp)
            place += 1
            if t.place != place:
                t.place = place
                t.on_place(place)

    async def wait(self, ticket: Ticket) -> None:
        """Until the ticket may run. The caller leaves (finally) whatever happens."""
        await ticket.granted.wait()
