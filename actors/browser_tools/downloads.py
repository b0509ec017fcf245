"""download: save what a link, a URL or a click downloads into the folder the user chose (config download_dir), never
outside it.

A URL — given, or the href of the link an element is or is in — is fetched in our isolated world of the page (with
the page's cookies, as the page's own request) and read back in slices that each fit one extension frame; the server
writes it. It and the final URL after redirects must pass the domain policy.

An element in no link starts its download from script (a blob it makes, a `location` set to an attachment). That
file comes from the browser's own download machinery, steered by browser-level commands that chrome.debugger
refuses: the browser actor catches it over the debugging pipe of a browser we launched (`CatchDownload`), into a
hidden staging folder inside the download folder, and the file is then moved to its name. Its URL must pass the
policy when it begins, or it is cancelled.

Either way the name (Content-Disposition, the download attribute, the URL) is made a plain file name and never
replaces an existing file; the saved path must resolve inside the folder.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import shutil
import stat
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import trio

from supervisor.errors import BadExtensionReply, BrowserTimeout, DownloadFailed, InvalidArgument, NavigationFailed
from supervisor.savefiles import file_name, free_path, plain_name
from supervisor.savefiles import write_new as _write

from ..protocol.browser import CatchDownload, CaughtDownload
from ..protocol.browser_tools import Click, Download, DownloadReport
from ..protocol.common import JSON, JSONObject
from . import interaction
from . import replies as rp
from .page import Page
from .policy import normalize_url

# The browser actor catches a download the page starts itself; the second argument is the click that starts it,
# made once the catch is armed.
Catcher = Callable[[CatchDownload, Callable[[], Awaitable[object]]], Awaitable[CaughtDownload]]

DIR_HINT = "Start the server with --download-dir DIR (config download_dir): the folder downloads are saved into."
MAX_BYTES = 100 * 1024 * 1024
SLICE_BYTES = 2 * 1024 * 1024  # base64 of a slice: 2.7 MB, within one 4 MiB frame

# One hop: a redirect is not followed ('manual': the request to where it points is never sent); the server reads the
# target from the tab's Network events, checks it against the policy, and fetches it as the next hop.
FETCH = """async function (url) {
  const resp = await fetch(url, { credentials: 'include', redirect: 'manual' });
  if (resp.type === 'opaqueredirect') return { redirect: true, url: resp.url };
  const blob = await resp.blob();
  globalThis.__aibDownload = blob;
  return { ok: resp.ok, status: resp.status, url: resp.url, type: blob.type, size: blob.size,
           disposition: resp.headers.get('content-disposition') || '' };
}"""
MAX_REDIRECTS = 10
REDIRECT_EVENT_S = 5.0  # how long the redirect's Network event may trail the fetch's reply
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


async def _call(page: Page, function: str, *args: JSON, timeout_s: float) -> JSON:
    got = await page.cdp.send("Runtime.callFunctionOn", {
        "functionDeclaration": function, "executionContextId": await page.world(),
        "arguments": [{"value": a} for a in args], "awaitPromise": True, "returnByValue": True}, timeout_s=timeout_s)
    if "exceptionDetails" in got:
        details = rp.obj(got["exceptionDetails"], "exceptionDetails")
        text = str(rp.obj(details.get("exception") or {}, "exception").get("description") or details.get("text"))
        raise NavigationFailed(f"the download failed in the page: {text[:300]}",
                               hint="Check the URL; a cross-origin file the site does not share (CORS) cannot be "
                               "fetched from its page.")
    return rp.obj(got.get("result"), "result").get("value")


def fetchable(href: JSON, page_url: str) -> str | None:
    """The link's URL when fetching it gets its file: http(s), and not a place in this very page (`#top`, a `#` whose
    click runs script). A blob: or data: link, or a script one, is clicked instead."""
    if not isinstance(href, str) or urlsplit(href).scheme.lower() not in ("http", "https"):
        return None
    if "#" in href and urldefrag(href)[0] == urldefrag(page_url)[0]:
        return None
    return href


async def download(page: Page, msg: Download, catcher: Catcher) -> DownloadReport:
    base = folder(page)
    if msg.url is not None:
        url = normalize_url(msg.url)
    else:
        assert msg.target is not None
        link = await page.op_until("linkOf", {"target": msg.target.as_json()}, min(msg.timeout_s, 10))
        href = fetchable(link.get("href"), page.tab.url)
        if href is None:
            return await _by_click(page, msg, base, catcher)
        url = href
    page.policy.check_url(url, "the download URL")
    meta = await _fetch(page, url, msg.timeout_s)
    final = rp.text(meta, "url") or url
    page.policy.check_url(final, "the download's final URL (after redirects)")
    status = rp.integer(meta, "status")
    if meta.get("ok") is not True:
        raise NavigationFailed(f"{final[:300]} answered HTTP {status}", hint="Check the URL.")
    size = rp.integer(meta, "size")
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
    blob_type = meta.get("type")
    return _report(page, final, target, blob_type.split(";")[0] if isinstance(blob_type, str) else None)


async def _fetch(page: Page, url: str, timeout_s: float) -> JSONObject:
    """Fetch `url` in the page, one redirect at a time: each hop's target is checked against the policy before it is
    requested, so a download never reaches a denied host, not even by a redirect (issue 36)."""
    for _ in range(MAX_REDIRECTS + 1):
        seq = page.tab.redirect_seq
        meta = await _call(page, FETCH, url, timeout_s=timeout_s)
        if not isinstance(meta, dict):
            raise BadExtensionReply(f"download: an unexpected reply {str(meta)[:200]}")
        if meta.get("redirect") is not True:
            return meta
        target = await _redirect_target(page, url, seq)
        if target is None:
            raise NavigationFailed(f"{url[:300]} redirects, and where to could not be seen, so it was not followed",
                                   hint="Download the URL it redirects to instead.")
        page.policy.check_url(target, f"a redirect of the download (from {url[:200]})")
        url = target
    raise NavigationFailed(f"the download redirected more than {MAX_REDIRECTS} times; stopped at {url[:300]}")


async def _redirect_target(page: Page, url: str, since: int) -> str | None:
    """Where the fetch of `url` (begun after redirect number `since`) was sent, from the tab's Network events."""
    with trio.move_on_after(REDIRECT_EVENT_S):
        while True:
            for seq, source, target, kind in page.tab.redirects:
                if seq > since and kind == "Fetch" and _same(source, url):
                    return target
            await page.tab.changed.wait()
    return None


def _same(a: str, b: str) -> bool:
    """The same request URL as Chrome writes it (host case, an empty path, the fragment aside)."""
    def key(u: str) -> tuple[str, str, str, str]:
        p = urlsplit(urldefrag(u)[0])
        return p.scheme.lower(), p.netloc.lower(), p.path or "/", p.query

    try:
        return key(a) == key(b)
    except ValueError:
        return False


def _report(page: Page, source_url: str, saved: Path, mime: str | None) -> DownloadReport:
    """What was saved, once the tab is still on an allowed page; the type from the response, else from the name."""
    page.policy.check_url(page.tab.url, f"tab {page.tab.tab_id}")
    mime = mime or mimetypes.guess_type(saved.name)[0] or "application/octet-stream"
    return DownloadReport(page.tab.tab_id, page.tab.url, source_url, str(saved), saved.name, saved.stat().st_size,
                          mime)


async def _by_click(page: Page, msg: Download, base: Path, catcher: Catcher) -> DownloadReport:
    """Click the element and keep the download its page starts (caught by the browser actor, see the module doc)."""
    assert msg.target is not None
    target = msg.target
    staging = Path(await trio.to_thread.run_sync(lambda: tempfile.mkdtemp(prefix=".ai-bridge-download-", dir=base)))
    try:
        wait_s = min(msg.timeout_s, 10)
        req = CatchDownload(await page.frame_ids(), str(staging), start_s=wait_s, timeout_s=msg.timeout_s,
                            max_bytes=MAX_BYTES)
        try:
            got = await catcher(req, lambda: interaction.click(page, Click(target, timeout_s=wait_s)))
        except BrowserTimeout:
            # A click that took the tab to a denied page (the extension failed that navigation): say so.
            page.policy.check_url(page.tab.url, f"tab {page.tab.tab_id}")
            raise
        if got.url.startswith(("http:", "https:")):  # checked when it began too (and cancelled if denied)
            page.policy.check_url(got.url, "the download URL")
        saved = await trio.to_thread.run_sync(_keep, staging, got, base)
    finally:
        with trio.CancelScope(shield=True):  # bounded: one folder of at most one file
            await trio.to_thread.run_sync(lambda: shutil.rmtree(staging, ignore_errors=True))
    return _report(page, got.url, saved, None)


def _keep(staging: Path, got: CaughtDownload, base: Path) -> Path:
    """Move the caught file from the staging folder to a free name in the download folder: never a file elsewhere
    (the path must be the guid's in staging, a regular file, not a link), never over a file that is there."""
    source = staging / plain_name(got.guid)
    if got.path != str(source):
        raise BadExtensionReply(f"download: the browser saved {got.path[:300]!r}, not in the staging folder")
    try:
        info = os.lstat(source)
    except OSError as exc:
        raise NavigationFailed(f"the download of {got.url[:300]} left no file", hint="Try again.") from exc
    if not stat.S_ISREG(info.st_mode):
        raise BadExtensionReply("download: the browser's file is not a regular file")
    name = plain_name(got.suggested_name) if got.suggested_name else file_name("", got.url)
    for _ in range(3):  # another writer may take the free name between the check and the link
        target = free_path(base, name)
        if target.resolve().parent != base:
            raise InvalidArgument(f"the file name {name!r} would leave the download folder")
        try:
            os.link(source, target)  # fails on a file that is there, unlike a rename
        except FileExistsError:
            continue
        except OSError as exc:
            raise DownloadFailed(f"the file could not be saved as {target.name!r}: {exc.strerror or exc}",
                                 hint="Check the download folder (space, permissions).") from None
        return target
    raise InvalidArgument(f"the download folder keeps taking the name {name!r}")
