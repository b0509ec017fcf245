"""Issue 24's findings, reproduced without a browser: the actor and a tab's page driven through fakes of the browser
actor, the relay's link status and the extension's tab commands."""

from __future__ import annotations

import base64
import struct
from typing import Any

import attrs
import pytest

from actors.browser_tools import reading
from actors.browser_tools.actor import BrowserTools
from actors.browser_tools.page import Page
from actors.browser_tools.policy import Policy
from actors.browser_tools.tab import ToolsBook, ToolTab
from actors.cdp import TabInfo
from actors.protocol import browser_tools as bt
from actors.protocol.browser import BrowserStatus, EnsureBrowser, Ownership
from actors.protocol.relay import LinkStatus
from supervisor.errors import CdpError, ExtensionDisconnected, PolicyDenied, TargetGone


@attrs.define
class FakeRef:
    owner: FakeWorld

    async def call(self, msg: object, *, timeout: float | None = None) -> Any:
        if isinstance(msg, EnsureBrowser):
            return None
        if isinstance(msg, BrowserStatus):
            return attrs.evolve(self.owner.browser_report)
        if isinstance(msg, LinkStatus):
            return self.owner.link_report
        raise AssertionError(f"unexpected {msg!r}")


@attrs.define
class Report:
    ownership: Ownership | None
    pid: int | None
    browser_id: str | None = None


@attrs.define
class FakeWorld:
    browser_report: Report
    link_report: Report
    attached: list[tuple[int, bool]] = attrs.field(factory=list)

    def ref(self, _address: object) -> FakeRef:
        return FakeRef(self)


class FakeExt:
    def __init__(self, world: FakeWorld) -> None:
        self.world = world

    async def tab(self, tab_id: int, *, timeout_s: float = 10.0) -> TabInfo:
        # The new browser has a tab of that number, which nobody holds.
        return TabInfo(tab_id, "https://a.test/other", "Another tab", allowed=True)

    async def attach(self, tab_id: int, *, claim: bool = False, timeout_s: float = 10.0) -> TabInfo:
        self.world.attached.append((tab_id, claim))
        return TabInfo(tab_id, "https://a.test/other", "Another tab", allowed=True, claimed_by_me=claim)


def tools_in(world: FakeWorld, book: ToolsBook) -> BrowserTools:
    tools = BrowserTools.__new__(BrowserTools)
    tools.ctx = world  # type: ignore[assignment]
    tools.relay = FakeRef(world)  # type: ignore[assignment]
    tools.policy = Policy(("a.test",), mutations=True, eval=False)
    tools.book = book
    tools.ext = FakeExt(world)  # type: ignore[assignment]
    return tools


@pytest.mark.parametrize("switch", ["relaunch", "handover"])
async def test_a_tab_id_of_the_browser_before_a_switch_is_a_typed_error_never_a_claim(switch: str) -> None:
    world = FakeWorld(Report(Ownership.LAUNCHED, 100), Report(None, None, "profile-A"))
    book = ToolsBook()
    tools = tools_in(world, book)
    await tools.ensure_browser()
    book.tabs[5] = ToolTab(5, bt.TabOwner.TOOLS, url="https://a.test/")
    book.current = 5
    if switch == "relaunch":  # the same profile, a new process: Chrome numbers its tabs afresh
        world.browser_report = Report(Ownership.LAUNCHED, 200)
    else:  # auto mode closed ours for the user's Chrome
        world.browser_report, world.link_report = Report(Ownership.USER, None), Report(None, None, "profile-U")
    await tools.ensure_browser()

    async def nothing(page: Page) -> None:
        return None

    for tab_id in (None, 5):  # the remembered current tab, and the id named outright
        with pytest.raises(TargetGone, match="not known to the current browser"):
            await tools.on_tab(tab_id, nothing)
    with pytest.raises(TargetGone, match="not known to the current browser"):
        await tools.tab_select(bt.TabSelect(5))
    assert world.attached == []  # nothing was claimed (a later tab_close would have closed it)


async def test_a_worker_restart_keeps_the_tabs() -> None:
    world = FakeWorld(Report(Ownership.LAUNCHED, 100), Report(None, None, "profile-A"))
    book = ToolsBook()
    tools = tools_in(world, book)
    await tools.ensure_browser()
    book.tabs[5] = ToolTab(5, bt.TabOwner.TOOLS, url="https://a.test/")
    book.current = 5
    world.link_report = Report(None, None, "profile-A")  # a new connection from the same browser
    await tools.ensure_browser()
    assert book.current == 5 and 5 in book.tabs and not book.stale


class FailingCdp:
    """Network.enable / Runtime.enable fail the first time (a detach mid-call, a busy browser), then work."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.fail = {"Network.enable", "Runtime.enable"}

    async def send(self, method: str, params: object = None, *, timeout_s: float = 30.0) -> dict[str, object]:
        self.sent.append(method)
        if method in self.fail:
            self.fail.discard(method)
            raise CdpError(f"{method}: Internal error", ext_code="cdp_error")
        return {}

    async def subscribe(self, methods: object, sink: object) -> None:
        return None


@pytest.mark.parametrize("what", ["network", "console"])
async def test_a_failed_enable_is_retried_on_the_next_call(what: str) -> None:
    tab = ToolTab(1, bt.TabOwner.TOOLS, url="https://a.test/")
    cdp = FailingCdp()
    page = Page(tab, cdp, Policy(("a.test",), mutations=False, eval=False))  # type: ignore[arg-type]
    method = "Network.enable" if what == "network" else "Runtime.enable"
    with pytest.raises(CdpError):
        await page.watch(**{what: True})
    await page.watch(**{what: True})
    assert cdp.sent.count(method) == 2  # collection is on after all


class PageThatMoved:
    """The extension passed the read (the tab's URL was allowed when it checked), but the document the page script
    read is another one: it names its own URL and origin in the reply."""

    def __init__(self, url: str, origin: str) -> None:
        self.reply = {"url": url, "origin": origin, "text": "the secret text"}

    async def send(self, method: str, params: object = None, *, timeout_s: float = 30.0) -> dict[str, object]:
        assert method == "Runtime.callFunctionOn", method
        return {"result": {"value": self.reply}}


@pytest.mark.parametrize(("url", "origin", "allowed"), [
    ("https://b.test/secret", "https://b.test", False),  # navigated to a denied page between check and read
    ("about:blank", "https://b.test", False),  # a blank document a denied page made and filled
    ("https://a.test/page", "https://a.test", True),
])
async def test_the_server_checks_the_document_each_read_came_from(url: str, origin: str, allowed: bool) -> None:
    """docs/security.md: every page-script read comes back with the document's URL and is checked again before its
    content is used: the server's own check, whatever the extension let through."""
    tab = ToolTab(1, bt.TabOwner.TOOLS, url="https://a.test/", world=7)
    page = Page(tab, PageThatMoved(url, origin), Policy(("a.test",), mutations=False, eval=False))  # type: ignore[arg-type]
    if allowed:
        assert (await page.raw_op("text"))["text"] == "the secret text"
    else:
        with pytest.raises(PolicyDenied, match=r"b\.test"):
            await page.raw_op("text")


def test_a_screenshot_too_big_for_a_frame_is_retaken_as_jpeg_then_smaller() -> None:
    from actors.browser_tools.reading import FIT_CHARS, _smaller, too_large
    from actors.protocol.browser_tools import ImageFormat
    from supervisor.errors import BridgeError

    assert too_large(CdpError("cdp.batch failed: result too large for one frame (82262578 chars)")) == 82262578
    assert too_large(BridgeError("something else")) is None
    clip = {"x": 0, "y": 0, "width": 1000, "height": 8192, "scale": 1}
    capture, fmt, warning = _smaller(("Page.captureScreenshot", {"format": "png", "clip": clip}), 82_000_000,
                                     ImageFormat.PNG)
    assert fmt is ImageFormat.JPEG and capture[1]["format"] == "jpeg" and capture[1]["clip"]["scale"] == 1
    assert "JPEG quality 70" in warning and "scaled" not in warning
    capture, fmt, warning = _smaller(capture, 30_000_000, ImageFormat.PNG)
    scale = capture[1]["clip"]["scale"]  # type: ignore[index]
    assert 0.05 <= scale <= (FIT_CHARS / 30_000_000) ** 0.5 and "scaled to" in warning


@pytest.mark.parametrize("request_, again", [
    (bt.GetText(), True),
    (bt.TabsList(), True),
    (bt.Click(bt.Target(selector="#a")), False),
    (bt.HandleDialog(accept=False), False),
])
async def test_a_read_that_meets_a_dropped_link_is_done_again_never_an_action(request_: bt.BrowserToolsRequest,
                                                                             again: bool) -> None:
    """The browser was killed and its socket closed, but the relay had not noticed when the call went out: the
    pending command fails with extension_disconnected. A read is done again (it meets the browser as it now is); an
    action may have happened, so it is the agent's to repeat."""
    world = FakeWorld(Report(Ownership.LAUNCHED, 100), Report(None, None, "profile-A"))
    tools = tools_in(world, ToolsBook())
    tries: list[object] = []

    async def run_request(msg: bt.BrowserToolsRequest) -> Any:
        tries.append(msg)
        if len(tries) == 1:
            raise ExtensionDisconnected("the browser extension disconnected while a command was pending")
        return "read again"

    tools.run_request = run_request  # type: ignore[method-assign]
    if again:
        assert await tools.handle(request_) == "read again"
        assert tries == [request_, request_]
    else:
        with pytest.raises(ExtensionDisconnected):
            await tools.handle(request_)
        assert tries == [request_]


PNG_B64 = base64.b64encode(b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 4, 3)
                           + b"\x08\x02\x00\x00\x00").decode()


class ShotCdp:
    """A tab's CDP under a screenshot: each cdp.batch meets the next outcome of `plan` (an error, or the page's
    document as the mask and unmask ops name it); single commands make and fill a new world."""

    def __init__(self, *plan: BaseException | tuple[str, str]) -> None:
        self.plan = list(plan)
        self.content = {"width": 800, "height": 5000}  # the page's size (Page.getLayoutMetrics)
        self.batches: list[list[tuple[str, dict[str, Any]]]] = []
        self.sent: list[str] = []

    async def batch(self, commands: list[tuple[str, dict[str, Any]]], *, timeout_s: float) -> list[dict[str, Any]]:
        self.batches.append(commands)
        if commands[-1][0] == "Page.getLayoutMetrics":
            return [{}, {"cssContentSize": self.content}]
        outcome = self.plan.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        url, origin = outcome
        doc = {"result": {"value": {"ok": True, "url": url, "origin": origin, "masked": 0, "restored": 0}}}
        return [doc, {}, {"data": PNG_B64}, {"result": {"value": True}}]

    async def send(self, method: str, params: object = None, *, timeout_s: float = 30.0) -> dict[str, Any]:
        self.sent.append(method)
        if method == "Page.getFrameTree":
            return {"frameTree": {"frame": {"id": "F2"}}}
        if method == "Page.createIsolatedWorld":
            return {"executionContextId": 9}
        return {"result": {"value": {"ok": True, "url": "https://a.test/", "origin": "https://a.test"}}}


def shot_page(cdp: ShotCdp) -> Page:
    tab = ToolTab(1, bt.TabOwner.TOOLS, url="https://a.test/", world=7, frame_id="F1")
    return Page(tab, cdp, Policy(("a.test",), mutations=False, eval=False))  # type: ignore[arg-type]


def methods(batch: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [m for m, _ in batch]


@pytest.mark.parametrize(("url", "origin"), [("https://b.test/secret", "https://b.test"),
                                             ("about:blank", "https://b.test")])
async def test_a_screenshot_of_a_document_outside_the_policy_is_refused(url: str, origin: str) -> None:
    """The mask, the capture and the guard (which unmasks) go out in one batch; the document the mask op names is
    checked before the picture is used (a denied page, or a blank one a denied frame made)."""
    cdp = ShotCdp((url, origin))
    with pytest.raises(PolicyDenied, match=r"b\.test"):
        await reading.screenshot(shot_page(cdp), bt.Screenshot())
    assert methods(cdp.batches[0]) == ["Runtime.callFunctionOn", "Page.bringToFront", "Page.captureScreenshot",
                                       "Runtime.evaluate"]
    assert cdp.sent == []  # the guard unmasked


async def test_a_screenshot_the_guard_refused_is_not_taken_again_and_the_frames_are_unmasked() -> None:
    refused = CdpError("cdp.batch failed: the page restyled a masked frame: screenshot refused",
                       ext_code="policy_denied")
    cdp = ShotCdp(refused, ("https://a.test/", "https://a.test"))
    with pytest.raises(CdpError, match="restyled"):
        await reading.screenshot(shot_page(cdp), bt.Screenshot())
    assert len(cdp.batches) == 1 and cdp.sent == ["Runtime.callFunctionOn"]  # the unmask, on its own


@pytest.mark.parametrize("lost", [
    CdpError("cdp.batch failed: Cannot find context with specified id", ext_code="cdp_error"),
    CdpError("cdp.batch failed: the check failed (\"TypeError\")", ext_code="policy_denied"),  # no script of ours
])
async def test_a_screenshot_whose_world_went_away_is_taken_in_a_new_one(lost: CdpError) -> None:
    cdp = ShotCdp(lost, ("https://a.test/", "https://a.test"))
    report = await reading.screenshot(shot_page(cdp), bt.Screenshot())
    assert (report.width, report.height) == (4, 3) and len(cdp.batches) == 2
    assert "Page.createIsolatedWorld" in cdp.sent and cdp.batches[1][0][1]["executionContextId"] == 9


async def test_a_fast_png_too_big_for_a_frame_is_encoded_the_small_way_first() -> None:
    """optimizeForSpeed makes a PNG bigger (~30%, several times for a smooth gradient): one that does not fit a frame
    is retaken as the same PNG encoded the small way, with no warning; a clip too big for a fast PNG to be worth a try
    is encoded the small way at once."""
    cdp = ShotCdp(CdpError("cdp.batch failed: result too large for one frame (40000000 chars)", ext_code="cdp_error"),
                  ("https://a.test/", "https://a.test"), ("https://a.test/", "https://a.test"))
    report = await reading.screenshot(shot_page(cdp), bt.Screenshot(mode=bt.ShotMode.FULL_PAGE))
    first, second = (dict(b)["Page.captureScreenshot"] for b in cdp.batches[1:])
    assert first["optimizeForSpeed"] is True and "optimizeForSpeed" not in second
    assert second["format"] == "png" and report.mime == "image/png" and report.warning is None
    cdp.content = {"width": 3000, "height": 3000}
    await reading.screenshot(shot_page(cdp), bt.Screenshot(mode=bt.ShotMode.FULL_PAGE))
    assert "optimizeForSpeed" not in dict(cdp.batches[-1])["Page.captureScreenshot"]
