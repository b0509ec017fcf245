"""The planned run order (tests/conftest.py `run_order`): longest first, but while tests that mostly wait leave
cores free, the next test out is one that keeps a core busy, so the cores do not idle behind the waits."""

from __future__ import annotations

from typing import Any

import attrs

from .conftest import UNCOUNTED_CPU, planned_cost, run_order


@attrs.define
class Mark:
    name: str


@attrs.define
class FakeItem:
    nodeid: str
    marks: tuple[str, ...] = ()

    def iter_markers(self) -> list[Mark]:
        return [Mark(m) for m in self.marks]


def simulate(order: list[Any], known: dict[str, tuple[float, float | None]], n: int,
             cores: int = 2) -> tuple[float, float]:
    """The run as the plan models it, handed out as xdist does (one at a time, to the first free worker): each test
    needs its CPU, spread over its wall time; when the running ones ask for more than the cores, all slow down
    alike. Returns (when the run ends, core-seconds left idle)."""
    pending = list(order)
    running: list[list[float]] = []  # [wall time left at full speed, share]
    now = idle = 0.0
    while pending or running:
        while pending and len(running) < n:
            running.append(list(planned_cost(pending.pop(0), known)))
        demand = sum(s for _, s in running)
        speed = min(1.0, cores / demand)
        step = min(w for w, _ in running) / speed
        idle += max(0.0, cores - demand) * step
        now += step
        for r in running:
            r[0] -= step * speed
        running = [r for r in running if r[0] > 1e-9]
    return now, idle


def suite() -> dict[str, tuple[float, float | None]]:
    known: dict[str, tuple[float, float | None]] = {}
    for i in range(6):  # long tests that mostly wait on a timer (a twentieth of a core)
        known[f"wait{i}"] = (40.0 + i, 1.2)
    for i in range(80):  # end-to-end tests: a server, a browser, a fake site taking turns
        known[f"e2e{i}"] = (8.0 + i / 10, 2.2)
    for i in range(30):  # heavier ones
        known[f"heavy{i}"] = (6.0, 3.5)
    for i in range(400):  # unit tests
        known[f"unit{i}"] = (0.05, 0.05)
    return known


def test_the_cores_do_not_idle_behind_tests_that_wait(monkeypatch: Any) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    known = suite()
    items = [FakeItem(k) for k in sorted(known)]
    order = run_order(items, known, 7)  # type: ignore[arg-type]
    assert sorted(i.nodeid for i in order) == sorted(known)
    planned_end, planned_idle = simulate(order, known, 7)
    plain = sorted(items, key=lambda i: -known[i.nodeid][0])  # longest first, and nothing else
    plain_end, plain_idle = simulate(plain, known, 7)
    assert planned_idle < plain_idle / 4, (planned_idle, plain_idle)
    assert planned_end < plain_end
    # The waits still go out early (the run must not end with one), the longest of them first.
    waits = [i.nodeid for i in order if i.nodeid.startswith("wait")]
    assert waits == [f"wait{i}" for i in range(5, -1, -1)]
    ids = [i.nodeid for i in order]
    assert max(ids.index(w) for w in waits) < len(order) // 3


def test_a_test_without_figures_is_guessed_by_its_kind() -> None:
    known: dict[str, tuple[float, float | None]] = {"long": (40.0, None), "mid": (8.0, 4.0)}
    assert planned_cost(FakeItem("mid"), known) == (8.0, UNCOUNTED_CPU * 4.0 / 8.0)  # type: ignore[arg-type]
    assert planned_cost(FakeItem("long", ("slow",)), known) == (40.0, 0.1)  # type: ignore[arg-type]
    assert planned_cost(FakeItem("new", ("chromium",)), known) == (5.0, 0.4)  # type: ignore[arg-type]
    assert planned_cost(FakeItem("unit"), known) == (0.05, 1.0)  # type: ignore[arg-type]


def test_a_group_goes_out_whole_where_the_plan_puts_it(monkeypatch: Any) -> None:
    """Tests that share a bridge (`shared_groups`) are planned as one: consecutive in the order, as one worker runs
    them, with the group's start counted once."""
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    known = suite()
    for i in range(12):
        known[f"shared{i}"] = (3.0, 0.3)
    items = [FakeItem(k) for k in sorted(known)]
    groups = {id(i): "g" + str(int(i.nodeid[6:]) % 2) for i in items if i.nodeid.startswith("shared")}
    order = [i.nodeid for i in run_order(items, known, 7, groups)]  # type: ignore[arg-type]
    assert sorted(order) == sorted(known)
    for g in ("g0", "g1"):
        at = [n for n, nodeid in enumerate(order) if nodeid.startswith("shared") and int(nodeid[6:]) % 2 == int(g[1])]
        assert at == list(range(at[0], at[0] + 6)), (g, at)
    # 6 x 3 s and a start: longer than any single end-to-end test, so out before them.
    assert order.index("shared0") < order.index("e2e79") and order.index("shared1") < order.index("e2e79")
