"""The in-page watcher (actors/provider/watcher.js) on small pages written here with the facts of the real sites as
captured in 2026 (not copies of them): Gemini's light-DOM turns with Material font icons and an aria-disabled send
button, ChatGPT's composer without a send button, turn actions with another extension's button, the disclaimer
under the thread, a Deep Research panel, a deleted conversation's toast. Loaded into an isolated world of real
Chromium exactly as the provider actor loads it (markdown.js, then watcher.js with the table's config).

The property test (issue 23) writes every label of both tables, in both languages, into questions and answers as
headings, list items, table cells and sentences: completion must still fire by the site's normal signal, and no
label in message content may set thinking, generating or stop.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import AsyncIterator

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.provider.page import Extracted, PageState
from actors.provider.sites import chatgpt, gemini
from actors.provider.tab import MARKDOWN_SOURCE, WATCHER
from actors.provider.table import ProviderTable, Watch

from . import cdp_pipe
from .cdp_pipe import CHROMIUM
from .conftest import missing_tool
from .shared_chromium import ChromiumPool

pytestmark = [
    pytest.mark.chromium,
    pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=missing_tool(f"Chromium not found at {CHROMIUM}")),
]

TABLES = {"chatgpt": chatgpt.TABLE, "gemini": gemini.TABLE}


class Page(cdp_pipe.World):
    """One about:blank page with our isolated world; the watcher of one table installed in it."""

    async def show(self, body: str, table: ProviderTable) -> None:
        """The page's body (main world), then the watcher of `table` (re-configured when it is there already)."""
        await self.page.evaluate(f"document.body.innerHTML = {json.dumps(body)}")
        res = await self.page.send("Runtime.callFunctionOn", {
            "functionDeclaration": WATCHER, "executionContextId": self.context_id, "returnByValue": True,
            "arguments": [{"value": table.watcher_config()}, {"value": "__aib_test_binding"}]})
        assert "exceptionDetails" not in res, res["exceptionDetails"]

    async def state(self) -> PageState:
        raw = await self.eval("(() => { const s = window.__aibWatcher.state(); s.seq = 1; s.at = 1; return s; })()")
        return PageState.parse(raw)

    async def extract(self, own_only: bool = False) -> Extracted:
        return Extracted.parse(await self.eval(f"window.__aibWatcher.extract({json.dumps(own_only)})"))


@pytest.fixture
async def page(shared_chromiums: ChromiumPool) -> AsyncIterator[Page]:
    # the session's plain Chromium (same flags as open_chromium()), this test's page in a fresh context of it
    async with shared_chromiums.get().browser() as browser:
        p = await Page.create(await browser.new_page("about:blank"))
        await p.eval(MARKDOWN_SOURCE)
        yield p


# --- the 2026 pages (our own markup, with the facts of the captures) -------------------------------------------------

QUILLBOT = '<button aria-label="Humanize with QuillBot" data-testid="quillbot-humanize-button" type="button">Q</button>'


def chatgpt_page(turns: list[tuple[str, str]], *, last_finished: bool = True, slug: str = "gpt-5-2",
                 streaming: bool = False, empty_last: bool = False) -> str:
    """ChatGPT as in 2026: turns, the composer with voice and dictate buttons (no send button while empty), the
    disclaimer below it. `turns` are (question text, answer HTML)."""
    out = []
    for i, (question, answer) in enumerate(turns):
        last = i == len(turns) - 1
        actions = ('<div class="turn-actions"><button data-testid="copy-turn-action-button" aria-label="Copy">c'
                   f'</button>{QUILLBOT}<button data-testid="good-response-turn-action-button" '
                   'aria-label="Good response">g</button><button data-testid="bad-response-turn-action-button" '
                   'aria-label="Bad response">b</button>'
                   '<button aria-label="Share">s</button><button aria-label="Switch model">m</button></div>')
        out.append(f'<article data-turn="user" data-testid="conversation-turn-{2 * i + 1}"><h5 class="sr-only">You '
                   f'said:</h5><div data-message-author-role="user" data-message-id="u{i}"><div class="whitespace-pre-'
                   f'wrap">{html.escape(question)}</div></div><div><button data-testid="copy-turn-action-button" '
                   'aria-label="Copy">c</button><button aria-label="Edit message">e</button></div></article>')
        body = "" if (last and empty_last) else answer
        out.append(f'<article data-turn="assistant" data-testid="conversation-turn-{2 * i + 2}"><h6 class="sr-only">'
                   f'ChatGPT said:</h6><div data-message-author-role="assistant" data-message-id="a{i}" '
                   f'data-message-model-slug="{slug}"><div class="markdown prose">{body}</div></div>'
                   f'{actions if (not last or last_finished) else ""}</article>')
    button = ('<button id="composer-submit-button" data-testid="stop-button" aria-label="Stop streaming">■</button>'
              if streaming else '<button aria-label="Start Voice" class="composer-submit-button-color">v</button>')
    return ('<header><button data-testid="model-switcher-dropdown-button" aria-label="Model selector, current model '
            f'is 5.2">ChatGPT</button></header><main id="main"><div id="thread">{"".join(out)}</div>'
            '<div id="thread-bottom"><form><button data-testid="composer-plus-btn" aria-label="Add files and more">+'
            '</button><div id="prompt-textarea" class="ProseMirror" contenteditable="true"><p><br></p></div>'
            f'<button aria-label="Improve prompt with QuillBot">q</button><button aria-label="Dictate button">d'
            f'</button>{button}</form><div class="text-token-text-secondary">ChatGPT can make mistakes. Check '
            'important info. See <a href="#">Cookie Preferences</a>.</div></div></main>')


def mat_icon(name: str) -> str:
    return f'<mat-icon role="img" fonticon="{name}" data-mat-icon-name="{name}" class="mat-icon"></mat-icon>'


def gemini_page(turns: list[tuple[str, str]], *, last_finished: bool = True, mode: str = "Fast",
                streaming: bool = False, report: str = "", lang: str = "en") -> str:
    """Gemini as in 2026, everything in the light DOM: user-query and model-response turns with a read-aloud
    button, a lottie avatar and (when finished) the action bar of Material font icons; the composer with the mode
    picker, the mic, and the send button aria-disabled while the input is empty; the disclaimer."""
    ja = lang == "ja"
    out = []
    for i, (question, answer) in enumerate(turns):
        last = i == len(turns) - 1
        actions = ('<message-actions><div class="buttons-container-v2"><thumb-up-button><button aria-label="'
                   f'{"良い回答" if ja else "Good response"}">{mat_icon("thumb_up")}</button></thumb-up-button>'
                   f'<thumb-down-button><button aria-label="Bad response">{mat_icon("thumb_down")}</button>'
                   f'</thumb-down-button><copy-button><button aria-label="Copy">{mat_icon("content_copy")}</button>'
                   f'</copy-button>{QUILLBOT}<button aria-label="More options">{mat_icon("more_vert")}</button>'
                   '</div></message-actions>')
        entry = "<immersive-entry-chip><button>Research report</button></immersive-entry-chip>" \
            if (last and report) else ""
        out.append(
            f'<div class="conversation-container"><user-query><span class="user-query-container"><div '
            f'class="query-content"><button aria-label="Copy prompt">{mat_icon("content_copy")}</button><div '
            f'role="heading" class="query-text"><span class="cdk-visually-hidden">'
            f'{"あなたのプロンプト" if ja else "You said"}</span><p class="query-text-line">{html.escape(question)}</p>'
            '</div></div></span></user-query>'
            '<model-response><div><response-container><div class="response-container"><div class="response-container-'
            f'header"><tts-control><button aria-label="{"読み上げる" if ja else "Listen"}">{mat_icon("volume_up")}'
            '</button></tts-control></div><div class="presented-response-container"><div class="avatar-gutter">'
            '<bard-avatar><svg width="24" height="24"><path d="M1 1h2"/></svg></bard-avatar></div>'
            '<div class="response-container-content"><h2 class="cdk-visually-hidden">'
            f'{"Gemini の回答" if ja else "Gemini said"}</h2><structured-content-container class="model-response-text">'
            f'<message-content><div class="markdown markdown-main-panel" aria-live="polite">{answer}</div>'
            '</message-content></structured-content-container>'
            f'{entry}</div></div></div></response-container></div><div class="response-container-footer">'
            f'{actions if (not last or last_finished) else ""}</div></model-response></div>')
    send = (f'<button aria-label="Stop response">{mat_icon("stop")}</button>' if streaming else
            f'<button class="send" aria-label="Send message" aria-disabled="true">{mat_icon("send")}</button>')
    panel = ""
    if report:
        panel = ('<deep-research-immersive-panel><h2 class="title-text">Report</h2><message-content id="extended-'
                 'response-message-content"><div class="markdown markdown-main-panel" id="extended-response-markdown-'
                 f'content">{report}</div></message-content><deep-research-source-lists><a data-test-id="browse-web-'
                 'item-link" href="https://example.org/one">One</a><a data-test-id="browse-web-item-link" '
                 'href="https://example.org/two">Two</a></deep-research-source-lists></deep-research-immersive-panel>')
    return (f'<chat-window><div id="chat-history">{"".join(out)}</div><input-container><rich-textarea>'
            '<div class="ql-editor" role="textbox" contenteditable="true" aria-label="Enter a prompt for Gemini">'
            '<p><br></p></div>'
            '</rich-textarea><bard-mode-switcher><button data-test-id="bard-mode-menu-button" aria-label="Open mode '
            f'picker"><div data-test-id="logo-pill-label-container"><span>{mode}</span></div>'
            f'{mat_icon("keyboard_arrow_down")}</button></bard-mode-switcher><speech-dictation-mic-button><button '
            f'aria-label="Microphone">{mat_icon("mic")}</button></speech-dictation-mic-button>{send}</input-container>'
            '<hallucination-disclaimer><p data-test-id="disclaimer">Gemini can make mistakes, so double-check it</p>'
            f'</hallucination-disclaimer></chat-window>{panel}')


def normal_signal(table: ProviderTable) -> str:
    return "turn action buttons on the new turn" if table.name == "chatgpt" else "feedback buttons on the new response"


def finished(table: ProviderTable, s: PageState) -> str:
    """The completion rule on a finished page, judged as the flow judges it right after the stop button went."""
    got = table.completion(s, Watch(initial_assistant=s.assistant_count - 1, saw_stop=True, elapsed_s=1.0,
                                    text_stable_s=0.0))
    return got.reason if got.done else ""


# --- the facts, one by one --------------------------------------------------------------------------------------------


async def test_gemini_2026_icons_signal_completion_and_the_answer_is_its_content(page: Page) -> None:
    table = gemini.TABLE
    await page.show(gemini_page([("Q1", "<p>First.</p>"), ("What is 6 times 7?", "<h2>Result</h2><p>It is 42.</p>")]),
                    table)
    s = await page.state()
    assert (s.assistant_count, s.user_count) == (2, 2)
    assert s.last_has_feedback and s.mic_found and s.send_found and not s.send_enabled  # aria-disabled
    assert not (s.stop or s.thinking or s.generating_text or s.unavailable)
    assert s.last_user == "What is 6 times 7?"  # no screen-reader prefix, no button text
    assert s.model == "Fast"
    assert finished(table, s) == "feedback buttons on the new response"
    got = await page.extract(own_only=True)
    assert (got.text, got.how, got.plain) == ("## Result\n\nIt is 42.", "content", False)


async def test_gemini_streaming_keeps_the_mic_but_shows_stop(page: Page) -> None:
    await page.show(gemini_page([("Q", "<p>Partial</p>")], last_finished=False, streaming=True), gemini.TABLE)
    s = await page.state()
    assert s.stop and s.mic_found and not s.last_has_feedback
    assert finished(gemini.TABLE, s) == ""


async def test_japanese_screen_reader_prefix_is_not_part_of_the_question(page: Page) -> None:
    await page.show(gemini_page([("日本の首都は？", "<p>東京です。</p>")], lang="ja"), gemini.TABLE)
    s = await page.state()
    assert s.last_user == "日本の首都は？"


async def test_chatgpt_2026_turn_actions_signal_completion_and_name_the_model(page: Page) -> None:
    table = chatgpt.TABLE
    await page.show(chatgpt_page([("Q1", "<p>One.</p>"), ("Q2", "<p>Two is 2.</p>")]), table)
    s = await page.state()
    assert s.last_has_feedback and not s.send_found and s.input_empty and s.model == "gpt-5-2"
    assert finished(table, s) == "turn action buttons on the new turn"
    assert (await page.extract()).text == "Two is 2."


async def test_a_failing_converter_gives_the_answers_plain_text_and_says_why(page: Page) -> None:
    """The markdown converter threw: the answer's own text stands in, marked plain, with the converter's error (and
    the next read, with the converter working again, is markdown with no error left over)."""
    await page.show(chatgpt_page([("Q1", "<p>One is <strong>1</strong>.</p>")]), chatgpt.TABLE)
    await page.eval("(() => { window.__aibSaved = window.__aibMarkdown; "
                    "window.__aibMarkdown = () => { throw new Error('converter broke'); }; })()")
    got = await page.extract()
    assert got.text == "One is 1." and got.plain and got.error is not None and "converter broke" in got.error
    await page.eval("(() => { window.__aibMarkdown = window.__aibSaved; })()")
    again = await page.extract()
    assert again.text == "One is **1**." and again.error is None and not again.plain


async def test_chatgpt_render_lag_never_returns_the_disclaimer(page: Page) -> None:
    """The stop button went and the turn actions show, but the answer's text has not rendered yet: the own
    anchors find nothing, and the wide ones find only chrome — never 'ChatGPT can make mistakes'."""
    await page.show(chatgpt_page([("Q1", "<p>One.</p>"), ("Q2", "<p>Two.</p>")], empty_last=True), chatgpt.TABLE)
    s = await page.state()
    assert s.last_len == 0 and s.last_has_feedback
    own = await page.extract(own_only=True)
    assert own.text == ""
    wide = await page.extract()
    assert "mistakes" not in wide.text and "Cookie" not in wide.text and "One." not in wide.text
    assert wide.text == "" and wide.how in ("none", "chrome")


async def test_a_deleted_conversation_toast_is_recognised(page: Page) -> None:
    body = chatgpt_page([]) + ('<div data-testid="toast-root" role="status"><div>Unable to load conversation '
                               '6712-ab</div></div>')
    await page.show(body, chatgpt.TABLE)
    s = await page.state()
    assert s.unavailable and s.user_count == 0
    # The same words in an answer are the answer's.
    await page.show(chatgpt_page([("Why?", "<p>It said Unable to load conversation.</p>")]), chatgpt.TABLE)
    assert not (await page.state()).unavailable


async def test_a_deep_research_report_is_the_answer_with_its_sources_as_links(page: Page) -> None:
    report = ('<h1>Report</h1><p>Deep research is new<source-footnote><sup class="superscript" data-turn-source-'
              'index="2">2</sup></source-footnote>.</p><table><thead><tr><th>A</th><th>B</th></tr></thead><tbody><tr>'
              '<td>1</td><td>2</td></tr></tbody></table><sources-carousel-inline><div>One</div></sources-carousel-'
              'inline><pre><code>print(1)</code></pre>')
    await page.show(gemini_page([("Research it", "<p>Here is your report.</p>")], report=report), gemini.TABLE)
    got = await page.extract(own_only=True)
    assert got.how == "report"
    assert got.text.startswith("# Report\n\nDeep research is new [2](https://example.org/two).")
    assert "| A | B |" in got.text and "print(1)" in got.text and "One" not in got.text.split("```")[0][-20:]


# --- labels in message content never steer an ask (issue 23) ---------------------------------------------------------

ALL_LABELS = sorted({label for t in TABLES.values() for key in ("stop", "skipThinking", "thinking", "thinkingDone",
                                                               "generating", "rateLimit", "siteError", "retry",
                                                               "login", "unavailable")
                     for label in t.labels[key] if label})
FORMS = ("h2", "li", "td", "p", "sentence")


def as_html(label: str, form: str) -> str:
    text = html.escape(label)
    match form:
        case "h2":
            return f"<h2>{text}</h2>"
        case "li":
            return f"<ul><li>{text}</li><li>other</li></ul>"
        case "td":
            return f"<table><thead><tr><th>Label</th></tr></thead><tbody><tr><td>{text}</td></tr></tbody></table>"
        case "p":
            return f"<p>{text}</p>"
    return f"<p>The page said “{text}” and then went on.</p>"


labelled = st.lists(st.tuples(st.sampled_from(ALL_LABELS), st.sampled_from(FORMS)), min_size=1, max_size=6)


async def test_labels_inside_questions_and_answers_never_stop_completion(page: Page) -> None:
    """Every label of both tables (both languages) as headings, list items, table cells and sentences, in the last
    answer, an earlier answer and the user's questions: completion still fires by the normal signal."""
    failures: list[str] = []

    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(site=st.sampled_from(sorted(TABLES)), last=labelled, earlier=labelled, question=labelled)
    def one(site: str, last: list[tuple[str, str]], earlier: list[tuple[str, str]],
            question: list[tuple[str, str]]) -> None:
        table = TABLES[site]
        turns = [(" ".join(lbl for lbl, _ in question), "".join(as_html(lbl, f) for lbl, f in earlier)),
                 ("Tell me: " + " / ".join(lbl for lbl, _ in question), "".join(as_html(lbl, f) for lbl, f in last))]
        body = chatgpt_page(turns) if site == "chatgpt" else gemini_page(turns)

        async def look() -> tuple[PageState, Extracted]:
            await page.show(body, table)
            return await page.state(), await page.extract(own_only=True)

        s, got = trio.from_thread.run(look)
        flags = {k: getattr(s, k) for k in ("stop", "thinking", "skip_thinking", "generating_text", "unavailable")
                 if getattr(s, k)}
        reason = finished(table, s)
        if flags or reason != normal_signal(table) or got.how != "content" or s.notice is not None:
            failures.append(f"{site}: flags {flags}, reason {reason!r}, extracted by {got.how}, notice {s.notice}, "
                            f"labels {last + earlier + question}")
        assert not failures, failures[-1]

    await trio.to_thread.run_sync(one)


async def test_the_seeds_feedback_anchor_reads_the_box_around_the_thumb_only_where_it_holds_text(page: Page) -> None:
    """Seed 4.4's P1 on the spec's page (img alt icons; the text in the thumb's box, no content class): it reads
    the box. On the 2026 page the box is the action bar (buttons only) and the content anchor reads the answer."""
    spec = ('<div id="chat-history"><user-query><p>Q?</p></user-query><model-response><div class="response-container">'
            '<p>The answer is 42.</p><div class="response-footer"><button><img alt="thumb_up"></button>'
            '<button><img alt="thumb_down"></button></div></div></model-response></div>'
            '<div role="textbox" contenteditable="true"></div>')
    await page.show(spec, gemini.TABLE)
    got = await page.extract(own_only=True)
    assert (got.text, got.how) == ("The answer is 42.", "feedback")
    await page.show(gemini_page([("Q?", "<p>The answer is 42.</p>")]), gemini.TABLE)
    got = await page.extract(own_only=True)
    assert (got.text, got.how) == ("The answer is 42.", "content")


# --- typing ----------------------------------------------------------------------------------------------------------

COMPOSER = "#prompt-textarea"


async def test_the_fill_types_a_line_into_an_empty_composer_without_clearing_it_first(page: Page) -> None:
    """An editor's one empty paragraph is nothing to clear: no delete changes its DOM before a one-line question
    goes in (every change to a composer makes the page lay out again, which on a long conversation costs
    milliseconds). Empty lines and a draft are cleared, and so is the box a question with line breaks goes into."""
    await page.show(chatgpt_page([("Q1", "<p>One.</p>")]), chatgpt.TABLE)
    # The commands the watcher gives the page (its world's document only).
    await page.eval("(() => { const run = document.execCommand.bind(document); window.__commands = [];"
                    " document.execCommand = (name, ...rest) => { window.__commands.push(name);"
                    " return run(name, ...rest); }; return true; })()")
    question, lines = "What is 6 times 7?", "Review this:\n\nprint(6 * 7)"
    for before, text, commands in (("<p><br></p>", question, ["insertText"]),
                                   ("<p><br></p><p><br></p>", question, ["delete", "insertText"]),
                                   ("<p>an old draft</p>", question, ["delete", "insertText"]),
                                   ("<p><br></p>", lines, ["delete", "insertText"])):
        await page.eval(f"document.querySelector('{COMPOSER}').innerHTML = {json.dumps(before)}; "
                        "window.__commands = []")
        got = await page.eval(f"window.__aibWatcher.fill({json.dumps(text)})")
        assert await page.eval("window.__commands") == commands, before
        # The text the flow checks against the question (whitespace-free), read in the same call.
        assert "".join(got.split()) == "".join(text.split())
        shown = await page.eval(f"document.querySelector('{COMPOSER}').innerText")
        assert shown.rstrip("\n").split("\n")[0] == text.split("\n")[0], shown  # no empty line first, no draft
