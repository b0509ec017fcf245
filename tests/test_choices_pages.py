"""Models, effort and tools (issue 34): the page script that reads pickers (actors/provider/choices.js) on small pages
written here with the facts of the July 2026 captures (../shared/real-dom/, not copies of them), in an isolated
world of real Chromium as the provider actor runs it; and the matching rules (actors/provider/choices.py) on the
rows it returns.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

from actors.provider.choices import CHOICES, KEYS, Row, match_label, match_row
from actors.provider.page import Box
from actors.provider.sites import chatgpt, gemini
from actors.provider.table import ProviderTable
from supervisor.errors import UnknownModel

from . import cdp_pipe
from .cdp_pipe import CHROMIUM
from .shared_chromium import ChromiumPool


def needs_browser(test: Any) -> Any:
    chromium = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=f"Chromium not found at {CHROMIUM}")
    return pytest.mark.chromium(chromium(test))

# chatgpt-2607-model-menu-open.html: the composer pill shows the tier; its menu has the tiers (Instant carries a
# second span, the model it runs) and a submenu opener named after the current model; the submenu's rows are the
# models, one with a second span "Leaving on July 23". No header switcher on this account.
CHATGPT_PILL = """
<main>
  <div id="prompt-textarea" class="ProseMirror" contenteditable="true" role="textbox"><p><br></p></div>
  <button class="__composer-pill" type="button" aria-haspopup="menu" aria-expanded="true"><span>High</span></button>
</main>
<div role="menu">
  <div role="menuitemradio" aria-checked="false"><span>Instant</span><span>5.5</span></div>
  <div role="menuitemradio" aria-checked="false"><span>Medium</span></div>
  <div role="menuitemradio" aria-checked="true"><span>High</span></div>
  <div role="menuitem" aria-haspopup="menu"><span>GPT-5.6 Sol</span></div>
</div>
<div role="menu">
  <div role="menuitemradio" aria-checked="true"><span>GPT-5.6 Sol</span></div>
  <div role="menuitemradio" aria-checked="false"><span>GPT-5.5</span></div>
  <div role="menuitemradio" aria-checked="false"><span>GPT-5.4</span><span>Leaving on July 23</span></div>
  <div role="menuitemradio" aria-checked="false"><span>GPT-5.3</span></div>
  <div role="menuitemradio" aria-checked="false"><span>o3</span></div>
</div>
"""

# gemini-2607-model-menu-open.html: rows gem-menu-item[data-mode-id] with a span.label; data-active is the keyboard
# highlight (on the first row), the chosen row's content is .selected and carries "Selected".
GEMINI_MODES = """
<button data-test-id="bard-mode-menu-button" type="button" aria-label="Open mode picker, currently Pro"
  aria-haspopup="menu" aria-expanded="true">Pro</button>
<div role="menu">
  <gem-menu-item role="menuitem" data-mode-id="flash-lite" data-test-id="bard-mode-option-flash-lite" data-active="true"
    aria-disabled="false"><gem-menu-item-content><span class="label">3.1 Flash-Lite</span></gem-menu-item-content>
  </gem-menu-item>
  <gem-menu-item role="menuitem" data-mode-id="flash" data-test-id="bard-mode-option-flash" data-active="false"
    aria-disabled="false"><gem-menu-item-content><span class="label">3.5 Flash</span></gem-menu-item-content>
  </gem-menu-item>
  <gem-menu-item role="menuitem" data-mode-id="pro" data-test-id="bard-mode-option-pro" data-active="false"
    aria-disabled="false"><gem-menu-item-content class="selected"><span class="label">3.1 Pro</span>
    <span>Selected</span></gem-menu-item-content></gem-menu-item>
</div>
"""

# gemini-2607-extended-thinking.html: the Extended thinking switch is a row of the same menu, .selected when on; the
# picker then reads "Pro Extended".
GEMINI_EXTENDED = """
<button data-test-id="bard-mode-menu-button" type="button" aria-label="Open mode picker, currently Pro Extended"
  aria-haspopup="menu" aria-expanded="true">Pro Extended</button>
<div role="menu">
  <gem-menu-item role="menuitem" aria-disabled="false"><gem-menu-item-content class="selected">
    <span class="label">Extended thinking</span><span>Selected</span></gem-menu-item-content></gem-menu-item>
</div>
"""


class Page(cdp_pipe.World):
    async def show(self, body: str) -> None:
        await self.page.evaluate(f"document.body.innerHTML = {json.dumps(body)}")

    async def run(self, table: ProviderTable, op: str, arg: Any = None) -> Any:
        sel = {k: list(table.selectors.get(k, ())) for k in KEYS}
        res = await self.page.send("Runtime.callFunctionOn", {
            "functionDeclaration": CHOICES, "executionContextId": self.context_id, "returnByValue": True,
            "arguments": [{"value": op}, {"value": sel}, {"value": table.shadow_dom}, {"value": arg}]})
        assert "exceptionDetails" not in res, res["exceptionDetails"]
        return res["result"].get("value")

    async def rows(self, table: ProviderTable) -> list[Row]:
        return [r for r in (Row.parse(x) for x in await self.run(table, "rows")) if r is not None]


@pytest.fixture
async def page(shared_chromiums: ChromiumPool) -> AsyncIterator[Page]:
    async with shared_chromiums.get().browser() as b:
        yield await Page.create(await b.new_page("about:blank"))


def seen(rows: list[Row]) -> list[tuple[str, str, bool, bool, int]]:
    return [(r.label, r.detail, r.checked, r.opener, r.menu) for r in rows]


@needs_browser
async def test_rows_are_read_as_the_captures_show_them(page: Page) -> None:
    await page.show(CHATGPT_PILL)
    assert (await page.run(chatgpt.TABLE, "trigger", "picker"))["label"] == "High"
    assert seen(await page.rows(chatgpt.TABLE)) == [
        ("Instant", "5.5", False, False, 0), ("Medium", "", False, False, 0), ("High", "", True, False, 0),
        ("GPT-5.6 Sol", "", False, True, 0),  # the submenu opener: never a choice
        ("GPT-5.6 Sol", "", True, False, 1), ("GPT-5.5", "", False, False, 1),
        ("GPT-5.4", "Leaving on July 23", False, False, 1),  # the row's own label, not its whole text
        ("GPT-5.3", "", False, False, 1), ("o3", "", False, False, 1)]

    await page.show(GEMINI_MODES)
    trigger = await page.run(gemini.TABLE, "trigger", "picker")
    assert trigger["aria"] == "Open mode picker, currently Pro"
    rows = await page.rows(gemini.TABLE)
    # "3.1 Pro", not "3.1 ProSelected"; the keyboard highlight (data-active) is not the choice
    assert seen(rows) == [("3.1 Flash-Lite", "", False, False, 0), ("3.5 Flash", "", False, False, 0),
                          ("3.1 Pro", "Selected", True, False, 0)]
    assert rows[0].ids == ("flash-lite", "bard-mode-option-flash-lite")

    await page.show(GEMINI_EXTENDED)
    assert seen(await page.rows(gemini.TABLE)) == [("Extended thinking", "Selected", True, False, 0)]


@needs_browser
async def test_a_nested_submenu_is_its_own_menu_and_hidden_menus_are_not_read(page: Page) -> None:
    await page.show("""
      <div role="menu"><div role="menuitemradio" aria-checked="true"><span>High</span></div>
        <div role="menuitem" data-has-submenu><span>Models</span>
          <div role="menu"><div role="menuitemradio" aria-checked="false"><span>o3</span></div></div></div></div>
      <div role="menu" style="display:none"><div role="menuitemradio"><span>Hidden</span></div></div>""")
    assert seen(await page.rows(chatgpt.TABLE)) == [
        ("High", "", True, False, 0), ("Models", "o3", False, True, 0), ("o3", "", False, False, 1)]
    assert await page.run(chatgpt.TABLE, "trigger", "picker") is None  # no picker on this page


# --- matching (no browser) -------------------------------------------------------------------------------------------


def rows_of(*labels: str, ids: tuple[str, ...] = ()) -> list[Row]:
    return [Row(label, "", False, False, ids if i == 0 else (), False, 0, Box(0, 0)) for i, label in enumerate(labels)]


MODELS = rows_of("GPT-5.6 Sol", "GPT-5.5", "GPT-5.4", "GPT-5.3", "o3")
GEMINI = [Row("3.1 Flash-Lite", "", False, False, ("flash-lite",), False, 0, Box(0, 0)),
          Row("3.5 Flash", "", False, False, ("flash",), False, 0, Box(0, 0)),
          Row("3.1 Pro", "", True, False, ("pro",), False, 0, Box(0, 0))]


@pytest.mark.parametrize(("wanted", "rows", "label"), [
    ("gpt-5.5", MODELS, "GPT-5.5"),  # exact, any case
    ("O3", MODELS, "o3"),
    ("GPT-5.6", MODELS, "GPT-5.6 Sol"),  # a prefix
    ("Sol", MODELS, "GPT-5.6 Sol"),  # a whole word
    ("5.3", MODELS, "GPT-5.3"),  # a word part (split at hyphens)
    ("Pro", GEMINI, "3.1 Pro"),  # the family the issue names
    ("Flash", GEMINI, "3.5 Flash"),  # a whole word beats the hyphenated "Flash-Lite"
    ("flash-lite", GEMINI, "3.1 Flash-Lite"),
    ("3.1 pro", GEMINI, "3.1 Pro"),
])
def test_a_name_matches_exact_then_prefix_then_words_then_ids(wanted: str, rows: list[Row], label: str) -> None:
    row = match_row(wanted, rows, "model", "T")
    assert row is not None and row.label == label


def test_ids_are_the_last_step_and_two_rows_at_one_step_are_refused() -> None:
    by_id = [Row("Fast thinking", "", False, False, ("bard-mode-option-quick",), False, 0, Box(0, 0))]
    assert match_row("quick", by_id, "model", "T") is by_id[0]
    assert match_row("Turbo", MODELS, "model", "T") is None
    with pytest.raises(UnknownModel, match="matches several rows"):
        match_row("GPT", MODELS, "model", "Gemini")  # a prefix of four: never a guess
    assert match_label("pro", ["Pro Extended", "Pro"]) == 1  # an exact match wins over a prefix
    assert match_label("think", ["Auto", "Instant", "Thinking", "Pro"]) == 2
    assert match_label("gpt", ["GPT-5.5", "GPT-5.4"]) is None
