"""Files on a provider page (issue 20), before the question is typed:

- `attach_files`: the checked files go into the composer's own file input (CDP `DOM.setFileInputFiles` on the
  element found from our isolated world), then the chips are watched until each shows as uploaded. A notice that the
  site refused a file (its type, its size, too many files) is `AttachmentRefused`, naming the file; the page is
  reloaded so that nothing half-attached is sent with a later question.

The selectors and labels are the table's (`fileInput`, `attachment`, `attachmentBusy`, `notice`; `attachRefused`);
attach.js reads the page. Models, effort and tools are choices.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePath

import attrs
import trio

from supervisor.errors import AttachmentRefused, BadExtensionReply, InputRejected

from ..protocol.common import JSON, JSONObject
from .tab import TabSession

ATTACH = (Path(__file__).parent / "attach.js").read_text(encoding="utf-8")
POLL_S = 0.05


@attrs.frozen
class Uploads:
    chips: tuple[tuple[str, bool], ...]  # (name, busy)
    refused: tuple[str, ...]


def _args(page: TabSession) -> tuple[JSON, JSON, JSON]:
    keys = ("fileInput", "attachment", "attachmentBusy", "notice")
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
