"""The page script's replies, read typed: the page is ours, but what it reads is the page's, so every shape is checked
and a wrong one is `BadExtensionReply`, never a crash."""

from __future__ import annotations

from supervisor.errors import BadExtensionReply

from ..protocol.browser_tools import ElementBrief
from ..protocol.common import JSON, JSONObject


def _obj(value: JSON, what: str) -> JSONObject:
    if not isinstance(value, dict):
        raise BadExtensionReply(f"{what}: expected an object from the page script, got {type(value).__name__}")
    return value


def _str(obj: JSONObject, key: str, default: str = "") -> str:
    v = obj.get(key, default)
    if v is None:
        return default
    if not isinstance(v, str):
        raise BadExtensionReply(f"page script: {key!r} must be a string, got {str(v)[:80]}")
    return v


def num(obj: JSONObject, key: str) -> float:
    v = obj.get(key)
    if not isinstance(v, int | float) or isinstance(v, bool):
        raise BadExtensionReply(f"page script: {key!r} must be a number, got {str(v)[:80]}")
    return float(v)


def integer(obj: JSONObject, key: str) -> int:
    v = obj.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise BadExtensionReply(f"page script: {key!r} must be an integer, got {str(v)[:80]}")
    return v


def flag(obj: JSONObject, key: str) -> bool:
    return obj.get(key) is True


def opt_flag(obj: JSONObject, key: str) -> bool | None:
    v = obj.get(key)
    return v if isinstance(v, bool) else None


def items(obj: JSONObject, key: str) -> list[JSON]:
    v = obj.get(key, [])
    if not isinstance(v, list):
        raise BadExtensionReply(f"page script: {key!r} must be a list")
    return v


def obj(value: JSON, what: str) -> JSONObject:
    return _obj(value, what)


def text(o: JSONObject, key: str, default: str = "") -> str:
    return _str(o, key, default)


def brief(value: JSON) -> ElementBrief:
    o = _obj(value, "element")
    return ElementBrief(_str(o, "ref"), _str(o, "tag"), _str(o, "role"), _str(o, "name"))


def opt_brief(value: JSON) -> ElementBrief | None:
    return brief(value) if isinstance(value, dict) else None


def pairs(o: JSONObject, key: str) -> tuple[tuple[str, str], ...]:
    out = []
    for p in items(o, key):
        if isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], str):
            out.append((p[0], p[1]))
    return tuple(out)
