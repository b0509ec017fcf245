"""Files and pickers on a provider page (issue 20), before the question is typed:

- `attach_files`: the checked files go into the composer's own file input (CDP `DOM.setFileInputFiles` on the
  element found from our isolated world), then the chips are watched until each shows as uploaded. A notice that the
  site refused a file (its type, its size, too many files) is `AttachmentRefused`, naming the file; the page is
  reloaded so that nothing half-attached is sent with a later question.
- `choose`: the model (ChatGPT) or mode (Gemini) picker is opened with a real mouse press (ChatGPT's Radix menu opens
  on pointerdown, never on a script's click), its items read, the one whose visible label matches (any case; a
  prefix is enough; an exact match wins) clicked. An unknown label is `UnknownModel` listing what the picker shows.

The selectors and labels are the table's (`fileInput`, `attachment`, `attachmentBusy`, `picker`, `pickerItem`,
`notice`; `attachRefused`); attach.js reads the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePath

import attrs
import trio

from supervisor.errors import AttachmentRefused, BadExtensionReply, InputRejected, UnknownModel

from ..protocol.common import JSON, JSONObject
from .page import Box
from .tab import TabSession

ATTACH = (Path(__file__).parent / "attach.js").read_text(encoding="utf-8")
POLL_S = 0.05
MENU_S = 3.0


@attrs.frozen
class Uploads:
    chips: tuple[tuple[str, bool], ...]  # (name, busy)
    refused: tuple[str, ...]


def _args(page: TabSession) -> tuple[JSON, JSON, JSON]:
    keys = ("fileInput", "attachment", "attachmentBusy", "picker", "pickerItem", "notice")
    sel: JSONObject = {k: list(page.t.selectors.get(k, ())) for k in keys}
    labels: JSONObject = {"attachRefused": list(page.t.labels.get("attachRefused", ()))}
    return sel, labels, page.t.shadow_dom


async def _read(page: TabSession, op: str) -> JSON:
    return await page.script(ATTACH, op, *_args(page))


async def uploads(page: TabSession) -> Uploads:
    got = await _read(page, "uploads")
    raw_chips = got.get("chips") if isinstance(got, dict) else None
    raw_refused = got.get("refused") if isinstance(got, dict) else None
    if not isinstance(raw_chips, list) or not isinstance(raw_refused, list):
        raise BadExtensionReply(f"the {page.t.title} attachments could not be read: {str(got)[:200]}")
    chips = tuple((str(c.get("name", "")), c.get("busy") is True) for c in raw_chips if isinstance(c, dict))
    return Uploads(chips, tuple(str(t) for t in raw_refused))


async def set_input_files(page: TabSession, paths: Sequence[str]) -> None:
    """Put the files into the composer's file input: the element is resolved in our isolated world and handed to
    DOM.setFileInputFiles by object id (the page's own scripts see only the change event the browser fires)."""
    if page.context_id is None:
        await page.install()
    assert page.context_id is not None
    reply = await page.tab.send("Runtime.callFunctionOn", {
        "functionDeclaration": ATTACH, "executionContextId": page.context_id,
        "arguments": [{"value": "input"}, *({"value": a} for a in _args(page))], "returnByValue": False})
    result = reply.get("result")
    object_id = result.get("objectId") if isinstance(result, dict) else None
    if not isinstance(object_id, str):
        raise InputRejected(f"the {page.t.title} composer shows no file input; the files were not attached and "
                            "nothing was sent",
                            hint="Run `ai-bridge doctor --live` (selectors.fileInput), or send the files inline "
                            "(attach: \"inline\").")
    try:
        await page.tab.send("DOM.setFileInputFiles", {"files": list(paths), "objectId": object_id})
    finally:
        try:
            await page.tab.send("Runtime.releaseObject", {"objectId": object_id})
        except Exception:  # the document may have gone; the object went with it
            pass


def _refused_file(notice: str, names: Sequence[str]) -> str | None:
    low = notice.lower()
    for name in names:
        if name.lower() in low:
            return name
    return None


async def attach_files(page: TabSession, paths: Sequence[str], upload_s: float) -> float:
    """Attach `paths` and wait until each shows as uploaded; returns the seconds it took. Raises
    `AttachmentRefused` (the page is reloaded first) or `InputRejected` (never shown as uploaded)."""
    t0 = trio.current_time()
    names = [PurePath(p).name for p in paths]
    before = await uploads(page)
    await set_input_files(page, paths)
    deadline = t0 + upload_s
    while True:
        now = await uploads(page)
        refused = [t for t in now.refused if t not in before.refused]
        if refused:
            await _discard(page)
            name = _refused_file(refused[0], names)
            which = f"the file {name!r}" if name else f"the files ({', '.join(names)})"
            raise AttachmentRefused(f"{page.t.title} refused {which}: “{refused[0]}”; nothing was sent",
                                    hint="Send a file type and size the site takes, fewer files, or the files "
                                    "inline (attach: \"inline\").")
        added = now.chips[len(before.chips):] if len(now.chips) >= len(before.chips) else now.chips
        if len(added) >= len(paths) and not any(busy for _, busy in now.chips):
            return trio.current_time() - t0
        if trio.current_time() >= deadline:
            await _discard(page)
            busy = [n for n, b in now.chips if b]
            raise InputRejected(f"{page.t.title} did not show the files as uploaded within {upload_s:g}s "
                                f"({len(added)} of {len(paths)} shown" + (f"; still uploading: {', '.join(busy)}"
                                                                            if busy else "") + "); nothing was sent",
                                hint="Check the tab with take_cdp_snapshot; large files take longer.")
        await trio.sleep(POLL_S)


async def _discard(page: TabSession) -> None:
    """Reload the page so that no half-attached file goes out with a later question."""
    try:
        state = await page.current()
        await page.navigate(state.url)
    except Exception as exc:  # best effort: the error about the files matters more
        page.log.warning("%s: could not reload after a refused upload: %s", page.t.title, exc)


def _items(got: JSON) -> list[tuple[str, bool, Box]]:
    out: list[tuple[str, bool, Box]] = []
    if not isinstance(got, list):
        return out
    for item in got:
        label = item.get("label") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(label, str) or not label:
            continue
        box = Box.parse(item.get("box"))
        if box is not None:
            out.append((label, item.get("checked") is True, box))
    return out


def match_label(wanted: str, labels: Sequence[str]) -> int | None:
    """The index of the label `wanted` names: an exact match (any case) first, else the first that starts with it."""
    w = " ".join(wanted.split()).casefold()
    norm = [" ".join(label.split()).casefold() for label in labels]
    for i, label in enumerate(norm):
        if label == w:
            return i
    for i, label in enumerate(norm):
        if w and label.startswith(w):
            return i
    return None


async def _escape(page: TabSession) -> None:
    await page.tab.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": "Escape", "code": "Escape",
                                                   "windowsVirtualKeyCode": 27})
    await page.tab.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": "Escape", "code": "Escape",
                                                   "windowsVirtualKeyCode": 27})


async def choose(page: TabSession, wanted: str, what: str) -> str:
    """Choose `wanted` in the site's picker (`what`: "model" or "mode"); returns the label chosen."""
    picker = await _read(page, "picker")
    box = Box.parse(picker.get("box")) if isinstance(picker, dict) else None
    if box is None:
        raise UnknownModel(f"the {page.t.title} page shows no {what} picker, so {wanted!r} cannot be chosen; "
                           "nothing was sent", hint=f"Ask without {what}, or run `ai-bridge doctor --live` "
                           "(selectors.picker).")
    await page.mouse_click(box)
    items: list[tuple[str, bool, Box]] = []
    with trio.move_on_after(MENU_S):
        while not items:
            items = _items(await _read(page, "items"))
            if not items:
                await trio.sleep(POLL_S)
    if not items:
        raise UnknownModel(f"the {page.t.title} {what} picker did not open its menu; nothing was sent",
                           hint="Run `ai-bridge doctor --live` (selectors.pickerItem).")
    labels = [label for label, _, _ in items]
    i = match_label(wanted, labels)
    if i is None:
        await _escape(page)
        raise UnknownModel(f"{page.t.title} has no {what} {wanted!r}; its picker shows: {', '.join(labels)}",
                           hint="Use one of these labels (any case; a prefix is enough). Nothing was sent.")
    label, checked, item_box = items[i]
    if checked:
        await _escape(page)
    else:
        await page.mouse_click(item_box)
    with trio.move_on_after(MENU_S):
        while True:  # the menu closes
            if not _items(await _read(page, "items")):
                break
            await trio.sleep(POLL_S)
    page.log.info("%s: chose the %s %r (asked for %r)", page.t.title, what, label, wanted)
    return label
