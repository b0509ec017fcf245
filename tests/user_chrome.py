"""The user's own Chrome, for end-to-end tests of `connect` and `auto` mode: a real headless Chromium that the *test*
starts (not ai-bridge), with our real extension loaded the way a user loads it, its own profile, and the fake sites'
host rules. ai-bridge has no channel to it; the test drives it only as a user would (through its DevTools port:
stop the extension's worker as Chrome does when idle, click the toolbar icon = open the popup, and pair the extension
with the state dir's key, as the user does by pasting `ai-bridge pair`'s code into the popup).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio
from trio_websocket import open_websocket_url

from actors.browser.process import HEADLESS_DISABLED_FEATURES
from supervisor import pairing

from .cdp_pipe import devtools_url
from .conftest import REPO
from .e2e import CHROMIUM, DevTools
from .fakesites.fixture import FakeSites

EXT_ID = "dehbpnglmiedeaaddfipmnmhmblajpci"
EXT_ORIGIN = f"chrome-extension://{EXT_ID}"
POPUP_URL = f"{EXT_ORIGIN}/popup.html"
ALARM = "ai-bridge-discovery"  # extension/background.js: the keep-alive alarm (period 30 s)


@attrs.define
class UserChrome:
    proc: subprocess.Popen[bytes]
    profile: Path
    dt: DevTools

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def worker(self) -> dict[str, Any] | None:
        targets = (await self.dt.send("Target.getTargets"))["targetInfos"]
        workers = [t for t in targets if t["type"] == "service_worker" and t["url"].startswith(EXT_ORIGIN + "/")]
        return workers[0] if workers else None

    async def stop_worker(self) -> str:
        """Stop the extension's service worker the way Chrome does when it idles out; → its old target id."""
        with trio.fail_after(30):  # it registers once the browser has loaded the extension: slower when cold
            while (worker := await self.worker()) is None:
                await trio.sleep(0.05)
        assert (await self.dt.send("Target.closeTarget", {"targetId": worker["targetId"]}))["success"]
        with trio.fail_after(10):  # Chrome drops a closed worker's target within a second; more on a busy machine
            while await self.worker() is not None:
                await trio.sleep(0.05)
        return str(worker["targetId"])

    async def click_toolbar_icon(self) -> None:
        """What clicking the extension's icon does: its popup page opens (here in a hidden target: no tab, so no tab
        event wakes the worker, only the popup itself), and closes when the user looks away: once the popup has
        loaded (its script asked the worker for its status, which wakes a stopped one) and a worker runs."""
        target = (await self.dt.send("Target.createTarget", {"url": POPUP_URL, "hidden": True}))["targetId"]
        with trio.fail_after(15):
            while not (await self._loaded(target) and await self.worker() is not None):
                await trio.sleep(0.05)
        await self.dt.send("Target.closeTarget", {"targetId": target})

    async def _loaded(self, target: str) -> bool:
        return bool(await self.dt.evaluate(target, "location.protocol === 'chrome-extension:' && "
                                                   "document.readyState === 'complete'"))

    async def alarm(self) -> tuple[float, float]:
        """The extension's keep-alive alarm, read in its running worker: (when it fires next, the worker's now), both
        epoch ms on Chrome's clock. Chrome moves a periodic alarm on by its period when it fires."""
        worker = await self.worker()
        assert worker is not None, "no extension worker runs"
        session = (await self.dt.send("Target.attachToTarget", {"targetId": worker["targetId"],
                                                                "flatten": True}))["sessionId"]
        try:
            got = await self.dt.send("Runtime.evaluate", {
                "expression": f"chrome.alarms.get({json.dumps(ALARM)}).then((a) => [a ? a.scheduledTime : null, "
                              "Date.now()])", "awaitPromise": True, "returnByValue": True}, session)
        finally:
            await self.dt.send("Target.detachFromTarget", {"sessionId": session})
        due, now = got["result"]["value"]
        assert due is not None, "the extension has no keep-alive alarm"
        return float(due), float(now)

    async def quiet_alarm(self, margin_ms: float = 15_000) -> float:
        """When the keep-alive alarm fires next, at least `margin_ms` from now: if it is due sooner, this waits for it
        to fire first. So a test can tell a worker something else woke (the popup) from one the alarm woke: the alarm
        has not fired since (its time is unchanged)."""
        due, now = await self.alarm()
        if due - now >= margin_ms:
            return due
        with trio.fail_after(60):
            while (await self.alarm())[0] == due:
                await trio.sleep(0.2)
        return (await self.alarm())[0]


async def pair_over_devtools(dt: DevTools, state_dir: Path) -> str:
    """Pair the extension of the browser behind `dt` with the key of `state_dir` (made if missing, as the server and
    `ai-bridge pair` do) → its key id. What the user does with `ai-bridge pair` and the popup, in one step."""
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    code = pairing.load_or_create(state_dir).code
    with trio.fail_after(30):  # the worker registers once the browser has loaded the extension: slower when cold
        while True:
            targets = (await dt.send("Target.getTargets"))["targetInfos"]
            workers = [t for t in targets if t["type"] == "service_worker" and t["url"].startswith(EXT_ORIGIN + "/")]
            if workers:
                session = (await dt.send("Target.attachToTarget", {"targetId": workers[0]["targetId"],
                                                                  "flatten": True}))["sessionId"]
                try:
                    got = await dt.send("Runtime.evaluate", {
                        "expression": f"typeof aiBridgePair === 'function' ? aiBridgePair({code!r}, 'test') : null",
                        "awaitPromise": True, "returnByValue": True}, session)
                finally:
                    await dt.send("Target.detachFromTarget", {"sessionId": session})
                value = got.get("result", {}).get("value")
                if isinstance(value, str):
                    return value
            await trio.sleep(0.1)


def user_chrome_args(sites: FakeSites, profile: Path, extension: Path) -> list[str]:
    return [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", f"--user-data-dir={profile}", f"--load-extension={extension}",
            f"--disable-extensions-except={extension}", "--remote-debugging-port=0", *sites.chromium_args(),
            f"--disable-features={','.join(HEADLESS_DISABLED_FEATURES)}", "about:blank"]


@asynccontextmanager
async def open_user_chrome(sites: FakeSites, profile: Path, *, extension: Path = REPO / "extension",
                           pair_with: Path | None = None, pair: bool = True) -> AsyncIterator[UserChrome]:
    """The user's Chrome, its extension paired with the servers of `pair_with` (default: ``<profile's
    parent>/state``, the state dir `open_bridge` uses by default). `pair=False`: an extension never paired."""
    profile.mkdir(parents=True, exist_ok=True)
    log = open(profile.parent / f"{profile.name}.log", "ab")  # closed below
    proc = subprocess.Popen(user_chrome_args(sites, profile, extension), stdin=subprocess.DEVNULL, stdout=log,
                            stderr=log, start_new_session=True)
    try:
        url = await devtools_url(profile, timeout=60)  # a first start reads Chromium from a cold disk
        async with open_websocket_url(url, max_message_size=64 << 20) as ws:
            chrome = UserChrome(proc, profile, DevTools(ws))
            if pair:
                await pair_over_devtools(chrome.dt, pair_with or profile.parent / "state")
            yield chrome
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                await trio.to_thread.run_sync(proc.wait, 5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()
