"""Text from outside (a page's answer, a record, a file name) made safe to show (issue 36).

- `shown_name`: a file name or path as one visible line: bytes that are not UTF-8 (Python keeps them as lone
  surrogates, ``surrogateescape``) become ``\\xff``, control, bidi and separator characters ``\\n``, ``\\u202e``. A
  name shown this way cannot forge a line of a report nor reorder what follows it, and always encodes as UTF-8.
- `for_terminal`: text printed to a terminal keeps its lines and tabs but no command: ESC (and so every CSI, OSC 52
  clipboard write, title change), the other C0 controls, DEL, the C1 controls (a lone 0x9b is a CSI to some
  terminals) and bidi overrides are escaped. `--raw` on the CLI prints the bytes instead, for piping.
- `json_for_terminal`: JSON printed to a terminal, the same characters as ``\\u`` escapes (still valid JSON).
- `encodable`: any JSON-like value with its lone surrogates escaped, so that it encodes as UTF-8 (an MCP reply that
  does not encode would close the connection).
"""

from __future__ import annotations

import json
import re
from typing import Any

# Bidi embeddings, overrides and isolates, and the marks (U+061C, U+200E, U+200F).
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_SURROGATES = "\ud800-\udfff"
# What a name may not show as is: C0, DEL, C1, bidi, line and paragraph separators, lone surrogates.
_NAME_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}\u2028\u2029{_SURROGATES}]")
# What a terminal may not get as is: the same, except newline and tab (a CR could overwrite a printed line).
_TERMINAL_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}\u2028\u2029{_SURROGATES}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\x1b"}


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, as surrogateescape keeps it
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown_name(name: str) -> str:
    """A file name or path as one line of visible text (see the module doc)."""
    return _NAME_UNSAFE.sub(lambda m: _escape(m.group()), name)


def quoted(name: str) -> str:
    """`shown_name` in single quotes, for messages."""
    return f"'{shown_name(name)}'"


def for_terminal(text: str) -> str:
    """`text` with every character a terminal would obey escaped; lines and tabs kept."""
    return _TERMINAL_UNSAFE.sub(lambda m: _escape(m.group()), text)


def _u_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def json_for_terminal(data: object, *, indent: int | None = 2) -> str:
    """`json.dumps` for a terminal: non-ASCII text stays readable, what a terminal obeys is a ``\\u`` escape."""
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    return _TERMINAL_UNSAFE.sub(_u_escape, text)  # C0 is escaped by json.dumps already; this catches the rest


def printable(text: str, *, raw: bool = False) -> str:
    """What the CLI prints of text from a page or a record: `for_terminal`, or the text as is with ``--raw``."""
    return text if raw else for_terminal(text)


def printable_json(data: object, *, raw: bool = False) -> str:
    """JSON the CLI prints: `json_for_terminal`, or plain ``json.dumps`` with ``--raw``."""
    return json.dumps(data, indent=2, ensure_ascii=False) if raw else json_for_terminal(data)


_LONE_SURROGATE = re.compile(f"[{_SURROGATES}]")


def encodable(value: Any) -> Any:
    """`value` (str, list, tuple, dict, scalars) with lone surrogates in its strings escaped."""
    if isinstance(value, str):
        # Every tool result passes here: most strings are ASCII, which holds no surrogate (a C-speed check).
        if value.isascii() or not _LONE_SURROGATE.search(value):
            return value
        return _LONE_SURROGATE.sub(lambda m: _escape(m.group()), value)
    if isinstance(value, dict):
        return {encodable(k): encodable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(encodable(v) for v in value)
    return value
