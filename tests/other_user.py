"""Running test programs as another local user (uid 65534, `nobody`) from any checkout.

A fresh clone in a private folder (`mktemp -d` makes 0700), or a venv whose interpreter lives under /root (pyenv),
cannot be entered by that user. So a program is copied, with the pure-Python packages it imports, into a new folder
every user can read, and run by the first interpreter that user can start: this venv's, the system's python3, else a
copy of this venv's base interpreter made in that folder."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

OTHER_UID = 65534  # nobody


def as_other_user(*cmd: str) -> list[str]:
    return ["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups", *cmd]


@contextmanager
def public_folder() -> Iterator[Path]:
    """A new folder every user can read and enter, removed afterwards. Skips without root or setpriv."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("running a process as another user needs root and setpriv")
    for base in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"):
        if all(p.stat().st_mode & 0o001 for p in (Path(base), *Path(base).parents)):
            folder = Path(tempfile.mkdtemp(prefix="ai-bridge-other-user-", dir=base))
            break
    else:
        pytest.fail("no temporary folder that other users can enter (/tmp, /var/tmp, /dev/shm)")
    try:
        folder.chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def copy_packages(folder: Path, packages: tuple[tuple[str, str], ...]) -> None:
    """Pure-Python packages (import name, distribution name) with their metadata, into `folder`."""
    for name, dist_name in packages:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.submodule_search_locations, name
        shutil.copytree(next(iter(spec.submodule_search_locations)), folder / name,
                        ignore=shutil.ignore_patterns("__pycache__", "_tests", "tests"))
        dist = importlib.metadata.distribution(dist_name)
        info = next(Path(str(dist.locate_file(f))).parent for f in dist.files or () if f.name == "METADATA")
        shutil.copytree(info, folder / info.name, dirs_exist_ok=True)
    readable(folder)


def readable(folder: Path) -> None:
    for path in (folder, *folder.rglob("*")):
        path.chmod(0o755 if path.is_dir() or path.parent.name == "bin" else 0o644)


def python_for_other_user(folder: Path, imports: str = "") -> list[str]:
    """How uid 65534 starts a Python that can import `imports` (comma-separated) from `folder`: the first
    interpreter that user can run, else a copy of this venv's base interpreter in `folder`."""
    candidates = [sys.executable, getattr(sys, "_base_executable", ""), "/usr/bin/python3",
                  shutil.which("python3") or ""]
    python = next(([c] for c in candidates if c and runs([c], folder, imports)), None)
    if python is None:
        python = copy_interpreter(Path(sys.base_prefix), folder / "python")
        assert runs(python, folder, imports), f"uid {OTHER_UID} cannot run a copy of {sys.base_prefix}"
    return python


def runs(python: list[str], folder: Path, imports: str) -> bool:
    probe = f"import sys; sys.path.insert(0, {str(folder)!r})" + (f"; import {imports}" if imports else "")
    try:
        done = subprocess.run(as_other_user(*python, "-s", "-E", "-c", probe), cwd="/", capture_output=True,
                              timeout=30, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    except OSError:
        return False
    return done.returncode == 0


def copy_interpreter(base: Path, dest: Path) -> list[str]:
    """This venv's base interpreter copied into `dest` (binary, its shared library, the standard library without
    tests), and how to start it."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    binary = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    (dest / "bin").mkdir(parents=True)
    shutil.copy2(binary, dest / "bin" / version)
    shutil.copytree(base / "lib" / version, dest / "lib" / version, symlinks=True,
                    ignore=shutil.ignore_patterns("test", "tests", "idlelib", "tkinter", "site-packages",
                                                  "__pycache__", "ensurepip", "turtledemo"))
    for lib in (base / "lib").glob("libpython*.so*"):
        shutil.copy2(lib, dest / "lib" / lib.name)
    readable(dest)
    # The binary may find its shared library by an absolute RPATH into the private folder: name the copy.
    return ["env", f"LD_LIBRARY_PATH={dest / 'lib'}", str(dest / "bin" / version)]
