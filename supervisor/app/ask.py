"""``ai-bridge ask``: the same actor tree as ``serve`` minus the MCP front, asked from the terminal."""

from __future__ import annotations

import contextlib
import sys
import uuid
from pathlib import Path

import attrs
import trio

from actors.protocol.common import ProviderName, sites_named
from actors.protocol.provider import (
    SITE_TOOLS,
    Ask,
    AskPhase,
    AskProgress,
    AskResult,
    Choice,
    default_timeout_s,
    provider_address,
)

from .. import attachments
from ..config import Config
from ..errors import BridgeError, InvalidArgument
from ..progress import pace
from ..safetext import for_terminal, printable, printable_json
from . import open_bridge

TOOLS = SITE_TOOLS  # the tools each site's ask takes


@attrs.frozen
class AskExtras:
    """`--file` patterns, `--attach`, `--dry-run`, `--model` / `--effort` / `--tool` (each ``NAME`` for every
    provider asked, or ``SITE:NAME`` for one) and `--raw`."""

    files: tuple[str, ...] = ()
    attach: str = "upload"
    dry_run: bool = False
    models: tuple[str, ...] = ()
    efforts: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    raw: bool = False  # print answers as the page gave them (else control characters are shown escaped)


def choices_of(extras: AskExtras, providers: list[ProviderName]) -> tuple[tuple[ProviderName, Choice], ...]:
    """The flags as one `Choice` per provider; `BridgeError` (InvalidArgument) for a flag that names no provider asked,
    or a tool the site does not have."""

    def split(value: str) -> tuple[list[ProviderName], str]:
        site, sep, name = value.partition(":")
        if sep and site.strip().lower() in {p.value for p in ProviderName}:
            wanted = ProviderName(site.strip().lower())
            if wanted not in providers:
                raise InvalidArgument(f"{value!r} is for {wanted.value}, which this ask does not ask",
                                      hint="Ask that site too (--provider all), or leave the site out.")
            return [wanted], name.strip()
        return list(providers), value.strip()

    out = {p: Choice() for p in providers}
    for field, values in (("model", extras.models), ("effort", extras.efforts)):
        for value in values:
            targets, name = split(value)
            if not name:
                raise InvalidArgument(f"--{field} {value!r} names nothing")
            for p in targets:
                out[p] = attrs.evolve(out[p], model=name) if field == "model" else attrs.evolve(out[p], effort=name)
    for value in extras.tools:
        targets, name = split(value)
        for p in targets:
            if name.lower() not in TOOLS.get(p, ()):
                raise InvalidArgument(f"--tool {value!r}: {p.value} has no tool {name!r}",
                                      hint=f"{p.value} has: {', '.join(TOOLS.get(p, ())) or 'none'}; SITE:NAME "
                                      "names one site.")
            out[p] = attrs.evolve(out[p], tools=(*out[p].tools, name.lower()))
    return tuple((p, c) for p, c in out.items() if c)


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
        files = await attachments.select_files_async(Path.cwd(), extras.files, state_dir=config.state_dir) \
            if extras.files else ()
        providers = list(sites_named(provider))
        choices = choices_of(extras, providers)
        if extras.dry_run:
            report = attachments.dry_run(question, files, extras.attach)
            if choices:
                report["choices"] = {p.value: c.as_json() for p, c in choices}
            print(printable_json({"dryRun": report}, raw=extras.raw) if as_json
                  else printable(attachments.dry_run_text(report), raw=extras.raw))
            return 0
        uploads: tuple[str, ...] = ()
        if files and extras.attach == "inline":
            question = attachments.inline_prompt(question, files)
        elif files:  # the browser uploads copies of the bytes that were checked
            uploads = await attachments.stage_async(files, config.state_dir)
    except BridgeError as exc:
        print(for_terminal(f"ai-bridge ask: [{exc.code}] {exc}"), file=sys.stderr)
        return 2
    project = config.project or Path.cwd().name
    wait_s = timeout_s if timeout_s is not None else default_timeout_s(
        config.response_timeout_s, " ".join(c.words() for _, c in choices))
    results: dict[ProviderName, AskResult | BridgeError] = {}
    send, recv = trio.open_memory_channel[AskProgress](256)

    def on_progress(item: object) -> None:
        if isinstance(item, AskProgress):
            with contextlib.suppress(trio.WouldBlock):
                send.send_nowait(item)  # progress is advisory: never block an actor on the terminal

    async with open_bridge(config) as bridge:

        async def one(p: ProviderName) -> None:
            msg = Ask(question, project, new_chat, wait_s, uuid.uuid4().hex, files=uploads, choices=choices)
            try:
                results[p] = await bridge.ref(provider_address(p)).call(msg, timeout=msg.call_timeout_s,
                                                                        on_progress=on_progress)
            except BridgeError as exc:
                results[p] = exc

        try:
            async with trio.open_nursery() as narrating:
                narrating.start_soon(narrate, recv)
                async with send, trio.open_nursery() as asks:
                    for p in providers:
                        asks.start_soon(one, p)
        finally:
            attachments.unstage(uploads)

    return print_results(providers, results, as_json, raw=extras.raw)


def print_results(providers: list[ProviderName], results: dict[ProviderName, AskResult | BridgeError],
                  as_json: bool, *, raw: bool = False) -> int:
    """The answers on stdout, the errors on stderr; what came from a page through `printable` (shown, not obeyed
    by the terminal) unless `raw`. Exit 1 when every provider failed."""
    failed = 0
    out: dict[str, object] = {}
    for p in providers:
        r = results[p]
        if isinstance(r, BridgeError):
            failed += 1
            out[p.value] = {"error": r.as_dict()}
            print(for_terminal(f"ai-bridge: {p.value} failed: [{r.code}] {r}"), file=sys.stderr)  # page text
        else:
            out[p.value] = {"answer": r.answer, "url": r.url, "timings": r.timings.as_json(), "retries": r.retries,
                            "model": r.model, **({"chosen": r.chosen.as_json()} if r.chosen else {})}
    if as_json:
        print(printable_json(out, raw=raw))
    else:
        for p in providers:
            r = results[p]
            if isinstance(r, BridgeError):
                continue
            if len(providers) > 1:
                print(f"## {p.value}\n")
            print(printable(r.answer, raw=raw) + ("\n" if len(providers) > 1 else ""))
    sys.stdout.flush()
    return 1 if failed == len(providers) else 0
