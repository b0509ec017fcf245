"""Progress a person can read, for the CLI and for MCP progress notifications alike.

An ask reports its phase many times a second while a page changes (a thinking timer ticks, text streams). Said as
it comes, that is a flood ("[chatgpt] thinking" fifty times in a 50 s think), and a timer that restarts with each
report never says that time passes. `pace` says each change once, and while nothing changes, a heartbeat every
`HEARTBEAT_S` with the time since the start: "… — still going, 1m 20s".
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Hashable
from typing import TypeVar

import trio

T = TypeVar("T")

HEARTBEAT_S = 20.0  # a silent page (a long think) still says this often that it is going, and for how long


def took(seconds: float) -> str:
    """45s, 12m 30s."""
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def heartbeat(line: str, elapsed_s: float) -> str:
    """The last progress line again, for a page that shows nothing new for a while (a long think): still going."""
    return f"{'; '.join(line.splitlines()) or 'working'} — still going, {took(elapsed_s)}"


_IDLE = object()  # the group of the heartbeat before anything was reported


async def pace(items: trio.MemoryReceiveChannel[T], say: Callable[[str], Awaitable[bool]], *,
               group: Callable[[T], Hashable], key: Callable[[T], Hashable], line: Callable[[T], str],
               every_s: float = HEARTBEAT_S, idle: str | None = None) -> None:
    """Say `line(item)` when an item's `key` differs from the last one said for its `group` (a provider); while a
    group says nothing new for `every_s`, say its latest line as a heartbeat with the elapsed time. `idle`: the
    heartbeat's line before any item came (None: silence). Ends when `items` is closed, or when `say` returns
    False (the listener went away)."""
    started = trio.current_time()
    said_key: dict[Hashable, Hashable] = {}
    latest: dict[Hashable, str] = {}
    said_at: dict[Hashable, float] = {}
    if idle is not None:
        latest[_IDLE], said_at[_IDLE] = idle, started
    while True:
        due = min(said_at.values(), default=math.inf) + every_s
        with trio.move_on_at(due):
            try:
                item = await items.receive()
            except trio.EndOfChannel:
                return
            g, k = group(item), key(item)
            said_at.pop(_IDLE, None)
            latest.pop(_IDLE, None)
            latest[g] = line(item)
            if g in said_key and said_key[g] == k:
                continue  # the same again: the heartbeat says it is still going
            said_key[g], said_at[g] = k, trio.current_time()
            if not await say(latest[g]):
                return
            continue
        now = trio.current_time()
        for g, at in list(said_at.items()):
            if now - at >= every_s:
                said_at[g] = now
                if not await say(heartbeat(latest[g], now - started)):
                    return
