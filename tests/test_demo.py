"""`ai-bridge demo` (issue 33): one command that asks both imitations, with no network and no flags to build. The
imitations are the tests' own fake sites (tests/fakesites), shipped in the wheel as supervisor/_fakesites with a
certificate made once (tests/test_packaging.py checks the wheel)."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from actors.browser import find_browser
from supervisor.app.cli import DEMO_QUESTION
from supervisor.app.demo import fakesites
from supervisor.paths import fakesites_path

from .e2e import CHROMIUM, requires_chromium
from .fakesites import server
from .fakesites.scripting import answer_ref


def test_the_shipped_certificate_is_the_one_its_pin_names() -> None:
    """The demo pins the certificate by the SPKI hash in tls/spki.json (it ships no cryptography to compute one)."""
    tls = server.shipped_certificates()
    cert = x509.load_pem_x509_certificate(Path(tls["certFile"]).read_bytes())
    spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    assert base64.b64encode(hashlib.sha256(spki).digest()).decode() == tls["spki"]
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"chatgpt.com", "gemini.google.com"} <= set(names.get_values_for_type(x509.DNSName))
    assert cert.not_valid_after_utc.year >= 2999  # trustme's: it does not expire under the demo


def test_the_demo_loads_the_tests_own_imitations_in_a_checkout() -> None:
    """One source: in a checkout the demo's sites are tests/fakesites itself, not a copy."""
    assert fakesites_path() == Path(server.__file__).parent
    assert Path(fakesites("server").__file__).resolve() == Path(server.__file__).resolve()


@requires_chromium
@pytest.mark.chromium
async def test_demo_asks_both_imitations_as_a_user_runs_it(tmp_path: Path) -> None:
    """`ai-bridge demo` from the console script, with nothing but a fresh home: both answers on stdout, the
    progress on stderr, and nothing of the user's state touched (the run's own state dir is gone afterwards)."""
    home = tmp_path / "home"
    home.mkdir()
    # Its own temp folder, to see the run clean up after itself; short, since Chromium puts a socket in it (a Unix
    # socket path has at most 107 bytes, and a pytest tmp_path is long).
    temp = Path(tempfile.mkdtemp(prefix="aib-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AI_BRIDGE_", "XDG_"))}
    env.update(HOME=str(home), TMPDIR=str(temp))
    try:
        found = find_browser(None)
    except Exception:  # not on PATH here: tell it where, as a user would with its config
        found = ""
    if os.path.realpath(found) != os.path.realpath(CHROMIUM):
        env["AI_BRIDGE_BROWSER_PATH"] = CHROMIUM
    script = shutil.which("ai-bridge", path=str(Path(sys.executable).parent))
    command = [script, "demo"] if script else [sys.executable, "-m", "supervisor.app.cli", "demo"]
    try:
        proc = await trio.run_process(command, env=env, cwd=tmp_path, capture_stdout=True, capture_stderr=True,
                                      check=False)
        left = sorted(p.name for p in temp.iterdir() if p.name.startswith(("ai-bridge-demo-", "ai-bridge-profile-")))
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 0, err
    chatgpt, _, gemini = out.partition("## gemini")
    assert chatgpt.startswith("## chatgpt")
    for answer in (chatgpt, gemini):  # the fakes' answer to this very question, with its code block
        assert answer_ref(DEMO_QUESTION) in answer and "```python" in answer
    lines = err.splitlines()
    assert lines[0].startswith("ai-bridge demo: the imitations of chatgpt.com and gemini.google.com run on 127.0.0.1")
    assert f"ai-bridge demo: asking both: {DEMO_QUESTION}" in lines
    for p in ("chatgpt", "gemini"):  # each phase once, the answer streaming
        for phase in ("connecting", "typing", "sent", "extracting"):
            assert lines.count(f"[{p}] {phase}") == 1, (p, phase, err)
        assert any(ln.startswith(f"[{p}] answering (") for ln in lines), err
    assert lines[-1].startswith("ai-bridge demo: done")
    assert not any(home.rglob("ai-bridge*")), list(home.rglob("*"))
    assert left == []
