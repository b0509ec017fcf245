"""A page that shows a site error is not driven again (issue 25.2): the ask it failed ends with `site_error` (the
question may be there: never resent), and the next ask takes a fresh tab instead of the error page — it used to
pick the same tab again and again. Real `ai-bridge serve`, real headless Chromium, the fake sites."""

from __future__ import annotations

import re

import pytest

from .e2e import requires_chromium
from .fakesites.fixture import FakeSites, SiteControl
from .shared_bridge import OpenShared
from .test_e2e_asks import failed
from .test_e2e_link import FAST, ask

pytestmark = [requires_chromium, pytest.mark.chromium]


@pytest.mark.bridge_env(AI_BRIDGE_STALL_S="2")
async def test_after_a_site_error_the_next_ask_takes_a_fresh_tab(sites: FakeSites, shared_bridge: OpenShared) -> None:
    site: SiteControl = sites.chatgpt
    site.set_next(siteError=True, errorAfterChunks=2, **FAST)
    async with shared_bridge() as b:
        res = await b.call("ask_chatgpt_web", {"question": "Explain 2 kinds of caches."})
        site.set_next(**FAST)
        sc = await ask(b, "chatgpt", "What is 3 plus 4?")
        log = b.log_text()
    failed(res, "site_error")
    assert sc["answer"]
    tabs = re.findall(r"attached to ChatGPT tab (\d+)", log)
    assert len(tabs) == 2 and tabs[0] != tabs[1], tabs
