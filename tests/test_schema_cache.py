"""The tool schema cache (actors/mcp_front/schema_cache.py): a start whose code matches reads the schemas; any other
file is ignored and rewritten, and the schemas a client sees are the same either way."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.mcp_front import schema_cache, toolkit
from actors.mcp_front.tools import TOOLS

COMPUTED = {name: {"input": t.args.tool_schema(), "output": t.output_schema()} for name, t in TOOLS.items()}


@pytest.fixture(autouse=True)
def forget_schemas() -> Any:
    """Each test starts as a fresh server does: no schema known yet (and the module's own are put back after)."""
    saved = dict(toolkit._input_schemas), dict(toolkit._output_schemas)
    toolkit._input_schemas.clear()
    toolkit._output_schemas.clear()
    yield
    toolkit._input_schemas.clear()
    toolkit._output_schemas.clear()
    toolkit._input_schemas.update(saved[0])
    toolkit._output_schemas.update(saved[1])


def served() -> dict[str, Any]:
    return {name: {"input": t.args.tool_schema(), "output": t.output_schema()} for name, t in TOOLS.items()}


def the_file(cache: Path) -> Path:
    [path] = cache.glob(f"{schema_cache.PREFIX}*.json")
    return path


def test_the_first_start_writes_the_file_and_the_next_reads_the_same_schemas(tmp_path: Path) -> None:
    assert schema_cache.warm(TOOLS, tmp_path / "cache") is False
    path = the_file(tmp_path / "cache")
    assert path.stat().st_mode & 0o777 == 0o600 and (tmp_path / "cache").stat().st_mode & 0o777 == 0o700
    assert served() == COMPUTED
    toolkit._input_schemas.clear()
    toolkit._output_schemas.clear()
    assert schema_cache.warm(TOOLS, tmp_path / "cache") is True
    assert served() == COMPUTED
    # Seeded, not computed: a schema the file holds is what the tool serves.
    data = json.loads(path.read_text())
    data["tools"]["bridge_status"]["input"]["description"] = "from the file"
    path.write_text(json.dumps(data))
    toolkit._input_schemas.clear()
    assert schema_cache.warm(TOOLS, tmp_path / "cache") is True
    assert TOOLS["bridge_status"].args.tool_schema()["description"] == "from the file"


def test_other_code_has_another_file_and_its_old_one_is_removed(tmp_path: Path, monkeypatch: Any) -> None:
    schema_cache.warm(TOOLS, tmp_path)
    old = the_file(tmp_path)
    monkeypatch.setattr(schema_cache, "fingerprint", lambda: "f" * 64)
    toolkit._input_schemas.clear()
    assert schema_cache.warm(TOOLS, tmp_path) is False
    assert not old.exists() and the_file(tmp_path).name == f"{schema_cache.PREFIX}{'f' * 32}.json"
    assert served() == COMPUTED


@pytest.mark.parametrize("spoil", ["not json", "a list", "other fingerprint", "a tool missing", "an extra tool",
                                   "input not an object", "output missing", "group-writable", "a symlink",
                                   "a directory", "too big"])
def test_a_file_that_is_not_this_servers_is_ignored_and_rewritten(tmp_path: Path, spoil: str) -> None:
    schema_cache.warm(TOOLS, tmp_path)
    path = the_file(tmp_path)
    data = json.loads(path.read_text())
    text: str | None = None
    if spoil == "not json":
        text = '{"fingerprint": '
    elif spoil == "a list":
        text = "[]"
    elif spoil == "other fingerprint":
        data["fingerprint"] = "0" * 64
    elif spoil == "a tool missing":
        del data["tools"]["bridge_status"]
    elif spoil == "an extra tool":
        data["tools"]["rm_rf"] = data["tools"]["bridge_status"]
    elif spoil == "input not an object":
        data["tools"]["bridge_status"]["input"] = "x"
    elif spoil == "output missing":
        data["tools"]["ask_chatgpt_web"]["output"] = None
    elif spoil == "too big":
        text = json.dumps(data) + " " * schema_cache.MAX_BYTES
    for name in data["tools"]:
        if name in TOOLS and isinstance(data["tools"][name]["input"], dict):
            data["tools"][name]["input"]["description"] = "spoiled"
    path.write_text(text if text is not None else json.dumps(data))
    if spoil == "group-writable":
        path.chmod(0o664)
    elif spoil == "a symlink":
        real = tmp_path / "elsewhere.json"
        path.rename(real)
        path.symlink_to(real)
    elif spoil == "a directory":
        path.unlink()
        path.mkdir()
    toolkit._input_schemas.clear()
    toolkit._output_schemas.clear()
    assert schema_cache.warm(TOOLS, tmp_path) is False
    assert served() == COMPUTED
    if spoil not in ("a directory",):
        assert not path.is_symlink() and json.loads(path.read_text())["tools"] == COMPUTED  # rewritten


def test_an_unwritable_cache_costs_only_the_work(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert schema_cache.warm(TOOLS, blocker / "cache") is False  # its parent is a file: nothing can be written
    assert served() == COMPUTED


def test_the_default_place_follows_xdg(monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert schema_cache.default_cache_dir() == tmp_path / "ai-bridge"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert schema_cache.default_cache_dir() == tmp_path / ".cache" / "ai-bridge"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.one_of(st.binary(max_size=300), st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20).map(lambda v: json.dumps(v).encode())))
def test_no_file_content_breaks_a_start(tmp_path: Path, monkeypatch: Any, content: bytes) -> None:
    monkeypatch.setattr(schema_cache, "fingerprint", lambda: "e" * 64)  # hashing our source is not what is tested
    path = tmp_path / f"{schema_cache.PREFIX}{'e' * 32}.json"
    with open(path, "wb") as f:
        f.write(content)
    os.chmod(path, 0o600)
    # The schemas stay known (recomputing them is what costs a start, not what this checks): a file wrongly taken
    # would be seeded over them, and show.
    schema_cache.warm(TOOLS, tmp_path)
    assert served() == COMPUTED
