"""`ai-bridge extension --zip PATH` (issue 39, item 7): the extension as one file to carry to a user's Chrome."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

import supervisor
from supervisor.app.cli import main
from supervisor.app.extension_zip import write_zip
from supervisor.paths import extension_path


def test_the_zip_unpacks_to_exactly_the_extension(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "ext.zip"
    assert main(["extension", "--zip", str(target)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(target) and "Load unpacked" in err and "ai-bridge pair" in err
    root = extension_path()
    shipped = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
               if p.is_file() and not any(part.startswith((".", "__")) for part in p.relative_to(root).parts)}
    folder = f"ai-bridge-extension-{supervisor.__version__}/"
    with zipfile.ZipFile(target) as zf:
        assert zf.testzip() is None
        names = zf.namelist()
        assert all(n.startswith(folder) for n in names)  # one folder: what 'Load unpacked' is pointed at
        unpacked = {n.removeprefix(folder): zf.read(n) for n in names}
    # Every file of the extension, byte for byte, and nothing else: the folder Chrome loads is the one tests load.
    assert unpacked == shipped and "manifest.json" in unpacked


def test_the_zip_is_reproducible_and_replaces_a_file_whole(tmp_path: Path) -> None:
    a, b = tmp_path / "a.zip", tmp_path / "b.zip"
    write_zip(a)
    b.write_bytes(b"an older zip, longer than nothing")
    write_zip(b)
    assert a.read_bytes() == b.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.zip", "b.zip"]  # no temporary file left


def test_without_zip_it_prints_the_folder_and_a_bad_target_is_one_line(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extension"]) == 0
    assert capsys.readouterr().out.strip() == str(extension_path())
    assert main(["extension", "--zip", str(tmp_path / "no" / "such" / "dir.zip")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ai-bridge extension: cannot write") and err.count("\n") == 1
