"""Scenario files: the format (docs/check.md), their validation with one clear line per problem, the question rule,
and the selection (`--id`, `--tag`).

A file is ``{"version": 1, "scenarios": [...]}``; the shipped one is ``scenarios.json`` beside this module (it ships
in the wheel), and ``--scenarios FILE`` adds the user's own after it. Every problem of every file is collected and
reported together (`ScenarioError.problems`), each naming the file, the scenario and the field.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Literal

import attrs
import pydantic
from pydantic import BaseModel, ConfigDict, Field

from actors.protocol.common import ProviderName

from .relevance import content_terms, normalise

SHIPPED = Path(__file__).with_name("scenarios.json")
MAX_FILE_BYTES = 1 << 20


class Tag(enum.StrEnum):
    """Seed 10.3's tags, and only these: one per site (issue 40 added Claude's, Grok's and Perplexity's)."""

    SMOKE = "smoke"
    REGRESSION = "regression"
    CHATGPT = "chatgpt"
    GEMINI = "gemini"
    CLAUDE = "claude"
    GROK = "grok"
    PERPLEXITY = "perplexity"
    THINKING = "thinking"
    PARALLEL = "parallel"
    CODE = "code"


class ScenarioError(Exception):
    """Scenario files that do not validate, or a selection that names nothing: one line per problem."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


# -- the question rule -----------------------------------------------------------------------------------------------

MIN_QUESTION_CHARS = 15
MIN_CONTENT_TERMS = 3
MAX_QUESTION_CHARS = 4000
# Seed 10.6: probes like these are what bot detection looks for; a check asks what a developer would ask.
DENIED_QUESTIONS = frozenset({
    "hello", "hi", "hey", "ok", "okay", "test", "testing", "ping", "connection test", "test message", "just testing",
    "this is a test", "what's 1+1", "what is 1+1", "1+1", "hello world", "are you there",
    "こんにちは", "テスト", "接続テスト", "これはテストです",
})
_DENIED_PATTERNS = (
    re.compile(r"^\W*(hello|hi|hey)\b"),  # opens with a greeting
    re.compile(r"\bconnection test\b|\btest message\b|接続テスト"),
    re.compile(r"^\W*(what(?:'s| is)\s+)?\d+\s*[-+*/x×]\s*\d+\W*$"),  # bare arithmetic: "What's 1+1?"
)


def question_problems(question: str) -> list[str]:
    """Why `question` is not a natural technical question (docs/check.md, "The question rule"); empty when it is."""
    text = question.strip()
    norm = normalise(text)
    bare = re.sub(r"[\s\W]+$", "", norm)
    problems = []
    if bare in DENIED_QUESTIONS or any(p.search(norm) for p in _DENIED_PATTERNS):
        problems.append("a greeting, connection test or arithmetic probe; ask a natural technical question "
                        "(seed 10.6), e.g. 'How do I read files asynchronously in Python?'")
    if len(text) < MIN_QUESTION_CHARS:
        problems.append(f"{len(text)} characters; a natural question has at least {MIN_QUESTION_CHARS}")
    if len(text) > MAX_QUESTION_CHARS:
        problems.append(f"{len(text)} characters; at most {MAX_QUESTION_CHARS}")
    found = content_terms(text)
    if len(found) < MIN_CONTENT_TERMS:
        problems.append(f"{len(found)} content term(s) {sorted(found)}; a natural technical question names at least "
                        f"{MIN_CONTENT_TERMS} things it is about")
    return problems


# -- the file format ---------------------------------------------------------------------------------------------------

_STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True, populate_by_name=False)


class Assertions(BaseModel):
    """Seed 10.4's assertions (plus `codeBlock`); an absent one is not checked."""

    model_config = _STRICT

    bothMustSucceed: bool = False  # multi-provider scenarios: every provider must answer (else: at least one)
    minAnswerLength: Annotated[int, Field(ge=1, le=1_000_000)] | None = None  # characters of the answer, trimmed
    relevanceThreshold: Annotated[float, Field(ge=0.0, le=1.0)] | None = None  # relevance.relevance(q, answer)
    maxTotalMs: Annotated[int, Field(ge=1, le=3_600_000)] | None = None  # the ask's totalMs, per provider
    noFallback: bool = False  # the table's first extraction anchor gave the answer, with no retry
    noEmptyMarkdown: bool = False  # visible text outside markdown syntax, and no empty code block
    codeBlock: bool = False  # a fenced code block with something in it


class ScenarioModel(BaseModel):
    model_config = _STRICT

    id: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{1,62}$")]
    name: Annotated[str, Field(min_length=1, max_length=100)]
    description: Annotated[str, Field(max_length=500)] = ""
    tags: Annotated[list[str], Field(min_length=1)]
    providers: Annotated[list[Literal["chatgpt", "gemini", "claude", "grok", "perplexity"]],
                         Field(min_length=1, max_length=5)]
    question: Annotated[str, Field(min_length=1)]
    followUp: str | None = None  # ask in the conversation this earlier scenario opened (same provider)
    timeoutS: Annotated[float, Field(gt=0, le=3600)] | None = None
    assertions: Assertions = Assertions()

    @pydantic.field_validator("tags")
    @classmethod
    def _known_tags(cls, value: list[str]) -> list[str]:
        unknown = [t for t in value if t not in Tag._value2member_map_]
        if unknown:
            raise ValueError(f"unknown tag {unknown[0]!r}; tags are {', '.join(t.value for t in Tag)}")
        return value


class FileModel(BaseModel):
    model_config = _STRICT

    version: Literal[1]
    scenarios: list[object]


@attrs.frozen
class Scenario:
    id: str
    name: str
    description: str
    tags: tuple[Tag, ...]
    providers: tuple[ProviderName, ...]
    question: str
    follow_up: str | None
    timeout_s: float | None
    assertions: Assertions
    source: str  # the file it came from

    def deadline_s(self, default_s: float) -> float:
        """The ask's deadline: `timeoutS`, else `maxTotalMs` plus 30 s to tell a slow answer from none, else the
        response_timeout_s setting."""
        if self.timeout_s is not None:
            return self.timeout_s
        if self.assertions.maxTotalMs is not None:
            return self.assertions.maxTotalMs / 1000 + 30
        return default_s


def _where(loc: Iterable[int | str]) -> str:
    return ".".join(str(p) for p in loc) or "(top level)"


def _no_constants(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def _parse(source: str, text: str, problems: list[str]) -> list[object]:
    try:
        data = json.loads(text, parse_constant=_no_constants)
    except ValueError as exc:
        problems.append(f"{source}: not valid JSON: {exc}")
        return []
    try:
        return FileModel.model_validate(data).scenarios
    except pydantic.ValidationError as exc:
        for err in exc.errors():
            problems.append(f"{source}: {_where(err['loc'])}: {err['msg']}")
        return []


def _check_one(source: str, index: int, raw: object, problems: list[str]) -> Scenario | None:
    label = f"{source}: scenarios[{index}]"
    if isinstance(raw, dict) and isinstance(raw.get("id"), str):
        label += f" ({raw['id']})"
    try:
        m = ScenarioModel.model_validate(raw)
    except pydantic.ValidationError as exc:
        for err in exc.errors():
            msg = err["msg"].removeprefix("Value error, ")
            problems.append(f"{label}: {_where(err['loc'])}: {msg}")
        return None
    here: list[str] = []
    for field, values in (("tags", m.tags), ("providers", m.providers)):
        if len(set(values)) != len(values):
            here.append(f"{field}: listed twice")
    providers = tuple(ProviderName(p) for p in m.providers)
    tags = {Tag(t) for t in m.tags}
    if len(providers) == 1:
        (p,) = providers
        if Tag(p.value) not in tags:
            here.append(f"tags: a {p.value} scenario carries the {p.value!r} tag (so --tag {p.value} finds it)")
        for other in (o for o in ProviderName if o is not p and Tag(o.value) in tags):
            here.append(f"tags: {other.value!r} on a scenario that only asks {p.value}")
        if Tag.PARALLEL in tags:
            here.append("tags: 'parallel' needs two providers or more")
        if m.assertions.bothMustSucceed:
            here.append("assertions.bothMustSucceed: only for a scenario that asks several providers")
    elif Tag.PARALLEL not in tags:
        here.append("tags: a scenario that asks several providers at once carries the 'parallel' tag")
    if m.followUp is not None and len(providers) != 1:
        here.append("followUp: only a single-provider scenario can follow up a conversation")
    here += [f"question: {p}" for p in question_problems(m.question)]
    problems += [f"{label}: {p}" for p in here]
    if here:
        return None
    return Scenario(m.id, m.name, m.description, tuple(Tag(t) for t in m.tags), providers, m.question.strip(),
                    m.followUp, m.timeoutS, m.assertions, source)


def load(extra: Sequence[Path] = (), *, shipped: Path | None = SHIPPED) -> list[Scenario]:
    """The shipped scenarios, then each extra file's, in file order; every problem of every file in one
    `ScenarioError`."""
    problems: list[str] = []
    out: list[Scenario] = []
    sources: list[tuple[str, str]] = []
    for path in ([shipped] if shipped is not None else []) + list(extra):
        try:
            raw = path.read_bytes()
        except OSError as exc:
            problems.append(f"{path}: cannot read it: {exc.strerror or exc}")
            continue
        if len(raw) > MAX_FILE_BYTES:
            problems.append(f"{path}: {len(raw)} bytes, over the {MAX_FILE_BYTES}-byte limit")
            continue
        try:
            sources.append((str(path), raw.decode("utf-8")))
        except UnicodeDecodeError as exc:
            problems.append(f"{path}: not UTF-8: {exc}")
    for source, text in sources:
        for i, item in enumerate(_parse(source, text, problems)):
            sc = _check_one(source, i, item, problems)
            if sc is not None:
                out.append(sc)
    seen: dict[str, Scenario] = {}
    for sc in out:
        if sc.id in seen:
            problems.append(f"{sc.source}: scenario {sc.id!r}: duplicate id (also in {seen[sc.id].source})")
            continue
        if sc.follow_up is not None:
            parent = seen.get(sc.follow_up)
            if parent is None:
                problems.append(f"{sc.source}: scenario {sc.id!r}: followUp {sc.follow_up!r} is not a scenario listed "
                                "before it")
            elif parent.providers != sc.providers:
                problems.append(f"{sc.source}: scenario {sc.id!r}: followUp {sc.follow_up!r} asks "
                                f"{'+'.join(p.value for p in parent.providers)}, not {sc.providers[0].value}")
            elif parent.follow_up is not None:
                problems.append(f"{sc.source}: scenario {sc.id!r}: followUp {sc.follow_up!r} is itself a follow-up; "
                                "follow the scenario that opened the conversation")
        seen[sc.id] = sc
    if problems:
        raise ScenarioError(problems)
    return out


def select(scenarios: Sequence[Scenario], ids: Sequence[str] = (), tags: Sequence[str] = (),
           sites: Sequence[ProviderName] = tuple(ProviderName)) -> list[Scenario]:
    """Scenarios named by `ids` (all when none) that carry every tag of `tags` and ask only `sites` (`check
    --provider`), in file order."""
    known = {s.id for s in scenarios}
    problems = [f"--id {i}: no such scenario (known: {', '.join(sorted(known))})" for i in ids if i not in known]
    problems += [f"--tag {t}: unknown tag (tags are {', '.join(t.value for t in Tag)})" for t in tags
                 if t not in Tag._value2member_map_]
    problems += [f"--id {s.id}: it asks {', '.join(p.value for p in s.providers if p not in sites)}, which --provider "
                 "leaves out (--provider all asks every site)" for s in scenarios
                 if s.id in ids and not set(s.providers) <= set(sites)]
    if problems:
        raise ScenarioError(problems)
    chosen = [s for s in scenarios if (not ids or s.id in ids) and all(Tag(t) in s.tags for t in tags)
              and set(s.providers) <= set(sites)]
    if not chosen:
        raise ScenarioError([f"no scenario has every tag of {', '.join(tags)}" + (
            f" among {', '.join(ids)}" if ids else "")])
    return chosen


def plan(chosen: Sequence[Scenario], every: Sequence[Scenario]) -> list[tuple[Scenario, bool]]:
    """The run order: each chosen scenario in file order, a follow-up right after the scenario whose conversation it
    continues (that one added when it was not chosen). The flag says "added only to open the conversation"."""
    by_id = {s.id: s for s in every}
    followers: dict[str, list[Scenario]] = {}
    for s in chosen:
        if s.follow_up is not None:
            followers.setdefault(s.follow_up, []).append(s)
    out: list[tuple[Scenario, bool]] = []
    placed: set[str] = set()
    for s in chosen:  # a parent is listed before its follow-ups (load checks it), so it is met first
        if s.id in placed:
            continue
        head = s if s.follow_up is None else by_id[s.follow_up]
        out.append((head, head is not s))
        placed.add(head.id)
        for f in followers.get(head.id, []):
            out.append((f, False))
            placed.add(f.id)
    return out
