"""``ai-bridge doctor --page FILE.html``: the no-send probe and the answer extraction on a page saved from a browser.

When a site changes, the user saves the page as their browser shows it (DevTools "Copy outerHTML", or "Webpage,
Complete") and runs this. ai-bridge launches a headless Chromium of its own on a private debugging pipe — no
extension, no server — loads the file into a blank tab with the page's own scripts disabled and every network load
failed, then runs what an ask runs on the live site: `probe.js` judged by `probe.judge` (the table `doctor --live`
prints), and the watcher (`watcher.js`, with the markdown converter) for the page state and the answer it would
return. The saved page's scripts never run and nothing it references is fetched.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import signal
import stat
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import trio

from actors.browser import find_browser
from actors.browser.pipe import BrowserPipe, CdpFailed, PipeError
from actors.browser.process import (
    HEADLESS_DISABLED_FEATURES,
    BrowserProcess,
    diagnose,
    kill_group,
    read_log_since,
    spawn,
    with_disabled_features,
)
from actors.protocol.common import JSON, JSONObject, ProviderName
from actors.protocol.provider import ProbeReport
from actors.provider import probe
from actors.provider.page import BadPageReport, Extracted, PageState
from actors.provider.tab import CALL, MARKDOWN, WATCHER, WORLD
from actors.provider.table import ProviderTable

from ..config import Config
from ..errors import BadExtensionReply, BridgeError, BrowserLaunchFailed, CdpError
from ..safetext import for_terminal, json_for_terminal
from .providers import provider_tables

MAX_BYTES = 50 << 20  # a saved conversation is a few MiB; a Deep Research report with its sources under 10
SHOWN_LINES = 8  # lines of the answer's markdown the table shows
BINDING = "__aibSavedPage"  # never added: the watcher's reports go nowhere (it reports inside try/catch)


class PageFileError(ValueError):
    """The file cannot be used as a saved page: not a regular file, too large, not text, or no provider in it."""


# --- the file -------------------------------------------------------------------------------------------------------


@attrs.frozen
class SavedPage:
    path: Path
    html: str  # the document to load (a fragment wrapped in a page; meta refreshes disarmed)
    fragment: bool  # the file held an element's outerHTML, not a whole document
    url: str | None  # the page's address, when the file says it (Chrome's "saved from" mark, a canonical link)


def read_saved_page(path: Path) -> SavedPage:
    """Read and check a saved page. Raises `PageFileError` with one line that says what is wrong."""
    try:
        # O_NONBLOCK: a FIFO (or a device) opens at once and is refused below instead of blocking the read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise PageFileError(f"{path}: cannot open it: {exc.strerror or exc}") from exc
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise PageFileError(f"{path}: not a regular file")
    with open(fd, "rb") as f:
        if st.st_size > MAX_BYTES:
            raise PageFileError(f"{path}: {st.st_size / (1 << 20):.0f} MiB, larger than the {MAX_BYTES >> 20} MiB a "
                                "saved page may be")
        try:
            data = f.read(MAX_BYTES + 1)
        except OSError as exc:
            raise PageFileError(f"{path}: cannot read it: {exc.strerror or exc}") from exc
    if len(data) > MAX_BYTES:
        raise PageFileError(f"{path}: larger than the {MAX_BYTES >> 20} MiB a saved page may be")
    text = _decode(data, path)
    head = text[:4000].lstrip()
    if re.match(r"(From|MIME-Version|Snapshot-Content-Location|Content-Type):", head, re.I) \
            and "multipart/related" in head.lower():
        raise PageFileError(f"{path}: an MHTML archive (\"Webpage, Single File\"); save the page as \"Webpage, "
                            "Complete\" or copy its outerHTML (docs/providers.md)")
    if "\0" in text or not re.search(r"<[A-Za-z!]", text):
        raise PageFileError(f"{path}: no HTML in it; save the page as docs/providers.md says")
    fragment = not _DOCUMENT.match(text)
    html = _disarm(text)
    if fragment:
        html = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>saved page</title></head><body>\n"
                + html + "\n</body></html>")
    return SavedPage(path, html, fragment, _address(text))


def _decode(data: bytes, path: Path) -> str:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        codec, body = "utf-16", data
    elif data.startswith(codecs.BOM_UTF8):
        codec, body = "utf-8", data[len(codecs.BOM_UTF8):]
    else:
        codec, body = "utf-8", data
    try:
        return body.decode(codec)
    except UnicodeDecodeError as exc:
        declared = re.search(rb"<meta[^>]*charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", body[:4096], re.I)
        if declared:
            name = declared.group(1).decode("ascii")
            try:
                if codecs.lookup(name).name != "utf-8":
                    return body.decode(name)
            except (LookupError, UnicodeDecodeError):
                pass
        raise PageFileError(f"{path}: not {codec.upper()} text (undecodable byte at offset {exc.start}); is it an "
                            "HTML file?") from exc


# A whole document starts with a doctype or the <html> element (comments before it: a capture's header, Chrome's
# "saved from" mark); anything else is an element's outerHTML.
_DOCUMENT = re.compile(r"\A\ufeff?\s*(?:<!--(?:[^-]|-(?!->))*-->\s*)*(?:<!doctype\b|<html\b)", re.I)
# A meta refresh (a <noscript> one comes alive in a page without scripts) would navigate the tab away from the page.
_REFRESH = re.compile(r"(<meta\b[^<>]*?)\bhttp-equiv(\s*=\s*[\"']?\s*refresh)", re.I)


def _disarm(text: str) -> str:
    return _REFRESH.sub(r"\1data-ai-bridge-disarmed\2", text)


_SAVED_FROM = re.compile(r"<!--\s*saved from url=\(\d+\)(https?://[^\s<>]+?)\s*-->", re.I)
_TAG = re.compile(r"<(?:link|meta)\b[^<>]*>", re.I)
_ATTR = re.compile(r"""([\w:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")


def _address(text: str) -> str | None:
    """The page's own address: Chrome's "saved from" mark, else its canonical link or og:url (only http(s))."""
    import html as html_lib

    if m := _SAVED_FROM.search(text[:10000]):
        return m.group(1)
    for tag in _TAG.finditer(text[:500000]):
        attrs_ = {k.lower(): html_lib.unescape(a or b or c) for k, a, b, c in _ATTR.findall(tag.group(0))}
        url = None
        if attrs_.get("rel", "").lower() == "canonical":
            url = attrs_.get("href")
        elif attrs_.get("property", "").lower() == "og:url":
            url = attrs_.get("content")
        if url and re.match(r"https?://[^\s]+$", url):
            return url
    return None


# Markup only each site has, as tags (text in a page never holds a raw "<": it is escaped as &lt;).
_MARKERS = {
    ProviderName.CHATGPT: re.compile(
        r"<[a-z][^<>]*\s(?:data-message-author-role|data-message-model-slug|data-turn)\s*="
        r"|<[a-z][^<>]*\sid\s*=\s*[\"']?prompt-textarea\b", re.I),
    ProviderName.GEMINI: re.compile(
        r"<(?:model-response|user-query|bard-mode-switcher|deep-research-immersive-panel|bard-sidenav|chat-window"
        r"|input-area-v2)[\s/>]", re.I),
    # claude-chat-simple.html, claude-2607-*.html
    ProviderName.CLAUDE: re.compile(
        r"<[a-z][^<>]*\s(?:data-is-streaming\s*=|data-testid\s*=\s*[\"']?(?:chat-input|model-selector-dropdown"
        r"|action-bar-copy)\b|class\s*=\s*[\"'][^\"']*\bfont-claude-response\b)", re.I),
    # grok-2607-*.html and tokenless's Grok page
    ProviderName.GROK: re.compile(
        r"<[a-z][^<>]*\s(?:data-testid\s*=\s*[\"']?(?:assistant-message|chat-submit)\b"
        r"|id\s*=\s*[\"']?model-select-trigger\b)", re.I),
    # perplexity-chat-simple.html
    ProviderName.PERPLEXITY: re.compile(
        r"<[a-z][^<>]*\s(?:id\s*=\s*[\"']?(?:ask-input|markdown-content-\d)|class\s*=\s*[\"'][^\"']*group/query)",
        re.I),
}
_HOSTS = {ProviderName.CHATGPT: re.compile(r"https://(chatgpt\.com|chat\.openai\.com)/"),
          ProviderName.GEMINI: re.compile(r"https://gemini\.google\.com/"),
          ProviderName.CLAUDE: re.compile(r"https://claude\.ai/"),
          ProviderName.GROK: re.compile(r"https://grok\.com/"),
          ProviderName.PERPLEXITY: re.compile(r"https://(www\.)?perplexity\.ai/")}


def detect_provider(page: SavedPage) -> ProviderName:
    """Whose page this is, from its markup (the page's address breaks a tie). Raises `PageFileError` when it cannot
    tell."""
    found = [p for p, rx in _MARKERS.items() if rx.search(page.html)]
    if len(found) != 1 and page.url:
        by_url = [p for p, rx in _HOSTS.items() if rx.match(page.url)]
        if len(by_url) == 1 and (not found or by_url[0] in found):
            return by_url[0]
    if len(found) == 1:
        return found[0]
    what = f"markup of {' and '.join(p.display for p in found)}" if found else "no site's markup"
    raise PageFileError(f"{page.path}: cannot tell whose page this is ({what}); name it with --provider chatgpt, "
                        "--provider gemini, --provider claude, --provider grok or --provider perplexity")


# --- the offline browser --------------------------------------------------------------------------------------------


def browser_args(profile: Path, extra: Sequence[str] = ()) -> list[str]:
    """Headless, no network (every name resolves to nothing; the tab fails each load as well), no extension."""
    args = [f"--user-data-dir={profile}", "--headless=new", "--disable-gpu", "--no-first-run",
            "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-quic", "--disable-extensions", "--disable-dev-shm-usage", "--mute-audio",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--remote-debugging-pipe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    return [*with_disabled_features([*args, *extra], HEADLESS_DISABLED_FEATURES), "about:blank"]


@attrs.define
class OfflineBrowser:
    pipe: BrowserPipe
    process: BrowserProcess
    log_path: Path

    async def send(self, method: str, params: JSONObject | None = None, *, session_id: str | None = None,
                   timeout: float = 30.0) -> JSONObject:
        """A CDP command; the pipe's failures as typed errors."""
        try:
            return await self.pipe.send(method, params, session_id=session_id, timeout=timeout)
        except CdpFailed as exc:
            raise CdpError(str(exc)) from exc
        except PipeError as exc:
            raise await self._gone(str(exc)) from exc

    async def _gone(self, what: str) -> BrowserLaunchFailed:
        with trio.move_on_after(2):
            await self.process.wait()
        code = self.process.returncode
        if code is None:
            return BrowserLaunchFailed(f"the browser stopped answering: {what}")
        why = await trio.to_thread.run_sync(read_log_since, self.log_path, 0)
        d = diagnose(why, code)
        return BrowserLaunchFailed(f"the browser exited (code {code}): {d.line}", hint=d.hint)

    async def _fail_loads(self) -> None:
        """Fail every request a tab pauses (Fetch domain): the saved page fetches nothing, not even a navigation.
        A request whose event is dropped stays paused: never fetched either."""
        async for ev in self.pipe.events:
            request_id = ev.params.get("requestId")
            if ev.method == "Fetch.requestPaused" and isinstance(request_id, str) and ev.session_id:
                try:
                    await self.pipe.send("Fetch.failRequest", {"requestId": request_id,
                                                               "errorReason": "BlockedByClient"},
                                         session_id=ev.session_id, timeout=5)
                except PipeError:
                    pass  # the tab is gone


@asynccontextmanager
async def open_offline_browser(path: str, extra_args: Sequence[str] = ()) -> AsyncIterator[OfflineBrowser]:
    """Launch `path` headless with a temporary profile; closed (and its profile removed) on exit."""
    with tempfile.TemporaryDirectory(prefix="ai-bridge-page-") as tmp:
        profile = Path(tmp) / "profile"
        log_path = Path(tmp) / "browser.log"
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            process, write_fd, read_fd = spawn(path, browser_args(profile, extra_args), log_fd, tied=True)
        except OSError as exc:
            raise BrowserLaunchFailed(f"cannot start {path}: {exc.strerror or exc}") from exc
        finally:
            os.close(log_fd)
        browser = OfflineBrowser(BrowserPipe(write_fd, read_fd), process, log_path)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(browser.pipe.run)
                nursery.start_soon(browser._fail_loads)
                try:
                    yield browser
                finally:
                    with trio.CancelScope(shield=True):
                        await _close(browser)  # the reader still runs: it sees the reply and the pipe's end
                    nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                if process.returncode is None:
                    kill_group(process.pid, signal.SIGKILL)
                    with trio.move_on_after(5):
                        await process.wait()
                await browser.pipe.aclose()


async def _close(browser: OfflineBrowser) -> None:
    """Browser.close, then the process's exit; a browser that does not go within 5 s is killed (by the caller)."""
    with trio.move_on_after(5):
        try:
            await browser.pipe.send("Browser.close", timeout=3)
        except PipeError:
            pass  # already gone, or closing
        await browser.process.wait()


# --- one page -------------------------------------------------------------------------------------------------------


@attrs.frozen
class Answer:
    """What the watcher makes of the page: its state, and the answer an ask would return."""

    state: PageState
    own: Extracted  # the last response's own content only (report, content, the box of its feedback icons)
    wide: Extracted  # every anchor of the table, in order (what a fallback would return)
    problems: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        state = self.state.as_json()
        for key in ("seq", "atMs", "doc", "visible"):  # a one-shot read: no sequence, clock or visibility
            state.pop(key, None)
        return {"state": state, "own": attrs.asdict(self.own), "all": attrs.asdict(self.wide),
                "problems": list(self.problems)}


@attrs.frozen
class PageResult:
    page: SavedPage
    provider: ProviderName
    probe: ProbeReport
    answer: Answer

    @property
    def ok(self) -> bool:
        return self.probe.ok and not self.answer.problems


def answer_problems(state: PageState, own: Extracted, wide: Extracted) -> tuple[str, ...]:
    problems: list[str] = []
    if state.assistant_count and not own.text:
        found = f"; the wider anchor '{wide.how}' finds text, which an ask returns only as a fallback" \
            if wide.text else ""
        problems.append(f"the last answer's own content is not found (anchors: report, content, feedback){found}")
    if own.error or (not own.text and wide.error):
        problems.append(f"the markdown converter failed: {own.error or wide.error}")
    return tuple(problems)


class PageTab:
    """One tab of the offline browser holding the saved page, with ai-bridge's isolated world in it."""

    def __init__(self, browser: OfflineBrowser, session_id: str, timeout_s: float) -> None:
        self.browser = browser
        self.session_id = session_id
        self.timeout_s = timeout_s
        self.context_id: int | None = None

    async def send(self, method: str, params: JSONObject | None = None) -> JSONObject:
        return await self.browser.send(method, params, session_id=self.session_id, timeout=self.timeout_s)

    async def load(self, html: str) -> None:
        """The page's own scripts off and every load failed, then the document in place of about:blank."""
        await self.send("Fetch.enable", {"patterns": [{"urlPattern": "*"}]})
        await self.send("Emulation.setScriptExecutionDisabled", {"value": True})
        tree = await self.send("Page.getFrameTree")
        frame_tree = tree.get("frameTree")
        frame = frame_tree.get("frame") if isinstance(frame_tree, dict) else None
        frame_id = frame.get("id") if isinstance(frame, dict) else None
        if not isinstance(frame_id, str):
            raise BadExtensionReply(f"Page.getFrameTree: no frame id in {str(tree)[:200]}")
        await self.send("Page.setDocumentContent", {"frameId": frame_id, "html": html})
        world = await self.send("Page.createIsolatedWorld", {"frameId": frame_id, "worldName": WORLD})
        context_id = world.get("executionContextId")
        if not isinstance(context_id, int):
            raise BadExtensionReply(f"Page.createIsolatedWorld: no executionContextId in {str(world)[:200]}")
        self.context_id = context_id
        # Without scripts a <noscript>'s content is live markup: the page as its user saw it had none of it.
        await self.script("function () { for (const n of document.querySelectorAll('noscript')) n.remove(); }")

    async def script(self, source: str, *args: JSON) -> JSON:
        """A page script (a function) run in our isolated world with `args` as values: what `TabSession.script`
        does over the extension."""
        assert self.context_id is not None
        reply = await self.send("Runtime.callFunctionOn", {
            "functionDeclaration": source, "executionContextId": self.context_id,
            "arguments": [{"value": a} for a in args], "returnByValue": True})
        details = reply.get("exceptionDetails")
        if isinstance(details, dict):
            exc = details.get("exception")
            text = exc.get("description") if isinstance(exc, dict) else None
            raise CdpError(f"page script failed: {str(text or details.get('text', 'exception'))[:500]}")
        result = reply.get("result")
        return result.get("value") if isinstance(result, dict) else None

    async def probe(self, table: ProviderTable, url: str | None) -> ProbeReport:
        """`probe.js` and `judge` as `doctor --live` runs them, the page's address taken from the file."""
        raw = await self.script(probe.PROBE, _json(table.watcher_config()))
        try:
            seen = probe.Seen.parse(raw)
        except BadPageReport as exc:
            raise BadExtensionReply(f"the {table.title} probe result is malformed: {exc}") from exc
        seen = attrs.evolve(seen, url=url or "")
        return probe.judge(table, seen, overridden=table.overridden)

    async def answer(self, table: ProviderTable) -> Answer:
        """The converter and the watcher installed as `TabSession.install` does; its state and both extractions."""
        await self.script(MARKDOWN)
        await self.script(WATCHER, _json(table.watcher_config()), BINDING)
        raw_state = await self.script(CALL, "state")
        own_raw = await self.script(CALL, "extract", True)
        wide_raw = await self.script(CALL, "extract", False)
        try:
            if not isinstance(raw_state, dict):
                raise BadPageReport("the watcher state is not an object")
            state = PageState.parse({**raw_state, "seq": 0, "at": 0})
            own, wide = Extracted.parse(own_raw), Extracted.parse(wide_raw)
        except BadPageReport as exc:
            raise BadExtensionReply(f"the {table.title} watcher's answer is malformed: {exc}") from exc
        return Answer(state, own, wide, answer_problems(state, own, wide))


def _json(value: object) -> JSON:
    loaded: JSON = json.loads(json.dumps(value))
    return loaded


async def run_page(browser: OfflineBrowser, page: SavedPage, provider: ProviderName, table: ProviderTable,
                   timeout_s: float) -> PageResult:
    """Probe one saved page and read its answer, in a tab of its own."""
    with trio.fail_after(timeout_s):
        target = await browser.send("Target.createTarget", {"url": "about:blank"})
        target_id = target.get("targetId")
        if not isinstance(target_id, str):
            raise BadExtensionReply(f"Target.createTarget: no targetId in {str(target)[:200]}")
        try:
            attached = await browser.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
            session_id = attached.get("sessionId")
            if not isinstance(session_id, str):
                raise BadExtensionReply(f"Target.attachToTarget: no sessionId in {str(attached)[:200]}")
            tab = PageTab(browser, session_id, timeout_s)
            await tab.load(page.html)
            report = await tab.probe(table, page.url or page.path.resolve().as_uri())
            answer = await tab.answer(table)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(3):
                try:
                    await browser.send("Target.closeTarget", {"targetId": target_id}, timeout=3)
                except BridgeError:
                    pass
    return PageResult(page, provider, report, answer)


# --- the command ----------------------------------------------------------------------------------------------------


@attrs.frozen
class Job:
    """A page to probe and whose table to probe it with; `detected`: the provider came from the page itself."""

    page: SavedPage
    table: ProviderTable
    detected: bool


def plan(paths: Sequence[Path], provider: str | None, tables: Sequence[ProviderTable]) -> list[Job]:
    """Read every file and name its provider before any browser starts. Raises `PageFileError`."""
    by_name = {t.name: t for t in tables}
    jobs = []
    for path in paths:
        page = read_saved_page(path)
        name = ProviderName(provider) if provider else detect_provider(page)
        jobs.append(Job(page, by_name[name.value], provider is None))
    return jobs


Outcome = PageResult | BridgeError


async def probe_pages(browser_path: str, jobs: Sequence[Job], *, timeout_s: float,
                      extra_args: Sequence[str] = ()) -> list[Outcome]:
    """Each page in a tab of its own in one offline browser, one after the other. A page's failure is its outcome;
    a browser that cannot start is raised."""
    out: list[Outcome] = []
    async with open_offline_browser(browser_path, extra_args) as browser:
        for job in jobs:
            try:
                out.append(await run_page(browser, job.page, ProviderName(job.table.name), job.table, timeout_s))
            except trio.TooSlowError:
                out.append(BrowserLaunchFailed(f"reading the page took longer than {timeout_s:g}s",
                                               hint="Try a larger --timeout."))
            except BrowserLaunchFailed:
                raise
            except BridgeError as exc:
                out.append(exc)
    return out


def _origin(job: Job) -> str:
    bits = [job.table.name + (", from its markup" if job.detected else ", as --provider says")]
    if job.page.fragment:
        bits.append("an element's outerHTML, put in a page")
    return "; ".join(bits)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def render_answer(answer: Answer) -> list[str]:
    s = answer.state
    lines = ["  answer (what an ask reads on this page)"]
    model = s.model or "not shown"
    notice = f"{s.notice.kind.value}: {s.notice.text[:80]}" if s.notice else "none"
    lines.append(f"    page state   {s.assistant_count} responses, {s.user_count} questions, answered: "
                 f"{_yes(s.answered)}; finished-turn buttons on the last: {_yes(s.last_has_feedback)}; "
                 f"model: {model}")
    lines.append(f"                 input: {_yes(s.input_found)}, send: {_yes(s.send_found)}"
                 f"{' (enabled)' if s.send_enabled else ''}, stop: {_yes(s.stop)}, mic: {_yes(s.mic_found)}; "
                 f"thinking: {_yes(s.thinking)}, generating: {_yes(s.generating_text)}, unavailable: "
                 f"{_yes(s.unavailable)}, signed out: {_yes(s.login)}; notice: {notice}")
    if not s.assistant_count and not answer.wide.text:
        lines.append("    no response on this page (a new chat): nothing to extract")
    else:
        lines += _extracted("own content", answer.own)
        if answer.wide == answer.own:
            lines.append("    any anchor   the same")
        else:
            lines += _extracted("any anchor", answer.wide)
    for problem in answer.problems:
        lines.append(f"    PROBLEM: {problem}")
    return lines


def _extracted(title: str, e: Extracted) -> list[str]:
    if not e.text:
        said = "only page chrome (the disclaimer), which is never an answer" if e.how == "chrome" else "nothing"
        return [f"    {title:<12} {said}"]
    kind = "plain text" if e.plain else "markdown"
    out = [f"    {title:<12} anchor '{e.how}': {len(e.text)} characters of {kind}"
           + (f" (converter failed: {e.error})" if e.error else "")]
    text_lines = e.text.splitlines()
    for line in text_lines[:SHOWN_LINES]:
        out.append(f"      | {line[:160]}{'…' if len(line) > 160 else ''}".rstrip())
    if len(text_lines) > SHOWN_LINES:
        out.append(f"      | … {len(text_lines) - SHOWN_LINES} more lines")
    return out


def render(jobs: Sequence[Job], outcomes: Sequence[Outcome]) -> str:
    from .probe import render_blocks

    lines: list[str] = []
    for job, outcome in zip(jobs, outcomes, strict=True):
        lines.append(f"page {job.page.path}  ({_origin(job)})")
        if job.page.fragment:
            lines.append("  (a part of a page: what lies outside it shows as missing; copy the <html> element to "
                         "check the whole page)")
        name = ProviderName(job.table.name)
        if isinstance(outcome, BridgeError):
            lines += render_blocks({name: outcome})
            continue
        block = render_blocks({name: outcome.probe})
        lines += block[:-1]  # its blank line after the answer
        lines += render_answer(outcome.answer)
        lines.append("")
    ok = all(isinstance(o, PageResult) and o.ok for o in outcomes)
    lines.append("the saved page reads as an ask needs it" if ok and len(outcomes) == 1
                 else "the saved pages read as an ask needs them" if ok else "some pages need attention")
    return "\n".join(lines)


def as_json(jobs: Sequence[Job], outcomes: Sequence[Outcome]) -> dict[str, object]:
    pages: list[dict[str, object]] = []
    for job, outcome in zip(jobs, outcomes, strict=True):
        entry: dict[str, object] = {"file": str(job.page.path), "provider": job.table.name,
                                    "detected": job.detected, "fragment": job.page.fragment}
        if isinstance(outcome, BridgeError):
            entry |= {"ok": False, "error": outcome.as_dict()}
        else:
            entry |= {"ok": outcome.ok, "probe": outcome.probe.as_json(), "answer": outcome.answer.as_json()}
        pages.append(entry)
    return {"ok": all(p["ok"] for p in pages), "pages": pages}


async def page_main(config: Config, paths: Sequence[Path], provider: str | None, timeout_s: float,
                    as_json_out: bool) -> int:
    """`doctor --page`: 0 when every page reads as an ask needs it, 1 when something is missing or failed, 2 for a
    file that cannot be used (one line on stderr)."""
    try:
        jobs = plan(paths, provider, provider_tables(config))
    except PageFileError as exc:
        print(for_terminal(f"ai-bridge doctor: {exc}"), file=sys.stderr)
        return 2
    try:
        browser = await trio.to_thread.run_sync(find_browser, config.browser_path, config.channel)
        outcomes = await probe_pages(browser, jobs, timeout_s=timeout_s, extra_args=config.browser_args)
    except BridgeError as exc:
        print(for_terminal(f"ai-bridge doctor: {exc}"), file=sys.stderr)
        return 1
    if as_json_out:  # a saved page's text: shown, never obeyed by the terminal
        print(json_for_terminal(as_json(jobs, outcomes)))
    else:
        print(for_terminal(render(jobs, outcomes)))
    sys.stdout.flush()
    return 0 if all(isinstance(o, PageResult) and o.ok for o in outcomes) else 1
