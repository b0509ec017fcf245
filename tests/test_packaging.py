"""What `pip install .` gives a user: a wheel holding both packages and every extension file, a working `ai-bridge`
outside the source tree, and one version everywhere (package, wheel, manifest) with the extension and the server
speaking the same protocol version."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import supervisor
from supervisor.constants import SHARED

from .conftest import REPO

EXTENSION = REPO / "extension"


def test_versions_and_protocol_do_not_drift() -> None:
    manifest = json.loads((EXTENSION / "manifest.json").read_text())
    assert manifest["version"] == supervisor.__version__, "bump extension/manifest.json with supervisor/__init__.py"
    assert manifest["version_name"] == f"{supervisor.__version__} (protocol {SHARED.protocol_version})"


# Values both sides read from extension/shared.js; a literal copy of any of them elsewhere is drift waiting to
# happen. (Python: the digits as a constant; JavaScript: any occurrence outside shared.js.)
SHARED_LITERALS = [str(SHARED.discovery_ports.start), str(SHARED.discovery_ports.stop - 1), SHARED.extension_id,
                   str(SHARED.max_frame_bytes), *(str(getattr(SHARED.close, f)) for f in
                                                  ("dropped", "bad_hello", "bad_token", "hello_timeout", "replaced"))]


def test_shared_constants_have_one_source() -> None:
    for path in [*EXTENSION.glob("*.js"), *EXTENSION.glob("*.html")]:
        if path.name == "shared.js":
            continue
        text = path.read_text()
        for literal in SHARED_LITERALS:
            assert not re.search(rf"(?<![\w.]){re.escape(literal)}(?![\w])", text), (path.name, literal)
        # policy.js is pure (no chrome.*, no shared value) so that node can run it next to the server's copy.
        assert "shared.js" in text or path.suffix == ".html" or path.name in ("popup.js", "background.js",
                                                                             "policy.js"), \
            f"{path.name} should read the shared values from shared.js"
        assert not re.search(r"protocolVersion\s*!==?\s*\d", text), path.name
    # In Python, 4000 (the "dropped" close code) is too common a number to police; the others are distinctive.
    distinctive = [x for x in SHARED_LITERALS if x != str(SHARED.close.dropped)]
    for path in [*(REPO / "actors").rglob("*.py"), *(REPO / "supervisor").rglob("*.py")]:
        if path.name == "constants.py":
            continue
        text = path.read_text()
        for literal in distinctive:
            assert not re.search(rf"(?<![\w.\-]){re.escape(literal)}(?![\w\-])", text), (str(path), literal)
    for origin in (o for site in SHARED.providers for o in site.origins):
        for path in EXTENSION.glob("*.js"):
            assert path.name == "shared.js" or origin not in path.read_text(), (path.name, origin)


def test_wheel_installs_a_working_ai_bridge_with_the_extension(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                    str(REPO)], check=True, capture_output=True, cwd=tmp_path)
    (wheel,) = dist.glob("ai_bridge-*.whl")
    assert wheel.name.startswith(f"ai_bridge-{supervisor.__version__}-")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {p.name for p in EXTENSION.iterdir() if p.is_file()}
    assert {f"supervisor/_extension/{n}" for n in shipped} <= names, "extension files missing from the wheel"
    assert "actors/provider/watcher.js" in names and "actors/jobs.py" in names
    assert not any(n.startswith("tests/") for n in names)

    # Installed outside the source tree, the command runs and finds its own copy of the extension.
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, cwd=tmp_path)
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    run = [sys.executable, "-c", "import sys; from supervisor.app.cli import main; sys.exit(main())"]
    version = subprocess.run([*run, "--version"], env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert version.stdout.strip() == f"ai-bridge {supervisor.__version__}"
    where = subprocess.run([*run, "extension-path"], env=env, cwd=tmp_path, capture_output=True, text=True,
                           check=True)
    ext = Path(where.stdout.strip())
    assert ext.is_relative_to(target), ext
    assert json.loads((ext / "manifest.json").read_text())["version"] == supervisor.__version__
    assert {p.name for p in ext.iterdir()} >= shipped
    help_text = subprocess.run([*run, "console", "--help"], env=env, cwd=tmp_path, capture_output=True, text=True,
                               check=True).stdout
    assert "--allow-faults" in help_text and "tree()" in help_text
