"""Which tools `serve` lists (issue 39): a lean list by default, the browser tools when a domain is allowed to them
or when ``--tools`` asks for them, and a clear error for a tool of ours that is not listed.

Units for the configuration (flag, environment, config file) and the families; one real server, with the SDK's
client, for what a client sees."""

from __future__ import annotations

import base64
from pathlib import Path

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from actors.mcp_front.tools import FAMILIES, TOOLS, instructions, listed
from supervisor import config as cfg
from supervisor.app.cli import _config, parser
from supervisor.errors import ConfigError

from .mcp_clients import open_client, server_env

DEFAULT = {"bridge_status", "ask_chatgpt_gemini_web", "ask_web", "ask_chatgpt_web", "ask_gemini_web", "get_answer",
           "list_jobs", "cancel_job", "list_models", "take_cdp_snapshot", "get_page_dom"}
ONE_SITE = {"ask_claude_web", "ask_grok_web", "ask_perplexity_web"}


def load(tmp: Path, cli: dict[str, object] | None = None, env: dict[str, str] | None = None,
         toml: str | None = None) -> cfg.Config:
    path = tmp / "config.toml"
    if toml is not None:
        path.write_text(toml)
    return cfg.load(cli or {}, env=env or {}, config_file=path)


def test_the_default_lists_the_asks_and_a_domain_adds_the_browser_tools(tmp_path: Path) -> None:
    assert load(tmp_path).tool_sets == {"asks"}
    assert set(listed(load(tmp_path).tool_sets)) == DEFAULT
    with_domain = load(tmp_path, {"allowed_domains": ["example.com"]})
    assert with_domain.tool_sets == {"asks", "browser"}
    assert set(listed(with_domain.tool_sets)) == set(TOOLS) - ONE_SITE
    # An explicit choice wins over the domain rule.
    assert load(tmp_path, {"allowed_domains": ["example.com"], "tools": ["asks"]}).tool_sets == {"asks"}
    # The one-site asks of the sites ask_web reaches come on request (issue 40).
    assert set(listed(load(tmp_path, {"tools": ["asks,sites"]}).tool_sets)) == DEFAULT | ONE_SITE
    assert set(FAMILIES["sites"]) == ONE_SITE


def test_each_family_lists_its_tools_and_bridge_status_always(tmp_path: Path) -> None:
    browser_only = listed(frozenset({"browser"}))
    assert set(browser_only) == {"bridge_status", *FAMILIES["browser"]}
    assert len(FAMILIES["browser"]) == 32 and not DEFAULT & set(FAMILIES["browser"])
    assert set(listed(load(tmp_path, {"tools": ["all"]}).tool_sets)) == set(TOOLS)
    # Every tool belongs to exactly one family: none is unreachable, none listed twice.
    names = [n for family in FAMILIES.values() for n in family]
    assert sorted(names) == sorted(TOOLS)
    # The instructions name the browser tools only when they are listed.
    assert "navigate" not in instructions(frozenset({"asks"}))
    assert "navigate" in instructions(frozenset({"asks", "browser"}))


def test_tools_from_the_flag_the_environment_and_the_config_file(tmp_path: Path) -> None:
    args = parser().parse_args(["serve", "--tools", "asks,browser", "--config", str(tmp_path / "c.toml")])
    (tmp_path / "c.toml").write_text("")
    assert _config(args).tool_sets == {"asks", "browser"}
    assert parser().parse_args(["serve", "--tools", "asks", "--tools", "browser"]).listed_tools == ["asks", "browser"]
    # `ask --tool` is a site tool, not a tool family: it must not reach the serve setting.
    ask = parser().parse_args(["ask", "--tool", "deep research", "--config", str(tmp_path / "c.toml"), "q"])
    assert _config(ask).tools is None
    assert load(tmp_path, env={"AI_BRIDGE_TOOLS": "browser"}).tool_sets == {"browser"}
    assert load(tmp_path, toml='tools = ["asks", "browser"]\n').tool_sets == {"asks", "browser"}
    assert load(tmp_path, toml='tools = "all"\n', env={"AI_BRIDGE_TOOLS": "asks"}).tool_sets == {"asks"}


@pytest.mark.parametrize(("source", "value", "where"), [
    ("cli", ["asks,browsers"], "option --tools"),
    ("env", "nothing", "environment AI_BRIDGE_TOOLS"),
    ("toml", "tools = 3\n", "key 'tools'"),
    ("toml", "tools = []\n", "key 'tools'"),
])
def test_a_bad_tool_family_is_one_line_naming_the_key(tmp_path: Path, source: str, value: object,
                                                       where: str) -> None:
    with pytest.raises(ConfigError, match=where) as info:
        if source == "cli":
            load(tmp_path, {"tools": value})
        elif source == "env":
            load(tmp_path, env={"AI_BRIDGE_TOOLS": str(value)})
        else:
            load(tmp_path, toml=str(value))
    assert "\n" not in str(info.value)


@pytest.mark.process
async def test_a_default_server_lists_the_asks_and_explains_an_unlisted_tool(tmp_path: Path) -> None:
    env = server_env(tmp_path)
    del env["AI_BRIDGE_TOOLS"]  # the helper lists everything for the other tests: this one is about the default
    with open(tmp_path / "serve.log", "w") as errlog:
        async with open_client(["serve", "--browser", "connect"], env, mode="legacy", errlog=errlog) as client:
            tools = (await client.list_tools()).tools
            assert {t.name for t in tools} == DEFAULT
            # Icons (SEP-973): the server's, in the early initialize reply the client kept, and one per tool.
            (png, svg) = client.session.server_info.icons
            assert png.mime_type == "image/png" and png.sizes == ["48x48"]
            assert base64.b64decode(png.src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
            assert svg.src.startswith("data:image/svg+xml;base64,")
            for tool in tools:
                (icon,) = tool.icons
                assert icon.src.startswith("data:image/svg+xml,<svg ") and icon.src.endswith("</svg>"), tool.name
                assert "#" not in icon.src and '"' not in icon.src, tool.name  # escaped as RFC 2397 asks
            with pytest.raises(MCPError) as info:
                await client.call_tool("navigate", {"url": "https://example.com/"})
            err = info.value.error
            assert err.code == types.INVALID_PARAMS
            assert "navigate is not listed" in err.message and "--tools browser" in err.message
            assert err.data["family"] == "browser" and set(err.data["availableTools"]) == DEFAULT
            # A task-augmented call of an unlisted tool is refused the same way (the tasks middleware runs first).
            with pytest.raises(MCPError) as task_info:
                await client.session.send_request(
                    types.CallToolRequest(params=types.CallToolRequestParams(
                        name="tabs_list", arguments={}, task=types.TaskMetadata(ttl=60000))),
                    types.CallToolResult)
            assert task_info.value.error.code == types.INVALID_PARAMS
            assert "tabs_list is not listed" in task_info.value.error.message
            # A name that is no tool of ours stays the plain unknown tool.
            with pytest.raises(MCPError, match="Unknown tool: no_such_tool"):
                await client.call_tool("no_such_tool", {})
            assert not (await client.call_tool("bridge_status", {})).is_error
