"""Answers, errors and jobs as tool results: the one place their text and structured forms are written."""

from __future__ import annotations

from supervisor.errors import ErrorInfo

from ...protocol.common import ProviderName
from ...protocol.jobs import JobStatus, JobView
from ...protocol.provider import AskResult
from ..toolkit import Result


def ask_structured(r: AskResult) -> dict[str, object]:
    out: dict[str, object] = {
        "provider": r.provider.value, "answer": r.answer, "url": r.url, "timings": r.timings.as_json(),
        "retries": r.retries,
        "completion": {"reason": r.completion_reason, "detectedAtMs": r.detected_at_ms, "thinking": r.thinking}}
    if r.warnings:
        out["warnings"] = [{"code": w.code, "message": w.message, "debugDump": w.debug_dump} for w in r.warnings]
    return out


def both_result(results: dict[ProviderName, AskResult | ErrorInfo]) -> Result:
    """Both providers' answers as one result; one failing still returns the other's answer."""
    parts, structured = [], {}
    for p in ProviderName:
        r = results.get(p) or ErrorInfo("bridge_error", "no answer")
        if isinstance(r, AskResult):
            parts.append(f"## {p.display}\n\n{r.answer}")
            structured[p.value] = ask_structured(r)
        else:
            parts.append(f"## {p.display}\n\n(failed) {r.text()}")
            structured[p.value] = {"error": r.as_dict()}
    failed = all(not isinstance(r, AskResult) for r in results.values())
    return Result(text="\n\n".join(parts), structured=structured, is_error=failed)


def job_structured(v: JobView) -> dict[str, object]:
    out: dict[str, object] = {**v.row(), "finishedAt": v.finished_at}
    if v.status is JobStatus.RUNNING:
        out["partial"] = {p.value: text for p, text in v.partial.items()}
    out["results"] = {p.value: ask_structured(r) for p, r in v.results.items()}
    out["errors"] = {p.value: e.as_dict() for p, e in v.errors.items()}
    return out


def job_result(v: JobView) -> Result:
    structured = job_structured(v)
    if v.status is JobStatus.RUNNING:
        lines = [f"Job {v.job_id} is still running ({v.elapsed_s:.0f}s). Call get_answer again to keep waiting."]
        for p in v.providers:
            if p in v.results:
                lines.append(f"## {p.display} (done)\n\n{v.results[p].answer}")
            elif p in v.errors:
                lines.append(f"## {p.display} (failed) {v.errors[p].text()}")
            else:
                phase = v.phase.get(p)
                lines.append(f"## {p.display} ({phase.value if phase else 'queued'}, partial)\n\n"
                             f"{v.partial.get(p, '')}")
        return Result(text="\n\n".join(lines), structured=structured)
    if len(v.providers) > 1:
        merged = both_result({p: v.results.get(p) or v.errors.get(p) or ErrorInfo("bridge_error", "no answer")
                              for p in v.providers})
        return Result(text=merged.text, structured=structured, is_error=merged.is_error)
    p = v.providers[0]
    if p in v.results:
        return Result(text=v.results[p].answer, structured=structured)
    err = v.errors.get(p) or ErrorInfo("bridge_error", "the job ended without an answer")
    return Result(text=err.text(), structured=structured, is_error=True)
