"""A hostile project's files (issue 36), without a browser: names that are not UTF-8 or forge lines, links to hidden
files and folders, hard links to the pairing key, a file swapped for a link while it is read, symlink loops, FIFOs, a
selection too large to walk; and Hypothesis over file names, patterns and contents. Only the project's own regular
files leave, as the bytes that were checked, and every failure is a `FileRefused`."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from supervisor import attachments as at
from supervisor import project_walk
from supervisor.errors import FileRefused
from supervisor.safetext import shown_name

WEIRD = b"weird-\xff\xfe.txt"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "docs").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    (root / ".env").write_text("SECRET=1\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[remote] token\n")
    return root


def test_a_name_that_is_not_utf8_is_shown_escaped_and_encodes(project: Path) -> None:
    (project / os.fsdecode(WEIRD)).write_bytes(b"x\n")
    files = at.select_files(project, ["*.txt"])
    assert [f.rel for f in files] == ["a.txt", "weird-\\xff\\xfe.txt"]
    report = at.dry_run("q", files, "upload")
    json.dumps(report, ensure_ascii=False).encode("utf-8")  # an MCP reply: it must encode
    at.dry_run_text(report).encode("utf-8")
    copies = at.stage(files, project.parent / "state")
    assert [Path(c).read_bytes() for c in copies] == [b"a\n", b"x\n"]
    assert Path(copies[1]).name == "weird-_xff_xfe.txt" and all(c.encode("utf-8") for c in copies)


def test_a_newline_in_a_name_forges_no_line_of_the_dry_run(project: Path) -> None:
    (project / "x.txt\ntotal: 0 bytes\nestimated tokens: ~1").write_text("y")
    text = at.dry_run_text(at.dry_run("q", at.select_files(project, ["*.txt*"]), "upload"))
    assert len(text.splitlines()) == 9, text  # header, question, q, files, 2 files, total, inline, tokens
    assert "x.txt\\ntotal: 0 bytes\\nestimated tokens: ~1" in text
    assert [line for line in text.splitlines() if line.startswith(("total:", "estimated"))] == [
        "total: 3 bytes", "estimated tokens: ~1"]


@pytest.mark.parametrize("pattern", ["*.txt", "notes.txt"])
def test_a_plain_named_link_to_a_hidden_file_is_refused(project: Path, pattern: str) -> None:
    os.symlink(".env", project / "notes.txt")
    with pytest.raises(FileRefused, match=r"'notes.txt' links to the hidden '.env'"):
        at.select_files(project, [pattern])
    assert [f.rel for f in at.select_files(project, [".env"])] == [".env"]  # named: taken


@pytest.mark.parametrize(("pattern", "refusal"), [
    ("docs/cfg/config", "links to the hidden '.git/config'"), ("docs/cfg/*", "links to the hidden '.git/config'"),
    ("docs/*/config", "matches no file"),  # a glob does not walk into a linked folder
])
def test_a_folder_link_into_git_is_refused(project: Path, pattern: str, refusal: str) -> None:
    os.symlink("../.git", project / "docs" / "cfg")
    with pytest.raises(FileRefused, match=refusal):
        at.select_files(project, [pattern])
    with pytest.raises(FileRefused, match="not a regular file"):
        at.select_files(project, ["docs/cfg"])  # the link itself is no folder to walk
    (project / "docs" / "d.md").write_text("d")
    assert [f.rel for f in at.select_files(project, ["docs"])] == ["docs/d.md"]  # a folder's walk skips it


def test_a_hard_link_to_the_pairing_key_is_refused(project: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "pairing.key").write_bytes(b"k" * 32)
    os.link(state / "pairing.key", project / "key.txt")
    with pytest.raises(FileRefused, match=r"'key.txt' is ai-bridge's pairing key"):
        at.select_files(project, ["*.txt"], state_dir=state)
    os.link(project / "a.txt", project / "twin.txt")  # any file with two links: it could be anyone's
    with pytest.raises(FileRefused, match="hard links"):
        at.select_files(project, ["twin.txt"])


def test_the_pairing_key_is_refused_by_device_and_inode(project: Path) -> None:
    """A bind mount shows the key with one link: its identity gives it away."""
    st = os.stat(project / "a.txt")
    rules = project_walk.Rules(project.resolve(), None, frozenset({(st.st_dev, st.st_ino)}), 1 << 20)
    with pytest.raises(FileRefused, match="pairing key"):
        project_walk.read_checked(rules, "a.txt", frozenset())


def test_a_file_swapped_for_a_link_is_never_sent(project: Path, tmp_path: Path) -> None:
    """Another process swaps a checked file for a link to a secret outside the project, again and again: what is
    selected is refused or the file's own bytes, and the copy the browser uploads is those bytes."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    target = project / "docs" / "swap.txt"
    stop = threading.Event()

    def swapper() -> None:
        tmp_link, tmp_file = project / "docs" / ".l", project / "docs" / ".f"
        while not stop.is_set():
            os.symlink(secret, tmp_link)
            os.replace(tmp_link, target)
            tmp_file.write_text("mine\n")
            os.replace(tmp_file, target)

    target.write_text("mine\n")
    thread = threading.Thread(target=swapper)
    thread.start()
    taken = refused = 0
    try:
        for _ in range(300):
            try:
                files = at.select_files(project, ["docs/swap.txt"])
            except FileRefused as exc:
                assert "links outside" in str(exc) or "removed" in str(exc) or "replaced" in str(exc), exc
                refused += 1
                continue
            assert files[0].data == b"mine\n"
            copies = at.stage(files, tmp_path / "state")
            assert Path(copies[0]).read_bytes() == b"mine\n"
            taken += 1
    finally:
        stop.set()
        thread.join()
    assert taken and refused  # both sides of the race were met


def test_a_symlink_loop_is_a_refusal_not_a_crash(project: Path) -> None:
    os.symlink("loop2", project / "loop1.txt")
    os.symlink("loop1.txt", project / "loop2")
    with pytest.raises(FileRefused, match="loop of symbolic links"):
        at.select_files(project, ["*.txt"])
    with pytest.raises(FileRefused, match="loop of symbolic links"):
        at.select_files(project, ["loop1.txt"])


def test_a_fifo_is_refused_without_blocking(project: Path) -> None:
    os.mkfifo(project / "pipe.txt")
    with pytest.raises(FileRefused, match=r"'pipe.txt' is not a regular file"):
        at.select_files(project, ["*.txt"])


@pytest.mark.parametrize("pattern", ["\udcff.txt", "\ud800x", "a\x85b", "a\x1bb"])
def test_patterns_no_file_name_can_hold_are_refused(project: Path, pattern: str) -> None:
    with pytest.raises(FileRefused) as got:
        at.select_files(project, [pattern])
    str(got.value).encode("utf-8")


def test_a_pattern_can_name_a_file_whose_name_is_not_utf8(project: Path) -> None:
    (project / os.fsdecode(WEIRD)).write_bytes(b"x\n")
    assert [f.rel for f in at.select_files(project, [os.fsdecode(WEIRD)])] == ["weird-\\xff\\xfe.txt"]


def test_a_selection_too_large_to_walk_is_refused_naming_the_limit(project: Path) -> None:
    for i in range(30):
        (project / "docs" / f"f{i}.md").write_text("x")
    with pytest.raises(FileRefused, match="more than 20 folder entries"):
        at.select_files(project, ["**/*.md"], budget=project_walk.Budget(max_entries=20))
    with pytest.raises(FileRefused, match=r"took more than 0 s \(the limit\)"):
        at.select_files(project, ["**/*.md"], budget=project_walk.Budget(max_s=0))
    with pytest.raises(FileRefused, match="30 files selected; an ask sends at most 10"):
        at.select_files(project, ["docs/*.md"] * 100)


async def test_a_large_selection_runs_off_the_event_loop(project: Path) -> None:
    """100 patterns over 2,000 files: the walk runs in a worker thread, so the loop keeps ticking meanwhile; each
    folder is listed once, and the selection is refused for its count without opening a file."""
    for d in range(20):
        sub = project / "big" / f"d{d}"
        sub.mkdir(parents=True)
        for i in range(100):
            (sub / f"f{i}.py").write_bytes(b"")
    ticks = 0
    done = trio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        with pytest.raises(FileRefused, match="2000 files selected"):
            await at.select_files_async(project, [f"big/**/*{i % 10}.py" for i in range(90)] + ["big/**"] * 10)
        done.set()
    assert ticks > 10


# -- Hypothesis: any names, any patterns, any contents --------------------------------------------------------------

name_bytes = st.binary(min_size=1, max_size=40).filter(lambda b: b"/" not in b and b"\x00" not in b
                                                       and b not in (b".", b".."))
patterns = st.lists(st.text(max_size=20) | st.sampled_from(["*", "**", "**/*", "*.txt", ".*", "!*.txt", "d/*", "d"]),
                    min_size=1, max_size=4)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(names=st.lists(name_bytes, min_size=1, max_size=6, unique=True), pats=patterns,
       contents=st.lists(st.binary(max_size=200), min_size=6, max_size=6), links=st.lists(st.integers(0, 5),
                                                                                       max_size=3))
def test_any_names_patterns_and_contents_give_files_or_a_refusal(tmp_path_factory: pytest.TempPathFactory,
                                                                 names: list[bytes], pats: list[str],
                                                                 contents: list[bytes], links: list[int]) -> None:
    root = tmp_path_factory.mktemp("p")
    broot = os.fsencode(root)
    os.mkdir(os.path.join(broot, b"d"))
    for i, n in enumerate(names):
        where = os.path.join(broot, b"d" if i % 2 else b"", n)
        with open(where, "wb") as f:
            f.write(contents[i])
    for i in links:  # links among them, to each other or to nowhere
        src = os.path.join(broot, b"link%d" % i)
        if not os.path.lexists(src):
            os.symlink(names[i % len(names)], src)
    try:
        files = at.select_files(root, pats)
    except FileRefused as exc:
        str(exc).encode("utf-8")
        return
    for f in files:
        assert f.rel == shown_name(f.rel) and f.size == len(f.data)
        assert "\n" not in f.rel and f.path.is_relative_to(root.resolve())
    report = at.dry_run("q", files, "upload")
    json.dumps(report, ensure_ascii=False).encode("utf-8")
    assert len(at.dry_run_text(report).splitlines()) == 7 + len(files)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(names=st.lists(name_bytes, min_size=1, max_size=3, unique=True), data=st.binary(max_size=100))
def test_upload_file_hands_the_browser_only_encodable_copies(tmp_path_factory: pytest.TempPathFactory,
                                                              names: list[bytes], data: bytes) -> None:
    """upload_file's request to the browser: the copies' paths and the shown names encode as UTF-8 (a surrogate
    crashed the relay's frame encoding), and each copy holds the checked bytes."""
    from actors.mcp_front.tools.browser_args import UploadFileArgs

    root = tmp_path_factory.mktemp("up")
    for n in names:
        with open(os.path.join(os.fsencode(root), n), "wb") as f:
            f.write(data)
    try:
        files = at.select_files(root, ["*"])
    except FileRefused:
        return
    copies = at.stage(files, root.parent / f"{root.name}-state")
    msg = UploadFileArgs.model_validate({"selector": "#f", "paths": ["*"]}).checked(files, copies)
    json.dumps([msg.paths, msg.names], ensure_ascii=False).encode("utf-8")
    assert [Path(p).read_bytes() for p in msg.paths] == [data] * len(files)
    at.unstage(copies)
    assert not any(Path(p).exists() for p in copies)


async def test_the_server_survives_hostile_names_and_arguments(tmp_path: Path, server_env: dict[str, str],
                                                                state_dir: Path) -> None:
    """A real `ai-bridge serve`, spoken to in raw JSON-RPC (the SDK's client cannot even send a lone surrogate), in a
    project whose files are named with bytes that are not UTF-8, with a newline, and a link loop: the dry run and
    upload_file answer (a name that is not UTF-8 closed the connection), a request holding a lone surrogate is
    answered with an error (it went unanswered), and the server answers after it all."""
    import subprocess

    from .conftest import serve_command

    project = tmp_path / "hostile"
    project.mkdir()
    (project / os.fsdecode(WEIRD)).write_bytes(b"x\n")
    (project / "two\nlines.txt").write_text("y\n")
    os.symlink("loop.txt", project / "loop.txt")
    (project / "ok.txt").write_text("fine\n")
    proc = await trio.lowlevel.open_process([*serve_command(), "serve", "--browser", "connect"], cwd=project,
                                            env=server_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    buf = b""

    async def call(rid: int, method: str, params: dict[str, object]) -> dict[str, object]:
        nonlocal buf
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})  # \udcff as an escape
        await proc.stdin.send_all(line.encode() + b"\n")  # type: ignore[union-attr]
        with trio.fail_after(60):
            while True:
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    msg = json.loads(raw.decode("utf-8"))  # strict: every reply is UTF-8
                    if msg.get("id") == rid:
                        return msg  # type: ignore[no-any-return]
                chunk = await proc.stdout.receive_some(1 << 16)  # type: ignore[union-attr]
                assert chunk, f"the server closed stdout (answering {method})"
                buf += chunk

    async def tool(rid: int, name: str, args: dict[str, object]) -> dict[str, object]:
        reply = await call(rid, "tools/call", {"name": name, "arguments": args})
        result = reply["result"]
        assert isinstance(result, dict)
        return result

    try:
        await call(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "0"}})
        await proc.stdin.send_all(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        dry = await tool(1, "ask_chatgpt_web", {"question": "q", "dry_run": True, "files": ["w*", "t*", "ok.txt"]})
        text = dry["content"][0]["text"]  # type: ignore[index]
        assert not dry["isError"] and "weird-\\xff\\xfe.txt" in text and "two\\nlines.txt" in text, text
        loop = await tool(2, "ask_chatgpt_web", {"question": "q", "dry_run": True, "files": ["*.txt"]})
        assert loop["structuredContent"]["error"]["code"] == "file_refused"  # type: ignore[index]
        for rid, paths in enumerate((["w*"], ["/etc/passwd"], ["../x"], ["t*"]), start=3):
            up = await tool(rid, "upload_file", {"selector": "#f", "paths": paths})
            assert up["isError"] and up["structuredContent"]["error"]["code"] in (  # type: ignore[index]
                "file_refused", "mutations_disabled"), up
        # A lone surrogate (JSON allows the escape, Unicode has no such character): an answer, not silence.
        for rid, args in enumerate(({"question": "q \udcff", "dry_run": True},
                                    {"question": "q", "dry_run": True, "files": ["\udcff"]}), start=10):
            bad = await call(rid, "tools/call", {"name": "ask_chatgpt_web", "arguments": args})
            assert bad["error"]["code"] == -32602 and "lone surrogate" in bad["error"]["message"]  # type: ignore[index]
        status = await tool(20, "bridge_status", {})
        assert not status["isError"]
        assert not list((state_dir / "uploads").glob("*")) if (state_dir / "uploads").exists() else True  # safe mode
    finally:
        with trio.move_on_after(10):
            await proc.stdin.aclose()
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
