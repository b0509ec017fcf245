"""Files back (issue 35, item 7), end to end: a real MCP client → `ai-bridge serve` → our extension in headless
Chromium → the fake sites, whose answers make files as the real ones do (tests/fakesites/common/generated.js cites
the shapes): ChatGPT's generated image (served only with the session cookie) and code-sandbox file (fetched by the
site's own download API), Gemini's generated image on Google's image host. Each is saved where the ask says, never
over a file that is there, and comes back as a path and an MCP resource link; an image-only answer is an answer."""

from __future__ import annotations

import hashlib
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import REPO
from .e2e import open_bridge, requires_chromium
from .fakesites.fixture import FakeSites, SiteControl

pytestmark = [requires_chromium, pytest.mark.chromium]

FAST = {"chunks": 2, "intervalMs": 30, "firstTokenMs": 80}


@pytest.fixture
def out_folder() -> Iterator[str]:
    rel = f".test-cache/files-back-{uuid.uuid4().hex[:8]}"
    try:
        yield rel
    finally:
        shutil.rmtree(REPO / rel, ignore_errors=True)


def made(site: SiteControl) -> list[dict[str, Any]]:
    return list(site.full_log()["made"])


def saved_ok(res: Any, site: SiteControl, folder: Path, kind: str) -> dict[str, Any]:
    """The one saved file of the answer: in `folder`, with the bytes the site made, and as a resource link."""
    assert not res.is_error, res.content[0].text
    files = res.structured_content["files"]
    assert len(files) == 1 and files[0]["kind"] == kind, files
    path = Path(files[0]["path"])
    assert path.parent == folder.resolve(), path
    site_made = made(site)[-1]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == site_made["sha256"], (path, site_made)
    links = [c for c in res.content if c.type == "resource_link"]
    assert [str(link.uri) for link in links] == [path.as_uri()], res.content
    assert links[0].mime_type == files[0]["mimeType"]
    return files[0]


async def test_generated_images_and_sandbox_files_are_saved_and_linked(
        sites: FakeSites, tmp_path: Path, out_folder: str) -> None:
    folder = REPO / out_folder
    async with open_bridge(sites, tmp_path) as b:
        # ChatGPT: an image-only answer (no text, no turn actions), its image cookie-bound on the site.
        sites.chatgpt.set_next(text="", files=[{"kind": "image", "name": "a red square"}], **FAST)
        res = await b.call("ask_chatgpt_web", {"question": "Draw 1 red square.", "new_chat": True,
                                               "save_to": out_folder, "timeout_s": 60})
        image = saved_ok(res, sites.chatgpt, folder, "image")
        assert image["mimeType"] == "image/png" and image["name"].endswith(".png")
        assert res.structured_content["answer"].startswith("![Generated image](https://chatgpt.com/backend-api/")
        assert not res.structured_content.get("warnings"), res.structured_content  # no suspicious_answer

        # ChatGPT's code sandbox: the answer links sandbox:/mnt/data/report.csv; twice, so the second is numbered.
        text = "Here is your data: [report.csv](sandbox:/mnt/data/report.csv)"
        names = []
        for _ in range(2):
            sites.chatgpt.set_next(text=text, files=[{"kind": "file", "name": "report.csv"}], **FAST)
            res = await b.call("ask_chatgpt_web", {"question": "Make a CSV of 3 rows.", "new_chat": True,
                                                   "save_to": out_folder, "timeout_s": 60})
            names.append(saved_ok(res, sites.chatgpt, folder, "file")["name"])
        assert names == ["report.csv", "report (1).csv"]

        # Gemini: the image at its own size from lh3.googleusercontent.com (the page shows a smaller one), saved
        # by default in the state dir when the ask names no folder.
        sites.gemini.set_next(text="Here is your image.", files=[{"kind": "image", "name": "A blue circle"}],
                              **FAST)
        res = await b.call("ask_gemini_web", {"question": "Draw 1 blue circle.", "new_chat": True,
                                              "timeout_s": 60})
        saved_ok(res, sites.gemini, b.state_dir / "files", "image")
        assert res.structured_content["answer"].startswith("Here is your image.")

        # A folder that leaves the project is refused before anything is sent.
        sends = sites.chatgpt.full_log()["sends"]
        res = await b.call("ask_chatgpt_web", {"question": "Draw 2 squares.", "save_to": "../elsewhere"})
        assert res.is_error and res.structured_content["error"]["code"] == "invalid_argument", res.content[0].text
        assert sites.chatgpt.full_log()["sends"] == sends
