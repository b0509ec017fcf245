"""The mutation gate's list still fits the code (tests/mutation_gate.py; CI runs the gate itself): every text a
mutation finds is in its file exactly once, every guard it names exists. A refactor that moves a guarded line fails
here at once, with the mutation's name, instead of leaving the gate to mutate nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from .mutation_gate import MUTATIONS, GateError, Mutation, apply, check


def test_every_mutation_still_fits_the_code() -> None:
    assert check(MUTATIONS) == []


def test_a_mutation_whose_text_is_gone_is_named_not_skipped(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\nx = 1\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    gone = Mutation("gone", "p", "a.py", "y = 2", "y = 3", ("tests/test_a.py::test_a",))
    twice = Mutation("twice", "p", "a.py", "x = 1", "x = 2", ("tests/test_a.py::test_b",))
    problems = check([gone, twice], root=tmp_path)
    assert problems == ["gone: a.py has the text to find 0 times (must be once): 'y = 2'",
                        "twice: a.py has the text to find 2 times (must be once): 'x = 1'",
                        "twice: tests/test_a.py has no test test_b"]
    with pytest.raises(GateError, match=r"gone: a\.py has the text to find 0 times"):
        apply(gone, tmp_path)
