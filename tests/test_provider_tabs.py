"""Which tab a provider drives when a tab is broken (issue 25.2): a tab that fails to attach with anything other than
`tab_busy` (DevTools open, a CDP error, gone) is closed when ai-bridge opened it and replaced by a new tab, once,
before anything is sent — and never picked again by the next ask (seed 001). A tab left showing a site error is
avoided too. Against a fake extension: no browser, no clock."""

from __future__ import annotations

import logging

import trio

from actors.cdp import TabInfo
from actors.provider.sites import chatgpt
from actors.provider.tab import ProviderMemory, TabSession
from actors.provider.table import Timeouts
from actors.provider.tabs import Tabs
from supervisor.errors import CdpError

URL = "https://chatgpt.com/"


class FakeExtension:
    def __init__(self, open_tabs: list[TabInfo]) -> None:
        self.open = {t.tab_id: t for t in open_tabs}
        self.closed: list[int] = []
        self.created: list[int] = []
        self.next_id = 100

    async def tab(self, tab_id: int, *, timeout_s: float = 10.0) -> TabInfo:
        return self.open[tab_id]

    async def tabs(self, url_patterns: tuple[str, ...] = (), *, timeout_s: float = 10.0) -> tuple[TabInfo, ...]:
        return tuple(self.open.values())

    async def create_tab(self, url: str, *, new_window: bool, timeout_s: float) -> TabInfo:
        self.next_id += 1
        tab = self.open[self.next_id] = TabInfo(self.next_id, url, window_id=self.next_id)
        self.created.append(tab.tab_id)
        return tab

    async def close(self, tab_id: int, *, timeout_s: float = 10.0) -> None:
        self.closed.append(tab_id)
        self.open.pop(tab_id, None)


def make_tabs(memory: ProviderMemory, ext: FakeExtension, failing: dict[int, Exception],
              attached: list[int]) -> Tabs:
    tabs = Tabs(None, chatgpt.TABLE, Timeouts(), memory, use_open_tabs=True,  # type: ignore[arg-type]
                log=logging.getLogger("test"))
    tabs.extension = ext  # type: ignore[assignment]

    async def attach(tab_id: int, nursery: trio.Nursery) -> TabSession:
        attached.append(tab_id)
        if tab_id in failing:
            raise failing[tab_id]
        return TabSession(None, tab_id, chatgpt.TABLE, Timeouts(), "b", logging.getLogger("test"))  # type: ignore[arg-type]

    tabs.attach = attach  # type: ignore[method-assign]
    return tabs


async def test_a_tab_that_fails_to_attach_is_closed_replaced_once_and_never_picked_again() -> None:
    memory = ProviderMemory()
    memory.our_tabs[7] = 7
    ext = FakeExtension([TabInfo(7, URL + "c/abc", window_id=7)])
    attached: list[int] = []
    tabs = make_tabs(memory, ext, {7: CdpError("Cannot attach: DevTools is open", ext_code="devtools_open")}, attached)
    async with trio.open_nursery() as nursery:
        first = await tabs.lease(None, URL, nursery)
        tabs.claimed.discard(first.tab_id)  # the pool let it go (a restarted actor's pool starts empty)
        second = await tabs.lease(None, URL, nursery)  # the next ask
    assert attached == [7, 101, 101]  # the broken tab once, then the new one (kept for the next ask)
    assert first.tab_id == second.tab_id == 101
    assert ext.closed == [7] and ext.created == [101]
    assert 7 in memory.bad_tabs and "devtools_open" in memory.bad_tabs[7]


async def test_a_users_tab_that_fails_to_attach_is_left_open_but_not_used_again() -> None:
    memory = ProviderMemory()
    ext = FakeExtension([TabInfo(9, URL, window_id=1)])  # the user's own tab (use_open_tabs)
    attached: list[int] = []
    tabs = make_tabs(memory, ext, {9: CdpError("Another debugger is attached", ext_code="cdp_error")}, attached)
    async with trio.open_nursery() as nursery:
        got = await tabs.lease(None, URL, nursery)
        assert await tabs.pick(None) is None  # leased by an ask of this provider: never picked for another
        tabs.claimed.discard(got.tab_id)  # the pool let it go
        again = await tabs.pick(None)
    assert got.tab_id == 101 and ext.closed == [] and 9 in ext.open
    assert again is not None and again.tab_id == 101


async def test_tab_busy_still_opens_our_own_without_marking_the_tab() -> None:
    memory = ProviderMemory()
    ext = FakeExtension([TabInfo(9, URL, window_id=1)])
    attached: list[int] = []
    tabs = make_tabs(memory, ext, {9: CdpError("leased by another server", ext_code="tab_busy")}, attached)
    async with trio.open_nursery() as nursery:
        got = await tabs.lease(None, URL, nursery)
    assert got.tab_id == 101 and ext.closed == [] and memory.bad_tabs == {}


async def test_an_avoided_tab_is_not_picked() -> None:
    memory = ProviderMemory()
    memory.our_tabs[7] = 7
    ext = FakeExtension([TabInfo(7, URL + "c/abc", window_id=7)])
    tabs = make_tabs(memory, ext, {}, [])
    assert (await tabs.pick(None)) is not None
    tabs.avoid(7, "site error")
    assert (await tabs.pick(None)) is None and 7 in ext.open  # left open for the user to read
