"""Claude, Grok and Perplexity end to end (issue 40): a real MCP client → `ai-bridge serve` → our extension in
headless Chromium → the imitations of claude.ai, grok.com and www.perplexity.ai (tests/fakesites, shaped on the
captures). Every check of a test runs through one server and one browser, the three sites asked together where the
check allows (ask_web, in parallel): each extra bridge would cost more than a second of CPU."""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from .conftest import REPO
from .e2e import Bridge, open_bridge, requires_chromium
from .fakesites.fixture import FakeSites, SiteControl
from .fakesites.scripting import RATE_LIMIT_TEXT, answer_ref
from .test_e2e_asks import hide

pytestmark = [requires_chromium, pytest.mark.chromium]

SITES = ("claude", "grok", "perplexity")
ORIGINS = {"claude": "https://claude.ai/", "grok": "https://grok.com/", "perplexity": "https://www.perplexity.ai/"}
FAST = {"chunks": 4, "intervalMs": 40, "firstTokenMs": 100}
STREAMED = {"chunks": 8, "intervalMs": 150, "firstTokenMs": 100}  # long enough for partial answers (every 0.5 s)
ANSWER = ("## Plan\n\nA table:\n\n| Step | Cost |\n| :--- | ---: |\n| parse | 2 |\n| build | 40 |\n\n"
          "Then the code:\n\n```python\ndef total(xs):\n    return sum(xs)\n```\n\n"
          "The sum is $\\sum_i x_i$ and on its own:\n\n$$\nE = mc^2\n$$\n\nThat is all.")


def parts(res: Any) -> dict[str, Any]:
    """ask_web's result: one key per site asked."""
    sc: dict[str, Any] = res.structured_content
    assert set(sc) <= set(SITES), sc
    return sc


def answer_of(part: dict[str, Any], site: str) -> str:
    assert "error" not in part, (site, part)
    assert part["provider"] == site
    return str(part["answer"])


async def until(site: SiteControl, status: str, n: int = 1) -> None:
    await trio.to_thread.run_sync(lambda: site.wait_log(
        lambda qs: len(qs) >= n and qs[n - 1]["status"] == status, timeout=20))


async def ask_all(b: Bridge, question: str, **args: Any) -> dict[str, Any]:
    res = await b.call("ask_web", {"question": question, "sites": list(SITES), "timeout_s": 60, **args})
    return parts(res)


async def test_three_sites_answer_in_markdown_keep_their_conversations_and_fail_typed(sites: FakeSites,
                                                                                      tmp_path: Path) -> None:
    claude, grok, perplexity = sites.claude, sites.grok, sites.perplexity
    # Each as awkward as its site: Claude thinks first (its thinking keeps its own .standard-markdown above the
    # answer), Grok's text renders a moment after its stop button went, Perplexity searches and cites its sources.
    claude.set_next(text=ANSWER, thinking=True, thinkingMs=600, **STREAMED)
    grok.set_next(text=ANSWER, renderLagMs=300, **STREAMED)
    cited = ANSWER.replace("That is all.", "Sources agree {{cite:wikipedia|https://en.wikipedia.org/wiki/Sum}}.")
    perplexity.set_next(text=cited, thinking=True, thinkingMs=300, **STREAMED)
    async with open_bridge(sites, tmp_path) as b:
        q1 = "Plan the build in 2 steps."
        first = await ask_all(b, q1)
        for site in SITES:
            got = answer_of(first[site], site)
            assert "| Step | Cost |\n| :--- | ---: |\n| parse | 2 |" in got, (site, got)
            assert "```python\ndef total(xs):\n    return sum(xs)\n```" in got, (site, got)
            assert "$\\sum_i x_i$" in got and "$$\nE = mc^2\n$$" in got, (site, got)
            assert "Let me work through" not in got  # Claude's thinking is not the answer
            assert first[site]["url"].startswith({"claude": "https://claude.ai/chat/", "grok": "https://grok.com/c/",
                                                  "perplexity": "https://www.perplexity.ai/search/"}[site])
            assert first[site]["completion"]["extractedBy"] == "content", (site, first[site])
            assert not first[site].get("warnings"), (site, first[site])
        assert first["claude"]["completion"]["reason"] == "action bar on the new response"
        assert first["claude"]["completion"]["thinking"] is True
        assert first["grok"]["completion"]["reason"] == "action buttons on the new response"
        assert first["perplexity"]["completion"]["reason"] == "action bar on the new answer"
        assert "Sources agree [wikipedia](https://en.wikipedia.org/wiki/Sum)." in first["perplexity"]["answer"]
        # Partial answers streamed as progress, each site by name (Grok's page shows no text until its lag is over).
        for title in ("Claude", "Perplexity"):
            assert any(m.startswith(f"{title} is answering") for _, m in b.progress), (title, b.progress[-5:])

        # The project's conversations are kept: the next ask goes to the same conversation on each site.
        for site in SITES:
            sites.site(site).set_next(**FAST)
        q2 = "Name 3 more steps."
        second = await ask_all(b, q2)
        for site in SITES:
            assert answer_ref(q2) in answer_of(second[site], site)
            log = sites.site(site).log()
            assert log[1]["conversationId"] == log[0]["conversationId"], site
            assert second[site]["url"] == first[site]["url"]
        third = await ask_all(b, "Start over with 1 step.", new_chat=True)
        for site in SITES:
            log = sites.site(site).log()
            assert log[2]["conversationId"] != log[0]["conversationId"] and third[site]["url"] != first[site]["url"]

        # An answer finishing while its window is minimized (a hidden page renders no answer text): read whole.
        q4 = "While hidden: name 3 sorting algorithms."
        async with b.devtools() as dt:
            for site, origin in ORIGINS.items():
                sites.site(site).set_next(chunks=6, intervalMs=100, firstTokenMs=100)
                [page] = await dt.pages(origin)
                await hide(dt, page["targetId"], "minimized")
            hidden = await ask_all(b, q4)
        for site in SITES:
            assert answer_of(hidden[site], site).endswith("That is all."), (site, hidden[site]["answer"][-200:])
            assert answer_ref(q4) in hidden[site]["answer"]

        # One site failing still returns the others: a limit in Claude's alert band, Grok's stream breaking
        # ("Something went wrong" with Retry), Perplexity answering.
        claude.set_next(rateLimited=True, notice="banner", firstTokenMs=100)
        grok.set_next(siteError=True, errorAfterChunks=1, **FAST)
        perplexity.set_next(**FAST)
        res = await b.call("ask_web", {"question": "What is 2 plus 2?", "sites": list(SITES), "timeout_s": 60})
        mixed = parts(res)
        assert not res.is_error  # one answer is enough
        assert mixed["claude"]["error"]["code"] == "rate_limited"
        assert RATE_LIMIT_TEXT["claude"]["en"][:30] in mixed["claude"]["error"]["message"]
        assert mixed["grok"]["error"]["code"] == "site_error"
        assert answer_ref("What is 2 plus 2?") in answer_of(mixed["perplexity"], "perplexity")
        assert [len(sites.site(s).log()) for s in SITES] == [5, 5, 5]  # nothing was sent twice

        # A login page, a bot check, as a new chat loads: typed errors at once, nothing typed or sent. (Claude
        # answers meanwhile.)
        claude.set_next(**FAST)
        grok.set_page(login=True)
        perplexity.set_page(challenge=True)
        walls = parts(await b.call("ask_web", {"question": "Name 1 color.", "sites": list(SITES), "timeout_s": 60,
                                               "new_chat": True}))
        assert walls["grok"]["error"]["code"] == "login_required"
        assert walls["perplexity"]["error"]["code"] == "site_challenge"
        assert "complete the check" in walls["perplexity"]["error"]["hint"]
        assert answer_ref("Name 1 color.") in answer_of(walls["claude"], "claude")
        assert (len(grok.log()), len(perplexity.log()), grok.full_log()["sends"]) == (5, 5, 5)

        # A conversation deleted on the site: the ask says so and goes to a new chat of the same project.
        perplexity.set_page()
        cid = perplexity.log()[0]["conversationId"]
        perplexity.delete_conversation(*{e["conversationId"] for e in perplexity.log()})
        perplexity.set_next(**FAST)
        moved = await b.call("ask_perplexity_web", {"question": "What is 3 plus 4?", "timeout_s": 60})
        assert not moved.is_error, moved.content[0].text
        assert [w["code"] for w in moved.structured_content["warnings"]] == ["conversation_gone"]
        assert perplexity.log()[-1]["conversationId"] != cid


@pytest.fixture
def notes() -> Iterator[str]:
    """A file inside the project the server runs in (its working directory is the repository), relative to it."""
    rel = f".test-cache/sites-{uuid.uuid4().hex[:8]}"
    (REPO / rel).mkdir(parents=True)
    (REPO / rel / "notes.md").write_text("# Notes\nThe build has 2 steps.\n")
    try:
        yield f"{rel}/notes.md"
    finally:
        shutil.rmtree(REPO / rel, ignore_errors=True)


async def test_models_files_background_jobs_and_stop_on_the_three_sites(sites: FakeSites, tmp_path: Path,
                                                                         notes: str) -> None:
    for site in SITES:
        sites.site(site).set_next(**FAST)
    async with open_bridge(sites, tmp_path) as b:
        # What each picker offers, in the site's own words: Claude's models (locked ones say so), its Effort submenu
        # and Thinking switch; Grok's four models, chosen one shown only by its trigger.
        listed = (await b.call("list_models", {"provider": "claude"})).structured_content["sites"]["claude"]
        assert [r["label"] for r in listed["models"]] == ["Sonnet 5", "Opus 4.8", "Fable 5", "Haiku 4.5"], listed
        assert {r["label"]: r.get("disabled", False) for r in listed["models"]}["Opus 4.8"] is True
        assert [r["label"] for r in listed["efforts"]] == ["Low", "Medium", "High", "Extra", "Max", "Thinking"]
        assert listed["current"] == {"model": "Sonnet 5", "effort": "Medium"}
        groks = (await b.call("list_models", {"provider": "grok"})).structured_content["sites"]["grok"]
        assert [r["label"] for r in groks["models"]] == ["Fast", "Auto", "Expert", "Heavy"]
        assert groks["current"] == {"model": "Fast"}

        # Chosen and read back before sending, with files uploaded through each site's own input.
        res = await b.call("ask_web", {"question": "Summarize the 2 steps.", "sites": list(SITES), "timeout_s": 60,
                                       "files": [notes], "choices": {
                                           "claude": {"model": "haiku", "effort": "high"},
                                           "grok": {"model": "Expert"}, "perplexity": {"model": "Sonar"}}}, )
        chosen = parts(res)
        assert chosen["claude"]["chosen"] == {"model": "Haiku 4.5", "effort": "High"}
        assert chosen["grok"]["chosen"] == {"model": "Expert"} and chosen["grok"]["model"] == "Expert"
        assert chosen["perplexity"]["chosen"] == {"model": "Sonar"}
        for site in SITES:
            entry = sites.site(site).log()[0]
            assert [a["name"] for a in entry["attachments"]] == ["notes.md"], (site, entry)
        assert [sites.site(s).log()[0]["model"] for s in SITES] == ["Haiku 4.5", "Expert", "Sonar"]
        assert sites.claude.log()[0]["effort"] == "High"

        # Thinking on, by its switch; a row the plan does not open and a name no picker shows send nothing.
        sites.claude.set_next(**FAST)
        on = await b.call("ask_claude_web", {"question": "Think about 1 case.", "effort": "thinking", "timeout_s": 60})
        assert not on.is_error, on.content[0].text
        assert on.structured_content["chosen"]["effort"] == "High, Thinking"
        assert sites.claude.log()[-1]["effort"] == "High thinking"
        for site, args in (("claude", {"model": "Opus 4.8"}), ("grok", {"model": "Turbo"})):
            before = sites.site(site).full_log()["sends"]
            refused = await b.call(f"ask_{site}_web", {"question": "Name 2 colors.", "timeout_s": 60, **args})
            assert refused.is_error and refused.structured_content["error"]["code"] == "unknown_model", site
            assert sites.site(site).full_log()["sends"] == before, site

        # A background job streams its partial answer, and cancelling it clicks Stop in the page.
        sites.grok.set_next(chunks=200, intervalMs=100, firstTokenMs=100)
        n = len(sites.grok.log()) + 1
        job = (await b.call("ask_grok_web", {"question": "Write about 7 protocols.", "background": True}))
        job_id = job.structured_content["jobId"]
        await until(sites.grok, "streaming", n=n)
        partial: dict[str, Any] = {}
        with trio.fail_after(20):
            while not partial.get("partial", {}).get("grok"):
                partial = (await b.call("get_answer", {"job_id": job_id, "wait_s": 0.3})).structured_content
        cancelled = (await b.call("cancel_job", {"job_id": job_id})).structured_content
        assert cancelled["status"] == "cancelled" and cancelled["errors"]["grok"]["code"] == "cancelled"
        try:
            await until(sites.grok, "disconnected", n=n)  # Stop was clicked: the page dropped the stream
        except Exception:
            print("\n".join(line for line in b.log_text().splitlines() if "grok" in line)[-4000:])
            raise

        # ask_web as a background job: its result keeps the per-site shape, even for one site.
        sites.perplexity.set_next(**FAST)
        started = (await b.call("ask_web", {"question": "What is 5 plus 6?", "sites": ["perplexity"],
                                            "background": True})).structured_content
        done = await b.call("get_answer", {"job_id": started["jobId"], "wait_s": 60})
        assert done.structured_content["status"] == "done"
        assert answer_ref("What is 5 plus 6?") in done.structured_content["results"]["perplexity"]["answer"]
        assert re.search(r"5.*6|6.*5", done.content[0].text)
