"""How ai-bridge is found and installed (issue 39): the MCP Registry entry (server.json), the Claude Code plugin and
its marketplace, and the second-opinion skill.

server.json is checked against the registry's published rules for a server entry (schema
``https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json``, learned from
modelcontextprotocol/registry): the rules are written out here as a JSON Schema of our own, since the schema file
itself is not vendored. The plugin, marketplace and skill are checked against their documented formats (Claude Code's
plugin reference; the Agent Skills specification); `.ci/package` also runs the official validator, `claude plugin
validate --strict` (npm ``@anthropic-ai/claude-code``), which needs the npm registry. Every version follows
supervisor/__init__.py, and every command the skill shows parses with the real CLI."""

from __future__ import annotations

import json
import re
import shlex
import struct
import tomllib
from typing import Any

import pytest
from jsonschema import Draft7Validator

import supervisor
from supervisor import errors
from supervisor.app.cli import parser

from .conftest import REPO

VERSION = supervisor.__version__
SERVER = json.loads((REPO / "server.json").read_text())
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PLUGIN_ROOT = REPO / "plugin"
SKILL = PLUGIN_ROOT / "skills" / "second-opinion" / "SKILL.md"

_VERSION_RANGE = r"^(\^|~|>=?|<=?)|\.(x|\*)$|\.(x|\*)\.|^latest$"  # ranges the registry refuses
_ARGUMENT = {"type": "object", "required": ["type"], "properties": {"type": {"enum": ["positional", "named"]},
                                                                    "value": {"type": "string"},
                                                                    "valueHint": {"type": "string"},
                                                                    "name": {"type": "string"}},
             "if": {"properties": {"type": {"const": "positional"}}},
             "then": {"anyOf": [{"required": ["value"]}, {"required": ["valueHint"]}]},
             "else": {"required": ["name"]}}
# The registry's documented rules for a server entry published as a PyPI package on stdio.
REGISTRY_RULES: dict[str, Any] = {
    "type": "object",
    "required": ["name", "description", "version"],
    "properties": {
        "$schema": {"type": "string", "format": "uri"},
        "name": {"type": "string", "minLength": 3, "maxLength": 200, "pattern": r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$"},
        "title": {"type": "string", "minLength": 1, "maxLength": 100},
        "description": {"type": "string", "minLength": 1, "maxLength": 100},
        "version": {"type": "string", "maxLength": 255, "not": {"pattern": _VERSION_RANGE}},
        "websiteUrl": {"type": "string", "format": "uri"},
        "repository": {"type": "object", "required": ["url", "source"],
                       "properties": {"url": {"type": "string", "format": "uri"}, "source": {"type": "string"},
                                      "id": {"type": "string"}, "subfolder": {"type": "string"}}},
        "packages": {"type": "array", "items": {
            "type": "object",
            "required": ["registryType", "identifier", "version", "transport"],
            "properties": {
                "registryType": {"enum": ["npm", "pypi", "nuget", "oci", "mcpb"]},
                "registryBaseUrl": {"type": "string", "format": "uri"},
                "identifier": {"type": "string", "minLength": 1},
                "version": {"type": "string", "minLength": 1, "not": {"pattern": _VERSION_RANGE}},
                "runtimeHint": {"type": "string"},
                "transport": {"type": "object", "required": ["type"],
                              "properties": {"type": {"enum": ["stdio", "streamable-http", "sse"]}}},
                "packageArguments": {"type": "array", "items": _ARGUMENT},
                "runtimeArguments": {"type": "array", "items": _ARGUMENT},
                "environmentVariables": {"type": "array", "items": {
                    "type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}, "description": {"type": "string"},
                                   "isRequired": {"type": "boolean"}, "isSecret": {"type": "boolean"},
                                   "default": {"type": "string"},
                                   "choices": {"type": "array", "items": {"type": "string"}}}}},
            }}},
    },
}


def test_server_json_follows_the_registry_rules_and_the_package() -> None:
    Draft7Validator.check_schema(REGISTRY_RULES)
    problems = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                for e in Draft7Validator(REGISTRY_RULES, format_checker=Draft7Validator.FORMAT_CHECKER)
                .iter_errors(SERVER)]
    assert not problems
    assert SERVER["$schema"].endswith("/2025-12-11/server.schema.json")
    assert SERVER["version"] == VERSION, "bump server.json with supervisor/__init__.py"
    (package,) = SERVER["packages"]
    assert package["version"] == VERSION, "bump server.json's package version with supervisor/__init__.py"
    assert package["registryType"] == "pypi" and package["identifier"] == PYPROJECT["project"]["name"]
    assert package["transport"] == {"type": "stdio"}
    # The name's namespace is the GitHub owner the registry authenticates: the repository's, and the project's URL.
    owner = re.fullmatch(r"https://github\.com/([^/]+)/[^/]+", SERVER["repository"]["url"])
    assert owner and SERVER["name"] == f"io.github.{owner[1]}/ai-bridge"
    assert PYPROJECT["project"]["urls"]["Homepage"] == SERVER["repository"]["url"]


def test_the_package_readme_proves_the_server_name() -> None:
    # The registry looks for "mcp-name: <name>" in the PyPI description, which is README.md (pyproject `readme`);
    # alone on its line, so that no longer name contains it. test_packaging checks the built wheel's METADATA.
    assert PYPROJECT["project"]["readme"] == "README.md"
    lines = (REPO / "README.md").read_text().splitlines()
    assert f"mcp-name: {SERVER['name']}" in lines


def test_the_registry_command_line_is_the_server() -> None:
    (package,) = SERVER["packages"]
    argv = [a["value"] for a in package["packageArguments"]]
    assert parser().parse_args(argv).command == "serve"
    for env in package["environmentVariables"]:
        assert env["name"].startswith("AI_BRIDGE_") and not env.get("isRequired")
    choices = {e["name"]: e for e in package["environmentVariables"]}
    assert choices["AI_BRIDGE_BROWSER"]["choices"] == ["auto", "connect", "launch"]


def test_marketplace_and_plugin_manifests() -> None:
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    kebab = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
    assert kebab.fullmatch(market["name"]) and market["owner"]["name"]
    (entry,) = market["plugins"]
    assert entry["source"] == "./plugin" and entry["version"] == VERSION
    assert market["metadata"]["version"] == VERSION
    plugin = json.loads((PLUGIN_ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert plugin["name"] == entry["name"] == "ai-bridge" and kebab.fullmatch(plugin["name"])
    assert plugin["version"] == VERSION, "bump plugin/.claude-plugin/plugin.json with supervisor/__init__.py"
    assert plugin["repository"] == SERVER["repository"]["url"]
    # Only the manifest in .claude-plugin/; the components at the plugin's root (Claude Code's plugin layout).
    assert sorted(p.name for p in (PLUGIN_ROOT / ".claude-plugin").iterdir()) == ["icon.png", "plugin.json"]
    icon = (PLUGIN_ROOT / plugin["icon"]).read_bytes()
    assert icon[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", icon[16:24])
    assert width == height and 512 <= width <= 2048 and len(icon) < 2 << 20  # the plugin directory's icon rules


def test_the_plugin_starts_this_version_of_the_server() -> None:
    servers = json.loads((PLUGIN_ROOT / ".mcp.json").read_text())["mcpServers"]
    (name,) = servers
    spec = servers[name]
    assert spec["command"] == "uvx"
    package, *argv = spec["args"]
    assert package == f"ai-bridge@{VERSION}"  # the plugin and the server it starts are released together
    assert parser().parse_args(argv).command == "serve"


def _frontmatter(text: str) -> tuple[dict[str, str], dict[str, str], str]:
    """The skill's YAML front matter, in the flat form the specification uses (top-level keys, and a `metadata`
    map of strings); the body."""
    head, sep, body = text.removeprefix("---\n").partition("\n---\n")
    assert text.startswith("---\n") and sep, "SKILL.md starts with front matter between --- lines"
    top: dict[str, str] = {}
    meta: dict[str, str] = {}
    for line in head.splitlines():
        if line.startswith("  "):
            key, _, value = line.strip().partition(": ")
            meta[key] = value.strip('"')
        else:
            key, _, value = line.partition(":")
            top[key] = value.strip()
    return top, meta, body


def test_the_skill_follows_the_agent_skills_format() -> None:
    top, meta, body = _frontmatter(SKILL.read_text())
    assert set(top) <= {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
    assert top["name"] == SKILL.parent.name and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", top["name"])
    assert len(top["name"]) <= 64
    assert 0 < len(top["description"]) <= 1024 and "Use it when" in top["description"]
    assert len(top["compatibility"]) <= 500
    assert meta["version"] == VERSION
    assert len(body.splitlines()) < 500  # the specification's advice: details beyond that go in other files


def _skill_commands() -> list[list[str]]:
    """Every `ai-bridge ...` command in the skill's code blocks, as argv (continuations joined, redirections and
    a trailing & dropped)."""
    text = SKILL.read_text()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if not line.startswith("ai-bridge "):
                continue
            words = shlex.split(line.rstrip("&"))
            cut = next((i for i, w in enumerate(words) if w[:1] in "<>" or w[:2] == "2>"), len(words))
            commands.append(words[1:cut])
    return commands


def test_every_command_the_skill_shows_is_accepted_by_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    commands = _skill_commands()
    seen = {argv[0] for argv in commands}
    assert {"ask", "jobs"} <= seen
    flags = {w.split("=")[0] for argv in commands for w in argv if w.startswith("--")}
    assert {"--file", "--model", "--effort", "--tool", "--provider", "--timeout"} <= flags
    for argv in commands:
        parser().parse_args(argv)  # argparse exits 2 on anything it does not know
    # The error codes the skill explains are real ones.
    named = set(re.findall(r"^- `([a-z_]+)`", SKILL.read_text(), re.M))
    named |= set(re.findall(r"`([a-z]+_[a-z_]+)`", SKILL.read_text()))
    codes = set()
    todo: list[type[errors.BridgeError]] = [errors.BridgeError]
    while todo:
        cls = todo.pop()
        codes.add(cls.code)
        todo.extend(cls.__subclasses__())
    explained = {n for n in named if n in codes}
    assert {"extension_not_connected", "login_required", "rate_limited", "unknown_model"} <= explained
