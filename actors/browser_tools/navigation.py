"""Navigation: Page.navigate / history / reload, and waiting for a load state on the tab's events.

The wait follows the main frame's events (commit with its loader id, DOMContentLoaded, load; a back/forward-cache
restore is done at commit), with a slow `document.readyState` poll as the safety net for a lost event. A navigation
the extension blocks by policy (a redirect to a denied host is stopped before its request is sent) is reported as
`policy_denied` with the URL it was heading for.
"""

from __future__ import annotations

import math

import trio

from supervisor.errors import BridgeError, BrowserTimeout, CdpError, NavigationFailed, PolicyDenied

from ..protocol.browser_tools import History, HistoryStep, NavReport, WaitUntil
from . import replies as rp
from .page import Page
from .policy import POLICY_HINT, normalize_url, policy_host

SAFETY_POLL_S = 1.0
IDLE_S = 0.5  # networkidle: no request in flight for this long
BLOCK_NOTICE_S = 0.5  # how long a failed navigation waits for the extension's policyBlocked notice


def _blocked(page: Page, since: int) -> PolicyDenied | None:
    if len(page.tab.blocked) <= since:
        return None
    url = page.tab.blocked[-1]
    host = policy_host(url) or url[:100]
    return PolicyDenied(f"the navigation was sent on to {url[:300]}, on {host}, which is not an allowed domain; the "
                        "extension stopped it before the request went out",
                        hint=POLICY_HINT.format(host=host.removeprefix("www.")))


async def _settle(page: Page, *, seq0: int, blocked0: int, loader: str | None, wait_until: WaitUntil,
                  deadline: float) -> None:
    tab = page.tab
    idle_since: float | None = None
    last_poll = trio.current_time()
    while True:
        if (blocked := _blocked(page, blocked0)) is not None:
            raise blocked
        if tab.gone:
            return  # the caller's checks report it
        committed = tab.nav_seq > seq0 and (loader is None or loader in tab.loaders or tab.same_document)
        if committed:
            done = (wait_until is WaitUntil.COMMIT or tab.same_document or tab.nav_type == "BackForwardCacheRestore"
                    or (wait_until is WaitUntil.DOMCONTENTLOADED and tab.dcl) or tab.load)
            if done and wait_until is WaitUntil.NETWORKIDLE and not tab.same_document:
                now = trio.current_time()
                if tab.network is None or tab.network.inflight() > 0:
                    idle_since = None
                    done = False
                elif idle_since is None:
                    idle_since = now
                    done = False
                else:
                    done = now - idle_since >= IDLE_S
            if done:
                return
        now = trio.current_time()
        if now >= deadline:
            raise BrowserTimeout(
                f"the page did not reach {wait_until.value} in time (the tab is at {tab.url[:200]})",
                hint="Raise timeout_s, or pass wait_until: domcontentloaded or commit for slow pages.")
        wake = min(deadline, now + SAFETY_POLL_S)
        if idle_since is not None:
            wake = min(wake, idle_since + IDLE_S)
        changed = tab.changed
        with trio.move_on_at(wake):
            await changed.wait()
            continue
        if committed and trio.current_time() - last_poll >= SAFETY_POLL_S:
            last_poll = trio.current_time()
            await poll_ready(page)


async def poll_ready(page: Page) -> None:
    """The safety net: a lost load event must not turn into a timeout."""
    try:
        got = await page.cdp.send("Runtime.evaluate", {"expression": "document.readyState", "returnByValue": True},
                                  timeout_s=5)
    except BridgeError:
        return
    state = rp.obj(got.get("result", {}), "result").get("value")
    if state == "complete":
        page.tab.dcl = page.tab.load = True
    elif state == "interactive":
        page.tab.dcl = True


async def report(page: Page, wait_until: WaitUntil, blocked0: int | None = None) -> NavReport:
    try:
        got = await page.op("hello", timeout_s=10)
    except CdpError as exc:
        # The page moved on while we looked (a meta refresh, a script's location change): if the extension blocked
        # where it went, that is the answer, not Chrome's words about a vanished document.
        if blocked0 is not None and (blocked := _blocked(page, blocked0)) is not None:
            raise blocked from exc
        raise
    status = got.get("status")
    return NavReport(page.tab.tab_id, page.tab.url, page.tab.title,
                     status if isinstance(status, int) and not isinstance(status, bool) else None, wait_until)


async def navigate(page: Page, url: str, wait_until: WaitUntil, timeout_s: float) -> NavReport:
    target = normalize_url(url)
    page.policy.check_url(target, "the navigation target")
    tab = page.tab
    deadline = trio.current_time() + timeout_s
    if wait_until is WaitUntil.NETWORKIDLE:
        await page.watch(network=True)  # before the navigation, so its requests are counted
    seq0, blocked0 = tab.nav_seq, len(tab.blocked)
    with trio.move_on_at(deadline) as scope:
        got = await page.cdp.send("Page.navigate", {"url": target}, timeout_s=timeout_s)
    if scope.cancelled_caught:
        raise BrowserTimeout(f"{target[:200]} did not start loading within {timeout_s:g} s",
                             hint="The server may be slow or unreachable; raise timeout_s or check the URL.")
    error = got.get("errorText")
    if isinstance(error, str) and error:
        with trio.move_on_after(BLOCK_NOTICE_S):
            while len(tab.blocked) <= blocked0:
                await tab.changed.wait()
        if (blocked := _blocked(page, blocked0)) is not None:
            raise blocked
        raise NavigationFailed(f"{target[:300]} could not be loaded: {error}",
                               hint="Check the URL and that the site is reachable from this browser.")
    loader = got.get("loaderId")
    # No loader id: a same-document navigation (a fragment), done at its navigatedWithinDocument.
    await _settle(page, seq0=seq0, blocked0=blocked0, loader=loader if isinstance(loader, str) and loader else None,
                  wait_until=wait_until, deadline=deadline)
    return await report(page, wait_until, blocked0)


async def history(page: Page, msg: History) -> NavReport:
    tab = page.tab
    deadline = trio.current_time() + msg.timeout_s
    if msg.wait_until is WaitUntil.NETWORKIDLE:
        await page.watch(network=True)
    seq0, blocked0 = tab.nav_seq, len(tab.blocked)
    if msg.step is HistoryStep.RELOAD:
        page.policy.check_url(tab.url, f"tab {tab.tab_id}")
        await page.cdp.send("Page.reload", {}, timeout_s=msg.timeout_s)
    else:
        hist = await page.cdp.send("Page.getNavigationHistory", timeout_s=10)
        entries = rp.items(hist, "entries")
        index = rp.integer(hist, "currentIndex") + (-1 if msg.step is HistoryStep.BACK else 1)
        if not 0 <= index < len(entries):
            raise NavigationFailed(f"there is no {'previous' if msg.step is HistoryStep.BACK else 'next'} page in "
                                   f"tab {tab.tab_id}'s history", hint="navigate to a URL instead.")
        entry = rp.obj(entries[index], "history entry")
        page.policy.check_url(rp.text(entry, "url"), f"the {msg.step.value} history entry")
        await page.cdp.send("Page.navigateToHistoryEntry", {"entryId": rp.integer(entry, "id")},
                            timeout_s=msg.timeout_s)
    await _settle(page, seq0=seq0, blocked0=blocked0, loader=None, wait_until=msg.wait_until, deadline=deadline)
    return await report(page, msg.wait_until, blocked0)


async def wait_load_state(page: Page, state: WaitUntil, timeout_s: float) -> None:
    """wait_for's load_state: the current document reaching `state` (at once if it has)."""
    tab = page.tab
    if not math.isfinite(timeout_s):
        timeout_s = 30.0
    await poll_ready(page)
    if state is WaitUntil.NETWORKIDLE:
        await page.watch(network=True)
    await _settle(page, seq0=tab.nav_seq - 1, blocked0=len(tab.blocked), loader=None, wait_until=state,
                  deadline=trio.current_time() + timeout_s)
