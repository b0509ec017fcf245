"""Gemini: selectors, labels, timeouts, completion rule, typing and extraction rules (seed sections 4, 5.2-5.4,
9.3). The one table.

Gemini renders its UI in custom elements with shadow roots, so every selector is searched with collectDeep; icon
`img alt` attributes (mic, thumb_up, thumb_down) are language-independent (seed 5.4).
"""

from __future__ import annotations

from .page import PageState
from .table import NOT_YET, Anchor, Completion, Newline, ProviderTable, Timeouts, TypePhase, Watch


def completion(s: PageState, w: Watch) -> Completion:
    """Seed 4.3: five conditions by priority plus the fallback, evaluated on every state change. Never while a
    thinking indicator shows (a Pro / Deep Think answer thinks quietly for minutes)."""
    if s.assistant_count <= w.initial_assistant or s.stop or s.thinking:
        return NOT_YET
    if w.saw_stop and s.last_has_feedback:
        return Completion(True, "feedback buttons on the new response")  # 0
    if w.saw_stop and s.mic_found:
        return Completion(True, "mic button back")  # 1
    if w.saw_stop and s.send_found and s.send_enabled and s.input_empty:
        return Completion(True, "send button enabled, input empty")  # 2
    if w.text_stable_s >= 5 and s.last_len > 0:
        return Completion(True, "text stable for 5 s")  # 3
    if w.elapsed_s > 10 and not w.saw_stop:
        return Completion(True, "10 s fallback without a stop button")  # FB
    return NOT_YET


TABLE = ProviderTable(
    name="gemini",
    title="Gemini",
    home_url="https://gemini.google.com/app",
    url_patterns=("https://gemini.google.com/*",),
    conversation_re=r"^https://gemini\.google\.com/app/[0-9a-f]+",
    shadow_dom=True,
    selectors={
        "input": ('[role="textbox"][contenteditable="true"]', '[role="textbox"]', 'div[contenteditable="true"]',
                  "textarea"),
        "send": ('button:has(mat-icon[data-mat-icon-name="send"])', 'button[aria-label*="送信"]',
                 'button[aria-label*="Send"]'),
        "sendIcon": ('mat-icon[data-mat-icon-name="send"]',),
        "stop": ('button:has(mat-icon[data-mat-icon-name="stop"])', 'button[aria-label*="Stop"]',
                 'button[aria-label*="停止"]'),
        "user": ("user-query", ".user-query"),
        "assistant": ("model-response",),
        "content": (".markdown", "message-content", ".model-response-text"),
        "mic": ('img[alt="mic"]',),
        "feedback": ('img[alt="thumb_up"]', 'img[alt="thumb_down"]'),
        "thinkingIndicator": ("model-thoughts", ".thoughts-header", '[class*="thinking"]'),
        "login": ('a[aria-label*="Sign in"]', 'a[href*="ServiceLogin"]', 'button[data-test-id="login-button"]'),
        "notice": ('[role="alert"]', '[aria-live="assertive"]', "snack-bar-container", "mat-snack-bar-container",
                   ".mat-mdc-snack-bar-container", '[class*="error-message"]', ".error"),
    },
    labels={
        "stop": ("Stop response", "Stop", "回答を停止", "停止"),
        "skipThinking": (),
        "thinking": ("Thinking", "Thinking…", "Thinking...", "思考中", "思考中…", "考え中"),  # matched exactly
        "thinkingDone": (),
        "generating": (),
        "login": ("Sign in", "Log in", "ログイン"),
        "rateLimit": ("reached your limit", "limit for now", "上限に達しています", "上限に達しました",
                      "too many requests"),
        "siteError": ("something went wrong", "network error", "問題が発生しました", "エラーが発生しました"),
        "retry": ("Retry", "Try again", "再試行", "もう一度試す"),
        "answerMarkers": (),
        "endMarkers": (),
    },
    timeouts=Timeouts(input_s=15.0, user_message_s=8.0),
    completion=completion,
    type_phases=(TypePhase.JS, TypePhase.INSERT_TEXT),
    newline=Newline.SHIFT_ENTER,
    anchors=(Anchor.FEEDBACK, Anchor.CONTENT, Anchor.TURN, Anchor.ARIA_LIVE),
)
