"""Benchmark: console attach time, and what an attached console costs a concurrent ask — side by side in one run.

Real path: MCP stdio client → `ai-bridge serve` → extension in headless Chromium → fake ChatGPT (standard 1.3 s
scripted generation), plus the console over its Unix socket.

    .venv/bin/python -m tests.benchmarks.console_overhead [--asks 10]

Figures:
- attach: socket connect → banner received, and the first evaluation's round trip (in-process client), p50 / p90;
  `ai-bridge console -c 1` as a whole command (Python start-up included), p50;
- ask overhead (wall − scripted 1.3 s) p50 / p90 under three conditions, interleaved ask by ask so drift hits all
  alike: no console; a console attached and idle; a console attached and busy (tree() and tasks() every 100 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from tests.benchmarks.ask_overhead import SCRIPTED_MS, pct
from tests.e2e import Bridge, open_bridge
from tests.fakesites.fixture import start_fakesites

REPO = Path(__file__).resolve().parents[2]


class Console:
    """A minimal in-process console client (the JSON-lines wire format of actors/console.py)."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buf = b""

    @classmethod
    async def attach(cls, path: str) -> tuple[Console, float]:
        t0 = time.perf_counter()
        stream = await trio.open_unix_socket(path)
        con = cls(stream)
        await con.receive()  # the banner
        return con, (time.perf_counter() - t0) * 1000

    async def receive(self) -> dict[str, Any]:
        while b"\n" not in self.buf:
            data = await self.stream.receive_some(65536)
            if not data:
                raise EOFError
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        reply: dict[str, Any] = json.loads(line)
        return reply

    async def eval(self, src: str) -> str:
        await self.stream.send_all((json.dumps({"op": "eval", "src": src}) + "\n").encode())
        reply = await self.receive()
        assert not reply.get("error"), reply
        return str(reply["out"])


async def ask_once(b: Bridge, q: str) -> float:
    t0 = time.perf_counter()
    res = await b.call("ask_chatgpt_web", {"question": q})
    assert not res.is_error, res.content[0].text
    return (time.perf_counter() - t0) * 1000 - SCRIPTED_MS


async def main(asks: int) -> None:
    sites = start_fakesites()
    attach_ms: list[float] = []
    first_eval_ms: list[float] = []
    cli_ms: list[float] = []
    over: dict[str, list[float]] = {"none": [], "idle": [], "busy": []}
    busy_evals = 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            async with open_bridge(sites, Path(tmp), project="bench") as b:
                pid = (await b.status())["pid"]
                sock = json.loads((b.state_dir / "servers" / f"{pid}.json").read_text())["socket"]
                sites.chatgpt.set_next()  # the standard generation
                await ask_once(b, "Warm-up question number 0.")

                for _ in range(max(asks, 10)):
                    con, ms = await Console.attach(sock)
                    attach_ms.append(ms)
                    t0 = time.perf_counter()
                    await con.eval("tree()")
                    first_eval_ms.append((time.perf_counter() - t0) * 1000)
                    await con.stream.aclose()
                env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
                env["AI_BRIDGE_STATE_DIR"] = str(b.state_dir)
                for _ in range(5):
                    t0 = time.perf_counter()
                    await trio.run_process([sys.executable, "-m", "supervisor.app.cli", "console", "-c", "1"], env=env,
                                           cwd=REPO, capture_stdout=True)
                    cli_ms.append((time.perf_counter() - t0) * 1000)

                for i in range(asks):
                    for cond in ("none", "idle", "busy"):
                        q = f"Console benchmark {cond} {i}: what is {i} plus {i + 1}?"
                        if cond == "none":
                            over[cond].append(await ask_once(b, q))
                            continue
                        con, _ = await Console.attach(sock)
                        async with trio.open_nursery() as nursery:
                            if cond == "busy":
                                async def poll(con: Console = con) -> None:
                                    nonlocal busy_evals
                                    while True:
                                        await con.eval("tree()")
                                        await con.eval("tasks()")
                                        busy_evals += 2
                                        await trio.sleep(0.1)

                                nursery.start_soon(poll)
                            over[cond].append(await ask_once(b, q))
                            nursery.cancel_scope.cancel()
                        await con.stream.aclose()
    finally:
        sites.close()

    print(f"\nai-bridge console benchmark — {asks} asks per condition (interleaved), ChatGPT, scripted generation "
          f"{SCRIPTED_MS} ms\n")
    print(f"{'console attach: connect → banner, p50 / p90':<52}{statistics.median(attach_ms):>8.2f} ms"
          f"{pct(attach_ms, 90):>9.2f} ms")
    print(f"{'first evaluation (tree()) round trip, p50 / p90':<52}{statistics.median(first_eval_ms):>8.2f} ms"
          f"{pct(first_eval_ms, 90):>9.2f} ms")
    print(f"{'`ai-bridge console -c 1`, whole command, p50':<52}{statistics.median(cli_ms):>8.0f} ms")
    print(f"\n{'ask overhead (wall − scripted 1.3 s)':<40}{'no console':>14}{'idle console':>14}"
          f"{'busy console':>14}")
    for name, fn in (("p50", statistics.median), ("p90", lambda v: pct(v, 90))):
        vals = [fn(over[c]) for c in ("none", "idle", "busy")]
        print(f"{'  ' + name:<40}{vals[0]:>11.0f} ms{vals[1]:>11.0f} ms{vals[2]:>11.0f} ms")
    base = statistics.median(over["none"])
    print(f"{'  p50 difference vs no console':<40}{'':>14}{statistics.median(over['idle']) - base:>+11.0f} ms"
          f"{statistics.median(over['busy']) - base:>+11.0f} ms")
    spread = pct(over["none"], 90) - pct(over["none"], 10)
    print(f"\n(no-console p10–p90 spread: {spread:.0f} ms; busy console ran {busy_evals} evaluations during its asks)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--asks", type=int, default=10)
    trio.run(main, parser.parse_args().asks)
