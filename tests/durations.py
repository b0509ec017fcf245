"""Write tests/durations.json from this checkout's last full run (pytest's cache), for the run order of a fresh
clone (tests/conftest.py `run_order`). Run after a full, idle `python -m pytest`: ``python -m tests.durations``.
Each test of 2 s or more: [wall seconds, CPU seconds] (its process's and its reaped children's)."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE.parent / ".pytest_cache" / "v" / "ai_bridge"
MIN_S = 2.0  # shorter tests are guessed by kind well enough


def main() -> None:
    known: dict[str, float] = json.loads((CACHE / "durations").read_text())
    cpu: dict[str, float] = json.loads((CACHE / "cpu").read_text())
    kept = {k: [round(v, 1), round(cpu[k], 1)] for k, v in sorted(known.items()) if v >= MIN_S and k in cpu}
    lines = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in kept.items()]  # one test a line: readable diffs
    (HERE / "durations.json").write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"tests/durations.json: {len(kept)} of {len(known)} tests")


if __name__ == "__main__":
    main()
