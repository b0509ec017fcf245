"""``ai-bridge check``: the probe first, then the scenarios through the same actors as ``serve`` (docs/check.md).

The suite asks under a project of its own (`CHECK_PROJECT`), so the user's projects keep their conversations. Every
scenario starts a new chat, except a follow-up, which asks in the conversation of the scenario it follows (the run
order puts it right after that one). Single-provider scenarios of the two providers run side by side (each
provider's asks are serialized anyway); a scenario that asks both waits for both lanes, then runs alone.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import trio

from actors.protocol.common import ProviderName, sites_named
from actors.protocol.provider import (
    Ask,
    AskProgress,
    AskResult,
    ProbeReport,
    ProbeStatus,
    Snapshot,
    provider_address,
)

from ...config import Config
from ...errors import BridgeError, StateFileError
from ...files import read_private
from ...otp import Progress
from ...safetext import for_terminal
from .. import Bridge, open_bridge
from ..providers import SHIPPED
from . import report
from .judge import judge
from .outcome import Options, Outcome
from .scenarios import ScenarioError, load, plan, select

CHECK_PROJECT = "ai-bridge-check"
PROBE_TIMEOUT_S = 60.0
SNAPSHOT_TIMEOUT_S = 25.0
DUMP_LIMIT = 256 * 1024
FIRST_ANCHOR = {ProviderName(t.name): t.primary_anchor.value for t in SHIPPED}


def say(text: str) -> None:
    print(for_terminal(text), file=sys.stderr, flush=True)  # errors and notices quote the pages


async def check_main(config: Config, opts: Options) -> int:
    try:
        every = load(opts.scenario_files)
        chosen = select(every, opts.ids, opts.tags, sites_named(opts.provider))
    except ScenarioError as exc:
        for line in exc.problems:
            say(f"ai-bridge check: {line}")
        return 2
    order = plan(chosen, every)
    if opts.list_only or opts.dry_run:
        print(report.listing(order, config.response_timeout_s, dry_run=opts.dry_run))
        return 0
    outcomes = [Outcome(s, i + 1, added) for i, (s, added) in enumerate(order)]
    started = time.time()
    providers = list(dict.fromkeys(p for s, _ in order for p in s.providers))
    async with open_bridge(config) as bridge:
        say(f"check: probing {', '.join(p.value for p in providers)} (nothing is typed or sent)…")
        probe = await preflight(bridge, providers, full=opts.debug)
        runner = Runner(bridge, config, opts, len(outcomes), health_of(probe))
        await runner.run(outcomes)
    finished = time.time()
    data = report.as_json(outcomes, probe, config=config, opts=opts, project=CHECK_PROJECT, started=started,
                          finished=finished)
    print(for_terminal(report.summary(outcomes, finished - started)))
    try:
        paths = await trio.to_thread.run_sync(report.write, config.state_dir, data, report.markdown(data))
        say(f"check: reports written to {paths[0]} and {paths[1]}")
    except (OSError, StateFileError) as exc:
        say(f"check: warning: could not write the reports: {exc}")
    sys.stdout.flush()
    return 0 if all(o.status == "passed" for o in outcomes) else 1


# -- the probe ------------------------------------------------------------------------------------------------------

ProbeResults = dict[ProviderName, ProbeReport | BridgeError]


async def preflight(bridge: Bridge, providers: Sequence[ProviderName], *, full: bool) -> ProbeResults:
    """The no-send probe of `doctor --live`, on the check's own conversations: one line per provider on stderr (the
    whole table when `full`, or when something is broken; the reports keep every item)."""
    from ..probe import probe_providers, render_table

    results = await probe_providers(bridge, providers, timeout_s=PROBE_TIMEOUT_S, project=CHECK_PROJECT)
    health = health_of(results)
    if full or any(health.values()):
        say(render_table(results))
    for p, r in results.items():
        if health[p] is not None:
            say(f"check: probe: {p.value} BROKEN: {health[p]}")
        elif isinstance(r, ProbeReport):
            fallback = [i.entry for i in r.items if i.status is ProbeStatus.FALLBACK]
            say(f"check: probe: {p.value} healthy (language {r.language or 'unknown'}"
                + (f"; fallback selectors in use: {', '.join(fallback)}" if fallback else "")
                + ("; its kept conversation is gone from the site: probed a new chat" if r.conversation_gone else "")
                + ")")
    return results


def health_of(results: ProbeResults) -> dict[ProviderName, str | None]:
    """None for a provider whose probe found nothing required missing; else what is wrong, for the scenarios that
    are then not asked."""
    out: dict[ProviderName, str | None] = {}
    for p, r in results.items():
        if isinstance(r, BridgeError):
            out[p] = f"the probe of {p.value} failed: [{r.code}] {r.message}"
        elif r.signed_in is False:
            out[p] = f"{p.value} is not signed in (probe)"
        elif r.broken:
            out[p] = f"the probe found {p.value}'s " + ", ".join(
                f"{i.entry} missing" + (f" ({i.detail})" if i.detail else "") for i in r.broken)
        else:
            out[p] = None
    return out


# -- the scenarios ---------------------------------------------------------------------------------------------------


class Runner:
    def __init__(self, bridge: Bridge, config: Config, opts: Options, total: int,
                 health: dict[ProviderName, str | None]) -> None:
        self.bridge = bridge
        self.config = config
        self.opts = opts
        self.total = total
        self.health = health
        self.by_id: dict[str, Outcome] = {}

    async def run(self, outcomes: list[Outcome]) -> None:
        lane: list[Outcome] = []
        for o in outcomes:
            if len(o.scenario.providers) > 1:
                await self.lanes(lane)
                lane = []
                await self.one(o)
            else:
                lane.append(o)
        await self.lanes(lane)

    async def lanes(self, outcomes: list[Outcome]) -> None:
        """Each provider's scenarios in order; the two providers side by side."""
        by_provider: dict[ProviderName, list[Outcome]] = {}
        for o in outcomes:
            by_provider.setdefault(o.scenario.providers[0], []).append(o)

        async def lane(items: list[Outcome]) -> None:
            for o in items:
                await self.one(o)

        async with trio.open_nursery() as nursery:
            for items in by_provider.values():
                nursery.start_soon(lane, items)

    async def one(self, o: Outcome) -> None:
        s = o.scenario
        self.by_id[s.id] = o
        tag = f"[{o.index}/{self.total}] {s.id}"
        broken = [why for p in s.providers if (why := self.health.get(p))]
        conversation: str | None = None
        if broken:
            o.status, o.reason = "failed", "not asked: " + "; ".join(broken)
        elif s.follow_up is not None:
            parent = self.by_id.get(s.follow_up)
            got = parent.results.get(s.providers[0]) if parent is not None else None
            if isinstance(got, AskResult):
                conversation = got.url
            else:
                o.status, o.reason = "failed", f"not asked: {s.follow_up} did not open a conversation to follow up"
        if o.status == "failed":
            say(f"check: {tag} FAIL {o.reason}")
            return
        how = f"follow-up in {s.follow_up}'s conversation" if s.follow_up else "new chat"
        say(f"check: {tag} asking {' + '.join(p.value for p in s.providers)} ({how})…")
        o.started = time.time()
        t0 = trio.current_time()
        deadline_s = s.deadline_s(self.config.response_timeout_s)

        async def ask(p: ProviderName) -> None:
            msg = Ask(s.question, CHECK_PROJECT, new_chat=s.follow_up is None, timeout_s=deadline_s,
                      ask_id=f"check-{s.id}-{uuid.uuid4().hex[:8]}", client="check")
            try:
                o.results[p] = await self.bridge.ref(provider_address(p)).call(
                    msg, timeout=msg.call_timeout_s, on_progress=self.progress(tag))
            except BridgeError as exc:
                o.results[p] = exc

        async with trio.open_nursery() as nursery:
            for p in s.providers:
                nursery.start_soon(ask, p)
        o.wall_ms = round((trio.current_time() - t0) * 1000)
        o.verdicts = judge(s, o.results, first_anchor=FIRST_ANCHOR, conversation=conversation)
        o.status = "passed" if not o.failed_verdicts else "failed"
        if o.status == "failed" or self.opts.debug:
            await self.keep_evidence(o)
        say(f"check: {tag} {'PASS' if o.status == 'passed' else 'FAIL'} in {o.wall_ms / 1000:.1f} s — "
            + "; ".join(report.timing_line(p, r) for p, r in o.results.items())
            + "".join(f"\n    failed: {v.line()}" for v in o.failed_verdicts))

    def progress(self, tag: str) -> Callable[[Progress], None]:
        seen: set[tuple[str, str]] = set()

        def on_progress(item: Progress) -> None:
            if not self.opts.debug or not isinstance(item, AskProgress):
                return
            key = (item.provider.value, item.phase.value)
            if key not in seen:  # each phase once: answering reports every half second
                seen.add(key)
                say(f"check: {tag} [{item.provider.value}] {item.phase.value}")

        return on_progress

    async def keep_evidence(self, o: Outcome) -> None:
        """For a failure (or with --debug): the debug dumps the provider actor wrote during the scenario, and when it
        wrote none, a snapshot of the page as the scenario left it."""
        until = time.time()
        for p in o.scenario.providers:
            found = await trio.to_thread.run_sync(
                dumps_between, self.config.state_dir / "debug", p, o.started - 0.5, until + 0.5)
            if found:
                o.dumps[p] = found
            if found and not self.opts.debug:
                continue
            try:
                snap = await self.bridge.ref(provider_address(p)).call(
                    Snapshot(max_text=2000, project=CHECK_PROJECT), timeout=SNAPSHOT_TIMEOUT_S)
            except BridgeError as exc:
                o.snapshots[p] = {"error": exc.as_dict()}
                continue
            shot = snap.as_json()
            if self.config.private_text:
                shot["text"] = f"[{len(snap.text)} characters, not kept]"
            o.snapshots[p] = shot


def dumps_between(folder: Path, provider: ProviderName, since: float, until: float) -> list[dict[str, object]]:
    """The debug dumps (seed 9.4) the provider actor wrote in [since, until]: ``<provider>-<time>-<why>.json``."""
    out: list[dict[str, object]] = []
    try:
        candidates = sorted(folder.glob(f"{provider.value}-*.json"))
    except OSError:
        return out
    for path in candidates:
        try:
            mtime = path.stat().st_mtime
            if not since <= mtime <= until:
                continue
            raw = read_private(path, DUMP_LIMIT)
        except (OSError, StateFileError) as exc:
            out.append({"path": str(path), "error": str(exc)})
            continue
        if raw is None:
            continue
        try:
            out.append({"path": str(path), "dump": json.loads(raw)})
        except ValueError as exc:
            out.append({"path": str(path), "error": f"not JSON: {exc}"})
    return out
