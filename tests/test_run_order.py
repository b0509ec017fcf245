"""The planned run order (tests/conftest.py `run_order`): longest first, and the tests that mostly wait go out a few
at a time beside the busy ones from the start, not in a row of their own."""

from __future__ import annotations

import heapq
from typing import Any

import attrs

from .conftest import run_order


@attrs.define
class FakeItem:
    nodeid: str

    def iter_markers(self) -> list[Any]:
        return []


def simulate(order: list[FakeItem], known: dict[str, tuple[float, float | None]], n: int) -> list[tuple[float, str]]:
    """When each test starts, handing tests out as xdist does (one at a time, to the first free worker)."""
    free = [(0.0, w) for w in range(n)]
    starts = []
    for item in order:
        now, w = heapq.heappop(free)
        starts.append((now, item.nodeid))
        heapq.heappush(free, (now + known[item.nodeid][0], w))
    return starts


def test_waiting_tests_are_spread_and_the_longest_go_first(monkeypatch: Any) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    known: dict[str, tuple[float, float | None]] = {}
    for i in range(8):  # long tests that mostly wait (a tenth of a core)
        known[f"wait{i}"] = (30.0 + i, 3.0 + i / 10)
    for i in range(60):  # busy end-to-end tests
        known[f"busy{i}"] = (5.0 + i / 10, 2.5)
    items = [FakeItem(k) for k in sorted(known)]
    n = 6
    order = run_order(items, known, n)  # type: ignore[arg-type]
    assert sorted(i.nodeid for i in order) == sorted(known)
    starts = simulate(order, known, n)
    at_once = n - 2 - 1
    for t, _ in starts:
        running_waits = [s for s, k in starts if k.startswith("wait") and s <= t < s + known[k][0]]
        assert len(running_waits) <= at_once
    first = [k for _, k in starts[:n]]
    assert sum(k.startswith("wait") for k in first) == at_once  # they start at once, a few of them
    assert first[at_once:] == ["busy59", "busy58", "busy57"][: n - at_once]  # the rest: longest busy ones
    waits = [k for _, k in starts if k.startswith("wait")]
    assert waits == sorted(waits, key=lambda k: -known[k][0])  # longest first among them too


def test_without_cpu_figures_long_tests_count_as_waiting(monkeypatch: Any) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    known: dict[str, tuple[float, float | None]] = {"long": (40.0, None), "short": (3.0, None), "mid": (8.0, 4.0)}
    order = run_order([FakeItem(k) for k in known], known, 4)  # type: ignore[arg-type]
    assert [i.nodeid for i in order] == ["long", "mid", "short"]
