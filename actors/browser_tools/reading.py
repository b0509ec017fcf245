"""Reading: snapshot, screenshots, text / HTML / markdown, links, query, wait_for, console and network logs, eval.

Everything read here is page data: untrusted input to the agent. Page-script reads come back with the document's URL
and pass the domain policy before they are used (`Page._checked`); screenshots and eval are bracketed by the same
check in the same extension round trip.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import struct

import trio

from supervisor.errors import BridgeError, BrowserTimeout, CdpError, CommandTimeout, InvalidArgument

from ..protocol.browser_tools import (
    Box,
    ConsoleLogs,
    ConsoleReport,
    ElementInfo,
    ElementState,
    Eval,
    EvalReport,
    ExtractLinks,
    FormField,
    GetText,
    ImageFormat,
    Link,
    LinksReport,
    NetworkBody,
    NetworkLog,
    NetworkReport,
    PageMetadata,
    Query,
    QueryReport,
    Screenshot,
    ScreenshotReport,
    ShotMode,
    Snapshot,
    SnapshotReport,
    TextKind,
    TextReport,
    Visibility,
    WaitFor,
    WaitReport,
)
from ..protocol.common import JSON, JSONObject
from . import navigation
from . import page as pg
from .page import Page, guard, target_json
from .policy import is_blank

MAX_SHOT_SIDE = 8192  # CSS px each way of a full-page or element screenshot; bigger ones are cut (truncated: true)
MAX_EVAL_JSON = 256_000
log = logging.getLogger("ai_bridge.browser_tools")
WAIT_POLL_S = 0.1


async def snapshot(page: Page, msg: Snapshot) -> SnapshotReport:
    got = await page.op("snapshot", {"root": target_json(msg.root), "interactiveOnly": msg.interactive_only,
                                     "roles": list(msg.roles), "maxDepth": msg.max_depth, "maxChars": msg.max_chars},
                        timeout_s=30)
    return SnapshotReport(page.tab.tab_id, page.tab.url, page.tab.title, pg.text(got, "text"),
                          pg.integer(got, "nodes"), pg.integer(got, "refs"), pg.integer(got, "chars"),
                          pg.flag(got, "truncated"))


def image_size(data_b64: str, fmt: ImageFormat) -> tuple[int, int]:
    if fmt is ImageFormat.PNG:
        head = base64.b64decode(data_b64[:32])
        if len(head) >= 24 and head[:8] == b"\x89PNG\r\n\x1a\n":
            w, h = struct.unpack(">II", head[16:24])
            return int(w), int(h)
        return 0, 0
    raw = base64.b64decode(data_b64)
    i = 2
    while i + 9 < len(raw):  # JPEG: walk the segments to the frame header (SOF0..SOF15 but DHT/JPG/DAC)
        if raw[i] != 0xFF:
            break
        marker, length = raw[i + 1], struct.unpack(">H", raw[i + 2:i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", raw[i + 5:i + 9])
            return int(w), int(h)
        i += 2 + length
    return 0, 0


def _capped(clip: JSONObject) -> tuple[JSONObject, bool]:
    """A capture rectangle within MAX_SHOT_SIDE CSS px each way (Chromium aborts the whole browser on a capture some
    65,000 px wide); whether it was cut."""
    width, height = float(str(clip["width"])), float(str(clip["height"]))
    cut = width > MAX_SHOT_SIDE or height > MAX_SHOT_SIDE
    return {**clip, "width": max(1.0, min(width, MAX_SHOT_SIDE)), "height": max(1.0, min(height, MAX_SHOT_SIDE))}, cut


async def screenshot(page: Page, msg: Screenshot) -> ScreenshotReport:
    fmt: JSONObject = {"format": msg.format.value}
    if msg.format is ImageFormat.JPEG:
        fmt["quality"] = msg.quality
    # A tab that was shown and then hidden can hang captureScreenshot (NOTES.md): bring it to front first.
    front: tuple[str, JSONObject] = ("Page.bringToFront", {})
    element = None
    truncated = False
    full_height: float | None = None
    # Sealed frames (cross-origin, or outside the policy) are hidden while the picture is taken; the guard after the
    # capture, in the same extension batch, refuses it if the page touched the mask meanwhile. The mask op is also
    # the policy check on the document (its URL and origin: an about:blank popup a denied frame filled is refused).
    if msg.mode is ShotMode.VIEWPORT:
        capture: tuple[str, JSONObject] = ("Page.captureScreenshot", fmt)
    elif msg.mode is ShotMode.FULL_PAGE:
        metrics = (await page.cdp.batch([front, ("Page.getLayoutMetrics", {})], timeout_s=10))[1]
        size = pg.obj(metrics.get("cssContentSize") or metrics.get("contentSize"), "contentSize")
        width, full_height = pg.num(size, "width"), pg.num(size, "height")
        clip, truncated = _capped({"x": 0, "y": 0, "width": width, "height": full_height, "scale": 1})
        capture = ("Page.captureScreenshot", {**fmt, "clip": clip, "captureBeyondViewport": True})
    else:
        assert msg.target is not None
        got = await page.op_until("rect", {"target": msg.target.as_json()}, msg.timeout_s)
        element = pg.opt_brief(got.get("element"))
        clip, truncated = _capped({"x": pg.num(got, "x"), "y": pg.num(got, "y"), "width": pg.num(got, "width"),
                                   "height": pg.num(got, "height"), "scale": 1})
        capture = ("Page.captureScreenshot", {**fmt, "clip": clip})
    await page.op("mask")
    warning: str | None = None
    shot_format = msg.format
    try:
        held = await guard(page, "mask")
        for attempt in range(FIT_ATTEMPTS):
            try:
                shot = (await page.cdp.batch([front, capture, held], timeout_s=60))[1]
                break
            except BridgeError as exc:
                over = too_large(exc)
                if over is None or attempt == FIT_ATTEMPTS - 1:
                    raise
                if "clip" not in capture[1]:  # the viewport: the same picture as a clip, which can be scaled
                    metrics = (await page.cdp.batch([("Page.getLayoutMetrics", {})], timeout_s=10))[0]
                    vv = pg.obj(metrics.get("cssVisualViewport"), "cssVisualViewport")
                    capture = ("Page.captureScreenshot", {**capture[1], "clip": {
                        "x": pg.num(vv, "pageX"), "y": pg.num(vv, "pageY"), "width": pg.num(vv, "clientWidth"),
                        "height": pg.num(vv, "clientHeight"), "scale": 1}})
                capture, shot_format, warning = _smaller(capture, over, msg.format)
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(5):
            try:
                await page.op("unmask")
            except BridgeError as exc:  # the page went away: nothing is left to restore
                log.debug("tab %d: unmask after a screenshot failed: %s", page.tab.tab_id, exc)
    page.policy.check_url(page.tab.url, f"tab {page.tab.tab_id}")
    data = pg.text(shot, "data")
    width_px, height_px = image_size(data, shot_format)
    if warning is not None:
        log.info("tab %d: screenshot: %s", page.tab.tab_id, warning)
    return ScreenshotReport(page.tab.tab_id, page.tab.url, msg.mode, data, f"image/{shot_format.value}", width_px,
                            height_px, truncated, full_height, element, warning)


FIT_ATTEMPTS = 6
FIT_CHARS = 3_400_000  # what a screenshot's reply may take of one 4 MiB extension frame
JPEG_FALLBACK_QUALITY = 70


def too_large(exc: BridgeError) -> int | None:
    """The size in characters of a reply the extension could not send in one frame, else None."""
    m = re.search(r"result too large for one frame \((\d+) chars\)", exc.message)
    return int(m.group(1)) if m else None


def _smaller(capture: tuple[str, JSONObject], size: int,
             asked: ImageFormat) -> tuple[tuple[str, JSONObject], ImageFormat, str]:
    """The next capture to try after one of `size` characters did not fit a frame: JPEG first, then scaled down
    (the clip's scale) by the square root of how far over it was, with a margin."""
    method, params = capture
    clip = pg.obj(params.get("clip"), "clip")
    scale = float(str(clip.get("scale", 1)))
    if params.get("format") != "jpeg":
        params = {**params, "format": "jpeg", "quality": JPEG_FALLBACK_QUALITY}
    else:
        scale *= max(0.05, min(0.9, (FIT_CHARS / size) ** 0.5 * 0.9))
        params = {**params, "clip": {**clip, "scale": scale}}
    was = "PNG" if asked is ImageFormat.PNG else "JPEG"
    note = (f"the {was} image was too big for one 4 MiB frame ({size / 1e6:.1f} MB as base64): sent as JPEG "
            f"quality {params.get('quality', JPEG_FALLBACK_QUALITY)}")
    if scale < 1:
        note += f", scaled to {scale * 100:.0f}% (pixels below the page's own resolution)"
    return (method, params), ImageFormat.JPEG, note


async def get_text(page: Page, msg: GetText) -> TextReport:
    op = {TextKind.TEXT: "text", TextKind.HTML: "html", TextKind.MARKDOWN: "markdown"}[msg.kind]
    got = await page.op(op, {"target": target_json(msg.target), "max": msg.max_chars}, timeout_s=max(msg.timeout_s, 10))
    return TextReport(page.tab.tab_id, page.tab.url, page.tab.title, msg.kind, pg.text(got, "text"),
                      pg.integer(got, "chars"), pg.flag(got, "truncated"))


async def extract_links(page: Page, msg: ExtractLinks) -> LinksReport:
    got = await page.op("links", {"target": target_json(msg.target), "contains": msg.contains,
                                  "internalOnly": msg.internal_only, "limit": msg.limit},
                        timeout_s=max(msg.timeout_s, 10))
    links = tuple(Link(pg.text(o, "text"), pg.text(o, "href"), pg.flag(o, "internal"), pg.text(o, "rel"))
                  for o in (pg.obj(v, "link") for v in pg.items(got, "links")))
    return LinksReport(page.tab.tab_id, page.tab.url, links, pg.integer(got, "total"), pg.flag(got, "truncated"))


def _visibility(value: JSON) -> Visibility | None:
    if not isinstance(value, dict):
        return None
    box = value.get("box")
    return Visibility(pg.flag(value, "visible"), pg.flag(value, "inViewport"),
                      Box(pg.num(box, "x"), pg.num(box, "y"), pg.num(box, "width"), pg.num(box, "height"))
                      if isinstance(box, dict) else None, pg.text(value, "reason"))


def _state(value: JSON) -> ElementState | None:
    if not isinstance(value, dict):
        return None
    v = value.get("value")
    return ElementState(pg.flag(value, "enabled"), pg.flag(value, "editable"), pg.flag(value, "focused"),
                        pg.opt_flag(value, "checked"), pg.opt_flag(value, "selected"), pg.opt_flag(value, "expanded"),
                        pg.flag(value, "required"), v if isinstance(v, str) else None)


def _fields(values: list[JSON]) -> tuple[FormField, ...]:
    out = []
    for raw in values:
        f = pg.obj(raw, "field")
        v = f.get("value")
        out.append(FormField(pg.text(f, "name"), pg.text(f, "type"), v if isinstance(v, str) else None,
                             pg.opt_flag(f, "checked"), pg.brief(f.get("element"))))
    return tuple(out)


async def query(page: Page, msg: Query) -> QueryReport:
    args: JSONObject = {"what": msg.what.value, "target": target_json(msg.target), "text": msg.text,
                        "exact": msg.exact, "properties": list(msg.properties), "limit": msg.limit}
    got = await page.op("query", args, timeout_s=max(msg.timeout_s, 10))
    elements = []
    for raw in pg.items(got, "elements"):
        e = pg.obj(raw, "element")
        elements.append(ElementInfo(pg.brief(e.get("element")), pg.text(e, "text"), pg.pairs(e, "attributes"),
                                    pg.pairs(e, "styles"), _visibility(e.get("visibility")), _state(e.get("state")),
                                    _fields(pg.items(e, "fields"))))
    meta = got.get("metadata")
    metadata = None
    if isinstance(meta, dict):
        metadata = PageMetadata(pg.text(meta, "title"), pg.text(meta, "lang"), pg.text(meta, "charset"),
                                pg.text(meta, "description"), pg.text(meta, "canonical"), pg.pairs(meta, "meta"))
    return QueryReport(page.tab.tab_id, page.tab.url, msg.what, pg.integer(got, "count"), tuple(elements), metadata)


def _condition(msg: WaitFor) -> str:
    if msg.time_s is not None:
        return f"time {msg.time_s:g} s"
    if msg.load_state is not None:
        return f"load state {msg.load_state.value}"
    if msg.text is not None:
        return f"text {msg.text[:100]!r} present"
    if msg.text_gone is not None:
        return f"text {msg.text_gone[:100]!r} gone"
    assert msg.target is not None
    return f"{msg.target.describe()} {msg.state.value}"


async def wait_for(page: Page, msg: WaitFor) -> WaitReport:
    start = trio.current_time()
    condition = _condition(msg)

    def done(element: JSON = None) -> WaitReport:
        return WaitReport(page.tab.tab_id, page.tab.url, condition, (trio.current_time() - start) * 1000,
                          pg.opt_brief(element))

    if msg.time_s is not None:
        await trio.sleep(min(msg.time_s, msg.timeout_s))
        return done()
    if msg.load_state is not None:
        await navigation.wait_load_state(page, msg.load_state, msg.timeout_s)
        await page.op("hello")  # the policy check on the URL it ended on
        return done()
    args: JSONObject = {"target": target_json(msg.target), "state": msg.state.value, "text": msg.text,
                        "textGone": msg.text_gone}
    deadline = start + msg.timeout_s
    while True:
        got = await page.op("check", args, timeout_s=10)
        if pg.flag(got, "matched"):
            return done(got.get("element"))
        if trio.current_time() + WAIT_POLL_S > deadline:
            raise BrowserTimeout(f"wait_for: {condition} did not happen within {msg.timeout_s:g} s",
                                 hint="Raise timeout_s, or check the page with snapshot.")
        await trio.sleep(WAIT_POLL_S)


def _level(entry_level: str, wanted: str | None) -> bool:
    if wanted is None:
        return True
    w = "warning" if wanted == "warn" else wanted
    return entry_level == w or (w == "error" and entry_level == "exception")


async def console_logs(page: Page, msg: ConsoleLogs) -> ConsoleReport:
    started = await page.watch(console=True)
    if started:
        await trio.sleep(0.05)  # what Chrome replays right after Runtime.enable
    page.policy.check_url(page.tab.url, f"tab {page.tab.tab_id}")
    buf = page.tab.console
    assert buf is not None
    entries = [e for e in buf.entries if e.id > msg.since_id and _level(e.level, msg.level)]
    report = ConsoleReport(page.tab.tab_id, page.tab.url, started, tuple(entries[-msg.limit:]) if msg.limit else (),
                           len(buf.entries), buf.dropped)
    if msg.clear:
        buf.entries.clear()
    return report


async def network_log(page: Page, msg: NetworkLog) -> NetworkReport:
    started = await page.watch(network=True)
    buf = page.tab.network
    assert buf is not None
    buf.logging = True
    page.policy.check_url(page.tab.url, f"tab {page.tab.tab_id}")
    needle = msg.url_contains.lower() if msg.url_contains else None
    entries = [e for e in buf.entries() if e.id > msg.since_id and (not msg.failed_only or e.failed
                                                                     or (e.status or 0) >= 400)
               and (needle is None or needle in e.url.lower())]
    body = await response_body(page, msg) if msg.body_of is not None else None
    report = NetworkReport(page.tab.tab_id, page.tab.url, started, tuple(entries[-msg.limit:]) if msg.limit else (),
                           len(buf.requests), buf.dropped, msg.headers, body)
    if msg.clear:
        buf.requests.clear()
    return report


TEXT_TYPES = ("text/", "application/json", "application/javascript", "application/xml", "application/xhtml",
              "image/svg", "application/x-www-form-urlencoded", "application/ld+json", "application/manifest+json")


def textual(mime: str) -> bool:
    m = mime.lower()
    return m.startswith(TEXT_TYPES) or m.endswith(("+json", "+xml"))


async def response_body(page: Page, msg: NetworkLog) -> NetworkBody:
    """One entry's response body, cut at body_max_chars: text only unless binary is asked for (as base64). A
    response from a host the policy denies is refused (it is that host's content)."""
    assert page.tab.network is not None and msg.body_of is not None
    req = page.tab.network.by_id(msg.body_of)
    if req is None:
        raise InvalidArgument(f"no network entry {msg.body_of} in the log", hint="Take an id from network_log.")
    page.policy.check_url(req.url, f"network entry {msg.body_of}")
    if not req.done or req.failed:
        raise InvalidArgument(f"network entry {msg.body_of} has no body ({'failed' if req.failed else 'in flight'})",
                              hint="Wait for it to finish (wait_for load_state networkidle), then ask again.")
    if not msg.binary and req.mime_type and not textual(req.mime_type):
        raise InvalidArgument(f"network entry {msg.body_of} is {req.mime_type}, not text",
                              hint="Pass binary: true for its bytes as base64.")
    try:
        got = await page.cdp.send("Network.getResponseBody", {"requestId": req.request_id}, timeout_s=20)
    except CdpError as exc:
        raise InvalidArgument(f"Chrome no longer has the body of network entry {msg.body_of}: {exc.message[:200]}",
                              hint="Bodies are kept for a while only; reload and read it sooner.") from exc
    data = pg.text(got, "body")
    encoded = got.get("base64Encoded") is True
    if encoded and not msg.binary:
        try:
            data = base64.b64decode(data).decode("utf-8")
            encoded = False
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidArgument(f"network entry {msg.body_of} is binary ({req.mime_type or 'unknown type'})",
                                  hint="Pass binary: true for its bytes as base64.") from exc
    return NetworkBody(msg.body_of, req.mime_type, data[:msg.body_max_chars], encoded, len(data),
                       len(data) > msg.body_max_chars)


async def evaluate(page: Page, msg: Eval) -> EvalReport:
    params: JSONObject = {"expression": msg.expression, "awaitPromise": msg.await_promise, "returnByValue": True,
                          "userGesture": True, "timeout": int(msg.timeout_s * 1000)}
    where: tuple[str, JSONObject] = ("Runtime.evaluate", {"expression": "location.href", "returnByValue": True})
    tab = page.tab
    try:
        results = await page.cdp.batch([("Runtime.evaluate", params), where], timeout_s=msg.timeout_s + 2)
    except CommandTimeout as exc:
        raise BrowserTimeout(f"eval did not finish within {msg.timeout_s:g} s",
                             hint="A promise that never settles, or a long loop; raise timeout_s.") from exc
    except CdpError as exc:
        if exc.ext_code != "cdp_error":
            raise
        # Chrome refused the value itself (e.g. a DOM node cannot be returned by value): the script's problem.
        return EvalReport(tab.tab_id, tab.url, False, None, "error", exc.message[:2000], False)
    url = pg.obj(results[1].get("result"), "result").get("value")
    page.policy.check_url(url if isinstance(url, str) else "", f"tab {tab.tab_id}")
    if isinstance(url, str) and is_blank(url):
        await page.op("hello")  # an about:blank document is judged by its origin (checked on the op's reply)
    details = results[0].get("exceptionDetails")
    result = pg.obj(results[0].get("result", {}), "result")
    if isinstance(details, dict):
        exc_obj = details.get("exception")
        text = exc_obj.get("description") if isinstance(exc_obj, dict) else None
        return EvalReport(tab.tab_id, tab.url, False, None, "exception",
                          (text if isinstance(text, str) else str(details.get("text", "exception")))[:4000], False)
    kind = pg.text(result, "type") + (f":{pg.text(result, 'subtype')}" if result.get("subtype") else "")
    value: JSON = result.get("value")
    if "value" not in result:
        unser = result.get("unserializableValue")
        value = unser if isinstance(unser, str) else None
    encoded = json.dumps(value, ensure_ascii=False)
    truncated = len(encoded) > MAX_EVAL_JSON
    if truncated:
        value = encoded[:MAX_EVAL_JSON]
    return EvalReport(tab.tab_id, tab.url, True, value, kind, None, truncated)
