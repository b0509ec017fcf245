"""Value types shared by several protocols."""

from __future__ import annotations

import enum
import math
from typing import TypeAlias

# JSON as the extension and the page send it; validated into typed values at the boundary that receives it.
JSON: TypeAlias = "bool | int | float | str | list[JSON] | dict[str, JSON] | None"
JSONObject: TypeAlias = "dict[str, JSON]"


class ProviderName(enum.StrEnum):
    CHATGPT = "chatgpt"
    GEMINI = "gemini"

    @property
    def display(self) -> str:
        """How the site calls itself: ChatGPT, Gemini."""
        return {"chatgpt": "ChatGPT", "gemini": "Gemini"}[self.value]


def finite(value: float, what: str) -> float:
    """A number read from outside must be finite: NaN and ±inf are refused everywhere (they break every deadline)."""
    if not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, got {value!r}")
    return value
