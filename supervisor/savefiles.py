"""Saving a file that came from a page (the download tool, an answer's files back): its name made a plain file name,
saved under a free name in a folder of the user's, never over a file that is there."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .errors import BridgeError, DownloadFailed, InvalidArgument
from .files import ensure_private_dir

NAME_MAX_BYTES = 255  # one name on ext4, btrfs, xfs, tmpfs (a longer one is ENAMETOOLONG)
NUMBERED = " (999)"  # what free_path may add to a name
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f/\\\\:*?\"<>|\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
                     "\ud800-\udfff]")


def file_name(disposition: str, url: str) -> str:
    """A plain file name: Content-Disposition's, else the URL path's last part, else 'download'."""
    m = re.search(r"filename\*\s*=\s*[^']*''([^;]+)", disposition) or re.search(
        r'filename\s*=\s*"([^"]*)"', disposition) or re.search(r"filename\s*=\s*([^;]+)", disposition)
    raw = unquote(m.group(1).strip()) if m else unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    return plain_name(raw)


def plain_name(raw: str) -> str:
    """`raw` as one plain file name: its last path part; control characters (C0, DEL, C1), bidi controls (a
    right-to-left override makes ``invoice\u202efdp.exe`` show as ``invoiceexe.pdf``), separators and reserved
    characters replaced by ``_``; cut to the file system's limit in UTF-8 bytes, keeping the extension; else
    'download'."""
    name = _UNSAFE.sub("_", raw.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]).strip(" .")
    return cut_name(name, NAME_MAX_BYTES - len(NUMBERED.encode())).strip(" .") or "download"


def cut_name(name: str, limit: int) -> str:
    """`name` in at most `limit` UTF-8 bytes, cut between characters, its extension (a short one) kept."""
    if len(name.encode()) <= limit:
        return name
    stem, dot, suffix = name.rpartition(".")
    if not dot or not stem or len(suffix.encode()) > 16:
        stem, dot, suffix = name, "", ""
    room = limit - len((dot + suffix).encode())
    return stem.encode()[:room].decode("utf-8", "ignore") + dot + suffix


def free_path(base: Path, name: str) -> Path:
    stem, dot, suffix = name.rpartition(".") if "." in name else (name, "", "")
    for n in range(1000):
        candidate = base / (name if n == 0 else f"{stem} ({n}){dot}{suffix}")
        if not candidate.exists():
            return candidate
    raise InvalidArgument(f"the download folder already holds 1000 files named like {name}")


def write_new(path: Path, data: bytes) -> None:
    def failed(exc: OSError) -> DownloadFailed:
        return DownloadFailed(f"the file could not be saved as {path.name!r}: {exc.strerror or exc}",
                              hint="Check the download folder (space, permissions).")

    try:
        out = open(path, "xb")  # never over a file that is there
    except OSError as exc:
        raise failed(exc) from None
    try:
        with out:
            out.write(data)
    except OSError as exc:
        with contextlib.suppress(OSError):
            path.unlink()  # ours, and partial: no download
        raise failed(exc) from None


def save_new(base: Path, name: str, data: bytes) -> Path:
    """`data` saved as `name` (a plain name) in `base`, numbered when the name is taken; never over a file that is
    there, never outside `base`."""
    for _ in range(3):  # another writer may take the free name between the check and the write
        target = free_path(base, name)
        if target.resolve().parent != base.resolve():
            raise InvalidArgument(f"the file name {name!r} would leave the folder")
        try:
            write_new(target, data)
        except DownloadFailed as exc:
            if isinstance(exc.__context__, FileExistsError) or target.exists():
                continue
            raise
        return target
    raise InvalidArgument(f"the folder keeps taking the name {name!r}")


FILES_BACK = "files"  # <state-dir>/files: where an answer's images and files go when the ask names no folder


def answer_folder(root: Path, wanted: str | None, state_dir: Path | None, *, inside_root: bool = True) -> str:
    """The folder an answer's generated images and files are saved in (issue 35), created if missing: `wanted`
    (relative to `root`; an MCP client's must stay inside it, the terminal user's may be anywhere), else
    ``<state-dir>/files``; "" when there is neither (they stay on the page). `InvalidArgument` for a folder that
    cannot be one."""
    if wanted is None:
        if state_dir is None:
            return ""
        folder = state_dir / FILES_BACK
        try:
            ensure_private_dir(folder)
        except BridgeError:
            return ""  # a read-only state dir: the files stay on the page (the answer is what matters)
        return str(folder)
    if not wanted.strip() or any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in wanted):
        raise InvalidArgument(f"save_to {wanted!r} is not a folder name")
    raw = Path(wanted).expanduser() if not inside_root else Path(wanted)
    if inside_root and (raw.is_absolute() or ".." in raw.parts or wanted.startswith("~")):
        raise InvalidArgument(f"save_to {wanted!r} must be a folder inside the project, relative to it",
                              hint="For example save_to: \"out/images\".")
    base = root.resolve()
    folder = base / raw if not raw.is_absolute() else raw
    try:
        folder.mkdir(parents=True, exist_ok=True)
        real = folder.resolve(strict=True)
    except OSError as exc:
        raise InvalidArgument(f"save_to {wanted!r}: the folder cannot be made: {exc.strerror or exc}") from None
    if not real.is_dir():
        raise InvalidArgument(f"save_to {wanted!r} is not a folder")
    if inside_root and real != base and base not in real.parents:
        raise InvalidArgument(f"save_to {wanted!r} leads out of the project folder (a link)")
    if not os.access(real, os.W_OK | os.X_OK):
        raise InvalidArgument(f"save_to {wanted!r}: the folder is not writable")
    return str(real)
