"""Ownership follows the browser in use (issue 25.1, 25.4, 25.5), end to end: a dedicated browser an earlier run left
open on ai-bridge's profile is attached to and tracked like one launched in this run — handed over when the user's
Chrome connects (the two used to take turns every 30 s, each switch failing asks with `extension_disconnected`),
forgotten when it exits (bridge_status used to show `ownership: attached` with its dead pid) — and bridge_status says
why the link last dropped and whether the connected extension is current.

Real `ai-bridge serve`, real headless Chromium with our extension; both "browsers" are started by the test
(tests/user_chrome.py): one on the bridge's dedicated profile (as an earlier ai-bridge would have left it), one on a
profile of its own (the user's Chrome).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from .conftest import process_alive
from .e2e import open_bridge, requires_chromium
from .fakesites.fixture import FakeSites
from .test_e2e_link import EXT_VERSION, FAST, ask, eventually, linked_status
from .user_chrome import open_user_chrome

pytestmark = [requires_chromium, pytest.mark.chromium,
              # The test's own DevTools client of a browser that goes away under it (closed by ai-bridge, or by the
              # "user") leaves its socket to the garbage collector: a warning about the instrument, not the product.
              pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")]


async def test_a_browser_left_on_the_profile_is_attached_and_handed_over_not_taken_in_turns(
        sites: FakeSites, tmp_path: Path) -> None:
    sites.chatgpt.set_next(**FAST)
    profile = tmp_path / "profile"
    async with open_user_chrome(sites, profile) as left_open, \
            open_bridge(sites, tmp_path, profile_dir=profile, extra=("--browser", "auto")) as b:
        await ask(b, "chatgpt", "What is 6 plus 1?")
        first = await linked_status(b)
        with trio.move_on_after(5):  # which browser holds the link is told shortly after it connects
            while first["browser"]["ownership"] != "attached":
                await trio.sleep(0.1)
                first = await b.status()
        async with open_user_chrome(sites, tmp_path / "users-chrome") as users:
            # Until ai-bridge closed the browser it attached to, or that browser took the link back (the turn-taking:
            # a displaced extension comes back after its 30 s back-off, and each switch fails the asks in flight).
            links: list[float] = []
            with trio.fail_after(45):
                while True:
                    st = await b.status()
                    since = st["extension"]["since"]
                    if since is not None and (not links or links[-1] != since):
                        links.append(since)
                    assert len(links) <= 2, f"the two browsers took turns: links since {links}"
                    if st["browser"]["recovery"]["handovers"] == 1 and not process_alive(left_open.pid):
                        break
                    await trio.sleep(0.1)
            await trio.sleep(3)
            later = await b.status()
            await ask(b, "chatgpt", "And 6 plus 2?")
            targets = await users.dt.send("Target.getTargets")
        log = b.log_text()
    assert first["browser"]["ownership"] == "attached" and first["browser"]["pid"] == left_open.pid
    assert first["extension"]["extensionVersion"] == EXT_VERSION and first["extension"]["stale"] is False
    assert st["browser"]["ownership"] == "user" and st["browser"]["pid"] is None
    assert later["extension"]["since"] == st["extension"]["since"]  # one link, nobody took it back
    assert any(t["url"].startswith("https://chatgpt.com/") for t in targets["targetInfos"])  # asked in the user's
    assert f"closing the browser ai-bridge attached to (pid {left_open.pid})" in log


async def test_the_attached_browser_closing_clears_the_status_and_names_the_cause(
        sites: FakeSites, tmp_path: Path) -> None:
    sites.gemini.set_next(**FAST)
    profile = tmp_path / "profile"
    async with open_user_chrome(sites, profile) as left_open, open_bridge(sites, tmp_path, profile_dir=profile) as b:
        await ask(b, "gemini", "What is 5 times 5?")
        before = (await linked_status(b))["browser"]
        with trio.move_on_after(5):  # the user closes it (its DevTools answer may not come: it is gone)
            await left_open.dt.send("Browser.close")

        async def cleared() -> dict[str, Any] | None:
            st = (await b.status())["browser"]
            return st if st["ownership"] is None and st["lastDrop"] else None

        after = await eventually(cleared, 15, "ownership cleared and the drop explained")
    assert before["ownership"] == "attached" and before["pid"] == left_open.pid
    assert after["pid"] is None and after["state"] == "degraded"
    assert after["lastDrop"]["cause"] == "browser closed", after["lastDrop"]
    assert f"(pid {left_open.pid}) exited" in after["lastDrop"]["detail"]
