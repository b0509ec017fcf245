"""Perplexity (www.perplexity.ai): selectors, labels, timeouts, completion rule, typing and extraction rules. The one
table.

Shaped on the capture perplexity-chat-simple.html (January 2026: the thread, the answers with KaTeX math, the
Lexical composer with its file input and model button, the answer's action bar) and pplxport's exporter (2026: the
inline citations, span.citation with the source's link). No capture shows an answer streaming: the stop button is a
guess, marked so (RESEARCH.md section 7).
"""

from __future__ import annotations

from ..table import Anchor, Newline, ProviderTable, Timeouts, TypePhase, finished_turn_rule
from .claude import CHALLENGE_LABELS, CHALLENGE_SELECTORS

# A finished answer gets its action bar (Share, Copy, Rewrite, Helpful / Not helpful) and no stop button shows: that
# bar in the new turn is the signal (perplexity-chat-simple.html). Never while it searches or thinks. Then the page-
# quiet rule of issue 37, and perplexity-mcp-zerver's text-stability rule.
completion = finished_turn_rule("action bar on the new answer")


TABLE = ProviderTable(
    name="perplexity",
    title="Perplexity",
    home_url="https://www.perplexity.ai/",
    url_patterns=("https://www.perplexity.ai/*", "https://perplexity.ai/*"),
    conversation_re=r"^https://(www\.)?perplexity\.ai/search/[^/?#]+",
    shadow_dom=False,
    selectors={
        "input": ('#ask-input[contenteditable="true"]', 'div[data-lexical-editor="true"][contenteditable="true"]',
                  '[role="textbox"][contenteditable="true"]'),
        # The capture: button[aria-label=Submit], disabled while the composer is empty.
        "send": ('button[aria-label="Submit"]', 'button[type="submit"]'),
        "stop": ('button[aria-label="Stop"]', 'button[aria-label*="Stop generating"]'),  # guess
        "user": ('[class*="group/query"]',),
        "assistant": ('[id^="markdown-content-"]',),
        # A turn (its question, answer and action bar) is the active tab panel holding the answer.
        "turn": ('[role="tabpanel"]:has([id^="markdown-content-"])',),
        "content": (".prose", '[class*="prose"]'),
        "feedback": ('button[aria-label="Helpful"]', 'button[aria-label="Not helpful"]',
                     'button[aria-label="Rewrite"]'),
        "model": ('button[aria-label="Choose a model"]',),
        # The composer's input takes the files; its accept list names what the site takes.
        "fileInput": ('[data-ask-input-container] input[type="file"]', 'input[type="file"][accept]',
                      'input[type="file"]'),
        "attachment": ('[data-testid="file-attachment"]', "[data-filename]", '[data-testid*="attachment"]'),
        "attachmentBusy": ('[role="progressbar"]', '[aria-busy="true"]', ".animate-spin"),
        # The capture's "Choose a model" button; its menu is not captured (a guess: Radix menuitemradio rows).
        "picker": ('button[aria-label="Choose a model"]',),
        "menu": ('[role="menu"]',),
        "pickerItem": ('[role="menuitemradio"]', '[role="menuitem"]'),
        "pickerChecked": ('[aria-checked="true"]', '[data-state="checked"]'),
        "login": ('button[data-testid="login-button"]', 'a[href*="/login"]'),  # guess
        "notice": ('[role="alert"]', '[aria-live="assertive"]', "[data-sonner-toast]", '[class*="toast"]'),
        "challenge": CHALLENGE_SELECTORS,
        "chrome": ("[data-ask-input-container]", "header", "nav", "footer"),
    },
    labels={
        "stop": ("Stop", "Stop generating"),  # guesses
        "skipThinking": (),
        "thinking": ("Searching", "Thinking", "Working…", "検索中"),  # guess: the in-progress steps' label
        "thinkingDone": (),
        "generating": (),
        "login": ("Sign in", "Sign Up", "Log in", "Continue with Google", "ログイン"),
        "rateLimit": ("reached your limit", "limit of pro searches", "daily limit", "too many requests",
                      "上限に達しました"),  # guesses
        "siteError": ("something went wrong", "network error", "問題が発生しました"),
        "retry": ("Retry", "Try again", "再試行"),
        "unavailable": ("thread not found", "this thread is no longer available", "couldn't load",
                        "スレッドが見つかりません"),
        "chrome": ("Ask a follow-up", "Ask anything"),
        "attachRefused": ("not supported", "too large", "unable to upload", "failed to upload", "サポートされていない",
                          "大きすぎ"),
        "challenge": CHALLENGE_LABELS,
        "answerMarkers": (),
        "endMarkers": (),
    },
    timeouts=Timeouts(input_s=30.0, user_message_s=15.0),
    completion=completion,
    type_phases=(TypePhase.JS, TypePhase.INSERT_TEXT, TypePhase.KEYS),
    newline=Newline.SHIFT_ENTER,
    anchors=(Anchor.CONTENT, Anchor.TURN, Anchor.PARAGRAPHS),
)
