"""Skips that cannot hide a broken run (issue 41): in CI a test skipped because the machine lacks a tool (Chromium,
node, npm or its registry) fails instead; elsewhere it stays a skip, and other skips stay skips everywhere."""

from __future__ import annotations

import pytest

from .conftest import missing_tool, missing_tool_fails_in_ci


def skipped(reason: str, when: str = "setup") -> pytest.TestReport:
    return pytest.TestReport("tests/test_x.py::test_x", ("tests/test_x.py", 1, "test_x"), {}, "skipped",
                             ("tests/test_x.py", 1, f"Skipped: {reason}"), when)


@pytest.mark.parametrize("ci", ["true", "1", "TRUE"])
def test_in_ci_a_missing_tool_fails_its_test(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("CI", ci)
    for when in ("setup", "call"):  # a skipif mark, or a skip from a fixture or the test
        report = skipped(missing_tool("node is not installed (apt-get install -y nodejs)"), when)
        missing_tool_fails_in_ci(report)
        assert report.failed and "CI=true: node is not installed (apt-get install -y nodejs)" in str(report.longrepr)


@pytest.mark.parametrize("ci", [None, "false", ""])
def test_outside_ci_a_missing_tool_is_a_skip(monkeypatch: pytest.MonkeyPatch, ci: str | None) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    report = skipped(missing_tool("Chromium not found at /usr/lib/chromium/chromium"))
    missing_tool_fails_in_ci(report)
    assert report.skipped


def test_other_skips_stay_skips_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    report = skipped("running a process as another user needs root and setpriv")
    missing_tool_fails_in_ci(report)
    assert report.skipped
