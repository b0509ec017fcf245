"""Interaction: trusted input (CDP `Input.*`) at points the page script found.

A pointer action resolves its target in the page (selector or ref), scrolls it into view, checks it is visible,
enabled and not covered, and answers with its box-model centre in the top viewport (through same-origin iframes and
open shadow roots); then the mouse events go out in one `cdp.batch`. Text goes in with `Input.insertText` (one input
event, as an IME would) or, with `key_events`, one key event per character.

An element in a cross-origin frame the policy allows (a ref its world numbered) is found there; its point is carried
up through each frame's owner (scrolled into view, and the topmost element there) to the top viewport, and the input
is dispatched on the tab as a user's would be, the browser routing it into the frame. Before it, a guard in every
document on the way lets the point (or the keyboard focus) into the next frame only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import attrs
import trio

from supervisor.errors import BridgeError, CdpError, ElementNotFound, ElementNotInteractable, InvalidArgument

from ..protocol.browser_tools import (
    Action,
    ActionReport,
    Click,
    Drag,
    FieldResult,
    FillForm,
    FillReport,
    Hover,
    MouseButton,
    Press,
    Scroll,
    ScrollReport,
    SelectOption,
    Target,
    TypeText,
    UploadedFile,
    UploadFile,
    UploadReport,
)
from ..protocol.common import JSON, JSONObject
from . import page as pg
from . import replies as rp
from .page import Page, focus_guards, frame_point, point_guards, target_json
from .tab import FrameDoc

T = TypeVar("T")
# page_act.js: the point guard's refusal starts so when the element the input was aimed at moved from under the point.
MOVED = "moved:"

MODIFIERS = {"alt": ("Alt", "AltLeft", 18, 1), "control": ("Control", "ControlLeft", 17, 2),
             "ctrl": ("Control", "ControlLeft", 17, 2), "meta": ("Meta", "MetaLeft", 91, 4),
             "cmd": ("Meta", "MetaLeft", 91, 4), "shift": ("Shift", "ShiftLeft", 16, 8)}


@attrs.frozen
class Key:
    key: str
    code: str
    key_code: int
    text: str = ""


NAMED_KEYS = {k.key.lower(): k for k in (
    Key("Enter", "Enter", 13, "\r"), Key("Tab", "Tab", 9), Key("Escape", "Escape", 27),
    Key("Backspace", "Backspace", 8), Key("Delete", "Delete", 46), Key("Insert", "Insert", 45),
    Key("ArrowUp", "ArrowUp", 38), Key("ArrowDown", "ArrowDown", 40), Key("ArrowLeft", "ArrowLeft", 37),
    Key("ArrowRight", "ArrowRight", 39), Key("Home", "Home", 36), Key("End", "End", 35),
    Key("PageUp", "PageUp", 33), Key("PageDown", "PageDown", 34), Key(" ", "Space", 32, " "),
    *(Key(f"F{i}", f"F{i}", 111 + i) for i in range(1, 13)),
)}
NAMED_KEYS.update({"space": NAMED_KEYS[" "], "esc": NAMED_KEYS["escape"], "return": NAMED_KEYS["enter"],
                   "up": NAMED_KEYS["arrowup"], "down": NAMED_KEYS["arrowdown"], "left": NAMED_KEYS["arrowleft"],
                   "right": NAMED_KEYS["arrowright"]})


def key_of(name: str) -> Key:
    named = NAMED_KEYS.get(name.lower())
    if named is not None:
        return named
    if len(name) == 1:
        if name.isascii() and name.isalpha():
            return Key(name, f"Key{name.upper()}", ord(name.upper()), name)
        if name.isdigit():
            return Key(name, f"Digit{name}", ord(name), name)
        return Key(name, "", 0, name)
    raise InvalidArgument(f"unknown key {name!r}",
                          hint="Use a single character or a key name such as Enter, Tab, Escape, Backspace, Delete, "
                          "ArrowUp, Home, PageDown, F5; combine with Control+, Shift+, Alt+, Meta+.")


def parse_combo(combo: str) -> tuple[tuple[tuple[str, str, int, int], ...], Key]:
    parts = combo.split("+")
    if combo.endswith("+"):  # "Control++"
        parts = [*[p for p in parts if p], "+"]
    *mods, main = parts
    out = []
    for m in mods:
        spec = MODIFIERS.get(m.strip().lower())
        if spec is None:
            raise InvalidArgument(f"unknown modifier {m!r} in {combo!r}",
                                  hint="Modifiers are Control, Shift, Alt and Meta, e.g. Control+A.")
        out.append(spec)
    return tuple(out), key_of(main.strip() if main.strip() else main)


def key_events(combo: str) -> list[tuple[str, JSONObject]]:
    mods, key = parse_combo(combo)
    mask = 0
    events: list[tuple[str, JSONObject]] = []
    for name, code, kc, bit in mods:
        mask |= bit
        events.append(("Input.dispatchKeyEvent", {"type": "rawKeyDown", "key": name, "code": code,
                                                  "windowsVirtualKeyCode": kc, "modifiers": mask}))
    # A printable key types its text unless Control/Alt/Meta turn it into a shortcut (whose key is the letter as
    # the keyboard gives it: Control+A is key "a", Control+Shift+A is "A").
    shortcut = bool(mask & (1 | 2 | 4))
    text = key.text if not shortcut else ""
    if text and mask & 8 and len(text) == 1:
        text = text.upper()
    if shortcut and len(key.key) == 1 and key.key.isalpha():
        key = attrs.evolve(key, key=key.key.upper() if mask & 8 else key.key.lower())
    down: JSONObject = {"type": "keyDown" if text else "rawKeyDown", "key": text or key.key, "code": key.code,
                        "windowsVirtualKeyCode": key.key_code, "modifiers": mask}
    if text:
        down.update(text=text, unmodifiedText=key.text)
    events.append(("Input.dispatchKeyEvent", down))
    events.append(("Input.dispatchKeyEvent", {"type": "keyUp", "key": text or key.key, "code": key.code,
                                              "windowsVirtualKeyCode": key.key_code, "modifiers": mask}))
    for name, code, kc, bit in reversed(mods):
        mask &= ~bit
        events.append(("Input.dispatchKeyEvent", {"type": "keyUp", "key": name, "code": code,
                                                  "windowsVirtualKeyCode": kc, "modifiers": mask}))
    return events


def modifier_mask(names: tuple[str, ...]) -> int:
    mask = 0
    for n in names:
        spec = MODIFIERS.get(n.lower())
        if spec is None:
            raise InvalidArgument(f"unknown modifier {n!r}", hint="Modifiers are Control, Shift, Alt and Meta.")
        mask |= spec[3]
    return mask


# Input to a tab that is not its window's active one (a popup it opened took the front) waits seconds for the hidden
# renderer: every input batch brings the tab to front first (a no-op when it is).
FRONT: tuple[str, JSONObject] = ("Page.bringToFront", {})


def mouse(kind: str, x: float, y: float, **extra: object) -> tuple[str, JSONObject]:
    params: JSONObject = {"type": kind, "x": x, "y": y}
    params.update({k: v for k, v in extra.items() if isinstance(v, int | float | str)})
    return ("Input.dispatchMouseEvent", params)


@attrs.frozen
class Point:
    """Where a pointer action acts: in the top viewport, and in each document on the way to the element's."""

    got: JSONObject  # the page script's reply (the element)
    x: float
    y: float
    points: list[tuple[FrameDoc | None, float, float]]
    aim: int | None  # the page script's id of the element, for the guard right before the input


async def point(page: Page, target: Target, timeout_s: float, *, need_enabled: bool = True) -> Point:
    """Where to act on `target`: once two looks a rendered frame apart agree. A page still laying out (fonts,
    images, a late script) moves things for a while after load; input aimed at the first look lands beside."""
    args: JSONObject = {"target": target.as_json(), "needEnabled": need_enabled}
    doc = page.route(args)
    deadline = trio.current_time() + timeout_s
    got = await page.op_until("point", args, timeout_s, doc=doc)
    re_resolved = rp.flag(got, "reResolved")  # the first look found the ref's element anew; the next ones know it
    while True:
        await page.next_frame(doc)
        again = await page.op_until("point", args, max(deadline - trio.current_time(), 0.0), doc=doc)
        moved = (rp.num(again, "x"), rp.num(again, "y")) != (rp.num(got, "x"), rp.num(got, "y"))
        got = {**again, "reResolved": re_resolved or rp.flag(again, "reResolved")}
        if not moved:
            break
        if trio.current_time() > deadline:
            raise ElementNotInteractable(f"{element_name(got)} kept moving (waited {timeout_s:g} s)",
                                         hint=pg.INTERACT_HINT)
    points = await frame_point(page, doc, rp.num(got, "x"), rp.num(got, "y"), timeout_s)
    _, x, y = points[0]
    aim = got.get("aim")
    return Point(got, x, y, points, aim if isinstance(aim, int) and not isinstance(aim, bool) else None)


def element_name(got: JSONObject) -> str:
    brief = rp.opt_brief(got.get("element"))
    return f"the {brief.tag} {brief.name!r}" if brief is not None and brief.name else "the element"


class Moved(Exception):
    """The element moved from under the point: the guard refused before the input, or the armed input's events met
    another element and were stopped (page_act.js `intercept`). Nothing reached the page: aim again."""


async def aimed(timeout_s: float, act: Callable[[], Awaitable[T]]) -> T:
    """A pointer action (`act`: point, then guarded input), done again while the element moves from under the
    point between our look and the input, until `timeout_s`."""
    deadline = trio.current_time() + timeout_s
    while True:
        try:
            return await act()
        except Moved as exc:
            if trio.current_time() + pg.POLL_S > deadline:
                raise ElementNotInteractable(f"the element kept moving from under the pointer: {exc} (waited "
                                             f"{timeout_s:g} s)", hint=pg.INTERACT_HINT) from exc
        await trio.sleep(pg.POLL_S)


async def pointer_batch(page: Page, cmds: list[tuple[str, JSONObject]]) -> None:
    """Pointer input behind its guards; `Moved` when a point guard found the element gone from its point (the
    batch stopped there, before any input)."""
    try:
        await page.cdp.batch(cmds, timeout_s=10)
    except CdpError as exc:
        # The guard's refusal, as the relay words an extension error: "cdp.batch failed: <refusal>".
        refusal = exc.message.partition(" failed: ")[2]
        if exc.ext_code == "policy_denied" and refusal.startswith(MOVED):
            raise Moved(refusal.removeprefix(MOVED).strip()) from exc
        raise


async def landed(page: Page, at: Point) -> None:
    """After armed input: raise `Moved` when its events met another element (they were stopped there)."""
    if at.aim is None:
        return
    try:
        got = await page.op("aimed", {"aim": at.aim}, doc=at.points[-1][0])
    except BridgeError:
        # The document the input went to is gone (a link it followed, a page or frame it closed): it landed.
        return
    missed = got.get("missed")
    if isinstance(missed, str):
        raise Moved(missed.removeprefix(MOVED).strip())


def _report(page: Page, action: Action, got: JSONObject, *, x: float | None = None, y: float | None = None,
            key: str | None = None, value: str | None = None, selected: tuple[str, ...] = ()) -> ActionReport:
    return ActionReport(page.tab.tab_id, action, page.tab.url, element=rp.opt_brief(got.get("element")), x=x, y=y,
                        key=key, value=value, selected=selected, re_resolved=rp.flag(got, "reResolved"))


# Modifier bits (CDP): Alt 1, Control 2, Meta 4, Shift 8. A click with Control, Meta or Shift, or with the middle
# button, opens a link (or a form's result) in a new tab or window.
NEW_TAB_MODIFIERS = 2 | 4 | 8


async def pointer_guard(page: Page, at: Point, *, new_tab: bool = False,
                        arm: bool = False) -> list[tuple[str, JSONObject]]:
    """Right before pointer input: the point is not inside a sealed frame (nor, on the way to an element in an open
    frame, anywhere but in that frame), it is still on the element and, for a new-tab click, what it opens is
    allowed (page_act.js `pointGuard`, run by the extension in the same batch). `arm`: the input's events must reach
    the element, or they are stopped (see `landed`)."""
    return await point_guards(page, at.points, new_tab, at.aim, arm=arm)


async def click(page: Page, msg: Click) -> ActionReport:
    mods = modifier_mask(msg.modifiers)
    new_tab = msg.button is MouseButton.MIDDLE or bool(mods & NEW_TAB_MODIFIERS)

    async def act() -> ActionReport:
        at = await point(page, msg.target, msg.timeout_s)
        x, y = at.x, at.y
        cmds = [FRONT, *await pointer_guard(page, at, new_tab=new_tab, arm=True),
                mouse("mouseMoved", x, y, modifiers=mods)]
        for n in range(1, msg.click_count + 1):
            cmds.append(mouse("mousePressed", x, y, button=msg.button.value, clickCount=n, modifiers=mods))
            cmds.append(mouse("mouseReleased", x, y, button=msg.button.value, clickCount=n, modifiers=mods))
        await pointer_batch(page, cmds)
        await landed(page, at)
        return _report(page, Action.CLICK, at.got, x=x, y=y)

    return await aimed(msg.timeout_s, act)


async def hover(page: Page, msg: Hover) -> ActionReport:
    async def act() -> ActionReport:
        at = await point(page, msg.target, msg.timeout_s, need_enabled=False)
        await pointer_batch(page, [FRONT, *await pointer_guard(page, at, arm=True), mouse("mouseMoved", at.x, at.y)])
        await landed(page, at)
        return _report(page, Action.HOVER, at.got, x=at.x, y=at.y)

    return await aimed(msg.timeout_s, act)


# The extension runs at most this many commands in one cdp.batch (extension/commands.js MAX_BATCH).
BATCH_MAX = 64


async def type_text(page: Page, msg: TypeText) -> ActionReport:
    args: JSONObject = {"target": msg.target.as_json(), "clear": msg.clear}
    doc = page.route(args)
    got = await page.op_until("focus", args, msg.timeout_s, doc=doc)
    # Key input in groups (one character's events stay together), each group sent after FRONT and the focus guard.
    groups: list[list[tuple[str, JSONObject]]] = []
    if msg.key_events:
        groups += [key_events("Enter" if ch == "\n" else ch) for ch in msg.text]
    elif msg.text:
        groups.append([("Input.insertText", {"text": msg.text})])
    elif msg.clear and not rp.flag(got, "empty"):
        groups.append(key_events("Backspace"))  # deletes the selection focus made
    if msg.submit:
        groups.append(key_events("Enter"))
    else:
        # Read the field back in the same round trip (not after a submit: that may start a navigation).
        groups.append([("Runtime.evaluate", pg.at({"expression": "globalThis.__aibTools.run('activeValue', {})",
                                                   "contextId": await page.world(doc), "returnByValue": True}, doc))])
    # The focus is checked again before every key: a page's key handler could move it into a sealed frame (or out
    # of the frame the field is in).
    focus = await focus_guards(page, doc)
    batches: list[list[tuple[str, JSONObject]]] = []
    for group in groups:
        if not batches or len(batches[-1]) + len(focus) + len(group) > BATCH_MAX:
            batches.append([FRONT])
        batches[-1] += [*focus, *group]
    results: list[JSONObject] = []
    for cmds in batches:
        results = await page.cdp.batch(cmds, timeout_s=30)
    value: str | None = None
    if not msg.submit:
        read = rp.obj(rp.obj(results[-1].get("result", {}), "result").get("value"), "activeValue")
        page.policy.check_document(rp.text(read, "url"), rp.text(read, "origin"), f"tab {page.tab.tab_id}")
        v = read.get("value")
        value = v if isinstance(v, str) else None
    return _report(page, Action.TYPE, got, value=value)


async def press(page: Page, msg: Press) -> ActionReport:
    events = key_events(msg.key)  # validates the key before touching the page
    got: JSONObject = {}
    doc: FrameDoc | None = None
    if msg.target is not None:
        args: JSONObject = {"target": msg.target.as_json()}
        doc = page.route(args)
        got = await page.op_until("focusAny", args, msg.timeout_s, doc=doc)
    # Keys go where the focus is: never into a sealed frame (one a click or a Tab moved the focus into). Without an
    # element, the focus may be in an open frame (a click put it there): each one is tried, outermost first.
    chains: list[FrameDoc | None] = [doc] if msg.target is not None else [None, *page.tab.frames.values()]
    first: CdpError | None = None
    for d in chains:
        try:
            await page.cdp.batch([FRONT, *await focus_guards(page, d), *events], timeout_s=10)
            return _report(page, Action.PRESS, got, key=msg.key)
        except CdpError as exc:  # a guard refused before any key was sent
            if exc.ext_code != "policy_denied":
                raise
            first = first or exc
    assert first is not None
    raise first


async def scroll(page: Page, msg: Scroll) -> ScrollReport:
    args: JSONObject = {"target": target_json(msg.target), "dx": msg.delta_x, "dy": msg.delta_y,
                        "to": msg.to.value if msg.to else None}
    got = await page.op_until("scroll", args, msg.timeout_s)
    return ScrollReport(page.tab.tab_id, page.tab.url, rp.num(got, "scrollX"), rp.num(got, "scrollY"),
                        rp.num(got, "scrollWidth"), rp.num(got, "scrollHeight"), rp.num(got, "viewportWidth"),
                        rp.num(got, "viewportHeight"), rp.opt_brief(got.get("element")))


async def select_option(page: Page, msg: SelectOption) -> ActionReport:
    got = await page.op_until("select", {"target": msg.target.as_json(), "values": list(msg.values)}, msg.timeout_s)
    selected = tuple(v for v in rp.items(got, "selected") if isinstance(v, str))
    return _report(page, Action.SELECT_OPTION, got, selected=selected)


async def drag(page: Page, msg: Drag) -> ActionReport:
    # Both ends in one document (page.route refuses refs of two frames).
    html5 = await page.op_until("html5Drag", {"source": msg.source.as_json(), "dest": msg.dest.as_json()},
                                msg.timeout_s)
    if rp.flag(html5, "html5"):
        return ActionReport(page.tab.tab_id, Action.DRAG, page.tab.url, element=rp.opt_brief(html5.get("element")),
                            to_element=rp.opt_brief(html5.get("toElement")))
    async def act() -> ActionReport:
        src = await point(page, msg.source, msg.timeout_s, need_enabled=False)
        dst = await point(page, msg.dest, msg.timeout_s, need_enabled=False)
        x0, y0, x1, y1 = src.x, src.y, dst.x, dst.y
        steps = 8  # intermediate moves: drag libraries look for movement past a threshold
        cmds = [FRONT, *await pointer_guard(page, src), *await pointer_guard(page, dst), mouse("mouseMoved", x0, y0),
                mouse("mousePressed", x0, y0, button="left", clickCount=1)]
        for i in range(1, steps + 1):
            cmds.append(mouse("mouseMoved", x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps, button="left",
                              buttons=1))
        cmds.append(mouse("mouseReleased", x1, y1, button="left", clickCount=1))
        await pointer_batch(page, cmds)
        return ActionReport(page.tab.tab_id, Action.DRAG, page.tab.url, element=rp.opt_brief(src.got.get("element")),
                            to_element=rp.opt_brief(dst.got.get("element")), x=x1, y=y1)

    return await aimed(msg.timeout_s, act)


async def fill_form(page: Page, msg: FillForm) -> FillReport:
    fields: list[JSON] = [{"target": f.target.as_json(), "value": f.value} for f in msg.fields]
    got = await page.op("fill", {"fields": fields}, timeout_s=max(msg.timeout_s, 10))
    results = []
    for spec, raw in zip(msg.fields, rp.items(got, "fields"), strict=False):
        r = rp.obj(raw, "field")
        value = r.get("value")
        error = r.get("error")
        results.append(FieldResult(spec.target, rp.flag(r, "ok"), rp.opt_brief(r.get("element")),
                                   value if isinstance(value, str | bool) else None,
                                   error if isinstance(error, str) else None))
    submitted = False
    if msg.submit is not None and all(r.ok for r in results):
        await click(page, Click(msg.submit, MouseButton.LEFT, timeout_s=msg.timeout_s))
        submitted = True
    return FillReport(page.tab.tab_id, page.tab.url, tuple(results), submitted)


async def upload_file(page: Page, msg: UploadFile) -> UploadReport:
    """Fill a file input with project files (DOM.setFileInputFiles on the element our page script picked; Chrome
    fires input and change)."""
    args: JSONObject = {"target": msg.target.as_json()}
    doc = page.route(args)
    got = await page.op_until("pickFile", args, msg.timeout_s, doc=doc)
    if len(msg.paths) > 1 and not rp.flag(got, "multiple"):
        raise InvalidArgument(f"the file input takes one file; {len(msg.paths)} were given",
                              hint="Pass one path, or find an input with the multiple attribute.")
    picked = await page.send("Runtime.evaluate", {"expression": "globalThis.__aibTools.takePicked()",
                                                  "contextId": await page.world(doc), "returnByValue": False}, doc)
    object_id = rp.obj(picked.get("result"), "result").get("objectId")
    if not isinstance(object_id, str):
        raise ElementNotFound("the file input went away before its files were set", hint=pg.REF_HINT)
    await page.send("DOM.setFileInputFiles", {"files": list(msg.paths), "objectId": object_id}, doc, timeout_s=30)
    page.policy.check_url(page.tab.url, f"tab {page.tab.tab_id}")
    return UploadReport(page.tab.tab_id, page.tab.url, rp.opt_brief(got.get("element")),
                        tuple(UploadedFile(n, size) for n, size in zip(msg.names, msg.sizes, strict=True)))
