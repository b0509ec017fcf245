"""Answers, errors and jobs as tool results: the one place their text and structured forms are written, and the
output models (``outputSchema``) that describe the structured forms."""

from __future__ import annotations

from pydantic import Field

from supervisor.errors import ErrorInfo

from ...protocol.common import ProviderName
from ...protocol.jobs import JobStatus, JobView
from ...protocol.provider import AskPhase, AskResult
from ..toolkit import Absent, ErrorOnly, ErrorOut, Link, Output, Result

# --- output models (camelCase keys, as on the wire) ------------------------------------------------------------------


class Completion(Output):
    reason: str
    detectedAtMs: float
    thinking: bool
    extractedBy: str = Field(description="Where the answer was read: report, content, feedback, paragraphs, turn, "
                             "aria-live, body; ' (plain text)' is added when a fallback lost the markdown "
                             "(docs/answers.md).")


class AskWarningOut(Output):
    code: str
    message: str
    debugDump: str | None


class ChosenOut(Output):
    model: str | Absent = None
    effort: str | Absent = None
    tools: list[str] | Absent = None


class FileOut(Output):
    path: str = Field(description="Where it was saved (absolute).")
    name: str
    mimeType: str
    size: int = Field(description="Bytes.")
    kind: str = Field(description="image (a generated image) or file (a file the answer links to).")


class Answer(Output):
    """One provider's answer."""

    provider: str = Field(description="The site: chatgpt, gemini, claude, grok or perplexity.")
    answer: str
    url: str = Field(description="The conversation's URL.")
    timings: dict[str, float] = Field(description="Milliseconds per step (connectMs, sendMs, totalMs, ...).")
    retries: int
    model: str | Absent = Field(default=None, description="The model that answered, as the page names it: ChatGPT's "
                                "message model slug (gpt-5-5), else the picker's label (Gemini's Pro Extended, "
                                "Claude's Sonnet 5, Grok's Expert).")
    chosen: ChosenOut | Absent = Field(default=None, description="When the ask chose a model, effort or tools: what "
                                       "the page showed chosen when the question was sent (the site's own labels).")
    completion: Completion
    files: list[FileOut] | Absent = Field(default=None, description="The answer's generated images and files, saved "
                                          "(save_to); also given as resource_link content.")
    warnings: list[AskWarningOut] = Field(default_factory=list, description="Present when the answer looks odd, "
                                          "was read as plain text, or went to a new chat (conversation_gone).")


class BothAnswers(Output):
    """ask_chatgpt_gemini_web: each provider's answer, or its error (one failing still returns the other)."""

    chatgpt: Answer | ErrorOnly
    gemini: Answer | ErrorOnly


class SitesAnswers(Output):
    """ask_web: each site asked, by name (chatgpt, gemini, claude, grok, perplexity), with its answer or its error
    (one failing still returns the others); the sites not asked are left out."""

    # Every key is a site's name; the schema says it once for all of them (additionalProperties).
    __pydantic_extra__: dict[str, Answer | ErrorOnly] = Field(init=False)


class JobStarted(Output):
    """An ask with background: true."""

    jobId: str
    status: str


class DryRunFile(Output):
    path: str = Field(description="Relative to the project folder.")
    size: int = Field(description="Bytes.")
    text: bool = Field(description="false for a binary file (it can be uploaded, not inlined).")


class DryRunBundle(Output):
    name: str = Field(description="The upload's name as the site sees it.")
    files: list[str] = Field(description="The paths it holds, in order; each is headed by its path inside.")
    bytes: int
    estimatedTokens: int


class DryRunPlan(Output):
    bundles: list[DryRunBundle]
    alone: list[str] = Field(description="Files that go one per upload: binary ones, and text too big for a bundle.")
    uploads: int = Field(description="Uploads in all: the bundles and the files on their own.")
    siteTakes: int = Field(description="How many files the site takes with one message.")


class DryRunReport(Output):
    question: str
    attach: str = Field(description="upload or inline")
    files: list[DryRunFile]
    totalBytes: int
    inlineChars: int | Absent = Field(default=None, description="The prompt's length with the files inline (left "
                                      "out when a file is binary).")
    estimatedTokens: int = Field(description="About four characters a token: the prompt and the text files.")
    bundlePlan: DryRunPlan | Absent = Field(default=None, description="How the files go as bundles (left out when "
                                            "they go one per upload).")


class DryRun(Output):
    """dry_run: true: what the ask would send; nothing was sent and no tab was opened."""

    dryRun: DryRunReport


class JobRow(Output):
    jobId: str
    tool: str
    status: str = Field(description="running, done, failed or cancelled")
    createdAt: str
    elapsedS: float
    phase: dict[str, str]


class JobOut(JobRow):
    finishedAt: str | None
    partial: dict[str, str] = Field(default_factory=dict, description="The answer text so far (while running).")
    results: dict[str, Answer]
    errors: dict[str, ErrorOut]


class JobList(Output):
    jobs: list[JobRow]


MANY_SITES_TOOL = "ask_web"  # its result is per site, even for one site


# --- writers ---------------------------------------------------------------------------------------------------------


def ask_structured(r: AskResult) -> dict[str, object]:
    out: dict[str, object] = {
        "provider": r.provider.value, "answer": r.answer, "url": r.url, "timings": r.timings.as_json(),
        "retries": r.retries,
        "completion": {"reason": r.completion_reason, "detectedAtMs": r.detected_at_ms, "thinking": r.thinking,
                       "extractedBy": r.extracted_by}}
    if r.model:
        out["model"] = r.model
    if r.chosen is not None:
        out["chosen"] = r.chosen.as_json()
    if r.files:
        out["files"] = [f.as_json() for f in r.files]
    if r.warnings:
        out["warnings"] = [{"code": w.code, "message": w.message, "debugDump": w.debug_dump} for w in r.warnings]
    return out


def progress_line(provider: ProviderName, phase: AskPhase, text: str, *, place: int = 0) -> str:
    """One provider's progress as a line (progress notifications, task status messages)."""
    if phase is AskPhase.ANSWERING:
        tail = text[-300:].replace("\n", " ")
        return f"{provider.display} is answering ({len(text)} chars): …{tail}"
    if phase is AskPhase.QUEUED and place > 0:
        return f"{provider.display}: queued, {ordinal(place)} in line"
    return f"{provider.display}: {phase.value}"


def links(r: AskResult) -> tuple[Link, ...]:
    return tuple(Link(f.path, f.name, f.mime, f.size) for f in r.files)


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def answer_result(r: AskResult) -> Result:
    return Result(text=r.answer, structured=ask_structured(r), links=links(r))


def sites_result(results: dict[ProviderName, AskResult | ErrorInfo]) -> Result:
    """The answers of every site asked as one result, in the sites' order; one failing still returns the others'
    answers (the result is an error only when every site failed)."""
    parts, structured = [], {}
    for p in (p for p in ProviderName if p in results):
        r = results[p]
        if isinstance(r, AskResult):
            parts.append(f"## {p.display}\n\n{r.answer}")
            structured[p.value] = ask_structured(r)
        else:
            parts.append(f"## {p.display}\n\n(failed) {r.text()}")
            structured[p.value] = {"error": r.as_dict()}
    failed = all(not isinstance(r, AskResult) for r in results.values())
    saved = tuple(link for r in results.values() if isinstance(r, AskResult) for link in links(r))
    return Result(text="\n\n".join(parts), structured=structured, is_error=failed, links=saved)


def job_as_ask(v: JobView) -> Result:
    """A finished job as the result its ask tool would have returned in the foreground (an MCP task's result)."""
    missing = ErrorInfo("bridge_error", "the job ended without an answer")
    if len(v.providers) > 1 or v.tool == MANY_SITES_TOOL:
        return sites_result({p: v.results.get(p) or v.errors.get(p) or missing for p in v.providers})
    p = v.providers[0]
    return answer_result(v.results[p]) if p in v.results else Result.error(v.errors.get(p) or missing)


def job_progress(v: JobView) -> str:
    """A running job in one line per provider: the phase, or the partial answer's length and tail."""
    lines = []
    for p in v.providers:
        if p in v.results:
            lines.append(f"{p.display}: done")
        elif p in v.errors:
            lines.append(f"{p.display}: failed [{v.errors[p].code}]")
        else:
            phase = v.phase.get(p)
            if isinstance(phase, AskPhase):
                lines.append(progress_line(p, phase, v.partial.get(p, "")))
            else:
                lines.append(f"{p.display}: {phase.value if phase else 'queued'}")
    return "\n".join(lines)


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
    if len(v.providers) > 1 or v.tool == MANY_SITES_TOOL:
        merged = sites_result({p: v.results.get(p) or v.errors.get(p) or ErrorInfo("bridge_error", "no answer")
                               for p in v.providers})
        return Result(text=merged.text, structured=structured, is_error=merged.is_error)
    p = v.providers[0]
    if p in v.results:
        return Result(text=v.results[p].answer, structured=structured)
    err = v.errors.get(p) or ErrorInfo("bridge_error", "the job ended without an answer")
    return Result(text=err.text(), structured=structured, is_error=True)
