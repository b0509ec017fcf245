"""Grok (grok.com): selectors, labels, timeouts, completion rule, typing and extraction rules. The one table.

Shaped on the captures (../shared/real-dom/README.md): grok-2607-file-input-ready.html and
grok-2607-model-menu-open.html (July 2026: the composer, the Attach menu's file input, the model picker), and
tokenless's reduced Grok page (its user and assistant messages, the submit button). No whole conversation was
captured: the turn's action buttons, the stop button and the notices are guesses, marked so, with their sources
(RESEARCH.md section 7).
"""

from __future__ import annotations

from ..table import Anchor, Newline, ProviderTable, Timeouts, TypePhase, finished_turn_rule
from .claude import CHALLENGE_LABELS, CHALLENGE_SELECTORS

# The submit button takes the stop button's place while Grok answers and comes back when it is done (disabled, the
# composer being empty): once a stop was seen, its return is the signal. The new response's action buttons (a guess)
# and then agbrowse's rule — the text unchanged with no stop button — back it up.
completion = finished_turn_rule("action buttons on the new response", submit_back=True)


TABLE = ProviderTable(
    name="grok",
    title="Grok",
    home_url="https://grok.com/",
    url_patterns=("https://grok.com/*",),
    conversation_re=r"^https://grok\.com/c/[0-9a-f-]+",
    shadow_dom=False,
    selectors={
        "input": ('div.tiptap.ProseMirror[contenteditable="true"]',
                  'div[contenteditable="true"][aria-label="Ask Grok anything"]',
                  'textarea[aria-label="Ask Grok anything"]'),
        # tokenless: button[data-testid=chat-submit][aria-label=Submit][type=submit], disabled while empty.
        "send": ('button[data-testid="chat-submit"]', 'button[type="submit"][aria-label="Submit"]'),
        # Guess (agbrowse's grok-live: button[aria-label*=Stop]; the label's words are ours).
        "stop": ('button[aria-label="Stop model response"]',),
        "user": ('[data-testid="user-message"]',),
        "assistant": ('[data-testid="assistant-message"]',),
        # Guess (chat exporters: a message's container is div.relative.group.flex, items-start for Grok's).
        "turn": ('div.items-start:has(> [data-testid="assistant-message"])',),
        "content": (".response-content-markdown", ".markdown", '[class*="response-content"]'),
        # Guess: the buttons under a finished response.
        "feedback": ('button[aria-label="Regenerate"]', 'button[aria-label="Like"]', 'button[aria-label="Dislike"]'),
        "model": ("button#model-select-trigger",),
        # grok-2607-file-input-ready.html: input[type=file][name=files][multiple] beside the Attach button.
        "fileInput": ('input[type="file"][name="files"]', 'form input[type="file"]', 'input[type="file"]'),
        "attachment": ('[data-testid="file-attachment"]', "[data-filename]", '[data-testid*="attachment"]'),
        "attachmentBusy": ('[role="progressbar"]', '[aria-busy="true"]', ".animate-spin"),
        # grok-2607-model-menu-open.html: the rows are Radix menuitems whose label is span.font-semibold; no row is
        # marked chosen: the trigger's label says which (`choice_on_trigger`). The Upgrade and Custom Instructions
        # rows are no models (they are no radix collection items there).
        "picker": ("button#model-select-trigger", 'button[aria-label="Model select"]'),
        "menu": ('[role="menu"]',),
        "pickerItem": ('[role="menuitem"][data-radix-collection-item]', '[role="menuitemradio"]'),
        "pickerLabel": ("span.font-semibold",),
        "pickerChecked": ('[aria-checked="true"]',),
        # tokenless's login indicator (the anonymous page's sign-up card).
        "login": ('div[data-testid="anon-paywall-sign-up-card"]',),
        # Guess: alerts and toasts (sonner).
        "notice": ('[role="alert"]', '[aria-live="assertive"]', "[data-sonner-toast]", '[class*="toast"]'),
        "challenge": CHALLENGE_SELECTORS,
        "chrome": ("form", "header", "nav", "aside", "footer"),
    },
    labels={
        "stop": ("Stop model response", "Stop generating", "停止"),  # guesses
        "skipThinking": (),
        "thinking": ("Thinking", "Thinking…", "思考中"),  # guess: the reasoning block's in-progress label
        "thinkingDone": (),
        "generating": (),
        "login": ("Sign in", "Sign up", "Log in", "ログイン"),
        "rateLimit": ("reached your limit", "rate limit", "too many requests", "上限に達しました"),  # guesses
        "siteError": ("something went wrong", "network error", "問題が発生しました"),
        "retry": ("Retry", "Try again", "再試行"),
        "unavailable": ("conversation not found", "couldn't load", "会話が見つかりません"),
        "chrome": ("Grok can make mistakes",),
        "attachRefused": ("not supported", "too large", "unable to upload", "failed to upload", "サポートされていない",
                          "大きすぎ"),
        "challenge": CHALLENGE_LABELS,
        "pickerLocked": ("Upgrade",),
        "answerMarkers": (),
        "endMarkers": (),
    },
    timeouts=Timeouts(input_s=30.0, user_message_s=15.0),
    completion=completion,
    type_phases=(TypePhase.JS, TypePhase.INSERT_TEXT, TypePhase.KEYS),
    newline=Newline.SHIFT_ENTER,
    anchors=(Anchor.CONTENT, Anchor.TURN, Anchor.PARAGRAPHS),
    choice_on_trigger=True,
)
