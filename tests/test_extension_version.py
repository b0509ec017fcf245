"""The extension's version is its own (issue 25.4): every change to a file that ships in extension/ bumps it, so a
stale extension still loaded in Chrome can be told from a current one (the server compares versions on hello and
says "reload the extension").

`RECORDED` holds the version and a hash of every extension file (manifest.json without its version fields). Changing
an extension file without bumping the version fails here with what to do; bumping it without recording fails too.
"""

from __future__ import annotations

import hashlib
import json
import sys

import supervisor

from .conftest import REPO

EXTENSION = REPO / "extension"
RECORDED = ("0.5.0", "a9209f825bc53547495ca2c283ae18d5dc4b8d3a912a445cd1ee83e9570cedb6")


def extension_hash() -> str:
    """sha256 over each shipped file's path and bytes, sorted by path; manifest.json without version/version_name
    (the bump itself must not change the hash)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in EXTENSION.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        rel = path.relative_to(EXTENSION).as_posix()
        data = path.read_bytes()
        if rel == "manifest.json":
            manifest = json.loads(data)
            manifest.pop("version", None)
            manifest.pop("version_name", None)
            data = json.dumps(manifest, sort_keys=True).encode()
        digest.update(rel.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def test_changed_extension_files_bump_its_version() -> None:
    manifest = json.loads((EXTENSION / "manifest.json").read_text())
    version, recorded = RECORDED
    now = extension_hash()
    if now != recorded and manifest["version"] == version:
        raise AssertionError(
            f"extension/ changed since version {version} was recorded, but its version did not: bump the version in "
            "extension/manifest.json (version and version_name) and supervisor/__init__.py, then set RECORDED in "
            f"tests/test_extension_version.py to (\"<new version>\", \"{now}\"). A user's Chrome still running the "
            "old files then shows as stale in bridge_status instead of passing for current.")
    assert (manifest["version"], now) == RECORDED, (
        f"the extension's version is {manifest['version']}: record it with its files' hash in "
        f"tests/test_extension_version.py: RECORDED = (\"{manifest['version']}\", \"{now}\")")
    assert manifest["version"] == supervisor.__version__


if __name__ == "__main__":  # prints the hash to record
    print(extension_hash(), file=sys.stdout)
