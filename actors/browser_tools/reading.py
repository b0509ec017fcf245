"""Reading: snapshot, screenshots, text / HTML / markdown, links, query, wait_for, console and network logs, eval.

Everything read here is page data: untrusted input to the agent. Page-script reads come back with the document's URL
and pass the domain policy before they are used (`Page._checked`); screenshots and eval are bracketed by the same
check in the same extension round trip.

Cross-origin frames the policy allows are read in their own worlds (page.py): the page script leaves a marker where
such a frame's content goes (a snapshot line, a place in the text) or lists the frames (links, query), and the reads
here fill them in, frame by frame, within the same size limits. A frame that cannot be read (it navigated to a denied
site, or went away meanwhile) is shown sealed.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import struct
from urllib.parse import urlsplit

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
    QueryWhat,
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
from . import replies as rp
from .page import POLL_S, Page, context_gone, guard, target_json
from .policy import is_blank

MAX_SHOT_SIDE = 8192  # CSS px each way of a full-page or element screenshot; bigger ones are cut (truncated: true)
MAX_EVAL_JSON = 256_000
log = logging.getLogger("ai_bridge.browser_tools")
WAIT_POLL_S = 0.1


SEALED_MARK = " [cross-origin or not allowed: not inspected]"
FRAME_LINE = re.compile(r"( *)- \x00F(\d+)")
FRAME_TEXT = re.compile(r"\x00F(\d+)\x00")
MAX_FRAME_READS = 32  # frames read per call (a page full of widget frames)


async def whole(page: Page, op: str, args: JSONObject, *, timeout_s: float) -> JSONObject:
    """A whole-page op in the document its refs are in; done again when it met sealed frames of which some could be
    opened."""
    doc = page.route(args)
    got = await page.op(op, args, timeout_s=timeout_s, doc=doc)
    if await page.read_frames(got):
        got = await page.op(op, args, timeout_s=timeout_s, doc=doc)
    return got


async def _in_frame(page: Page, key: int, op: str, args: JSONObject, budget: list[int]) -> JSONObject | None:
    """`op` in the open frame `key`, or None when it cannot be read now (then it shows as sealed)."""
    doc = page.tab.frames.get(key)
    if doc is None or doc.gone or budget[0] <= 0:
        return None
    budget[0] -= 1
    try:
        return await page.op(op, args, timeout_s=30, doc=doc)
    except BridgeError as exc:
        log.info("tab %d: the frame %s was not read: %s", page.tab.tab_id, doc.url[:100], exc)
        return None


async def snapshot(page: Page, msg: Snapshot) -> SnapshotReport:
    args: JSONObject = {"root": target_json(msg.root), "interactiveOnly": msg.interactive_only,
                        "roles": list(msg.roles), "maxDepth": msg.max_depth, "maxChars": msg.max_chars}
    got = await whole(page, "snapshot", args, timeout_s=30)
    text, nodes, refs = rp.text(got, "text"), rp.integer(got, "nodes"), rp.integer(got, "refs")
    truncated = rp.flag(got, "truncated")
    if "\x00F" in text:
        text, nodes, refs, cut = await _snapshot_frames(page, text, args, nodes, refs, [MAX_FRAME_READS])
        truncated |= cut
    chars = rp.integer(got, "chars") if "\x00" not in rp.text(got, "text") else len(text)
    return SnapshotReport(page.tab.tab_id, page.tab.url, page.tab.title, text, nodes, refs, chars, truncated)


async def _snapshot_frames(page: Page, text: str, args: JSONObject, nodes: int, refs: int,
                           budget: list[int]) -> tuple[str, int, int, bool]:
    """The snapshot with each open frame's marker line replaced by that frame's snapshot, indented under its
    iframe line, within max_chars."""
    max_chars = rp.integer(args, "maxChars")
    max_depth = args.get("maxDepth")
    out: list[str] = []
    size = 0
    truncated = False
    for line in text.split("\n"):
        m = FRAME_LINE.fullmatch(line)
        if m is None:
            if size + len(line) + 1 > max_chars:
                truncated = True
                break
            out.append(line)
            size += len(line) + 1
            continue
        nodes -= 1  # the marker is no node
        indent = len(m.group(1)) // 2
        depth = max_depth - indent if isinstance(max_depth, int) else None
        sub = None
        if depth is None or depth > 0:
            sub = await _in_frame(page, int(m.group(2)), "snapshot",
                                  {**args, "root": None, "maxDepth": depth, "maxChars": max(1, max_chars - size)},
                                  budget)
        if sub is None:
            if out and SEALED_MARK not in out[-1]:
                head, sep, ref = out[-1].rpartition(" [ref=")
                out[-1] = f"{head}{SEALED_MARK}{sep}{ref}" if sep else out[-1] + SEALED_MARK
            continue
        inner, n, r = rp.text(sub, "text"), rp.integer(sub, "nodes"), rp.integer(sub, "refs")
        truncated |= rp.flag(sub, "truncated")
        if "\x00F" in inner:
            inner, n, r, cut = await _snapshot_frames(page, inner, {**args, "maxDepth": depth}, n, r, budget)
            truncated |= cut
        for sub_line in inner.split("\n") if inner else []:
            indented = "  " * indent + sub_line
            if size + len(indented) + 1 > max_chars:
                truncated = True
                break
            out.append(indented)
            size += len(indented) + 1
        nodes, refs = nodes + n, refs + r
        if truncated:
            break
    return "\n".join(out), nodes, refs, truncated


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


def _capped(clip: JSONObject, scale: float = 1.0) -> tuple[JSONObject, bool]:
    """A capture rectangle within MAX_SHOT_SIDE device px each way at the emulated device `scale` (Chromium aborts
    the whole browser on a capture some 65,000 px wide); whether it was cut."""
    side = MAX_SHOT_SIDE / max(1.0, scale)
    width, height = float(str(clip["width"])), float(str(clip["height"]))
    cut = width > side or height > side
    return {**clip, "width": max(1.0, min(width, side)), "height": max(1.0, min(height, side))}, cut


def _scale(page: Page) -> float:
    v = page.tab.emulation.viewport
    return v.device_scale_factor if v is not None and v.device_scale_factor else 1.0


async def screenshot(page: Page, msg: Screenshot) -> ScreenshotReport:
    fmt: JSONObject = {"format": msg.format.value}
    if msg.format is ImageFormat.JPEG:
        fmt["quality"] = msg.quality
    else:
        # Chromium's fast PNG encoding: the same pixels in about half the time, in a file ~30% bigger (a smooth
        # gradient: several times). One that then no longer fits a frame is encoded again the small way, before
        # anything is given up; a big clip is encoded the small way at once.
        fmt["optimizeForSpeed"] = True
    # A tab that was shown and then hidden can hang captureScreenshot (NOTES.md): bring it to front first.
    front: tuple[str, JSONObject] = ("Page.bringToFront", {})
    element = None
    truncated = False
    full_height: float | None = None
    # Sealed frames (cross-origin, or outside the policy) are hidden while the picture is taken, all in one extension
    # batch: mask, bring to front, capture, the guard (it refuses the picture if the page touched the mask meanwhile,
    # and unmasks). The mask op's reply is also the policy check on the document (its URL and origin: an about:blank
    # popup a denied frame filled is refused), made before the picture is used.
    if msg.mode is ShotMode.VIEWPORT:
        capture: tuple[str, JSONObject] = ("Page.captureScreenshot", fmt)
    elif msg.mode is ShotMode.FULL_PAGE:
        metrics = (await page.cdp.batch([front, ("Page.getLayoutMetrics", {})], timeout_s=10))[1]
        size = rp.obj(metrics.get("cssContentSize") or metrics.get("contentSize"), "contentSize")
        width, full_height = rp.num(size, "width"), rp.num(size, "height")
        clip, truncated = _capped({"x": 0, "y": 0, "width": width, "height": full_height, "scale": 1},
                                  _scale(page))
        capture = ("Page.captureScreenshot", _fitting({**fmt, "clip": clip, "captureBeyondViewport": True},
                                                      _scale(page)))
    else:
        assert msg.target is not None
        if page.route({"target": msg.target.as_json()}) is not None:
            raise InvalidArgument("the element is inside a cross-origin frame, which screenshots mask",
                                  hint="Take a screenshot of the iframe element's own page (navigate to its URL), "
                                  "or read the frame with snapshot or get_text.")
        got = await page.op_until("rect", {"target": msg.target.as_json()}, msg.timeout_s)
        element = rp.opt_brief(got.get("element"))
        clip, truncated = _capped({"x": rp.num(got, "x"), "y": rp.num(got, "y"), "width": rp.num(got, "width"),
                                   "height": rp.num(got, "height"), "scale": 1}, _scale(page))
        capture = ("Page.captureScreenshot", _fitting({**fmt, "clip": clip}, _scale(page)))
    warning: str | None = None
    shot_format = msg.format
    unmasked = False
    try:
        attempt = lost = 0
        while True:
            try:
                results = await page.cdp.batch([await page.op_command("mask"), front, capture,
                                                await guard(page, "mask")], timeout_s=60)
                unmasked = True
                break
            except BridgeError as exc:
                if _world_lost(exc) and lost < SHOT_TRIES:
                    lost += 1
                    # A new document (or our script missing in its world): a new world, then the batch again.
                    page.tab.world = page.tab.frame_id = None
                    await trio.sleep(POLL_S)
                    continue
                over = too_large(exc)
                if over is not None and capture[1].get("optimizeForSpeed") is True:
                    capture = ("Page.captureScreenshot", _slow(capture[1]))
                    continue  # the same PNG encoded the small way may fit
                attempt += 1
                if over is None or attempt == FIT_ATTEMPTS:
                    raise
                if "clip" not in capture[1]:  # the viewport: the same picture as a clip, which can be scaled
                    metrics = (await page.cdp.batch([("Page.getLayoutMetrics", {})], timeout_s=10))[0]
                    vv = rp.obj(metrics.get("cssVisualViewport"), "cssVisualViewport")
                    capture = ("Page.captureScreenshot", {**capture[1], "clip": {
                        "x": rp.num(vv, "pageX"), "y": rp.num(vv, "pageY"), "width": rp.num(vv, "clientWidth"),
                        "height": rp.num(vv, "clientHeight"), "scale": 1}})
                capture, shot_format, warning = _smaller(capture, over, msg.format)
        page.op_reply(results[0], "mask")
        shot = results[2]
    finally:
        if not unmasked:  # the batch stopped before its guard
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                try:
                    await page.op("unmask")
                except BridgeError as exc:  # the page went away: nothing is left to restore
                    log.debug("tab %d: unmask after a screenshot failed: %s", page.tab.tab_id, exc)
    page.policy.check_url(page.tab.url, f"tab {page.tab.tab_id}")
    data = rp.text(shot, "data")
    width_px, height_px = image_size(data, shot_format)
    if warning is not None:
        log.info("tab %d: screenshot: %s", page.tab.tab_id, warning)
    return ScreenshotReport(page.tab.tab_id, page.tab.url, msg.mode, data, f"image/{shot_format.value}", width_px,
                            height_px, truncated, full_height, element, warning)


FIT_ATTEMPTS = 6
FIT_CHARS = 3_400_000  # what a screenshot's reply may take of one 4 MiB extension frame
JPEG_FALLBACK_QUALITY = 70
SHOT_TRIES = 3  # batches tried again when the document (and our world in it) went away under one


FAST_PNG_PIXELS = 8_300_000  # device px a fast PNG is tried for (a 4K viewport); bigger ones rarely fit it in a frame


def _slow(params: JSONObject) -> JSONObject:
    return {k: v for k, v in params.items() if k != "optimizeForSpeed"}


def _fitting(params: JSONObject, scale: float) -> JSONObject:
    """The capture's params, encoded the small way when its clip is too big for a fast PNG to be worth a try."""
    clip = rp.obj(params.get("clip"), "clip")
    pixels = rp.num(clip, "width") * rp.num(clip, "height") * max(1.0, scale) ** 2
    return _slow(params) if pixels > FAST_PNG_PIXELS else params


def _world_lost(exc: BridgeError) -> bool:
    """The batch met no world of ours: the document changed (Chrome's words), or the world has no script of ours
    (the guard's own call then threw: the extension's words for that, which no refusal of the page's says)."""
    return context_gone(exc) or (isinstance(exc, CdpError) and exc.ext_code == "policy_denied"
                                    and ": the check failed (" in exc.message)


def too_large(exc: BridgeError) -> int | None:
    """The size in characters of a reply the extension could not send in one frame, else None."""
    m = re.search(r"result too large for one frame \((\d+) chars\)", exc.message)
    return int(m.group(1)) if m else None


def _smaller(capture: tuple[str, JSONObject], size: int,
             asked: ImageFormat) -> tuple[tuple[str, JSONObject], ImageFormat, str]:
    """The next capture to try after one of `size` characters did not fit a frame: JPEG first, then scaled down
    (the clip's scale) by the square root of how far over it was, with a margin."""
    method, params = capture
    clip = rp.obj(params.get("clip"), "clip")
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
    args: JSONObject = {"target": target_json(msg.target), "max": msg.max_chars}
    timeout_s = max(msg.timeout_s, 10)
    if op != "text":
        got = await page.op(op, args, timeout_s=timeout_s)
        return TextReport(page.tab.tab_id, page.tab.url, page.tab.title, msg.kind, rp.text(got, "text"),
                          rp.integer(got, "chars"), rp.flag(got, "truncated"))
    got = await whole(page, "text", args, timeout_s=timeout_s)
    text, chars, truncated = rp.text(got, "text"), rp.integer(got, "chars"), rp.flag(got, "truncated")
    if "\x00" in text:
        full = await _text_frames(page, text, msg.max_chars, [MAX_FRAME_READS])
        chars += len(full) - len(text)
        text = full[:msg.max_chars]
        truncated |= len(full) > msg.max_chars
    return TextReport(page.tab.tab_id, page.tab.url, page.tab.title, msg.kind, text, chars, truncated)


async def _text_frames(page: Page, text: str, max_chars: int, budget: list[int]) -> str:
    """The text with each open frame's marker replaced by that frame's own text (a cut one left out)."""
    if text.count("\x00") % 2:
        text = text[:text.rfind("\x00")]  # a marker the length limit cut
    parts: list[str] = []
    last = 0
    for m in FRAME_TEXT.finditer(text):
        parts.append(text[last:m.start()])
        last = m.end()
        sub = await _in_frame(page, int(m.group(1)), "text", {"target": None, "max": max_chars}, budget)
        inner = rp.text(sub, "text") if sub is not None else "[cross-origin or not allowed: not inspected]"
        parts.append(await _text_frames(page, inner, max_chars, budget) if "\x00" in inner else inner)
    parts.append(text[last:])
    return "".join(parts)


async def extract_links(page: Page, msg: ExtractLinks) -> LinksReport:
    args: JSONObject = {"target": target_json(msg.target), "contains": msg.contains,
                        "internalOnly": msg.internal_only, "limit": msg.limit}
    got = await whole(page, "links", args, timeout_s=max(msg.timeout_s, 10))
    found, total = rp.items(got, "links"), rp.integer(got, "total")
    if msg.target is None:
        # The open frames' links too; `internal` still means the tab's own origin.
        origin = urlsplit(page.tab.url)
        sub_args = {**args, "origin": f"{origin.scheme}://{origin.netloc}"}
        for sub in await _frames_op(page, got, "links", sub_args):
            found = [*found, *rp.items(sub, "links")][:msg.limit]
            total += rp.integer(sub, "total")
    links = tuple(Link(rp.text(o, "text"), rp.text(o, "href"), rp.flag(o, "internal"), rp.text(o, "rel"))
                  for o in (rp.obj(v, "link") for v in found))
    return LinksReport(page.tab.tab_id, page.tab.url, links, total, total > len(links))


async def _frames_op(page: Page, got: JSONObject, op: str, args: JSONObject) -> list[JSONObject]:
    """`op` in every open frame the reply listed, and in the open frames those list (depth first)."""
    out: list[JSONObject] = []
    budget = [MAX_FRAME_READS]
    todo = [k for k in rp.items(got, "open") if isinstance(k, int)]
    while todo:
        sub = await _in_frame(page, todo.pop(0), op, args, budget)
        if sub is not None:
            out.append(sub)
            todo = [*(k for k in rp.items(sub, "open") if isinstance(k, int)), *todo]
    return out


def _visibility(value: JSON) -> Visibility | None:
    if not isinstance(value, dict):
        return None
    box = value.get("box")
    return Visibility(rp.flag(value, "visible"), rp.flag(value, "inViewport"),
                      Box(rp.num(box, "x"), rp.num(box, "y"), rp.num(box, "width"), rp.num(box, "height"))
                      if isinstance(box, dict) else None, rp.text(value, "reason"))


def _state(value: JSON) -> ElementState | None:
    if not isinstance(value, dict):
        return None
    v = value.get("value")
    return ElementState(rp.flag(value, "enabled"), rp.flag(value, "editable"), rp.flag(value, "focused"),
                        rp.opt_flag(value, "checked"), rp.opt_flag(value, "selected"), rp.opt_flag(value, "expanded"),
                        rp.flag(value, "required"), v if isinstance(v, str) else None)


def _fields(values: list[JSON]) -> tuple[FormField, ...]:
    out = []
    for raw in values:
        f = rp.obj(raw, "field")
        v = f.get("value")
        out.append(FormField(rp.text(f, "name"), rp.text(f, "type"), v if isinstance(v, str) else None,
                             rp.opt_flag(f, "checked"), rp.brief(f.get("element"))))
    return tuple(out)


async def query(page: Page, msg: Query) -> QueryReport:
    args: JSONObject = {"what": msg.what.value, "target": target_json(msg.target), "text": msg.text,
                        "exact": msg.exact, "properties": list(msg.properties), "limit": msg.limit}
    got = await whole(page, "query", args, timeout_s=max(msg.timeout_s, 10))
    found, count = rp.items(got, "elements"), rp.integer(got, "count")
    if msg.what is not QueryWhat.METADATA and (msg.target is None or msg.target.ref is None):
        # What the selector (or the text) matches in the open frames too.
        for sub in await _frames_op(page, got, "query", args):
            found = [*found, *rp.items(sub, "elements")][:msg.limit]
            count += rp.integer(sub, "count")
    elements = []
    for raw in found:
        e = rp.obj(raw, "element")
        elements.append(ElementInfo(rp.brief(e.get("element")), rp.text(e, "text"), rp.pairs(e, "attributes"),
                                    rp.pairs(e, "styles"), _visibility(e.get("visibility")), _state(e.get("state")),
                                    _fields(rp.items(e, "fields"))))
    meta = got.get("metadata")
    metadata = None
    if isinstance(meta, dict):
        metadata = PageMetadata(rp.text(meta, "title"), rp.text(meta, "lang"), rp.text(meta, "charset"),
                                rp.text(meta, "description"), rp.text(meta, "canonical"), rp.pairs(meta, "meta"))
    return QueryReport(page.tab.tab_id, page.tab.url, msg.what, count, tuple(elements), metadata)


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
                          rp.opt_brief(element))

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
        if rp.flag(got, "matched"):
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
    since = msg.since_id if msg.earlier_pages else max(msg.since_id, buf.page_from - 1)
    picked = [r for r in buf.requests.values() if r.entry_id > since and (not msg.failed_only or r.failed
                                                                         or (r.status or 0) >= 400)
              and (needle is None or needle in r.url.lower())]
    entries = tuple(r.entry() for r in picked[-msg.limit:]) if msg.limit else ()
    body = await response_body(page, msg) if msg.body_of is not None else None
    report = NetworkReport(page.tab.tab_id, page.tab.url, started, entries, len(buf.requests), buf.dropped,
                           msg.headers, body)
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
    data = rp.text(got, "body")
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
    url = rp.obj(results[1].get("result"), "result").get("value")
    page.policy.check_url(url if isinstance(url, str) else "", f"tab {tab.tab_id}")
    if isinstance(url, str) and is_blank(url):
        await page.op("hello")  # an about:blank document is judged by its origin (checked on the op's reply)
    details = results[0].get("exceptionDetails")
    result = rp.obj(results[0].get("result", {}), "result")
    if isinstance(details, dict):
        exc_obj = details.get("exception")
        text = exc_obj.get("description") if isinstance(exc_obj, dict) else None
        return EvalReport(tab.tab_id, tab.url, False, None, "exception",
                          (text if isinstance(text, str) else str(details.get("text", "exception")))[:4000], False)
    kind = rp.text(result, "type") + (f":{rp.text(result, 'subtype')}" if result.get("subtype") else "")
    value: JSON = result.get("value")
    if "value" not in result:
        unser = result.get("unserializableValue")
        value = unser if isinstance(unser, str) else None
    encoded = json.dumps(value, ensure_ascii=False)
    truncated = len(encoded) > MAX_EVAL_JSON
    if truncated:
        value = encoded[:MAX_EVAL_JSON]
    return EvalReport(tab.tab_id, tab.url, True, value, kind, None, truncated)
