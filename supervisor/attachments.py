"""Files an ask sends with its question (issue 20): chosen by paths and globs relative to the project folder, checked
here on the server before anything is sent, then either uploaded through the site's own file input (the provider
actors get the checked absolute paths) or put into the prompt as fenced blocks (`inline_prompt`).

Only the project's files: a pattern is relative, has no ``..``, and every file it finds must resolve (symlinks
followed) inside the project folder and outside the state dir. Limits on the count and the total size. When any
file fails, nothing is sent: the whole selection is refused with a `FileRefused` that names the file.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import attrs

from .errors import FileRefused

MAX_FILES = 10  # ChatGPT takes 10 files per message; Gemini about as many
MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_TOTAL_BYTES = 50 * 1024 * 1024
MAX_INLINE_CHARS = 400_000  # the question and its inlined files, as typed into the composer
MAX_PATTERNS = 100
GLOB_CHARS = frozenset("*?[")
ATTACH_MODES = ("upload", "inline")

_LANG = {".py": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript", ".tsx": "tsx",
         ".jsx": "jsx", ".rs": "rust", ".go": "go", ".java": "java", ".c": "c", ".h": "c", ".cc": "cpp",
         ".cpp": "cpp", ".hpp": "cpp", ".rb": "ruby", ".sh": "bash", ".md": "markdown", ".json": "json",
         ".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".html": "html", ".css": "css", ".sql": "sql",
         ".kt": "kotlin", ".swift": "swift", ".cs": "csharp", ".php": "php", ".txt": ""}


@attrs.frozen
class ProjectFile:
    """One checked file: its absolute, resolved path, its path as the question names it, its size and whether it
    reads as text."""

    path: Path
    rel: str
    size: int
    text: bool

    def as_json(self) -> dict[str, object]:
        return {"path": self.rel, "size": self.size, "text": self.text}


def _is_glob(part: str) -> bool:
    return any(c in GLOB_CHARS for c in part)


def _check_pattern(pattern: str) -> PurePosixPath:
    if not pattern or not pattern.strip():
        raise FileRefused("an empty file pattern", hint="Name files relative to the project folder, e.g. src/app.py "
                          "or 'src/**/*.py'.")
    if "\x00" in pattern or any(ord(c) < 32 for c in pattern):
        raise FileRefused(f"the file pattern {pattern!r} has a control character")
    p = PurePosixPath(pattern.replace("\\", "/"))
    if p.is_absolute() or pattern.startswith("~"):
        raise FileRefused(f"{pattern!r} is not relative to the project folder",
                          hint="Files come from inside the project only: name them relative to it.")
    if ".." in p.parts:
        raise FileRefused(f"{pattern!r} leaves the project folder ('..')",
                          hint="Files come from inside the project only.")
    return p


def _hidden_ok(rel: PurePosixPath, pattern: PurePosixPath) -> bool:
    """A glob or a folder does not pick up hidden files and folders (.git, .env, .venv) unless the pattern names
    them."""
    named = {part for part in pattern.parts if part.startswith(".")}
    return all(not part.startswith(".") or part in named for part in rel.parts)


def _expand(root: Path, pattern: PurePosixPath) -> list[Path]:
    """The paths a pattern names, in a stable order: a glob's matches sorted, a folder's files (recursively)."""
    if not any(_is_glob(part) for part in pattern.parts):
        candidates = [root / pattern]
        if not os.path.lexists(candidates[0]):
            return []
    else:
        candidates = sorted(root.glob(str(pattern)))
    out: list[Path] = []
    for c in candidates:
        if c.is_dir() and not c.is_symlink():
            out.extend(sorted(p for p in c.rglob("*") if not p.is_dir()))
        else:
            out.append(c)
    return [p for p in out if _hidden_ok(PurePosixPath(p.relative_to(root).as_posix()), pattern)]


def _reads_as_text(path: Path, size: int) -> bool:
    with open(path, "rb") as f:
        head = f.read(min(size, 64 * 1024))
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3  # a multi-byte character cut at the end of the sample
    return True


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def select_files(root: Path, patterns: Sequence[str], *, state_dir: Path | None = None,
                 max_files: int = MAX_FILES, max_file_bytes: int = MAX_FILE_BYTES,
                 max_total_bytes: int = MAX_TOTAL_BYTES) -> tuple[ProjectFile, ...]:
    """The project files `patterns` name (paths, globs with ``**``, folders; a pattern starting with ``!`` excludes
    what it matches), each checked. Raises `FileRefused` naming the first file or pattern that fails."""
    if len(patterns) > MAX_PATTERNS:
        raise FileRefused(f"{len(patterns)} file patterns; at most {MAX_PATTERNS}")
    try:
        base = root.resolve(strict=True)
    except OSError as exc:
        raise FileRefused(f"the project folder {root} cannot be read: {exc.strerror or exc}") from None
    state = state_dir.resolve() if state_dir is not None else None
    if state is not None and _inside(base, state):
        raise FileRefused(f"the project folder {base} is inside ai-bridge's state dir",
                          hint="Run the ask from your project's folder.")
    picked: dict[Path, Path] = {}  # resolved path -> as found under the root (for its name)
    excluded: set[Path] = set()
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = _check_pattern(raw[1:] if negate else raw)
        found = _expand(base, pattern)
        if negate:
            excluded.update(p.resolve() for p in found)
            continue
        if not found:
            what = "matches no file" if any(_is_glob(p) for p in pattern.parts) else "does not exist"
            raise FileRefused(f"{raw!r} {what} in the project folder {base}",
                              hint="Paths and globs are relative to the project folder.")
        for p in found:
            try:
                real = p.resolve(strict=True)
            except OSError:
                raise FileRefused(f"{p.relative_to(base).as_posix()!r} is a broken link") from None
            picked.setdefault(real, p)
    files: list[ProjectFile] = []
    total = 0
    for real, found_as in picked.items():
        if real in excluded:
            continue
        rel = found_as.relative_to(base).as_posix()
        if not _inside(real, base):
            raise FileRefused(f"{rel!r} links outside the project folder (to {real})",
                              hint="Files come from inside the project only.")
        if state is not None and _inside(real, state):
            raise FileRefused(f"{rel!r} is in ai-bridge's state dir, which is never sent")
        try:
            st = real.stat()
        except OSError as exc:
            raise FileRefused(f"{rel!r} cannot be read: {exc.strerror or exc}") from None
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(f"{rel!r} is not a regular file")
        if st.st_size > max_file_bytes:
            raise FileRefused(f"{rel!r} is {st.st_size:,} bytes; a file may have at most {max_file_bytes:,}")
        try:
            text = _reads_as_text(real, st.st_size)
        except OSError as exc:
            raise FileRefused(f"{rel!r} cannot be read: {exc.strerror or exc}") from None
        total += st.st_size
        files.append(ProjectFile(real, rel, st.st_size, text))
    if not files:
        raise FileRefused("the file patterns leave no file (every match is excluded)")
    if len(files) > max_files:
        raise FileRefused(f"{len(files)} files selected; an ask sends at most {max_files}",
                          hint="Narrow the globs, or exclude files with '!pattern'.")
    if total > max_total_bytes:
        raise FileRefused(f"the files add up to {total:,} bytes; an ask sends at most {max_total_bytes:,}",
                          hint="Send fewer or smaller files.")
    return tuple(files)


def _fence(content: str) -> str:
    longest = run = 0
    for ch in content:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def inline_block(f: ProjectFile) -> str:
    """One file as a fenced block headed by its path."""
    if not f.text:
        raise FileRefused(f"{f.rel!r} is a binary file and cannot go into the prompt",
                          hint="Upload it instead (attach: \"upload\", the default).")
    try:
        content = f.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FileRefused(f"{f.rel!r} cannot be read as UTF-8 text: {exc}") from None
    fence = _fence(content)
    lang = _LANG.get(f.path.suffix.lower(), "")
    return f"`{f.rel}`\n{fence}{lang}\n{content.rstrip(chr(10))}\n{fence}"


def inline_prompt(question: str, files: Sequence[ProjectFile]) -> str:
    """The question, then each file as a fenced block headed by its path."""
    prompt = "\n\n".join([question, *(inline_block(f) for f in files)])
    if len(prompt) > MAX_INLINE_CHARS:
        raise FileRefused(f"the question with its files inline is {len(prompt):,} characters; at most "
                          f"{MAX_INLINE_CHARS:,}", hint="Upload the files instead (attach: \"upload\").")
    return prompt


def estimate_tokens(chars: int) -> int:
    """A rough token count for English text and code: about four characters a token."""
    return math.ceil(chars / 4)


def dry_run(question: str, files: Sequence[ProjectFile], attach: str) -> dict[str, object]:
    """What an ask would send, without sending it: the question, the files with their sizes, the inline size and
    a token estimate (the prompt and the text files; a binary file's tokens depend on the site)."""
    text_chars = 0
    inline_chars: int | None = None
    if attach == "inline":
        prompt = inline_prompt(question, files)
        inline_chars = len(prompt)
        text_chars = len(prompt)
    else:
        text_chars = len(question) + sum(f.size for f in files if f.text)
        blocks = [inline_block(f) for f in files if f.text]
        if len(blocks) == len(files):
            inline_chars = len("\n\n".join([question, *blocks]))
    out: dict[str, object] = {
        "question": question, "attach": attach, "files": [f.as_json() for f in files],
        "totalBytes": sum(f.size for f in files), "estimatedTokens": estimate_tokens(text_chars)}
    if inline_chars is not None:
        out["inlineChars"] = inline_chars
    return out


def dry_run_text(report: dict[str, object]) -> str:
    files = report["files"]
    assert isinstance(files, list)
    lines = [f"dry run: nothing was sent (attach: {report['attach']})", "question:",
             *("  " + line for line in str(report["question"]).splitlines()), f"files ({len(files)}):"]
    lines += [f"  {f['path']}  {f['size']:,} bytes{'' if f['text'] else '  (binary)'}" for f in files]
    lines.append(f"total: {report['totalBytes']:,} bytes")
    if "inlineChars" in report:
        lines.append(f"inline size: {report['inlineChars']:,} characters")
    else:
        lines.append("inline size: - (a binary file cannot go inline)")
    lines.append(f"estimated tokens: ~{report['estimatedTokens']:,}")
    return "\n".join(lines)
