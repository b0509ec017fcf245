"""Private state files: the state dir is 0700 and ours, every file in it 0600, and nothing is ever opened through a
symlink (``O_NOFOLLOW``; temp files ``O_EXCL``). The state dir holds conversation URLs, questions and answers, and
another local user must neither read them nor redirect our writes to files of their choosing."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .errors import StateDirRefused, StateFileError

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def ensure_private_dir(path: Path) -> None:
    """Create `path` (and parents) 0700, or check an existing one: a real directory, owned by us, then made 0700.

    Raises `StateFileError` for a symlink, a non-directory, or a directory another user owns."""
    try:
        path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise StateFileError(f"cannot create {path}: {exc.strerror or exc}",
                             hint="Pass --state-dir (or set AI_BRIDGE_STATE_DIR) to a folder you can write.") from exc
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise StateDirRefused(f"{path} is not a plain directory (a symlink or a file); refusing to use it",
                              hint="Remove it, or pass another --state-dir.")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise StateDirRefused(f"{path} belongs to another user (uid {st.st_uid}); refusing to use it",
                              hint="Pass a --state-dir of your own.")
    if stat.S_IMODE(st.st_mode) & 0o077:
        try:
            os.chmod(path, PRIVATE_DIR)
        except OSError as exc:
            raise StateFileError(f"cannot make {path} private: {exc.strerror or exc}") from exc


def writable(path: Path) -> bool:
    return os.access(path, os.W_OK | os.X_OK)


def open_private(path: Path | str, flags: int, *, dir_fd: int | None = None) -> int:
    """``os.open`` for a state file: never through a symlink, never blocking (a FIFO planted under a record's name
    would hang a plain open), created 0600, and only a regular file."""
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC | _NONBLOCK, PRIVATE_FILE, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StateFileError(f"{path} is a symlink; refusing to follow it",
                                 hint="Remove the link; ai-bridge never writes state through links.") from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StateFileError(f"{path} is not a regular file; refusing to use it")
        if stat.S_IMODE(st.st_mode) & 0o077:
            os.fchmod(fd, PRIVATE_FILE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_private(path: Path | str, limit: int, *, dir_fd: int | None = None) -> bytes | None:
    """The file's bytes (at most `limit`; a larger file is an error), or None when it does not exist. A FIFO, a
    device or a link is refused (`StateFileError`) without blocking."""
    try:
        fd = open_private(path, os.O_RDONLY, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise StateFileError(f"{path} is {size} bytes, over the {limit}-byte limit")
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > limit:  # it grew while read
                raise StateFileError(f"{path} is over the {limit}-byte limit")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_state_folder(path: Path) -> int | None:
    """A descriptor of a folder of the state dir (``jobs``, ``servers``) for reading records relative to it, or None
    when there is none: a real folder of ours, never a link (a ``jobs`` link would have the CLI rename files in
    the folder it points to). Raises `StateFileError` otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise StateDirRefused(f"{path} is not a plain folder (a symlink or a file); refusing to use it",
                                  hint="Remove it; ai-bridge makes it again.") from exc
        raise StateFileError(f"cannot open {path}: {exc.strerror or exc}") from exc
    st = os.fstat(fd)
    if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
        os.close(fd)
        raise StateDirRefused(f"{path} is not a folder of ours; refusing to use it",
                              hint="Remove it, or pass another --state-dir.")
    return fd


def set_aside(dir_fd: int, name: str) -> str | None:
    """Rename a bad record ``<name>.bad`` within its folder (never anywhere else); the new name, or None when it is
    gone. OSError when it cannot be moved."""
    try:
        os.replace(name, name + ".bad", src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    return name + ".bad"


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically: a fresh temp file (``O_EXCL``, never a planted link), fsync, rename,
    fsync of the directory so the rename itself survives a crash."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        os.unlink(tmp)  # a leftover of ours (pid reuse) or a planted link: never written through
    except FileNotFoundError:
        pass
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY | _CLOEXEC)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
