"""Browser tools actor: the general browser tools (seeds 002 and 003) on tabs of this server's own.

Every request is gated twice before it touches a page: by safe mode (`Policy.require`: interaction and navigation
need --enable-mutations, eval --unsafe-enable-eval) and by the domain policy on the tab's current URL (and on where a
navigation goes). The extension checks the same policy again before each chrome.debugger call.

Tabs: the tools drive tabs they opened (tab_new; and tabs a page of theirs opened) and tabs they adopted (tab_select
on a tab nobody holds). A provider's ask tab is never theirs. Each server's extension connection leases its own tabs,
so two servers sharing a browser never see or touch each other's.

Requests run concurrently, one at a time per tab (a lock). A JavaScript dialog interrupts the calls in flight on its
tab (`dialog_open`); `HandleDialog` answers it. The actor talks to the extension only through relay messages
(`actors.cdp`), and keeps what must survive its restarts in the tree-owned `ToolsBook`: a restart re-attaches
lazily, and never touches the provider actors or their asks.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar, assert_never

import trio

from supervisor.constants import SHARED
from supervisor.errors import (
    BadExtensionReply,
    BridgeError,
    CdpError,
    Detached,
    ExtensionDisconnected,
    InternalError,
    NoTarget,
    PolicyDenied,
    TabClosed,
    TargetGone,
)
from supervisor.otp import ActorContext, Progress, Reply

from ..cdp import CdpTab, Extension, TabInfo
from ..protocol.browser import (
    BROWSER,
    BrowserStatus,
    CatchDownload,
    CaughtDownload,
    DownloadArmed,
    DownloadBegun,
    EnsureBrowser,
    Ownership,
)
from ..protocol.browser_tools import (
    BrowserToolsRequest,
    Click,
    ClosedReport,
    ConsoleLogs,
    DialogReport,
    Download,
    Drag,
    Emulate,
    Emulation,
    Eval,
    ExtractLinks,
    FillForm,
    GetText,
    HandleDialog,
    History,
    HistoryStep,
    Hover,
    Navigate,
    NavReport,
    NetworkLog,
    Press,
    Query,
    Resize,
    Screenshot,
    Scroll,
    SelectOption,
    Snapshot,
    TabClose,
    TabNew,
    TabOwner,
    TabSelect,
    TabsList,
    TabsReport,
    TabView,
    TextKind,
    ToolsReport,
    ToolsStatus,
    ToolTabState,
    TypeText,
    UploadFile,
    WaitFor,
)
from ..protocol.common import JSONObject
from ..protocol.relay import RELAY, LinkStatus, TabEvent
from . import downloads, emulation, interaction, navigation, reading
from .page import Page
from .policy import CAPABILITY, Capability, Policy, denied, normalize_url
from .refusals import BUSY_HINT, OLD_EXTENSION, dialog_open, extension_error
from .tab import ToolsBook, ToolTab

log = logging.getLogger("ai_bridge.browser_tools")

T = TypeVar("T")
ENSURE_BROWSER_S = 30.0


def tool_name(msg: BrowserToolsRequest) -> str:
    if isinstance(msg, History):
        return msg.step.value
    if isinstance(msg, GetText):
        return {TextKind.TEXT: "get_text", TextKind.HTML: "get_html", TextKind.MARKDOWN: "read_as_markdown"}[msg.kind]
    names = {TypeText: "type", Eval: "eval", ToolsStatus: "bridge_status"}
    return names.get(type(msg)) or "".join(f"_{c.lower()}" if c.isupper() else c for c in type(msg).__name__)[1:]


def provider_of(url: str) -> str:
    for site in SHARED.providers:
        if any(url == o or url.startswith(o + "/") for o in site.origins):
            return site.title
    return "a provider"


class BrowserTools:
    def __init__(self, ctx: ActorContext[BrowserToolsRequest], policy: Policy, book: ToolsBook,
                 nursery: trio.Nursery) -> None:
        self.ctx = ctx
        self.relay = ctx.ref(RELAY)
        self.policy = policy
        self.book = book
        self.nursery = nursery
        self.ext = Extension(self.relay, policy.wire())

    def cdp(self, tab: ToolTab) -> CdpTab:
        return CdpTab(self.relay, tab.tab_id, self.policy.wire())

    async def ensure_browser(self) -> None:
        await self.ctx.ref(BROWSER).call(EnsureBrowser(ENSURE_BROWSER_S), timeout=ENSURE_BROWSER_S + 10)
        profile, pid = await self.browser_identity()
        if self.book.switch(profile, pid):
            log.info("browser tools: the browser changed (profile %s, pid %s): the tabs held before are dropped and "
                     "their ids refused", profile, pid)

    async def catch_download(self, req: CatchDownload, click: Callable[[], Awaitable[object]]) -> CaughtDownload:
        """The browser actor's catch of the download `click` starts (once the catch is armed). A download whose URL
        the policy denies is cancelled as it begins: giving up the request cancels it."""
        armed = trio.Event()
        failed: list[BridgeError] = []  # the first failure ends both sides; raised as itself, not in a group
        got: list[CaughtDownload] = []

        def fail(exc: BridgeError) -> None:
            failed.append(exc)
            nursery.cancel_scope.cancel()

        def on_progress(item: Progress) -> None:
            if isinstance(item, DownloadArmed):
                armed.set()
            elif isinstance(item, DownloadBegun) and item.url.startswith(("http:", "https:")):
                try:
                    self.policy.check_url(item.url, "the download URL")
                except PolicyDenied as exc:
                    fail(exc)

        async def follow() -> None:
            try:
                got.append(await self.ctx.ref(BROWSER).call(req, timeout=req.start_s + req.timeout_s + 15,
                                                            on_progress=on_progress))
            except BridgeError as exc:
                fail(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(follow)
            await armed.wait()
            try:
                await click()
            except BridgeError as exc:
                fail(exc)
        if failed:
            raise failed[0]
        return got[0]

    async def browser_identity(self) -> tuple[str | None, int | None]:
        """Which browser the tab ids now belong to: the profile's id (the extension's hello) and the process (a
        relaunch numbers the tabs afresh on the same profile). The user's Chrome has no known process."""
        report = await self.ctx.ref(BROWSER).call(BrowserStatus(), timeout=10)
        link = await self.relay.call(LinkStatus(), timeout=10)
        return link.browser_id, None if report.ownership is Ownership.USER else report.pid

    def stale_error(self, tab_id: int) -> TargetGone | None:
        why = self.book.stale.get(tab_id)
        if why is None or tab_id in self.book.tabs:
            return None
        return TargetGone(f"tab {tab_id} is not known to the current browser: {why}; this browser's tab {tab_id}, "
                          "if there is one, is another tab", hint="Call tabs_list for this browser's tabs.")

    # -- errors at the extension boundary ------------------------------------------------------------------------------

    async def translate(self, tab_id: int, exc: BridgeError) -> BridgeError:
        """The extension's refusals as the tools' typed errors."""
        if isinstance(exc, TabClosed):
            tab = self.book.tabs.get(tab_id)
            if tab is not None and tab.gone:
                return TargetGone(f"tab {tab_id} was closed", hint=BUSY_HINT)
            try:
                await self.ext.tab(tab_id, timeout_s=5)
            except BridgeError:
                self.book.forget(tab_id)
                return TargetGone(f"tab {tab_id} was closed", hint=BUSY_HINT)
            if tab is not None:
                tab.attached = False
            return Detached(f"the debugger was detached from tab {tab_id} during the call",
                            hint="The next call attaches again; retry it. If you cancelled the 'is debugging this "
                            "browser' bar, that is what detached it.")
        if isinstance(exc, CdpError):
            if exc.ext_code in ("no_such_tab", "not_attached"):
                tab = self.book.tabs.get(tab_id)
                if exc.ext_code == "no_such_tab":
                    self.book.forget(tab_id)
                elif tab is not None:
                    tab.attached = False
            return extension_error(tab_id, exc)
        return exc

    # -- tabs ----------------------------------------------------------------------------------------------------------

    async def tab_for(self, tab_id: int | None) -> ToolTab:
        tid = tab_id if tab_id is not None else self.book.current
        if tid is None and self.book.lost_current is not None:
            tid = self.book.lost_current
        if tid is not None and (stale := self.stale_error(tid)) is not None:
            raise stale
        if tid is None:
            raise NoTarget("no tab is selected for the browser tools",
                           hint="Call tab_new to open one (needs --enable-mutations), or tabs_list and tab_select.")
        tab = self.book.tabs.get(tid)
        if tab is None:
            info = await self.tab_info(tid)
            if not info.claimed_by_me:
                raise NoTarget(f"tab {tid} is not held by the browser tools", hint=f"Call tab_select({tid}) first.")
            tab = self.book.tabs.setdefault(tid, ToolTab(tid, TabOwner.TOOLS, url=info.url, title=info.title))
        if tab.gone:
            self.book.forget(tid)
            raise TargetGone(f"tab {tid} was closed", hint=BUSY_HINT)
        return tab

    async def tab_info(self, tab_id: int) -> TabInfo:
        try:
            return await self.ext.tab(tab_id)
        except (CdpError, TabClosed) as exc:
            if isinstance(exc, TabClosed) or exc.ext_code == "no_such_tab":
                raise NoTarget(f"there is no tab {tab_id}", hint=BUSY_HINT) from exc
            raise await self.translate(tab_id, exc) from exc

    async def attach(self, tab: ToolTab) -> None:
        if tab.attached:
            return
        info = await self.ext.attach(tab.tab_id, claim=tab.owner is TabOwner.TOOLS)
        if info is None:  # an extension from before the browser tools answers a plain {}
            raise BadExtensionReply("the extension attached without the browser tools' policy checks",
                                    hint=OLD_EXTENSION)
        tab.url, tab.title = info.url or tab.url, info.title
        if tab.events is None:
            send, recv = trio.open_memory_channel[TabEvent](2000)
            tab.events = send
            self.nursery.start_soon(self.pump, tab, recv)
        tab.subscribed = ()
        page = Page(tab, self.cdp(tab), self.policy)
        if tab.network is None:  # the network log runs from the tab's lease on
            tab.network = page.network_buffer()
        await page.subscribe()
        # Buffers that outlived a detach or a restart of this actor go on collecting. A failure here does not fail
        # the call (Runtime.enable is refused on a denied page the call may be leaving): the next watch retries.
        tab.console_on = tab.network_on = False
        tab.emulation = Emulation()  # a new debugger session has no overrides
        for console, network in ((True, False), (False, True)):
            try:
                await page.enable(console=console, network=network)
            except CdpError as exc:
                log.info("tab %d: %s collection not re-enabled yet: %s", tab.tab_id,
                         "console" if console else "network", exc.message[:200])
        tab.attached, tab.detached, tab.world = True, None, None
        await navigation.poll_ready(page)  # the load state of the document we found

    async def pump(self, tab: ToolTab, recv: trio.MemoryReceiveChannel[TabEvent]) -> None:
        async with recv:
            async for ev in recv:
                tab.on_event(ev)
                if tab.gone:
                    tab.events = None
                    return

    def view(self, info: TabInfo, owner: TabOwner) -> TabView:
        # A title is page content: not from a page outside the policy, even one of our own tabs went to.
        return TabView(info.tab_id, info.url, info.title if info.allowed else "", owner,
                       info.tab_id == self.book.current, info.active, bool(info.allowed))

    async def tabs_list(self) -> TabsReport:
        try:
            infos = await self.ext.tabs()
        except CdpError as exc:
            raise extension_error(-1, exc) from exc
        views: list[TabView] = []
        hidden = 0
        for info in infos:
            held = self.book.tabs.get(info.tab_id)
            if info.lease_kind == "provider":
                owner = TabOwner.PROVIDER
            elif info.claimed_by_me:
                owner = TabOwner.TOOLS
                if held is None:  # opened by a page in one of our tabs
                    self.book.tabs[info.tab_id] = ToolTab(info.tab_id, TabOwner.TOOLS, url=info.url, title=info.title)
            elif held is not None or info.lease_kind == "general":
                owner = TabOwner.ADOPTED
            else:
                owner = TabOwner.FREE
            if owner is TabOwner.FREE and not info.allowed:
                hidden += 1
                continue
            views.append(self.view(info, owner))
        present = {i.tab_id for i in infos}
        for tid in present:  # listed in this browser: the caller now knows them for what they are here
            self.book.stale.pop(tid, None)
        if self.book.lost_current in present:
            self.book.lost_current = None
        for tid in [t for t in self.book.tabs if t not in present]:
            self.book.forget(tid)
        return TabsReport(self.book.current, tuple(views), hidden)

    async def tab_new(self, msg: TabNew) -> NavReport:
        url = normalize_url(msg.url) if msg.url else None
        if url is not None:
            self.policy.check_url(url, "the new tab's URL")
        try:
            info = await self.ext.create_tab("about:blank", new_window=False, timeout_s=10)
        except CdpError as exc:
            raise extension_error(-1, exc) from exc
        tab = ToolTab(info.tab_id, TabOwner.TOOLS, url="about:blank")
        self.book.tabs[info.tab_id] = tab
        self.book.stale.pop(info.tab_id, None)
        self.book.current = info.tab_id
        self.book.lost_current = None
        if url is None:
            return await self.on_tab(info.tab_id, lambda page: navigation.report(page, msg.wait_until))
        return await self.on_tab(info.tab_id, lambda page: navigation.navigate(page, url, msg.wait_until,
                                                                                msg.timeout_s), leaving=True)

    async def tab_select(self, msg: TabSelect) -> TabView:
        if (stale := self.stale_error(msg.tab_id)) is not None:
            raise stale
        info = await self.tab_info(msg.tab_id)
        if info.lease_kind == "provider":
            raise NoTarget(f"tab {msg.tab_id} is {provider_of(info.url)}'s ask tab; the browser tools never drive it",
                           hint=BUSY_HINT)
        if not info.allowed:
            if info.url:  # one of ours: its URL is known (a title never is)
                raise denied(f"tab {msg.tab_id}", info.url)
            raise PolicyDenied(f"tab {msg.tab_id} shows a page outside the allowed domains",
                               hint="Only tabs on allowed domains can be selected (--allow-domain).")
        tab = self.book.tabs.get(msg.tab_id)
        if tab is None:
            tab = ToolTab(msg.tab_id, TabOwner.TOOLS if info.claimed_by_me else TabOwner.ADOPTED, url=info.url,
                          title=info.title)
            self.book.tabs[msg.tab_id] = tab

        async def select(page: Page) -> None:
            await self.ext.activate(msg.tab_id)

        await self.on_tab(msg.tab_id, select)
        self.book.current = msg.tab_id
        self.book.lost_current = None
        return TabView(msg.tab_id, tab.url, tab.title, tab.owner, True, True, True)

    async def tab_close(self, msg: TabClose) -> ClosedReport:
        tab = await self.tab_for(msg.tab_id)
        closed = tab.owner is TabOwner.TOOLS
        try:
            if closed:
                await self.ext.close(tab.tab_id)
            else:
                await self.ext.detach(tab.tab_id)  # not ours to close: released, left open
        except (CdpError, TabClosed) as exc:
            err = await self.translate(tab.tab_id, exc)
            if not isinstance(err, TargetGone):
                raise err from exc
        self.book.forget(tab.tab_id)
        return ClosedReport(tab.tab_id, closed, self.book.current)

    # -- one call on a tab ---------------------------------------------------------------------------------------------

    async def on_tab(self, tab_id: int | None, fn: Callable[[Page], Awaitable[T]], *, leaving: bool = False) -> T:
        """Run `fn` on the tab: attached, its URL allowed (unless the call only leaves the page: its destination is
        checked instead), one call at a time, interrupted by a dialog or the tab closing."""
        tab = await self.tab_for(tab_id)
        async with tab.lock:
            if tab.dialog is not None:
                raise dialog_open(tab, interrupted=False)
            try:
                await self.attach(tab)
                if not leaving:
                    self.policy.check_url(tab.url, f"tab {tab.tab_id}")
                page = Page(tab, self.cdp(tab), self.policy)
                with trio.CancelScope() as scope:
                    tab.scopes.add(scope)
                    try:
                        return await fn(page)
                    finally:
                        tab.scopes.discard(scope)
            except (CdpError, TabClosed) as exc:
                raise await self.translate(tab.tab_id, exc) from exc
            # Only an interrupt of ours ends up here (an outer cancel propagates out of the scope).
            if tab.dialog is not None:
                raise dialog_open(tab, interrupted=True)
            self.book.forget(tab.tab_id)
            raise TargetGone(f"tab {tab.tab_id} was closed during the call", hint=BUSY_HINT)

    async def handle_dialog(self, msg: HandleDialog) -> DialogReport:
        tab = await self.tab_for(msg.tab_id)
        dialog = tab.dialog
        if dialog is None:
            raise NoTarget(f"no dialog is open on tab {tab.tab_id}", hint="Nothing to answer.")
        params: JSONObject = {"accept": msg.accept}
        if msg.prompt_text is not None:
            params["promptText"] = msg.prompt_text
        try:
            await self.cdp(tab).send("Page.handleJavaScriptDialog", params, timeout_s=10)
        except (CdpError, TabClosed) as exc:
            raise await self.translate(tab.tab_id, exc) from exc
        tab.dialog = None
        tab.notify()
        return DialogReport(tab.tab_id, dialog, msg.accept)

    def status(self) -> ToolsReport:
        tabs = tuple(ToolTabState(t.tab_id, t.url, t.owner, t.attached, t.dialog,
                                  len(t.console.entries) if t.console else None,
                                  len(t.network.requests) if t.network else None)
                     for t in self.book.tabs.values())
        return ToolsReport(self.policy.mutations, self.policy.eval, self.policy.hosts, self.book.current, tabs)

    # -- requests ------------------------------------------------------------------------------------------------------

    async def handle(self, msg: BrowserToolsRequest) -> Reply[object]:
        """`serve`, with a failure no check foresaw contained to the call that met it (issue 36): its tool fails with
        `internal_error` (the traceback is logged), and the actor, with every tab and call it holds, goes on. Left to
        crash it, three such calls (each re-delivered once) would have stopped the whole tools branch."""
        try:
            return await self.serve(msg)
        except BridgeError:
            raise
        except Exception as exc:  # trio.Cancelled is a BaseException: cancellation still goes through
            log.exception("browser tools: %s failed on an unexpected error", tool_name(msg))
            raise InternalError(f"{tool_name(msg)} failed on an unexpected error ({type(exc).__name__}: "
                                f"{str(exc)[:200]}); the browser tools go on",
                                hint="A bug: the server log has the details. Other calls are not affected.") from exc

    async def serve(self, msg: BrowserToolsRequest) -> Reply[object]:
        self.policy.require(msg, tool_name(msg))  # bridge_status reads: always allowed
        if isinstance(msg, Navigate | TabNew) and msg.url:
            # A target the policy denies is refused before any browser is waited for or launched (checked again
            # where the navigation is sent, and by the extension).
            self.policy.check_url(normalize_url(msg.url), "the navigation target")
        try:
            return await self.run_request(msg)
        except ExtensionDisconnected:
            if not repeatable(msg):
                raise  # it may have acted before the link dropped: doing it again is the agent's call
            # The link dropped under a read: the browser died (its socket closed before the relay noticed) or the
            # extension restarted. Reading again is harmless, and meets the browser as it now is.
            log.info("browser tools: the extension link dropped during %s; reading again", tool_name(msg))
            return await self.run_request(msg)

    async def run_request(self, msg: BrowserToolsRequest) -> Reply[object]:
        if isinstance(msg, ToolsStatus):
            return msg.reply(self.status())  # what this server holds: no browser needed
        await self.ensure_browser()
        match msg:
            case TabsList():
                return msg.reply(await self.tabs_list())
            case TabNew():
                return msg.reply(await self.tab_new(msg))
            case TabSelect():
                return msg.reply(await self.tab_select(msg))
            case TabClose():
                return msg.reply(await self.tab_close(msg))
            case HandleDialog():
                return msg.reply(await self.handle_dialog(msg))
            case Navigate():
                url, wait, timeout = msg.url, msg.wait_until, msg.timeout_s
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: navigation.navigate(p, url, wait, timeout),
                                                   leaving=True))
            case History():
                # back/forward leave the page (their entry's URL is checked); a reload reads it again.
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: navigation.history(p, msg),
                                                   leaving=msg.step is not HistoryStep.RELOAD))
            case Click():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: interaction.click(p, msg)))
            case Hover():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: interaction.hover(p, msg)))
            case TypeText():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: interaction.type_text(p, msg)))
            case Press():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: interaction.press(p, msg)))
            case Scroll():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: interaction.scroll(p, msg)))
            case SelectOption():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: interaction.select_option(p, msg)))
            case Drag():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: interaction.drag(p, msg)))
            case FillForm():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: interaction.fill_form(p, msg)))
            case Snapshot():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: reading.snapshot(p, msg)))
            case Screenshot():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: reading.screenshot(p, msg)))
            case GetText():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: reading.get_text(p, msg)))
            case ExtractLinks():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: reading.extract_links(p, msg)))
            case Query():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: reading.query(p, msg)))
            case WaitFor():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: reading.wait_for(p, msg)))
            case ConsoleLogs():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: reading.console_logs(p, msg)))
            case NetworkLog():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: reading.network_log(p, msg)))
            case Eval():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: reading.evaluate(p, msg)))
            case Download():
                catch = self.catch_download
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: downloads.download(p, msg, catch)))
            case UploadFile():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: interaction.upload_file(p, msg)))
            case Emulate():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: emulation.emulate(p, msg)))
            case Resize():
                return msg.reply(await self.on_tab(msg.tab_id, lambda p: emulation.resize(p, msg)))
            case _:
                assert_never(msg)


def repeatable(msg: BrowserToolsRequest) -> bool:
    """A request that only reads (answering a dialog is not: the dialog would be gone)."""
    return CAPABILITY[type(msg)] is Capability.READ and not isinstance(msg, HandleDialog)


async def run(
    ctx: ActorContext[BrowserToolsRequest],
    *,
    policy: Policy,
    book: ToolsBook,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    for tab in book.tabs.values():
        tab.reset()  # what the last incarnation attached, subscribed and built is gone with it
    if ctx.restarts == 0:
        mode = "mutations on" if policy.mutations else "safe mode (read-only)"
        log.info("browser tools: %s, eval %s, allowed domains: %s", mode, "on" if policy.eval else "off",
                 ", ".join(policy.hosts) or "none")
        if "*" in policy.hosts:
            logging.getLogger("ai_bridge.security").warning(
                "browser tools: --allow-domain * lets them touch every site in this browser")
    async with trio.open_nursery() as nursery:
        tools = BrowserTools(ctx, policy, book, nursery)
        task_status.started()
        async for env in ctx.messages():
            if isinstance(env.message, ToolsStatus):
                await ctx.answer(env, tools.handle)
            else:
                ctx.answer_soon(nursery, env, tools.handle)  # per-tab locks order them; waits must not block
        nursery.cancel_scope.cancel()
