"""Start the fake sites in a subprocess and script them (stdlib only: subprocess, http.client, ssl).

    sites = start_fakesites()            # or: with start_fakesites() as sites: ...
    args = sites.chromium_args()         # --host-resolver-rules=... and --ignore-certificate-errors-spki-list=...
    sites.chatgpt.set_next(text="Hello", chunks=3, intervalMs=20)
    ... drive https://chatgpt.com/ in Chromium ...
    assert [q["question"] for q in sites.chatgpt.log()] == ["What is 2+2?"]
    sites.close()

The control clients are synchronous (each call is one short HTTPS request on loopback). From trio code use
``await sites.chatgpt.aio.log()`` (same methods, run in a worker thread), or call them directly when a few ms
of blocking do not matter.
"""

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

from . import flags

REPO_ROOT = Path(__file__).resolve().parents[2]

__all__ = ["FakeSites", "FakeSitesError", "SiteControl", "start_fakesites"]


class FakeSitesError(RuntimeError):
    pass


class SiteControl:
    """Client of one fake site's control API (see ``tests/fakesites/__init__.py``)."""

    def __init__(self, name: str, host: str, port: int, ssl_context: ssl.SSLContext, origin: str):
        self.name = name
        self.host = host
        self.port = port
        self.origin = origin  # e.g. "https://chatgpt.com"
        self._ssl = ssl_context
        self.aio = _AsyncSiteControl(self)

    def url(self, path: str = "/") -> str:
        return self.origin + path

    def request(self, method: str, path: str, body: Any = None, timeout: float = 10.0) -> Any:
        conn = http.client.HTTPSConnection(self.host, self.port, context=self._ssl, timeout=timeout)
        try:
            data = None if body is None else json.dumps(body).encode()
            headers = {"Content-Type": "application/json"} if data is not None else {}
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        payload = json.loads(raw) if raw else None
        if resp.status >= 400:
            msg = payload.get("error") if isinstance(payload, dict) else raw[:200]
            raise FakeSitesError(f"{self.name} {method} {path}: HTTP {resp.status}: {msg}")
        return payload

    # -- scripting -------------------------------------------------------------------------------------------

    def set_next(self, count: int | None = None, *, append: bool = False, **script: Any) -> dict:
        """Script the next ``count`` questions (None = until reset). Fields: text, rule, chunks, intervalMs,
        firstTokenMs, thinking, thinkingMs, stuck, hangsOnReload, neverAnswer, rateLimited, notice, siteError,
        errorAfterChunks, renderLagMs, deepResearch, sources (see ``scripting.Script``)."""
        return self.request("POST", "/__control", {"next": script, "count": count, "append": append})

    def set_answers(self, *scripts: dict, append: bool = False) -> dict:
        """One script per coming question, in order."""
        return self.request("POST", "/__control", {"answers": list(scripts), "append": append})

    def set_page(self, count: int | None = None, **options: Any) -> dict:
        """Page-load options: lang ("en"/"ja"), login, slowBootMs, slowLoadMs, historyDelayMs, editor
        ("prosemirror"/"textarea"), sendClick, layout, drift, shape ("2026"/"2025"), extensionButtons, model,
        rerenderDelayMs, stopDelayMs (see ``scripting.PageOptions``)."""
        return self.request("POST", "/__control", {"page": {**options, "count": count}})

    def delete_conversation(self, *conversation_ids: str) -> dict:
        """The conversations were deleted (elsewhere): their pages no longer load (2026: the URL stays, no turns,
        a "could not load" notice). Any id works, known or not."""
        return self.request("POST", "/__control", {"delete": list(conversation_ids)})

    def control(self, body: dict) -> dict:
        return self.request("POST", "/__control", body)

    def state(self) -> dict:
        return self.request("GET", "/__control")

    def log(self) -> list[dict]:
        """The question entries (each question received, in order)."""
        return self.request("GET", "/__log")["questions"]

    def full_log(self) -> dict:
        return self.request("GET", "/__log")

    def pages(self) -> list[dict]:
        return self.request("GET", "/__log")["pages"]

    def reset(self) -> None:
        self.request("POST", "/__reset", {})

    def wait_log(self, predicate, timeout: float = 10.0, interval: float = 0.05) -> list[dict]:
        """Poll ``log()`` until ``predicate(questions)`` is truthy; returns the questions."""
        deadline = time.monotonic() + timeout
        while True:
            questions = self.log()
            if predicate(questions):
                return questions
            if time.monotonic() > deadline:
                raise FakeSitesError(f"{self.name}: log condition not met within {timeout}s: {questions!r}")
            time.sleep(interval)


class _AsyncSiteControl:
    """The same calls for trio code, each run in a worker thread."""

    def __init__(self, sync: SiteControl):
        self._sync = sync

    def __getattr__(self, name: str):
        fn = getattr(self._sync, name)
        if not callable(fn):
            raise AttributeError(name)

        async def call(*args, **kwargs):
            import functools

            import trio
            return await trio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

        return call


class FakeSites:
    """A running fake-sites subprocess."""

    def __init__(self, proc: subprocess.Popen, info: dict, cert_dir: str, own_dir: bool):
        self.proc = proc
        self.info = info
        self.cert_dir = cert_dir
        self._own_dir = own_dir
        self.ports: dict[str, int] = {name: int(info[f"{name}Port"]) for name in flags.SITES}
        self.chatgpt_port, self.gemini_port = self.ports["chatgpt"], self.ports["gemini"]
        self.spki: str = info["spki"]
        self.ca_cert: str = info["caCert"]
        ctx = ssl.create_default_context(cafile=self.ca_cert)
        # One control client per site, by its name: sites.chatgpt, sites.claude, ... (and `site(name)`).
        self.controls = {name: SiteControl(name, "127.0.0.1", port, ctx, "https://" + flags.HOSTS[name][0])
                         for name, port in self.ports.items()}
        self.chatgpt, self.gemini = self.controls["chatgpt"], self.controls["gemini"]
        self.claude, self.grok, self.perplexity = (self.controls[n] for n in ("claude", "grok", "perplexity"))

    def site(self, name: str) -> SiteControl:
        return self.controls[name]

    def host_resolver_rules(self) -> str:
        return flags.host_resolver_rules(self.ports)

    def chromium_args(self, *, blanket_cert_errors: bool = False) -> list[str]:
        """Flags that make Chromium reach the fakes at the real host names and accept their certificate (the SPKI
        pin; the blanket ``--ignore-certificate-errors`` only on request)."""
        return flags.chromium_args(self.ports, self.spki, blanket_cert_errors=blanket_cert_errors)

    def reset(self) -> None:
        """Every site reset, in one request to one of them."""
        self.chatgpt.request("POST", "/__reset?all=1", {})

    def close(self, timeout: float = 5.0) -> None:
        proc = self.proc
        if proc.poll() is None:
            try:
                proc.stdin.close()  # EOF on stdin = shut down
            except OSError:
                pass
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(3)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for stream in (proc.stdout, proc.stdin):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
        if self._own_dir:
            shutil.rmtree(self.cert_dir, ignore_errors=True)

    def __enter__(self) -> FakeSites:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def start_fakesites(*, cert_dir: str | None = None, chatgpt_port: int = 0, gemini_port: int = 0,
                    startup_timeout: float = 20.0, stderr=None, ports: dict[str, int] | None = None) -> FakeSites:
    """Start ``python -m tests.fakesites`` and wait for its JSON line. Ports 0 = free ports.

    ``stderr``: where the server's stderr goes (default: inherited).
    """
    own_dir = cert_dir is None
    cert_dir = cert_dir or tempfile.mkdtemp(prefix="fakesites-certs-")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    wanted = {"chatgpt": chatgpt_port, "gemini": gemini_port, **(ports or {})}
    cmd = [sys.executable, "-m", "tests.fakesites", *(a for name, port in wanted.items()
                                                      for a in (f"--{name}-port", str(port))), "--cert-dir", cert_dir]
    proc = subprocess.Popen(cmd, cwd=str(REPO_ROOT), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=stderr)
    line = b""
    deadline = time.monotonic() + startup_timeout
    try:
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise FakeSitesError(f"fake sites did not start within {startup_timeout}s")
            ready, _, _ = select.select([proc.stdout], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                raise FakeSitesError(f"fake sites exited at startup (rc={proc.wait()})")
            line += chunk
        info = json.loads(line.split(b"\n", 1)[0])
    except BaseException:
        proc.kill()
        proc.wait()
        if own_dir:
            shutil.rmtree(cert_dir, ignore_errors=True)
        raise
    return FakeSites(proc, info, cert_dir, own_dir)
