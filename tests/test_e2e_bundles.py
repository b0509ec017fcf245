"""A whole repository in one ask (issue 35, item 5), end to end: a real MCP client → `ai-bridge serve` → our extension
in headless Chromium → both fake sites, which take at most 10 files a message (as ChatGPT and Gemini do). A 200-file
project goes as bundles of text, each file headed by its path, and its binary file on its own; the fakes keep the text
of what was uploaded, so the test reads every file's content arriving exactly once."""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import REPO
from .e2e import open_bridge, requires_chromium
from .fakesites.fixture import FakeSites

pytestmark = [requires_chromium, pytest.mark.chromium]

FAST = {"chunks": 3, "intervalMs": 30, "firstTokenMs": 80}
FILES = 200


@pytest.fixture
def repository() -> Iterator[tuple[str, dict[str, bytes]]]:
    """200 source files (about 5 MB: more than one bundle holds) with a marker of their own, and a binary logo."""
    rel = f".test-cache/bundle-{uuid.uuid4().hex[:8]}"
    folder = REPO / rel
    files: dict[str, bytes] = {}
    for i in range(FILES):
        body = f"# module {i}: marker-{uuid.uuid4().hex}\n" + f"value_{i} = {i}\n" * (60 + 17 * i)
        files[f"pkg/sub{i % 7}/mod_{i:03}.py"] = body.encode()
    files["assets/logo.png"] = b"\x89PNG\r\n\x1a\n" + os.urandom(3000)
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    try:
        yield rel, files
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def test_a_200_file_project_arrives_at_each_site_as_bundles_with_every_file_once(
        sites: FakeSites, tmp_path: Path, repository: tuple[str, dict[str, bytes]]) -> None:
    rel, files = repository
    question = "Review this repository."
    async with open_bridge(sites, tmp_path) as b:
        plan = await b.call("ask_chatgpt_gemini_web", {"question": question, "files": [f"{rel}/**"],
                                                        "dry_run": True})
        assert not plan.is_error, plan.content[0].text
        bundled = plan.structured_content["dryRun"]["bundlePlan"]
        assert len(bundled["bundles"]) == 2 and bundled["alone"] == [f"{rel}/assets/logo.png"], bundled
        assert sorted(p for bundle in bundled["bundles"] for p in bundle["files"]) == sorted(
            f"{rel}/{name}" for name in files if name.endswith(".py"))
        assert all(s.log() == [] for s in (sites.chatgpt, sites.gemini))  # a dry run sends nothing

        for site in (sites.chatgpt, sites.gemini):
            site.set_next(**FAST)
        res = await b.call("ask_chatgpt_gemini_web", {"question": question, "files": [f"{rel}/**"],
                                                       "new_chat": True, "timeout_s": 120})
        assert not res.is_error, res.content[0].text
        for name, site in (("chatgpt", sites.chatgpt), ("gemini", sites.gemini)):
            assert res.structured_content[name]["answer"], res.structured_content
            log = site.full_log()
            entry = log["questions"][-1]
            assert entry["question"] == question
            uploaded = entry["attachments"]
            assert [u["name"] for u in uploaded] == [
                "ai-bridge-bundle-1-of-2.md", "ai-bridge-bundle-2-of-2.md", "logo.png"], (name, uploaded)
            assert uploaded[2]["sha256"] == hashlib.sha256(files["assets/logo.png"]).hexdigest()
            texts = [log["uploadTexts"][u["sha256"]] for u in uploaded[:2]]
            whole = "\n".join(texts)
            for path, data in files.items():
                if path.endswith(".py"):  # its path as the heading, then its content, once in all the uploads
                    assert whole.count(data.decode()) == 1, (name, path)
                    assert whole.count(f"`{rel}/{path}`\n```python\n{data.decode()}") == 1, (name, path)
