"""tests/shared_chromium.py: the browser tests share leaves nothing of one test to the next and survives a crash."""

from __future__ import annotations

import os
import signal

import pytest
import trio

from .cdp_pipe import CHROMIUM
from .conftest import missing_tool
from .shared_chromium import SharedChromium

pytestmark = [
    pytest.mark.chromium,
    pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=missing_tool(f"Chromium not found at {CHROMIUM}")),
]


async def pages(shared: SharedChromium) -> list[tuple[str, str]]:
    async with shared.browser() as b:
        infos = (await b.send("Target.getTargets"))["targetInfos"]
        return [(t["url"], t.get("browserContextId")) for t in infos if t["type"] == "page"]


async def test_pages_and_cookies_go_with_the_test_and_a_dead_browser_is_replaced():
    shared = SharedChromium()   # its own, not the session's: this test kills it
    try:
        start = await pages(shared)
        async with shared.browser() as b:   # pages left open, a cookie set
            page = await b.new_page("data:text/html,<title>one</title>")
            await b.new_page()
            await b.send("Storage.setCookies", {"browserContextId": b.browser_context_id, "cookies": [
                {"name": "left", "value": "over", "domain": "chatgpt.com", "path": "/"}]})
            info = await b.send("Target.getTargetInfo", {"targetId": page.target_id})
            assert info["targetInfo"]["browserContextId"] == b.browser_context_id
        assert await pages(shared) == start
        async with shared.browser() as b:
            got = await b.send("Storage.getCookies", {"browserContextId": b.browser_context_id})
            assert got["cookies"] == []
            first_pid, first_dir = b.pid, b.user_data_dir

        assert shared.starts == 1
        os.killpg(first_pid, signal.SIGKILL)
        with trio.fail_after(5):
            while shared.alive():
                await trio.sleep(0.02)
        async with shared.browser() as b:
            page = await b.new_page("data:text/html,<title>two</title>")
            assert await page.evaluate("document.title") == "two"
            assert b.pid != first_pid and shared.starts == 2
        assert not os.path.exists(first_dir)
    finally:
        shared.stop()
    assert not os.path.exists(b.user_data_dir)
    with pytest.raises(ProcessLookupError):
        os.kill(b.pid, 0)
