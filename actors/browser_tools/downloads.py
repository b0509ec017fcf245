"""download: save what a link or a URL downloads into the folder the user chose (config download_dir), never outside
it.

chrome.debugger refuses the browser-level download commands (Page/Browser.setDownloadBehavior: "Cannot access
browser-level commands"), so the browser's own download machinery is not used. The file is fetched in our isolated
world of the page (with the page's cookies, as the page's own request) and read back in slices that each fit one
extension frame; the server writes it. The URL — given, or the href of the link an element is or is in — and the
final URL after redirects must pass the domain policy; the name comes from Content-Disposition or the URL, is made
a plain file name and never replaces an existing file; the saved path must resolve inside the folder.
"""

from __future__ import annotations

import base64
import mimetypes
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import trio

from supervisor.errors import BadExtensionReply, InvalidArgument, NavigationFailed

from ..protocol.browser_tools import Download, DownloadReport
from ..protocol.common import JSON
from . import page as pg
from .page import Page
from .policy import normalize_url

DIR_HINT = "Start the server with --download-dir DIR (config download_dir): the folder downloads are saved into."
MAX_BYTES = 100 * 1024 * 1024
SLICE_BYTES = 2 * 1024 * 1024  # base64 of a slice: 2.7 MB, within one 4 MiB frame
NAME_MAX = 150

FETCH = """async function (url) {
  const resp = await fetch(url, { credentials: 'include', redirect: 'follow' });
  const blob = await resp.blob();
  globalThis.__aibDownload = blob;
  return { ok: resp.ok, status: resp.status, url: resp.url, type: blob.type, size: blob.size,
           disposition: resp.headers.get('content-disposition') || '' };
}"""
SLICE = """async function (start, end) {
  const blob = globalThis.__aibDownload;
  if (!blob) return null;
  const bytes = new Uint8Array(await blob.slice(start, end).arrayBuffer());
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  if (end >= blob.size) delete globalThis.__aibDownload;
  return btoa(bin);
}"""


def folder(page: Page) -> Path:
    where = page.policy.download_dir
    if where is None:
        raise InvalidArgument("no download folder is configured, so download is refused", hint=DIR_HINT)
    path = Path(where).expanduser()
    if not path.is_absolute() or not path.is_dir():
        raise InvalidArgument(f"the download folder {where} is not an existing folder", hint=DIR_HINT)
    return path.resolve()


def file_name(disposition: str, url: str) -> str:
    """A plain file name: Content-Disposition's, else the URL path's last part, else 'download'."""
    m = re.search(r"filename\*\s*=\s*[^']*''([^;]+)", disposition) or re.search(
        r'filename\s*=\s*"([^"]*)"', disposition) or re.search(r"filename\s*=\s*([^;]+)", disposition)
    raw = unquote(m.group(1).strip()) if m else unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    name = re.sub(r"[\x00-\x1f\x7f/\\:*?\"<>|]", "_", raw.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]).strip(" .")
    return name[:NAME_MAX] or "download"


def free_path(base: Path, name: str) -> Path:
    stem, dot, suffix = name.rpartition(".") if "." in name else (name, "", "")
    for n in range(1000):
        candidate = base / (name if n == 0 else f"{stem} ({n}){dot}{suffix}")
        if not candidate.exists():
            return candidate
    raise InvalidArgument(f"the download folder already holds 1000 files named like {name}")


def _write(path: Path, data: bytes) -> None:
    with open(path, "xb") as out:  # never over a file that is there
        out.write(data)


async def _call(page: Page, function: str, *args: JSON, timeout_s: float) -> JSON:
    got = await page.cdp.send("Runtime.callFunctionOn", {
        "functionDeclaration": function, "executionContextId": await page.world(),
        "arguments": [{"value": a} for a in args], "awaitPromise": True, "returnByValue": True}, timeout_s=timeout_s)
    if "exceptionDetails" in got:
        details = pg.obj(got["exceptionDetails"], "exceptionDetails")
        text = str(pg.obj(details.get("exception") or {}, "exception").get("description") or details.get("text"))
        raise NavigationFailed(f"the download failed in the page: {text[:300]}",
                               hint="Check the URL; a cross-origin file the site does not share (CORS) cannot be "
                               "fetched from its page.")
    return pg.obj(got.get("result"), "result").get("value")


async def download(page: Page, msg: Download) -> DownloadReport:
    base = folder(page)
    if msg.url is not None:
        url = normalize_url(msg.url)
    else:
        assert msg.target is not None
        url = pg.text(await page.op_until("linkOf", {"target": msg.target.as_json()}, min(msg.timeout_s, 10)),
                      "href")
    page.policy.check_url(url, "the download URL")
    meta = await _call(page, FETCH, url, timeout_s=msg.timeout_s)
    if not isinstance(meta, dict):
        raise BadExtensionReply(f"download: an unexpected reply {str(meta)[:200]}")
    final = pg.text(meta, "url") or url
    page.policy.check_url(final, "the download's final URL (after redirects)")
    status = pg.integer(meta, "status")
    if meta.get("ok") is not True:
        raise NavigationFailed(f"{final[:300]} answered HTTP {status}", hint="Check the URL.")
    size = pg.integer(meta, "size")
    if size > MAX_BYTES:
        raise InvalidArgument(f"the file is {size:,} bytes; download saves at most {MAX_BYTES:,}")
    disposition = meta.get("disposition")
    name = file_name(disposition if isinstance(disposition, str) else "", final)
    target = free_path(base, name)
    if target.resolve().parent != base:
        raise InvalidArgument(f"the file name {name!r} would leave the download folder")
    parts: list[bytes] = []
    for start in range(0, size, SLICE_BYTES):
        chunk = await _call(page, SLICE, start, min(start + SLICE_BYTES, size), timeout_s=30)
        if not isinstance(chunk, str):
            raise BadExtensionReply("download: the page lost the file while it was read")
        parts.append(base64.b64decode(chunk))
    await trio.to_thread.run_sync(_write, target, b"".join(parts))
    page.policy.check_url(page.tab.url, f"tab {page.tab.tab_id}")
    blob_type = meta.get("type")
    mime = (blob_type.split(";")[0] if isinstance(blob_type, str) and blob_type else None) or \
        mimetypes.guess_type(target.name)[0] or "application/octet-stream"
    return DownloadReport(page.tab.tab_id, page.tab.url, final, str(target), target.name, target.stat().st_size,
                          mime)
