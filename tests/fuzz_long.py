"""The long fuzz run: the same properties as tests/test_fuzz.py with many more examples (thousands per target, 500
per live socket or process), in a private network namespace when possible. Prints how many inputs each target
tried and every failure Hypothesis found (with the shrunk input).

    python -m tests.fuzz_long            # about 10-20 minutes on 2 cores
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    env = {**os.environ, "AI_BRIDGE_FUZZ": "long"}
    # No faulthandler timeout: a long target runs past the suite's 240 s on purpose, and the traceback dump it
    # triggers can itself crash the interpreter (seen twice here as a SIGSEGV right after the dump).
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics",
           "-o", "faulthandler_timeout=0", "tests/test_fuzz.py"]
    if os.geteuid() == 0:
        cmd = ["unshare", "-n", "sh", "-c", "ip link set lo up && exec " + " ".join(cmd)]
    out = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    text = out.stdout + out.stderr
    print("target".ljust(62), "examples")
    for name, block in re.findall(r"tests/test_fuzz\.py::(\w+):\n(.*?)(?=\ntests/|\Z)", text, re.S):
        tried = sum(int(n) for n in re.findall(r"(\d+) passing", block))
        failing = sum(int(n) for n in re.findall(r"(\d+) failing", block))
        print(name.ljust(62), tried, f"({failing} failing)" if failing else "")
    os.environ["AI_BRIDGE_FUZZ"] = "long"
    from tests.test_fuzz import SESSION  # the long profile's session length

    print("\n(an example of the stdin and extension-reply targets is a whole session: one server process, or one"
          f" actor system, fed {SESSION * 4} stdin lines or {SESSION * 8} replies in turn)")
    failures = re.findall(r"Falsifying example:.*?(?=\n\n|\Z)", text, re.S)
    print(f"\n{len(failures)} failure(s)")
    for f in failures:
        print(f)
    print("\n" + (text.strip().splitlines() or ["(no output)"])[-1])
    return out.returncode


if __name__ == "__main__":
    sys.exit(main())
