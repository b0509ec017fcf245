"""The user's patch to the provider tables: `providers.toml` prepends selectors or labels to table entries, so a
site change can be worked around without a release.

    [chatgpt.selectors]
    send = ['button[data-testid="composer-send-button"]']

    [gemini.labels]
    stop = ["Antwort stoppen"]

`parse` checks the whole file and reports every problem, one line each (`OverrideErrors`); `apply` gives a new table
with the entries prepended (`attrs.evolve`). The shipped tables stay the single source of everything not
overridden, and are never changed.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence

import attrs

from .table import ProviderTable

SECTIONS = ("selectors", "labels")
MAX_ITEMS = 50  # per entry
MAX_LEN = 500  # characters per selector or label


class OverrideErrors(ValueError):
    """The override file is invalid; `lines` holds one human-readable line per problem."""

    def __init__(self, lines: Sequence[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = tuple(lines)


@attrs.frozen
class Overrides:
    """Validated additions: provider → section → entry → the strings to prepend (in the file's order)."""

    entries: Mapping[str, Mapping[str, Mapping[str, tuple[str, ...]]]] = attrs.field(factory=dict)

    def names(self, provider: str) -> tuple[str, ...]:
        """The overridden entries of one provider, as the probe names them (`chatgpt.selectors.send`)."""
        return tuple(f"{provider}.{section}.{entry}" for section, entries in self.entries.get(provider, {}).items()
                     for entry in entries)


_BRACKETS = {"(": ")", "[": "]"}
_BAD_START = re.compile(r"^\s*[>+~,]")
_BAD_END = re.compile(r"[>+~,(\[]\s*$")


def css_problem(selector: str) -> str | None:
    """A cheap syntax check of a CSS selector list (the browser has the last word; the probe reports what it
    refuses): balanced quotes, brackets and parentheses, no declaration block, no dangling combinator or comma."""
    if "{" in selector or "}" in selector or ";" in selector:
        return "a selector has no { } or ; (that is a style rule)"
    if any(ord(c) < 32 for c in selector):
        return "a control character"
    if _BAD_START.search(selector) or _BAD_END.search(selector):
        return "starts or ends with a combinator, comma or open bracket"
    stack: list[str] = []
    quote: str | None = None
    escaped = False
    for c in selector:
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif quote is not None:
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c in _BRACKETS:
            stack.append(_BRACKETS[c])
        elif c in ")]":
            if not stack or stack.pop() != c:
                return f"unbalanced {c!r}"
    if quote is not None:
        return "an unclosed quote"
    if stack:
        return f"missing {stack[-1]!r}"
    if any(not part.strip() for part in _split_commas(selector)):
        return "an empty selector between commas"
    return None


def _split_commas(selector: str) -> list[str]:
    parts, depth, quote, cur = [], 0, None, ""
    for c in selector:
        if quote is not None:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += c
    parts.append(cur)
    return parts


def parse(text: str, tables: Mapping[str, ProviderTable], *, source: str = "providers.toml") -> Overrides:
    """Validate the file's text against the tables; raise `OverrideErrors` listing every problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise OverrideErrors([f"{source}: not valid TOML: {exc}"]) from None
    errors: list[str] = []
    out: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {}
    for provider, sections in data.items():
        table = tables.get(provider)
        if table is None:
            errors.append(f"{source}: unknown provider {provider!r} (known: {', '.join(sorted(tables))})")
            continue
        if not isinstance(sections, dict):
            errors.append(f"{source}: {provider} must be a table ([{provider}.selectors] or [{provider}.labels])")
            continue
        for section, entries in sections.items():
            if section not in SECTIONS:
                errors.append(f"{source}: unknown section {provider}.{section} (known: {', '.join(SECTIONS)})")
                continue
            if not isinstance(entries, dict):
                errors.append(f"{source}: {provider}.{section} must be a table of entries")
                continue
            known: Mapping[str, tuple[str, ...]] = table.selectors if section == "selectors" else table.labels
            for entry, values in entries.items():
                where = f"{source}: {provider}.{section}.{entry}"
                if entry not in known:
                    errors.append(f"{where}: unknown entry (known: {', '.join(sorted(known))})")
                    continue
                if not isinstance(values, list):
                    errors.append(f"{where}: must be a list of strings, got {_kind(values)}")
                    continue
                if not values:
                    errors.append(f"{where}: an empty list adds nothing (leave the entry out)")
                    continue
                if len(values) > MAX_ITEMS:
                    errors.append(f"{where}: at most {MAX_ITEMS} items, got {len(values)}")
                    continue
                good: list[str] = []
                for i, value in enumerate(values):
                    problem = _item_problem(value, section)
                    if problem is not None:
                        errors.append(f"{where}[{i}]: {problem}")
                    elif value not in good:
                        good.append(value)
                out.setdefault(provider, {}).setdefault(section, {})[entry] = tuple(good)
    if errors:
        raise OverrideErrors(errors)
    return Overrides(out)


def _kind(value: object) -> str:
    return {str: "a string", int: "a number", float: "a number", bool: "a boolean", dict: "a table"}.get(
        type(value), type(value).__name__)


def _item_problem(value: object, section: str) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, got {_kind(value)}"
    if not value.strip():
        return "an empty string"
    if len(value) > MAX_LEN:
        return f"longer than {MAX_LEN} characters"
    if section == "selectors":
        problem = css_problem(value)
        if problem is not None:
            return f"not a CSS selector ({problem}): {value[:80]!r}"
    elif any(ord(c) < 32 for c in value):
        return "a control character"
    return None


def apply(table: ProviderTable, overrides: Overrides) -> ProviderTable:
    """A new table with the user's strings prepended to the overridden entries (the rest is the shipped table)."""
    mine = overrides.entries.get(table.name)
    if not mine:
        return table

    def merged(current: Mapping[str, tuple[str, ...]], add: Mapping[str, tuple[str, ...]]
               ) -> dict[str, tuple[str, ...]]:
        return {k: (*add[k], *(v for v in old if v not in add[k])) if k in add else old
                for k, old in current.items()}

    return attrs.evolve(table, selectors=merged(table.selectors, mine.get("selectors", {})),
                        labels=merged(table.labels, mine.get("labels", {})), overridden=overrides.names(table.name))
