"""The no-send health probe of the provider pages: `doctor --live` prints it, `check` runs it first.

`probe_providers` asks each provider actor for a `Probe` (the tab picked or opened as an ask would, nothing typed or
sent) and gathers the reports; `render_table` and `reports_json` turn them into the human table and the JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import trio

from actors.protocol.common import ProviderName
from actors.protocol.provider import Probe, ProbeReport, ProbeStatus, provider_address

from ..errors import BridgeError
from . import Bridge

ProbeResults = dict[ProviderName, ProbeReport | BridgeError]


async def probe_providers(bridge: Bridge, providers: Iterable[ProviderName], *, timeout_s: float = 60.0,
                          project: str | None = None, choices: bool = False) -> ProbeResults:
    """Probe the providers in parallel. Each gets a `ProbeReport`, or the typed error that stopped its probe (no
    browser, the tab could not be opened, the deadline). `project`: whose kept conversation to look at (read
    only), so the response and feedback selectors can be checked on an earlier answer."""
    results: ProbeResults = {}

    async def one(p: ProviderName) -> None:
        msg = Probe(project=project, timeout_s=timeout_s, choices=choices)
        try:
            results[p] = await bridge.ref(provider_address(p)).call(msg, timeout=msg.call_timeout_s)
        except BridgeError as exc:
            results[p] = exc

    wanted = list(dict.fromkeys(providers))
    async with trio.open_nursery() as nursery:
        for p in wanted:
            nursery.start_soon(one, p)
    return {p: results[p] for p in wanted}


def all_ok(results: Mapping[ProviderName, ProbeReport | BridgeError]) -> bool:
    """Nothing required missing, every provider signed in, no probe failed."""
    return all(isinstance(r, ProbeReport) and r.ok for r in results.values())


def reports_json(results: Mapping[ProviderName, ProbeReport | BridgeError]) -> dict[str, object]:
    out: dict[str, object] = {}
    for p, r in results.items():
        out[p.value] = {"error": r.as_dict()} if isinstance(r, BridgeError) else r.as_json()
    return {"ok": all_ok(results), "providers": out}


_MARK = {ProbeStatus.OK: "ok", ProbeStatus.FALLBACK: "FALLBACK", ProbeStatus.MISSING: "MISSING",
         ProbeStatus.NOT_APPLICABLE: "n/a"}


def gone_note(url: str) -> str:
    """A kept conversation the site no longer has: not a changed site (nothing to patch), and no harm to asks."""
    return (f"the kept conversation {url} is not available on the site (deleted, or never there): probed a new chat "
            "instead; the next ask starts a new conversation")


def render_table(results: Mapping[ProviderName, ProbeReport | BridgeError]) -> str:
    """The human table: one block per provider, one line per table entry, then what to update."""
    lines = render_blocks(results)
    lines.append("all providers healthy" if all_ok(results) else "some providers need attention")
    return "\n".join(lines)


def render_blocks(results: Mapping[ProviderName, ProbeReport | BridgeError]) -> list[str]:
    """The table's lines without the verdict: a block per provider, each ending with a blank line."""
    lines: list[str] = []
    for p, r in results.items():
        if isinstance(r, BridgeError):
            lines += [f"{p.value}: probe failed: [{r.code}] {r}", ""]
            continue
        signed = {True: "signed in", False: "NOT signed in", None: "sign-in unknown"}[r.signed_in]
        lines.append(f"{p.value}  {r.url}  ({signed}; language {r.language or 'unknown'})")
        if r.conversation_gone:
            lines.append(f"  {gone_note(r.conversation_gone)}")
        width = max((len(i.entry) for i in r.items), default=10) + 2  # room for the override mark
        for i in r.items:
            entry = i.entry + (" *" if i.entry in r.overridden else "")
            status = _MARK[i.status] if i.required or i.status is not ProbeStatus.MISSING else "missing (optional)"
            said = "  ".join(x for x in (i.matched or "", "" if i.status is ProbeStatus.OK else i.detail) if x)
            lines.append(f"  {entry:<{width}} {status:<18} {said}".rstrip())
        if r.overridden:
            lines.append(f"  * overridden by providers.toml: {', '.join(r.overridden)}")
        if r.site_changed:
            lines.append(f"  the last ask worked through a fallback: {r.site_changed}")
        if r.offered is not None:
            lines += ["  what can be chosen (the site's names; ✓ chosen now):",
                      *("  " + line for line in r.offered.text("").splitlines()[1:])]
        if r.signed_in is False:
            lines.append(f"  sign in to {p.value} in this browser, then run again")
        if r.broken:
            lines.append("  update: " + ", ".join(i.entry for i in r.broken)
                         + " (prepend a selector or label in providers.toml; docs/providers.md)")
        lines.append("")
    return lines
