"""The no-send health probe of a provider page (`Probe`): which entry of the provider table still matches the site.

The page is opened as an ask would open it (the tab session picks or opens the tab), then `probe.js` reads it —
no click, no focus, no typing — and `judge` turns what it saw into one `ProbeItem` per table entry: ok (the first
selector or label matched), fallback (only a later one), missing, or not applicable on this page (and why). Rules
per entry say which are required and when an entry can be judged at all (the stop button only while an answer
streams, the response selectors only on a page that shows an earlier answer).
"""

from __future__ import annotations

import contextlib
import logging
import re

import attrs
import trio

from supervisor.errors import BadExtensionReply

from ..protocol.common import JSON, ProviderName
from ..protocol.provider import ProbeItem, ProbeReport, ProbeStatus
from .flowkit import unreachable
from .page import BadPageReport, PageState
from .tab import HERE, PageTimeout, TabSession
from .table import ProviderTable, Timeouts

PROBE = (HERE / "probe.js").read_text(encoding="utf-8")

CONVERSATION = ("user", "assistant", "turn", "content", "feedback", "model")  # judged on a page with an answer
COMPOSER = ("input", "send", "sendIcon", "mic", "voice")  # judged on a signed-in page
REQUIRED = frozenset({"input", "send", "user", "assistant", "content", "feedback"})
VISIBLE = frozenset({"input", "stop", "login"})  # must be shown, not merely in the DOM (as the watcher wants them)
SHOWN_ONLY = {  # entries that show only in some states: not applicable when absent, with the reason
    "stop": "nothing is generating on this page; the stop button shows only while an answer streams",
    "busy": "nothing is generating on this page",
    "challenge": "no bot check shown (none expected)",
    "expandThinking": "no answer with collapsed thinking on this page",
    "thinkingIndicator": "nothing is thinking on this page",
    "notice": "no limit or error notice is shown (none expected)",
    "report": "no Deep Research report is open on this page",
    "reportEntry": "no response here opened a Deep Research report",
    "reportSources": "no Deep Research report is open on this page",
    "researchStart": "no Deep Research plan waits to be started on this page",
    "researchFrame": "no Deep Research runs on this page",
    "researchDoc": "inside the Deep Research frame, which the probe does not read",
    "menu": "no menu is open (`ai-bridge models` opens the pickers)",
    "pickerItem": "no menu is open (`ai-bridge models` opens the pickers)",
    "pickerLabel": "no menu is open (`ai-bridge models` opens the pickers)",
    "pickerChecked": "no menu is open (`ai-bridge models` opens the pickers)",
    "toolSearch": "no menu is open (`ai-bridge models` opens the tools menu)",
    "toolChip": "no tool is switched on",
    "uploadItem": "the upload menu is closed (an ask with files opens it)",
    "attachNotice": "no upload notice shown (none expected)",
    "attachment": "no file attached",
    "attachmentBusy": "nothing uploading",
    "generatedImage": "no answer here shows a generated image",
    "fileLink": "no answer here links a file to download",
}
LABELS_SHOWN_ONLY = {
    "stop": "nothing is generating on this page",
    "skipThinking": "nothing is thinking on this page",
    "thinking": "nothing is thinking on this page",
    "thinkingDone": "no thinking answer on this page",
    "generating": "nothing is generating on this page",
    "rateLimit": "no limit message shown (none expected)",
    "siteError": "no error shown (none expected)",
    "retry": "no error with a retry button shown (none expected)",
    "unavailable": "no 'conversation not available' notice shown (none expected)",
    "chrome": "no disclaimer shown on this page",
    "startResearch": "no Deep Research plan waits to be started on this page",
    "frameStart": "inside the Deep Research frame, which the probe does not read",
    "researchDone": "inside the Deep Research frame, which the probe does not read",
    "researchProgress": "inside the Deep Research frame, which the probe does not read",
    "reportHeading": "inside the Deep Research frame, which the probe does not read",
    "researchCounters": "inside the Deep Research frame, which the probe does not read",
    "effortToggle": "in the model picker, which the probe does not open (`ai-bridge models`)",
    "effortMenu": "in the model picker, which the probe does not open (`ai-bridge models`)",
    "pickerLocked": "in the model picker, which the probe does not open (`ai-bridge models`)",
    "challenge": "no bot check shown (none expected)",
    "toolDeepResearch": "in the tools menu, which the probe does not open (`ai-bridge models`)",
    "toolWebSearch": "in the tools menu, which the probe does not open (`ai-bridge models`)",
    "toolDeepThink": "in the tools menu, which the probe does not open (`ai-bridge models`)",
    "toolCanvas": "in the tools menu, which the probe does not open (`ai-bridge models`)",
}
CONVERSATION_LABELS = ("answerMarkers", "endMarkers")  # ChatGPT's screen-reader headings around each turn


@attrs.frozen
class Match:
    """One entry as the page shows it: the index and text of the first matching selector or label."""

    index: int | None
    matched: str | None
    invalid: tuple[str, ...] = ()  # selectors the browser refused as bad syntax


@attrs.frozen
class Seen:
    """What probe.js read, checked (it is external input)."""

    url: str
    lang: str
    kana: bool
    shadow_roots: int
    responses: int
    selectors: dict[str, Match]
    labels: dict[str, Match]
    composer_empty: bool = False

    @classmethod
    def parse(cls, raw: JSON, *, visible: frozenset[str] = VISIBLE) -> Seen:
        if not isinstance(raw, dict):
            raise BadPageReport("the probe result is not an object")
        sels, labels = raw.get("selectors"), raw.get("labels")
        url, lang, kana = raw.get("url"), raw.get("lang"), raw.get("kana")
        shadow, responses = raw.get("shadowRoots"), raw.get("responses")
        if not (isinstance(sels, dict) and isinstance(labels, dict) and isinstance(url, str)
                and isinstance(lang, str) and isinstance(kana, bool) and _count(shadow) and _count(responses)):
            raise BadPageReport(f"the probe result has the wrong shape: {str(raw)[:200]}")
        assert isinstance(shadow, int) and isinstance(responses, int)
        out_sels: dict[str, Match] = {}
        for name, rows in sels.items():
            if not isinstance(rows, list):
                raise BadPageReport(f"probe: selectors.{name} is not a list")
            index: int | None = None
            matched: str | None = None
            invalid: list[str] = []
            for i, row in enumerate(rows):
                if not isinstance(row, dict) or not isinstance(row.get("selector"), str):
                    raise BadPageReport(f"probe: selectors.{name}[{i}] has the wrong shape")
                selector = str(row["selector"])
                if row.get("invalid") is True:
                    invalid.append(selector)
                    continue
                count, shown = row.get("count"), row.get("visible")
                if not (_count(count) and _count(shown)):
                    raise BadPageReport(f"probe: selectors.{name}[{i}] has no count")
                n = shown if name in visible else count
                if index is None and isinstance(n, int) and n > 0:
                    index, matched = i, selector
            out_sels[name] = Match(index, matched, tuple(invalid))
        out_labels: dict[str, Match] = {}
        for name, rows in labels.items():
            if not isinstance(rows, list):
                raise BadPageReport(f"probe: labels.{name} is not a list")
            index, matched = None, None
            for i, row in enumerate(rows):
                if not isinstance(row, dict) or not isinstance(row.get("label"), str) or not isinstance(
                        row.get("shown"), bool):
                    raise BadPageReport(f"probe: labels.{name}[{i}] has the wrong shape")
                if row["shown"] and index is None:
                    index, matched = i, str(row["label"])
            out_labels[name] = Match(index, matched)
        empty = raw.get("composerEmpty", False)
        if not isinstance(empty, bool):
            raise BadPageReport("probe: composerEmpty is not a boolean")
        return cls(url[:2000], lang[:40], kana, shadow, responses, out_sels, out_labels, empty)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def language_of(seen: Seen) -> str:
    """en or ja from <html lang> (the sites set it from the UI language); without one, Japanese kana in the page
    text say ja. Another language comes back as its code ("de"); unknown as ""."""
    code = seen.lang.lower().split("-")[0]
    if code:
        return code
    return "ja" if seen.kana else ""


def _status(m: Match) -> ProbeStatus:
    if m.index is None:
        return ProbeStatus.MISSING
    return ProbeStatus.OK if m.index == 0 else ProbeStatus.FALLBACK


def _label_status(m: Match) -> ProbeStatus:
    """A label list holds the same text in several languages (a Japanese page matches a later one): any match is
    ok."""
    return ProbeStatus.MISSING if m.index is None else ProbeStatus.OK


def _found(kind: str, m: Match, total: int) -> str:
    if m.index is None:
        return f"none of its {total} {kind}s matched"
    if m.index == 0 or kind == "label":
        return ""
    return f"only {kind} {m.index + 1} of {total} matched: the earlier ones no longer match"


def judge(table: ProviderTable, seen: Seen, *, overridden: tuple[str, ...] = ()) -> ProbeReport:
    """One item per selector and label entry of `table` (plus language and, for shadow-DOM sites, shadow roots)."""
    name = table.name
    conversation = re.match(table.conversation_re, seen.url) is not None or seen.responses > 0
    login = seen.selectors.get("login", Match(None, None))
    input_ = seen.selectors.get("input", Match(None, None))
    login_label = seen.labels.get("login", Match(None, None))
    signed_in: bool | None
    if input_.index is not None:
        signed_in = login.index is None
    elif login.index is not None or login_label.index is not None:
        signed_in = False
    else:
        signed_in = None
    # A bot check in the site's place (issue 40): the page cannot be used until a person completes it.
    challenge = _matched(seen, "challenge") or _label_shown(seen, "challenge")
    if challenge and input_.index is None:
        signed_in = False
    items: list[ProbeItem] = []

    def add(entry: str, status: ProbeStatus, matched: str | None, detail: str, required: bool) -> None:
        items.append(ProbeItem(f"{name}.{entry}", status, matched, detail, required))

    for key, sels in table.selectors.items():
        m = seen.selectors.get(key, Match(None, None))
        required = key in REQUIRED
        bad = f"; the browser refused as bad syntax: {', '.join(m.invalid)}" if m.invalid else ""
        entry = f"selectors.{key}"
        if key == "login":
            if m.index is not None:
                add(entry, _status(m), m.matched, "signed out: the login button shows" + bad, False)
            else:
                add(entry, ProbeStatus.NOT_APPLICABLE, None,
                    "no login button shown (signed in, or the selector no longer matches)" + bad, False)
            continue
        if key == "challenge" and challenge:
            add(entry, _status(m) if m.index is not None else ProbeStatus.OK, m.matched, "a bot check shows instead "
                "of the chat: complete it in the browser ai-bridge uses, then probe again" + bad, False)
            continue
        if key == "send" and m.index is None and seen.composer_empty and _matched(seen, "voice"):
            # The 2026 ChatGPT: no send button on an empty composer; the voice and dictate buttons stand there.
            add(entry, ProbeStatus.NOT_APPLICABLE, None, "the composer is empty and the voice button stands where "
                "send goes; the send button shows once text is typed" + bad, required)
            continue
        if key == "send" and m.index is None and seen.composer_empty and table.send_when_typed \
                and signed_in is not False:
            add(entry, ProbeStatus.NOT_APPLICABLE, None, "the composer is empty; the send button shows once text is "
                "typed" + bad, required)
            continue
        if key in COMPOSER and signed_in is False and m.index is None:
            add(entry, ProbeStatus.NOT_APPLICABLE, None, "signed out: the page shows no composer" + bad, required)
            continue
        if key in CONVERSATION and not conversation and m.index is None:
            add(entry, ProbeStatus.NOT_APPLICABLE, None,
                "this page shows no earlier answer (a new chat); probe a project with a kept conversation "
                "(--project) to check it" + bad, required)
            continue
        if key == "stop" and m.index is None and _label_shown(seen, "stop"):
            add(entry, ProbeStatus.MISSING, None, "a button labelled as a stop button shows, but no stop selector "
                "matches it" + bad, True)
            continue
        if key in SHOWN_ONLY and m.index is None:
            add(entry, ProbeStatus.NOT_APPLICABLE, None, SHOWN_ONLY[key] + bad, False)
            continue
        if key not in REQUIRED and key not in COMPOSER and key not in CONVERSATION and key != "main" \
                and m.index is None:
            add(entry, ProbeStatus.NOT_APPLICABLE, None, "not shown on this page" + bad, False)
            continue
        add(entry, _status(m), m.matched, _found("selector", m, len(sels)) + bad, required)

    for key, labels in table.labels.items():
        if not labels:
            continue  # the site has none of these
        m = seen.labels.get(key, Match(None, None))
        entry = f"labels.{key}"
        if key == "login":
            if signed_in is False:
                add(entry, _label_status(m), m.matched, _found("label", m, len(labels)), False)
            else:
                add(entry, ProbeStatus.NOT_APPLICABLE, m.matched, "signed in: no login label expected", False)
        elif key in CONVERSATION_LABELS:
            if conversation:
                add(entry, _label_status(m), m.matched, _found("label", m, len(labels)), False)
            else:
                add(entry, ProbeStatus.NOT_APPLICABLE, None, "this page shows no earlier answer", False)
        elif m.index is not None:
            add(entry, _label_status(m), m.matched, _found("label", m, len(labels)), False)
        else:
            add(entry, ProbeStatus.NOT_APPLICABLE, None, LABELS_SHOWN_ONLY.get(key, "not shown on this page"),
                False)

    language = language_of(seen)
    if language in ("en", "ja"):
        add("labels", ProbeStatus.OK, language, "", False)
    elif any(o.startswith(f"{name}.labels.") for o in overridden):
        add("labels", ProbeStatus.FALLBACK, language or None,
            f"the page language ({language or 'unknown'}) is not one the shipped labels know; your "
            "providers.toml adds labels", False)
    else:
        add("labels", ProbeStatus.MISSING, language or None,
            f"the page language ({language or 'unknown'}) is neither English nor Japanese, the languages of the "
            f"labels: stop, limit and error texts will not be recognized; prepend this language's labels "
            f"([{name}.labels] in providers.toml) or switch the site to English", False)

    if table.shadow_dom:
        if seen.shadow_roots:
            add("shadow_dom", ProbeStatus.OK, f"{seen.shadow_roots} open shadow roots",
                "the selectors are searched inside them too", False)
        elif input_.index is not None:
            add("shadow_dom", ProbeStatus.NOT_APPLICABLE, None,
                "no open shadow roots on this page; the selectors matched without them", False)
        elif signed_in is False:
            add("shadow_dom", ProbeStatus.NOT_APPLICABLE, None, "signed out: the login page has no app to look into",
                True)
        else:
            add("shadow_dom", ProbeStatus.MISSING, None,
                "no open shadow roots reachable and no input box found: the site may render into closed shadow "
                "roots", True)

    return ProbeReport(provider=ProviderName(name), url=seen.url, signed_in=signed_in, language=language,
                       items=tuple(items), overridden=overridden)


def _matched(seen: Seen, key: str) -> bool:
    m = seen.selectors.get(key)
    return m is not None and m.index is not None


def _label_shown(seen: Seen, key: str) -> bool:
    m = seen.labels.get(key)
    return m is not None and m.index is not None


async def look(page: TabSession, t: ProviderTable, to: Timeouts, kept: str | None, deadline: float,
               log: logging.Logger) -> ProbeReport:
    """Read the page as an ask finds it: loaded, the input box (or a login page) shown, and on a conversation its
    turns arrived. `kept`: the project's conversation, read only. A kept conversation the site no longer has (deleted,
    or never there) is not a changed site: the probe then reads a new chat, and the report says the conversation is
    gone (an ask in that state asks in a new chat too). A drifted selector makes the waits run out; the probe then
    reads the page as it is."""
    def is_conversation(url: str) -> bool:
        return re.match(t.conversation_re, url) is not None

    def room(reserve: float) -> float:
        return max(0.5, deadline - trio.current_time() - reserve)

    async def loaded() -> PageState:
        st = await page.current()
        with contextlib.suppress(PageTimeout):
            st = await page.wait_for(lambda s: s.load_failed or (s.ready == "complete" and (
                s.input_found or s.login or s.challenge)), min(to.input_s, room(to.script_s)), "the input box")
        if st.load_failed:  # the browser's error page is no verdict on the site's markup
            raise unreachable(t, await page.load_error())
        return st

    st = await page.current()
    if kept is not None and st.url != kept:
        await page.navigate(kept)  # read only: the kept conversation is looked at, never typed into
    elif kept is None and st.load_failed:  # an earlier ask's error page: the site again
        await page.navigate(t.home_url)
    st = await loaded()
    gone: str | None = None
    if is_conversation(st.url) or kept is not None:
        with contextlib.suppress(PageTimeout):
            st = await page.wait_for(lambda s: s.user_count > 0 or s.unavailable or not is_conversation(s.url),
                                     min(to.earlier_turns_s, room(5)), "earlier turns")
        if kept is not None and st.user_count == 0 and (st.unavailable or not is_conversation(st.url)):
            gone = kept
            log.info("%s probe: the kept conversation %s is not available; probing a new chat", t.title, kept)
            await page.navigate(t.home_url)
            st = await loaded()
    if is_conversation(st.url):
        # The last turn's finished-turn buttons come a moment after the turns (they are judged too).
        with contextlib.suppress(PageTimeout):
            await page.wait_for(lambda s: s.answered and (s.last_has_feedback or s.stop),
                                min(to.settle_max_s, room(5)), "the last turn's buttons")
    return attrs.evolve(judge(t, await read_page(page), overridden=t.overridden), conversation_gone=gone)


async def read_page(page: TabSession) -> Seen:
    raw = await page.script(PROBE, _config(page.t))
    try:
        return Seen.parse(raw)
    except BadPageReport as exc:
        raise BadExtensionReply(f"the {page.t.title} probe result is malformed: {exc}") from exc


def _config(table: ProviderTable) -> JSON:
    return {"shadow": table.shadow_dom,
            "sel": {k: list(v) for k, v in table.selectors.items()},
            "labels": {k: list(v) for k, v in table.labels.items()}}
