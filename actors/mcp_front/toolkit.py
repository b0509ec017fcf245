"""How a tool is declared: ``Tool(name, description, args, handler, annotations, output=...)``.

- **Arguments.** One pydantic model per tool (a subclass of `Args`) is both its JSON Schema (``inputSchema`` in
  ``tools/list``) and its argument validation (``tools/call``), so the two can never disagree. Validation errors
  become one clear `InvalidArgument` line that names the argument and what it must be. Argument models are strict
  (no coercion: ``"3"`` is not a number), forbid unknown arguments and refuse NaN and ±inf. Their schemas are
  plain JSON Schema: optional arguments without a default are left out of ``required`` instead of being typed
  ``null``.
- **Structured result.** A tool whose result is structured names an output model (a subclass of `Output`) as
  ``output=``; a tool that can return one of several shapes names a tuple of them (``output=(Answer, Started)``:
  the schema is their ``anyOf``). Its schema is the tool's ``outputSchema``, and the front checks every
  result's ``structured`` dict against the model before it leaves (the official clients validate
  ``structuredContent`` against ``outputSchema`` and reject a mismatch, so a mismatch is our bug: it is logged
  and the call fails as ``internal_error``). Error results (``is_error``) carry ``{"error": {code, message,
  hint}}``, and every ``outputSchema`` admits that shape too (`ErrorOnly`, one more ``anyOf`` branch): the
  TypeScript SDK (under Claude Code, Cursor and the Inspector) validates error results as well, and a typed error
  that does not match is thrown away as ``-32602 Structured content does not match the tool's output schema``, its
  code and hint lost. Error results are checked like any other. Output models allow extra keys, so a new field
  never breaks a client; declare the keys a caller may rely on. Keys are camelCase, as on the wire. A key that is
  left out when there is nothing to say (rather than sent as null) is typed ``X | Absent = None``: the schema
  leaves it out of ``required`` without allowing null, and the check refuses a null there, as a client's schema
  check would.
- **Annotations.** `Annotations` are MCP's hints (readOnlyHint, destructiveHint, idempotentHint, openWorldHint);
  set all four deliberately (MCP's defaults for an unset hint are the pessimistic ones).
- **Background.** A tool that can run as a background job (and so as an MCP task) gives ``start_job``: it starts
  the job and returns its `JobView` (see `actors.mcp_front.tasks`).

Example::

    class EchoArgs(Args):
        text: Annotated[str, Field(max_length=100, description="What to echo.")]

    class EchoOutput(Output):
        text: str

    async def echo(deps: FrontDeps, call: ToolCall, args: EchoArgs) -> Result:
        return Result(text=args.text, structured={"text": args.text})

    Tool("echo", "Echo the text.", EchoArgs, echo, Annotations(read_only=True, idempotent=True), output=EchoOutput)
"""

from __future__ import annotations

import functools
import math
import types
import typing
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pydantic
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from supervisor.errors import ErrorInfo, InvalidArgument
from supervisor.safetext import encodable

if TYPE_CHECKING:
    from ..protocol.jobs import JobView
    from .deps import FrontDeps, ToolCall


class Args(BaseModel):
    """Base of every tool's arguments. Built on first use: a server start builds only the models of the tools it is
    called with (see schema_cache.py)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True, defer_build=True)

    @classmethod
    def tool_schema(cls) -> dict[str, Any]:
        """The JSON Schema as clients see it."""
        return _schema_of(cls)


def _schema_of(cls: type[Args]) -> dict[str, Any]:
    if (known := _input_schemas.get(cls)) is None:
        known = _input_schemas[cls] = _clean(cls.model_json_schema())
        known.setdefault("properties", {})
        known["additionalProperties"] = False
    return known


# Computed once per model, or seeded from the schema cache (schema_cache.py) without building the model at all.
_input_schemas: dict[type[Args], dict[str, Any]] = {}
_output_schemas: dict[Outputs, dict[str, Any]] = {}


# An output key that may be left out but is never null (see the module docstring).
Absent = SkipJsonSchema[None]


class Output(BaseModel):
    """Base of every tool's structured result (its ``structuredContent``); see the module docstring."""

    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False, frozen=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _absent_is_not_null(cls, data: object) -> object:
        if isinstance(data, dict):
            for name in _absent_keys(cls):
                if name in data and data[name] is None:
                    raise ValueError(f"{name!r} is left out when there is none, never null")
        return data


@functools.cache
def _absent_keys(cls: type[Output]) -> frozenset[str]:
    """The fields typed ``X | Absent``."""
    def absent(annotation: object) -> bool:
        return (isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union) and any(
            arg == Absent for arg in typing.get_args(annotation))
    return frozenset(name for name, f in cls.model_fields.items() if absent(f.annotation))


class ErrorOut(Output):
    code: str = Field(description="Stable error code; docs/troubleshooting.md has a section for each.")
    message: str
    hint: str | None
    partial: str | Absent = Field(default=None, description="The answer received before a deadline or a stuck "
                                  "page ended it.")
    url: str | Absent = Field(default=None, description="The conversation to look at (interrupted).")


class ErrorOnly(Output):
    """A typed error as a tool's structured result (``isError``); a shape of every tool's output."""

    error: ErrorOut


Outputs = type[Output] | tuple[type[Output], ...]


def _shapes(output: Outputs) -> tuple[type[Output], ...]:
    """The shapes a tool's result may take: its own, then the typed error."""
    own = output if isinstance(output, tuple) else (output,)
    return own if ErrorOnly in own else (*own, ErrorOnly)


def _output_schema_of(output: Outputs) -> dict[str, Any]:
    if (known := _output_schemas.get(output)) is None:
        # MCP wants an object schema at the root; of the shapes, one must match.
        known = _output_schemas[output] = {
            "type": "object", "anyOf": [_nullable(_clean(o.model_json_schema())) for o in _shapes(output)]}
    return known


# What a schema that `_nullable` folds into a type list may hold: keywords that apply to one JSON type only (so a
# null passes them), unlike `enum` or `const`.
_TYPED_KEYWORDS = frozenset({"type", "description", "properties", "required", "additionalProperties", "items",
                             "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"})


def _nullable(node: Any) -> Any:
    """Pydantic's ``anyOf: [S, {type: null}]`` for an ``X | None`` as the one schema ``S`` with ``type: [T, "null"]``:
    the same values pass, and a client checks it without a branch per field (the SDK's Python client validated 100
    network_log entries in 5.4 ms with the branches, 4.6 ms without)."""
    if isinstance(node, list):
        return [_nullable(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _nullable(v) for k, v in node.items()}
    branches = out.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches and "type" not in out:
        (other,) = [b for b in branches if b != {"type": "null"}]
        if isinstance(other, dict) and isinstance(other.get("type"), str) and set(other) <= _TYPED_KEYWORDS:
            del out["anyOf"]
            return {**other, **out, "type": [other["type"], "null"]}
    return out


def seed_schemas(tool: Tool, input_schema: dict[str, Any], output_schema: dict[str, Any] | None) -> None:
    """Give `tool` the schemas a cache holds for it (its models are then built only when it is called)."""
    _input_schemas[tool.args] = input_schema
    if tool.output is not None and output_schema is not None:
        _output_schemas[tool.output] = output_schema


def _check_output(output: Outputs, structured: object) -> None:
    """Raise `pydantic.ValidationError` (the last shape's) unless `structured` matches one of the shapes."""
    shapes = _shapes(output)
    for i, shape in enumerate(shapes):
        try:
            shape.model_validate(structured)
            return
        except pydantic.ValidationError:
            if i == len(shapes) - 1:
                raise


def _clean(schema: dict[str, Any]) -> dict[str, Any]:
    """Pydantic's schema as a plain one: ``$ref``s inlined, no titles (noise in an agent's context), no
    ``default: null`` for optional fields."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            kept = {k: walk(v) for k, v in node.items() if k not in ("$defs", "$ref")
                    and not (k == "title" and isinstance(v, str)) and not (k == "default" and v is None)}
            if "$ref" in node:  # its siblings (a field's description) win over the target's
                return {**walk(defs[node["$ref"].rsplit("/", 1)[-1]]), **kept}
            return kept
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out: dict[str, Any] = walk(schema)
    return out


@attrs.frozen
class Annotations:
    """MCP tool annotations (hints for the client)."""

    read_only: bool
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False


@attrs.frozen
class Link:
    """A file the result names, as an MCP resource link (``file://`` URI)."""

    path: str
    name: str
    mime: str
    size: int

    def as_json(self) -> dict[str, Any]:
        return {"type": "resource_link", "uri": Path(self.path).as_uri(), "name": self.name, "mimeType": self.mime,
                "size": self.size}


@attrs.frozen
class Result:
    """What a tool returns: text for the agent, the structured form (matching the output schema), images."""

    # Page text and file names can hold lone surrogates (a JSON "\\udcff", a name that is not UTF-8): escaped
    # here, since a reply that does not encode as UTF-8 would close the client's connection.
    text: str = attrs.field(converter=encodable)
    structured: dict[str, Any] | None = attrs.field(default=None, converter=encodable)
    images: tuple[str, ...] = ()  # base64 images, of type image_mime
    is_error: bool = False
    image_mime: str = "image/png"
    links: tuple[Link, ...] = ()  # files on this machine the result names (resource_link content)

    @classmethod
    def error(cls, info: ErrorInfo) -> Result:
        """A typed error as a tool result: ``[code] message hint``, and ``{"error": {code, message, hint}}``."""
        return cls(text=info.text(), structured={"error": info.as_dict()}, is_error=True)


Handler = Callable[["FrontDeps", "ToolCall", Any], Awaitable[Result]]
StartJob = Callable[["FrontDeps", "ToolCall", Any], Awaitable["JobView"]]


@attrs.frozen
class Tool:
    name: str
    description: str
    args: type[Args]
    handler: Handler
    annotations: Annotations
    output: Outputs | None = None
    title: str | None = None
    start_job: StartJob | None = None  # can run as a background job, and so as an MCP task

    def output_schema(self) -> dict[str, Any] | None:
        """The ``outputSchema`` clients see (None: the result is text only)."""
        return None if self.output is None else _output_schema_of(self.output)

    def check_output(self, result: Result) -> None:
        """Raise `pydantic.ValidationError` if a result's structured content (an error's too) does not match the
        declared output (a bug in the tool)."""
        if self.output is not None:
            _check_output(self.output, result.structured)

    def parse(self, raw: dict[str, Any]) -> Args:
        try:
            return self.args.model_validate(raw)
        except pydantic.ValidationError as exc:
            raise InvalidArgument(self._explain(exc), hint=self._accepted()) from None

    def _accepted(self) -> str:
        props = self.args.tool_schema().get("properties", {})
        return f"Arguments of {self.name}: {', '.join(props) or 'none'}."

    def _explain(self, exc: pydantic.ValidationError) -> str:
        props = self.args.tool_schema().get("properties", {})
        parts: dict[str, str] = {}
        for err in exc.errors(include_url=False):
            # One message per argument: an optional argument's union reports each branch; the first one says it.
            name = str(err["loc"][0]) if err["loc"] else "(arguments)"
            if name not in parts:
                parts[name] = f"{self.name}: {_message(err, name, props.get(name, {}))}"
        return "; ".join(parts.values())


def _message(err: Any, loc: str, spec: dict[str, Any]) -> str:
    kind, value = err["type"], err.get("input")
    where = f"argument {loc!r}" if loc != "(arguments)" else "the arguments:"  # a check across arguments
    if kind == "missing":
        return f"missing required argument {loc!r}"
    if kind == "extra_forbidden":
        return f"unknown argument {loc!r}"
    if kind in ("string_type",):
        return f"{where} must be a string, got {type(value).__name__}"
    if kind in ("bool_type",):
        return f"{where} must be true or false, got {value!r:.40}"
    if kind in ("int_type", "int_from_float"):
        return f"{where} must be a whole number, got {value!r:.40}"
    if kind in ("float_type", "finite_number"):
        if isinstance(value, float) and not math.isfinite(value):
            return f"{where} must be a finite number, got {value!r}"
        return f"{where} must be a number, got {value!r:.40}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        lo, hi = spec.get("minimum"), spec.get("maximum")
        if lo is not None and hi is not None:
            return f"{where} must be between {lo:g} and {hi:g}, got {value!r:.40}"
        return f"{where} {err['msg'].lower()}, got {value!r:.40}"
    if kind == "string_too_short":
        return f"{where} must not be empty"
    if kind == "string_too_long":
        return f"{where} is too long ({len(value)} > {spec.get('maxLength')} characters)"
    if kind in ("literal_error", "enum"):
        options = spec.get("enum") or []
        return f"{where} must be one of {', '.join(map(str, options))}, got {value!r:.40}"
    if kind == "value_error":
        return f"{where} {err.get('ctx', {}).get('error', err['msg'])!s}"
    return f"{where}: {err['msg']}"
