"""Finding and opening the project files a selection names (supervisor/attachments.py holds the rules around it).

- Patterns are matched segment by segment (``*``, ``?``, ``[...]`` within a name; ``**`` any number of folders),
  walking only from each pattern's literal prefix; a glob never walks into a linked folder nor, unless the pattern
  names it, a hidden one. Every folder is listed once per selection, however many patterns walk it, and the walk has a
  budget (`Budget`): too many entries or too long, and the selection is refused naming the limit, at once.
- A file is opened once (`read_checked`), and the checks are made on the open descriptor: what ``/proc/self/fd``
  says it is (the real path, links followed), its type, its link count, its device and inode. The bytes sent are the
  bytes read from that descriptor: swapping the file for a link after a check changes nothing.
- Names are kept as Python keeps them (``surrogateescape`` for bytes that are not UTF-8) and shown escaped
  (`safetext.shown_name`).
"""

from __future__ import annotations

import errno
import functools
import os
import re
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import attrs

from .errors import FileRefused
from .safetext import quoted, shown_name

GLOB_CHARS = frozenset("*?[")
MAX_WALK_ENTRIES = 100_000
MAX_WALK_S = 10.0
_PROC_FD = sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd")
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
NARROW = "Narrow the patterns (start them with a folder, e.g. 'src/**/*.py'), or exclude with '!pattern'."


def is_glob(part: str) -> bool:
    return any(c in GLOB_CHARS for c in part)


@attrs.define
class Budget:
    """How much walking one selection may do: entries listed, and time (a monotonic deadline)."""

    max_entries: int = MAX_WALK_ENTRIES
    max_s: float = MAX_WALK_S
    entries: int = 0
    deadline: float = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.deadline = time.monotonic() + self.max_s

    def spend(self, n: int = 1) -> None:
        self.entries += n
        if self.entries > self.max_entries:
            raise FileRefused(f"the file patterns walk more than {self.max_entries:,} folder entries (the limit)",
                              hint=NARROW)
        if time.monotonic() > self.deadline:
            raise FileRefused(f"finding the files took more than {self.max_s:g} s (the limit)", hint=NARROW)


@attrs.frozen
class Entry:
    name: str
    is_dir: bool  # a real folder (not a link to one)
    is_link: bool


@functools.lru_cache(maxsize=512)
def _segment_regex(segment: str) -> re.Pattern[str]:
    """One path segment's glob as a regex: ``*`` and ``?`` within the name, ``[...]`` a class (``[!...]`` negated)."""
    out, i = [], 0
    while i < len(segment):
        c = segment[i]
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            j = i + 1
            if j < len(segment) and segment[j] in "!^":
                j += 1
            if j < len(segment) and segment[j] == "]":
                j += 1
            while j < len(segment) and segment[j] != "]":
                j += 1
            if j >= len(segment):
                out.append(re.escape(c))
            else:
                body = segment[i + 1:j]
                neg = body[:1] in ("!", "^")
                body = body[1:] if neg else body
                body = body.replace("\\", "\\\\")
                out.append(f"[{'^' if neg else ''}{body}]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    try:
        return re.compile("".join(out), re.DOTALL)
    except re.error:  # a class the regex engine refuses ([z-a]): it matches nothing, as in fnmatch
        return re.compile(r"(?!)")


class Walker:
    """The walk of one selection: folder listings cached, the budget spent on each entry listed."""

    def __init__(self, base: Path, budget: Budget) -> None:
        self.base = base
        self.budget = budget
        self._listed: dict[str, list[Entry]] = {}
        self._kinds: dict[str, Entry] = {}  # every path listed so far: what it is

    def listing(self, rel: str) -> list[Entry]:
        got = self._listed.get(rel)
        if got is not None:
            return got
        out: list[Entry] = []
        try:
            with os.scandir(self.base / rel if rel else self.base) as it:
                for e in it:
                    self.budget.spend()
                    try:
                        is_link = e.is_symlink()
                        is_dir = not is_link and e.is_dir(follow_symlinks=False)
                    except OSError:
                        is_link = is_dir = False
                    entry = Entry(e.name, is_dir, is_link)
                    out.append(entry)
                    self._kinds[f"{rel}/{e.name}" if rel else e.name] = entry
        except OSError:
            pass  # not a folder, gone, or unreadable: nothing under it
        out.sort(key=lambda e: e.name)
        self._listed[rel] = out
        return out

    def files_under(self, rel: str, named: frozenset[str]) -> Iterator[str]:
        """Every file (and link) under the folder `rel`, recursively, hidden ones only where named."""
        for e in self.listing(rel):
            child = f"{rel}/{e.name}" if rel else e.name
            if e.name.startswith(".") and e.name not in named:
                continue
            if e.is_dir:
                yield from self.files_under(child, named)
            elif not (e.is_link and os.path.isdir(self.base / child)):  # a linked folder is not walked
                yield child

    def expand(self, pattern: PurePosixPath) -> list[str]:
        """The paths (relative to the base, as found) a pattern names: a plain path as is (when it exists), a
        glob's matches; a folder stands for its files."""
        named = frozenset(p for p in pattern.parts if p.startswith("."))
        parts = [p for p in pattern.parts if p not in ("", ".")]
        # ** repeated is ** once (each would multiply the walk)
        segs = [p for i, p in enumerate(parts) if not (p == "**" and i and parts[i - 1] == "**")]
        if not any(is_glob(s) for s in segs):
            rel = "/".join(segs)
            if not os.path.lexists(self.base / rel):
                return []
            self.budget.spend()
            candidates = [rel]
        else:
            first = next(i for i, s in enumerate(segs) if is_glob(s))
            candidates = sorted(set(self._match("/".join(segs[:first]), segs[first:], named)))
        out: list[str] = []
        for rel in candidates:
            if self._is_folder(rel):
                out.extend(self.files_under(rel, named))
            else:
                out.append(rel)
        return out

    def _is_folder(self, rel: str) -> bool:
        """A real folder (not a link to one); from the listings when the path was listed."""
        known = self._kinds.get(rel)
        if known is not None:
            return known.is_dir
        try:
            return stat.S_ISDIR(os.lstat(self.base / rel).st_mode) if rel else True
        except OSError:
            return False

    def _match(self, rel: str, segs: list[str], named: frozenset[str]) -> Iterator[str]:
        if not segs:
            yield rel
            return
        seg, rest = segs[0], segs[1:]
        if seg == "**":
            yield from self._match(rel, rest, named)  # no folder
            for e in self.listing(rel):
                if e.is_dir and (not e.name.startswith(".") or e.name in named):
                    yield from self._match(f"{rel}/{e.name}" if rel else e.name, segs, named)
            return
        if not is_glob(seg):
            child = f"{rel}/{seg}" if rel else seg
            if rest:
                yield from self._match(child, rest, named)
            elif os.path.lexists(self.base / child):
                yield child
            return
        rx = _segment_regex(seg)
        for e in self.listing(rel):
            if e.name.startswith(".") and e.name not in named:
                continue
            if not rx.fullmatch(e.name):
                continue
            child = f"{rel}/{e.name}" if rel else e.name
            if not rest:
                yield child
            elif e.is_dir:  # a glob never walks into a linked folder
                yield from self._match(child, rest, named)


def hidden_ok(rel: PurePosixPath, named: frozenset[str]) -> bool:
    """No hidden part (.git, .env) unless the pattern names it."""
    return all(not part.startswith(".") or part in named for part in rel.parts)


def inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _real_path(fd: int, path: Path, st: os.stat_result) -> Path:
    """What the open descriptor is: its path with every link resolved, as the kernel knows it."""
    if _PROC_FD:
        real = os.readlink(f"/proc/self/fd/{fd}")
        if not real.startswith("/") or real.endswith(" (deleted)"):
            raise FileRefused(f"{shown_name(str(path))} was removed or replaced while it was read")
        return Path(real)
    # Elsewhere: resolve the path, and check that it names the very file we hold open.
    real_path = Path(os.path.realpath(path))
    again = os.stat(real_path)
    if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):
        raise FileRefused(f"{shown_name(str(path))} was replaced while it was read")
    return real_path


@attrs.frozen
class Rules:
    """What a file must be to leave: inside `base`, outside `state`, not the pairing key, one link, this size."""

    base: Path
    state: Path | None
    forbidden: frozenset[tuple[int, int]]  # (device, inode) of the state dir's secrets
    max_file_bytes: int


def read_checked(rules: Rules, rel: str, named: frozenset[str]) -> tuple[Path, bytes]:
    """Open `rel` (under the base) once, check what was opened, and read it: its real path and its bytes."""
    shown = quoted(rel)
    path = rules.base / rel
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileRefused(f"{shown} is a loop of symbolic links") from None
        if exc.errno == errno.ENOENT:
            raise FileRefused(f"{shown} is a broken link, or was removed") from None
        raise FileRefused(f"{shown} cannot be read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(f"{shown} is not a regular file")
        real = _real_path(fd, path, st)
        if not inside(real, rules.base):
            raise FileRefused(f"{shown} links outside the project folder (to {shown_name(str(real))})",
                              hint="Files come from inside the project only.")
        if rules.state is not None and inside(real, rules.state):
            raise FileRefused(f"{shown} is in ai-bridge's state dir, which is never sent")
        if (st.st_dev, st.st_ino) in rules.forbidden:
            raise FileRefused(f"{shown} is ai-bridge's pairing key, which is never sent")
        real_rel = PurePosixPath(real.relative_to(rules.base).as_posix())
        if not hidden_ok(real_rel, named):
            raise FileRefused(f"{shown} links to the hidden {quoted(str(real_rel))}, which the pattern does "
                              "not name", hint="Name hidden files and folders in the pattern to send them.")
        if st.st_nlink > 1:
            raise FileRefused(f"{shown} has {st.st_nlink} hard links; only a file with one is sent",
                              hint="A hard link can be a file from anywhere (even the state dir's pairing key). "
                              "Send a copy.")
        if st.st_size > rules.max_file_bytes:
            raise FileRefused(f"{shown} is {st.st_size:,} bytes; a file may have at most {rules.max_file_bytes:,}")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > rules.max_file_bytes:  # it grew while read
                raise FileRefused(f"{shown} is over {rules.max_file_bytes:,} bytes (it grew while it was read)")
            chunks.append(chunk)
        return real, b"".join(chunks)
    except OSError as exc:
        raise FileRefused(f"{shown} cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def real_path_of(base: Path, rel: str) -> Path | None:
    """`rel`'s path with links resolved (for exclusions and duplicates), or None when it cannot be resolved."""
    try:
        return Path(os.path.realpath(base / rel, strict=True))
    except (OSError, ValueError):
        return None
