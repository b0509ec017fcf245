"""The shape of a provider table: everything site-specific (selectors, labels, timeouts, completion rules) lives in
one `ProviderTable` per provider (chatgpt.py, gemini.py); the actor and the in-page watcher are generic."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs


@attrs.frozen
class Timeouts:
    """Seed section 9.1. "max" values: proceed as soon as the condition holds; these are failure thresholds."""

    reuse_tab_s: float = 3.0
    new_tab_s: float = 5.0
    new_tab_retries: int = 2
    page_load_s: float = 30.0
    input_s: float = 30.0
    send_button_s: float = 60.0
    user_message_s: float = 15.0
    new_response_s: float = 30.0
    response_s: float = 480.0  # 8 min; per-call `timeout_s` overrides
    text_render_s: float = 120.0
    health_check_s: float = 4.0
    settle_s: float = 0.15  # counts must stay unchanged this long on a freshly loaded page (replaces 500 ms sleeps)
    stuck_check_s: float = 5.0  # seed 9.3: a stop button left over from an earlier answer must go within this
    stall_s: float = 120.0  # stop button shown, not thinking, answer text unchanged this long → stuck


@attrs.frozen
class Completion:
    """What the completion rule sees (seed 3.3 / 4.3 state fields) and decides."""

    done: bool
    reason: str = ""


@attrs.frozen
class ProviderTable:
    name: str  # "chatgpt" | "gemini"
    title: str  # for messages: "ChatGPT" | "Gemini"
    home_url: str
    url_patterns: tuple[str, ...]  # tabs.query patterns of this site
    conversation_re: str  # a URL of an existing conversation
    shadow_dom: bool  # search inside open shadow roots (Gemini)
    selectors: dict[str, tuple[str, ...]]  # input, send, user, assistant, content, login, ...
    labels: dict[str, tuple[str, ...]]  # texts / aria-label fragments, English and Japanese
    timeouts: Timeouts
    completion: Callable[[dict[str, Any], dict[str, Any]], Completion]
    type_phases: tuple[str, ...]  # "js", "insert_text", "keys" — seed 5.1 / 5.2

    def watcher_config(self) -> dict[str, Any]:
        return {"name": self.name, "shadow": self.shadow_dom, "sel": {k: list(v) for k, v in self.selectors.items()},
                "labels": {k: list(v) for k, v in self.labels.items()}}
