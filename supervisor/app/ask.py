"""``ai-bridge ask``: the same actor tree as ``serve`` minus the MCP front, asked from the terminal."""

from __future__ import annotations

import contextlib
import functools
import re
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
    Target,
    default_timeout_s,
    provider_address,
    upload_limits,
)

from .. import attachments, bundles
from ..config import Config
from ..errors import BridgeError, InvalidArgument
from ..progress import pace
from ..safetext import for_terminal, printable, printable_json
from ..savefiles import answer_folder
from . import open_bridge
from .providers import provider_tables

TOOLS = SITE_TOOLS  # the tools each site's ask takes


@attrs.frozen
class AskExtras:
    """`--file` patterns, `--attach`, `--dry-run`, `--model` / `--effort` / `--tool` (each ``NAME`` for every
    provider asked, or ``SITE:NAME`` for one), `--raw` and `--bundle` / `--no-bundle`."""

    files: tuple[str, ...] = ()
    attach: str = "upload"
    dry_run: bool = False
    models: tuple[str, ...] = ()
    efforts: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    raw: bool = False  # print answers as the page gave them (else control characters are shown escaped)
    bundle: bool | None = None  # text files as bundles: always, never, or past the site's limit (None)
    save_to: str | None = None  # where the answer's images and files go (default <state-dir>/files)
    conversation_urls: tuple[str, ...] = ()  # issue 38: each continues a conversation of the site it belongs to
    temporary: bool = False


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


def targets_of(config: Config, extras: AskExtras, providers: list[ProviderName]
               ) -> tuple[tuple[ProviderName, Target], ...]:
    """`--conversation-url` per site: each URL must be a conversation of a site this ask asks (one per site);
    `InvalidArgument` before anything opens."""
    out: dict[ProviderName, Target] = {}
    tables = {t.name: t for t in provider_tables(config)}
    for url in extras.conversation_urls:
        sites = [p for p in providers if p.value in tables and re.match(tables[p.value].conversation_re, url)]
        if not sites:
            raise InvalidArgument(f"--conversation-url {url[:200]!r} is not a conversation of "
                                  f"{' or '.join(p.display for p in providers)}",
                                  hint="Give the conversation's URL as the browser shows it (https://chatgpt.com/c/…, "
                                  "https://gemini.google.com/app/…); nothing was sent.")
        if sites[0] in out:
            raise InvalidArgument(f"two --conversation-url for {sites[0].display}", hint="Give one per site.")
        out[sites[0]] = Target(conversation_url=url)
    return tuple(out.items())


def progress_line(item: AskProgress) -> str:
    """`[chatgpt] thinking`, `[gemini] answering (1200 chars)`: one provider's phase, for stderr."""
    chars = f" ({item.chars} chars)" if item.phase is AskPhase.ANSWERING and item.chars else ""
    place = f" (place {item.place} in line)" if item.phase is AskPhase.QUEUED and item.place else ""
    return f"[{item.provider.value}] {item.phase.value}{chars}{place}"


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
        files = await attachments.select_files_async(Path.cwd(), extras.files, state_dir=config.state_dir,
                                                     max_files=bundles.max_selected(extras.bundle)) \
            if extras.files else ()
        providers = list(sites_named(provider))
        choices = choices_of(extras, providers)
        limits = upload_limits(providers)
        targets = targets_of(config, extras, providers)
        if extras.dry_run:
            report = bundles.dry_run(question, files, attach=extras.attach, bundle=extras.bundle, limits=limits)
            if choices:
                report["choices"] = {p.value: c.as_json() for p, c in choices}
            print(printable_json({"dryRun": report}, raw=extras.raw) if as_json
                  else printable(bundles.dry_run_text(report), raw=extras.raw))
            return 0
        # Inline, or copies of the checked bytes for the browser to upload (bundled past the site's limit).
        question, uploads = await bundles.prepare(question, files, attach=extras.attach, bundle=extras.bundle,
                                                  limits=limits, state_dir=config.state_dir)
        save_to = await trio.to_thread.run_sync(functools.partial(
            answer_folder, Path.cwd(), extras.save_to, config.state_dir, inside_root=False))
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
            msg = Ask(question, project, new_chat, wait_s, uuid.uuid4().hex, files=uploads, choices=choices,
                      targets=targets, temporary=extras.temporary, client="cli", save_to=save_to)
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
                            "model": r.model, **({"chosen": r.chosen.as_json()} if r.chosen else {}),
                            **({"files": [f.as_json() for f in r.files]} if r.files else {})}
            for f in r.files:  # on stderr with the progress: stdout stays the answer
                print(for_terminal(f"[{p.value}] saved {f.kind} {f.path} ({f.mime}, {f.size:,} bytes)"),
                      file=sys.stderr)
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
