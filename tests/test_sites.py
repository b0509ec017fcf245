"""The sites as tables (issue 40): every `ProviderName` has one table in actors/provider/sites/, run by the same actor
and flow; each new site's completion rule, and the behaviours a table names (Claude's Effort submenu and Thinking
switch, Grok's choice shown on its picker's trigger, locked rows, a bot check) — units on the fake page and trio's
autojump clock, no browser."""

from __future__ import annotations

import json
import re
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from actors.protocol.common import PAIR, ProviderName, sites_named
from actors.protocol.provider import ADDRESSES, Choice, provider_address
from actors.provider import choices
from actors.provider.choices import Row, _on_trigger, _toggle_wanted, _unconfirmed
from actors.provider.page import Box, PageState
from actors.provider.sites import BY_NAME, TABLES, claude, grok, perplexity
from actors.provider.table import Completion, Watch
from supervisor.constants import SHARED
from supervisor.errors import LoginRequired, SiteChallenge

from .conftest import REPO
from .provider_fakes import FakePage, make_flow, ps

NEW = {"assistant_count": 2}
W0 = Watch(initial_assistant=1, saw_stop=False, elapsed_s=0.0, text_stable_s=0.0)


def watch(**changes: Any) -> Watch:
    return attrs.evolve(W0, **changes)


# --- one table per site -------------------------------------------------------------------------------------------


def test_every_site_has_one_table_and_one_address_in_the_same_order() -> None:
    assert [t.name for t in TABLES] == [p.value for p in ProviderName]
    assert {p: provider_address(p).name for p in ProviderName} == {p: p.value for p in ProviderName}
    assert list(ADDRESSES) == list(ProviderName)
    assert sites_named("both") == PAIR and sites_named("all") == tuple(ProviderName)
    assert sites_named("grok") == (ProviderName.GROK,)


@pytest.mark.parametrize("table", TABLES, ids=[t.name for t in TABLES])
def test_a_table_is_whole_and_agrees_with_the_extension(table: Any) -> None:
    for entry in ("input", "send", "stop", "user", "assistant", "content", "feedback", "notice", "chrome",
                  "fileInput", "picker", "menu", "pickerItem"):
        assert table.selectors.get(entry), (table.name, entry)
    for entry in ("stop", "login", "rateLimit", "siteError", "unavailable", "chrome", "attachRefused"):
        assert table.labels.get(entry), (table.name, entry)
    # A selector list is a union where the watcher counts: the newer sites name one element each, else one response
    # could be counted twice (Claude's [data-is-streaming] holds its .font-claude-response).
    if ProviderName(table.name) not in PAIR:
        assert len(table.selectors["assistant"]) == 1 and len(table.selectors["user"]) == 1, table.name
    # The site's pages are the ones the extension may drive, and its home and conversations are on them.
    site = next(s for s in SHARED.providers if s.name == table.name)
    origins = {o.rstrip("/") for o in site.origins}
    assert {re.sub(r"/\*$", "", p) for p in table.url_patterns} <= origins, (table.url_patterns, origins)
    assert any(table.home_url.startswith(o + "/") for o in origins)
    assert not re.match(table.conversation_re, table.home_url)


def test_the_extension_may_reach_every_site() -> None:
    manifest = json.loads((REPO / "extension" / "manifest.json").read_text())
    for site in SHARED.providers:
        for origin in site.origins:
            assert origin + "/*" in manifest["host_permissions"], origin
    assert {s.name for s in SHARED.providers} == {p.value for p in ProviderName}


# --- completion rules -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("state, w, expected", [
    # data-is-streaming="false" and the message's action bar (claude-chat-simple.html)
    (ps(**NEW, last_has_feedback=True, last_len=10), watch(saw_stop=True), "action bar on the new response"),
    (ps(**NEW, last_has_feedback=True, last_len=0), W0, "action bar on the new response"),  # render lag: text later
    (ps(**NEW, last_len=10), watch(saw_stop=True, quiet_s=1.0), "stop gone, page quiet"),
    (ps(**NEW, last_len=10), watch(text_stable_s=5.0), "text stable for 5 s"),
    # never: streaming (the busy marker or the stop button), thinking, no new response, quiet too short
    (ps(**NEW, stop=True, last_has_feedback=True), watch(saw_stop=True, quiet_s=9), None),
    (ps(**NEW, thinking=True, last_has_feedback=True), watch(saw_stop=True, quiet_s=9), None),
    (ps(last_has_feedback=True, last_len=10), watch(saw_stop=True, quiet_s=9), None),
    (ps(**NEW, last_len=10), watch(saw_stop=True, quiet_s=0.9), None),
    (ps(**NEW, last_len=0), watch(saw_stop=True, quiet_s=9, text_stable_s=9), None),
])
def test_claude_completion(state: PageState, w: Watch, expected: str | None) -> None:
    assert claude.completion(state, w) == (Completion(True, expected) if expected else Completion(False))


@pytest.mark.parametrize("state, w, expected", [
    (ps(**NEW, last_has_feedback=True), W0, "action buttons on the new response"),
    # the submit button back where the stop button stood (disabled: the composer is empty)
    (ps(**NEW, send_found=True, send_enabled=False), watch(saw_stop=True), "submit button back"),
    (ps(**NEW, send_found=False, last_len=5), watch(saw_stop=True, quiet_s=1.0), "stop gone, page quiet"),
    (ps(**NEW, send_found=False, last_len=5), watch(text_stable_s=5.0), "text stable for 5 s"),
    (ps(**NEW, send_found=True), W0, None),  # no stop seen yet: the submit button was always there
    (ps(**NEW, stop=True, send_found=False), watch(saw_stop=True, quiet_s=9), None),
    (ps(**NEW, thinking=True, send_found=True), watch(saw_stop=True), None),
    (ps(send_found=True), watch(saw_stop=True), None),
])
def test_grok_completion(state: PageState, w: Watch, expected: str | None) -> None:
    assert grok.completion(state, w) == (Completion(True, expected) if expected else Completion(False))


@pytest.mark.parametrize("state, w, expected", [
    (ps(**NEW, last_has_feedback=True, last_len=3), watch(saw_stop=True), "action bar on the new answer"),
    (ps(**NEW, last_len=3), watch(saw_stop=True, quiet_s=1.0), "stop gone, page quiet"),
    (ps(**NEW, last_len=3), watch(text_stable_s=5.0), "text stable for 5 s"),
    (ps(**NEW, thinking=True, last_has_feedback=True), watch(saw_stop=True, quiet_s=9), None),  # still searching
    (ps(**NEW, stop=True, last_has_feedback=True), watch(saw_stop=True), None),
    (ps(last_has_feedback=True), watch(saw_stop=True), None),  # an earlier answer's bar
])
def test_perplexity_completion(state: PageState, w: Watch, expected: str | None) -> None:
    assert perplexity.completion(state, w) == (Completion(True, expected) if expected else Completion(False))


# --- a bot check in the site's place ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["chatgpt", "claude", "grok", "perplexity"])
async def test_a_bot_check_is_site_challenge_at_once_and_nothing_is_typed(autojump_clock: trio.testing.MockClock,
                                                                         name: str) -> None:
    table = BY_NAME[name]
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ps(url=table.home_url, input_found=False, send_found=False, challenge=True))
        r = make_flow(page, table)
        t0 = trio.current_time()
        with pytest.raises(SiteChallenge) as info:
            await r.flow.run()
        nursery.cancel_scope.cancel()
    assert trio.current_time() - t0 < 1.0  # not the input box's 30 s
    assert info.value.code == "site_challenge" and table.title in info.value.message
    assert info.value.hint is not None and table.home_url in info.value.hint
    assert page.submitted == [] and page.editor == "" and not r.flow.memo.sent


async def test_a_login_page_stays_login_required(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        page = FakePage(nursery, state=ps(url=claude.TABLE.home_url, input_found=False, send_found=False, login=True))
        with pytest.raises(LoginRequired):
            await make_flow(page, claude.TABLE).flow.run()
        nursery.cancel_scope.cancel()


def test_a_report_with_a_challenge_is_parsed_and_an_older_watchers_is_not_one() -> None:
    raw = {k: v for k, v in ps().as_json().items() if k != "challenge"}
    raw["fallbacks"] = []
    assert PageState.parse({**raw, "challenge": True}).challenge
    assert not PageState.parse(raw).challenge
    with pytest.raises(ValueError):
        PageState.parse({**raw, "challenge": "yes"})


# --- choices the tables name ----------------------------------------------------------------------------------------


def row(label: str, *, checked: bool = False, opener: bool = False, detail: str = "", menu: int = 0) -> Row:
    return Row(label, detail, checked, opener, (), False, menu, Box(1, 1))


def test_claudes_effort_words_go_to_the_switch_or_the_effort_menu() -> None:
    t = claude.TABLE
    assert _toggle_wanted(t, "off") is False and _toggle_wanted(t, "Standard") is False
    assert _toggle_wanted(t, "thinking") is True and _toggle_wanted(t, "extended") is True
    assert _toggle_wanted(t, "high") is None and _toggle_wanted(t, "max") is None  # rows of the Effort submenu
    # Gemini (a switch and no menu): every other word switches it on, as before.
    assert _toggle_wanted(BY_NAME["gemini"], "high") is True
    assert _toggle_wanted(BY_NAME["chatgpt"], "high") is None


@pytest.mark.parametrize("want, shown, missing", [
    ("high", "High, Thinking", []),
    ("high", "Medium, Thinking", ["effort 'high'"]),
    ("thinking", "Medium, Thinking", []),
    ("off", "Medium, Thinking", ["effort 'off'"]),
    ("off", "Medium", []),
    ("thinking", "Medium", ["effort 'thinking'"]),
])
def test_claudes_effort_is_read_back_as_its_tier_and_its_switch(want: str, shown: str, missing: list[str]) -> None:
    assert _unconfirmed(claude.TABLE, Choice(effort=want), Choice(model="Sonnet 5", effort=shown)) == missing


def test_groks_choice_is_the_row_its_trigger_names() -> None:
    rows = [row("Fast"), row("Auto"), row("Expert"), row("Heavy"), row("Upgrade", menu=1)]
    marked = _on_trigger(grok.TABLE, rows, "Expert")
    assert [r.label for r in marked if r.checked] == ["Expert"]
    assert _on_trigger(claude.TABLE, rows, "Expert") == rows  # a table whose rows say so themselves
    assert not any(r.checked for r in _on_trigger(grok.TABLE, rows, ""))


async def test_a_row_marked_upgrade_is_locked(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = [{"label": "Opus 4.8", "detail": "Pro Upgrade", "menu": 0, "box": {"x": 1, "y": 1}},
           {"label": "Sonnet 5", "detail": "", "menu": 0, "box": {"x": 1, "y": 2}, "checked": True}]

    class Page:
        t = claude.TABLE

        async def script(self, *args: Any) -> Any:
            return raw

    got = await choices._rows(Page())  # type: ignore[arg-type]
    assert [(r.label, r.disabled) for r in got] == [("Opus 4.8", True), ("Sonnet 5", False)]


# --- a send button the table no longer names ------------------------------------------------------------------------


async def test_a_send_button_nobody_can_find_does_not_hold_the_ask_for_a_minute(
        autojump_clock: trio.testing.MockClock) -> None:
    """Found by the drift runs on the newer fakes: Claude's "Send message" relabelled "Submit" left the ask waiting
    send_button_s (60 s) for a button no selector names, past a 45 s deadline. Now Enter has its turn once neither a
    send nor a stop button showed for send_confirm_s."""
    async with trio.open_nursery() as nursery:
        # The editor shows the typed text; no send button is ever found (a fake page's click needs one).
        page = FakePage(nursery, state=ps(url=claude.TABLE.home_url, send_found=False))
        r = make_flow(page, claude.TABLE, timeout_s=45)
        t0 = trio.current_time()
        out = await r.flow.run()
        nursery.cancel_scope.cancel()
    assert page.submitted == ["What is 6 times 7?"] and r.flow.send_method == "enter"
    assert trio.current_time() - t0 < claude.TABLE.timeouts.send_button_s / 2
    assert out.answer


# --- the command line --------------------------------------------------------------------------------------------


def test_ask_takes_any_site_both_or_all_and_a_flag_for_one_site() -> None:
    from supervisor.app.ask import AskExtras, choices_of
    from supervisor.app.cli import parser
    from supervisor.errors import InvalidArgument

    for value in ("claude", "grok", "perplexity", "all", "both"):
        assert parser().parse_args(["ask", "--provider", value, "q"]).provider == value
    with pytest.raises(SystemExit):
        parser().parse_args(["ask", "--provider", "copilot", "q"])
    every = list(sites_named("all"))
    got = dict(choices_of(AskExtras(models=("claude:Haiku", "grok:Expert"), efforts=("claude:max",)), every))
    assert got == {ProviderName.CLAUDE: Choice("Haiku", "max"), ProviderName.GROK: Choice("Expert")}
    with pytest.raises(InvalidArgument, match="grok has no tool 'deep think'"):
        choices_of(AskExtras(tools=("grok:deep think",)), every)
    with pytest.raises(InvalidArgument, match="is for perplexity, which this ask does not ask"):
        choices_of(AskExtras(models=("perplexity:Sonar",)), list(PAIR))


# --- the imitations' control API ----------------------------------------------------------------------------------


@pytest.mark.process
def test_one_reset_resets_every_imitation(sites: Any) -> None:
    sites.claude.set_next(text="held")
    sites.grok.set_page(login=True)
    sites.perplexity.delete_conversation("question-gone")
    sites.reset()
    assert sites.claude.state()["queue"] == [] and sites.grok.state()["page"]["login"] is False
    assert sites.perplexity.state()["deleted"] == []
    assert sites.host_resolver_rules().startswith(f"MAP chatgpt.com 127.0.0.1:{sites.ports['chatgpt']}, ")
    assert f"MAP www.perplexity.ai 127.0.0.1:{sites.ports['perplexity']}" in sites.host_resolver_rules()


# --- ask_web's arguments ------------------------------------------------------------------------------------------


def test_ask_web_takes_any_set_of_sites_each_once_with_their_own_choices() -> None:
    import pydantic

    from actors.mcp_front.tools import TOOLS
    from actors.mcp_front.tools.asks import SitesAskArgs
    from supervisor.errors import InvalidArgument

    tool = TOOLS["ask_web"]
    args = tool.parse({"question": "q?", "sites": ["perplexity", "claude"],
                       "choices": {"claude": {"model": "Sonnet 5", "effort": "high"}}})
    assert isinstance(args, SitesAskArgs)
    assert args.providers() == (ProviderName.CLAUDE, ProviderName.PERPLEXITY)  # the sites' order, not the caller's
    assert args.choices() == ((ProviderName.CLAUDE, Choice("Sonnet 5", "high")), (ProviderName.PERPLEXITY, Choice()))
    for bad in ({"sites": []}, {"sites": ["claude", "claude"]}, {"sites": ["copilot"]},
                {"sites": ["grok"], "choices": {"bard": {"model": "x"}}}, {"sites": ["grok"], "choices": {}}):
        with pytest.raises((pydantic.ValidationError, InvalidArgument)):
            tool.parse({"question": "q?", **bad})
    unasked = tool.parse({"question": "q?", "sites": ["grok"], "choices": {"claude": {"model": "Haiku"}}})
    with pytest.raises(InvalidArgument, match="choices name claude, which is not among the sites asked"):
        unasked.choices()
    no_tool = tool.parse({"question": "q?", "sites": ["grok"], "choices": {"grok": {"tools": ["deep think"]}}})
    with pytest.raises(InvalidArgument, match="grok has no tool 'deep think'"):
        no_tool.choices()
    ok = tool.parse({"question": "q?", "sites": ["gemini"], "choices": {"gemini": {"tools": ["Deep Think"]}}})
    assert ok.choices() == ((ProviderName.GEMINI, Choice(tools=("deep think",))),)
