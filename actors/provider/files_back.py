"""Files back (issue 35): an answer's generated images and the files it links to, saved where the ask said.

After the answer is read, files_back.js lists the last response's images (the table's ``generatedImage``) and file
links (``fileLink``). Each is loaded by the browser, with the tab's cookies, as the page would load it
(`Network.loadNetworkResource`: a cross-origin image host needs no CORS; the extension takes only the provider's own
file hosts) and read back in slices that each fit one extension frame. ChatGPT's ``sandbox:`` links are first turned
into a download URL by the site's own API, asked from the page (files_back.js).

A file is saved under its own name (Content-Disposition, the link's, the URL's; else ``<site>-image-N.<ext>``), made
a plain file name, never over a file that is there. An image whose bytes are no image (a login page, an error) is not
saved. A file that cannot be had is a warning (`file_not_saved`), never a lost answer.
"""

from __future__ import annotations

import base64
import mimetypes
import re
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import attrs
import trio

from supervisor.constants import SHARED
from supervisor.errors import BadExtensionReply, BridgeError
from supervisor.savefiles import file_name, plain_name, save_new

from ..protocol.common import JSON, JSONObject
from ..protocol.provider import AskWarning, SavedFile
from .tab import HERE, TabGone, TabSession

FILES_BACK = (HERE / "files_back.js").read_text(encoding="utf-8")
MAX_FILES = 20  # per answer
MAX_BYTES = 100 * 1024 * 1024  # per file
SLICE_BYTES = 2 * 1024 * 1024  # base64 of a slice: 2.7 MB, within one 4 MiB frame
LOAD_S = 60.0  # one file: loaded and read back
_IMAGE_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF8", "image/gif"),
                (b"RIFF", "image/webp"))


@attrs.frozen
class Found:
    kind: str  # "image" | "file"
    url: str
    name: str  # the link's download name, if any
    alt: str  # an image's alt text, a link's text


class NotSaved(Exception):
    """One file could not be had; the answer goes on (a warning says which and why)."""


async def save_answer_files(page: TabSession, folder: Path) -> tuple[tuple[SavedFile, ...], tuple[AskWarning, ...]]:
    """The last response's images and files, saved into `folder` (an existing folder the ask named)."""
    message_id, found = await listed(page)
    saved: list[SavedFile] = []
    warnings: list[AskWarning] = []
    images = 0
    for f in found:
        images += f.kind == "image"
        try:
            with trio.fail_after(LOAD_S):
                saved.append(await _save_one(page, folder, f, message_id, images))
        except (NotSaved, BridgeError, OSError, trio.TooSlowError) as exc:
            why = "it took over a minute" if isinstance(exc, trio.TooSlowError) else str(exc)[:300]
            page.log.warning("%s: the answer's %s %s was not saved: %s", page.t.title, f.kind, _shown(f), why)
            warnings.append(AskWarning("file_not_saved", f"The answer's {f.kind} {_shown(f)} could not be saved: "
                                       f"{why}. It is still on the page."))
    if saved:
        page.log.info("%s: %d file%s of the answer saved in %s", page.t.title, len(saved),
                      "" if len(saved) == 1 else "s", folder)
    return tuple(saved), tuple(warnings)


async def listed(page: TabSession) -> tuple[str, list[Found]]:
    sel: JSONObject = {k: list(page.t.selectors.get(k, ())) for k in ("assistant", "turn", "generatedImage",
                                                                        "fileLink")}
    got = await page.script(FILES_BACK, "list", sel, page.t.shadow_dom, MAX_FILES, None)
    files = got.get("files") if isinstance(got, dict) else None
    message_id = got.get("messageId") if isinstance(got, dict) else None
    if not isinstance(files, list) or not isinstance(message_id, str):
        raise BadExtensionReply(f"the {page.t.title} answer's files could not be read: {str(got)[:200]}")
    out = []
    for item in files[:MAX_FILES]:
        if isinstance(item, dict) and item.get("kind") in ("image", "file") and isinstance(item.get("url"), str):
            out.append(Found(str(item["kind"]), str(item["url"])[:4000], str(item.get("name", ""))[:300],
                             str(item.get("alt", ""))[:300]))
    return message_id[:200], out


def _shown(f: Found) -> str:
    label = f.name or f.alt
    return repr(label[:80]) if label else f"from {f.url[:120]}"


async def _save_one(page: TabSession, folder: Path, f: Found, message_id: str, n: int) -> SavedFile:
    url = f.url
    name = ""
    if url.startswith("sandbox:"):
        name = PurePosixPath(unquote(urlsplit(url).path)).name
        url = await _sandbox_url(page, url, message_id)
    data, headers = await _load_full(page, f, url)
    mime = (headers.get("content-type") or "").split(";")[0].strip().lower()
    if f.kind == "image":
        sniffed = next((m for magic, m in _IMAGE_MAGIC if data.startswith(magic)), None)
        if sniffed is None:
            raise NotSaved(f"what came back is no image ({mime or 'no type'}, {len(data):,} bytes)")
        mime = sniffed
    disposition = headers.get("content-disposition", "")
    if disposition and "filename" in disposition:
        name = file_name(disposition, url)
    elif f.name:
        name = plain_name(f.name)
    elif f.kind == "image" or not name:
        ext = mimetypes.guess_extension(mime or "") or ""
        name = f"{page.t.name}-{f.kind}-{n}{ext}" if f.kind == "image" else file_name("", url)
    else:
        name = plain_name(name)
    path = await trio.to_thread.run_sync(save_new, folder, name, data)
    return SavedFile(str(path), path.name, mime or mimetypes.guess_type(path.name)[0] or "application/octet-stream",
                     len(data), f.kind, f.url)


async def _sandbox_url(page: TabSession, url: str, message_id: str) -> str:
    path = unquote(urlsplit(url).path)
    if page.context_id is None:
        await page.install()
    assert page.context_id is not None
    got = await page.tab.call(FILES_BACK, "sandbox", {}, False, 0, {"path": path, "messageId": message_id},
                              context_id=page.context_id, timeout_s=page.to.script_s, await_promise=True)
    if isinstance(got, dict) and isinstance(got.get("url"), str):
        return str(got["url"])
    status = got.get("status") if isinstance(got, dict) else None
    raise NotSaved(f"the site gave no download for {path!r}" + (f" (HTTP {status})" if status else ""))


async def _load_full(page: TabSession, f: Found, url: str) -> tuple[bytes, dict[str, str]]:
    """An image at full size where the table knows how to ask for it, else as the page shows it."""
    rule = page.t.image_full_size
    if f.kind == "image" and rule is not None:
        bigger = re.sub(rule[0], rule[1], url)
        if bigger != url:
            try:
                return await _load(page, bigger)
            except (NotSaved, BridgeError) as exc:
                page.log.info("%s: the image at full size could not be had (%s); saving it as shown", page.t.title,
                              exc)
    return await _load(page, url)


def file_host_allowed(provider: str, url: str) -> bool:
    """As the extension checks it (extension/policy.js fileHostAllowed): https on the default port, on the provider's
    file hosts (shared.js) or a subdomain of one."""
    try:
        u = urlsplit(url)
        port = u.port
    except ValueError:
        return False
    host = (u.hostname or "").lower()
    hosts = next((p.file_hosts for p in SHARED.providers if p.name == provider), ())
    return (u.scheme == "https" and port in (None, 443) and not u.username and not u.password
            and any(host == h or host.endswith("." + h) for h in hosts))


async def _load(page: TabSession, url: str) -> tuple[bytes, dict[str, str]]:
    if not file_host_allowed(page.t.name, url):
        raise NotSaved(f"{url[:200]!r} is not on {page.t.title}'s own file hosts")
    tree = await page.tab.send("Page.getFrameTree")
    top = tree.get("frameTree")
    main = top.get("frame") if isinstance(top, dict) else None
    frame = main.get("id") if isinstance(main, dict) else None
    if not isinstance(frame, str):
        raise BadExtensionReply("Page.getFrameTree gave no frame id")
    got = await page.tab.send("Network.loadNetworkResource", {
        "frameId": frame, "url": url, "options": {"disableCache": False, "includeCredentials": True}})
    res = got.get("resource")
    if not isinstance(res, dict):
        raise BadExtensionReply(f"Network.loadNetworkResource: no resource in {str(got)[:200]}")
    status = res.get("httpStatusCode")
    stream = res.get("stream")
    headers = res.get("headers") if isinstance(res.get("headers"), dict) else {}
    assert isinstance(headers, dict)
    lower = {str(k).lower(): str(v)[:2000] for k, v in headers.items()}
    try:
        if res.get("success") is not True or not isinstance(status, int | float) or not 200 <= status < 300:
            why = res.get("netErrorName") or (f"HTTP {int(status)}" if isinstance(status, int | float) else "failed")
            raise NotSaved(f"the site answered {why}")
        if not isinstance(stream, str):
            raise NotSaved("the site sent no body")
        return await _read_stream(page, stream), lower
    finally:
        if isinstance(stream, str):
            with trio.CancelScope(shield=True), trio.move_on_after(5):  # bounded: one close
                try:
                    await page.tab.send("IO.close", {"handle": stream}, timeout_s=5)
                except (BridgeError, TabGone):
                    pass


async def _read_stream(page: TabSession, handle: str) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        got: JSON = await page.tab.send("IO.read", {"handle": handle, "size": SLICE_BYTES})
        if not isinstance(got, dict) or not isinstance(got.get("data"), str):
            raise BadExtensionReply(f"IO.read: no data in {str(got)[:200]}")
        raw = str(got["data"])
        try:
            chunk = base64.b64decode(raw, validate=True) if got.get("base64Encoded") is True else raw.encode()
        except ValueError as exc:
            raise BadExtensionReply("IO.read: the data is not base64") from exc
        total += len(chunk)
        if total > MAX_BYTES:
            raise NotSaved(f"it is over {MAX_BYTES // 2**20} MiB")
        parts.append(chunk)
        if got.get("eof") is True:
            return b"".join(parts)
