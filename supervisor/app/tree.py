"""The actor tree of ai-bridge: which actors run, in which branches, with which restart policies.

    root (one_for_one; ends when the MCP front ends: auto_shutdown any_significant)
    ├─ store (contain)                 session_store
    ├─ link (rest_for_one, contain)    relay → discovery → browser
    ├─ providers (one_for_one, contain) one per table of actors/provider/sites/ (chatgpt … perplexity)
    ├─ tools (contain)                 browser_tools
    ├─ services (one_for_one, contain) jobs, console
    └─ mcp_front (temporary, significant)

Infrastructure starts first and the MCP front last, so no tool is served before the actors behind it are up;
shutdown runs in reverse (jobs stop before the providers, so a shutdown cancels running jobs first and their asks
click Stop in the page). Every branch *contains* its failures: a crash loop inside one branch stops that branch for
a while (callers get `actor_down` naming the last error) and then starts it afresh; it never takes the MCP front,
and so the process, down.
"""

from __future__ import annotations

from actors import browser, browser_tools, console, discovery, jobs, mcp_front, provider, relay, session_store
from actors.protocol.browser import BROWSER
from actors.protocol.browser_tools import BROWSER_TOOLS
from actors.protocol.console import CONSOLE, MCP_FRONT
from actors.protocol.discovery import DISCOVERY
from actors.protocol.jobs import JOBS
from actors.protocol.relay import RELAY
from actors.protocol.session_store import SESSION_STORE

from ..config import Config
from ..otp import ActorSystem, AutoShutdown, OnIntensity, Restart, Strategy, SupervisorSpec, child
from ..paths import extension_path
from .providers import chat_bases, provider_tables


def build_tree(config: Config, system: ActorSystem, *, with_front: bool = True, stdin_fd: int = 0) -> SupervisorSpec:
    tables = provider_tables(config)  # the shipped tables with the user's providers.toml prepended
    bases = chat_bases(config, tables)
    children = [
        SupervisorSpec("store", (
            child(SESSION_STORE.name, session_store.run, state_dir=config.state_dir,
                  private_text=config.private_text, shutdown=1.0),
        ), on_intensity=OnIntensity.CONTAIN, max_restarts=5, period=30).as_child(shutdown=2.0),
        # The browser link: discovery hands out the relay's URL and token and the browser actor waits on the relay,
        # so when the relay restarts (new port, new token) the two after it restart too (rest_for_one).
        SupervisorSpec("link", (
            child(RELAY.name, relay.run, state_dir=config.state_dir, allow_faults=config.allow_faults,
                  port=config.relay_port or 0, shutdown=1.0),
            child(DISCOVERY.name, discovery.run, port=config.discovery_port, project=config.project,
                  memory=discovery.PortMemory(), shutdown=1.5),
            child(BROWSER.name, browser.run, config=config, extension_dir=extension_path(), shutdown=2.5),
        ), strategy=Strategy.REST_FOR_ONE, max_restarts=5, period=30,
            on_intensity=OnIntensity.CONTAIN).as_child(shutdown=3.0),
        # Each provider runs its asks side by side in a pool of tabs and retries a stuck one itself (issue 38); a
        # crash (a bug) restarts it with its requests re-delivered, the question never sent twice.
        SupervisorSpec("providers", tuple(
            child(t.name, provider.run, table=t, memory=provider.ProviderMemory(), state_dir=config.state_dir,
                  stall_s=config.stall_s, use_open_tabs=config.use_open_tabs, dumps_keep=config.debug_dumps_keep,
                  private_text=config.private_text, tabs_per_site=config.tabs_per_site,
                  tab_idle_s=config.tab_idle_s, chat_base_url=bases.get(t.name, ""), shutdown=1.5)
            for t in tables
        ), strategy=Strategy.ONE_FOR_ONE, max_restarts=10, period=60,
            on_intensity=OnIntensity.CONTAIN).as_child(shutdown=2.0),
        # The general browser tools, in a branch of their own: a crash loop there stops them for a while and never
        # an ask. Their book (current tab, tabs they opened, buffers) outlives a restart of the actor.
        SupervisorSpec("tools", (
            child(BROWSER_TOOLS.name, browser_tools.run, policy=browser_tools.Policy.from_config(config),
                  book=browser_tools.ToolsBook(), shutdown=1.5),
        ), on_intensity=OnIntensity.CONTAIN, max_restarts=5, period=30).as_child(shutdown=2.0),
        # Background asks (the job table outlives restarts of the actor, as mailboxes do) and the live console.
        SupervisorSpec("services", (
            # Job records (issue 21) only for the MCP server: `ask`, `doctor` and `check` never reattach its jobs.
            child(JOBS.name, jobs.run, book=jobs.JobBook(config.state_dir if with_front else None,
                                                         keep_days=config.jobs_keep_days), shutdown=2.0),
            child(CONSOLE.name, console.run, system=system, config=config, shutdown=0.5),
        ), on_intensity=OnIntensity.CONTAIN, max_restarts=5, period=30).as_child(shutdown=3.0),
    ]
    if with_front:
        # Last to start, first to stop. Its MCP session cannot survive a restart, so when it ends the whole tree
        # ends (significant child), whatever the reason.
        children.append(child(MCP_FRONT.name, mcp_front.run, restart=Restart.TEMPORARY, significant=True,
                              shutdown=1.0, config=config, system=system, stdin_fd=stdin_fd))
    return SupervisorSpec("root", tuple(children), strategy=Strategy.ONE_FOR_ONE, max_restarts=5, period=30,
                          auto_shutdown=AutoShutdown.ANY_SIGNIFICANT)
