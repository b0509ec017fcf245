"""What auto mode's first ask costs (issue 25.6), measured end to end and printed (no wall-clock asserts):

- the user's Chrome open, its extension awake;
- the user's Chrome open, its extension's worker asleep, the user's Chrome seen lately (the state dir's
  users-chrome.json): the ask waits for it (up to its 30 s alarm) instead of launching a browser that is not logged in;
- the same sleeping extension with no record: ai-bridge launches its own browser after `extension_wait_s` (2.5 s).

Run with ``-s`` to see the figures. Real `ai-bridge serve`, real headless Chromium, the fake sites. Measured here
(2 loaded cores, November 2026): awake 1.34 s; asleep and seen lately 30.09 s (its alarm, in the user's logged-in
Chrome); asleep and never seen 4.36 s (2.5 s, then a launched browser that a real user would not be logged in to).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from actors.browser.users_chrome import write_users_chrome

from .e2e import open_bridge, requires_chromium
from .fakesites.fixture import FakeSites
from .test_e2e_link import FAST, ask
from .user_chrome import open_user_chrome

pytestmark = [requires_chromium, pytest.mark.chromium]


@pytest.mark.parametrize("case", ["awake", "asleep-seen-lately", "asleep-never-seen"])
async def test_first_ask_cost_in_auto_mode(sites: FakeSites, tmp_path: Path, case: str) -> None:
    sites.chatgpt.set_next(**FAST)
    async with open_user_chrome(sites, tmp_path / "users-chrome") as chrome:
        if case != "asleep-never-seen":
            write_users_chrome(tmp_path / "state", time.time() - 3 * 86400)
        if case != "awake":
            await chrome.stop_worker()
        async with open_bridge(sites, tmp_path, extra=("--browser", "auto")) as b:
            t0 = time.monotonic()
            sc = await ask(b, "chatgpt", "What is 2 plus 5?")
            took = time.monotonic() - t0
            st = (await b.status())["browser"]
    print(f"\nfirst ask, auto mode, {case}: {took:.2f} s (browser: {st['ownership']})")
    assert sc["answer"]
    assert st["ownership"] == ("launched" if case == "asleep-never-seen" else "user")
