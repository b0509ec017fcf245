"""Gemini: selectors, labels, timeouts and completion rule (seed sections 4, 5.2-5.4, 9.3). The one table.

Gemini renders its UI in custom elements with shadow roots, so every selector is searched with collectDeep; icon
`img alt` attributes (mic, thumb_up, thumb_down) are language-independent (seed 5.4).
"""

from __future__ import annotations

from typing import Any

from .table import Completion, ProviderTable, Timeouts


def completion(s: dict[str, Any], w: dict[str, Any]) -> Completion:
    """Seed 4.3: five conditions by priority, evaluated on every state change."""
    new = s["assistantCount"] > w["initialAssistant"]
    if not new or s["stop"]:
        return Completion(False)
    saw = w["sawStop"]
    if saw and s["lastHasFeedback"]:
        return Completion(True, "feedback buttons on the new response")  # 0
    if saw and s["micFound"]:
        return Completion(True, "mic button back")  # 1
    if saw and s["sendFound"] and s["sendEnabled"] and s["inputEmpty"]:
        return Completion(True, "send button enabled, input empty")  # 2
    if w["textStableS"] >= 5 and s["lastLen"] > 0:
        return Completion(True, "text stable for 5 s")  # 3
    if w["elapsed"] > 10 and not saw:
        return Completion(True, "10 s fallback without a stop button")  # FB
    return Completion(False)


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
        "login": ('a[aria-label*="Sign in"]', 'a[href*="ServiceLogin"]', 'button[data-test-id="login-button"]'),
    },
    labels={
        "stop": ("Stop response", "Stop", "回答を停止", "停止"),
        "skipThinking": (),
        "thinkingDone": (),
        "generating": (),
        "login": ("Sign in", "Log in", "ログイン"),
        "rateLimit": ("reached your limit", "limit for now", "上限に達しました", "try again later"),
        "endMarkers": (),
    },
    timeouts=Timeouts(input_s=15.0, user_message_s=8.0),
    completion=completion,
    type_phases=("js", "insert_text"),
)
