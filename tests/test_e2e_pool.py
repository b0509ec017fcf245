"""Issue 38 end to end, one server and one browser for every check (a real MCP client → `ai-bridge serve` → our
extension in real headless Chromium → the fake sites): asks side by side in a pool of tabs, each answer its own
question's and each question sent once; conversations the user chooses — a conversation URL of the wrong site
refused before anything is sent, a named conversation continued, temporary chats (ChatGPT's URL, Gemini's button)
that the project does not keep, new chats inside a ChatGPT Project and a Gemini Gem. The pool's rules one by one
(turns, cancelled waiters, crashed tabs, idle tabs) are in test_provider_pool.py, on a mock clock."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import trio

from .e2e import open_bridge, requires_chromium
from .fakesites.fixture import FakeSites
from .fakesites.scripting import answer_ref

pytestmark = [requires_chromium, pytest.mark.chromium]

# Each answer streams for ~1 s: long enough that asks sent together overlap on the site.
SLOW = {"chunks": 6, "intervalMs": 120, "firstTokenMs": 300}
FAST = {"chunks": 3, "intervalMs": 30, "firstTokenMs": 50}
PROJECT = "https://chatgpt.com/g/g-p-6870abc-review/project"
GEM = "https://gemini.google.com/gem/coding-partner"


def answer(res: Any, question: str) -> dict[str, Any]:
    assert not res.is_error, res.content[0].text
    sc: dict[str, Any] = res.structured_content
    assert answer_ref(question) in sc["answer"], (question, sc["answer"][:200])
    return sc


def error(res: Any, code: str) -> str:
    assert res.is_error and res.structured_content["error"]["code"] == code, res.content[0].text
    return str(res.content[0].text)


async def test_asks_side_by_side_and_the_conversations_the_user_chooses(sites: FakeSites, tmp_path: Path) -> None:
    sites.chatgpt.set_next(**SLOW)
    sites.gemini.set_next(**SLOW)
    async with open_bridge(sites, tmp_path, env={"AI_BRIDGE_TABS_PER_SITE": "3"}) as b:
        # -- 1. three ChatGPT asks and one Gemini ask at once, from one MCP session --------------------------------
        asks = {("chatgpt", "alpha"): "What is 11 times 3 for alpha?",
                ("chatgpt", "beta"): "What is 12 times 3 for beta?",
                ("chatgpt", "gamma"): "What is 13 times 3 for gamma?", ("gemini", "alpha"): "What is 14 times 3?"}
        results: dict[tuple[str, str], Any] = {}

        async def go(site: str, project: str, q: str) -> None:
            results[site, project] = await b.call(f"ask_{site}_web", {"question": q, "project": project})

        async with trio.open_nursery() as n:
            for (site, project), q in asks.items():
                n.start_soon(go, site, project, q)
        status = await b.status()
        first = {k: answer(results[k], q) for k, q in asks.items()}
        log = sites.chatgpt.log()
        assert sorted(e["question"] for e in log) == sorted(q for (s, _), q in asks.items() if s == "chatgpt")
        # Side by side: every question reached the site before the first answer had finished streaming.
        assert max(e["receivedAtMs"] for e in log) < min(e["streamEndAtMs"] for e in log)
        assert len({e["conversationId"] for e in log}) == 3
        pool = status["pools"]["chatgpt"]
        assert pool["tabsPerSite"] == 3 and len(pool["tabs"]) == 3 and pool["queued"] == 0 and pool["leases"] == 0
        assert status["actors"] and "error" not in status["pools"]

        # -- 2. a conversation URL of the wrong site: refused before anything is opened or sent --------------------
        sites.chatgpt.set_next(**FAST)
        sites.gemini.set_next(**FAST)
        pages = len(sites.chatgpt.pages())
        wrong = await b.call("ask_chatgpt_web", {"question": "Refused 15?", "project": "alpha",
                                                 "conversation_url": first["gemini", "alpha"]["url"]})
        assert "is not a ChatGPT conversation URL" in error(wrong, "invalid_argument")
        assert len(sites.chatgpt.log()) == 3 and len(sites.chatgpt.pages()) == pages

        # -- 3. a named conversation continued, the project's own left as it was ---------------------------------
        beta_url = first["chatgpt", "beta"]["url"]
        q = "And 16 times 3, for beta?"
        named = answer(await b.call("ask_chatgpt_web", {"question": q, "project": "alpha",
                                                        "conversation_url": beta_url}), q)
        assert named["url"] == beta_url
        assert sites.chatgpt.log()[-1]["conversationId"] == beta_url.rsplit("/", 1)[1]
        kept = b.sessions()

        # -- 4. temporary chats: answered, never kept ------------------------------------------------------------
        q_gpt, q_gem = "A temporary 17?", "A temporary 18?"
        async with trio.open_nursery() as n:
            for site, q in (("chatgpt", q_gpt), ("gemini", q_gem)):
                async def temp(site: str = site, q: str = q) -> None:
                    results[site, "temp"] = await b.call(f"ask_{site}_web", {"question": q, "project": "alpha",
                                                                             "temporary": True})
                n.start_soon(temp)
        answer(results["chatgpt", "temp"], q_gpt)
        answer(results["gemini", "temp"], q_gem)
        assert sites.chatgpt.log()[-1]["temporary"] is True and sites.gemini.log()[-1]["temporary"] is True
        assert results["chatgpt", "temp"].structured_content["url"] == "https://chatgpt.com/?temporary-chat=true"
        assert b.sessions() == kept  # neither the temporary chats nor the named conversation became alpha's

        # -- 5. new chats inside a ChatGPT Project and a Gemini Gem ----------------------------------------------
        q_gpt, q_gem = "In the project 19?", "In the gem 20?"
        in_project = answer(await b.call("ask_chatgpt_web", {"question": q_gpt, "project": "delta", "new_chat": True,
                                                             "chat_base_url": PROJECT}), q_gpt)
        in_gem = answer(await b.call("ask_gemini_web", {"question": q_gem, "project": "delta",
                                                        "chat_base_url": GEM}), q_gem)
        assert re.match(r"^https://chatgpt\.com/g/g-p-6870abc-review/c/[0-9a-f-]+$", in_project["url"])
        assert re.match(r"^https://gemini\.google\.com/gem/coding-partner/[0-9a-f]+$", in_gem["url"])
        assert sites.chatgpt.log()[-1]["place"] == "g-p-6870abc-review"
        assert sites.gemini.log()[-1]["place"] == "coding-partner"
        q = "And 21 in the project?"  # the project keeps the Project's conversation
        assert answer(await b.call("ask_chatgpt_web", {"question": q, "project": "delta"}), q)["url"] == \
            in_project["url"]
        history = b.history()
    every = [e["question"] for e in sites.chatgpt.log()] + [e["question"] for e in sites.gemini.log()]
    assert len(every) == len(set(every)) and "Refused 15?" not in every  # each question sent once, the refused never
    assert [h["status"] for h in history].count("failed") == 1
