"""Files an ask sends with its question (issue 20): chosen by paths and globs relative to the project folder, checked
here on the server before anything is sent, then either uploaded through the site's own file input (the browser gets
private copies, `stage`) or put into the prompt as fenced blocks (`inline_prompt`).

Only the project's own regular files (issue 36; supervisor/project_walk.py finds and opens them): a pattern is
relative, has no ``..``; each file is opened once and judged by what was opened — resolved inside the project
folder, outside the state dir, not hidden unless the pattern names the hidden part (a plain-named link to ``.env`` is
refused), one hard link only, never the pairing key (by device and inode) — and the bytes read from that descriptor
are what is sent: inline, or as the copy the browser uploads. Limits on the count, the sizes and the walk. When any
file fails, nothing is sent: the whole selection is refused with a `FileRefused` that names the file.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import secrets
import shutil
import stat
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import attrs
import trio

from .errors import FileRefused, StateFileError
from .files import ensure_private_dir
from .project_walk import Budget, Rules, Walker, inside, is_glob, read_checked, real_path_of
from .safetext import quoted, shown_name

MAX_FILES = 10  # ChatGPT takes 10 files per message; Gemini about as many
MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_TOTAL_BYTES = 50 * 1024 * 1024
MAX_INLINE_CHARS = 400_000  # the question and its inlined files, as typed into the composer
MAX_PATTERNS = 100
ATTACH_MODES = ("upload", "inline")
SECRET_FILES = ("pairing.key",)  # in the state dir: never sent, whatever name or link reaches it
STAGING = "uploads"  # <state-dir>/uploads: the copies the browser uploads
STAGING_KEEP_S = 24 * 3600  # a background job's ask may upload hours after it was started
# Selections walking and reading at once (the rest wait their turn); one limiter per trio run, since a token an
# abandoned thread holds is handed back to the run that lent it.
_SELECTIONS: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar("ai_bridge_file_selections")


def _selections() -> trio.CapacityLimiter:
    try:
        return _SELECTIONS.get()
    except LookupError:
        limiter = trio.CapacityLimiter(2)
        _SELECTIONS.set(limiter)
        return limiter

_LANG = {".py": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript", ".tsx": "tsx",
         ".jsx": "jsx", ".rs": "rust", ".go": "go", ".java": "java", ".c": "c", ".h": "c", ".cc": "cpp",
         ".cpp": "cpp", ".hpp": "cpp", ".rb": "ruby", ".sh": "bash", ".md": "markdown", ".json": "json",
         ".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".html": "html", ".css": "css", ".sql": "sql",
         ".kt": "kotlin", ".swift": "swift", ".cs": "csharp", ".php": "php", ".txt": ""}


@attrs.frozen
class ProjectFile:
    """One checked file: its real path (links resolved), its path as the question names it (shown escaped), its size,
    whether it reads as text, and its bytes, read once from the descriptor the checks were made on."""

    path: Path
    rel: str
    size: int
    text: bool
    data: bytes = attrs.field(default=b"", repr=False, eq=False)

    def as_json(self) -> dict[str, object]:
        return {"path": self.rel, "size": self.size, "text": self.text}


def _check_pattern(pattern: str) -> PurePosixPath:
    if not pattern or not pattern.strip():
        raise FileRefused("an empty file pattern", hint="Name files relative to the project folder, e.g. src/app.py "
                          "or 'src/**/*.py'.")
    if "\x00" in pattern or any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in pattern):
        raise FileRefused(f"the file pattern {quoted(pattern)} has a control character")
    try:
        os.fsencode(pattern)
    except UnicodeError:
        raise FileRefused(f"the file pattern {quoted(pattern)} is not a file name this system can "
                          "encode") from None
    p = PurePosixPath(pattern.replace("\\", "/"))
    if p.is_absolute() or pattern.startswith("~"):
        raise FileRefused(f"{quoted(pattern)} is not relative to the project folder",
                          hint="Files come from inside the project only: name them relative to it.")
    if ".." in p.parts:
        raise FileRefused(f"{quoted(pattern)} leaves the project folder ('..')",
                          hint="Files come from inside the project only.")
    return p


def _reads_as_text(data: bytes) -> bool:
    head = data[:64 * 1024]
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return len(data) > len(head) and exc.start >= len(head) - 3  # a character cut at the end of the sample
    return True


def _forbidden(state: Path | None) -> frozenset[tuple[int, int]]:
    """(device, inode) of the state dir's secrets: a bind mount or a hard link of them is refused by identity."""
    if state is None:
        return frozenset()
    out = set()
    for name in SECRET_FILES:
        try:
            st = os.stat(state / name)
        except OSError:
            continue
        out.add((st.st_dev, st.st_ino))
    return frozenset(out)


def select_files(root: Path, patterns: Sequence[str], *, state_dir: Path | None = None,
                 max_files: int = MAX_FILES, max_file_bytes: int = MAX_FILE_BYTES,
                 max_total_bytes: int = MAX_TOTAL_BYTES, budget: Budget | None = None) -> tuple[ProjectFile, ...]:
    """The project files `patterns` name (paths, globs with ``**``, folders; a pattern starting with ``!`` excludes
    what it matches), each checked and read. Raises `FileRefused` naming the first file or pattern that fails, or the
    limit a selection breaks. Blocking (a walk, reads): the server calls it in a worker thread (`select_files_async`).
    """
    if len(patterns) > MAX_PATTERNS:
        raise FileRefused(f"{len(patterns)} file patterns; at most {MAX_PATTERNS}")
    checked = [(raw.startswith("!"), _check_pattern(raw[1:] if raw.startswith("!") else raw)) for raw in patterns]
    try:
        base = root.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise FileRefused(f"the project folder {shown_name(str(root))} cannot be read: {exc}") from None
    state = state_dir.resolve() if state_dir is not None else None
    if state is not None and inside(base, state):
        raise FileRefused(f"the project folder {shown_name(str(base))} is inside ai-bridge's state dir",
                          hint="Run the ask from your project's folder.")
    walker = Walker(base, budget or Budget())
    found_as: dict[str, frozenset[str]] = {}  # as found -> the hidden names its (first) pattern names
    excluded_rels: set[str] = set()
    for raw, (negate, pattern) in zip(patterns, checked, strict=True):
        found = walker.expand(pattern)
        if negate:
            excluded_rels.update(found)
            continue
        if not found:
            what = "matches no file" if any(is_glob(p) for p in pattern.parts) else "does not exist"
            raise FileRefused(f"{quoted(raw)} {what} in the project folder {shown_name(str(base))}",
                              hint="Paths and globs are relative to the project folder.")
        named = frozenset(p for p in pattern.parts if p.startswith("."))
        for rel in found:
            found_as.setdefault(rel, named)
    # Duplicates and exclusions by the file a path leads to (a link and its target are one file); each path is
    # resolved once, however many patterns found it.
    excluded = {r for r in (real_path_of(base, rel) for rel in excluded_rels) if r is not None}
    picked: dict[Path, tuple[str, frozenset[str]]] = {}
    for rel, named in found_as.items():
        walker.budget.spend()
        real = real_path_of(base, rel)
        key = real if real is not None else base / rel  # a loop or a broken link: refused when opened
        picked.setdefault(key, (rel, named))
    chosen = [(rel, named) for real, (rel, named) in picked.items() if real not in excluded]
    if not chosen:
        raise FileRefused("the file patterns leave no file (every match is excluded)")
    if len(chosen) > max_files:  # before any file is opened
        raise FileRefused(f"{len(chosen)} files selected; an ask sends at most {max_files}",
                          hint="Narrow the globs, or exclude files with '!pattern'"
                          + ("; or let the text files go as bundles (bundle: true, or leave it unset)."
                             if max_files == MAX_FILES else "."))
    rules = Rules(base, state, _forbidden(state), max_file_bytes)
    files: list[ProjectFile] = []
    total = 0
    for rel, named in chosen:
        real, data = read_checked(rules, rel, named)
        if real in excluded:  # it resolves elsewhere now than when the exclusions were made
            continue
        total += len(data)
        if total > max_total_bytes:
            raise FileRefused(f"the files add up to over {max_total_bytes:,} bytes; an ask sends at most "
                              f"{max_total_bytes:,}", hint="Send fewer or smaller files.")
        files.append(ProjectFile(real, shown_name(rel), len(data), _reads_as_text(data), data))
    if not files:
        raise FileRefused("the file patterns leave no file (every match is excluded)")
    return tuple(files)


async def select_files_async(root: Path, patterns: Sequence[str], *, state_dir: Path | None = None,
                             max_files: int = MAX_FILES) -> tuple[ProjectFile, ...]:
    """`select_files` in a worker thread (the walk and the reads never hold up the server's other clients), one
    selection at a time per process beyond `SELECTIONS`, each within its `Budget`."""
    return await trio.to_thread.run_sync(
        functools.partial(select_files, root, list(patterns), state_dir=state_dir, max_files=max_files),
        limiter=_selections(), abandon_on_cancel=True)


def _fence(content: str) -> str:
    longest = run = 0
    for ch in content:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def inline_block(f: ProjectFile) -> str:
    """One file as a fenced block headed by its path."""
    if not f.text:
        raise FileRefused(f"'{f.rel}' is a binary file and cannot go into the prompt",
                          hint="Upload it instead (attach: \"upload\", the default).")
    try:
        content = f.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefused(f"'{f.rel}' cannot be read as UTF-8 text: {exc}") from None
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


# -- the copies the browser uploads ------------------------------------------------------------------------------------


def _sweep(folder: Path, now: float) -> None:
    """Remove staged copies older than `STAGING_KEEP_S` (their asks have long uploaded them)."""
    with contextlib.suppress(OSError), os.scandir(folder) as it:
        for e in it:
            try:
                born = float(e.name.split("-", 1)[0])
            except ValueError:
                born = 0.0
            if now - born > STAGING_KEEP_S and e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path, ignore_errors=True)


def _private_folder(path: Path) -> None:
    """Make `path` a fresh 0700 folder; a planted link or another user's folder there is refused."""
    os.mkdir(path, 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise FileRefused(f"{path} is not a private folder of ours")


def _staging_root(state_dir: Path | None) -> Path:
    if state_dir is not None:
        root = state_dir / STAGING
        try:
            ensure_private_dir(root)
            if os.access(root, os.W_OK | os.X_OK):
                return root
        except (OSError, StateFileError):  # a read-only state dir: the system's temp folder instead
            pass
    root = Path(tempfile.gettempdir()) / f"ai-bridge-{os.getuid()}-uploads"
    ensure_private_dir(root)
    return root


def stage(files: Sequence[ProjectFile], state_dir: Path | None) -> tuple[str, ...]:
    """Write each file's checked bytes to a private copy (``<state-dir>/uploads/<time>-<random>/<n>/<name>``, 0600
    in 0700 folders, never through a link) and return the copies' paths, for the browser to upload: it uploads
    exactly what was checked, whatever happens to the project's file meanwhile. The copy keeps the file's name (as
    shown: escaped where it is not plain text), which the site sees."""
    now = time.time()
    root = _staging_root(state_dir)
    _sweep(root, now)
    batch = root / f"{now:.3f}-{secrets.token_hex(6)}"
    _private_folder(batch)
    out = []
    for i, f in enumerate(files):
        folder = batch / str(i)
        _private_folder(folder)
        name = PurePosixPath(f.rel).name.replace("\\", "_") or "file"
        path = folder / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            view = memoryview(f.data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        out.append(str(path))
    return tuple(out)


async def stage_async(files: Sequence[ProjectFile], state_dir: Path | None) -> tuple[str, ...]:
    if not files:
        return ()
    try:
        return await trio.to_thread.run_sync(stage, list(files), state_dir)
    except OSError as exc:
        raise FileRefused(f"the files could not be copied for upload: {exc.strerror or exc}",
                          hint="Check that the state dir (or the temp folder) has room and is writable.") from None


def unstage(paths: Sequence[str]) -> None:
    """Remove the copies of one ask (their batch folder), once the site has them."""
    batches = {Path(p).parent.parent for p in paths}
    for b in batches:
        if b.parent.name == STAGING or b.parent.name.endswith(f"-{STAGING}"):  # only a batch of ours
            shutil.rmtree(b, ignore_errors=True)
