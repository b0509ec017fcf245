"""Files an ask sends (issue 20), without a browser: only the project's files (no .., no links out, never the state
dir), globs and exclusions, limits, the inline blocks, the dry run (the tool's and `ai-bridge ask --dry-run`) and the
picker's label match."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from actors.mcp_front.tools.asks import BothAskArgs, ChatGPTAskArgs, GeminiAskArgs
from actors.protocol.common import ProviderName
from actors.protocol.provider import Choice
from actors.provider.choices import match_label
from supervisor import attachments as at
from supervisor.errors import FileRefused

from .conftest import REPO


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src" / "gen").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print('a')\n")
    (root / "src" / "b.py").write_text("x = '```'\n")
    (root / "src" / "gen" / "c.py").write_text("# generated\n")
    (root / "README.md").write_text("# Read me\n")
    (root / "img.bin").write_bytes(b"\x89PNG\x00\x01")
    (root / ".env").write_text("SECRET=1\n")
    (root / "src" / ".hidden.py").write_text("h = 1\n")
    return root


def rels(files: tuple[at.ProjectFile, ...]) -> list[str]:
    return [f.rel for f in files]


def test_paths_globs_folders_and_exclusions(project: Path) -> None:
    assert rels(at.select_files(project, ["README.md"])) == ["README.md"]
    assert rels(at.select_files(project, ["src/**/*.py"])) == ["src/a.py", "src/b.py", "src/gen/c.py"]
    assert rels(at.select_files(project, ["src/**/*.py", "!src/gen/**"])) == ["src/a.py", "src/b.py"]
    assert rels(at.select_files(project, ["src"])) == ["src/a.py", "src/b.py", "src/gen/c.py"]  # hidden ones left out
    assert rels(at.select_files(project, ["src/.hidden.py"])) == ["src/.hidden.py"]  # named: taken
    assert rels(at.select_files(project, ["*.*", "README.md"])) == ["README.md", "img.bin"]  # once each, no .env
    assert rels(at.select_files(project, ["*"]))[2:] == ["src/a.py", "src/b.py", "src/gen/c.py"]  # a folder: its files
    got = at.select_files(project, ["img.bin", "README.md"])
    assert [f.text for f in got] == [False, True] and got[0].size == 6


@pytest.mark.parametrize(("pattern", "words"), [
    ("../x", "leaves the project"), ("src/../../x", "leaves the project"), ("/etc/passwd", "not relative"),
    ("~/x", "not relative"), ("nope.txt", "does not exist"), ("*.nothing", "matches no file"), ("", "empty"),
])
def test_patterns_that_leave_the_project_or_find_nothing_are_refused(project: Path, pattern: str,
                                                                      words: str) -> None:
    with pytest.raises(FileRefused, match=words):
        at.select_files(project, [pattern])


def test_links_out_of_the_project_and_the_state_dir_are_refused(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("s")
    os.symlink(outside, project / "link.txt")
    with pytest.raises(FileRefused, match=re.escape("'link.txt' links outside the project folder")):
        at.select_files(project, ["link.txt"])
    with pytest.raises(FileRefused, match="links outside"):
        at.select_files(project, ["*.txt"])
    os.symlink(project / "README.md", project / "inside.md")  # a link within the project is fine
    assert [f.path for f in at.select_files(project, ["inside.md"])] == [(project / "README.md").resolve()]
    state = project / "state"
    state.mkdir()
    (state / "pairing.key").write_text("k")
    with pytest.raises(FileRefused, match="state dir"):
        at.select_files(project, ["state/pairing.key"], state_dir=state)
    with pytest.raises(FileRefused, match="inside ai-bridge's state dir"):
        at.select_files(state, ["pairing.key"], state_dir=state)


def test_limits_on_count_and_size(project: Path) -> None:
    with pytest.raises(FileRefused, match="4 files selected; an ask sends at most 3"):
        at.select_files(project, ["src/**/*.py", "README.md"], max_files=3)
    with pytest.raises(FileRefused, match=re.escape("'src/a.py' is 11 bytes; a file may have at most 5")):
        at.select_files(project, ["src/a.py"], max_file_bytes=5)
    with pytest.raises(FileRefused, match="add up to"):
        at.select_files(project, ["src/a.py", "src/b.py"], max_total_bytes=15)
    with pytest.raises(FileRefused, match="leave no file"):
        at.select_files(project, ["src/a.py", "!src/*.py"])


def test_inline_blocks_are_fenced_and_headed_by_their_path(project: Path) -> None:
    files = at.select_files(project, ["src/b.py", "README.md"])
    prompt = at.inline_prompt("Review these.", files)
    assert prompt == ("Review these.\n\n`src/b.py`\n````python\nx = '```'\n````\n\n"
                      "`README.md`\n```markdown\n# Read me\n```")
    with pytest.raises(FileRefused, match=re.escape("'img.bin' is a binary file")):
        at.inline_prompt("q", at.select_files(project, ["img.bin"]))


def test_dry_run_reports_files_sizes_inline_size_and_tokens(project: Path) -> None:
    files = at.select_files(project, ["src/a.py", "img.bin"])
    up = at.dry_run("What is wrong?", files, "upload")
    assert up["files"] == [{"path": "src/a.py", "size": 11, "text": True},
                           {"path": "img.bin", "size": 6, "text": False}]
    assert up["totalBytes"] == 17 and "inlineChars" not in up and up["estimatedTokens"] == 7  # (14 + 11) / 4
    inline = at.dry_run("What is wrong?", files[:1], "inline")
    assert inline["inlineChars"] == len(at.inline_prompt("What is wrong?", files[:1]))
    text = at.dry_run_text(up)
    assert "src/a.py  11 bytes" in text and "img.bin  6 bytes  (binary)" in text and "estimated tokens: ~7" in text


def test_cli_dry_run_prints_without_a_browser(project: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env.update({"AI_BRIDGE_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
                "AI_BRIDGE_BROWSER_PATH": "/nonexistent", "PYTHONPATH": str(REPO)})
    run = subprocess.run([sys.executable, "-m", "supervisor.app.cli", "ask", "--dry-run", "--json", "--file",
                          "src/**/*.py", "--file", "!src/gen/**", "--model", "gemini:Pro", "--effort", "high",
                          "--tool", "chatgpt:web search", "Why?"], cwd=project, env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)["dryRun"]
    assert [f["path"] for f in report["files"]] == ["src/a.py", "src/b.py"]
    assert report["choices"] == {"chatgpt": {"effort": "high", "tools": ["web search"]},
                                 "gemini": {"model": "Pro", "effort": "high"}}
    bad = subprocess.run([sys.executable, "-m", "supervisor.app.cli", "ask", "--dry-run", "--file", "../x", "q"],
                         cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "[file_refused]" in bad.stderr
    bad = subprocess.run([sys.executable, "-m", "supervisor.app.cli", "ask", "--dry-run", "--provider", "chatgpt",
                          "--tool", "canvas", "q"], cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "[invalid_argument]" in bad.stderr and "chatgpt has no tool 'canvas'" in bad.stderr


def test_the_ask_tools_take_files_and_each_sites_choices() -> None:
    chatgpt = ChatGPTAskArgs.tool_schema()["properties"]
    gemini = GeminiAskArgs.tool_schema()["properties"]
    assert set(chatgpt) >= {"files", "attach", "dry_run", "model", "effort", "tools"} and "mode" not in chatgpt
    assert set(gemini) >= {"model", "effort", "tools"} and "mode" not in gemini  # still taken, not advertised
    assert chatgpt["tools"]["items"]["enum"] == ["deep research", "web search"]  # its report is read in its frame
    assert gemini["tools"]["items"]["enum"] == ["deep research", "deep think", "canvas"]
    both = BothAskArgs.tool_schema()["properties"]
    assert {"chatgpt", "gemini"} <= set(both) and not {"model", "mode"} & set(both)
    args = ChatGPTAskArgs.model_validate({"question": "q", "files": ["a", "!b"], "attach": "inline",
                                          "model": "GPT-5.5", "tools": ["web search"]})
    assert args.files == ["a", "!b"] and args.attach == "inline"
    assert args.choices() == ((ProviderName.CHATGPT, Choice("GPT-5.5", "", ("web search",))),)
    assert GeminiAskArgs.model_validate({"question": "q", "mode": "Pro"}).choices()[0][1].model == "Pro"
    pair = BothAskArgs.model_validate({"question": "q", "chatgpt": {"effort": "high"}, "mode": "Flash"}).choices()
    assert pair == ((ProviderName.CHATGPT, Choice(effort="high")), (ProviderName.GEMINI, Choice(model="Flash")))
    for bad in ({"question": "q", "attach": "zip"}, {"question": "q", "tools": ["canvas"]},
                {"question": "q", "model": ""}):
        with pytest.raises(ValueError):
            ChatGPTAskArgs.model_validate(bad)


@pytest.mark.parametrize(("wanted", "index"), [("pro", 3), ("Thinking", 2), ("th", 2), ("AUTO", 0), ("Turbo", None),
                                               ("", None)])
def test_picker_labels_match_by_case_insensitive_prefix(wanted: str, index: int | None) -> None:
    assert match_label(wanted, ["Auto", "Instant", "Thinking", "Pro"]) == index
    assert match_label("pro", ["Pro Extended", "Pro"]) == 1  # an exact match wins
