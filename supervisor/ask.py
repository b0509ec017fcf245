"""``ai-bridge ask``: the same actor tree as ``serve`` minus the MCP front, asked from the terminal."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import trio

from .app import serve
from .config import Config
from .errors import BridgeError


async def ask_main(config: Config, question: str, provider: str, new_chat: bool, timeout_s: float | None,
                   as_json: bool) -> int:
    from actors.messages import Ask, AskProgress, AskResult

    if not question.strip():
        print("ai-bridge ask: the question is empty", file=sys.stderr)
        return 2
    project = config.project or Path.cwd().name
    wait_s = timeout_s if timeout_s is not None else config.response_timeout_s
    providers = ["chatgpt", "gemini"] if provider == "both" else [provider]
    results: dict[str, AskResult | BridgeError] = {}
    stop = trio.Event()
    last_chars: dict[str, int] = {}

    def on_progress(item: Any) -> None:
        if isinstance(item, AskProgress):
            if item.phase == "answering":
                if item.chars - last_chars.get(item.provider, 0) < 200:
                    return
                last_chars[item.provider] = item.chars
                print(f"[{item.provider}] answering… {item.chars} chars", file=sys.stderr, flush=True)
            else:
                print(f"[{item.provider}] {item.phase}", file=sys.stderr, flush=True)

    async with trio.open_nursery() as nursery:
        runtime = await nursery.start(lambda task_status: serve(config, with_front=False, stop=stop,
                                                                task_status=task_status))

        async def one(p: str) -> None:
            msg = Ask(question, project, new_chat, wait_s, uuid.uuid4().hex)
            try:
                results[p] = await runtime.registry.ref(p).call(msg, timeout=msg.call_timeout_s,
                                                                on_progress=on_progress)
            except BridgeError as exc:
                results[p] = exc

        async with trio.open_nursery() as asks:
            for p in providers:
                asks.start_soon(one, p)
        stop.set()

    failed = 0
    out: dict[str, Any] = {}
    for p in providers:
        r = results[p]
        if isinstance(r, BridgeError):
            failed += 1
            out[p] = {"error": r.as_dict()}
            print(f"ai-bridge: {p} failed: [{r.code}] {r}", file=sys.stderr)
        else:
            out[p] = {"answer": r.answer, "url": r.url, "timings": r.timings, "retries": r.retries}
    if as_json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        for p in providers:
            r = results[p]
            if isinstance(r, BridgeError):
                continue
            if len(providers) > 1:
                print(f"## {p}\n")
            print(r.answer + ("\n" if len(providers) > 1 else ""))
    sys.stdout.flush()
    return 1 if failed == len(providers) else 0
