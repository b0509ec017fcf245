"""ChatGPT: selectors, labels, timeouts and completion rule (seed sections 3, 5.1, 6, 9, 13). The one table."""

from __future__ import annotations

from typing import Any

from .table import Completion, ProviderTable, Timeouts


def completion(s: dict[str, Any], w: dict[str, Any]) -> Completion:
    """Seed 3.3, evaluated on every state change instead of every second.

    `s` is the page state; `w` the wait's memory: initialAssistant, sawStop, elapsed (s since send).
    """
    new = s["assistantCount"] > w["initialAssistant"]
    if not new or s["stop"]:
        return Completion(False)
    if s["skipThinking"]:  # still thinking: never complete early (seed 3.6)
        return Completion(False)
    still_generating = (s["generatingText"] and not s["thinkingDone"]) or s["skipThinking"]
    if w["sawStop"] and s["inputEmpty"] and not still_generating:
        return Completion(True, "stop button seen then gone")  # condition 2
    if s["sendFound"] and s["sendEnabled"] and not still_generating:
        return Completion(True, "send button enabled again")  # condition 1
    if w["elapsed"] >= 5 and s["inputEmpty"] and not still_generating:
        return Completion(True, "5 s fallback")  # condition 3
    if w["elapsed"] >= 10 and not still_generating and s["inputEmpty"]:
        return Completion(True, "10 s thinking fallback")  # condition 4
    return Completion(False)


TABLE = ProviderTable(
    name="chatgpt",
    title="ChatGPT",
    home_url="https://chatgpt.com/",
    url_patterns=("https://chatgpt.com/*", "https://chat.openai.com/*"),
    conversation_re=r"^https://(chatgpt\.com|chat\.openai\.com)/c/[0-9a-f-]+",
    shadow_dom=False,
    selectors={
        "input": ("textarea#prompt-textarea", 'textarea[data-testid="prompt-textarea"]',
                  '#prompt-textarea[contenteditable="true"]', '.ProseMirror[contenteditable="true"]'),
        "send": ('button[data-testid="send-button"]', 'button[aria-label*="送信"]', 'button[aria-label*="Send"]'),
        "stop": ('button[data-testid="stop-button"]',),
        "user": ('[data-message-author-role="user"]',),
        "assistant": ('[data-message-author-role="assistant"]',),
        "turn": ('article[data-turn="assistant"]',),
        "content": (".markdown.prose", ".markdown", ".prose", '[class*="markdown"]'),
        "login": ('button[data-testid="login-button"]', 'a[href*="/auth/login"]'),
        "expandThinking": ('button[aria-expanded="false"]',),
    },
    labels={
        "stop": ("Stop generating", "Stop streaming", "生成を停止", "ストリーミングの停止"),
        "skipThinking": ("Skip thinking", "今すぐ回答", "Answer now"),
        "thinkingDone": ("Thinking time", "思考時間", "Thought for"),
        "generating": ("is still generating", "generating a response", "回答を生成しています"),
        "login": ("Log in", "ログイン"),
        "rateLimit": ("reached our limit", "reached the limit", "usage cap", "上限に達しました", "too many requests"),
        "endMarkers": ("You said:", "あなた:", "ChatGPT said:", "ChatGPT:"),
    },
    timeouts=Timeouts(input_s=30.0, user_message_s=15.0),
    completion=completion,
    type_phases=("js", "insert_text", "keys"),
)
