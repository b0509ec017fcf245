"""Every example command in README.md and docs/, and every console snippet of the console's docs, is RUN as written
(issue 33: an example that parsed fine failed with NameError). Not only parsed: each line of a ```bash block that
starts ai-bridge runs in bash, and each console snippet in a real server's console.

One test runs them all, sharing what it can: the fake sites (the session's), one "user's Chrome" with our extension,
paired with the state dir every command shares (so the asks and checks of `--browser auto`, the default, use it and
launch nothing), one `serve --allow-faults` for the console. Commands run in three rounds, in the docs' order within
each: those that need no browser of ours (they launch their own, or none) before the user's Chrome starts, since it
would connect to their servers too; then those that use it; then the console's. The environment stands in for
what a user set up once: `AI_BRIDGE_BROWSER_PATH`, `AI_BRIDGE_HEADLESS=1` and the fake sites' host rules in
`AI_BRIDGE_BROWSER_ARGS` — every command line itself is the docs' own, with the substitutions of `SUBSTITUTE`.

A line the test does not run is in `NOT_RUN` with the reason; a new example is neither until it is added to one.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import trio

from .conftest import REPO
from .e2e import CHROMIUM, requires_chromium
from .fakesites.fixture import FakeSites
from .test_doctor_page import CHATGPT_IDLE, GEMINI_CHAT
from .user_chrome import open_user_chrome

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# Lines with an ai-bridge command that are not run, and why. (doc name, the line's start, reason)
NOT_RUN = [
    ("README.md", "missing=; [ -x /usr/lib/chromium/chromium ] || missing=\"$missing chromium\"; python3 -c",
     "installs system packages and a venv; its last step, `ai-bridge doctor`, runs as install.md's example"),
    ("README.md", ".venv/bin/ai-bridge demo", "tests/test_demo.py runs it as written, from a fresh home, and checks "
     "what it prints and that it leaves nothing behind"),
    ("cli.md", "ai-bridge ask --provider chatgpt --conversation-url", "names a conversation of the reader's own "
     "account (the fake has none at that URL); tests/test_e2e_pool.py continues one it made"),
    ("cli.md", "ai-bridge ask --provider gemini --temporary", "tests/test_e2e_pool.py asks in both sites' temporary "
     "chats, with the same arguments, in its shared server (no suite time for a second browser)"),
    ("cli.md", "ai-bridge ask --provider chatgpt --new-chat --chat-base-url", "tests/test_e2e_pool.py asks in this "
     "Project, with the same arguments, in its shared server"),
    ("cli.md", "ai-bridge check --scenarios my-scenarios.json", "README.md's `ai-bridge check --scenarios mine.json` "
     "with another file name: ten scenarios again would teach nothing new"),
    ("install.md", "ai-bridge serve --http-port 8790", "serves until a signal; tests/test_third_party_clients.py "
     "runs `serve --http-port` with a Python SDK client and a TypeScript SDK client asking side by side"),
    ("check.md", "ai-bridge check --provider all", "`ai-bridge check` of the line above plus the newer sites' four "
     "scenarios, which tests/test_e2e_check.py runs with every shipped scenario (--provider all)"),
]
# Lines without an ai-bridge command: the rest of a block's set-up, each with why it is not run here.
OTHER_COMMANDS = [
    ("README.md", "missing=; [ -x /usr/lib/chromium/chromium ] || missing=\"$missing chromium\"; dpkg -s",
     "the test suite's own command: it runs this test"),
    ("README.md", ".venv/bin/python -m pytest", "the test suite itself"),
    ("README.md", "pipx install", "installs from a repository over the network"),
    ("README.md", "claude mcp add", "Claude Code is not installed here; the command it registers, `ai-bridge "
     "serve`, runs in other examples"),
    ("install.md", "pipx install", "installs from a repository over the network"),
    ("install.md", "git clone", "clones over the network"),
    ("install.md", "python3 -m venv .venv", "makes a venv (tests/test_packaging.py installs the wheel into one)"),
    ("install.md", ".venv/bin/pip install .", "installs (tests/test_packaging.py does, offline)"),
    ("install.md", "claude mcp add", "Claude Code is not installed here"),
    ("benchmarks.md", "unshare --net sh -c", "a benchmark script, minutes long, outside the suite"),
    ("benchmarks.md", ".venv/bin/python -m tests.benchmarks", "a benchmark script, outside the suite"),
    ("cli.md", "claude mcp add", "Claude Code is not installed here"),
    ("README.md", "uvx ai-bridge", "fetches the published package from PyPI (.ci/package runs `uvx --from <wheel> "
     "ai-bridge doctor` on the built one)"),
    ("install.md", "uvx ai-bridge", "fetches the published package from PyPI (.ci/package runs it on the built wheel)"),
    ("agents.md", "mkdir -p ~/.codex/skills", "writes into the user's Codex folder (tests/test_distribution.py checks "
     "the skill it copies)"),
    ("releasing.md", "python3 -m venv /tmp/release", "the release steps: build and publish, by hand"),
    ("releasing.md", "/tmp/release/bin/", "the release steps: build and publish, by hand"),
    ("releasing.md", "bash .ci/package", "CI runs it (.ci/run)"),
    ("releasing.md", "uvx ", "fetches the published package from (Test)PyPI"),
    ("releasing.md", "mcp-publisher ", "publishes to the MCP Registry, with an account"),
    ("releasing.md", "curl ", "asks the MCP Registry over the network"),
]
# `ai-bridge check` lines that would ask run with --dry-run added (`asks_in_check`): it reads the line's options,
# loads its scenario files and resolves its selection (an unknown --id or --tag fails), asking nothing.
# test_e2e_check.py runs check itself on the same fakes: all nine scenarios, --tag smoke (with --debug too),
# --scenarios with --id. (Run here, the four took 17 of the test's 53 s and 5 of its 22 CPU-s.)
# Placeholders in example lines and console snippets, and what the test runs instead.
SUBSTITUTE = {
    "41234": "the pid of the running server",  # console --pid
    "/tmp/aib-a": "a folder of the test's",  # serve --state-dir
}
SNIPPET_PLACEHOLDERS = {"'actor'": "'gemini'", "msg": "protocol.relay.LinkStatus()", "seconds": "1"}
# Exit codes other than 0 that the docs promise for an example, and where.
EXPECTED_EXIT = {
    "ai-bridge doctor --page part.html --provider gemini": (
        1, "a part of a page: the entries outside it show as missing (providers.md, exit 1 in cli.md)"),
}
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "docs", "version": "0"}}})


@attrs.frozen
class Example:
    doc: str
    line_no: int
    text: str

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line_no}: {self.text}"


def bash_lines() -> Iterator[Example]:
    """Each command line of the ```bash blocks (continuations joined, comment lines and blank lines skipped)."""
    for path in DOCS:
        lang: str | None = None
        pending, start = "", 0
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                lang = None if lang is not None else line[3:].strip()
                continue
            if lang not in ("bash", "sh"):
                continue
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            pending, start = (pending + line.rstrip("\\").rstrip() + " ", start or no) if line.endswith("\\") \
                else (pending + line, start or no)
            if not line.endswith("\\"):
                yield Example(path.name, start, pending.strip())
                pending, start = "", 0


COMMAND = re.compile(r'^"?(?:\$PWD/|[\w./~-]*/)?(?:\.venv/bin/)?ai-bridge"?$')


def invocation(line: str) -> list[str] | None:
    """The ai-bridge argv of a line (the segment of a pipeline or list that runs it), else None."""
    for segment in re.split(r"\|\||&&|[|;]", line):
        words = segment.strip().lstrip("{(").strip()
        words = re.split(r"\s#\s", " " + words + " ", maxsplit=1)[0]  # an end-of-line comment
        words = re.sub(r"\s\d?>>?\s*\S+", " ", words)  # redirections
        try:
            argv = shlex.split(words)
        except ValueError:
            continue
        if argv and COMMAND.match(argv[0]):
            return argv[1:]
    return None


def listed(table: list[tuple[str, str, str]], ex: Example) -> str | None:
    return next((why for doc, start, why in table if doc == ex.doc and ex.text.startswith(start)), None)


def round_of(argv: list[str]) -> str:
    """"own": needs no browser of ours (none, or it launches its own); "browser": uses the user's Chrome;
    "console": the console's, with the server it talks to."""
    command = argv[0] if argv else ""
    if command == "console" or (command == "serve" and "--allow-faults" in argv):
        return "console"
    if command == "ask" and "--dry-run" not in argv:
        return "browser"
    if asks_in_check(argv):
        return "browser"
    if command == "doctor" and "--live" in argv:
        return "browser"
    return "own"


def asks_in_check(argv: list[str]) -> bool:
    return argv[:1] == ["check"] and not {"--dry-run", "--list"} & set(argv)


def examples() -> list[tuple[Example, list[str]]]:
    """Each example line to run and its argv (a check line's with --dry-run: see `asks_in_check`)."""
    return [(ex, ["check", "--dry-run", *argv[1:]] if asks_in_check(argv) else argv) for ex in bash_lines()
            if (argv := invocation(ex.text)) is not None and not listed(NOT_RUN, ex)]


# --- console snippets ------------------------------------------------------------------------------------------------


def cli_md_console_section() -> str:
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    return text.split("## `ai-bridge console`", 1)[1].split("\n## ", 1)[0]


def console_snippets() -> list[str]:
    """What the docs show typed into the console: the helper table's helpers (a signature with placeholders only when
    no example calls it), its "for example" calls, the code after "inside code", the helpers README lists, and what
    README's `serve --allow-faults` comment says to type."""
    section = cli_md_console_section()
    table = section.split("| helper |", 1)[1].split("\n\n", 1)[0]
    rows = [ln for ln in table.splitlines() if ln.startswith("| `")]
    found: list[str] = []
    for row in rows:
        first, rest = row.split("|")[1], "|".join(row.split("|")[2:])
        found += re.findall(r"`([^`]+)`", first)
        found += re.findall(r"for example `([^`]+)`", rest)
    found += re.findall(r"inside code, `await` them \(`([^`]+)`\)", section)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    helpers = re.search(r"Helpers: (.*?)\. Readline", readme, re.S)
    assert helpers is not None, "README.md no longer lists the console helpers"
    found += re.findall(r"`([^`]+)`", helpers.group(1))
    said = re.search(r"in the console: (.*)$", readme, re.M)
    assert said is not None
    found += [s.strip() for s in re.split(r",\s*(?![^()]*\))", said.group(1))]
    called = {m.group(1) for s in found if (m := re.match(r"(\w+)\((?!.*'actor')", s))}
    snippets: list[str] = []
    for s in dict.fromkeys(found):
        placeholder = any(p in s for p in SNIPPET_PLACEHOLDERS)
        name = re.match(r"(\w+)\(", s)
        if placeholder and name and name.group(1) in called:
            continue  # a signature whose example runs
        for p, value in SNIPPET_PLACEHOLDERS.items():
            s = re.sub(rf"(?<![\w.]){re.escape(p)}(?![\w])", value, s)
        snippets.append(s)
    faults = ("crash(", "hang(", "slow(", "drop_extension(")
    return [s for s in snippets if not s.startswith(faults)] + [s for s in snippets if s.startswith(faults)]


# --- no browser: the list is complete -------------------------------------------------------------------------------


def test_every_example_line_is_run_or_says_why_not() -> None:
    lines = list(bash_lines())
    assert len(lines) > 30
    unclassified = [ex.where for ex in lines if invocation(ex.text) is None and not listed(OTHER_COMMANDS, ex)]
    assert not unclassified, "example lines neither run nor listed in OTHER_COMMANDS:\n" + "\n".join(unclassified)
    for table in (NOT_RUN, OTHER_COMMANDS):  # no stale entry
        for doc, start, _ in table:
            assert any(ex.doc == doc and ex.text.startswith(start) for ex in lines), (doc, start)
    runs = examples()
    assert {round_of(argv) for _, argv in runs} == {"own", "browser", "console"}
    for text in EXPECTED_EXIT:
        assert any(ex.text.startswith(text) for ex, _ in runs), text
    snippets = console_snippets()
    assert "call('relay', protocol.relay.LinkStatus())" in snippets and "system" in snippets
    assert "hang('gemini')" in snippets and "crash('gemini')" in snippets and "call('gemini'" not in str(snippets)


# --- running them ----------------------------------------------------------------------------------------------------


@attrs.define
class Runner:
    env: dict[str, str]
    cwd: Path
    tmp: Path
    serve_pid: int | None = None
    problems: list[str] = attrs.field(factory=list)
    ran: int = 0
    took: list[tuple[float, str]] = attrs.field(factory=list)  # seconds each example took

    def command_line(self, ex: Example) -> str:
        line = ex.text
        for token in {t for t in re.findall(r'"?[\w./$~-]*ai-bridge"?', line) if COMMAND.match(t)}:
            line = line.replace(token, "ai-bridge")  # the one on PATH, whatever path the docs show
        line = line.replace("/tmp/aib-a", str(self.tmp / "aib-a"))
        if asks_in_check(invocation(line) or []):
            line = line.replace("ai-bridge check", "ai-bridge check --dry-run", 1)  # see asks_in_check
        if self.serve_pid is not None:
            line = line.replace("41234", str(self.serve_pid))
        return line

    async def run(self, ex: Example, argv: list[str]) -> None:
        line = self.command_line(ex)
        serve = argv[0] == "serve" and not re.match(r".*\|\s*ai-bridge serve", line)
        t0 = trio.current_time()
        with trio.fail_after(240):
            done = await trio.run_process(["bash", "-c", line], env=self.env, cwd=self.cwd, check=False,
                                          stdin=(INITIALIZE + "\n").encode() if serve else b"help()\n",
                                          capture_stdout=True, capture_stderr=True)
        self.ran += 1
        self.took.append((round(trio.current_time() - t0, 1), ex.where[:100]))
        out, err = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
        want = next((code for start, (code, _) in EXPECTED_EXIT.items() if ex.text.startswith(start)), 0)
        why = []
        if done.returncode != want:
            why.append(f"exit {done.returncode}, the docs promise {want}")
        if "Traceback" in err:
            why.append("a traceback")
        if argv[0] == "serve" and ">" not in line and '"id":1' not in out.replace(" ", ""):
            why.append("no reply to initialize on stdout")
        if "--json" in argv and ">" not in line and done.returncode == 0:
            try:
                json.loads(out)
            except ValueError:
                why.append("--json printed no JSON")
        if why:
            self.problems.append(f"{ex.where}\n    ran: {line}\n    {'; '.join(why)}\n    stdout: {out[-1500:]}\n"
                                 f"    stderr: {err[-2500:]}")


def project_folder(root: Path) -> Path:
    """The folder the examples run in: a small project (`--file 'src/**/*.py'`), a git repository (`git diff`),
    the scenario files and the saved pages the examples name."""
    root.mkdir()
    (root / "src" / "gen").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def add(a: int, b: int) -> int:\n    return a + b\n")
    (root / "src" / "gen" / "table.py").write_text("TABLE = [1, 2, 3]\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    mine = {"version": 1, "scenarios": [{
        "id": "my-first", "name": "My own question", "description": "a scenario of the user's",
        "tags": ["chatgpt"], "providers": ["chatgpt"],
        "question": "How do I reverse a list in place in Python without copying it?",
        "assertions": {"minAnswerLength": 20}}]}
    for name in ("mine.json", "my-scenarios.json"):
        (root / name).write_text(json.dumps(mine))
    (root / "chatgpt.html").write_text(CHATGPT_IDLE)  # a whole page, saved from the browser
    part = re.search(r"<model-response.*?</model-response>", GEMINI_CHAT, re.S)
    assert part is not None
    (root / "part.html").write_text(part.group(0))  # an element's outerHTML
    return root


@requires_chromium
@pytest.mark.chromium
async def test_every_example_command_and_console_snippet_runs(sites: FakeSites, tmp_path: Path) -> None:
    # Fast answers: the examples' outcome is the point here, not the sites' timing (check's thinking scenario still
    # thinks, its long answer is still long: the fakes' rules decide those).
    for site in (sites.chatgpt, sites.gemini):
        site.set_next(firstTokenMs=150, chunks=3, intervalMs=60, thinkingMs=300)
    state = tmp_path / "state"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = shutil.which("ai-bridge", path=str(Path(sys.executable).parent))
    (bin_dir / "ai-bridge").write_text(f"#!/bin/sh\nexec {shlex.quote(script)} \"$@\"\n" if script else
                                       f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m supervisor.app.cli \"$@\"\n")
    (bin_dir / "ai-bridge").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AI_BRIDGE_", "XDG_"))}
    env.update(PATH=f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}", AI_BRIDGE_STATE_DIR=str(state),
               XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               AI_BRIDGE_BROWSER_PATH=CHROMIUM, AI_BRIDGE_HEADLESS="1",
               AI_BRIDGE_BROWSER_ARGS="\n".join(sites.chromium_args()), PYTHONUNBUFFERED="1")
    runner = Runner(env, project_folder(tmp_path / "project"), Path(tempfile.mkdtemp(prefix="aib-docs-")))
    runs = examples()
    seen: set[str] = set()

    def todo(kind: str) -> list[tuple[Example, list[str]]]:
        out = []
        for ex, argv in runs:
            same = shlex.join(argv)  # the same command in several docs (their comments differ) runs once
            if round_of(argv) == kind and same not in seen:
                seen.add(same)
                out.append((ex, argv))
        return out

    try:
        for ex, argv in todo("own"):
            await runner.run(ex, argv)
        async with open_user_chrome(sites, tmp_path / "chrome", pair_with=state) as chrome:
            for ex, argv in todo("browser"):
                await runner.run(ex, argv)
                # The user closes the windows the command left (each of its asks opened its own): idle pages would
                # keep the shared browser busy, and the next command opens what it needs.
                for page in await chrome.dt.pages("https://"):
                    await chrome.dt.send("Target.closeTarget", {"targetId": page["targetId"]})
            console = todo("console")
            target = [(ex, argv) for ex, argv in console if argv[0] == "serve"]
            assert len(target) == 1, target  # README's `serve --allow-faults`: the server the console examples reach
            await console_round(runner, target[0][0], [c for c in console if c[0] is not target[0][0]])
    finally:
        shutil.rmtree(runner.tmp, ignore_errors=True)
    assert runner.ran + 1 == len(seen) and runner.ran >= 25  # + the console's server, run by console_round
    slowest = "; ".join(f"{where} {seconds} s" for seconds, where in sorted(runner.took, reverse=True)[:5])
    assert not runner.problems, f"{len(runner.problems)} of {runner.ran} examples failed (slowest: {slowest}):\n\n" \
        + "\n\n".join(runner.problems)


async def console_round(runner: Runner, serve: Example, console: list[tuple[Example, list[str]]]) -> None:
    """README's `serve --allow-faults` in the background, each console example against it, then every console
    snippet of the docs in one console session; then the server's stdin closes and it must stop cleanly."""
    line = runner.command_line(serve)
    async with trio.open_nursery() as nursery:
        proc: trio.Process = await nursery.start(functools.partial(
            trio.run_process, ["bash", "-c", f"exec {line}"], env=runner.env, cwd=runner.cwd, stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False))
        try:
            registry = Path(runner.env["AI_BRIDGE_STATE_DIR"]) / "servers" / f"{proc.pid}.json"
            with trio.fail_after(30):
                while not registry.exists():
                    if proc.returncode is not None:
                        raise AssertionError(f"{serve.where}: the server exited {proc.returncode}")
                    await trio.sleep(0.05)
            runner.serve_pid = proc.pid
            for ex, argv in console:
                await runner.run(ex, argv)
            snippets = console_snippets()
            done = await trio.run_process(["ai-bridge", "console", *(a for s in snippets for a in ("-c", s))],
                                          env=runner.env, cwd=runner.cwd, capture_stdout=True, capture_stderr=True,
                                          check=False)
            out = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
            if done.returncode != 0 or "Traceback" in out:
                runner.problems.append(f"console snippets {snippets}: exit {done.returncode}\n{out[-3000:]}")
        finally:
            assert proc.stdin is not None
            await proc.stdin.aclose()  # the MCP client went away: serve stops
            with trio.fail_after(15):
                code = await proc.wait()
            if code != 0:
                runner.problems.append(f"{serve.where}: exit {code} after its stdin closed")
