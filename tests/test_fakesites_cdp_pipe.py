"""tests/cdp_pipe.py: CDP over --remote-debugging-pipe (framing, concurrency, events, errors, shutdown)."""

from __future__ import annotations

import os

import pytest
import trio

from .cdp_pipe import CHROMIUM, CDPConnectionClosed, CDPError, JavaScriptError, open_chromium
from .conftest import missing_tool

pytestmark = [
    pytest.mark.chromium,
    pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=missing_tool(f"Chromium not found at {CHROMIUM}")),
]


@pytest.fixture
async def browser():
    async with open_chromium() as b:
        yield b


async def test_raw_target_attach_and_session_commands(browser):
    version = await browser.send("Browser.getVersion")
    assert "Chrome" in version["product"] or "Chromium" in version["product"]
    target = await browser.send("Target.createTarget", {"url": "about:blank"})
    attached = await browser.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
    sid = attached["sessionId"]
    res = await browser.conn.send("Runtime.evaluate", {"expression": "6 * 7", "returnByValue": True},
                                  session_id=sid)
    assert res["result"]["value"] == 42
    # a session command without sessionId goes to the browser target, which has no Runtime
    with pytest.raises(CDPError):
        await browser.send("Runtime.evaluate", {"expression": "1"})


async def test_many_concurrent_commands_on_two_sessions(browser):
    a = await browser.new_page("data:text/html,<title>a</title>")
    b = await browser.new_page("data:text/html,<title>b</title>")
    results: dict[tuple[str, int], object] = {}

    async def one(page, name, i):
        results[(name, i)] = await page.evaluate(f"document.title + ':' + {i} * 3")

    async with trio.open_nursery() as nursery:
        for i in range(300):
            nursery.start_soon(one, a, "a", i)
            nursery.start_soon(one, b, "b", i)
    assert len(results) == 600
    assert all(results[(n, i)] == f"{n}:{i * 3}" for n, i in results)


async def test_large_messages_round_trip(browser):
    page = await browser.new_page()
    big = await page.evaluate("'x'.repeat(3 * 1024 * 1024) + 'é'")   # larger than one pipe read
    assert len(big) == 3 * 1024 * 1024 + 1 and big.endswith("é")


async def test_events_are_routed_by_session_and_method(browser):
    a = await browser.new_page()
    b = await browser.new_page()
    async with a.listen("Runtime.consoleAPICalled") as a_events, \
            b.listen("Runtime.consoleAPICalled") as b_events, \
            browser.conn.listen() as everything:
        await b.evaluate("console.log('from b')")
        await a.evaluate("console.log('from a'); console.log('again a')")
        with trio.fail_after(5):
            first = await a_events.receive()
            second = await a_events.receive()
            other = await b_events.receive()
        assert [e["params"]["args"][0]["value"] for e in (first, second)] == ["from a", "again a"]
        assert first["sessionId"] == a.session_id
        assert other["params"]["args"][0]["value"] == "from b"
        seen = []
        while len(seen) < 3:
            ev = everything.receive_nowait()
            if ev["method"] == "Runtime.consoleAPICalled":
                seen.append(ev["sessionId"])
        assert sorted(seen) == sorted([a.session_id, a.session_id, b.session_id])


async def test_wait_event_with_predicate(browser):
    page = await browser.new_page()
    async with trio.open_nursery() as nursery:
        got = []

        async def waiter():
            got.append(await page.wait_event(
                "Runtime.consoleAPICalled", predicate=lambda m: m["params"]["args"][0].get("value") == "two"))

        nursery.start_soon(waiter)
        await trio.sleep(0.05)
        await page.evaluate("console.log('one'); console.log('two')")
    assert got[0]["params"]["args"][0]["value"] == "two"


async def test_errors(browser):
    page = await browser.new_page()
    with pytest.raises(CDPError) as err:
        await page.send("No.suchMethod")
    assert err.value.code == -32601
    with pytest.raises(JavaScriptError, match="boom"):
        await page.evaluate("(() => { throw new Error('boom') })()")
    assert await page.evaluate("undefined") is None
    with pytest.raises(trio.TooSlowError):
        await page.evaluate("new Promise(() => {})", await_promise=True, timeout=0.2)


async def test_browser_exit_fails_pending_commands_and_ends_listeners():
    async with open_chromium() as b:
        page = await b.new_page()
        pid, udd = b.pid, b.user_data_dir
        async with page.listen() as events:
            async with trio.open_nursery() as nursery:
                outcome = []

                async def pending():
                    try:
                        await page.evaluate("new Promise(() => {})", await_promise=True)
                    except CDPConnectionClosed:
                        outcome.append("closed")

                nursery.start_soon(pending)
                await trio.sleep(0.1)
                await b.send("Browser.close")
            assert outcome == ["closed"]
            with trio.fail_after(5):
                async for _ in events:
                    pass   # the channel ends instead of hanging
        with pytest.raises(CDPConnectionClosed):
            await page.evaluate("1")
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not os.path.exists(udd)
