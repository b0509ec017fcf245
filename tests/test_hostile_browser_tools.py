"""The browser tools' defences without a browser (issue 36): credentials redacted by their names in network_log
(headers and query parameters, the list the same as docs/security.md's), saved download names within the file
system's limit and free of control and bidi characters (Hypothesis over names), viewports capped like screenshots,
and an unforeseen failure of one call contained to that call."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from actors.browser_tools import downloads, emulation, redact
from actors.browser_tools.actor import BrowserTools
from actors.browser_tools.reading import _capped
from actors.browser_tools.tab import NetworkBuffer
from actors.mcp_front.tools.browser_args import EmulateArgs
from actors.protocol import browser_tools as bt
from supervisor import savefiles
from supervisor.errors import InternalError, InvalidArgument

from .conftest import REPO

LEAKED_HEADERS = ["x-goog-api-key", "x-api-key", "X-Access-Token", "PRIVATE-TOKEN", "x-session-id", "Session-Id",
                  "ocp-apim-subscription-key", "x-refresh-token", "Authorization", "Cookie", "Set-Cookie",
                  "x-csrf-token", "X-Amz-Security-Token", "x-client-secret", "Proxy-Authorization", "x-jwt-assertion",
                  "apikey", "x-user-password"]
PLAIN_HEADERS = ["Content-Type", "Accept", "User-Agent", "Cache-Control", "Content-Length", "X-Request-Id"]


def request_event(url: str, headers: dict[str, str]) -> dict[str, Any]:
    return {"requestId": "1", "request": {"url": url, "method": "GET", "headers": headers}, "type": "Fetch",
            "timestamp": 1.0, "wallTime": 1.0, "documentURL": "https://allowed.test/"}


def test_network_log_redacts_credentials_by_name() -> None:
    buf = NetworkBuffer()
    url = ("https://api.test/v1?token=T0KEN1&key=AIzaSECRET&sig=S1GVALUE&x-amz-signature=AMZSIG&access_token=ACCESS1"
           "&q=cats&page=2&code=OAUTHCODE&sid=SIDVALUE")
    headers = {h: f"value-of-{h}" for h in LEAKED_HEADERS + PLAIN_HEADERS}
    headers["Referer"] = "https://allowed.test/cb?state=1&refresh_token=REFRESH1"
    buf.on_event("Network.requestWillBeSent", request_event(url, headers))
    location = "https://u:PASSWORD1@next.test/x?apiKey=APIKEY2&ok=1"
    buf.on_event("Network.responseReceived", {"requestId": "1", "response": {
        "status": 302, "headers": {"Location": location, "Set-Cookie": "s=COOKIE1"}}})
    entry = next(buf.entries())
    text = repr(entry)
    for secret in ("T0KEN1", "AIzaSECRET", "S1GVALUE", "AMZSIG", "ACCESS1", "OAUTHCODE", "SIDVALUE", "REFRESH1",
                   "APIKEY2", "PASSWORD1", "COOKIE1"):
        assert secret not in text, secret
    assert all(f"value-of-{h}" not in text for h in LEAKED_HEADERS)
    assert all(f"value-of-{h}" in text for h in PLAIN_HEADERS)
    assert "q=cats" in entry.url and "page=2" in entry.url and "token=[redacted]" in entry.url
    kept = NetworkBuffer(secrets=True)  # --network-secrets: the user's choice, nothing replaced
    kept.on_event("Network.requestWillBeSent", request_event(url, headers))
    assert next(kept.entries()).url == url and "value-of-x-goog-api-key" in repr(next(kept.entries()))


def test_the_redaction_list_is_the_one_docs_security_gives() -> None:
    doc = (REPO / "docs" / "security.md").read_text()
    section = doc[doc.index("<!-- redaction -->"):doc.index("<!-- /redaction -->")]
    words = re.search(r"names contain: (.+?)\.", section, re.S)
    params = re.search(r"parameters named: (.+?)\.", section, re.S)
    assert words and params, section
    assert sorted(re.findall(r"`([^`]+)`", words.group(1))) == sorted(redact.SECRET_WORDS)
    assert sorted(re.findall(r"`([^`]+)`", params.group(1))) == sorted(redact.SECRET_PARAMS)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(name=st.text(), value=st.text(max_size=50))
def test_any_url_or_header_redacts_without_raising(name: str, value: str) -> None:
    redact.url(name + "?" + value)
    assert redact.header("x-" + name + "-token", value) == redact.REDACTED


@pytest.mark.parametrize(("raw", "want"), [
    ("invoice\u202efdp.exe", "invoice_fdp.exe"), ("a\x1b[2Jb.txt", "a_[2Jb.txt"), ("c1\x9bx", "c1_x"),
    ("../../etc/passwd", "passwd"), ("..", "download"), ("\u2066x\u2069.pdf", "_x_.pdf"),
])
def test_download_names_are_plain(raw: str, want: str) -> None:
    assert downloads.plain_name(raw) == want


def test_a_name_of_300_bytes_is_cut_to_the_limit_with_its_extension(tmp_path: Path) -> None:
    name = downloads.plain_name("é" * 150 + ".txt")
    assert name.endswith(".txt") and len(name.encode()) <= savefiles.NAME_MAX_BYTES - len(savefiles.NUMBERED)
    for _ in range(3):  # numbered after the first: each still a name the file system takes
        savefiles.write_new(downloads.free_path(tmp_path, name), b"x")
    assert len(list(tmp_path.iterdir())) == 3


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(min_size=0, max_size=400))
def test_any_name_becomes_one_the_file_system_takes(raw: str) -> None:
    name = downloads.plain_name(raw)
    assert name and "/" not in name and name not in (".", "..")
    assert len(name.encode("utf-8")) <= savefiles.NAME_MAX_BYTES - len(savefiles.NUMBERED)
    assert not re.search("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\ud800-\udfff]", name)
    numbered = downloads.free_path(Path("/nonexistent"), name)
    assert len(os.fsencode(numbered.name)) <= savefiles.NAME_MAX_BYTES


def test_download_write_failures_are_typed(tmp_path: Path) -> None:
    with pytest.raises(savefiles.DownloadFailed, match="could not be saved"):
        savefiles.write_new(tmp_path / "missing-folder" / "x.txt", b"x")


def test_viewports_are_capped_like_screenshots() -> None:
    with pytest.raises(ValidationError, match="8192 device pixels"):
        EmulateArgs.model_validate({"width": 8192, "height": 8192, "device_scale_factor": 10})
    with pytest.raises(ValidationError):
        EmulateArgs.model_validate({"width": 10_000, "height": 10_000})
    with pytest.raises(InvalidArgument, match="at most 8192"):
        emulation.check_viewport(bt.Viewport(5000, 100, 2.0, False))  # resize keeps the scale: checked there too
    emulation.check_viewport(bt.Viewport(4096, 4096, 2.0, False))
    clip, cut = _capped({"x": 0, "y": 0, "width": 3000, "height": 20_000, "scale": 1}, 4.0)
    assert cut and float(clip["height"]) * 4 <= 8192 and float(clip["width"]) * 4 <= 8192


async def test_an_unforeseen_failure_fails_its_call_not_the_actor() -> None:
    class Boom:
        async def serve(self, msg: object) -> object:
            raise OSError(36, "File name too long")

    with pytest.raises(InternalError, match=r"download failed on an unexpected error.*OSError") as got:
        await BrowserTools.handle(Boom(), bt.Download(None, "https://a.test/x", 5.0))  # type: ignore[arg-type]
    assert "go on" in str(got.value)
