"""Claude (claude.ai): selectors, labels, timeouts, completion rule, typing and extraction rules. The one table.

Shaped on the captures (../shared/real-dom/README.md): claude-chat-simple.html (January 2026: the thread, the answer's
markup, the composer) and claude-2607-*.html (July 2026: the picker and the file input), plus tokenless's
thinking-effort capture of the picker's Effort submenu and Thinking switch. What no capture shows is marked "guess"
with its source: the send and stop buttons show only while typing or streaming (RESEARCH.md section 7).
"""

from __future__ import annotations

from ..table import Anchor, Newline, ProviderTable, Timeouts, TypePhase, finished_turn_rule

# Cloudflare's interstitial and its widget (claude.ai is behind Cloudflare): the same on every site that uses it.
CHALLENGE_SELECTORS = ("#challenge-stage", "#challenge-form", ".cf-turnstile",
                       'iframe[src*="challenges.cloudflare.com"]')
CHALLENGE_LABELS = ("Just a moment", "Verify you are human", "Checking your browser",
                    "needs to review the security of your connection", "しばらくお待ちください", "人間であることを確認")


# Claude marks a streaming message data-is-streaming="true" (a stop while it lasts, `busy`) and a finished one
# "false", then adds the message's action bar (Copy, Give positive / negative feedback, Retry): that bar on the new
# response is the signal (claude-chat-simple.html). Never while thinking. Then the page-quiet rule of issue 37 and the
# text-stability fallback, whatever the markup is called.
completion = finished_turn_rule("action bar on the new response")


TABLE = ProviderTable(
    name="claude",
    title="Claude",
    home_url="https://claude.ai/new",
    url_patterns=("https://claude.ai/*",),
    conversation_re=r"^https://claude\.ai/chat/[0-9a-f-]+",
    shadow_dom=False,
    selectors={
        # The ProseMirror editor (both captures). The server-rendered textarea[data-testid=chat-input-ssr] that stands
        # in an inert, transparent fieldset until the app hydrates is no input.
        "input": ('div[data-testid="chat-input"][contenteditable="true"]',
                  'div[contenteditable="true"][aria-label*="Claude"]', '.ProseMirror[contenteditable="true"]'),
        # Guess (tokenless; refined-claude): the send button shows only once the editor has text.
        "send": ('button[aria-label="Send message"]', 'button[aria-label*="Send"]', 'button[aria-label*="送信"]'),
        # Guess (refined-claude's responseStateObserver): "Stop response" while an answer streams.
        "stop": ('button[aria-label="Stop response"]',),
        # The streaming message itself (tokenless's busy selector): an answer is being generated.
        "busy": ('[data-is-streaming="true"]',),
        "user": ('[data-testid="user-message"]',),
        # One selector each: a list is a union here (every element any of them finds), not a fallback order.
        "assistant": ("[data-is-streaming]",),
        # The message and its action bar side by side: div.group > (div.contents > [data-is-streaming]) + the bar.
        "turn": ("div.group:has(> .contents > [data-is-streaming])",),
        # With thinking (or tool use) the response is row 2 of a grid whose row 1 holds the thinking's own
        # .standard-markdown chunks (obsidian-AI-exporter's investigation of February 2026); .progressive-markdown
        # while it streams (the captured page's CSS names both).
        "content": (".row-start-2 .standard-markdown", ".row-start-2 .progressive-markdown", ".standard-markdown",
                    ".progressive-markdown"),
        "feedback": ('button[data-testid="action-bar-copy"]', 'button[aria-label="Give positive feedback"]',
                     'button[aria-label="Give negative feedback"]'),
        "model": ('button[data-testid="model-selector-dropdown"]',),
        # claude-2607-file-input-ready.html: input[data-testid=file-upload], present at rest (also in January's
        # composer, #chat-input-file-upload-bottom). The chips of attached files are not captured: guesses.
        "fileInput": ('input[data-testid="file-upload"]', 'fieldset input[type="file"]', 'input[type="file"]'),
        "attachment": ('[data-testid="file-thumbnail"]', '[data-testid*="attachment"]', "[data-filename]"),
        "attachmentBusy": ('[role="progressbar"]', '[aria-busy="true"]', ".animate-spin"),
        # claude-2607-model-menu-open.html: the picker, its menuitemradio rows (aria-checked); tokenless's
        # thinking-effort capture: an "Effort" row opening a submenu of menuitemradio tiers, a "Thinking" switch row.
        "picker": ('button[data-testid="model-selector-dropdown"]',),
        "menu": ('[role="menu"]',),
        "pickerItem": ('[role="menuitemradio"]', '[role="menuitem"]'),
        "pickerChecked": ('[aria-checked="true"]', '[data-state="checked"]'),
        # Guess (tokenless's login indicators).
        "login": ('button[data-testid="login-with-google"]', 'input[placeholder="Enter your email"]'),
        # The alert band above the composer (claude-chat-simple.html: div[data-alert-band-wrapper], empty there),
        # alerts and toasts.
        "notice": ('[role="alert"]', '[aria-live="assertive"]', "[data-alert-band-wrapper] > *",
                   '[data-testid*="toast"]', '[class*="toast"]'),
        "challenge": CHALLENGE_SELECTORS,
        "chrome": ('[data-disclaimer="true"]', "[data-chat-input-container]", "header", "nav", "footer"),
    },
    labels={
        "stop": ("Stop response", "応答を停止"),  # the Japanese one is a guess
        "skipThinking": (),
        "thinking": ("Thinking", "Thinking…", "思考中"),  # guess: the thinking block's in-progress label
        "thinkingDone": (),
        "generating": (),
        "login": ("Log in", "Continue with Google", "Continue with email", "ログイン"),
        # Guesses in Claude's voice ("You are out of free messages until 5 PM", "Usage limit reached").
        "rateLimit": ("out of free messages", "usage limit", "reached your limit", "message limit",
                      "上限に達しました"),
        "siteError": ("something went wrong", "response was interrupted", "unable to respond", "network error",
                      "問題が発生しました"),
        "retry": ("Retry", "Try again", "再試行"),
        "unavailable": ("conversation not found", "couldn't load this conversation",
                        "conversation is no longer available", "会話が見つかりません"),
        "chrome": ("Claude is AI and can make mistakes", "Claude can make mistakes", "Please double-check responses"),
        "attachRefused": ("not supported", "too large", "exceeds", "you can upload", "failed to upload",
                          "unable to upload", "サポートされていない", "大きすぎ"),
        "challenge": CHALLENGE_LABELS,
        # The picker (the captures): the Effort submenu, the Thinking switch, and rows a plan does not open.
        "effortMenu": ("Effort",),
        "effortToggle": ("Thinking", "Extended thinking"),
        "pickerLocked": ("Upgrade",),
        "answerMarkers": (),
        "endMarkers": (),
    },
    # The hydrated editor replaces the server-rendered one a while after the load (tokenless waits 8 s for it).
    timeouts=Timeouts(input_s=30.0, user_message_s=15.0),
    completion=completion,
    type_phases=(TypePhase.JS, TypePhase.INSERT_TEXT, TypePhase.KEYS),
    newline=Newline.SHIFT_ENTER,
    anchors=(Anchor.CONTENT, Anchor.TURN, Anchor.PARAGRAPHS),
    send_when_typed=True,
)
