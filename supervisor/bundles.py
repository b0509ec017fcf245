"""A whole repository in one ask (issue 35): over the site's file limit, or when asked, the text files go as bundles.

A bundle is one text upload holding many project files, each headed by its path and fenced like an inline file
(`attachments.inline_block`), after an index of the paths it holds. The text files are packed in their selection
order into as few bundles as fit the site's size limit (first fit: a file goes into the first bundle with room);
binary files, and a text file too big for any bundle, still go one per upload. The plan is refused, before anything
is sent, when its uploads are more than the site takes with one message.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs

from . import attachments
from .attachments import MAX_FILES, ProjectFile, estimate_tokens, inline_block
from .errors import FileRefused


@attrs.frozen
class UploadLimits:
    """What a site takes with one message: how many files, and how big one file may be (the provider protocol keeps
    each site's, `UPLOAD_LIMITS`). The site's own refusal is still read on the page (attach.py)."""

    files: int
    file_bytes: int


BUNDLE_BYTES = 4 * 2**20  # ~1M tokens of code: within every site's file size, and what one answer can draw on
MAX_BUNDLED_FILES = 2000  # files one bundled selection may hold (the byte limits still apply)
BUNDLE_NAME = "ai-bridge-bundle-{n}-of-{of}.md"


@attrs.frozen
class Bundle:
    name: str
    files: tuple[ProjectFile, ...]
    data: bytes = attrs.field(repr=False, eq=False)

    def upload(self) -> ProjectFile:
        """The bundle as one file to stage and upload."""
        return ProjectFile(Path(self.name), self.name, len(self.data), True, self.data)

    def as_json(self) -> dict[str, object]:
        return {"name": self.name, "files": [f.rel for f in self.files], "bytes": len(self.data),
                "estimatedTokens": estimate_tokens(len(self.data))}


@attrs.frozen
class Plan:
    """What the site gets: the bundles, then the files that go on their own (binary, or too big to bundle)."""

    bundles: tuple[Bundle, ...]
    alone: tuple[ProjectFile, ...]
    limits: UploadLimits

    @property
    def uploads(self) -> tuple[ProjectFile, ...]:
        return (*(b.upload() for b in self.bundles), *self.alone)

    def as_json(self) -> dict[str, object]:
        return {"bundles": [b.as_json() for b in self.bundles], "alone": [f.rel for f in self.alone],
                "uploads": len(self.bundles) + len(self.alone), "siteTakes": self.limits.files}


def max_selected(bundle: bool | None) -> int:
    """How many files a selection may hold: the site's count unless its text files may be bundled."""
    return MAX_FILES if bundle is False else MAX_BUNDLED_FILES


def _blocks(files: Sequence[ProjectFile]) -> tuple[list[tuple[ProjectFile, bytes]], list[ProjectFile]]:
    texts, alone = [], []
    for f in files:
        if not f.text:
            alone.append(f)
            continue
        try:
            texts.append((f, inline_block(f).encode()))
        except FileRefused:  # it looked like text at its start only: it goes as itself
            alone.append(f)
    return texts, alone


def _header(n: int, of: int, files: Sequence[ProjectFile]) -> bytes:
    index = "\n".join(f"- {f.rel}" for f in files)
    return (f"ai-bridge bundle {n} of {of}: {len(files)} project file{'s' if len(files) != 1 else ''}, each below "
            f"as its path and then its content in a fenced block.\n\n{index}\n").encode()


def _cost(f: ProjectFile, block: bytes) -> int:
    """What a file takes of a bundle: its block, the blank lines around it, and its line in the index."""
    return len(block) + 2 + len(f.rel.encode()) + 3


def _pack(texts: list[tuple[ProjectFile, bytes]], room: int) -> list[list[tuple[ProjectFile, bytes]]]:
    """First fit in selection order; each bundle keeps its files in that order."""
    bins: list[list[tuple[ProjectFile, bytes]]] = []
    sizes: list[int] = []
    for item in texts:
        cost = _cost(*item)
        for i, used in enumerate(sizes):
            if used + cost <= room:
                bins[i].append(item)
                sizes[i] += cost
                break
        else:
            bins.append([item])
            sizes.append(cost)
    return bins


def plan(files: Sequence[ProjectFile], limits: UploadLimits, bundle: bool | None) -> Plan | None:
    """The bundle plan for `files`, or None when they go one per upload (``bundle`` false, or unset with no more
    files than the site takes). `FileRefused` when even bundled they are more uploads than the site takes."""
    if bundle is False or (bundle is None and len(files) <= limits.files):
        if len(files) > limits.files:
            raise FileRefused(f"{len(files)} files selected; the site takes at most {limits.files} with one message",
                              hint="Let the text files go as bundles (bundle: true, or leave bundle unset).")
        return None
    room = min(BUNDLE_BYTES, limits.file_bytes) - 512  # the header's own lines
    texts, alone = _blocks(files)
    alone += [f for f, block in texts if _cost(f, block) > room]
    packed = _pack([(f, block) for f, block in texts if _cost(f, block) <= room], room)
    if len(packed) + len(alone) > limits.files:
        binary = sum(1 for f in alone if not f.text)
        raise FileRefused(
            f"the files need {len(packed) + len(alone)} uploads ({len(packed)} bundle{'s' if len(packed) != 1 else ''}"
            f" of text, {len(alone)} file{'s' if len(alone) != 1 else ''} on their own, {binary} of them binary); the "
            f"site takes at most {limits.files} with one message",
            hint="Send fewer binary files, or less text (exclude files with '!pattern').")
    bundles = []
    for n, items in enumerate(packed, 1):
        members = tuple(f for f, _ in items)
        data = _header(n, len(packed), members) + b"".join(b"\n" + block + b"\n" for _, block in items)
        bundles.append(Bundle(BUNDLE_NAME.format(n=n, of=len(packed)), members, data))
    return Plan(tuple(bundles), tuple(alone), limits)


def plan_text(report: dict[str, object]) -> list[str]:
    """A dry run's lines for the plan in `report` (`Plan.as_json`)."""
    bundles = report["bundles"]
    assert isinstance(bundles, list)
    held = sum(len(b["files"]) for b in bundles)
    lines = [f"bundles: {len(bundles)} holding {held} text files; {report['uploads']} uploads in all (the site "
             f"takes {report['siteTakes']})"]
    lines += [f"  {b['name']}  {len(b['files'])} files  {b['bytes']:,} bytes  ~{b['estimatedTokens']:,} tokens"
              for b in bundles]
    alone = report["alone"]
    assert isinstance(alone, list)
    if alone:
        lines.append(f"on their own: {', '.join(alone)}")
    return lines


async def prepare(question: str, files: Sequence[ProjectFile], *, attach: str, bundle: bool | None,
                  limits: UploadLimits, state_dir: Path | None) -> tuple[str, tuple[str, ...]]:
    """The question as it is typed and the staged copies the browser uploads: the files inline, one per upload, or
    as the bundle plan has them."""
    if not files:
        return question, ()
    if attach == "inline":
        return attachments.inline_prompt(question, files), ()
    p = plan(files, limits, bundle)
    return question, await attachments.stage_async(p.uploads if p else files, state_dir)


def dry_run(question: str, files: Sequence[ProjectFile], *, attach: str, bundle: bool | None,
            limits: UploadLimits) -> dict[str, object]:
    """`attachments.dry_run`, with the bundle plan when the files would go as bundles."""
    report = attachments.dry_run(question, files, attach)
    p = plan(files, limits, bundle) if files and attach == "upload" else None
    if p is not None:
        report["bundlePlan"] = p.as_json()
    return report


def dry_run_text(report: dict[str, object]) -> str:
    text = attachments.dry_run_text(report)
    p = report.get("bundlePlan")
    return "\n".join([text, *plan_text(p)]) if isinstance(p, dict) else text
