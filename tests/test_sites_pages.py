"""`ai-bridge doctor --page` on Claude's, Grok's and Perplexity's pages (issue 40): which site a saved page is, the
probe of its table, and the answer an ask would read, offline in one headless Chromium.

The pages are small ones written here with the facts the captures show (../shared/real-dom/README.md), never copies:
claude-chat-simple.html (a finished answer beside its action bar, the thinking kept above the answer in its own
.standard-markdown, the inert server-rendered editor under the live one, QuillBot's highlighter),
grok-2607-*.html and tokenless's Grok page (the messages, the disabled submit button, the model trigger), and
perplexity-chat-simple.html (a turn's tab panel, the Lexical composer, the answer's action bar) with pplxport's
citation markup."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.protocol.common import ProviderName
from actors.protocol.provider import ProbeStatus
from actors.provider.sites import TABLES
from supervisor.app import saved_page
from supervisor.app.saved_page import PageFileError, PageResult, probe_pages, read_saved_page

from .cdp_pipe import CHROMIUM
from .test_doctor_page import in_browser, item, write

QUILLBOT = ('<template shadowrootmode="closed"><qb-highlighter contenteditable="false"><qb-div></qb-div>'
            "</qb-highlighter><slot></slot></template>")

CLAUDE = f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Claude</title>
<link rel="canonical" href="https://claude.ai/chat/3b1f0c2e-9a55-4c1e-8f21-0d6c2b7e4a10"></head><body>
<header data-testid="page-header"><button data-testid="chat-title-button">Build plan</button></header>
<div class="overflow-y-scroll"><div class="flex-1 flex flex-col px-4">
 <div data-test-render-count="2"><div class="mb-1 mt-6 group"><div class="flex flex-col items-end gap-1">
  <div class="bg-bg-300 rounded-xl"><div data-testid="user-message" class="font-large">
   <p class="whitespace-pre-wrap break-words">How many steps does the build have?</p></div></div>
  <div role="group" aria-label="Message actions"><span class="text-text-500 text-xs">Jan 29</span>
   <button aria-label="Retry"><svg></svg></button><button aria-label="Edit"><svg></svg></button>
   <button data-testid="action-bar-copy" aria-label="Copy"><svg></svg></button></div></div></div></div>
 <div data-test-render-count="2"><div class="group" style="height: auto"><div class="contents">
  <div data-is-streaming="false" class="group relative pb-3"><div class="font-claude-response relative">
   <div class="grid grid-rows-[auto_auto] min-w-0">
    <div class="row-start-1 col-start-1"><button aria-expanded="false"><span>Thought process</span></button>
     <div style="display: grid; grid-template-rows: 0fr; overflow: hidden"><div style="min-height: 0">
      <div class="standard-markdown grid-cols-1 grid gap-3"><p class="font-claude-response-body">Count them first.</p>
     </div></div></div></div>
    <div class="row-start-2 col-start-1"><div><div class="standard-markdown grid-cols-1 grid gap-3 standard-markdown">
     <p class="font-claude-response-body">It has <strong>2</strong> steps:</p>
     <ol class="list-decimal"><li class="whitespace-normal break-words pl-2">parse</li>
      <li class="whitespace-normal break-words pl-2">build</li></ol>
     <div class="relative group/copy"><div class="text-text-500 font-small p-3.5 pb-0">python</div>
      <div class="sticky"><button aria-label="Copy"><svg></svg></button></div>
      <div class="overflow-x-auto"><pre class="code-block__code"><code class="language-python">steps = 2</code></pre>
      </div>
     </div></div></div></div></div></div></div></div>
  <div role="group" aria-label="Message actions"><button data-testid="action-bar-copy" aria-label="Copy"><svg></svg>
   </button><button aria-label="Give positive feedback"><svg></svg></button>
   <button aria-label="Give negative feedback"><svg></svg></button><button aria-label="Retry"><svg></svg></button>
  </div></div></div>
</div></div>
<div data-chat-input-container="true"><div class="grid" data-testid="chat-input-grid-container">
 <div data-testid="chat-input-grid-area"><fieldset data-testid="prompt-input-ssr-interactive" inert=""
   style="opacity: 0; position: absolute"><textarea data-testid="chat-input-ssr"
   aria-label="Write your prompt to Claude"></textarea></fieldset></div>
 <div data-testid="chat-input-grid-area"><fieldset>
  <input id="chat-input-file-upload-bottom" data-testid="file-upload" type="file" multiple="" aria-label="Upload files">
  <div data-alert-band-wrapper="true"></div>
  <div>{QUILLBOT}<div contenteditable="true" role="textbox" data-testid="chat-input"
   aria-label="Write your prompt to Claude" class="tiptap ProseMirror"><p data-placeholder="Reply..."><br></p></div>
  </div>
  <button aria-label="Add files, connectors, and more" aria-haspopup="menu"><svg></svg></button>
  <button data-testid="model-selector-dropdown" aria-haspopup="menu" aria-label="Model: Sonnet 5 Medium">
   <div>Sonnet 5</div></button><button data-state="closed"><svg></svg></button>
 </fieldset></div></div></div>
<div role="note" data-disclaimer="true"><a href="#">Claude is AI and can make mistakes. Please double-check
 responses.</a></div></body></html>"""

GROK = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Grok</title>
<link rel="canonical" href="https://grok.com/c/4c0d7e1a-2b3f-4e5d-9a8b-7c6d5e4f3a2b"></head><body>
<aside><a href="/">New chat</a></aside><main><div id="conversation">
 <div class="relative group flex flex-col items-end"><div data-testid="user-message"><div class="message-bubble">
  <div class="response-content-markdown"><p>Show the loop in Python.</p></div></div></div></div>
 <div class="relative group flex flex-col items-start"><div data-testid="assistant-message"><div class="message-bubble">
  <div class="response-content-markdown markdown"><p>Here it is:</p>
   <div data-testid="code-block"><div class="flex"><span class="font-mono text-xs">python</span>
    <button aria-label="Copy"><svg></svg></button></div><div><pre><code>for i in range(3):
    print(i)</code></pre></div></div><p>It prints 0, 1 and 2.</p></div></div></div>
  <div class="action-buttons"><button aria-label="Regenerate"><svg></svg></button><button aria-label="Copy"><svg></svg>
   </button><button aria-label="Like"><svg></svg></button><button aria-label="Dislike"><svg></svg></button></div></div>
</div>
<form class="composer"><input type="file" name="files" multiple hidden>
 <div class="tiptap ProseMirror" contenteditable="true" role="textbox" aria-label="Ask Grok anything"
  aria-multiline="true"><p><br></p></div>
 <button data-testid="attach-button" type="button" aria-label="Attach" aria-haspopup="menu">+</button>
 <button id="model-select-trigger" type="button" aria-label="Model select" aria-haspopup="menu"><span>Expert</span>
 </button><button type="submit" data-testid="chat-submit" aria-label="Submit" disabled>Submit</button></form>
</main></body></html>"""

PERPLEXITY = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Perplexity</title>
<link rel="canonical" href="https://www.perplexity.ai/search/tide-power-aB3dE5fG7h"></head><body>
<div class="mx-auto flex w-full flex-col"><div class="mt-md"><div><div class="flex flex-col gap-md w-full">
 <div data-state="active" role="tabpanel" id="radix-:r253:-content-default" tabindex="0"><div class="flex flex-col">
  <div class="bg-base"><div class="group/title relative inline-flex flex-col">
   <h1 class="group/query relative"><span>How do tides make power?</span></h1></div></div>
  <div class="gap-y-lg flex flex-col"><div><div class="min-w-0 break-words">
   <div dir="auto" id="markdown-content-1" class="gap-y-md"><div><div><div class="prose dark:prose-invert">
    <p>Turbines in tidal streams turn with the water<span class="citation inline" aria-label="wikipedia"><a
     href="https://en.wikipedia.org/wiki/Tidal_power"><span class="text-3xs">wikipedia+2</span></a></span>.
    </p></div></div></div></div></div></div>
   <div class="flex items-center justify-between"><div><button aria-label="Share"><svg></svg></button>
    <button aria-label="Copy"><svg></svg></button><button aria-label="Rewrite"><svg></svg></button></div>
    <div><button aria-label="Helpful"><svg></svg></button><button aria-label="Not helpful"><svg></svg></button></div>
   </div></div></div></div>
 <div data-state="inactive" role="tabpanel" hidden id="radix-:r253:-content-sources"></div>
</div></div></div></div>
<div data-ask-input-container="true"><div contenteditable="true" id="ask-input" role="textbox"
 aria-placeholder="Ask a follow-up" data-lexical-editor="true"><p><br></p></div>
 <input multiple="" accept=".md,.txt,.pdf,.py" type="file"><button aria-label="Add files or tools"><svg></svg></button>
 <button aria-label="Choose a model"><span>Model</span></button><button aria-label="Dictation"><svg></svg></button>
 <button disabled="" aria-label="Submit"><svg></svg></button></div>
</body></html>"""


@pytest.mark.parametrize(("html", "provider"), [
    ('<div data-is-streaming="false"></div>', ProviderName.CLAUDE),
    ('<button data-testid="model-selector-dropdown"></button>', ProviderName.CLAUDE),
    ('<div data-testid="assistant-message"></div>', ProviderName.GROK),
    ('<button id="model-select-trigger"></button>', ProviderName.GROK),
    ('<div id="ask-input" contenteditable="true"></div>', ProviderName.PERPLEXITY),
    ('<h1 class="group/query relative"></h1>', ProviderName.PERPLEXITY),
    (CLAUDE, ProviderName.CLAUDE), (GROK, ProviderName.GROK), (PERPLEXITY, ProviderName.PERPLEXITY),
])
def test_the_newer_sites_are_told_by_their_markup(tmp_path: Path, html: str, provider: ProviderName) -> None:
    assert saved_page.detect_provider(read_saved_page(write(tmp_path, "p.html", html))) is provider


def test_two_sites_markup_asks_for_the_provider(tmp_path: Path) -> None:
    both = '<div data-testid="assistant-message"></div><div id="ask-input"></div>'
    with pytest.raises(PageFileError, match=r"markup of Grok and Perplexity.*--provider perplexity"):
        saved_page.detect_provider(read_saved_page(write(tmp_path, "two.html", both)))


@in_browser
async def test_each_newer_sites_page_is_probed_and_its_answer_read(tmp_path: Path) -> None:
    paths = [write(tmp_path, f"{name}.html", html) for name, html in
             (("claude", CLAUDE), ("grok", GROK), ("perplexity", PERPLEXITY))]
    outcomes = await probe_pages(CHROMIUM, saved_page.plan(paths, None, TABLES), timeout_s=60)
    claude, grok, perplexity = outcomes
    for result in outcomes:
        assert isinstance(result, PageResult), result
        assert result.ok and result.probe.signed_in is True, result.probe.broken
        assert result.answer.problems == (), result.answer.problems

    assert isinstance(claude, PageResult) and claude.provider is ProviderName.CLAUDE
    report = claude.probe
    assert item(report, "claude.selectors.input")[0] is ProbeStatus.OK  # the live editor, not the inert one
    assert item(report, "claude.selectors.send")[0] is ProbeStatus.NOT_APPLICABLE  # no send button while empty
    assert item(report, "claude.selectors.assistant") == (ProbeStatus.OK, "[data-is-streaming]")
    assert item(report, "claude.selectors.content") == (ProbeStatus.OK, ".row-start-2 .standard-markdown")
    assert item(report, "claude.selectors.feedback") == (ProbeStatus.OK, 'button[data-testid="action-bar-copy"]')
    assert item(report, "claude.selectors.fileInput")[0] is ProbeStatus.OK
    assert item(report, "claude.labels.chrome")[0] is ProbeStatus.OK
    s = claude.answer.state
    assert (s.user_count, s.assistant_count, s.answered, s.last_has_feedback, s.stop) == (1, 1, True, True, False)
    assert s.model == "Sonnet 5" and s.input_found and not s.challenge
    own = claude.answer.own
    assert own.how == "content"
    assert own.text == "It has **2** steps:\n\n1. parse\n2. build\n\n```python\nsteps = 2\n```"  # not the thinking

    assert isinstance(grok, PageResult) and grok.provider is ProviderName.GROK
    assert item(grok.probe, "grok.selectors.send") == (ProbeStatus.OK, 'button[data-testid="chat-submit"]')
    assert item(grok.probe, "grok.selectors.turn")[0] is ProbeStatus.OK
    assert item(grok.probe, "grok.selectors.feedback")[0] is ProbeStatus.OK
    assert grok.answer.state.model == "Expert" and not grok.answer.state.send_enabled
    assert grok.answer.own.text == ("Here it is:\n\n```python\nfor i in range(3):\n    print(i)\n```\n\n"
                                    "It prints 0, 1 and 2.")

    assert isinstance(perplexity, PageResult) and perplexity.provider is ProviderName.PERPLEXITY
    assert item(perplexity.probe, "perplexity.selectors.user") == (ProbeStatus.OK, '[class*="group/query"]')
    assert item(perplexity.probe, "perplexity.selectors.content") == (ProbeStatus.OK, ".prose")
    assert item(perplexity.probe, "perplexity.selectors.feedback") == (ProbeStatus.OK, 'button[aria-label="Helpful"]')
    assert perplexity.answer.state.last_user == "How do tides make power?"
    assert perplexity.answer.own.text == ("Turbines in tidal streams turn with the water "
                                          "[wikipedia+2](https://en.wikipedia.org/wiki/Tidal_power).")
