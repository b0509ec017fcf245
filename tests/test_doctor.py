"""`ai-bridge doctor`, the embedded default: real headless Chromium with our extension, every link checked."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from .conftest import REPO, serve_command
from .e2e import CHROMIUM, requires_chromium

pytestmark = [requires_chromium, pytest.mark.chromium]


async def test_doctor_passes_every_check(server_env: dict[str, str]) -> None:
    proc = await trio.run_process([*serve_command(), "doctor", f"--browser-path={CHROMIUM}"], env=server_env,
                                  cwd=REPO, capture_stdout=True, capture_stderr=True, check=False)
    out = proc.stdout.decode()
    assert proc.returncode == 0, out + proc.stderr.decode()
    for check in ("browser found", "discovery (loopback, web origins refused)", "browser launched, extension connected",
                  "relay round trip", "debugger attach on the self-test page"):
        line = next(ln for ln in out.splitlines() if ln.startswith(check))
        assert " ok " in line, line
    assert out.strip().endswith("all checks passed")


async def test_doctor_without_a_browser_says_how_to_fix(server_env: dict[str, str], tmp_path: Path) -> None:
    proc = await trio.run_process([*serve_command(), "doctor", f"--browser-path={tmp_path / 'no-such-chrome'}"],
                                  env=server_env, cwd=REPO, capture_stdout=True, capture_stderr=True, check=False)
    out = proc.stdout.decode()
    assert proc.returncode == 1
    assert "FAIL" in out and "apt-get install -y chromium" in out
