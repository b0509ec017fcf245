"""``ai-bridge ask``: the same actor tree as ``serve`` minus the MCP front, asked from the terminal."""

from __future__ import annotations

import contextlib
import json
import sys
import uuid
from pathlib import Path

import attrs
import trio

from actors.protocol.common import ProviderName
from actors.protocol.provider import Ask, AskPhase, AskProgress, AskResult, provider_address

from .. import attachments
from ..config import Config
from ..errors import BridgeError
from ..progress import pace
from . import open_bridge


@attrs.frozen
class AskExtras:
    """`--file` patterns, `--attach`, `--dry-run`, `--model` (ChatGPT) and `--mode` (Gemini)."""

    files: tuple[str, ...] = ()
    attach: str = "upload"
    dry_run: bool = False
    model: str = ""
    mode: str = ""


def progress_line(item: AskProgress) -> str:
    """`[chatgpt] thinking`, `[gemini] answering (1200 chars)`: one provider's phase, for stderr."""
    chars = f" ({item.chars} chars)" if item.phase is AskPhase.ANSWERING and item.chars else ""
    return f"[{item.provider.value}] {item.phase.value}{chars}"


async def narrate(items: trio.MemoryReceiveChannel[AskProgress]) -> None:
    """Each provider's phase once as it changes; while it stays, a heartbeat every 20 s with the elapsed time."""
    async def say(line: str) -> bool:
        print(line, file=sys.stderr, flush=True)
        return True

    await pace(items, say, group=lambda i: i.provider, key=lambda i: i.phase, line=progress_line)


async def ask_main(config: Config, question: str, provider: str, new_chat: bool, timeout_s: float | None,
                   as_json: bool, extras: AskExtras = AskExtras()) -> int:
    if not question.strip():
        print("ai-bridge ask: the question is empty", file=sys.stderr)
        return 2
    question = question.strip()
    try:  # the files are checked (and a dry run answered) before any browser is involved
        files = attachments.select_files(Path.cwd(), extras.files, state_dir=config.state_dir) \
            if extras.files else ()
        if extras.dry_run:
            report = attachments.dry_run(question, files, extras.attach)
            report.update({k: v for k, v in (("model", extras.model), ("mode", extras.mode)) if v})
            print(json.dumps({"dryRun": report}, indent=2, ensure_ascii=False) if as_json
                  else attachments.dry_run_text(report))
            return 0
        uploads: tuple[str, ...] = ()
        if files and extras.attach == "inline":
            question = attachments.inline_prompt(question, files)
        else:
            uploads = tuple(str(f.path) for f in files)
    except BridgeError as exc:
        print(f"ai-bridge ask: [{exc.code}] {exc}", file=sys.stderr)
        return 2
    project = config.project or Path.cwd().name
    wait_s = timeout_s if timeout_s is not None else config.response_timeout_s
    providers = list(ProviderName) if provider == "both" else [ProviderName(provider)]
    results: dict[ProviderName, AskResult | BridgeError] = {}
    send, recv = trio.open_memory_channel[AskProgress](256)

    def on_progress(item: object) -> None:
        if isinstance(item, AskProgress):
            with contextlib.suppress(trio.WouldBlock):
                send.send_nowait(item)  # progress is advisory: never block an actor on the terminal

    async with open_bridge(config) as bridge:

        async def one(p: ProviderName) -> None:
            msg = Ask(question, project, new_chat, wait_s, uuid.uuid4().hex, files=uploads, model=extras.model,
                      mode=extras.mode)
            try:
                results[p] = await bridge.ref(provider_address(p)).call(msg, timeout=msg.call_timeout_s,
                                                                        on_progress=on_progress)
            except BridgeError as exc:
                results[p] = exc

        async with trio.open_nursery() as narrating:
            narrating.start_soon(narrate, recv)
            async with send, trio.open_nursery() as asks:
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
            out[p.value] = {"answer": r.answer, "url": r.url, "timings": r.timings.as_json(), "retries": r.retries,
                            "model": r.model}
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
