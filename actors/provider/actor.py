"""Provider actor: one per provider (ChatGPT, Gemini, …). Its asks run side by side, each in a tab of its own, up to
`tabs_per_site` (issue 38); it answers inspection and status while they run. The rooms beside it: `asking.py` (one
ask end to end), `schedule.py` (which asks run, the order of the rest), `pool.py` (the tabs), `tab.py` (a tab's
lease, the watcher, page actions), `flow.py` (one ask on a page), `inspect.py` (snapshot, DOM), and the provider
tables in `sites/` (one module per site).

An ask's own task decides everything about it, its stuck-page retries included (asking.py); the actor crashes only
on a bug, and then its supervisor re-delivers what it held (`ProviderMemory` carries what each ask already did, so a
question is never sent twice).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import assert_never

import attrs
import trio

from supervisor.errors import (
    AskCancelled,
    BridgeError,
    ExtensionDisconnected,
    ResponseTimeout,
    TabClosed,
)
from supervisor.otp import ActorContext, Envelope, Reply

from ..protocol.browser import BROWSER, EnsureBrowser
from ..protocol.common import ProviderName
from ..protocol.provider import (
    Ask,
    GetDom,
    Probe,
    ProbeReport,
    ProviderReport,
    ProviderRequest,
    ProviderStatus,
    SiteTab,
    Snapshot,
)
from ..protocol.relay import RELAY
from ..protocol.session_store import GetSession
from . import choices, inspect, probe
from .asking import Asker, transient
from .dumps import Dumps
from .pool import Opener, TabPool
from .schedule import Lane
from .tab import PageTimeout, ProviderMemory, TabGone, TabSession
from .table import ProviderTable, Timeouts
from .tabs import Tabs

__all__ = ["ProviderActor", "run", "transient"]

TABS_PER_SITE = 3  # the default: oracle leases up to three tabs per site as well
TAB_IDLE_S = 300.0  # a pooled tab idle this long is closed (the kept conversation's stays)


class ProviderActor:
    def __init__(self, ctx: ActorContext[ProviderRequest], table: ProviderTable, memory: ProviderMemory, *,
                 stall_s: float | None, use_open_tabs: bool, debug_dir: Path | None, dumps_keep: int,
                 private_text: bool, nursery: trio.Nursery, tabs_per_site: int, tab_idle_s: float,
                 opener: Opener | None, chat_base_url: str = "") -> None:
        self.ctx = ctx
        self.t = table
        self.name = ProviderName(table.name)
        self.to: Timeouts = table.timeouts if stall_s is None else attrs.evolve(table.timeouts, stall_s=stall_s)
        self.log = logging.getLogger(f"ai_bridge.{table.name}")
        self.memory = memory
        self.tabs = Tabs(ctx.ref(RELAY), table, self.to, memory, use_open_tabs=use_open_tabs, log=self.log)
        self.pool = TabPool(opener if opener is not None else self.tabs, nursery, idle_s=tab_idle_s, log=self.log)
        # Seed 9.4's dumps; the newest `dumps_keep` are kept (every provider together).
        dumps = Dumps(debug_dir, dumps_keep, private_text, self.to.script_s, self.log)
        self.asker = Asker(ctx, table, self.to, memory, self.pool, tabs_per_site, dumps, self.log,
                           chat_base_url=chat_base_url)
        self.store = self.asker.store
        self.nursery = nursery
        self.tabs_per_site = tabs_per_site

    def status(self, tabs: tuple[SiteTab, ...] | str) -> ProviderReport:
        running = sorted((r for r in self.asker.runs.values() if r.ticket is not None and r.ticket.granted.is_set()),
                         key=lambda r: r.since)
        asks = tuple(r.busy() for r in running)
        page = self.pool.latest()
        return ProviderReport(provider=self.name, tab_id=page.tab_id if page else None,
                              url=page.state.url if page and page.state else None,
                              context_id=page.context_id if page else None, broken=page.broken if page else None,
                              busy=asks[0] if asks else None, queued=len(self.asker.schedule.waiting),
                              browser_tabs=tabs, site_changed=self.memory.site_changed, asks=asks,
                              pool=self.pool.report(), tabs_per_site=self.tabs_per_site)

    async def inspection_page(self, project: str | None) -> TabSession:
        session = await self.store.call(GetSession(project, self.name), timeout=10) if project else None
        return await self.pool.inspection_page(session)

    # -- the health probe -------------------------------------------------------------------------------------------

    async def probe(self, msg: Probe, deadline: float) -> ProbeReport:
        """Open the page as an ask would (the project's kept conversation, else the tab where it is or a new one at
        the home page) and read it with probe.js, in a tab of the pool leased for it. Types, clicks and sends
        nothing."""
        wait_s = max(0.5, min(self.to.extension_wait_s, deadline - trio.current_time() - self.to.browser_margin_s))
        await self.ctx.ref(BROWSER).call(EnsureBrowser(timeout_s=wait_s), timeout=wait_s + 10)
        session = await self.store.call(GetSession(msg.project, self.name), timeout=10) if msg.project else None
        kept = session.url if session is not None and re.match(self.t.conversation_re, session.url) else None
        ticket = self.asker.schedule.join("probe", Lane(url=kept))
        page: TabSession | None = None
        try:
            await self.asker.schedule.wait(ticket)
            page = await self.pool.lease(f"probe-{ticket.seq}", session, kept or self.t.home_url)
            report = await probe.look(page, self.t, self.to, kept, deadline, self.log)
            self.log.info("%s probe: %s", self.t.title, ", ".join(f"{i.entry}={i.status.value}" for i in report.items))
            if msg.choices and report.signed_in is not False:
                report = attrs.evolve(report, offered=await choices.offered_safely(page))
            return attrs.evolve(report, site_changed=self.memory.site_changed)
        finally:
            self.asker.schedule.leave(ticket)
            with trio.CancelScope(shield=True):
                await self.pool.release(page)


# -- the actor ------------------------------------------------------------------------------------------------------


async def run(
    ctx: ActorContext[ProviderRequest],
    *,
    table: ProviderTable,
    memory: ProviderMemory | None = None,
    state_dir: Path | None = None,
    stall_s: float | None = None,
    use_open_tabs: bool = False,
    dumps_keep: int = 0,
    private_text: bool = False,
    tabs_per_site: int = TABS_PER_SITE,
    tab_idle_s: float = TAB_IDLE_S,
    chat_base_url: str = "",  # new chats start inside this Project / Gem (--chat-base-url)
    opener: Opener | None = None,  # tests: tabs of a fake site instead of the browser's
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    async with trio.open_nursery() as nursery:
        actor = ProviderActor(ctx, table, memory if memory is not None else ProviderMemory(), stall_s=stall_s,
                              use_open_tabs=use_open_tabs, dumps_keep=dumps_keep, private_text=private_text,
                              nursery=nursery, tabs_per_site=tabs_per_site, tab_idle_s=tab_idle_s, opener=opener,
                              chat_base_url=chat_base_url,
                              debug_dir=state_dir / "debug" if state_dir is not None and dumps_keep else None)

        async def inspect_one(msg: ProviderRequest) -> Reply[object]:
            match msg:
                case ProviderStatus(tabs=False):
                    return msg.reply(actor.status("not asked"))
                case ProviderStatus():
                    tabs: tuple[SiteTab, ...] | str
                    try:  # the site's tabs as the browser sees them, with our lease; best effort (link may be down)
                        found = await actor.tabs.extension.tabs(actor.t.url_patterns, timeout_s=5)
                        tabs = tuple(SiteTab(t.tab_id, t.url, t.attached_by_me, t.active) for t in found)
                    except BridgeError as exc:
                        tabs = f"[{exc.code}] {exc.message}"
                    return msg.reply(actor.status(tabs))
                case Snapshot():
                    try:
                        page = await actor.inspection_page(msg.project)
                        return msg.reply(await inspect.snapshot(actor.name, page, msg))
                    except TabGone as exc:
                        raise TabClosed(f"the {actor.t.title} tab went away: {exc}") from exc
                case GetDom():
                    try:
                        page = await actor.inspection_page(msg.project)
                        return msg.reply(await inspect.get_dom(actor.name, page, msg))
                    except TabGone as exc:
                        raise TabClosed(f"the {actor.t.title} tab went away: {exc}") from exc
                case Ask() | Probe():
                    raise AssertionError("asks and probes run in tasks of their own, not inspected")
                case _:
                    assert_never(msg)

        nursery.start_soon(actor.pool.reap)
        task_status.started()
        async for env in ctx.messages():
            msg = env.message
            if isinstance(msg, Ask | Probe):
                env.started = False  # waiting for its turn: a crash now does not count as an attempt of this ask
                if isinstance(msg, Ask):
                    nursery.start_soon(actor.asker.serve, env, msg)
                else:
                    nursery.start_soon(_one_probe, actor, env, msg)
            else:
                ctx.answer_soon(nursery, env, inspect_one)  # inspection works while asks run
        nursery.cancel_scope.cancel()


async def _one_probe(actor: ProviderActor, env: Envelope[ProviderRequest], msg: Probe) -> None:
    deadline = env.enqueued_at + msg.timeout_s
    env.started = True
    with env.cancelled_if_abandoned() as scope:
        try:
            with trio.move_on_at(deadline) as timer:
                report = await actor.probe(msg, deadline)
                env.reply(msg.reply(report))
            if timer.cancelled_caught:
                env.fail(ResponseTimeout(f"the {actor.t.title} probe did not finish within {msg.timeout_s:g}s",
                                         hint="Check the browser with bridge_status, or allow more time."))
        except TabGone as exc:
            env.fail(TabClosed(f"the {actor.t.title} tab went away during the probe: {exc}"))
        except (PageTimeout, trio.TooSlowError) as exc:  # a page that never finished loading
            env.fail(ResponseTimeout(f"the {actor.t.title} page did not load for the probe: {exc or 'timed out'}",
                                     hint="Check the tab with take_cdp_snapshot; the site may be down."))
        except (ExtensionDisconnected, TabClosed) as exc:
            env.fail(exc)
        except BridgeError as exc:
            env.fail(exc)
    if scope.cancelled_caught and not env.answered:
        env.fail(AskCancelled(f"the {actor.t.title} probe was cancelled"))
