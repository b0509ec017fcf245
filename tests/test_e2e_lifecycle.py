"""The browser lifecycle end to end (seed 004, issues 9 and 15): a stopped extension worker woken at once, a browser
that dies at start, exits or is still shutting down, a browser already running on the profile, and `auto` mode with
the user's own Chrome dropping, coming back and taking over.

Real `ai-bridge serve` (tests/e2e.py), real headless Chromium with our real extension, the fake sites. The user's
Chrome is a second real Chromium the test starts itself (tests/user_chrome.py). Test-side instruments act only as a
user, or as Chrome itself would: close the browser, stop the extension's idle worker, click the toolbar icon.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.protocol.browser import BROWSER, BrowserPhase, BrowserProgress, BrowserState, BrowserStatus, EnsureBrowser
from supervisor.app import open_bridge as open_actors
from supervisor.config import load

from .conftest import process_alive
from .e2e import CHROMIUM, Bridge, open_bridge, requires_chromium
from .fakesites.fixture import FakeSites
from .test_e2e_link import FAST, ask, eventually, linked_status
from .user_chrome import open_user_chrome

pytestmark = [requires_chromium, pytest.mark.chromium]


async def browser_status(b: Bridge) -> dict[str, Any]:
    return (await b.status())["browser"]  # type: ignore[no-any-return]


async def state_is(b: Bridge, state: str, timeout: float = 10) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        st = await browser_status(b)
        return st if st["state"] == state else None

    return await eventually(probe, timeout, f"browser state {state}", 0.02)  # type: ignore[no-any-return]


# --- 9.4: a stopped worker in the browser we launched costs nothing --------------------------------------------------


async def test_stopped_worker_of_our_browser_is_woken_at_once(sites: FakeSites, tmp_path: Path) -> None:
    sites.chatgpt.set_next(**FAST)
    async with open_bridge(sites, tmp_path) as b, b.devtools() as dt:
        await ask(b, "chatgpt", "What is 3 plus 4?")
        before = await linked_status(b)
        targets = (await dt.send("Target.getTargets"))["targetInfos"]
        worker = next(t for t in targets if t["type"] == "service_worker")
        # What Chrome does to an idle worker: stop it (its WebSocket dies with it).
        assert (await dt.send("Target.closeTarget", {"targetId": worker["targetId"]}))["success"]

        async def link_changed() -> bool:  # its socket closed (an ask racing that close is the provider's retry)
            ext = (await b.status())["extension"]
            return not ext["connected"] or ext["since"] != before["extension"]["since"]

        await eventually(link_changed, 5, "the old link closed", 0.01)
        await ask(b, "chatgpt", "And 3 plus 5?")  # how soon the wake comes: test_browser_actor, on a mock clock

        async def settled() -> dict[str, Any] | None:
            # Chrome sometimes starts the worker again by itself at once (an event for the extension), sooner than
            # the test can see it: then there is nothing to wake, and the browser actor says so (0.5 s after the
            # stop). Otherwise it must have woken it.
            st = await linked_status(b)
            by_itself = "came back by itself" in b.log_text()
            return st if by_itself or st["browser"]["recovery"]["workerWakes"] >= 1 else None

        after = await eventually(settled, 10, "the worker woken, or back by itself", 0.05)
        log = b.log_text()
    assert after["extension"]["since"] != before["extension"]["since"]  # a new connection, from a new worker
    assert after["browser"]["pid"] == before["browser"]["pid"]
    if "came back by itself" not in log:
        assert "woke the extension's service worker" in log, log


# --- 9.5: a browser that dies at start --------------------------------------------------------------------------------


async def test_browser_dying_at_start_is_a_typed_error_with_its_own_line(sites: FakeSites, tmp_path: Path) -> None:
    """A headed browser on a machine without a display exits at once: the ask fails within seconds, with the
    browser's own words and the fix, and the status does not stay `launching`."""
    env = {"DISPLAY": "", "WAYLAND_DISPLAY": ""}
    async with open_bridge(sites, tmp_path, headless=False, env=env) as b:
        res = await b.call("ask_chatgpt_web", {"question": "What is 1 plus 1?"})
        st = await browser_status(b)
    # The browser's exit ended the ask (its own words and exit code), not a wait for its extension.
    assert res.is_error, res.content[0].text
    error = res.structured_content["error"]
    assert error["code"] == "browser_launch_failed"
    assert "Missing X server or $DISPLAY" in error["message"] and "exit code" in error["message"]
    assert "--headless" in error["hint"]
    assert st["state"] == "degraded" and "Missing X server" in st["lastError"]
    assert sites.chatgpt.log() == []


# --- 15.12: recovery --------------------------------------------------------------------------------------------------


async def test_browser_exits_and_the_next_ask_relaunches_it(sites: FakeSites, tmp_path: Path) -> None:
    sites.chatgpt.set_next(**FAST)
    async with open_bridge(sites, tmp_path) as b:
        sc = await ask(b, "chatgpt", "What is 5 plus 6?")
        first = await browser_status(b)
        os.killpg(first["pid"], signal.SIGKILL)  # a crash (or the user quitting it): gone at once

        async def reaped() -> dict[str, Any] | None:
            # The link's close can be seen a moment before the process is reaped: `degraded` with the old pid is
            # then true for that moment. What must follow is degraded with nothing left of the old browser.
            st = await browser_status(b)
            return st if st["state"] == "degraded" and st["pid"] is None else None

        degraded = await eventually(reaped, 10, "degraded with the old browser gone", 0.02)
        sc2 = await ask(b, "chatgpt", "And 5 plus 7?")
        second = (await linked_status(b))["browser"]
    assert degraded["pid"] is None and degraded["ownership"] is None
    assert second["state"] == "connected" and second["ownership"] == "launched"
    assert second["pid"] != first["pid"] and not process_alive(first["pid"])
    assert second["recovery"]["attempts"] == 1 and second["recovery"]["relaunched"] == 1
    assert second["lastRecovery"] == "relaunched"
    assert second["launchToConnectedS"] > 0  # of the new browser
    assert sc2["url"] == sc["url"]  # the conversation goes on in the new browser


# A browser whose main process lingers after its windows closed, as a real Chrome does while it writes a big
# profile: Chromium itself, under a parent process that stays a while after it. The parent either closes the
# debugging pipe at once (what Chrome does as it shuts down) or keeps it open and silent until it exits.
# The browser's closing time starts when the test has seen it closing and is about to ask (the file `go`): on a
# loaded machine, seeing the state can take longer than a short closing time.
SLOW_CLOSER = """#!/bin/sh
if [ "$1" = "--version" ]; then exec {chromium} --version; fi
{chromium} "$@"
{close_pipe}
i=0
while [ ! -e {go} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
sleep {linger}
"""


# (5 s of closing: under the 8 s grace)
@pytest.mark.parametrize(("linger", "pipe"), [(5, "closed"), (60, "closed"), (6, "silent")],
                         ids=["finishes", "hangs", "silent-pipe"])
async def test_ask_while_the_browser_is_still_shutting_down(sites: FakeSites, tmp_path: Path, linger: int,
                                                            pipe: str) -> None:
    sites.chatgpt.set_next(**FAST)
    wrapper = tmp_path / "slow-closing-chromium"
    go = tmp_path / "go"
    wrapper.write_text(SLOW_CLOSER.format(chromium=CHROMIUM, linger=linger, go=go,
                                          close_pipe="exec 3>&- 4>&-" if pipe == "closed" else ""))
    wrapper.chmod(0o755)
    async with open_bridge(sites, tmp_path, extra=(f"--browser-path={wrapper}",)) as b:
        await ask(b, "chatgpt", "What is 2 plus 9?")
        first = await browser_status(b)
        async with b.devtools() as dt:
            await dt.send("Browser.close")  # the user closes the browser
        if pipe == "closed":
            closing = await state_is(b, "closing", timeout=15)
            assert closing["pid"] == first["pid"]
        else:  # nothing tells it is closing, but the link is gone (an ask racing the link's close is prov's retry)
            await state_is(b, "degraded", timeout=15)
        go.touch()
        await ask(b, "chatgpt", "And 2 plus 10?")
        second = (await linked_status(b))["browser"]
        log = b.log_text()
    assert "is still closing; waiting" in log
    if pipe == "silent":
        assert "does not answer on its debugging pipe; taking it as closing" in log
    assert second["pid"] != first["pid"] and second["recovery"]["relaunched"] == 1
    if linger < 8:  # it finished closing by itself, and then the ask went on
        assert "did not finish closing" not in log
    else:  # it never finishes: ended after the grace period (not the ask's whole timeout), then the ask went on
        assert "did not finish closing within 8s; ending it" in log
    assert [q["question"] for q in sites.chatgpt.log()] == ["What is 2 plus 9?", "And 2 plus 10?"]


async def test_attach_to_a_browser_already_running_on_the_profile(sites: FakeSites, tmp_path: Path) -> None:
    """A browser with our extension already runs on the dedicated profile (an earlier ai-bridge left it open):
    ai-bridge uses it instead of launching a second one."""
    sites.gemini.set_next(**FAST)
    profile = tmp_path / "profile"
    async with open_user_chrome(sites, profile) as chrome, open_bridge(sites, tmp_path, profile_dir=profile) as b:
        st = (await linked_status(b))["browser"]
        await ask(b, "gemini", "What is 4 times 4?")
        log = b.log_text()
        assert process_alive(chrome.pid)
    assert st["ownership"] == "attached" and st["pid"] == chrome.pid
    assert f"a browser (pid {chrome.pid}) already runs on profile" in log and "launching /" not in log


async def test_profile_held_by_a_browser_without_our_extension(sites: FakeSites, tmp_path: Path) -> None:
    """The profile opened by hand, without the extension: a clear `profile_in_use` naming the pid within seconds
    (not a 60 s wait), the status not stuck at `launching`; once that browser is gone, the next ask launches."""
    sites.chatgpt.set_next(**FAST)
    profile = tmp_path / "profile"
    profile.mkdir()
    by_hand = subprocess.Popen([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                "--disable-background-networking", f"--user-data-dir={profile}", "--disable-extensions",
                                "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        with trio.fail_after(10):
            while not (profile / "SingletonLock").is_symlink():
                await trio.sleep(0.05)
        async with open_bridge(sites, tmp_path, profile_dir=profile) as b:
            res = await b.call("ask_chatgpt_web", {"question": "What is 7 plus 1?"})
            st = await browser_status(b)
            os.killpg(by_hand.pid, signal.SIGKILL)  # the user closes it (killed: its lock stays behind, stale)
            await trio.to_thread.run_sync(by_hand.wait)
            await ask(b, "chatgpt", "What is 7 plus 2?")
            after = await browser_status(b)
    finally:
        if by_hand.poll() is None:
            os.killpg(by_hand.pid, signal.SIGKILL)
            by_hand.wait()
    assert res.is_error and res.structured_content["error"]["code"] == "profile_in_use", res.content[0].text
    assert f"pid {by_hand.pid}" in res.content[0].text and "--profile-dir" in res.content[0].text
    # Its own 6 s for a browser without our extension, not the 35 s an extension's alarm gets, nor the ask's timeout.
    assert "no ai-bridge extension connected from it within 6s" in res.content[0].text
    assert st["state"] == "degraded" and f"pid {by_hand.pid}" in st["lastError"]
    assert after["ownership"] == "launched" and after["pid"] != by_hand.pid


# --- 9.4 (connect mode) and 15.10 (auto mode): the user's own Chrome -----------------------------------------------


async def test_connect_mode_reports_waiting_and_succeeds_on_the_next_wake(sites: FakeSites, tmp_path: Path) -> None:
    """The user's Chrome: its worker stopped, an ask reports "waiting for the extension" and goes on as soon as the
    extension wakes (here: the user clicks its icon when told)."""
    config = load({"state_dir": str(tmp_path / "state"), "browser": "connect"}, env={},
                  config_file=tmp_path / "none.toml")
    async with open_user_chrome(sites, tmp_path / "users-chrome") as chrome, open_actors(config) as bridge:
        browser = bridge.ref(BROWSER)
        await browser.call(EnsureBrowser(timeout_s=20), timeout=30)
        assert (await browser.call(BrowserStatus(), timeout=5)).ownership == "user"
        due = await chrome.quiet_alarm()  # the keep-alive alarm's next firing, not in the next 15 s
        await chrome.stop_worker()
        await eventually(lambda: _state(browser, BrowserState.DEGRADED), 10, "link lost")
        progress: list[BrowserProgress] = []
        told = trio.Event()

        def on_progress(p: object) -> None:
            if isinstance(p, BrowserProgress):
                progress.append(p)
                told.set()

        async def user_clicks_when_told() -> None:
            await told.wait()  # the ask says it waits for the extension: the user clicks its icon
            await chrome.click_toolbar_icon()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(user_clicks_when_told)
            await browser.call(EnsureBrowser(timeout_s=30), timeout=40, on_progress=on_progress)
        status = await browser.call(BrowserStatus(), timeout=5)
        due_after, _ = await chrome.alarm()
    assert progress and progress[0].phase is BrowserPhase.WAITING_FOR_EXTENSION
    assert "waiting for the ai-bridge extension in your Chrome" in progress[0].message
    assert due_after == due  # back on the click: the alarm has not fired since
    assert status.state is BrowserState.CONNECTED and status.recovery.reattached == 1 and status.pid is None


async def _state(browser: Any, state: BrowserState) -> bool:
    return bool((await browser.call(BrowserStatus(), timeout=5)).state is state)


async def test_auto_mode_waits_for_the_users_chrome_instead_of_launching(sites: FakeSites, tmp_path: Path) -> None:
    """Seed 004's re-attach first: after the user's Chrome dropped (its worker stopped), the next ask waits for it
    to come back and never launches a second browser with the extension."""
    sites.chatgpt.set_next(**FAST)
    async with open_user_chrome(sites, tmp_path / "users-chrome") as chrome, \
            open_bridge(sites, tmp_path, extra=("--browser", "auto")) as b:
        await ask(b, "chatgpt", "What is 9 plus 1?")
        first = (await linked_status(b))["browser"]
        await chrome.stop_worker()
        await state_is(b, "degraded")

        seen = len(b.progress)

        async def waiting() -> bool:  # this ask's progress, not the first one's
            return any(m.endswith("waiting for the extension") for _, m in b.progress[seen:])

        async def user_clicks_when_the_ask_waits() -> None:
            await eventually(waiting, 30, "the ask waiting for the user's Chrome")
            await chrome.click_toolbar_icon()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(user_clicks_when_the_ask_waits)
            sc = await ask(b, "chatgpt", "And 9 plus 2?")
        second = (await linked_status(b))["browser"]
        log = b.log_text()
    assert first["ownership"] == "user" and first["pid"] is None
    assert second["ownership"] == "user" and second["pid"] is None  # nothing launched, then or now
    # The launch's own line ("launching /path/to/chromium ..."): auto mode's wait for the user's Chrome at the first
    # ask says "... before launching a browser of our own" when that Chrome connects a moment late.
    assert "ai_bridge.browser: launching " not in log and not (tmp_path / "profile").exists()
    assert second["recovery"]["attempts"] == 1 and second["recovery"]["reattached"] == 1
    assert sc["answer"]


async def test_auto_mode_steps_aside_when_the_users_chrome_comes_back(sites: FakeSites, tmp_path: Path) -> None:
    """No user's Chrome at first: auto mode launches its own browser. When the user's Chrome (with the extension)
    starts later, the two would displace each other every 30 s: ai-bridge closes its own instead."""
    sites.chatgpt.set_next(**FAST)
    async with open_bridge(sites, tmp_path, extra=("--browser", "auto")) as b:
        await ask(b, "chatgpt", "What is 8 plus 1?")
        ours = (await linked_status(b))["browser"]
        assert ours["ownership"] == "launched"
        async with open_user_chrome(sites, tmp_path / "users-chrome") as chrome:
            async def handed_over() -> dict[str, Any] | None:
                st = await b.status()
                return st if st["browser"]["recovery"]["handovers"] == 1 and st["extension"]["connected"] else None

            st = await eventually(handed_over, 20, "ai-bridge closed its browser for the user's Chrome")

            async def ours_gone() -> bool:  # with it the displaced extension, which can no longer fight back
                return not process_alive(ours["pid"])

            await eventually(ours_gone, 20, "ai-bridge's own browser gone")
            later = await b.status()
            await ask(b, "chatgpt", "And 8 plus 2?")
            targets = await chrome.dt.send("Target.getTargets")
    assert not process_alive(ours["pid"])
    assert st["browser"]["ownership"] == "user" and st["browser"]["pid"] is None
    assert later["extension"]["since"] == st["extension"]["since"]  # one link, nobody took it back
    assert any(t["url"].startswith("https://chatgpt.com/") for t in targets["targetInfos"])  # asked in the user's



# --- 15.13: the user's own extensions next to ours --------------------------------------------------------------------


@pytest.mark.parametrize("loading", ["flag", "pipe"])
async def test_load_extension_loads_the_users_own_next_to_ours(sites: FakeSites, tmp_path: Path, loading: str) -> None:
    own = tmp_path / "users-own-extension"
    own.mkdir()
    (own / "manifest.json").write_text('{"manifest_version": 3, "name": "users-own", "version": "1.0", '
                                       '"background": {"service_worker": "own-worker.js"}}')
    (own / "own-worker.js").write_text("self.addEventListener('install', () => {});\n")
    sites.chatgpt.set_next(**FAST)
    async with open_bridge(sites, tmp_path, env={"AI_BRIDGE_EXTENSION_LOADING": loading},
                           extra=(f"--load-extension={own}",)) as b, b.devtools() as dt:
        st = (await linked_status(b))["browser"]

        async def own_worker() -> bool:
            targets = (await dt.send("Target.getTargets"))["targetInfos"]
            return any(t["type"] == "service_worker" and t["url"].endswith("/own-worker.js") for t in targets)

        await eventually(own_worker, 10, "the user's extension runs")
        await ask(b, "chatgpt", "What is 6 times 7?")  # and ours works beside it
        log = b.log_text()
    assert st["extensions"] == [str(own)]
    if loading == "pipe":
        assert f"extension {own} loaded over the debugging pipe" in log
