"""``ai-bridge ask``: the same actor tree as ``serve`` minus the MCP front, asked from the terminal."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import trio

from actors.protocol.common import ProviderName
from actors.protocol.provider import Ask, AskPhase, AskProgress, AskResult, provider_address

from ..config import Config
from ..errors import BridgeError
from . import open_bridge


async def ask_main(config: Config, question: str, provider: str, new_chat: bool, timeout_s: float | None,
                   as_json: bool) -> int:
    if not question.strip():
        print("ai-bridge ask: the question is empty", file=sys.stderr)
        return 2
    project = config.project or Path.cwd().name
    wait_s = timeout_s if timeout_s is not None else config.response_timeout_s
    providers = list(ProviderName) if provider == "both" else [ProviderName(provider)]
    results: dict[ProviderName, AskResult | BridgeError] = {}
    last_chars: dict[ProviderName, int] = {}

    def on_progress(item: object) -> None:
        if not isinstance(item, AskProgress):
            return
        if item.phase is AskPhase.ANSWERING:
            if item.chars - last_chars.get(item.provider, 0) < 200:
                return
            last_chars[item.provider] = item.chars
            print(f"[{item.provider.value}] answering… {item.chars} chars", file=sys.stderr, flush=True)
        else:
            print(f"[{item.provider.value}] {item.phase.value}", file=sys.stderr, flush=True)

    async with open_bridge(config) as bridge:

        async def one(p: ProviderName) -> None:
            msg = Ask(question.strip(), project, new_chat, wait_s, uuid.uuid4().hex)
            try:
                results[p] = await bridge.ref(provider_address(p)).call(msg, timeout=msg.call_timeout_s,
                                                                        on_progress=on_progress)
            except BridgeError as exc:
                results[p] = exc

        async with trio.open_nursery() as asks:
            for p in providers:
                asks.start_soon(one, p)

    failed = 0
    out: dict[str, object] = {}
    for p in providers:
        r = results[p]
        if isinstance(r, BridgeError):
            failed += 1
            out[p.value] = {"error": r.as_dict()}
            print(f"ai-bridge: {p.value} failed: [{r.code}] {r}", file=sys.stderr)
        else:
            out[p.value] = {"answer": r.answer, "url": r.url, "timings": r.timings.as_json(), "retries": r.retries}
    if as_json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        for p in providers:
            r = results[p]
            if isinstance(r, BridgeError):
                continue
            if len(providers) > 1:
                print(f"## {p.value}\n")
            print(r.answer + ("\n" if len(providers) > 1 else ""))
    sys.stdout.flush()
    return 1 if failed == len(providers) else 0
