"""`ai-bridge doctor --page FILE.html`: the probe and the answer extraction on a saved page, offline.

The pages here are small ones written for these tests, each reproducing what the 2026 captures of the real sites
show (NOTES.md, "The real pages as captured in 2026"): ChatGPT's idle page without a send button, its turn actions
with another extension's button among them, the model slug and the disclaimer under the composer; Gemini's
Material font icons, the aria-disabled send button, the light-DOM response with its read-aloud button and lottie
avatar, the mode picker; a Gemini Deep Research report in its own panel with numbered sources. The file checks
need no browser; the rest load the page into a real headless Chromium exactly as the command does.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from actors.protocol.common import ProviderName
from actors.protocol.provider import ProbeReport, ProbeStatus
from actors.provider.sites import chatgpt, gemini
from supervisor.app import saved_page
from supervisor.app.saved_page import PageFileError, PageResult, probe_pages, read_saved_page

from .cdp_pipe import CHROMIUM
from .conftest import missing_tool

ROOT = Path(__file__).resolve().parent.parent


def in_browser(test: Callable[..., object]) -> Callable[..., object]:
    """A test that loads pages into a real headless Chromium."""
    skip = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                              reason=missing_tool(f"Chromium not found at {CHROMIUM}"))
    marked: Callable[..., object] = pytest.mark.chromium(skip(test))
    return marked


# --- the pages ------------------------------------------------------------------------------------------------------

CHATGPT_TURN_ACTIONS = """
  <div class="flex">
    <button aria-label="Copy" data-testid="copy-turn-action-button"><svg><path d="M0 0"/></svg></button>
    <button aria-label="Humanize with QuillBot" data-testid="quillbot-humanize-button" type="button">Q</button>
    <button aria-label="Good response" data-testid="good-response-turn-action-button"><svg></svg></button>
    <button aria-label="Bad response" data-testid="bad-response-turn-action-button"><svg></svg></button>
  </div>"""

# ChatGPT, signed in, a finished conversation, the composer empty: no send button — Start Voice and Dictate stand
# there. The page's own script would empty the thread if it ran; its image, stylesheet and iframe point at the real
# site (and the test's server, see below).
CHATGPT_IDLE = f"""<!DOCTYPE html>
<html lang="en-US"><head><meta charset="utf-8"><title>ChatGPT</title>
<link rel="canonical" href="https://chatgpt.com/">
<link rel="stylesheet" href="https://cdn.oaistatic.com/assets/root.css">
<script>document.documentElement.innerHTML = '<body>the page script ran</body>';</script>
</head><body>
<header id="page-header">
  <button aria-label="Model selector, current model is 5.2" data-testid="model-switcher-dropdown-button">ChatGPT
  </button>
</header>
<main><div class="flex flex-col text-sm">
  <article data-turn-id="t1" data-testid="conversation-turn-1" data-turn="user">
    <h5 class="sr-only">You said:</h5>
    <div data-message-author-role="user" data-message-id="u1"><div class="whitespace-pre-wrap">What is 2 + 2?</div>
    </div>
  </article>
  <article data-turn-id="t2" data-testid="conversation-turn-2" data-turn="assistant">
    <h6 class="sr-only">ChatGPT said:</h6>
    <div data-message-author-role="assistant" data-message-id="a1" data-message-model-slug="gpt-5-2">
      <div class="markdown prose dark:prose-invert w-full break-words light markdown-new-styling">
        <p>It is <strong>4</strong>.</p>
        <ul><li>two plus two</li><li>equals four</li></ul>
      </div>
    </div>
    {CHATGPT_TURN_ACTIONS}
  </article>
</div></main>
<form class="w-full" data-type="unified-composer">
  <div id="prompt-textarea" contenteditable="true" class="ProseMirror" translate="no"><p><br></p></div>
  <button aria-label="Humanize with QuillBot" type="button">QuillBot</button>
  <button aria-label="Dictate button" type="button"><svg></svg>dictate</button>
  <button aria-label="Start Voice" class="composer-submit-button-color" type="button"><svg></svg>voice</button>
</form>
<img src="https://chatgpt.com/backend-api/avatar.png" alt="">
<div class="-mt-4 text-token-text-secondary relative w-full"><div>ChatGPT can make mistakes. Check important info.
See Cookie Preferences.</div></div>
</body></html>
"""

GEMINI_ICON_BUTTON = '<button aria-label="{label}"><mat-icon role="img" fonticon="{icon}" ' \
    'data-mat-icon-name="{icon}" class="mat-icon"></mat-icon>{icon}</button>'


def icon_button(label: str, icon: str, extra: str = "") -> str:
    return GEMINI_ICON_BUTTON.format(label=label, icon=icon).replace("<button ", f"<button {extra} ", 1)


# Gemini, signed in, Japanese UI: Material font icons (thumb_up, mic, send), the send button aria-disabled on an
# empty input, the response in the light DOM under a header with a read-aloud button and a lottie avatar, the mode
# picker, the disclaimer.
GEMINI_CHAT = f"""<!DOCTYPE html>
<html lang="ja"><head><meta charset="utf-8"><title>Gemini</title></head><body>
<bard-sidenav><nav><a href="/app">チャットを新規作成</a></nav></bard-sidenav>
<chat-window><div class="conversation-container">
  <user-query><span class="user-query-bubble-with-background"><div role="heading" class="query-text">
    <span class="cdk-visually-hidden">あなたのプロンプト</span><p class="query-text-line">円周率を教えて</p></div>
  </span></user-query>
  <model-response><div><response-container><div class="response-container">
    <div class="response-container-header"><tts-control><div class="response-tts-container">
      {icon_button("読み上げる", "volume_up")}</div></tts-control></div>
    <div class="presented-response-container">
      <div class="avatar-gutter"><bard-avatar><div class="bard-avatar"><svg width="24" height="24">
        <defs><lineargradient id="__lottie_element_297"><stop offset="0"></stop></lineargradient></defs>
        <g><path d="M0 0h24v24H0z"></path></g></svg></div></bard-avatar></div>
      <div class="response-content"><message-content class="model-response-text">
        <div class="markdown markdown-main-panel" id="model-response-message-content">
          <p>円周率は <b>3.14159</b> です。</p><h2>覚え方</h2><ol><li>産医師異国に向こう</li></ol>
        </div></message-content></div>
    </div>
    <div class="response-footer"><message-actions><div class="actions-container-v2"><div class="buttons">
      {icon_button("良い回答", "thumb_up")}{icon_button("悪い回答", "thumb_down")}
      {icon_button("やり直す", "refresh")}{icon_button("コピー", "content_copy")}
      {icon_button("その他", "more_vert")}</div></div></message-actions></div>
  </div></response-container></div></model-response>
</div>
<input-container><input-area-v2><div class="text-input-field">
  <rich-textarea><div class="ql-editor ql-blank textarea" role="textbox" contenteditable="true"
    aria-label="ここにプロンプトを入力してください"><p><br></p></div></rich-textarea>
  <div class="trailing-actions-wrapper"><div class="model-picker-container"><bard-mode-switcher>
    <button aria-label="モード選択ツールを開く" data-test-id="bard-mode-menu-button" aria-haspopup="menu">
      <div data-test-id="logo-pill-label-container" class="logo-pill-label-container"><span>高速モード</span></div>
      <mat-icon fonticon="keyboard_arrow_down" data-mat-icon-name="keyboard_arrow_down"></mat-icon>
    </button></bard-mode-switcher></div>
  {icon_button("マイク", "mic")}
  {icon_button("プロンプトを送信", "send", 'aria-disabled="true" class="send-button"')}
  </div></div></input-area-v2></input-container>
<hallucination-disclaimer><div>Gemini は AI であり、間違えることがあります。</div></hallucination-disclaimer>
</chat-window></body></html>
"""

SOURCES = ("https://example.org/first", "https://example.net/second", "https://example.com/third")

# Gemini Deep Research: the last response holds the chip that opened the report; the report itself is in its own
# panel beside the chat, with numbered footnotes and the list of sources they number.
GEMINI_DEEP_RESEARCH = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Gemini</title></head><body>
<chat-window><div class="conversation-container">
  <user-query><div class="query-text"><p class="query-text-line">Research tide energy</p></div></user-query>
  <model-response><response-container><div class="presented-response-container"><message-content>
    <div class="markdown markdown-main-panel"><p>I've completed your research. Feel free to ask me follow-up
    questions.</p></div></message-content>
    <immersive-entry-chip><div data-test-id="container"><span>Tide energy: a survey</span></div>
    </immersive-entry-chip>
  </div></response-container>
  <message-actions>{icon_button("Good response", "thumb_up")}{icon_button("Bad response", "thumb_down")}
  </message-actions></model-response>
</div>
<input-container><input-area-v2><div role="textbox" contenteditable="true"><p><br></p></div>
  {icon_button("Microphone", "mic")}{icon_button("Send message", "send", 'aria-disabled="true"')}
</input-area-v2></input-container>
</chat-window>
<immersive-panel><deep-research-immersive-panel>
  <toolbar><h2 class="title-text">Tide energy: a survey</h2></toolbar>
  <div class="container"><message-content id="extended-response-markdown-content">
    <div class="markdown markdown-main-panel">
      <h1>Tide energy</h1>
      <p>Tides move water twice a day<source-footnote><sup class="superscript" data-turn-source-index="1">
      </sup></source-footnote>, and barrages catch it<source-footnote><sup class="superscript"
      data-turn-source-index="2"></sup></source-footnote>.</p>
      <p>Stream turbines need no dam<source-footnote><sup class="superscript" data-turn-source-index="3"></sup>
      </source-footnote>.</p>
    </div></message-content></div>
  <deep-research-source-lists><div class="source-list used-sources">
    {"".join(f'<a data-test-id="browse-web-item-link" href="{u}"><span>source {i}</span></a>'
             for i, u in enumerate(SOURCES, 1))}
  </div></deep-research-source-lists>
</deep-research-immersive-panel></immersive-panel>
</body></html>
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def item(report: ProbeReport, entry: str) -> tuple[ProbeStatus, str | None]:
    found = [i for i in report.items if i.entry == entry]
    assert found, f"no item {entry}"
    return found[0].status, found[0].matched


# --- the file (no browser) ------------------------------------------------------------------------------------------


def test_a_whole_document_is_kept_and_its_address_read(tmp_path: Path) -> None:
    page = read_saved_page(write(tmp_path, "c.html", CHATGPT_IDLE))
    assert not page.fragment
    assert page.url == "https://chatgpt.com/"
    assert saved_page.detect_provider(page) is ProviderName.CHATGPT
    saved = '<!DOCTYPE html>\n<!-- saved from url=(0045)https://gemini.google.com/app/0123456789abcdef -->\n' \
        '<html><body><p>nothing of either site</p></body></html>'
    page = read_saved_page(write(tmp_path, "g.html", saved))
    assert page.url == "https://gemini.google.com/app/0123456789abcdef"
    assert saved_page.detect_provider(page) is ProviderName.GEMINI  # the address decides when the markup cannot


def test_an_outer_html_fragment_is_put_in_a_page(tmp_path: Path) -> None:
    fragment = '<!-- a comment -->\n<!---->\n<model-response><div class="markdown markdown-main-panel"><p>x</p></div>' \
        "</model-response>"
    page = read_saved_page(write(tmp_path, "f.html", "\ufeff" + fragment))
    assert page.fragment and page.url is None
    assert page.html.startswith("<!DOCTYPE html>") and fragment in page.html
    assert saved_page.detect_provider(page) is ProviderName.GEMINI


def test_many_comments_before_a_fragment_are_read_at_once(tmp_path: Path) -> None:
    # Angular pages carry thousands of empty comments: telling a fragment from a document must stay linear.
    text = "<!-- header -->\n<div>" + "<!---->x" * 200_000 + "<user-query></user-query></div>"
    page = read_saved_page(write(tmp_path, "big.html", text))
    assert page.fragment


@pytest.mark.parametrize(("html", "provider"), [
    ('<div data-message-author-role="assistant"></div>', ProviderName.CHATGPT),
    ('<div id="prompt-textarea" contenteditable="true"></div>', ProviderName.CHATGPT),
    ("<user-query></user-query>", ProviderName.GEMINI),
    ('<bard-mode-switcher><button></button></bard-mode-switcher>', ProviderName.GEMINI),
    # Text that quotes the other site's markup is escaped in a saved page: it never counts.
    ('<model-response><pre><code>&lt;div data-message-author-role="user"&gt;</code></pre></model-response>',
     ProviderName.GEMINI),
])
def test_the_provider_is_told_by_its_markup(tmp_path: Path, html: str, provider: ProviderName) -> None:
    assert saved_page.detect_provider(read_saved_page(write(tmp_path, "p.html", html))) is provider


def test_a_page_of_neither_site_asks_for_provider(tmp_path: Path) -> None:
    with pytest.raises(PageFileError, match="--provider"):
        saved_page.detect_provider(read_saved_page(write(tmp_path, "x.html", "<html><body>hi</body></html>")))
    both = '<user-query></user-query><div data-message-author-role="user"></div>'
    with pytest.raises(PageFileError, match="markup of ChatGPT and Gemini"):
        saved_page.detect_provider(read_saved_page(write(tmp_path, "y.html", both)))


def test_a_meta_refresh_is_disarmed(tmp_path: Path) -> None:
    html = '<html><head><noscript><meta http-equiv="refresh" content="0; url=/nojs"></noscript></head></html>'
    page = read_saved_page(write(tmp_path, "r.html", html))
    assert 'http-equiv="refresh"' not in page.html and 'content="0; url=/nojs"' in page.html


def test_files_that_cannot_be_a_page_are_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PageFileError, match="cannot open it"):
        read_saved_page(tmp_path / "missing.html")
    with pytest.raises(PageFileError, match="not a regular file"):
        read_saved_page(tmp_path)
    fifo = tmp_path / "fifo.html"
    os.mkfifo(fifo)
    with pytest.raises(PageFileError, match="not a regular file"):
        read_saved_page(fifo)  # refused without blocking on the FIFO
    (tmp_path / "bin.html").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe\xfd")
    with pytest.raises(PageFileError, match="not UTF-8"):
        read_saved_page(tmp_path / "bin.html")
    with pytest.raises(PageFileError, match="no HTML"):
        read_saved_page(write(tmp_path, "t.html", "just words"))
    mhtml = "From: <Saved by Blink>\nMIME-Version: 1.0\nContent-Type: multipart/related;\n\ttype=\"text/html\"\n"
    with pytest.raises(PageFileError, match="MHTML"):
        read_saved_page(write(tmp_path, "m.mhtml", mhtml))
    monkeypatch.setattr(saved_page, "MAX_BYTES", 100)
    with pytest.raises(PageFileError, match="larger than"):
        read_saved_page(write(tmp_path, "big.html", "<p>" + "x" * 200 + "</p>"))


def test_a_page_in_a_declared_charset_is_read(tmp_path: Path) -> None:
    html = '<html><head><meta charset="shift_jis"></head><body><user-query>円周率</user-query></body></html>'
    (tmp_path / "sj.html").write_bytes(html.encode("shift_jis"))
    assert "円周率" in read_saved_page(tmp_path / "sj.html").html


def run_cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "AI_BRIDGE_BROWSER_PATH": CHROMIUM}
    return subprocess.run([sys.executable, "-m", "supervisor.app", "doctor", "--state-dir", str(tmp_path / "state"),
                           *args], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env, check=False)


def test_cli_usage_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    got = run_cli("--page", str(tmp_path), tmp_path=tmp_path)
    assert got.returncode == 2 and got.stdout == ""
    assert got.stderr.strip().splitlines() == [f"ai-bridge doctor: {tmp_path}: not a regular file"]
    neither = write(tmp_path, "x.html", "<html><body>hi</body></html>")
    got = run_cli("--page", str(neither), tmp_path=tmp_path)
    assert got.returncode == 2 and "--provider gemini, --provider claude" in got.stderr
    got = run_cli("--page", str(neither), "--live", tmp_path=tmp_path)
    assert got.returncode == 2 and "--page goes without --live" in got.stderr


# --- in the browser -------------------------------------------------------------------------------------------------


async def probe_one(path: Path, provider: str | None = None) -> PageResult:
    tables = (chatgpt.TABLE, gemini.TABLE)
    jobs = saved_page.plan([path], provider, tables)
    [outcome] = await probe_pages(CHROMIUM, jobs, timeout_s=60)
    assert isinstance(outcome, PageResult), outcome
    return outcome


@in_browser
async def test_chatgpt_idle_page(tmp_path: Path) -> None:
    result = await probe_one(write(tmp_path, "chatgpt.html", CHATGPT_IDLE))
    report = result.probe
    assert result.provider is ProviderName.CHATGPT
    assert report.url == "https://chatgpt.com/" and report.signed_in is True and report.language == "en"
    # No send button on an empty 2026 composer: Start Voice stands there; send is not applicable, not missing.
    assert item(report, "chatgpt.selectors.send")[0] is ProbeStatus.NOT_APPLICABLE
    assert item(report, "chatgpt.selectors.voice") == (ProbeStatus.OK,
                                                       "button.composer-submit-button-color:not([data-testid])")
    assert item(report, "chatgpt.selectors.input")[0] is ProbeStatus.OK
    assert item(report, "chatgpt.selectors.feedback") == (ProbeStatus.OK, '[data-testid="copy-turn-action-button"]')
    assert item(report, "chatgpt.selectors.model") == (ProbeStatus.OK, "[data-message-model-slug]")
    assert item(report, "chatgpt.selectors.content") == (ProbeStatus.OK, ".markdown.prose")
    assert item(report, "chatgpt.labels.chrome")[0] is ProbeStatus.OK
    assert report.ok and result.ok, report.broken
    answer = result.answer
    s = answer.state
    assert (s.assistant_count, s.user_count, s.answered, s.last_has_feedback) == (1, 1, True, True)
    assert s.model == "gpt-5-2" and not s.send_found and s.input_empty and not s.unavailable and not s.thinking
    # The page's own script did not run (it would have replaced the whole page).
    assert answer.own.how == "content" and answer.own.text == "It is **4**.\n\n- two plus two\n- equals four"
    assert answer.wide == answer.own
    assert "mistakes" not in answer.own.text and "QuillBot" not in answer.own.text
    assert answer.problems == ()


@in_browser
async def test_the_language_is_the_sites_own_never_a_file_name(tmp_path: Path) -> None:
    """Issue 35: a chip showing a Japanese file name made an English page read as Japanese. Without <html lang>, the
    language comes from the site's own controls only."""
    name = "議事録 メモ.txt"
    tile = (f'<div role="group" aria-label="{name}" class="group/file-tile"><button aria-label="{name}">'
            f'<span>{name}</span></button></div>')
    english = CHATGPT_IDLE.replace('<html lang="en-US">', "<html>").replace(
        '<div id="prompt-textarea"', tile + '<div id="prompt-textarea"')
    assert "議事録" in english and "<html>" in english
    report = (await probe_one(write(tmp_path, "en.html", english))).probe
    assert report.language == "", report.language  # unknown, never "ja"
    japanese = english.replace('aria-label="Dictate button"', 'aria-label="ディクテーションボタン"')
    assert (await probe_one(write(tmp_path, "ja.html", japanese))).probe.language == "ja"


@in_browser
async def test_gemini_chat_page(tmp_path: Path) -> None:
    result = await probe_one(write(tmp_path, "gemini.html", GEMINI_CHAT))
    report = result.probe
    assert result.provider is ProviderName.GEMINI and report.signed_in is True and report.language == "ja"
    assert item(report, "gemini.selectors.feedback") == (ProbeStatus.OK, 'mat-icon[data-mat-icon-name="thumb_up"]')
    assert item(report, "gemini.selectors.mic") == (ProbeStatus.OK, 'mat-icon[data-mat-icon-name="mic"]')
    assert item(report, "gemini.selectors.send") == (ProbeStatus.OK,
                                                     'button:has(mat-icon[data-mat-icon-name="send"])')
    assert item(report, "gemini.selectors.content") == (ProbeStatus.OK, ".markdown.markdown-main-panel")
    assert item(report, "gemini.selectors.assistant") == (ProbeStatus.OK, "model-response")
    assert item(report, "gemini.selectors.model")[0] is ProbeStatus.OK
    assert item(report, "gemini.shadow_dom")[0] is ProbeStatus.NOT_APPLICABLE  # all in the light DOM
    assert result.ok, report.broken
    s = result.answer.state
    assert s.send_found and not s.send_enabled  # aria-disabled while the input is empty
    assert s.mic_found and s.last_has_feedback and s.model == "高速モード"
    own = result.answer.own
    assert own.how == "content"
    assert own.text == "円周率は **3.14159** です。\n\n## 覚え方\n\n1. 産医師異国に向こう"
    for chrome in ("読み上げる", "volume_up", "lottie", "間違える", "高速モード"):
        assert chrome not in own.text


@in_browser
async def test_gemini_deep_research_report(tmp_path: Path) -> None:
    result = await probe_one(write(tmp_path, "report.html", GEMINI_DEEP_RESEARCH))
    report = result.probe
    assert item(report, "gemini.selectors.report")[0] is ProbeStatus.OK
    assert item(report, "gemini.selectors.reportEntry") == (ProbeStatus.OK, "immersive-entry-chip")
    assert item(report, "gemini.selectors.reportSources")[0] is ProbeStatus.OK
    own = result.answer.own
    assert own.how == "report", own
    assert own.text.startswith("# Tide energy\n\nTides move water twice a day")
    for n, url in enumerate(SOURCES, 1):
        assert f"[{n}]({url})" in own.text
    assert "follow-up" not in own.text  # the chat's short note is not the report
    assert result.ok


@in_browser
async def test_a_fragment_without_the_answer_content_is_a_problem(tmp_path: Path) -> None:
    # A site change that renamed the answer's container: the turn is there, its own content is not found.
    fragment = ('<div><article data-turn="assistant"><div data-message-author-role="assistant">'
                '<div class="answer-body-2027"><p>Forty-two.</p></div></div>' + CHATGPT_TURN_ACTIONS
                + "</article></div>")
    result = await probe_one(write(tmp_path, "frag.html", fragment))
    assert result.page.fragment
    assert item(result.probe, "chatgpt.selectors.content")[0] is ProbeStatus.MISSING
    assert not result.ok
    assert result.answer.own.text == "" and result.answer.wide.text
    assert result.answer.problems and "own content is not found" in result.answer.problems[0]


class _Hits(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []
    handler = type("Handler", (_Hits,), {"hits": hits})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", hits
    finally:
        srv.shutdown()
        srv.server_close()


@in_browser
async def test_the_saved_page_fetches_nothing_and_runs_nothing(tmp_path: Path, server: tuple[str, list[str]]) -> None:
    base, hits = server
    loads = (f'<link rel="stylesheet" href="{base}/style.css"><script src="{base}/app.js"></script>'
             f'<noscript><meta http-equiv="refresh" content="0; url={base}/nojs"></noscript>'
             f'<meta http-equiv="refresh" content="0; url={base}/refresh">')
    html = CHATGPT_IDLE.replace("</head>", loads + "</head>").replace(
        "</body>", f'<img src="{base}/pixel.png"><iframe src="{base}/frame"></iframe>'
        f'<video src="{base}/v.mp4" autoplay></video><div onmouseover="x()" id="cell"></div></body>')
    result = await probe_one(write(tmp_path, "loads.html", html))
    assert result.answer.own.text.startswith("It is **4**")  # still the saved page: no refresh, no script
    assert result.probe.url == "https://chatgpt.com/"
    assert hits == []


@in_browser
def test_cli_prints_the_table_and_the_answer(tmp_path: Path) -> None:
    c = write(tmp_path, "c.html", CHATGPT_IDLE)
    g = write(tmp_path, "g.html", GEMINI_CHAT)
    got = run_cli("--page", str(c), "--page", str(g), tmp_path=tmp_path)
    assert got.returncode == 0, got.stderr
    out = got.stdout
    assert f"page {c}  (chatgpt, from its markup)" in out
    assert "chatgpt.selectors.send             n/a" in out
    assert "  gemini.selectors.feedback" in out and "anchor 'content'" in out
    assert "      | It is **4**." in out and "      | 円周率は **3.14159** です。" in out
    assert out.rstrip().endswith("the saved pages read as an ask needs them")
    got = run_cli("--page", str(c), "--json", tmp_path=tmp_path)
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["ok"] is True
    [page] = data["pages"]
    assert page["provider"] == "chatgpt" and page["detected"] is True and page["fragment"] is False
    assert page["probe"]["ok"] is True and page["probe"]["url"] == "https://chatgpt.com/"
    assert page["answer"]["own"]["how"] == "content" and page["answer"]["state"]["model"] == "gpt-5-2"
    broken = write(tmp_path, "b.html", CHATGPT_IDLE.replace(
        'class="markdown prose dark:prose-invert w-full break-words light markdown-new-styling"', 'class="a-2027"'))
    got = run_cli("--page", str(broken), tmp_path=tmp_path)
    assert got.returncode == 1
    assert "update: chatgpt.selectors.content" in got.stdout and "PROBLEM" in got.stdout
