"""The tool declaration kit: output models become the `outputSchema` clients see, and a result that does not match
its tool's output model is caught before it leaves (the official clients reject such a result)."""

from __future__ import annotations

import typing
from typing import Any

import attrs
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from actors.mcp_front.actor import call_tool
from actors.mcp_front.toolkit import Absent, Annotations, Args, Output, Result, Tool, _clean, _nullable, _shapes
from actors.mcp_front.tools import TOOLS
from actors.mcp_front.tools.render import Answer, BothAnswers, DryRun, JobStarted, SitesAnswers
from supervisor.errors import ErrorInfo, TabClosed


class Echo(Output):
    text: str
    count: int


class Started(Output):
    jobId: str


async def _never(*_: Any) -> Result:
    raise AssertionError


def tool(output: Any) -> Tool:
    return Tool("t", "test tool", Args, _never, Annotations(read_only=True), output=output)


def own(schema: dict[str, Any]) -> dict[str, Any]:
    """The tool's own shape in its output schema (the last branch is the typed error)."""
    assert schema["type"] == "object" and schema["anyOf"][-1]["required"] == ["error"]
    assert len(schema["anyOf"]) == 2
    return schema["anyOf"][0]  # type: ignore[no-any-return]


def test_an_output_model_is_the_output_schema_and_the_check() -> None:
    t = tool(Echo)
    schema = t.output_schema()
    assert schema is not None and set(own(schema)["required"]) == {"text", "count"}
    Draft202012Validator.check_schema(schema)
    good = {"text": "hi", "count": 2, "extra": "allowed"}
    t.check_output(Result("hi", good))
    assert Draft202012Validator(schema).is_valid(good)
    for bad in ({"text": "hi"}, {"text": "hi", "count": "2"}, {"text": "hi", "count": 2.5}, None):
        with pytest.raises(pydantic.ValidationError):
            t.check_output(Result("hi", bad))
        assert not Draft202012Validator(schema).is_valid(bad)


def test_a_typed_error_matches_every_output_schema() -> None:
    """Clients built on the TypeScript SDK check an error result's structuredContent too: a typed error that does
    not match the tool's outputSchema reaches them as -32602, without its code or hint."""
    for name, t in [("t", tool(Echo)), ("shapes", tool((Echo, Started))), *TOOLS.items()]:
        schema = t.output_schema()
        assert schema is not None, name
        for info in (ErrorInfo("job_not_found", "no job", "list_jobs shows them"), ErrorInfo("x", "y"),
                     ErrorInfo("stuck", "m", "h", partial="so far", url="https://chatgpt.com/c/1")):
            result = Result.error(info)
            t.check_output(result)
            assert Draft202012Validator(schema).is_valid(result.structured), name
        for bad in ({"error": {"code": "x"}}, {"error": "x"}, {"error": {"code": 1, "message": "m", "hint": None}}):
            with pytest.raises(pydantic.ValidationError):
                t.check_output(Result("", bad, is_error=True))  # an error result is checked like any other


class Sparse(Output):
    count: int
    element: Echo | Absent = None  # left out when there is none
    note: str | None  # always sent, possibly null


def test_an_absent_key_may_be_left_out_but_is_never_null() -> None:
    t = tool(Sparse)
    schema = t.output_schema()
    assert schema is not None and set(own(schema)["required"]) == {"count", "note"}
    element = own(schema)["properties"]["element"]
    assert element["type"] == "object" and "default" not in element
    assert "title" not in element  # a $ref's siblings are cleaned too
    for ok in ({"count": 1, "note": None}, {"count": 1, "note": "n", "element": {"text": "a", "count": 2}}):
        t.check_output(Result("", ok))
        assert Draft202012Validator(schema).is_valid(ok)
    for bad in ({"count": 1, "note": None, "element": None}, {"count": 1}):  # null where absent; note missing
        with pytest.raises(pydantic.ValidationError):
            t.check_output(Result("", bad))
        assert not Draft202012Validator(schema).is_valid(bad)


def test_several_shapes_are_any_of_under_an_object_root() -> None:
    t = tool((Echo, Started))
    schema = t.output_schema()
    assert schema is not None and schema["type"] == "object" and len(schema["anyOf"]) == 3  # and the error
    Draft202012Validator.check_schema(schema)
    for ok in ({"text": "a", "count": 1}, {"jobId": "job-1"}):
        t.check_output(Result("", ok))
        assert Draft202012Validator(schema).is_valid(ok)
    with pytest.raises(pydantic.ValidationError):
        t.check_output(Result("", {"count": 1}))
    assert not Draft202012Validator(schema).is_valid({"count": 1})


def test_every_tool_declares_a_valid_output_schema() -> None:
    for name, t in TOOLS.items():
        schema = t.output_schema()
        assert schema is not None and schema["type"] == "object", name
        Draft202012Validator.check_schema(schema)
        assert "$ref" not in str(schema) and "title" not in schema, name  # inlined, no noise for the agent


def _folded_nodes() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every `X | None` node of every tool's output models as pydantic writes it, beside what `_nullable` makes it."""
    found: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if {"type": "null"} in node.get("anyOf", []) and "anyOf" not in (folded := _nullable(node)):
                found[repr(node)] = (node, folded)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for t in TOOLS.values():
        assert t.output is not None
        for shape in _shapes(t.output):
            walk(_clean(shape.model_json_schema()))
    return list(found.values())


FOLDED = _folded_nodes()
# JSON values whose object keys are often the ones the folded schemas name, so objects of the right shape come up.
_KEYS = sorted({k for _, f in FOLDED for k in f.get("properties", {})}) or ["x"]
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=3), inner, max_size=6),
                     max_leaves=12)


def test_nullable_fields_are_one_type_list_in_the_output_schemas() -> None:
    """The SDK's client validates structured content against outputSchema on every call: a nullable field is
    `type: [T, "null"]`, not an anyOf a validator descends into twice."""
    assert {f["type"][0] for _, f in FOLDED} >= {"string", "integer", "number", "object"}  # distinct nodes
    entry = own(TOOLS["network_log"].output_schema() or {})["properties"]["entries"]["items"]["properties"]
    assert entry["status"] == {"type": ["integer", "null"]} and entry["durationMs"] == {"type": ["number", "null"]}
    for _, folded in FOLDED:
        Draft202012Validator.check_schema(folded)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FOLDED), _JSON)
def test_a_folded_nullable_schema_accepts_what_the_anyof_did(pair: tuple[dict[str, Any], dict[str, Any]],
                                                            value: Any) -> None:
    original, folded = pair
    assert Draft202012Validator(folded).is_valid(value) == Draft202012Validator(original).is_valid(value)


def test_the_ask_outputs_name_every_provider() -> None:
    from actors.mcp_front.tools.asks import SiteName
    from actors.protocol.common import PAIR, ProviderName

    assert set(BothAnswers.model_fields) == {p.value for p in PAIR}
    assert set(typing.get_args(SiteName)) == {p.value for p in ProviderName}  # ask_web's sites are every site
    for p in ProviderName:
        assert TOOLS[f"ask_{p.value}_web"].output == (Answer, JobStarted, DryRun)
    # ask_web's result: one key per site asked, each an answer or an error, nothing else.
    SitesAnswers.model_validate({"claude": {"error": {"code": "rate_limited", "message": "m", "hint": None}}})
    with pytest.raises(pydantic.ValidationError):
        SitesAnswers.model_validate({"claude": {"answer": "no url, no timings"}})


# --- a handler's unexpected failure (docs/troubleshooting.md, internal_error) ----------------------------------------


@pytest.mark.parametrize(("raised", "code"), [
    (KeyError("jobs"), "internal_error"),
    (ExceptionGroup("a handler's nursery", [ZeroDivisionError("division by zero")]), "internal_error"),
    (ExceptionGroup("a handler's nursery", [TabClosed("the tab went away")]), "tab_closed"),
    (None, "internal_error"),  # the handler's result does not match its own output schema
])
async def test_an_unexpected_failure_is_internal_error_and_the_next_call_is_served(
        raised: Exception | None, code: str, caplog: pytest.LogCaptureFixture) -> None:
    """A bug in one call (a handler raising something that is no typed error, or returning a result its schema
    refuses) is answered as a typed error, never raised into the MCP session; a typed error a nursery wrapped keeps
    its own code. The next call is served as usual."""
    async def handler(*_: Any) -> Result:
        if raised is not None:
            raise raised
        return Result("not a count", {"text": "x", "count": "many"})

    async def fine(*_: Any) -> Result:
        return Result("ok", {"text": "ok", "count": 1})

    t = Tool("t", "test tool", Args, handler, Annotations(read_only=True), output=Echo)
    got = await call_tool(t, None, None, {})  # type: ignore[arg-type]  # these handlers use neither
    assert got.is_error and got.structured is not None
    assert got.structured["error"]["code"] == code
    t.check_output(got)  # the error matches the tool's output schema, as the TypeScript SDK checks
    if code == "internal_error":
        assert "failed with an unexpected" in got.structured["error"]["message"]
        assert "The server goes on" in got.structured["error"]["hint"]
        [crash] = [r for r in caplog.records if r.getMessage() == "tool t crashed"]
        assert crash.exc_info is not None  # the traceback is in the log
    again = await call_tool(attrs.evolve(t, handler=fine), None, None, {})  # type: ignore[arg-type]
    assert not again.is_error and again.structured == {"text": "ok", "count": 1}
