"""Files back (issue 35), in parts: the folder an answer's files go to, names that never replace a file, the file
hosts the server and the extension both allow (they must agree on every URL), and job records that keep the files."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest

from actors.provider.files_back import file_host_allowed
from supervisor.errors import InvalidArgument
from supervisor.savefiles import answer_folder, save_new

from .conftest import requires_node, run_extension_js


def test_the_folder_is_the_projects_or_the_state_dirs(tmp_path: Path) -> None:
    project, state = tmp_path / "project", tmp_path / "state"
    project.mkdir()
    assert answer_folder(project, "out/images", state) == str((project / "out" / "images").resolve())
    assert answer_folder(project, None, state) == str(state / "files")
    assert os.stat(state / "files").st_mode & 0o777 == 0o700
    assert answer_folder(project, None, None) == ""  # no state dir: the files stay on the page
    for bad in ("../x", "/tmp/x", "~/x", "a/../../x", " ", "a\x1bb"):
        with pytest.raises(InvalidArgument):
            answer_folder(project, bad, state)
    (project / "link").symlink_to(tmp_path)
    with pytest.raises(InvalidArgument, match="leads out of the project"):
        answer_folder(project, "link/sub", state)
    # The terminal user may name any folder.
    assert answer_folder(project, str(tmp_path / "anywhere"), state, inside_root=False) == str(tmp_path / "anywhere")


def test_a_saved_file_never_replaces_one(tmp_path: Path) -> None:
    (tmp_path / "report.csv").write_text("mine")
    first = save_new(tmp_path, "report.csv", b"a")
    second = save_new(tmp_path, "report.csv", b"b")
    assert (first.name, second.name) == ("report (1).csv", "report (2).csv")
    assert (tmp_path / "report.csv").read_text() == "mine"


HOSTS = ("chatgpt.com", "CHATGPT.COM", "files.oaiusercontent.com", "oaiusercontent.com", "evilchatgpt.com",
         "chatgpt.com.evil.test", "lh3.googleusercontent.com", "gemini.google.com", "google.com", "127.0.0.1",
         "xn--chtgpt-gua.com", "a.b.googleusercontent.com")
URLS = [f"{scheme}://{user}{host}{port}/x?id=1" for scheme, user, host, port in itertools.product(
    ("https", "http", "ftp"), ("", "u:p@"), HOSTS, ("", ":443", ":8443"))] + [
    "not a url", "https://", "sandbox:/mnt/data/a.csv", "https://chatgpt.com", "https://[::1]/x"]
TABS = {"chatgpt": "https://chatgpt.com/c/1", "gemini": "https://gemini.google.com/app/1"}


@requires_node
def test_the_server_and_the_extension_allow_the_same_file_hosts(tmp_path: Path) -> None:
    got = json.loads(run_extension_js(tmp_path, ("policy.js", "shared.js"), (
        "import { fileHostAllowed } from './policy.js';\nimport SHARED from './shared.js';\n"
        f"const urls = {json.dumps(URLS)}; const tabs = {json.dumps(TABS)};\n"
        "const out = {};\nfor (const [p, tab] of Object.entries(tabs)) "
        "out[p] = urls.map((u) => fileHostAllowed(SHARED.providers, tab, u));\n"
        "out.other = urls.map((u) => fileHostAllowed(SHARED.providers, 'https://example.com/', u));\n"
        "console.log(JSON.stringify(out));\n")))
    for provider in TABS:
        mine = [file_host_allowed(provider, u) for u in URLS]
        assert mine == got[provider], [(u, a, b) for u, a, b in zip(URLS, mine, got[provider], strict=True) if a != b]
    assert not any(got["other"])  # a tab on no provider's site loads nothing
    allowed = {u for u, ok in zip(URLS, got["chatgpt"], strict=True) if ok}
    assert "https://files.oaiusercontent.com/x?id=1" in allowed and "https://evilchatgpt.com/x?id=1" not in allowed
    assert "https://chatgpt.com.evil.test/x?id=1" not in allowed and "http://chatgpt.com/x?id=1" not in allowed


def test_a_job_record_keeps_the_saved_files_and_where_they_go() -> None:
    import datetime as dt

    from actors.job_records import AskRecord, JobRecord, parse
    from actors.protocol.common import ProviderName
    from actors.protocol.jobs import JobPhase, JobStatus
    from actors.protocol.provider import AskResult, AskTimings, SavedFile

    saved = (SavedFile("/p/out/chatgpt-image-1.png", "chatgpt-image-1.png", "image/png", 1234, "image",
                       "https://chatgpt.com/backend-api/estuary/content?id=file_1"),)
    result = AskResult(ProviderName.CHATGPT, "![Generated image](x)", "https://chatgpt.com/c/1",
                       AskTimings(1, 2, 3, 4, 5, 15), 0, 1.0, "done", files=saved)
    now = dt.datetime(2026, 11, 27, tzinfo=dt.UTC)
    rec = JobRecord("job-1", "ask_chatgpt_web", (ProviderName.CHATGPT,), "p", "1:" + "0" * 64, False, 60.0, now, now,
                    JobStatus.DONE, now, None, {ProviderName.CHATGPT: AskRecord(JobPhase.DONE, None, "", result)},
                    None, "/p/out")
    back = parse(rec.encode())
    assert back.save_to == "/p/out"
    assert back.asks[ProviderName.CHATGPT].result.files == saved  # type: ignore[union-attr]
