"""``ai-bridge extension --zip PATH``: the bundled Chrome extension as one file a user can carry to the machine of
their everyday Chrome (docs/install.md, docs/remote.md), unzip and load unpacked.

The archive holds one folder, ``ai-bridge-extension-<version>/``, with the extension's files and nothing else (no
caches, no dotfiles). It is reproducible: entries sorted, fixed timestamps and modes, so the same version gives the
same bytes. It is written to a temporary file beside PATH and renamed into place: a half-written zip never has the
name.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from pathlib import Path

from .. import __version__
from ..paths import extension_path

FIXED_TIME = (2026, 1, 1, 0, 0, 0)  # zip stores local times from 1980 on; any fixed one makes the bytes repeatable
SUFFIXES = (".js", ".json", ".html", ".css", ".png", ".svg", ".txt", ".md")


def extension_files(root: Path) -> list[Path]:
    """The files of the unpacked extension at `root` that belong in it, sorted."""
    found = [p for p in root.rglob("*") if p.is_file() and p.suffix in SUFFIXES
             and not any(part.startswith((".", "__")) for part in p.relative_to(root).parts)]
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def write_zip(target: Path, root: Path | None = None) -> tuple[Path, int]:
    """Write the extension's zip to `target`; (the folder name inside, number of files)."""
    root = root or extension_path()
    if not (root / "manifest.json").is_file():
        raise FileNotFoundError(f"no extension at {root} (no manifest.json)")
    folder = Path(f"ai-bridge-extension-{__version__}")
    files = extension_files(root)
    target = target.expanduser().resolve()
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in files:
                info = zipfile.ZipInfo((folder / path.relative_to(root)).as_posix(), FIXED_TIME)
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, path.read_bytes())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return folder, len(files)


def zip_main(target: Path) -> int:
    try:
        folder, count = write_zip(target)
    except OSError as exc:
        print(f"ai-bridge extension: cannot write {target}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(target.expanduser().resolve())
    print(f"{count} files in {folder}/. On the machine of your Chrome: unzip it, open chrome://extensions, turn on "
          f"Developer mode, choose 'Load unpacked' and pick the folder {folder}; then pair it: run `ai-bridge pair` "
          "where the server runs and paste the code into the extension's popup (docs/install.md).", file=sys.stderr)
    return 0
