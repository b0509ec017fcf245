"""Which tab a provider drives (`Tabs`): only tabs ai-bridge opened (or the one its session names), with
`use_open_tabs` also one the user opened; created, attached, leased, avoided and discarded here, then driven as a
`TabSession` (tab.py)."""

from __future__ import annotations

import logging
import re
import secrets

import trio

from supervisor.errors import BridgeError, CdpError, TabClosed

from ..cdp import CREATE_REPLY_MARGIN_S, Extension, Relay, TabInfo
from ..protocol.session_store import SessionEntry
from .tab import ProviderMemory, TabSession
from .table import ProviderTable, Timeouts


class Tabs:
    """Which tab a provider drives: only tabs ai-bridge opened (or the one its session names, at the session's
    URL), and with `use_open_tabs` also a tab the user opened. A tab is created only when none of ours is open."""

    def __init__(self, relay: Relay, table: ProviderTable, timeouts: Timeouts, memory: ProviderMemory, *,
                 use_open_tabs: bool, log: logging.Logger) -> None:
        self.relay = relay
        self.extension = Extension(relay)
        self.t = table
        self.to = timeouts
        self.memory = memory
        self.use_open_tabs = use_open_tabs
        self.log = log
        self.binding = f"__aib_{secrets.token_hex(6)}"
        # Tabs leased by this provider's pool (pool.py): never picked for another of its asks.
        self.claimed: set[int] = set()

    def on_site(self, url: str) -> bool:
        return any(re.match("^" + re.escape(p).replace(r"\*", ".*") + "$", url) for p in self.t.url_patterns)

    def ours(self, tab: TabInfo, session: SessionEntry | None) -> bool:
        """A tab ai-bridge opened in this process, or the session's own tab still at the session's conversation (a
        tab of an earlier run: the browser keeps tab ids, and no tab of the user's shows our conversation)."""
        if not self.on_site(tab.url) or tab.tab_id in self.memory.bad_tabs or tab.tab_id in self.claimed:
            return False
        if self.memory.our_tabs.get(tab.tab_id, -1) == tab.window_id:
            return True
        return session is not None and session.tab_id == tab.tab_id and tab.url == session.url

    async def pick(self, session: SessionEntry | None) -> TabInfo | None:
        """An open tab we may drive: the session's, else another of ours, else (use_open_tabs) the user's."""
        if session is not None and session.tab_id is not None:
            try:
                with trio.fail_after(self.to.reuse_tab_s):
                    got = await self.extension.tab(session.tab_id, timeout_s=self.to.reuse_tab_s)
                if self.ours(got, session):
                    return got
            except (BridgeError, trio.TooSlowError):
                pass
        tabs = await self.extension.tabs(self.t.url_patterns)
        mine = [t for t in tabs if self.ours(t, None)]
        if mine:
            return mine[0]
        tabs = tuple(t for t in tabs if t.tab_id not in self.memory.bad_tabs and t.tab_id not in self.claimed)
        if self.use_open_tabs and tabs:
            preferred = [t for t in tabs if session is not None and t.url == session.url]
            return (preferred or list(tabs))[0]
        return None

    async def create(self, url: str) -> int:
        """Seed 9.1: 5 s per try, a retry 1 s after a failure, at most 2 retries."""
        last: BaseException | None = None
        for attempt in range(1 + self.to.new_tab_retries):
            if attempt:
                await trio.sleep(self.to.new_tab_retry_after_s)
            try:
                # Its own window: the provider tab stays visible (no background-tab quirk, no hung screenshots),
                # and parallel asks do not fight over focus.
                with trio.fail_after(self.to.new_tab_s + CREATE_REPLY_MARGIN_S):
                    got = await self.extension.create_tab(url, new_window=True, timeout_s=self.to.new_tab_s)
                self.memory.our_tabs[got.tab_id] = got.window_id
                return got.tab_id
            except (BridgeError, trio.TooSlowError) as exc:
                last = exc
                self.log.warning("creating a %s tab failed (attempt %d): %s", self.t.title, attempt + 1, exc)
        raise TabClosed(f"could not open a {self.t.title} tab in {1 + self.to.new_tab_retries} tries: {last}",
                        hint="Check the browser ai-bridge uses (bridge_status), then retry.")

    async def attach(self, tab_id: int, nursery: trio.Nursery) -> TabSession:
        await self.extension.attach(tab_id)
        session = TabSession(self.relay, tab_id, self.t, self.to, self.binding, self.log)
        try:
            await session.open(nursery)
        except BaseException:
            with trio.CancelScope(shield=True):
                await session.close()
            raise
        self.log.info("attached to %s tab %d", self.t.title, tab_id)
        return session

    async def lease(self, session: SessionEntry | None, url: str, nursery: trio.Nursery) -> TabSession:
        """Attach to a tab we may drive, else open one at `url`. The tab is claimed (`claimed`) until the pool lets
        it go."""
        picked = await self.pick(session)
        if picked is not None and picked.tab_id in self.claimed:
            picked = None  # another ask of this provider took it while the browser answered
        tab_id = picked.tab_id if picked is not None else await self.create(url)
        self.claimed.add(tab_id)
        try:
            page = await self.attach(tab_id, nursery)
            page.opened_at = url if picked is None else None
            return page
        except CdpError as exc:
            if exc.ext_code == "tab_busy":
                # Another server leased that tab between our tabs.query (or tabs.create) and our attach: two servers
                # asking at once. Each server drives a tab of its own, so open ours.
                self.log.info("%s tab %d was leased by another server first; opening our own", self.t.title, tab_id)
            else:
                # devtools_open, cdp_error, a debugger that went away: seed 001 closes such a tab and opens a new
                # one, once. Nothing was sent yet; the next ask never picks it again.
                self.log.warning("attaching to %s tab %d failed (%s: %s); replacing it with a new tab", self.t.title,
                                 tab_id, exc.ext_code or exc.code, exc)
                await self.discard(tab_id, f"attach failed: {exc.ext_code or exc.code}")
        except TabClosed as exc:
            self.log.info("%s tab %d went away while attaching (%s); opening a new one", self.t.title, tab_id, exc)
            await self.discard(tab_id, "gone while attaching")
        except BaseException:
            self.claimed.discard(tab_id)
            raise
        self.claimed.discard(tab_id)
        tab_id = await self.create(url)
        self.claimed.add(tab_id)
        try:
            page = await self.attach(tab_id, nursery)
        except BaseException:
            self.claimed.discard(tab_id)
            raise
        page.opened_at = url
        return page

    def avoid(self, tab_id: int, why: str) -> None:
        """Never pick this tab again (it stays open: a page showing an error the user may want to read)."""
        self.memory.bad_tabs[tab_id] = why
        while len(self.memory.bad_tabs) > 100:
            del self.memory.bad_tabs[next(iter(self.memory.bad_tabs))]

    async def discard(self, tab_id: int, why: str) -> None:
        """A tab not to drive again: remembered as bad; closed when ai-bridge opened it (a tab of the user's stays
        open). Best effort: the tab may be gone already."""
        self.avoid(tab_id, why)
        if tab_id in self.memory.our_tabs:
            await self._close(tab_id, close=True)

    async def retire(self, tab_id: int) -> None:
        """A pooled tab that was idle too long: closed when ai-bridge opened it (a tab of the user's stays open, only
        our debugger leaves it). Best effort."""
        await self._close(tab_id, close=tab_id in self.memory.our_tabs)

    async def _close(self, tab_id: int, *, close: bool) -> None:
        """Close one of our tabs (it is no longer ours), or detach from a tab of the user's; best effort, bounded."""
        if close:
            self.memory.our_tabs.pop(tab_id, None)
        with trio.move_on_after(self.to.new_tab_s):
            try:
                if close:
                    await self.extension.close(tab_id, timeout_s=self.to.new_tab_s)
                else:
                    await self.extension.detach(tab_id, timeout_s=self.to.new_tab_s)
            except BridgeError as exc:
                self.log.info("%s %s tab %d: %s", "closing" if close else "detaching from", self.t.title, tab_id,
                              exc)

    async def for_inspection(self, session: SessionEntry | None, nursery: trio.Nursery) -> TabSession:
        """The tab inspection tools look at: never a new one."""
        picked = await self.pick(session)
        if picked is None:
            raise TabClosed(f"no {self.t.title} tab is open",
                            hint=f"Ask {self.t.title} something first, or open {self.t.home_url} in the browser.")
        return await self.attach(picked.tab_id, nursery)
