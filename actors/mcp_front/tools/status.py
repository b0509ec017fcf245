"""bridge_status: the server's health in one call."""

from __future__ import annotations

import os
from typing import Any

from pydantic import Field

from supervisor.errors import BridgeError

from ...protocol.browser import BROWSER, BrowserStatus
from ...protocol.browser_tools import BROWSER_TOOLS, ToolsStatus
from ...protocol.common import ProviderName
from ...protocol.jobs import JOBS, ListJobs
from ...protocol.provider import ProviderStatus, provider_address
from ...protocol.relay import RELAY, LinkStatus
from ...protocol.session_store import SESSION_STORE, ReadHistory
from ..deps import FrontDeps, ToolCall, dumps, versions
from ..toolkit import Annotations, Args, Output, Result, Tool


class StatusArgs(Args):
    pass


class StatusOut(Output):
    versions: dict[str, str]
    stateDir: str
    logFile: str
    pid: int
    project: str = Field(description="The project name this client's calls use by default.")
    actors: dict[str, Any] = Field(description="The live actor tree: state, restarts, last error, inbox depth.")
    recentAsks: list[dict[str, Any]] | dict[str, Any]
    extension: dict[str, Any]
    browser: dict[str, Any]
    jobs: dict[str, Any]
    browserTools: dict[str, Any] = Field(description="The general browser tools: mode, allowed domains, tabs.")
    siteChanges: dict[str, Any] = Field(description="Per site, the last ask that worked only through a fallback "
                                        "(site_changed): what of the provider table no longer matches.")
    pools: dict[str, Any] = Field(default_factory=dict, description="Per site, its pool of tabs: the tabs, their "
                                  "leases, the running asks and how many wait in line.")


async def _part(deps: FrontDeps, key: str) -> object:
    """One section of the status; a failing actor shows its error instead of failing the whole call."""
    try:
        if key == "extension":
            return (await deps.ctx.ref(RELAY).call(LinkStatus(), timeout=5)).as_json()
        if key == "browser":
            return (await deps.ctx.ref(BROWSER).call(BrowserStatus(), timeout=5)).as_json()
        if key == "browserTools":
            return (await deps.ctx.ref(BROWSER_TOOLS).call(ToolsStatus(), timeout=5)).as_json()
        if key == "siteChanges":  # issue 37: the last ask per site that worked only through a fallback
            out: dict[str, str] = {}
            for p in ProviderName:
                report = await deps.ctx.ref(provider_address(p)).call(ProviderStatus(tabs=False), timeout=5)
                if report.site_changed:
                    out[p.value] = report.site_changed
            return out
        if key == "pools":  # issue 38: each site's tabs, leases and queue, without a browser round trip
            pools: dict[str, object] = {}
            for p in ProviderName:
                report = await deps.ctx.ref(provider_address(p)).call(ProviderStatus(tabs=False), timeout=5)
                pools[p.value] = report.pool_json()
            return pools
        if key == "jobs":
            views = await deps.ctx.ref(JOBS).call(ListJobs(limit=0), timeout=5)
            return {"running": [v.row() for v in views]}
        records = await deps.ctx.ref(SESSION_STORE).call(ReadHistory(limit=5), timeout=60)
        return [{"ts": r.ts, "provider": r.provider, "status": r.status, "url": r.url, "error": r.error}
                for r in records]
    except BridgeError as exc:
        return {"error": f"[{exc.code}] {exc}"}


async def bridge_status(deps: FrontDeps, call: ToolCall, args: StatusArgs) -> Result:
    recent = await _part(deps, "recentAsks")
    parts = {key: await _part(deps, key) for key in ("extension", "browser", "jobs", "browserTools", "siteChanges",
                                                     "pools")}
    tree = deps.system.tree()
    status: dict[str, object] = {
        "versions": versions(),
        "stateDir": str(deps.config.state_dir),
        "logFile": str(deps.config.log_file),
        "pid": os.getpid(),
        "project": await call.project(),
        "actors": tree.as_json() if tree is not None else {},  # taken last: the calls above may have changed it
        "recentAsks": recent,
        **parts,
    }
    return Result(text=dumps(status), structured=status)


TOOLS = (
    Tool("bridge_status",
         "Show ai-bridge's health: versions, state dir, the live actor tree (state, restarts, last error, queued "
         "requests), the browser/extension link, running background jobs, each site's pool of tabs (leases, queued "
         "asks), and the general browser tools (safe mode, allowed domains, their tabs, open dialogs). Use it when "
         "an ask or a browser tool fails to see what is wrong.",
         StatusArgs, bridge_status, Annotations(read_only=True, idempotent=True), output=StatusOut,
         title="ai-bridge status"),
)
