"""Models, effort and tools (issue 34), end to end: a real MCP client → `ai-bridge serve` → our extension in headless
Chromium → the fake sites with the pickers of the July 2026 captures (tests/fakesites/*/menus.js say which capture
each shape follows). A choice is made in the page's own menus, read back before the question goes, and named in the
result; an unknown name or a choice the page does not confirm sends nothing. The fakes log what each message was
sent with (model, effort, tools), and how many messages they received.

Each test shares one server and browser across its asks; the page options change between asks (a new chat loads
the page anew)."""

from __future__ import annotations

from typing import Any

import pytest

from .e2e import requires_chromium
from .fakesites.fixture import FakeSites, SiteControl
from .fakesites.scripting import answer_ref
from .shared_bridge import OpenShared

pytestmark = [requires_chromium, pytest.mark.chromium]

FAST = {"chunks": 3, "intervalMs": 30, "firstTokenMs": 80}


def last(site: SiteControl) -> dict[str, Any]:
    qs = site.log()
    assert qs, "the site received no question"
    return qs[-1]


def error_of(res: Any) -> dict[str, Any]:
    assert res.is_error, res.content[0].text
    return res.structured_content["error"]  # type: ignore[no-any-return]


async def deep_research(b: Any, site: SiteControl, tool: str, q: str, report: str, **script: Any) -> dict[str, Any]:
    """A Deep Research ask in a new chat of a fresh page: its tool confirmed, its question sent once; its result."""
    site.control({"page": {}})
    site.set_next(text=report, **script)
    res = await b.call(tool, {"question": q, "tools": ["deep research"], "new_chat": True, "timeout_s": 120})
    assert not res.is_error, res.content[0].text
    out: dict[str, Any] = res.structured_content
    assert out["chosen"]["tools"] == ["deep research"]
    assert [e["question"] for e in site.log()].count(q) == 1  # one question; the plan's start is not another
    return out


async def test_chatgpt_models_effort_and_tools_in_both_pickers(sites: FakeSites, shared_bridge: OpenShared) -> None:
    site = sites.chatgpt
    async with shared_bridge() as b:
        # What can be chosen, read from the open menus; nothing chosen or sent.
        listed = await b.call("list_models", {"provider": "chatgpt"})
        assert not listed.is_error, listed.content[0].text
        offer = listed.structured_content["sites"]["chatgpt"]
        assert [r["label"] for r in offer["models"]] == ["GPT-5.6 Sol", "GPT-5.5", "GPT-5.4", "GPT-5.3", "o3"]
        assert [r["label"] for r in offer["efforts"]] == ["Instant", "Medium", "High"]
        assert [r["label"] for r in offer["tools"]] == ["Deep research", "Web search"]  # found by searching
        assert offer["current"] == {"model": "GPT-5.6 Sol", "effort": "Medium"}
        assert {"label": "GPT-5.4", "checked": False, "detail": "Leaving on July 23"} in offer["models"]
        assert site.full_log()["sends"] == 0

        # The composer pill (July 2026): a model of the submenu and a tier of the main menu.
        site.set_next(**FAST)
        q = "What is 6 times 7?"
        res = await b.call("ask_chatgpt_web", {"question": q, "model": "gpt-5.5", "effort": "high",
                                               "new_chat": True, "timeout_s": 60})
        assert not res.is_error, res.content[0].text
        out = res.structured_content
        assert answer_ref(q) in out["answer"]
        assert out["chosen"] == {"model": "GPT-5.5", "effort": "High"}  # as the page showed it when sent
        assert out["model"] == "gpt-5-5"  # the model that answered (the message's slug)
        assert (last(site)["model"], last(site)["effort"]) == ("gpt-5-5", "high")

        # The Instant tier runs on the model its row names, whatever the submenu says: the result tells them apart.
        site.set_next(**FAST)
        res = await b.call("ask_chatgpt_web", {"question": "What is 2 plus 2?", "model": "o3", "effort": "instant",
                                               "new_chat": True, "timeout_s": 60})
        assert not res.is_error, res.content[0].text
        assert res.structured_content["chosen"] == {"model": "o3", "effort": "Instant"}
        assert res.structured_content["model"] == "gpt-5-5"

        # A name the page does not offer: the error lists what it does; nothing sent.
        sends = site.full_log()["sends"]
        bad = await b.call("ask_chatgpt_web", {"question": "What is 1 plus 1?", "model": "Turbo", "new_chat": True,
                                               "timeout_s": 60})
        err = error_of(bad)
        assert err["code"] == "unknown_model", err
        assert "Instant, Medium, High, GPT-5.6 Sol, GPT-5.5, GPT-5.4, GPT-5.3, o3" in err["message"], err
        bad = await b.call("ask_chatgpt_web", {"question": "What is 1 plus 1?", "effort": "pro", "new_chat": True,
                                               "timeout_s": 60})
        assert error_of(bad)["code"] == "unknown_model"  # Pro is a tier of other plans only
        assert site.full_log()["sends"] == sends

        # The page ignores the click: the choice is never confirmed, so nothing is sent.
        site.control({"page": {"pickerIgnoresClicks": True}})
        bad = await b.call("ask_chatgpt_web", {"question": "What is 3 plus 3?", "model": "o3", "new_chat": True,
                                               "timeout_s": 60})
        err = error_of(bad)
        assert err["code"] == "choice_unverified", err
        assert "model 'o3'" in err["message"] and "GPT-5.6 Sol" in err["message"], err  # what the page shows
        assert site.full_log()["sends"] == sends

        # The header switcher (Jan 2026) and a tool found through the "+" menu's search (July 2026).
        site.control({"page": {"picker": "header"}})
        site.set_next(**FAST)
        res = await b.call("ask_chatgpt_web", {"question": "Name 2 colours.", "model": "think",
                                               "tools": ["web search"], "new_chat": True, "timeout_s": 60})
        assert not res.is_error, res.content[0].text
        assert res.structured_content["chosen"] == {"model": "Thinking", "tools": ["web search"]}
        assert res.structured_content["model"] == "gpt-5-2-thinking"
        assert last(site)["tools"] == ["web search"]

        # Deep Research: its "+" menu row, confirmed by its pill, then the question once. The turn is only a
        # cross-origin frame (the sandbox host): its plan is started ("Start", long before its 60 s countdown), and
        # the answer is the whole report after its heading, as markdown with its links: never the plan, the progress
        # lines (one reads like an answer) or the counter lines, and never before the report finished rendering.
        report = ("# Tidal mills\n\nA mill stored the tide in a pond{{cite:Mills|https://example.org/mills}} and "
                  "ground on the ebb.\n\n## Why they died out\n\n- steam engines\n- silted ponds\n\nThat is all.")
        out = await deep_research(b, site, "ask_chatgpt_web", "Research how tidal mills ground grain.", report,
                                  researchMs=1200, firstTokenMs=80)
        assert out["completion"]["extractedBy"] == "research frame"
        assert out["answer"].startswith("# Tidal mills") and out["answer"].rstrip().endswith("That is all."), out
        assert "[Mills](https://example.org/mills)" in out["answer"] and "- silted ponds" in out["answer"]
        for noise in ("Deep research report", "citations", "sources", "Researching", "Plan starts", "probably"):
            assert noise not in out["answer"], (noise, out["answer"])
        asked = last(site)
        assert (asked["tools"], asked["researchStarted"], asked["researchStartedBy"]) == (
            ["deep research"], True, "button")

        # The page ignores the row's click: no pill, so nothing is sent.
        sends = site.full_log()["sends"]
        site.control({"page": {"pickerIgnoresClicks": True}})
        err = error_of(await b.call("ask_chatgpt_web", {"question": "Research tides.", "tools": ["deep research"],
                                                        "new_chat": True, "timeout_s": 60}))
        assert err["code"] == "choice_unverified" and "tool 'deep research'" in err["message"], err
        assert site.full_log()["sends"] == sends


async def test_gemini_models_extended_thinking_and_tools(sites: FakeSites, shared_bridge: OpenShared) -> None:
    site = sites.gemini
    async with shared_bridge() as b:
        listed = await b.call("list_models", {"provider": "gemini"})
        offer = listed.structured_content["sites"]["gemini"]
        assert [r["label"] for r in offer["models"]] == ["3.1 Flash-Lite", "3.5 Flash", "3.1 Pro"]
        assert offer["efforts"] == [{"label": "Extended thinking", "checked": False, "disabled": True}]  # Pro only
        assert [r["label"] for r in offer["tools"]] == ["Deep Research", "Deep Think", "Canvas"]
        assert offer["current"] == {"model": "3.5 Flash"}

        site.set_next(**FAST)
        q = "What is 6 times 7?"
        res = await b.call("ask_gemini_web", {"question": q, "model": "Pro", "effort": "extended", "new_chat": True,
                                              "timeout_s": 60})
        assert not res.is_error, res.content[0].text
        assert answer_ref(q) in res.structured_content["answer"]
        assert res.structured_content["chosen"] == {"model": "3.1 Pro", "effort": "Extended thinking"}
        assert res.structured_content["model"] == "Pro Extended"  # the picker's own words
        assert (last(site)["model"], last(site)["effort"]) == ("pro", "extended")

        # A tool: its row in "Upload and tools", confirmed by its "Deselect …" chip.
        site.set_next(**FAST)
        res = await b.call("ask_gemini_web", {"question": "Name 3 primes.", "model": "flash", "tools": ["canvas"],
                                              "new_chat": True, "timeout_s": 60})
        assert not res.is_error, res.content[0].text
        assert res.structured_content["chosen"] == {"model": "3.5 Flash", "tools": ["canvas"]}
        assert (last(site)["model"], last(site)["tools"]) == ("flash", ["canvas"])

        sends = site.full_log()["sends"]
        err = error_of(await b.call("ask_gemini_web", {"question": "What is 1 plus 1?", "model": "Ultra",
                                                       "new_chat": True, "timeout_s": 60}))
        assert err["code"] == "unknown_model" and "3.1 Flash-Lite, 3.5 Flash, 3.1 Pro" in err["message"], err
        site.control({"page": {"pickerIgnoresClicks": True}})
        err = error_of(await b.call("ask_gemini_web", {"question": "What is 1 plus 1?", "model": "flash-lite",
                                                       "new_chat": True, "timeout_s": 60}))
        assert err["code"] == "choice_unverified" and "3.5 Flash" in err["message"], err
        assert site.full_log()["sends"] == sends

        # Deep Research, started from the tools menu: the plan is confirmed ("Start research") and the answer is the
        # whole report with its sources, never the plan (whose response has its feedback buttons too).
        report = ("# Hash maps 2026\n\nOpen addressing wins on caches{{cite:Paper|https://example.org/oa}}.\n\n"
                  "| Kind | Probe |\n| --- | --- |\n| linear | 1 |\n\nThat is all.")
        q = "Research 2 hash map designs."
        out = await deep_research(b, site, "ask_gemini_web", q, report, sources=["https://example.org/oa"], **FAST)
        assert out["completion"]["extractedBy"] == "report"
        assert out["answer"].startswith("# Hash maps 2026") and out["answer"].rstrip().endswith("That is all.")
        assert "[1](https://example.org/oa)" in out["answer"] and "research plan" not in out["answer"].lower()
        asked = last(site)
        assert asked["question"] == q and asked["researchStarted"] is True and asked["tools"] == ["deep research"]

        # The spec's 2025 page: the old mode names, and the old argument name.
        site.control({"page": {"shape": "2025"}})
        site.set_next(**FAST)
        res = await b.call("ask_gemini_web", {"question": "What is 5 times 5?", "mode": "PRO", "new_chat": True,
                                              "timeout_s": 60})
        assert not res.is_error, res.content[0].text
        assert last(site)["model"] == "Pro"
