"""Drift tests: the user documentation must follow the code, in both directions.

- docs/troubleshooting.md has a ``### `code` `` section (Cause / Check / Fix) for every `BridgeError` code, and no
  section for a code that no longer exists.
- docs/cli.md documents every subcommand of `supervisor.app.cli.parser()` and every long option of each (in the
  command's own section, or in "Common options" when the command's section points there), and documents no
  option a command does not have.
- docs/install.md's "MCP tools" section has a ``### `tool` `` subsection for every tool of
  `actors.mcp_front.tools.TOOLS`, naming each of its arguments, and none for a tool that is gone.
- docs/tools.md names every top-level key of each general browser tool's result (its `outputSchema`) and lists
  their annotations as the code sets them.

Plain synchronous tests: no trio, no browser, no server; they only import the modules and read the files.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from actors.mcp_front.tools import TOOLS, browser
from supervisor import errors
from supervisor.app.cli import parser

DOCS = Path(__file__).resolve().parent.parent / "docs"
OPTION = r"--[a-z][a-z0-9-]*"


def read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def sections(text: str, level: int) -> dict[str, str]:
    """Heading text → body, for headings of exactly `level` (a body runs to the next heading of that level or
    higher). Fenced code blocks are skipped, so a '#' comment in a shell example is not a heading."""
    out: dict[str, str] = {}
    current: str | None = None
    body: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"^(#{1,6}) (.*)$", line)
        if m and len(m.group(1)) <= level:
            if current is not None:
                out[current] = "\n".join(body)
            current, body = (m.group(2).strip(), []) if len(m.group(1)) == level else (None, [])
            continue
        if current is not None:
            body.append(line)
    if current is not None:
        out[current] = "\n".join(body)
    return out


def code_in_heading(heading: str) -> str | None:
    m = re.fullmatch(r"`([a-z_]+)`", heading)
    return m.group(1) if m else None


def mentions(text: str, word: str) -> bool:
    """`word` appears at the start of a code span: `--state-dir` or `--state-dir DIR`, not `--state-dir-x`."""
    return re.search("`" + re.escape(word) + r"(?![\w-])", text) is not None


# --- error codes -----------------------------------------------------------------------------------------------------


def error_codes() -> dict[str, type[errors.BridgeError]]:
    found: dict[str, type[errors.BridgeError]] = {}
    todo: list[type[errors.BridgeError]] = [errors.BridgeError]
    while todo:
        cls = todo.pop()
        found.setdefault(cls.code, cls)
        todo.extend(cls.__subclasses__())
    return found


def troubleshooting_codes() -> dict[str, str]:
    """Code → section body, from the `### `code`` headings of docs/troubleshooting.md."""
    out = {}
    for heading, body in sections(read("troubleshooting.md"), 3).items():
        code = code_in_heading(heading)
        if code is not None:
            out[code] = body
    return out


@pytest.mark.parametrize("code", sorted(error_codes()))
def test_every_error_code_has_a_troubleshooting_section(code: str) -> None:
    documented = troubleshooting_codes()
    assert code in documented, (
        f"docs/troubleshooting.md has no '### `{code}`' section for {error_codes()[code].__name__}")
    for part in ("**Cause.**", "**Check.**", "**Fix.**"):
        assert part in documented[code], f"docs/troubleshooting.md: the `{code}` section lacks {part}"


def test_troubleshooting_documents_no_unknown_error_code() -> None:
    stale = sorted(set(troubleshooting_codes()) - set(error_codes()))
    assert not stale, f"docs/troubleshooting.md has sections for codes supervisor/errors.py does not define: {stale}"


# --- CLI -------------------------------------------------------------------------------------------------------------


def subcommands() -> dict[str, argparse.ArgumentParser]:
    for action in parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("ai-bridge's parser has no subcommands")


def long_options(p: argparse.ArgumentParser) -> set[str]:
    return {s for a in p._actions for s in a.option_strings if s.startswith("--") and s != "--help"}


def cli_sections() -> tuple[dict[str, str], str]:
    """(subcommand → its section in docs/cli.md, the "Common options" section)."""
    commands, common = {}, None
    for heading, body in sections(read("cli.md"), 2).items():
        m = re.fullmatch(r"`ai-bridge ([a-z-]+)`", heading)
        if m:
            commands[m.group(1)] = body
        elif heading.lower().startswith("common options"):
            common = body
    assert common is not None, "docs/cli.md has no 'Common options' section"
    return commands, common


def table_options(body: str) -> set[str]:
    """Long options named in the first cell of the section's table rows (the option tables)."""
    found: set[str] = set()
    for line in body.splitlines():
        m = re.match(r"^\|([^|]*)\|", line)
        if m:
            found.update(re.findall(r"`(" + OPTION + r")", m.group(1)))
    return found


def uses_common(body: str) -> bool:
    return "common options" in body.lower()


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_subcommand_and_option_is_in_cli_md(command: str) -> None:
    commands, common = cli_sections()
    assert command in commands, f"docs/cli.md has no '## `ai-bridge {command}`' section"
    body = commands[command]
    missing = []
    for option in sorted(long_options(subcommands()[command])):
        if mentions(body, option):
            continue
        if uses_common(body) and option in table_options(common):
            continue
        missing.append(option)
    assert not missing, f"docs/cli.md does not document `ai-bridge {command}` options {missing}"


def test_cli_md_documents_no_unknown_subcommand_or_option() -> None:
    commands, common = cli_sections()
    real = subcommands()
    assert not set(commands) - set(real), f"docs/cli.md documents unknown subcommands {set(commands) - set(real)}"
    problems = []
    for command, body in commands.items():
        have = long_options(real[command])
        for option in sorted(table_options(body) - have):
            problems.append(f"{command} {option}")
        if uses_common(body):
            for option in sorted(table_options(common) - have):
                problems.append(f"{command} {option} (common options)")
    assert not problems, f"docs/cli.md documents options the parser does not have: {problems}"


# --- MCP tools -------------------------------------------------------------------------------------------------------


def tools_section() -> dict[str, str]:
    """Tool name → its subsection, from the '## MCP tools' section of docs/install.md."""
    body = sections(read("install.md"), 2).get("MCP tools")
    assert body is not None, "docs/install.md has no '## MCP tools' section"
    out = {}
    for heading, text in sections(body, 3).items():
        name = code_in_heading(heading)
        if name is not None:
            out[name] = text
    return out


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_every_tool_and_argument_is_documented(tool: str) -> None:
    documented = tools_section()
    assert tool in documented, f"docs/install.md '## MCP tools' has no '### `{tool}`' subsection"
    props = TOOLS[tool].args.tool_schema().get("properties", {})
    missing = [arg for arg in props if not mentions(documented[tool], arg)]
    assert not missing, f"docs/install.md: the `{tool}` subsection does not name its arguments {missing}"


def test_tools_docs_name_no_unknown_tool() -> None:
    stale = sorted(set(tools_section()) - set(TOOLS))
    assert not stale, f"docs/install.md documents tools the server does not offer: {stale}"


BROWSER_TOOLS = sorted(t.name for t in browser.TOOLS)


@pytest.mark.parametrize("tool", BROWSER_TOOLS)
def test_tools_md_names_each_browser_tools_result_keys(tool: str) -> None:
    body = sections(read("tools.md"), 2).get("Tools")
    assert body is not None, "docs/tools.md has no '## Tools' section"
    schema = TOOLS[tool].output_schema()
    assert schema is not None, tool
    missing = [key for key in schema["anyOf"][0]["properties"] if not re.search(rf"\b{key}\b", body)]
    assert not missing, f"docs/tools.md does not describe the result keys {missing} of `{tool}`"


def test_tools_md_gives_each_browser_tools_annotations() -> None:
    text = " ".join(sections(read("tools.md"), 2)["Results"].split())
    m = re.search(r"`readOnlyHint` and `idempotentHint`: (.*?)\. `destructiveHint`: (.*?)\. Neither .*?: (.*?)\.",
                  text)
    assert m is not None, "docs/tools.md '## Results' lists no annotations"
    read_only, destructive, neither = (set(re.findall(r"`([a-z_]+)`", g)) for g in m.groups())
    tools = [TOOLS[name] for name in BROWSER_TOOLS]
    assert read_only == {t.name for t in tools if t.annotations.read_only and t.annotations.idempotent}
    assert destructive == {t.name for t in tools if t.annotations.destructive}
    assert neither == {t.name for t in tools if not t.annotations.read_only and not t.annotations.destructive}
    assert "every browser tool has `openWorldHint`" in text and all(t.annotations.open_world for t in tools)


# --- help texts and option behaviour that the docs promise ----------------------------------------------------------
# Each test below would have caught one mismatch a user found (issue 13): a help text naming the wrong variable, an
# option without help or default, a documented "> 0" the parser did not enforce, a --config file that was silently
# ignored, and a bad value reported as coming from the wrong place.

ENV_VAR = r"AI_BRIDGE_[A-Z_]+"


def common_rows() -> dict[str, tuple[str, set[str]]]:
    """Option → (config key, env vars) from the 'config key / env' column of the common options table."""
    _, common = cli_sections()
    rows = {}
    for line in common.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not (m := re.search("`(" + OPTION + ")", cells[0])):
            continue
        key = re.match(r"`([a-z_]+)`", cells[1])
        rows[m.group(1)] = (key.group(1) if key else "", set(re.findall(ENV_VAR, cells[1])))
    return rows


def all_actions() -> list[tuple[str, argparse.Action]]:
    return [(name, a) for name, p in subcommands().items() for a in p._actions
            if not isinstance(a, argparse._HelpAction)]


def test_help_names_the_environment_variables_the_docs_name() -> None:
    rows = common_rows()
    for command, action in all_actions():
        named = set(re.findall(ENV_VAR, action.help or ""))
        if not named or not action.option_strings:
            continue
        option = next(o for o in action.option_strings if o.startswith("--"))
        if option in rows:
            documented = sorted(rows[option][1])
            assert named <= rows[option][1], (
                f"`ai-bridge {command} {option} --help` names {sorted(named)}, docs/cli.md names {documented}")


def test_documented_environment_variables_are_read() -> None:
    from supervisor import config

    for option, (key, env_vars) in common_rows().items():
        for var in env_vars:
            assert key in config._FIELDS, (option, key)
            aliases = config._ENV_ALIASES.get(key, ())
            assert var == "AI_BRIDGE_" + key.upper() or var in aliases, f"{option}: {var} is not read for {key}"


def test_every_command_and_option_has_help_and_shows_its_default() -> None:
    for command, p in subcommands().items():
        assert p.description, f"`ai-bridge {command} --help` has no description"
    for command, action in all_actions():
        name = action.option_strings[-1] if action.option_strings else action.dest
        assert action.help, f"`ai-bridge {command}`: {name} has no help text"
        if action.default not in (None, False, 0, [], ()) and action.default is not argparse.SUPPRESS:
            assert "default" in action.help, f"`ai-bridge {command}`: {name} does not say its default"


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_seconds_options_refuse_what_the_docs_refuse(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    # install.md: "Seconds must be greater than 0" — for the options as for the keys.
    assert "Seconds must be greater than 0" in read("install.md")
    seconds = [(c, a) for c, a in all_actions() if a.option_strings and "seconds" in (a.help or "")]
    assert seconds, "no option takes seconds?"
    for command, action in seconds:
        argv = [command, f"{action.option_strings[-1]}={value}"] + (["q"] if command == "ask" else [])
        with pytest.raises(SystemExit) as exit_info:
            parser().parse_args(argv)
        assert exit_info.value.code == 2, argv
        assert "> 0" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["serve", "ask", "doctor"])
def test_a_missing_config_file_is_an_error(command: str, tmp_path: Path) -> None:
    from supervisor.app.cli import _config
    from supervisor.errors import ConfigError

    _, common = cli_sections()
    assert "must exist" in next(ln for ln in common.splitlines() if "`--config" in ln)
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError) as info:  # main() prints it as one line and exits 2
        _config(parser().parse_args([command, "--config", str(missing)] + (["q"] if command == "ask" else [])))
    assert str(missing) in str(info.value)


@pytest.mark.parametrize("where", ["option", "environment", "file"])
def test_a_bad_value_names_where_it_came_from(where: str, tmp_path: Path) -> None:
    """install.md: a bad value "prints one line that names the key and where it came from" — a privileged port set
    through the environment is the environment's, not an option's."""
    from supervisor import config
    from supervisor.errors import ConfigError

    assert "names the\nkey and where it came from" in read("install.md") or \
        "names the key and where it came from" in read("install.md").replace("\n", " ")
    file = tmp_path / "config.toml"
    file.write_text("discovery_port = 80\n" if where == "file" else "")
    cli = {"discovery_port": 80} if where == "option" else {}
    env = {"AI_BRIDGE_DISCOVERY_PORT": "80"} if where == "environment" else {}
    with pytest.raises(ConfigError) as info:
        config.load(cli, env=env, config_file=file)
    expected = {"option": "option --discovery-port: ", "environment": "environment AI_BRIDGE_DISCOVERY_PORT: ",
                "file": f"config file {file}: key 'discovery_port': "}[where]
    assert str(info.value).startswith(expected), str(info.value)
    assert "8766-8775" in str(info.value)
