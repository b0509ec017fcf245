"""The extension's idle behaviour in the user's own Chrome, in pytest (before, only the script
tests/ext_harness/smoke_extension.py tried it): Chrome stops an MV3 service worker after 30 s without traffic; a
connected worker's link traffic keeps it alive; a stopped worker comes back on its keep-alive alarm (every 30 s), or
at once when the user opens the popup.

Real `ai-bridge serve --browser connect`, real Chromium with our real extension, started by the test as the user's
Chrome (ai-bridge has no channel to it). Chrome's own means stop the worker (DevTools Target.closeTarget, what Chrome
does to an idle worker) instead of waiting where the test is not about the wait itself. The ones that must wait for
Chrome's 30 s timers are marked `slow`; each stays under 40 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from .e2e import Bridge, open_bridge, requires_chromium
from .fakesites.fixture import FakeSites
from .test_e2e_link import eventually, linked_status
from .user_chrome import UserChrome, open_user_chrome

pytestmark = [requires_chromium, pytest.mark.chromium]

CONNECT = ("--browser", "connect")


async def link_down(b: Bridge, timeout: float = 5) -> None:
    async def probe() -> bool:
        return not (await b.status())["extension"]["connected"]

    await eventually(probe, timeout, "the link dropped", 0.02)


async def connected_user(b: Bridge, chrome: UserChrome) -> str:
    st = await linked_status(b)
    assert st["browser"]["ownership"] == "user" and st["browser"]["pid"] is None  # nothing launched
    worker = await chrome.worker()
    assert worker is not None
    return str(worker["targetId"])


async def test_popup_wakes_a_stopped_worker_at_once(sites: FakeSites, tmp_path: Path) -> None:
    async with open_user_chrome(sites, tmp_path / "users-chrome") as chrome, \
            open_bridge(sites, tmp_path, extra=CONNECT) as b:
        old = await connected_user(b, chrome)
        due = await chrome.quiet_alarm()  # the keep-alive alarm's next firing, not in the next 15 s
        await chrome.stop_worker()
        await link_down(b)
        assert await chrome.worker() is None  # nothing woke it so far: no tab event, no alarm
        await chrome.click_toolbar_icon()
        await linked_status(b, timeout=10)
        new = await chrome.worker()
        due_after, _ = await chrome.alarm()
    assert new is not None and new["targetId"] != old
    assert due_after == due  # the alarm has not fired since: the popup woke the worker, not the alarm


@pytest.mark.slow
async def test_keep_alive_alarm_brings_a_stopped_worker_back(sites: FakeSites, tmp_path: Path) -> None:
    """Nobody touches the browser after its worker stopped: the alarm (period 30 s) wakes a fresh worker, whose
    module evaluation restarts discovery."""
    async with open_user_chrome(sites, tmp_path / "users-chrome") as chrome, \
            open_bridge(sites, tmp_path, extra=CONNECT) as b:
        old = await connected_user(b, chrome)
        due, _ = await chrome.alarm()
        await chrome.stop_worker()
        await link_down(b)
        st = await linked_status(b, timeout=38)  # within one period (and the link's start-up)
        new = await chrome.worker()
        due_after, _ = await chrome.alarm()
    assert new is not None and new["targetId"] != old
    assert due_after > due  # the alarm fired meanwhile (Chrome moved it on by its period) ...
    assert st["extension"]["since"] * 1000 >= due  # ... and the link came back after it was due, not before


@pytest.mark.slow
async def test_a_connected_worker_outlives_the_30s_idle(sites: FakeSites, tmp_path: Path) -> None:
    """32 s without a single ask (Chrome idles a worker out at 30 s): the worker and its connection live on, the same
    worker and the same socket (the link's traffic, the extension's 20 s pings and the server's 15 s ones, counts
    as activity for Chrome)."""
    async with open_user_chrome(sites, tmp_path / "users-chrome") as chrome, \
            open_bridge(sites, tmp_path, extra=CONNECT) as b:
        old = await connected_user(b, chrome)
        since = (await b.status())["extension"]["since"]
        dropped_at: float | None = None
        t0 = trio.current_time()
        while trio.current_time() - t0 < 32:
            ext = (await b.status())["extension"]
            if dropped_at is None and (not ext["connected"] or ext["since"] != since):
                dropped_at = trio.current_time() - t0
            await trio.sleep(0.5)
        worker = await chrome.worker()
    assert dropped_at is None, f"the link dropped after {dropped_at:.1f}s of idle"
    assert worker is not None and worker["targetId"] == old
