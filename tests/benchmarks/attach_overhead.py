"""Benchmark (issue 20): the time from the tool call to the question sent, with 3 files of 100 KB attached through the
site's upload, against the same question without files; per provider, on the fakes' 2026 pages.

Real path: MCP stdio client → `ai-bridge serve` → extension in headless Chromium → the fake sites, whose chips show
progress for `uploadMs` (0 here: only the real work is measured — the CDP file input, the page's upload POST of the
bytes, the chips watched until uploaded). "Sent" is the fake's own `receivedAtMs` (the moment its backend got the
message), on the same wall clock as the call's start. Each ask is a new chat on a reused tab.

    .venv/bin/python -m tests.benchmarks.attach_overhead [--asks 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import trio

from tests.conftest import REPO
from tests.e2e import open_bridge
from tests.fakesites.fixture import start_fakesites

TOOL = {"chatgpt": "ask_chatgpt_web", "gemini": "ask_gemini_web"}
FAST = {"chunks": 2, "intervalMs": 20, "firstTokenMs": 50}


async def main(asks: int) -> None:
    rel = f".test-cache/bench-attach-{uuid.uuid4().hex[:6]}"
    folder = REPO / rel
    folder.mkdir(parents=True)
    for i in range(3):
        (folder / f"part{i}.txt").write_bytes(os.urandom(50 * 1024).hex().encode())  # 100 KB of text each
    sites = start_fakesites()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            async with open_bridge(sites, Path(tmp), project="bench") as b:
                for provider in ("chatgpt", "gemini"):
                    site = getattr(sites, provider)
                    site.control({"page": {"uploadMs": 0}})
                    site.control({"next": FAST, "count": None})
                    await b.call(TOOL[provider], {"question": "Warm up: what is 1 plus 1?", "new_chat": True})
                    rows: dict[str, list[float]] = {"no files": [], "3 x 100 KB": []}
                    for n in range(asks):
                        for label, files in (("no files", None), ("3 x 100 KB", [f"{rel}/*.txt"])):
                            args: dict[str, object] = {"question": f"Question {n} {label}: what is 2 plus {n}?",
                                                       "new_chat": True, "timeout_s": 60}
                            if files:
                                args["files"] = files
                            t0 = time.time() * 1000
                            res = await b.call(TOOL[provider], args)
                            assert not res.is_error, res.content[0].text
                            entry = site.log()[-1]
                            rows[label].append(entry["receivedAtMs"] - t0)
                    for label, ms in rows.items():
                        print(f"{provider:8} {label:11} call → sent  p50 {statistics.median(ms):7.0f} ms  "
                              f"min {min(ms):6.0f}  max {max(ms):6.0f}  (n={len(ms)})")
    finally:
        sites.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--asks", type=int, default=5)
    trio.run(main, ap.parse_args().asks)
