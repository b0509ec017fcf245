"""Files (issue 20), end to end: a real MCP client → `ai-bridge serve` → our extension in headless Chromium
→ the fake sites, whose composers take files through their own file input (chips with progress, an upload to the
site, refusals by type, size and count). The fakes log what they received: each file's name, size and the SHA-256 of
its bytes. (Models, effort and tools: test_e2e_choices.py.)"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import trio

from .conftest import REPO
from .e2e import requires_chromium
from .fakesites.fixture import FakeSites, SiteControl
from .fakesites.scripting import answer_ref
from .shared_bridge import OpenShared

pytestmark = [requires_chromium, pytest.mark.chromium]

FAST = {"chunks": 3, "intervalMs": 30, "firstTokenMs": 80}
TOOL = {"chatgpt": "ask_chatgpt_web", "gemini": "ask_gemini_web"}
PROVIDERS = ["chatgpt", "gemini"]


@pytest.fixture
def project_files() -> Iterator[tuple[str, dict[str, bytes]]]:
    """Three files inside the project the server runs in (its working directory is the repository): a text file, a
    binary one and one with a non-ASCII name. Yields the folder (relative) and name → bytes."""
    rel = f".test-cache/attach-{uuid.uuid4().hex[:8]}"
    folder = REPO / rel
    folder.mkdir(parents=True)
    files = {
        "notes.md": b"# Notes\n\nThe answer must mention the numbers 17 and 42.\n",
        "blob.bin": bytes(range(256)) * 40 + os.urandom(512),
        "résumé 日本語.txt": "Größe: 名前と数字 7\n".encode(),
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    try:
        yield rel, files
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def received(site: SiteControl) -> dict[str, Any]:
    qs = site.log()
    assert qs, "the site received no question"
    return qs[-1]


def digests(files: dict[str, bytes]) -> list[dict[str, Any]]:
    return sorted(({"name": n, "size": len(b), "sha256": hashlib.sha256(b).hexdigest()} for n, b in files.items()),
                  key=lambda d: d["name"])


@pytest.mark.parametrize("shape", ["2026", "2025"])
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_files_are_uploaded_then_the_question_is_sent_and_inline_files_go_in_the_prompt(
        sites: FakeSites, shared_bridge: OpenShared, provider: str, shape: str, project_files: Any) -> None:
    """Gemini 2026 has no file input at rest: its "Upload and tools" menu makes one behind a chooser
    (gemini-2607-file-input-ready.html); ChatGPT's input#upload-files takes them (chatgpt-2607-file-input-ready)."""
    rel, files = project_files
    site: SiteControl = getattr(sites, provider)
    site.control({"page": {"shape": shape, "uploadMs": 400}})
    site.set_next(**FAST)
    question = "Read the three files and name the 2 numbers in notes.md."
    async with shared_bridge() as b:
        res = await b.call(TOOL[provider], {"question": question, "files": [f"{rel}/*"], "new_chat": True,
                                            "timeout_s": 90})
        assert not res.is_error, res.content[0].text
        assert answer_ref(question) in res.structured_content["answer"]
        entry = received(site)
        assert entry["question"] == question  # uploaded, not inlined
        assert sorted(entry["attachments"], key=lambda d: d["name"]) == digests(files)

        site.set_next(**FAST)
        res = await b.call(TOOL[provider], {"question": "Summarise the notes.", "files": [f"{rel}/*.md"],
                                            "attach": "inline", "new_chat": True, "timeout_s": 60})
        assert not res.is_error, res.content[0].text
        entry = received(site)
        assert entry["attachments"] == []
        assert f"`{rel}/notes.md`\n```markdown\n# Notes" in entry["question"]
        assert entry["question"].startswith("Summarise the notes.")


# Each refusal in the site's own words (ChatGPT's from its bundle, README of the captures; Gemini's are guesses but
# for the quota notice's element): the file named, nothing sent.
REFUSALS: dict[str, list[tuple[dict[str, Any], tuple[str, ...], str]]] = {
    "chatgpt": [
        ({"uploadRefuse": [".bin"]}, ("blob.bin",), "Uploads with file type .bin are not supported"),
        ({"uploadMaxBytes": 5000}, ("blob.bin",), "File is too large"),
        ({"uploadMaxFiles": 2}, ("notes.md", "blob.bin", "résumé 日本語.txt"), "Too many files uploaded"),
        ({"uploadFail": [".md"]}, ("notes.md",), "Unable to upload notes.md"),
        ({"uploadAccept": ".md,text/plain"}, ("blob.bin",), "accepts only .md,text/plain"),
    ],
    "gemini": [
        ({"uploadRefuse": [".bin"]}, ("blob.bin",), "File type not supported"),
        ({"uploadFail": [".md"]}, ("notes.md",), "Failed to upload notes.md"),
        ({"uploadQuota": True}, ("notes.md", "blob.bin", "résumé 日本語.txt"), "reached your file upload limit"),
    ],
}


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_each_refusal_is_a_typed_error_naming_the_file_and_nothing_is_sent(
        sites: FakeSites, shared_bridge: OpenShared, provider: str, project_files: Any) -> None:
    rel, _ = project_files
    site: SiteControl = getattr(sites, provider)
    async with shared_bridge() as b:
        for page, named, said in REFUSALS[provider]:
            site.control({"page": page})
            with trio.fail_after(30):  # at once: never the upload wait (120 s)
                res = await b.call(TOOL[provider], {"question": "What is in these files?", "files": [f"{rel}/*"],
                                                    "new_chat": True, "timeout_s": 60})
            assert res.is_error, (page, res.content[0].text)
            err = res.structured_content["error"]
            assert err["code"] == "attachment_refused", (page, err)
            assert "nothing was sent" in err["message"] and said in err["message"], (page, err["message"])
            assert all(repr(n) in err["message"] for n in named), (page, err["message"])
    assert site.full_log()["sends"] == 0


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_page_without_chips_is_ready_by_its_send_button_and_a_stalled_upload_sends_nothing(
        sites: FakeSites, shared_bridge: OpenShared, provider: str, project_files: Any) -> None:
    rel, files = project_files
    site: SiteControl = getattr(sites, provider)
    async with shared_bridge() as b:
        # No chip ever appears (oracle met this live, #275): the names in the input and the send button say ready.
        # On Gemini, the page keeps its new input out of the document: only the intercepted chooser reaches it.
        site.control({"page": {"uploadNoChip": True, "uploadChooser": "detached", "uploadMs": 300}})
        site.set_next(**FAST)
        res = await b.call(TOOL[provider], {"question": "Name the 2 numbers in notes.md.", "files": [f"{rel}/*"],
                                            "new_chat": True, "timeout_s": 60})
        assert not res.is_error, res.content[0].text
        assert sorted(received(site)["attachments"], key=lambda d: d["name"]) == digests(files)
        sends = site.full_log()["sends"]
        # One file never finishes: nothing goes, neither with it nor without it, and the error names it.
        site.control({"page": {"uploadStall": [".bin"]}})
        res = await b.call(TOOL[provider], {"question": "What is in these files?", "files": [f"{rel}/*"],
                                            "new_chat": True, "timeout_s": 15})
        err = res.structured_content["error"]
        assert err["code"] == "upload_incomplete", err
        assert "still uploading: 'blob.bin'" in err["message"], err["message"]
    assert site.full_log()["sends"] == sends


async def test_files_outside_the_project_are_refused_before_any_tab(
        sites: FakeSites, shared_bridge: OpenShared) -> None:
    async with shared_bridge() as b:
        for pattern, words in (("../etc/passwd", "leaves the project"), ("/etc/passwd", "not relative"),
                               ("no/such/file.txt", "does not exist")):
            res = await b.call("ask_chatgpt_web", {"question": "q", "files": [pattern]})
            assert res.is_error
            err = res.structured_content["error"]
            assert err["code"] == "file_refused" and words in err["message"], err
    assert sites.chatgpt.full_log()["sends"] == 0 and not sites.chatgpt.pages()
