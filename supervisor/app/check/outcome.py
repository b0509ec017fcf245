"""What a `check` run was asked to do (`Options`) and what each scenario's run gave (`Outcome`)."""

from __future__ import annotations

from pathlib import Path

import attrs

from actors.protocol.common import ProviderName
from actors.protocol.provider import AskResult

from ...errors import BridgeError
from .judge import Verdict
from .scenarios import Scenario


@attrs.frozen
class Options:
    scenario_files: tuple[Path, ...] = ()
    ids: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    list_only: bool = False
    dry_run: bool = False
    debug: bool = False
    provider: str = "both"  # --provider: the sites whose scenarios run (both: ChatGPT and Gemini; all: every site)


@attrs.define
class Outcome:
    """One scenario's run: what its asks returned, its verdicts, and what was kept to diagnose a failure."""

    scenario: Scenario
    index: int  # 1-based position in the run
    added: bool  # run only to open the conversation of a chosen follow-up
    status: str = "not run"  # "passed" | "failed" | "not run"
    reason: str | None = None  # why it failed without asking, or was not run
    started: float = 0.0  # wall clock, seconds
    wall_ms: int = 0
    results: dict[ProviderName, AskResult | BridgeError] = attrs.Factory(dict)
    verdicts: list[Verdict] = attrs.Factory(list)
    dumps: dict[ProviderName, list[dict[str, object]]] = attrs.Factory(dict)
    snapshots: dict[ProviderName, dict[str, object]] = attrs.Factory(dict)

    @property
    def failed_verdicts(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.passed]
