"""End-to-end support: the real ``ai-bridge serve`` (subprocess, SDK stdio client) launching real headless Chromium
with our real extension, against the fake ChatGPT/Gemini sites served over TLS at their real host names.

Nothing of ours is mocked. The only test-side instrument is `DevTools`: a plain CDP client on the launched
browser's own debugging port (``--remote-debugging-port=0``), used to do what a *user* would do — close a tab,
switch tabs, look at the page's main world — never to drive the provider flow.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from trio_websocket import open_websocket_url

from .cdp_pipe import devtools_url
from .conftest import REPO, missing_tool
from .fakesites.fixture import FakeSites

CHROMIUM = os.environ.get("AI_BRIDGE_CHROMIUM", "/usr/lib/chromium/chromium")

requires_chromium = pytest.mark.skipif(
    not (shutil.which(CHROMIUM) or os.access(CHROMIUM, os.X_OK)),
    reason=missing_tool("Chromium not installed (apt-get install -y chromium)"),
)


@attrs.define
class Bridge:
    session: ClientSession
    state_dir: Path
    profile_dir: Path
    stderr_path: Path
    progress: list[tuple[float, str]] = attrs.field(factory=list)

    async def call(self, tool: str, args: dict[str, Any], **kw: Any) -> Any:
        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            self.progress.append((p, message or ""))

        return await self.session.call_tool(tool, args, progress_callback=on_progress, **kw)

    async def status(self) -> dict[str, Any]:
        res = await self.session.call_tool("bridge_status", {})
        assert not res.is_error, res.content[0].text
        return res.structured_content  # type: ignore[no-any-return]

    def history(self) -> list[dict[str, Any]]:
        path = self.state_dir / "history.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def sessions(self) -> dict[str, Any]:
        return json.loads((self.state_dir / "sessions.json").read_text())  # type: ignore[no-any-return]

    def log_text(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    @asynccontextmanager
    async def devtools(self) -> AsyncIterator[DevTools]:
        async with open_devtools(self.profile_dir) as dt:
            yield dt


@asynccontextmanager
async def open_devtools(profile_dir: Path) -> AsyncIterator[DevTools]:
    """A CDP connection to the browser a server launched on `profile_dir`."""
    # A first start on a fresh machine reads Chromium from a cold disk while other workers start theirs: 10 s
    # was once too short in CI. The server's own launch deadline is what a slow start must meet.
    url = await devtools_url(profile_dir, timeout=60)
    async with open_websocket_url(url, max_message_size=64 << 20) as ws:
        yield DevTools(ws)


class DevTools:
    """Minimal sequential CDP client over the browser endpoint (test instrument only)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.next_id = 0

    async def send(self, method: str, params: dict[str, Any] | None = None, session_id: str | None = None) -> Any:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session_id:
            msg["sessionId"] = session_id
        await self.ws.send_message(json.dumps(msg))
        with trio.fail_after(15):
            while True:
                reply = json.loads(await self.ws.get_message())
                if reply.get("id") == self.next_id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})

    async def pages(self, url_prefix: str) -> list[dict[str, Any]]:
        targets = (await self.send("Target.getTargets"))["targetInfos"]
        return [t for t in targets if t["type"] == "page" and t["url"].startswith(url_prefix)]

    async def evaluate(self, target_id: str, expression: str) -> Any:
        session = (await self.send("Target.attachToTarget", {"targetId": target_id, "flatten": True}))["sessionId"]
        try:
            got = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
            return got.get("result", {}).get("value")
        finally:
            await self.send("Target.detachFromTarget", {"sessionId": session})


def server_args(sites: FakeSites, *, profile_dir: Path, project: str, extra: tuple[str, ...] = (),
                headless: bool = True) -> list[str]:
    args = ["-m", "supervisor.app.cli", "serve", "--browser", "launch", *(["--headless"] if headless else []),
            "--profile-dir", str(profile_dir), "--project", project, f"--browser-path={CHROMIUM}",
            "--browser-arg=--remote-debugging-port=0"]
    args += [f"--browser-arg={a}" for a in sites.chromium_args()]
    return args + list(extra)


@asynccontextmanager
async def open_bridge(sites: FakeSites, tmp: Path, *, project: str = "e2e-project", env: dict[str, str] | None = None,
                      extra: tuple[str, ...] = (), state_dir: Path | None = None,
                      profile_dir: Path | None = None, headless: bool = True) -> AsyncIterator[Bridge]:
    state_dir = state_dir or tmp / "state"
    profile_dir = profile_dir or tmp / "profile"
    stderr_path = tmp / f"serve-{len(list(tmp.glob('serve-*.log')))}.log"
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    # AI_BRIDGE_TOOLS: every tool listed, as most tests call them; test_tool_sets.py tests the default.
    full_env.update({"AI_BRIDGE_STATE_DIR": str(state_dir), "XDG_CONFIG_HOME": str(tmp / "config"),
                     "AI_BRIDGE_TOOLS": "all", "PYTHONUNBUFFERED": "1", **(env or {})})
    params = StdioServerParameters(command=sys.executable,
                                   args=server_args(sites, profile_dir=profile_dir, project=project, extra=extra,
                                                    headless=headless),
                                   env=full_env, cwd=str(REPO))
    with open(stderr_path, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield Bridge(session, state_dir, profile_dir, stderr_path)
