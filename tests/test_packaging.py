"""What `pip install .` gives a user: a wheel holding both packages and every extension file, a working `ai-bridge`
outside the source tree, and one version everywhere (package, wheel, manifest) with the extension and the server
speaking the same protocol version."""

from __future__ import annotations

import json
import os
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
        # policy.js is pure (no chrome.*, no shared value) so that node can run it next to the server's copy;
        # pairing.js holds no shared value either (node runs it too: tests/test_pairing.py); executor.js neither
        # (the allowlists and the commands that read shared values are in commands.js).
        assert "shared.js" in text or path.suffix == ".html" or path.name in ("popup.js", "background.js",
                                                                             "policy.js", "pairing.js",
                                                                             "executor.js"), \
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
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    shipped = {p.name for p in EXTENSION.iterdir() if p.is_file()}
    assert {f"supervisor/_extension/{n}" for n in shipped} <= names, "extension files missing from the wheel"
    assert "actors/provider/watcher.js" in names and "actors/jobs.py" in names
    assert "supervisor/app/check/scenarios.json" in names  # the shipped scenarios of `ai-bridge check`
    # `ai-bridge demo`'s imitations of the sites: tests/fakesites itself (one source), with its certificate.
    sites = REPO / "tests" / "fakesites"
    tracked = subprocess.run(["git", "ls-files", "chatgpt", "gemini", "common", "tls", "*.py"], cwd=sites,
                             capture_output=True, text=True, check=True).stdout.split()
    assert tracked and {f"supervisor/_fakesites/{n}" for n in tracked} <= names, "fake sites missing from the wheel"
    assert not any(n.startswith("tests/") for n in names)
    # A real distribution: the licence file, typing markers, and metadata that says what the project is.
    info = f"ai_bridge-{supervisor.__version__}.dist-info"
    assert f"{info}/licenses/LICENSE" in names
    assert archive.read(f"{info}/licenses/LICENSE").decode().startswith("MIT License")
    assert {"supervisor/py.typed", "actors/py.typed"} <= names
    metadata = archive.read(f"{info}/METADATA").decode()
    headers = [line.split(": ", 1) for line in metadata.split("\n\n", 1)[0].splitlines() if ": " in line]
    fields: dict[str, list[str]] = {}
    for key, value in headers:
        fields.setdefault(key, []).append(value)
    assert fields["License-Expression"] == ["MIT"] and "LICENSE" in fields["License-File"]
    vendored = {p.name for p in (REPO / "actors" / "provider" / "vendor").glob("LICENSE.*")}
    assert {f"actors/provider/vendor/{n}" for n in vendored} <= set(fields["License-File"])
    assert float(fields["Metadata-Version"][0]) >= 2.4
    assert "Typing :: Typed" in fields["Classifier"] and "Operating System :: POSIX :: Linux" in fields["Classifier"]
    assert {u.split(",")[0] for u in fields["Project-URL"]} >= {"Homepage", "Documentation", "Issues"}
    trio_req = next(r for r in fields["Requires-Dist"] if r.startswith("trio") and not r.startswith("trio-"))
    assert ">=0.31" in trio_req, trio_req
    # The MCP Registry's ownership proof (server.json, tests/test_distribution.py) reaches PyPI's description.
    name = json.loads((REPO / "server.json").read_text())["name"]
    assert f"mcp-name: {name}" in metadata.split("\n\n", 1)[1].splitlines()

    # Installed into a fresh venv (no source tree in sight), the console script runs and finds its own copy of the
    # extension. Offline (the browser tests run without a network): the wheel goes in with --no-deps, and a .pth file
    # lends the venv this interpreter's dependencies. Paths from a .pth come after the venv's own site-packages, so
    # `supervisor` and `actors` are the wheel's. (Installs with dependencies resolved from the index: the
    # lowest-versions job in .ci/run.)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--no-deps", "--no-index", "-q", str(wheel)], check=True,
                   capture_output=True, cwd=tmp_path)
    (site,) = (venv / "lib").glob("python3*/site-packages")
    deps = {Path(p) for p in sys.path if p.endswith("site-packages")}
    (site / "zz_borrowed_deps.pth").write_text("".join(f"{p}\n" for p in sorted(deps)))
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    ai_bridge = str(venv / "bin" / "ai-bridge")
    version = subprocess.run([ai_bridge, "--version"], env=env, cwd=tmp_path, capture_output=True, text=True,
                             check=True)
    assert version.stdout.strip() == f"ai-bridge {supervisor.__version__}"
    where = subprocess.run([ai_bridge, "extension-path"], env=env, cwd=tmp_path, capture_output=True, text=True,
                           check=True)
    ext = Path(where.stdout.strip())
    assert ext.is_relative_to(venv), ext
    assert json.loads((ext / "manifest.json").read_text())["version"] == supervisor.__version__
    assert {p.name for p in ext.iterdir()} >= shipped
    help_text = subprocess.run([ai_bridge, "console", "--help"], env=env, cwd=tmp_path, capture_output=True,
                               text=True, check=True).stdout
    assert "--allow-faults" in help_text and "tree()" in help_text
    # The demo finds its imitations and their certificate in the installed package (tests/test_demo.py runs it).
    found = subprocess.run([str(venv / "bin" / "python"), "-c", "from supervisor.app.demo import fakesites; "
                            "s = fakesites('server'); print(s.__file__); print(s.shipped_certificates()['certFile'])"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout.split()
    assert len(found) == 2 and all(Path(f).is_relative_to(venv) and Path(f).is_file() for f in found), found


def test_doctor_detects_the_supervisor_package_clash(tmp_path: Path) -> None:
    """PyPI's Supervisor also installs a top-level `supervisor` package: doctor names it and says what to do."""
    site = tmp_path / "site"
    info = site / "supervisor-4.2.5.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: supervisor\nVersion: 4.2.5\n")
    (info / "top_level.txt").write_text("supervisor\n")
    (info / "RECORD").write_text("supervisor/__init__.py,,\nsupervisor/supervisord.py,,\n")
    env = {**os.environ, "PYTHONPATH": str(site), "AI_BRIDGE_STATE_DIR": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run([sys.executable, "-m", "supervisor.app.cli", "doctor",
                           f"--browser-path={tmp_path / 'no-such-chrome'}"], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("package names not shared"))
    assert "FAIL" in line and "supervisor 4.2.5 (installs supervisor/)" in line
    assert "uvx, pipx or a venv" in done.stdout
    # Without the impostor the check passes.
    del env["PYTHONPATH"]
    done = subprocess.run([sys.executable, "-m", "supervisor.app.cli", "doctor",
                           f"--browser-path={tmp_path / 'no-such-chrome'}"], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("package names not shared"))
    assert " ok " in line, done.stdout
