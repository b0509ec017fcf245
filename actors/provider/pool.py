"""A provider's tabs (issue 38): up to `tabs_per_site`, each leased to one ask at a time (schedule.py decides which
asks run). An idle tab is reused before a new one is opened — the one already showing the ask's conversation first,
so a follow-up needs no page load. A tab that failed (crashed, did not attach, showed a site error, stayed stuck) is
replaced, never leased again; a tab whose connection broke (closed, detached, the extension gone) is forgotten.
Idle tabs beyond the kept conversation's are closed after `idle_s`, so a burst of asks leaves one tab behind.
"""

from __future__ import annotations

import logging
from typing import Protocol

import attrs
import trio

from ..protocol.provider import PoolTab
from ..protocol.session_store import SessionEntry
from .tab import TabSession


class Opener(Protocol):
    """What the pool needs of `tabs.Tabs` (a test gives a fake): tabs to lease, attach, replace and close."""

    claimed: set[int]

    async def lease(self, session: SessionEntry | None, url: str, nursery: trio.Nursery) -> TabSession: ...
    async def attach(self, tab_id: int, nursery: trio.Nursery) -> TabSession: ...
    async def discard(self, tab_id: int, why: str) -> None: ...
    async def retire(self, tab_id: int) -> None: ...
    def avoid(self, tab_id: int, why: str) -> None: ...
    async def for_inspection(self, session: SessionEntry | None, nursery: trio.Nursery) -> TabSession: ...


@attrs.define(eq=False)
class Slot:
    page: TabSession
    holder: str = ""  # the ask id leasing it ("" when idle)
    used_at: float = attrs.Factory(trio.current_time)  # when it was last leased or released


def _same(a: str | None, b: str | None) -> bool:
    return bool(a and b) and a.split("?", 1)[0].rstrip("/") == b.split("?", 1)[0].rstrip("/")  # type: ignore[union-attr]


class TabPool:
    def __init__(self, opener: Opener, nursery: trio.Nursery, *, idle_s: float, log: logging.Logger) -> None:
        self.opener = opener
        self.nursery = nursery  # the tab sessions' event pumps run here
        self.idle_s = idle_s
        self.log = log
        self.slots: list[Slot] = []
        self.kept_tab: int | None = None  # the tab of the conversation kept last: stays when idle
        self.changed = trio.Event()

    # -- leases ------------------------------------------------------------------------------------------------------

    async def lease(self, holder: str, session: SessionEntry | None, url: str) -> TabSession:
        """A tab for one ask: an idle one of ours that still answers (the one at `url`, then the session's, then
        any but the kept conversation's), else a new lease from the opener."""
        for slot in sorted((s for s in self.slots if not s.holder), key=lambda s: self._preference(s, session, url)):
            if slot.holder or slot not in self.slots:
                continue  # leased or dropped by another ask while this one waited on a health check
            slot.holder = holder  # claimed before anything awaits
            try:
                ok = await slot.page.healthy()
            except BaseException:
                slot.holder = ""
                raise
            if ok:
                slot.used_at = trio.current_time()
                return slot.page
            if slot.page.broken:  # its connection went (closed, detached, the extension gone): nothing to judge
                await self._remove(slot)
                continue
            self.log.info("%s tab %d no longer answers; replacing it", slot.page.t.title, slot.page.tab_id)
            await self._remove(slot, discard="stopped answering")
        page = await self.opener.lease(session, url, self.nursery)
        self.slots.append(Slot(page, holder))
        self._wake()
        return page

    def _preference(self, slot: Slot, session: SessionEntry | None, url: str) -> tuple[int, float]:
        shown = slot.page.state.url if slot.page.state is not None else None
        if _same(shown, url):
            rank = 0  # already there: no page load
        elif session is not None and slot.page.tab_id == session.tab_id:
            rank = 1
        elif slot.page.tab_id != self.kept_tab:
            rank = 2  # leave the kept conversation's tab where it is for the project's next ask
        else:
            rank = 3
        return rank, -slot.used_at

    async def renew(self, page: TabSession, holder: str) -> TabSession:
        """A fresh debugger connection to the same tab for the ask `holder` that leases it (a stuck page's retry: new
        world, new watcher). A tab that no longer attaches is given up (the ask then leases another)."""
        slot = self._slot(page)
        await page.close()
        try:
            fresh = await self.opener.attach(page.tab_id, self.nursery)
        except BaseException:
            if slot is not None:
                self.slots.remove(slot)
                self.opener.claimed.discard(page.tab_id)
            raise
        if slot is not None:
            slot.page, slot.holder = fresh, holder
        else:
            self.slots.append(Slot(fresh, holder))
        return fresh

    async def release(self, page: TabSession | None, *, failed: str | None = None, avoid: str | None = None,
                      forget: bool = False) -> None:
        """The ask is done with its tab. `failed`: the tab is replaced (closed when ai-bridge opened it, never picked
        again); `avoid`: left open but never picked again (a site error the user may want to read). A tab whose
        connection broke, or with `forget` (its debugger went away under the ask), is forgotten: the next lease
        attaches to it afresh. A healthy one waits idle for the next ask."""
        slot = self._slot(page) if page is not None else None
        if slot is None:
            return
        if failed is not None:
            await self._remove(slot, discard=failed)
        elif avoid is not None:
            self.opener.avoid(slot.page.tab_id, avoid)
            await self._remove(slot)
        elif slot.page.broken or forget:
            await self._remove(slot)
        else:
            slot.holder = ""
            slot.used_at = trio.current_time()
        self._wake()

    def keep(self, tab_id: int | None) -> None:
        self.kept_tab = tab_id

    # -- inspection --------------------------------------------------------------------------------------------------

    async def inspection_page(self, session: SessionEntry | None) -> TabSession:
        """The tab snapshot and get_dom read (never a new one): the session's, else the one used last, else one of
        ours in the browser, taken into the pool idle."""
        live = [s for s in self.slots if not s.page.broken]
        mine = [s for s in live if session is not None and s.page.tab_id == session.tab_id]
        for slot in mine or sorted(live, key=lambda s: -s.used_at):
            if await slot.page.healthy():
                return slot.page
        page = await self.opener.for_inspection(session, self.nursery)
        if self._slot(page) is None:
            self.opener.claimed.add(page.tab_id)
            self.slots.append(Slot(page))
            self._wake()
        return page

    def latest(self) -> TabSession | None:
        return max(self.slots, key=lambda s: s.used_at).page if self.slots else None

    # -- idle tabs ---------------------------------------------------------------------------------------------------

    async def reap(self) -> None:
        """Runs for the actor's life: closes tabs idle for `idle_s`, except the kept conversation's (or, with none
        kept, the one used last): what a burst of asks opened goes, the project's tab stays."""
        while True:
            changed = self.changed
            now = trio.current_time()
            keep = self._stays()
            due = [s for s in self.slots if not s.holder and s is not keep and now - s.used_at >= self.idle_s]
            for slot in due:
                self.log.info("closing %s tab %d: idle for %.0fs", slot.page.t.title, slot.page.tab_id,
                              now - slot.used_at)
                await self._remove(slot, retire=True)
            waits = [s.used_at + self.idle_s - now for s in self.slots if not s.holder and s is not keep]
            with trio.move_on_after(max(0.05, min(waits)) if waits else float("inf")):
                await changed.wait()

    def _stays(self) -> Slot | None:
        kept = [s for s in self.slots if s.page.tab_id == self.kept_tab and not s.page.broken]
        if kept:
            return kept[0]
        return max(self.slots, key=lambda s: s.used_at) if self.slots else None

    # -- the report --------------------------------------------------------------------------------------------------

    def report(self) -> tuple[PoolTab, ...]:
        now = trio.current_time()
        return tuple(PoolTab(s.page.tab_id, s.page.state.url if s.page.state is not None else None, s.holder,
                             0.0 if s.holder else round(now - s.used_at, 1), s.page.tab_id == self.kept_tab,
                             s.page.broken) for s in self.slots)

    # -- internals ---------------------------------------------------------------------------------------------------

    def _slot(self, page: TabSession) -> Slot | None:
        return next((s for s in self.slots if s.page is page), None)

    async def _remove(self, slot: Slot, *, discard: str | None = None, retire: bool = False) -> None:
        if slot in self.slots:
            self.slots.remove(slot)
        tab_id = slot.page.tab_id
        with trio.CancelScope(shield=True):  # bounded: close() and the opener's calls have their own timeouts
            await slot.page.close()
            if discard is not None:
                await self.opener.discard(tab_id, discard)
            elif retire:
                await self.opener.retire(tab_id)
        if not any(s.page.tab_id == tab_id for s in self.slots):
            self.opener.claimed.discard(tab_id)
        if tab_id == self.kept_tab and discard is not None:
            self.kept_tab = None
        self._wake()

    def _wake(self) -> None:
        self.changed.set()
        self.changed = trio.Event()
