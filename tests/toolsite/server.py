"""The browser tools' test site: one HTTPS port for every host name in HOSTS (one certificate names them all); the
Host header picks nothing but the log entry, so every page exists on every host. Chromium reaches it at the real
names through --host-resolver-rules (fixture.py).

Run ``python -m tests.toolsite --cert-dir DIR``: prints one JSON line (port, SPKI hash, CA file), then serves until
EOF on stdin. Control: ``GET /__log`` (every request: host, path), ``POST /__reset``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

import trio
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from hypercorn.config import Config
from hypercorn.trio import serve

HERE = Path(__file__).resolve().parent
PAGES = HERE / "pages"
HOSTS = ("allowed.test", "sub.allowed.test", "denied.test", "other.test", "widget.test", "nested.test")

REDIRECTS = {
    "/redirect-denied": "https://denied.test/secret",
    "/redirect-allowed": "https://sub.allowed.test/landing",
    "/redirect-chain": "/redirect-denied",
    "/redirect-file": "/files/report.csv",  # a download that redirects, within the site
}
# Downloads with hostile names (issue 36): 150 é (300 bytes), and a right-to-left override.
HOSTILE_NAMES = {"/files/long-name": "é" * 150 + ".txt", "/files/rlo": "invoice\u202efdp.exe"}


def make_certificates(cert_dir: Path) -> dict[str, str]:
    ca = trustme.CA(organization_name="ai-bridge toolsite CA")
    leaf = ca.issue_cert(*HOSTS, "localhost", "127.0.0.1", common_name=HOSTS[0])
    cert_dir.mkdir(parents=True, exist_ok=True)
    chain, key, ca_path = cert_dir / "server.pem", cert_dir / "server.key", cert_dir / "ca.pem"
    with open(chain, "wb") as f:
        for blob in leaf.cert_chain_pems:
            f.write(blob.bytes())
    leaf.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_path))
    cert = x509.load_pem_x509_certificate(leaf.cert_chain_pems[0].bytes())
    spki = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return {"certFile": str(chain), "keyFile": str(key), "caCert": str(ca_path),
            "spki": base64.b64encode(hashlib.sha256(spki).digest()).decode()}


class Site:
    def __init__(self) -> None:
        self.log: list[dict[str, Any]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "").split(":")[0]
        path = scope["path"]
        query = parse_qs(scope.get("query_string", b"").decode())
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        if not path.startswith("/__"):
            self.log.append({"host": host, "path": path, "method": scope["method"]})
        if path == "/late-body":  # the headers now, the page later: a committed document without any element
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/html; charset=utf-8"), (b"cache-control", b"no-store")]})
            await send({"type": "http.response.body", "body": b"", "more_body": True})
            await trio.sleep(float(query.get("ms", ["1500"])[0]) / 1000)
            await send({"type": "http.response.body",
                        "body": b"<!doctype html><title>Late</title><p>Arrived late</p>"})
            return
        status, ctype, content, extra = await self.route(host, path, query, scope["method"], body)
        hdrs = [(b"content-type", ctype.encode()), (b"cache-control", b"no-store")]
        hdrs += [(k.encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": hdrs})
        await send({"type": "http.response.body", "body": content})

    async def route(self, host: str, path: str, query: dict[str, list[str]], method: str,
                    body: bytes) -> tuple[int, str, bytes, dict[str, str]]:
        html = "text/html; charset=utf-8"
        if path == "/__log":
            return 200, "application/json", json.dumps(self.log).encode(), {}
        if path == "/__reset":
            self.log.clear()
            return 200, "application/json", b"{}", {}
        if path in REDIRECTS:
            return 302, html, b"", {"location": REDIRECTS[path]}
        if path == "/api/data":
            return 200, "application/json", json.dumps({"items": [1, 2, 3], "host": host}).encode(), {}
        if path == "/api/echo":
            return 200, "application/json", json.dumps({"method": method, "body": body.decode()}).encode(), {}
        if path == "/api/slow":
            await trio.sleep(float(query.get("ms", ["300"])[0]) / 1000)
            return 200, "application/json", b'{"slow": true}', {}
        if path == "/files/report.csv":  # a download (Content-Disposition: attachment)
            return 200, "text/csv", b"name,value\nalpha,1\nbeta,2\n", {
                "content-disposition": 'attachment; filename="report.csv"'}
        if path in HOSTILE_NAMES:
            return 200, "text/plain", b"hostile name\n", {
                "content-disposition": f"attachment; filename*=UTF-8''{quote(HOSTILE_NAMES[path])}"}
        if path == "/secret":
            return 200, html, (f"<!doctype html><title>Secret</title><h1>TOP SECRET on {host}</h1>"
                               "<p id=secret>denied content that must never be read</p>").encode(), {}
        if path == "/landing":
            return 200, html, f"<!doctype html><title>Landing</title><h1>Landed on {host}</h1>".encode(), {}
        name = "index" if path == "/" else path.strip("/")
        page = PAGES / f"{name}.html"
        if "/" in name or not page.is_file():
            return 404, html, b"<!doctype html><title>Not found</title><h1>404</h1>", {}
        # document.domain works only in a page that opts out of origin-keyed agent clusters.
        extra = {"origin-agent-cluster": "?0"} if name.startswith("domain-") else {}
        return 200, html, page.read_bytes().replace(b"{{HOST}}", host.encode()), extra


async def amain(cert_dir: Path) -> None:
    info = make_certificates(cert_dir)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.certfile, config.keyfile = info["certFile"], info["keyFile"]
    config.accesslog = None
    config.errorlog = None
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(lambda task_status: serve(Site(), config, shutdown_trigger=stop.wait,
                                                               task_status=task_status))
        port = int(binds[0].rsplit(":", 1)[1])
        print(json.dumps({"port": port, "spki": info["spki"], "caCert": info["caCert"], "hosts": HOSTS}), flush=True)
        # EOF on stdin: the test is done with us.
        await trio.to_thread.run_sync(sys.stdin.read, abandon_on_cancel=True)
        stop.set()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert-dir", type=Path, required=True)
    args = parser.parse_args()
    trio.run(amain, args.cert_dir)
