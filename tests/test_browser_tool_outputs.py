"""The general browser tools' output models against what their replies really write: Hypothesis builds the
browser_tools actor's replies (every optional part present or not, nested values included), and each one's
``as_json()`` must pass both the server's check (the pydantic model) and the published ``outputSchema`` as a client
checks it — and the schema closed, so that every key a reply writes is declared. The e2e tests
(tests/test_e2e_browser_tools.py) hold the real results from a real browser to the same closed schemas.
"""

from __future__ import annotations

import copy
import enum
import types
import typing
from typing import Any

import attrs
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from actors.mcp_front.toolkit import Result, Tool
from actors.mcp_front.tools import TOOLS, browser
from actors.protocol import browser_tools as bt
from supervisor.otp import Request


def closed(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every declared object closed (``additionalProperties: false``): a result that passes it has
    no key its tool's output model leaves undeclared."""
    out = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "properties" in node and node.get("additionalProperties") is True:
                node["additionalProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(out)
    return out


def reply_type(tool: Tool) -> type:
    """The reply class of the request a tool's arguments make (``class TabsList(Request[TabsReport])``)."""
    request_cls = typing.get_type_hints(tool.args.request)["return"]
    for base in request_cls.__orig_bases__:
        if typing.get_origin(base) is Request:
            return typing.get_args(base)[0]  # type: ignore[no-any-return]
    raise AssertionError(request_cls)


class _Json:
    """Stands for protocol.common.JSON when the replies' type hints are resolved."""


json_values = st.recursive(st.none() | st.booleans() | st.integers(-(2**53), 2**53)
                           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=10),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                     max_size=3), max_leaves=8)
targets = st.builds(bt.Target, selector=st.text(min_size=1, max_size=10)) | st.builds(bt.Target, ref=st.from_regex(
    r"e[0-9]{1,4}", fullmatch=True))
SPECIAL: dict[object, st.SearchStrategy[Any]] = {
    bool: st.booleans(), int: st.integers(0, 2**31), str: st.text(max_size=12), types.NoneType: st.none(),
    float: st.floats(-1e7, 1e7, allow_nan=False), _Json: json_values, bt.Target: targets,
}


def strategy(hint: Any, fields: dict[str, st.SearchStrategy[Any]] | None = None) -> st.SearchStrategy[Any]:
    """Values of a reply type, built from its type hints (`fields` fixes some of an attrs class's fields)."""
    if hint in SPECIAL:
        return SPECIAL[hint]
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return st.sampled_from(list(hint))
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(strategy(a) for a in args))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(strategy(args[0]), max_size=3).map(tuple)
        return st.tuples(*(strategy(a) for a in args))
    assert attrs.has(hint), hint
    hints = typing.get_type_hints(hint, localns={"JSON": _Json, "JSONObject": dict[str, _Json]})
    given_fields = fields or {}
    return st.builds(hint, **{f.name: given_fields.get(f.name, strategy(hints[f.name])) for f in attrs.fields(hint)})


def action(kind: bt.Action, *, point: bool = False, key: bool = False, value: bool = False, selected: bool = False,
           to_element: bool = False) -> dict[str, st.SearchStrategy[Any]]:
    """An ActionReport as the tool's handler in actors/browser_tools/interaction.py fills it: the parts it never sets
    are left out, the ones it may set are generated."""
    xy = strategy(float) if point else st.none()
    return {"action": st.just(kind), "x": xy, "y": xy, "key": strategy(str) if key else st.none(),
            "value": strategy(str | None) if value else st.none(),
            "selected": strategy(tuple[str, ...]) if selected else st.just(()),
            "to_element": strategy(bt.ElementBrief | None) if to_element else st.none()}


def drag() -> st.SearchStrategy[dict[str, Any]]:
    # An HTML5 drag has no point; a mouse drag ends at one.
    return st.sampled_from([action(bt.Action.DRAG, to_element=True), action(bt.Action.DRAG, point=True,
                                                                            to_element=True)])


# What a tool's reply always holds, where the reply type is shared by several tools.
FIXED: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "click": action(bt.Action.CLICK, point=True), "hover": action(bt.Action.HOVER, point=True),
    "type": action(bt.Action.TYPE, value=True), "press": action(bt.Action.PRESS, key=True),
    "select_option": action(bt.Action.SELECT_OPTION, selected=True),
    "get_text": {"kind": st.just(bt.TextKind.TEXT)}, "get_html": {"kind": st.just(bt.TextKind.HTML)},
    "read_as_markdown": {"kind": st.just(bt.TextKind.MARKDOWN)},
    "screenshot": {"mime": st.sampled_from([f"image/{f.value}" for f in bt.ImageFormat])},
}
NAMES = sorted(t.name for t in browser.TOOLS)


def replies(name: str) -> st.SearchStrategy[Any]:
    reply = reply_type(TOOLS[name])
    if name == "drag":
        return drag().flatmap(lambda fields: strategy(reply, fields))
    return strategy(reply, FIXED.get(name))


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=80, deadline=None, derandomize=True)
@given(data=st.data())
def test_every_reply_matches_its_tools_output_schema(name: str, data: st.DataObject) -> None:
    tool = TOOLS[name]
    schema = tool.output_schema()
    assert schema is not None, name
    shown = data.draw(replies(name)).as_json()
    tool.check_output(Result("", shown))  # the server's check
    Draft202012Validator(schema).validate(shown)  # the client's
    Draft202012Validator(closed(schema)).validate(shown)  # and nothing undeclared


def test_a_query_result_keeps_what_it_was_asked_for() -> None:
    """Spot checks of the sparse shapes: the keys that are left out are absent, never null, on both sides."""
    tool = TOOLS["query"]
    schema = tool.output_schema()
    assert schema is not None
    element = bt.ElementBrief("e3", "input", "textbox", "Name")
    report = bt.QueryReport(7, "https://allowed.test/", bt.QueryWhat.COUNT, 3, (bt.ElementInfo(element),))
    assert report.as_json() == {"tabId": 7, "url": "https://allowed.test/", "what": "count", "count": 3}
    tool.check_output(Result("", report.as_json()))
    for bad in ({**report.as_json(), "elements": None}, {**report.as_json(), "metadata": None},
                {**report.as_json(), "what": "everything"}, {**report.as_json(), "count": -1}):
        with pytest.raises(pydantic.ValidationError):
            tool.check_output(Result("", bad))
        assert not Draft202012Validator(schema).is_valid(bad)


def test_shared_reply_types_are_told_apart_by_their_tool() -> None:
    """A click's result is not a hover's; get_html's text is kind html."""
    click = bt.ActionReport(1, bt.Action.CLICK, "https://allowed.test/", x=1.0, y=2.0).as_json()
    TOOLS["click"].check_output(Result("", click))
    with pytest.raises(pydantic.ValidationError):
        TOOLS["hover"].check_output(Result("", click))
    with pytest.raises(pydantic.ValidationError):  # a click always reports its point
        TOOLS["click"].check_output(Result("", {k: v for k, v in click.items() if k != "point"}))
    html = bt.TextReport(1, "https://allowed.test/", "t", bt.TextKind.HTML, "<p>", 3, False).as_json()
    TOOLS["get_html"].check_output(Result("", html))
    with pytest.raises(pydantic.ValidationError):
        TOOLS["get_text"].check_output(Result("", html))
