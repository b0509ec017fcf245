"""Shared fixtures. Time-driven logic runs on trio's MockClock; real processes get their own state dir."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio.testing

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=0)


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


def find_actor(status: dict[str, Any], actor_id: str) -> dict[str, Any]:
    """An actor's entry, at any depth, in bridge_status's actor tree."""
    def walk(node: dict[str, Any]) -> dict[str, Any] | None:
        for c in node.get("children", []):
            if c["id"] == actor_id:
                return c  # type: ignore[no-any-return]
            if (found := walk(c)) is not None:
                return found
        return None

    found = walk(status["actors"])
    assert found is not None, f"no actor {actor_id!r} in {status['actors']}"
    return found


def process_alive(pid: int) -> bool:
    """Is `pid` a live process? A zombie counts as gone (its parent has not reaped it yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def serve_command() -> list[str]:
    """How tests start the real server: the installed console script's module, with this interpreter."""
    return [sys.executable, "-m", "supervisor.app.cli"]


@pytest.fixture
def server_env(state_dir: Path, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env.update({
        "AI_BRIDGE_STATE_DIR": str(state_dir),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONUNBUFFERED": "1",
    })
    return env


@pytest.fixture(scope="session")
def fakesites_session():  # type: ignore[no-untyped-def]
    from .fakesites.fixture import start_fakesites

    sites = start_fakesites()
    try:
        yield sites
    finally:
        sites.close()


@pytest.fixture
def sites(fakesites_session):  # type: ignore[no-untyped-def]
    """The fake ChatGPT and Gemini sites, reset for each test."""
    fakesites_session.reset()
    return fakesites_session
