"""The browser tools against hostile downloads and emulation, end to end (issue 36): a real MCP client, the server,
our extension in headless Chromium and the tool site. A download that redirects is followed one checked hop at a
time (one to a denied host is never requested); a name of 300 UTF-8 bytes is cut to the file system's limit instead
of crashing the tools actor (three such calls took the whole tools branch down); a right-to-left override in a name
is replaced; a viewport a screenshot cannot take is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from .e2e import requires_chromium
from .test_e2e_browser_tools import ALLOWED, MUTATE, bridge, fails, ok
from .toolsite.fixture import ToolSite

pytestmark = [requires_chromium, pytest.mark.chromium]


async def test_hostile_downloads_and_viewports(toolsite: ToolSite, tmp_path: Path) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    async with bridge(toolsite, tmp_path, *MUTATE, *ALLOWED, "--download-dir", str(folder)) as b:
        await ok(b, "tab_new", {"url": "https://allowed.test/download"})
        # A redirect within the policy is followed (each hop checked), one to a denied host never requested.
        hop = await ok(b, "download", {"url": "https://allowed.test/redirect-file"})
        assert hop["name"] == "report.csv" and Path(hop["path"]).read_text() == "name,value\nalpha,1\nbeta,2\n"
        why = await fails(b, "download", {"url": "https://allowed.test/redirect-denied"}, "policy_denied")
        assert "denied.test" in why and "redirect" in why
        assert toolsite.requested("allowed.test", "/redirect-denied") and not toolsite.requested("denied.test")
        # 150 é: 300 bytes, over the 255 a name may have. Three times: the actor stays up, and so do the other tools.
        names = [(await ok(b, "download", {"url": "https://allowed.test/files/long-name"}))["name"] for _ in range(3)]
        assert all(len(n.encode()) <= 255 and n.endswith(".txt") and n.startswith("é" * 100) for n in names), names
        assert len(set(names)) == 3 and all((folder / n).read_text() == "hostile name\n" for n in names)
        assert (await ok(b, "tabs_list"))["tabs"]
        rlo = await ok(b, "download", {"url": "https://allowed.test/files/rlo"})
        assert rlo["name"] == "invoice_fdp.exe" and (folder / "invoice_fdp.exe").exists()
        # A viewport a screenshot could not take (it aborted the browser) is refused; a large one that fits is not.
        assert "8192" in await fails(b, "emulate", {"width": 8192, "height": 8192, "device_scale_factor": 10},
                                     "invalid_argument")
        assert (await ok(b, "emulate", {"width": 2000, "height": 1500, "device_scale_factor": 4}))["viewport"]
        shot = await ok(b, "screenshot", {"mode": "full_page"})
        assert shot["width"] <= 8192 and shot["height"] <= 8192
