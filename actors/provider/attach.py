"""Files on a provider page (issues 20 and 35), before the question is typed.

- Where the files go. A table with an upload menu (`uploadMenu`, `uploadItem`: Gemini's "Upload and tools" →
  "Upload files", gemini-2607-file-input-ready.html) has no file input at rest: the menu is opened, the item pressed
  with the page's file chooser intercepted (`Page.setInterceptFileChooserDialog`), and the files set on the node the
  chooser names (`Page.fileChooserOpened`), or on the input the page created. Otherwise the composer's own input
  (`fileInput`: ChatGPT's ``input#upload-files``) takes them. Either way by CDP `DOM.setFileInputFiles`; the page's
  scripts see only the change event the browser fires.
- Before anything is set, each file is checked against the input's ``accept`` list: a file the site would not take
  is refused at once.
- Ready means ready, for every file: each file has its own chip, matched by name, with no progress left; where the
  page shows no chip at all, the input holds every name and the send button is enabled. Never fewer: a file that
  never becomes ready within `upload_s` (or the ask's deadline) is `UploadIncomplete`, naming it.
- The site's own words for a refusal (the table's `attachRefused` labels in its notices, or an `attachNotice` such as
  Gemini's quota notice) are `AttachmentRefused` at once, naming the file (by name, type, size or emptiness, as the
  notice says) and quoting the site. The page is reloaded so that nothing half-attached goes out with a later question.

attach.js reads the page; the menus are choices.py's.
"""

from __future__ import annotations

import mimetypes
import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePath

import attrs
import trio

from supervisor.errors import AttachmentRefused, BadExtensionReply, BridgeError, InputRejected, UploadIncomplete

from ..protocol.common import JSON, JSONObject
from . import choices
from .tab import TabSession

ATTACH = (Path(__file__).parent / "attach.js").read_text(encoding="utf-8")
POLL_S = 0.05
CHOOSER_S = 3.0  # the page opens its chooser (or makes its input) within this after the upload item is pressed
ELLIPSIS = re.compile(r"…|\.\.\.")


@attrs.frozen
class Uploads:
    chips: tuple[tuple[str, bool], ...]  # (name, busy)
    refused: tuple[str, ...]
    input_names: tuple[str, ...] = ()


@attrs.frozen
class Wanted:
    path: str
    name: str
    size: int


def _args(page: TabSession) -> tuple[JSON, JSON, JSON]:
    keys = ("fileInput", "attachment", "attachmentBusy", "notice", "attachNotice")
    sel: JSONObject = {k: list(page.t.selectors.get(k, ())) for k in keys}
    labels: JSONObject = {"attachRefused": list(page.t.labels.get("attachRefused", ()))}
    return sel, labels, page.t.shadow_dom


async def _read(page: TabSession, op: str) -> JSON:
    return await page.script(ATTACH, op, *_args(page))


async def uploads(page: TabSession) -> Uploads:
    got = await _read(page, "uploads")
    raw_chips = got.get("chips") if isinstance(got, dict) else None
    raw_refused = got.get("refused") if isinstance(got, dict) else None
    raw_names = got.get("inputNames", []) if isinstance(got, dict) else None
    if not isinstance(raw_chips, list) or not isinstance(raw_refused, list) or not isinstance(raw_names, list):
        raise BadExtensionReply(f"the {page.t.title} attachments could not be read: {str(got)[:200]}")
    chips = tuple((str(c.get("name", "")), c.get("busy") is True) for c in raw_chips if isinstance(c, dict))
    return Uploads(chips, tuple(str(t) for t in raw_refused), tuple(str(n) for n in raw_names))


# -- where the files go ----------------------------------------------------------------------------------------------


@attrs.frozen
class Target:
    """A file input: by object id (found from our world) or by backend node id (named by the file chooser)."""

    object_id: str | None = None
    backend_node_id: int | None = None
    accept: str = ""


async def _input_target(page: TabSession) -> Target | None:
    if page.context_id is None:
        await page.install()
    assert page.context_id is not None
    reply = await page.tab.send("Runtime.callFunctionOn", {
        "functionDeclaration": ATTACH, "executionContextId": page.context_id,
        "arguments": [{"value": "input"}, *({"value": a} for a in _args(page))], "returnByValue": False})
    result = reply.get("result")
    object_id = result.get("objectId") if isinstance(result, dict) else None
    if not isinstance(object_id, str):
        return None
    accept = await _read(page, "accept")
    return Target(object_id=object_id, accept=accept if isinstance(accept, str) else "")


async def _chooser_target(page: TabSession) -> Target | None:
    """Gemini's way (July 2026): open the upload menu and press its upload item with the chooser intercepted."""
    await page.tab.send("Page.enable")
    await page.tab.send("Page.setInterceptFileChooserDialog", {"enabled": True})
    try:
        page.expect_chooser()
        await choices.open_menu(page, "uploadMenu", "upload menu")
        item = await choices.trigger_box(page, "uploadItem")
        if item is None:
            raise InputRejected(f"the {page.t.title} upload menu shows no item to upload files from this computer; "
                                "nothing was sent", hint="Run `ai-bridge doctor --live` (selectors.uploadItem), or "
                                "send the files inline (attach: \"inline\").")
        await page.mouse_click(item)
        with trio.move_on_after(CHOOSER_S):
            while True:
                node = page.chooser.get("backendNodeId") if page.chooser else None
                if isinstance(node, int) and not isinstance(node, bool):
                    return Target(backend_node_id=node, accept=await _node_accept(page, node))
                with trio.move_on_after(POLL_S * 4):
                    await page.chooser_seen.wait()
        return await _input_target(page)  # no chooser: the input the page made, if any
    finally:
        try:
            await page.tab.send("Page.setInterceptFileChooserDialog", {"enabled": False})
        except BridgeError:  # the page may have gone; the error that matters is the one above
            pass
        await choices.close_menus(page)


async def _node_accept(page: TabSession, node: int) -> str:
    described = await page.tab.send("DOM.describeNode", {"backendNodeId": node})
    found = described.get("node")
    attributes = found.get("attributes") if isinstance(found, dict) else None
    if not isinstance(attributes, list):
        return ""
    pairs = dict(zip(attributes[::2], attributes[1::2], strict=False))
    accept = pairs.get("accept", "")
    return accept if isinstance(accept, str) else ""


async def _target(page: TabSession) -> Target:
    # A table that names an upload menu goes through it when the page shows one (Gemini 2026); a page without it
    # (the 2025 shape) has its input at rest.
    menu = page.t.selectors.get("uploadItem") and await choices.trigger_box(page, "uploadMenu") is not None
    target = await (_chooser_target(page) if menu else _input_target(page))
    if target is None:
        raise InputRejected(f"the {page.t.title} composer shows no file input; the files were not attached and "
                            "nothing was sent",
                            hint="Run `ai-bridge doctor --live` (selectors.fileInput, selectors.uploadMenu), or send "
                            "the files inline (attach: \"inline\").")
    return target


def refused_by_accept(accept: str, names: Sequence[str]) -> list[str]:
    """The names the input's ``accept`` list does not take ('' takes every file)."""
    tokens = [t.strip().lower() for t in accept.split(",") if t.strip()]
    if not tokens:
        return []

    def takes(name: str) -> bool:
        low = name.lower()
        mime = (mimetypes.guess_type(name)[0] or "").lower()
        for t in tokens:
            if t.startswith(".") and low.endswith(t):
                return True
            if t.endswith("/*") and mime.startswith(t[:-1]):
                return True
            if "/" in t and mime == t:
                return True
        return False

    return [n for n in names if not takes(n)]


async def _set(page: TabSession, target: Target, paths: Sequence[str]) -> None:
    params: JSONObject = {"files": list(paths)}
    if target.object_id is not None:
        params["objectId"] = target.object_id
    else:
        params["backendNodeId"] = target.backend_node_id
    try:
        await page.tab.send("DOM.setFileInputFiles", params)
    finally:
        if target.object_id is not None:
            try:
                await page.tab.send("Runtime.releaseObject", {"objectId": target.object_id})
            except BridgeError:  # the document may have gone; the object went with it
                pass


# -- readiness and refusals ------------------------------------------------------------------------------------------


def chip_for(name: str, chips: Sequence[tuple[str, bool]]) -> tuple[str, bool] | None:
    """The chip that shows `name`: its own name, a label that holds it, or the site's shortened form of it
    ("very-long-na…txt")."""
    for chip in chips:
        shown = chip[0].strip()
        if shown == name or name in shown:
            return chip
        parts = ELLIPSIS.split(shown)
        if len(parts) == 2 and parts[0] and name.startswith(parts[0].strip()) and name.endswith(parts[1].strip()):
            return chip
    return None


def refused_files(notice: str, files: Sequence[Wanted]) -> list[str]:
    """The files a refusal notice is about: those it names, else those of the type it names, else (a size limit
    given in MB) those above it, else (an empty file) the empty ones; all of them when it says nothing to tell."""
    low = notice.lower()
    named = [f.name for f in files if f.name.lower() in low]
    if named:
        return named
    typed = [f.name for f in files if (ext := PurePath(f.name).suffix.lower()) and re.search(
        rf"(?<![\w.]){re.escape(ext)}\b|\b{re.escape(ext[1:])}\b", low)]
    if typed and len(typed) < len(files):
        return typed
    if m := re.search(r"(\d+(?:\.\d+)?)\s*mb", low):
        big = [f.name for f in files if f.size > float(m.group(1)) * 1024 * 1024]
        if big:
            return big
    if "empty" in low and (empty := [f.name for f in files if f.size == 0]):
        return empty
    return [f.name for f in files]


async def attach_files(page: TabSession, paths: Sequence[str], upload_s: float, deadline: float | None = None
                       ) -> float:
    """Attach `paths` and wait until every one shows as uploaded; returns the seconds it took. Raises
    `AttachmentRefused` (at once, the page reloaded) or `UploadIncomplete` (not every file ready in time)."""
    t0 = trio.current_time()
    files = [Wanted(p, PurePath(p).name, _size(p)) for p in paths]
    names = [f.name for f in files]
    before = await uploads(page)
    target = await _target(page)
    if refused := refused_by_accept(target.accept, names):
        await _discard(page)
        raise AttachmentRefused(f"{page.t.title} does not take {', '.join(map(repr, refused))}: its file input "
                                f"accepts only {target.accept}; nothing was sent",
                                hint="Send a file type the site takes, or text files inline (attach: \"inline\").")
    await _set(page, target, paths)
    end = min(t0 + upload_s, deadline if deadline is not None else float("inf"))
    while True:
        now = await uploads(page)
        if notices := [t for t in now.refused if t not in before.refused]:
            await _discard(page)
            which = refused_files(notices[0], files)
            raise AttachmentRefused(f"{page.t.title} refused {', '.join(map(repr, which))}: “{notices[0]}”; nothing "
                                    "was sent", hint="Send a file type and size the site takes, fewer files, or the "
                                    "files inline (attach: \"inline\").")
        fresh = [c for c in now.chips if c not in before.chips] or list(now.chips)
        shown = {n: chip_for(n, fresh) for n in names}
        if all(c is not None and not c[1] for c in shown.values()):
            return trio.current_time() - t0
        # No chips at all (oracle #275): the send button of the still empty composer says when the files are ready,
        # with their names in the input (a chooser's input may be out of the document: then its node took them).
        if not now.chips and (set(names) <= set(now.input_names) or target.backend_node_id is not None):
            state = await page.current()
            if state.send_found and state.send_enabled:
                return trio.current_time() - t0
        if trio.current_time() >= end:
            await _discard(page)
            missing = [n for n, c in shown.items() if c is None]
            busy = [n for n, c in shown.items() if c is not None and c[1]]
            said = "; ".join(x for x in (f"no chip for {', '.join(map(repr, missing))}" if missing else "",
                                         f"still uploading: {', '.join(map(repr, busy))}" if busy else "") if x)
            raise UploadIncomplete(f"{page.t.title} did not show every file as uploaded within "
                                   f"{end - t0:.0f}s ({said}); the question was not sent, with these or fewer files",
                                   hint="Large files take longer: allow more time (timeout_s), send fewer or smaller "
                                   "files, or check the tab with take_cdp_snapshot.")
        await trio.sleep(POLL_S)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


async def _discard(page: TabSession) -> None:
    """Reload the page so that no half-attached file goes out with a later question."""
    try:
        state = await page.current()
        await page.navigate(state.url)
    except Exception as exc:  # best effort: the error about the files matters more
        page.log.warning("%s: could not reload after a refused upload: %s", page.t.title, exc)
