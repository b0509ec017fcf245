"""What `check` prints and keeps: the listing (`--list`, `--dry-run`), the progress lines' timings, the summary
table, and the JSON and markdown reports under ``<state-dir>/reports/`` (private files; the newest `KEEP` runs)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from actors.protocol.common import ProviderName
from actors.protocol.provider import AskResult, ProbeReport

from ... import __version__
from ...config import Config
from ...errors import BridgeError
from ...files import ensure_private_dir, write_atomic
from .outcome import Options, Outcome
from .scenarios import Scenario

KEEP = 50  # report pairs kept in <state-dir>/reports
ANSWER_EXCERPT = 300  # characters of each answer in a report (the whole answer with --debug)


def listing(order: Sequence[tuple[Scenario, bool]], default_timeout_s: float, *, dry_run: bool) -> str:
    lines = []
    if dry_run:
        lines.append(f"{len(order)} scenario(s) valid; they would run in this order (nothing is asked):")
    for i, (s, added) in enumerate(order, 1):
        how = f"follow-up of {s.follow_up}" if s.follow_up else "new chat"
        extra = " (added: opens the conversation a chosen follow-up continues)" if added else ""
        who = " + ".join(p.value for p in s.providers)
        lines.append(f"{i:>2}. {s.id}  [{', '.join(t.value for t in s.tags)}]  {who}, {how}, deadline "
                     f"{s.deadline_s(default_timeout_s):g} s{extra}")
        lines.append(f"    {s.name}: {s.question}")
        checks = {k: v for k, v in s.assertions.model_dump().items() if v not in (None, False)}
        if checks:
            lines.append("    asserts " + ", ".join(f"{k}={v}" for k, v in checks.items()))
    return "\n".join(lines)


def timing_line(p: ProviderName, r: AskResult | BridgeError) -> str:
    if isinstance(r, BridgeError):
        return f"{p.value}: [{r.code}] {r.message}"
    t = r.timings
    return (f"{p.value}: total {t.total_ms} ms (connect {t.connect_ms}, wait input {t.wait_input_ms}, input "
            f"{t.input_ms}, send {t.send_ms}, response {t.wait_response_ms}), {len(r.answer.strip())} chars")


def summary(outcomes: Sequence[Outcome], seconds: float) -> str:
    rows = [("SCENARIO", "RESULT", "PROVIDER", "TOTAL MS", "CHARS", "FAILED")]
    for o in outcomes:
        first = True
        for p in o.scenario.providers:
            r = o.results.get(p)
            failed = [v.name for v in o.failed_verdicts if v.provider in (p, None)]
            if o.reason and first:
                failed = [o.reason]
            rows.append((o.scenario.id if first else "", ("pass" if o.status == "passed" else "FAIL") if first else "",
                         p.value, str(r.timings.total_ms) if isinstance(r, AskResult) else "-",
                         str(len(r.answer.strip())) if isinstance(r, AskResult) else "-",
                         ", ".join(dict.fromkeys(failed))))
            first = False
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=True)) + "  " + r[5] for r in rows]
    passed = sum(o.status == "passed" for o in outcomes)
    lines.append(f"{len(outcomes)} scenario(s): {passed} passed, {len(outcomes) - passed} failed in {seconds:.1f} s")
    return "\n".join(line.rstrip() for line in lines)


def _answer(text: str, *, private: bool, debug: bool) -> dict[str, object]:
    if private:
        return {"chars": len(text), "text": None}
    return {"chars": len(text), "text": text if debug or len(text) <= ANSWER_EXCERPT else text[:ANSWER_EXCERPT] + "…"}


def _result(r: AskResult | BridgeError | None, *, private: bool, debug: bool) -> dict[str, object]:
    if r is None:
        return {"asked": False}
    if isinstance(r, BridgeError):
        err: dict[str, object] = dict(r.as_dict())
        partial = getattr(r, "partial", None)
        if isinstance(partial, str):
            err["partial"] = _answer(partial, private=private, debug=debug)
        return {"asked": True, "ok": False, "error": err}
    return {"asked": True, "ok": True, "url": r.url, "timings": r.timings.as_json(), "retries": r.retries,
            "extractedBy": r.extracted_by, "completionReason": r.completion_reason, "thinking": r.thinking,
            "answer": _answer(r.answer.strip(), private=private, debug=debug),
            "warnings": [{"code": w.code, "message": w.message, "debugDump": w.debug_dump} for w in r.warnings]}


def as_json(outcomes: Sequence[Outcome], probe: Mapping[ProviderName, ProbeReport | BridgeError], *, config: Config,
            opts: Options, project: str, started: float, finished: float) -> dict[str, object]:
    private = config.private_text
    scenarios = []
    for o in outcomes:
        s = o.scenario
        scenarios.append({
            "id": s.id, "name": s.name, "tags": [t.value for t in s.tags], "providers": [p.value for p in s.providers],
            "source": s.source, "followUp": s.follow_up, "addedToOpenConversation": o.added,
            "question": f"[{len(s.question)} characters, not kept]" if private else s.question,
            "assertions": s.assertions.model_dump(exclude_defaults=True),
            "status": o.status, "reason": o.reason, "startedAt": _iso(o.started) if o.started else None,
            "wallMs": o.wall_ms,
            "results": {p.value: _result(o.results.get(p), private=private, debug=opts.debug) for p in s.providers},
            "passed": [v.as_json() for v in o.verdicts if v.passed],
            "failed": [v.as_json() for v in o.verdicts if not v.passed],
            "debugDumps": {p.value: d for p, d in o.dumps.items()},
            "snapshots": {p.value: d for p, d in o.snapshots.items()},
        })
    probe_out: dict[str, object] = {}
    for p, r in probe.items():
        probe_out[p.value] = {"error": r.as_dict()} if isinstance(r, BridgeError) else r.as_json()
    passed = sum(o.status == "passed" for o in outcomes)
    return {
        "tool": "ai-bridge check", "version": __version__, "startedAt": _iso(started), "finishedAt": _iso(finished),
        "durationMs": round((finished - started) * 1000), "project": project, "browser": config.browser,
        "selection": {"ids": list(opts.ids), "tags": list(opts.tags),
                      "scenarioFiles": [str(p) for p in opts.scenario_files]},
        "ok": passed == len(outcomes), "counts": {"passed": passed, "failed": len(outcomes) - passed},
        "probe": probe_out, "scenarios": scenarios,
    }


def markdown(data: Mapping[str, object]) -> str:
    """The same report for a person: the summary, then each scenario's timings and assertions, then the probe."""
    counts = data["counts"]
    assert isinstance(counts, dict)
    lines = [f"# ai-bridge check — {'passed' if data['ok'] else 'FAILED'}", "",
             f"{data['startedAt']} · ai-bridge {data['version']} · browser mode {data['browser']} · project "
             f"`{data['project']}` · {counts['passed']} passed, {counts['failed']} failed in "
             f"{int(str(data['durationMs'])) / 1000:.1f} s", "",
             "| Scenario | Result | Provider | Total ms | Connect | Input | Send | Response | Chars | Extracted by |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    scenarios = data["scenarios"]
    assert isinstance(scenarios, list)
    for s in scenarios:
        for name, r in s["results"].items():
            t = r.get("timings") or {}
            cells = [s["id"], "pass" if s["status"] == "passed" else "**FAIL**", name,
                     *(str(t.get(k, "-")) for k in ("totalMs", "connectMs", "inputMs", "sendMs", "waitResponseMs")),
                     str(r["answer"]["chars"]) if r.get("ok") else "-", r.get("extractedBy") or "-"]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    for s in scenarios:
        lines += ["", f"## {s['id']} — {'passed' if s['status'] == 'passed' else 'FAILED'}", "",
                  f"{s['name']} ({', '.join(s['tags'])}); {' + '.join(s['providers'])}; "
                  f"{'follow-up of ' + s['followUp'] if s['followUp'] else 'new chat'}; wall {s['wallMs']} ms", "",
                  f"> {s['question']}"]
        if s["reason"]:
            lines += ["", f"**Not asked:** {s['reason']}"]
        for name, r in s["results"].items():
            if r.get("asked") and not r.get("ok"):
                e = r["error"]
                lines += ["", f"**{name} failed:** `{e['code']}` {e['message']}" + (f" — {e['hint']}" if e.get(
                    "hint") else "")]
        if s["passed"] or s["failed"]:
            lines += ["", "| Assertion | Provider | Expected | Got | |", "|---|---|---|---|---|"]
            for v in [*s["failed"], *s["passed"]]:
                cells = [v["assertion"], v["provider"] or "all", v["expected"], v["actual"],
                         "ok" if v["passed"] else "**failed**"]
                lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        for name, dumps in s["debugDumps"].items():
            for d in dumps:
                lines += ["", f"Debug dump ({name}): `{d['path']}`", "", "```json",
                          json.dumps(d.get("dump", d.get("error")), indent=2, ensure_ascii=False)[:4000], "```"]
        for name, snap in s["snapshots"].items():
            lines += ["", f"Page snapshot ({name}):", "", "```json",
                      json.dumps(snap, indent=2, ensure_ascii=False)[:4000], "```"]
    lines += ["", "## Probe (nothing typed or sent)", "", "```json",
              json.dumps(data["probe"], indent=2, ensure_ascii=False), "```", ""]
    return "\n".join(lines)


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def write(state_dir: Path, data: Mapping[str, object], text: str) -> tuple[Path, Path]:
    """Both reports, private (0600 in a 0700 folder), written atomically; older runs beyond `KEEP` removed."""
    folder = state_dir / "reports"
    ensure_private_dir(folder)
    now = time.time_ns()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now / 1e9)) + f"-{now // 1000 % 1_000_000:06d}"
    n = 0
    while (json_path := folder / f"check-{stamp}{n:02d}.json").exists():  # two runs in one microsecond
        n += 1
    md_path = json_path.with_suffix(".md")
    write_atomic(json_path, json.dumps(data, indent=2, ensure_ascii=False).encode("utf-8"))
    write_atomic(md_path, text.encode("utf-8"))
    for old in sorted(folder.glob("check-*.json"), reverse=True)[KEEP:]:
        for path in (old, old.with_suffix(".md")):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    return json_path, md_path


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"
