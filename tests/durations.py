"""Write tests/durations.json from this checkout's last full run (pytest's cache), for the run order of a fresh
clone (tests/conftest.py `run_order`). Run after a full, idle `python -m pytest`: ``python -m tests.durations``."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE.parent / ".pytest_cache" / "v" / "ai_bridge" / "durations"
MIN_S = 2.0  # shorter tests are guessed by kind well enough


def main() -> None:
    known: dict[str, float] = json.loads(CACHE.read_text())
    kept = {k: round(v, 1) for k, v in sorted(known.items()) if v >= MIN_S}
    (HERE / "durations.json").write_text(json.dumps(kept, indent=0) + "\n")
    print(f"tests/durations.json: {len(kept)} of {len(known)} tests")


if __name__ == "__main__":
    main()
