"""Start the browser tools' test site in a subprocess, and the Chromium flags that reach it at its host names."""

from __future__ import annotations

import http.client
import json
import os
import select
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


class ToolSite:
    def __init__(self, proc: subprocess.Popen[bytes], info: dict[str, Any], cert_dir: str) -> None:
        self.proc = proc
        self.port: int = info["port"]
        self.spki: str = info["spki"]
        self.hosts: tuple[str, ...] = tuple(info["hosts"])
        self.cert_dir = cert_dir
        self._ssl = ssl.create_default_context(cafile=info["caCert"])

    def url(self, path: str = "/", host: str = "allowed.test") -> str:
        return f"https://{host}{path}"

    def maps(self) -> list[str]:
        return [f"MAP {h} 127.0.0.1:{self.port}" for h in self.hosts]

    def _request(self, method: str, path: str) -> Any:
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self._ssl, timeout=10)
        try:
            conn.request(method, path, headers={"Host": "allowed.test"})
            return json.loads(conn.getresponse().read() or b"null")
        finally:
            conn.close()

    def log(self) -> list[dict[str, str]]:
        return self._request("GET", "/__log")  # type: ignore[no-any-return]

    def requested(self, host: str, path: str | None = None) -> bool:
        return any(e["host"] == host and (path is None or e["path"] == path) for e in self.log())

    def reset(self) -> None:
        self._request("POST", "/__reset")

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        shutil.rmtree(self.cert_dir, ignore_errors=True)


class Browsed:
    """The sites one browser reaches: the tool site, and optionally the fake ChatGPT/Gemini (tests/fakesites).
    Quacks like FakeSites for tests/e2e.py's `open_bridge` (it only calls `chromium_args`)."""

    def __init__(self, site: ToolSite, fakes: Any = None) -> None:
        self.site = site
        self.fakes = fakes

    def chromium_args(self) -> list[str]:
        maps = self.site.maps()
        spkis = [self.site.spki]
        if self.fakes is not None:
            maps += [f"MAP chatgpt.com 127.0.0.1:{self.fakes.chatgpt_port}",
                     f"MAP gemini.google.com 127.0.0.1:{self.fakes.gemini_port}"]
            spkis.append(self.fakes.spki)
        rules = ", ".join([*maps, "MAP * ~NOTFOUND", "EXCLUDE localhost", "EXCLUDE 127.0.0.1"])
        return [f"--host-resolver-rules={rules}", f"--ignore-certificate-errors-spki-list={','.join(spkis)}"]


def start_toolsite(timeout: float = 20.0) -> ToolSite:
    cert_dir = tempfile.mkdtemp(prefix="toolsite-certs-")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "tests.toolsite", "--cert-dir", cert_dir], cwd=str(REPO_ROOT),
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    line = b""
    deadline = time.monotonic() + timeout
    while not line.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, remaining))
        if not ready:
            proc.kill()
            raise RuntimeError("the tool site did not start")
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            raise RuntimeError(f"the tool site exited at start-up (rc={proc.wait()})")
        line += chunk
    return ToolSite(proc, json.loads(line.split(b"\n", 1)[0]), cert_dir)
