"""Value types shared by several protocols."""

from __future__ import annotations

import enum
import math
from typing import TypeAlias

# JSON as the extension and the page send it; validated into typed values at the boundary that receives it.
JSON: TypeAlias = "bool | int | float | str | list[JSON] | dict[str, JSON] | None"
JSONObject: TypeAlias = "dict[str, JSON]"


class ProviderName(enum.StrEnum):
    """The sites ai-bridge asks, in the order they are listed everywhere. Code that means "every site" iterates this
    enum; code that means the original pair says `PAIR`."""

    CHATGPT = "chatgpt"
    GEMINI = "gemini"
    CLAUDE = "claude"
    GROK = "grok"
    PERPLEXITY = "perplexity"

    @property
    def display(self) -> str:
        """How the site calls itself: ChatGPT, Gemini, Claude, Grok, Perplexity."""
        return _DISPLAY[self.value]


_DISPLAY = {"chatgpt": "ChatGPT", "gemini": "Gemini", "claude": "Claude", "grok": "Grok", "perplexity": "Perplexity"}
# The pair `ask_chatgpt_gemini_web` and `--provider both` ask (the first two sites, before issue 40).
PAIR: tuple[ProviderName, ...] = (ProviderName.CHATGPT, ProviderName.GEMINI)
SITE_CHOICES = (*(p.value for p in ProviderName), "both", "all")  # what a command's --provider takes


def sites_named(name: str) -> tuple[ProviderName, ...]:
    """A command's --provider value as the sites it names: one site, "both" (ChatGPT and Gemini) or "all"."""
    if name == "both":
        return PAIR
    if name == "all":
        return tuple(ProviderName)
    return (ProviderName(name),)


def finite(value: float, what: str) -> float:
    """A number read from outside must be finite: NaN and ±inf are refused everywhere (they break every deadline)."""
    if not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, got {value!r}")
    return value
