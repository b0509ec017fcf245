"""Models, effort and tools on a provider page (issue 34), chosen before the question is typed and read back before
it is sent: a choice the page does not confirm is never sent.

- The picker (`picker`) opens a menu of rows (`menu`, `pickerItem`); a row's label is its own label element
  (`pickerLabel`) or its first text, never the whole row. A row that opens a submenu (ChatGPT's composer pill: the
  model submenu behind "GPT-5.6 Sol") is opened, never taken as a choice. A row is chosen when it says so
  (aria-checked, data-state, `pickerChecked` such as Gemini's ``gem-menu-item-content.selected``).
- `model` is matched against the rows that are not submenu openers, then against each submenu's rows; `effort`
  against the main menu's choices (ChatGPT's tiers), or, where the table names an effort toggle (Gemini's
  "Extended thinking"), by switching that row on or off. Matching, in order: the exact label, a prefix, whole words,
  then the page's own ids (``data-mode-id``); two rows matching at the same step is an error, never a guess.
- `tools` are rows of the tools menu (`toolsMenu`, `toolItem`), named by the table's labels (``toolDeepResearch`` …);
  one that is on shows a chip (`toolChip`) or reads as checked.
- Then everything is read back (`shown`): the checked rows and the chips. What the page does not show is
  `ChoiceUnverified`, naming what it does show; an unknown name is `UnknownModel` listing what it offers.

All clicks are real mouse events (Radix menus open on a trusted pointer press, never on a script's click).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs
import trio

from supervisor.errors import BadExtensionReply, ChoiceUnverified, UnknownModel

from ..protocol.common import JSON, JSONObject
from ..protocol.provider import Choice, Offered, OfferedRow
from .page import BadPageReport, Box
from .tab import HERE, TabSession
from .table import OFF_WORDS, ON_WORDS, TOOL_LABELS, ProviderTable

CHOICES = (HERE / "choices.js").read_text(encoding="utf-8")
POLL_S = 0.05
MENU_S = 3.0  # a menu opens (or closes) within this after the click
KEYS = ("picker", "pickerItem", "pickerLabel", "pickerChecked", "menu", "toolsMenu", "toolSearch", "toolChip",
        "uploadMenu", "uploadItem")


@attrs.frozen
class Row:
    label: str
    detail: str
    checked: bool
    opener: bool  # opens a submenu: never a choice itself
    ids: tuple[str, ...]
    disabled: bool
    menu: int  # which open menu (0: the one the trigger opened; submenus after it)
    box: Box

    @classmethod
    def parse(cls, raw: JSON) -> Row | None:
        if not isinstance(raw, dict):
            raise BadPageReport(f"a menu row must be an object, got {raw!r:.80}")
        label, detail, menu = raw.get("label"), raw.get("detail", ""), raw.get("menu")
        ids = raw.get("ids", [])
        if not isinstance(label, str) or not isinstance(detail, str) or not isinstance(ids, list) \
                or not isinstance(menu, int) or isinstance(menu, bool):
            raise BadPageReport(f"a menu row has the wrong shape: {raw!r:.200}")
        box = Box.parse(raw.get("box"))
        if box is None or not label.strip():
            return None
        return cls(label[:200], detail[:200], raw.get("checked") is True, raw.get("opener") is True,
                   tuple(str(i)[:100] for i in ids if isinstance(i, str)), raw.get("disabled") is True, menu, box)


    def offered(self) -> OfferedRow:
        return OfferedRow(self.label, self.detail, self.checked, self.disabled)


# -- matching ------------------------------------------------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _words(text: str, hyphens: bool) -> list[str]:
    return [w for w in re.split(r"[\s\-]+" if hyphens else r"\s+", _norm(text)) if w]


def _has_words(label: str, wanted: str, hyphens: bool) -> bool:
    have, want = _words(label, hyphens), _words(wanted, hyphens)
    return bool(want) and any(have[i:i + len(want)] == want for i in range(len(have) - len(want) + 1))


def _id_matches(row: Row, wanted: str) -> bool:
    w = re.sub(r"[\s.]+", "-", _norm(wanted))
    return any(i.casefold() == w or i.casefold().endswith("-" + w) for i in row.ids)


STEPS = (
    ("exact", lambda r, w: _norm(r.label) == _norm(w)),
    ("prefix", lambda r, w: _norm(r.label).startswith(_norm(w))),
    ("word", lambda r, w: _has_words(r.label, w, False)),
    ("part", lambda r, w: _has_words(r.label, w, True)),
    ("id", _id_matches),
)


def match_row(wanted: str, rows: Sequence[Row], what: str, title: str) -> Row | None:
    """The row `wanted` names: the first step (exact, prefix, whole word, word part, page id) that matches rows;
    None when no step does. Two rows at the same step (different labels) is `UnknownModel`: never a guess."""
    for _, test in STEPS:
        hits = [r for r in rows if test(r, wanted)]
        labels = list(dict.fromkeys(r.label for r in hits))
        if len(labels) == 1:
            return hits[0]
        if len(labels) > 1:
            raise UnknownModel(f"{title}: the {what} {wanted!r} matches several rows ({', '.join(labels)}); nothing "
                               "was sent", hint="Name one of them exactly (any case).")
    return None


def match_label(wanted: str, labels: Sequence[str]) -> int | None:
    """The index of the label `wanted` names (the same steps as rows, without page ids); None if none or several."""
    rows = [Row(label, "", False, False, (), False, 0, Box(0, 0)) for label in labels]
    try:
        row = match_row(wanted, rows, "label", "")
    except UnknownModel:
        return None
    return None if row is None else rows.index(row)


# -- the page --------------------------------------------------------------------------------------------------------


def _args(page: TabSession) -> tuple[JSON, JSON]:
    sel: JSONObject = {k: list(page.t.selectors.get(k, ())) for k in KEYS}
    return sel, page.t.shadow_dom


async def _rows(page: TabSession) -> list[Row]:
    got = await page.script(CHOICES, "rows", *_args(page), None)
    if not isinstance(got, list):
        raise BadExtensionReply(f"the {page.t.title} menu rows could not be read: {str(got)[:200]}")
    try:
        rows = [r for r in (Row.parse(x) for x in got[:300]) if r is not None]
    except BadPageReport as exc:
        raise BadExtensionReply(f"the {page.t.title} menu rows could not be read: {exc}") from exc
    # A row the plan does not open says so in words, not aria-disabled (Claude's and Grok's "Upgrade": the captures'
    # provenance notes).
    locked = [_norm(label) for label in page.t.labels.get("pickerLocked", ())]
    return [attrs.evolve(r, disabled=True) if any(w in _norm(r.detail) for w in locked) else r for r in rows]


async def _chips(page: TabSession) -> list[str]:
    got = await page.script(CHOICES, "chips", *_args(page), None)
    return [str(c)[:200] for c in got[:50]] if isinstance(got, list) else []


async def trigger_box(page: TabSession, entry: str) -> Box | None:
    got = await page.script(CHOICES, "trigger", *_args(page), entry)
    try:
        return Box.parse(got.get("box")) if isinstance(got, dict) else None
    except BadPageReport as exc:
        raise BadExtensionReply(f"the {page.t.title} {entry} could not be read: {exc}") from exc


async def _wait_rows(page: TabSession, more_than: int = 0) -> list[Row]:
    """The open menus' rows, once a menu beyond the first `more_than` shows (within MENU_S); [] if none does."""
    with trio.move_on_after(MENU_S):
        while True:
            rows = await _rows(page)
            if any(r.menu >= more_than for r in rows):
                return rows
            await trio.sleep(POLL_S)
    return []


async def close_menus(page: TabSession) -> None:
    """Escape until no menu is open (a submenu closes first, then its menu)."""
    for _ in range(3):
        if not await _rows(page):
            return
        await page.press_key("Escape")
        with trio.move_on_after(MENU_S / 3):
            while True:
                if not await _rows(page):
                    break
                await trio.sleep(POLL_S)


async def open_menu(page: TabSession, entry: str, what: str) -> list[Row]:
    """Open the menu behind the table's `entry` button; its rows."""
    await close_menus(page)
    box = await trigger_box(page, entry)
    if box is None:
        raise UnknownModel(f"the {page.t.title} page shows no {what}, so nothing can be chosen there; nothing was "
                           "sent", hint=f"Ask without it, or run `ai-bridge doctor --live` (selectors.{entry}).")
    await page.mouse_click(box)
    rows = await _wait_rows(page)
    if not rows:  # a press the page lost (it was still settling): once more, where the trigger is now
        page.log.info("%s: the %s did not open at the first press; pressing again", page.t.title, what)
        # The page may have moved under the press: the debugger's infobar appears when the tab is attached and
        # shrinks the viewport (seen on the fakes: innerHeight 493 → 437), and a thread that grew moves the composer.
        await page.mouse_click(await trigger_box(page, entry) or box)
        rows = await _wait_rows(page)
    if not rows:
        raise UnknownModel(f"the {page.t.title} {what} did not open its menu; nothing was sent",
                           hint="Run `ai-bridge doctor --live` (selectors.menu, selectors.pickerItem).")
    return rows


async def _submenu(page: TabSession, opener: Row) -> list[Row]:
    """Open `opener`'s submenu (hover, then a press: Radix opens on either); the rows of the menus after its own."""
    await page.mouse_click(opener.box)
    rows = await _wait_rows(page, opener.menu + 1)
    return [r for r in rows if r.menu > opener.menu]


def _toggle_labels(t: ProviderTable) -> tuple[str, ...]:
    return t.labels.get("effortToggle", ())


def _is_toggle(t: ProviderTable, row: Row) -> bool:
    return any(_norm(row.label).startswith(_norm(label)) for label in _toggle_labels(t))


def _is_effort_opener(t: ProviderTable, row: Row) -> bool:
    """The row that opens the efforts' submenu (Claude's "Effort"); every other opener opens models."""
    return row.opener and any(_norm(row.label).startswith(_norm(label)) for label in t.labels.get("effortMenu", ()))


def _toggle_wanted(t: ProviderTable, wanted: str) -> bool | None:
    """Whether `wanted` switches the effort toggle on (True) or off (False), or names a row instead (None)."""
    if not _toggle_labels(t):
        return None
    if _norm(wanted) in OFF_WORDS:
        return False
    return True if not t.labels.get("effortMenu") or _norm(wanted) in ON_WORDS else None


def _choices(t: ProviderTable, rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if not r.opener and not _is_toggle(t, r)]


def _on_trigger(t: ProviderTable, rows: list[Row], trigger_label: str) -> list[Row]:
    """`choice_on_trigger` tables (Grok): the main menu's row whose label the trigger shows is the chosen one."""
    if not t.choice_on_trigger or not trigger_label:
        return rows
    return [attrs.evolve(r, checked=True) if r.menu == 0 and not r.opener and _norm(r.label) == _norm(trigger_label)
            else r for r in rows]


async def _open_picker(page: TabSession) -> list[Row]:
    """The picker's menu rows (marked chosen by its trigger where the table says the page marks no row)."""
    label = ""
    if page.t.choice_on_trigger:
        got = await page.script(CHOICES, "trigger", *_args(page), "picker")
        label = str(got.get("label", "")) if isinstance(got, dict) else ""
    return _on_trigger(page.t, await open_menu(page, "picker", "model picker"), label)


async def _models_and_efforts(page: TabSession, rows: list[Row]) -> tuple[list[Row], list[Row]]:
    """The picker's models and efforts. Where its menu opens submenus of models (ChatGPT's pill), they hold the models
    and the main menu's choices are the efforts; without one (the header picker, Gemini, Claude) the main menu's
    choices are the models. A table with an effort menu (Claude's "Effort" submenu) has that submenu's rows as its
    efforts, and a table with an effort switch (Gemini's Extended thinking, Claude's Thinking) that row too."""
    t = page.t
    main = [r for r in _choices(t, rows) if r.menu == 0]
    openers = [r for r in rows if r.opener and r.menu == 0]
    model_openers = [r for r in openers if not _is_effort_opener(t, r)]
    effort_openers = [r for r in openers if _is_effort_opener(t, r)]
    models = [r for o in model_openers for r in _choices(t, await _submenu(page, o))] if model_openers else main
    toggles = [r for r in rows if _is_toggle(t, r) and r.menu == 0]
    if effort_openers:
        return models, [*_choices(t, await _submenu(page, effort_openers[0])), *toggles]
    if _toggle_labels(t):
        return models, toggles
    return models, main if model_openers else []


async def _choose_model(page: TabSession, wanted: str) -> None:
    rows = await open_menu(page, "picker", "model picker")
    row = match_row(wanted, [r for r in _choices(page.t, rows) if r.menu == 0], "model", page.t.title)
    offered = [r.label for r in _choices(page.t, rows) if r.menu == 0]
    if row is None:
        for opener in [r for r in rows if r.opener and r.menu == 0 and not _is_effort_opener(page.t, r)]:
            sub = _choices(page.t, await _submenu(page, opener))
            offered += [r.label for r in sub]
            if (row := match_row(wanted, sub, "model", page.t.title)) is not None:
                break
            await page.press_key("Escape")  # this submenu did not have it: back to the main menu
    if row is None:
        await close_menus(page)
        raise UnknownModel(f"{page.t.title} offers no model {wanted!r}; its picker shows: "
                           f"{', '.join(dict.fromkeys(offered))}",
                           hint="Use one of these names (any case; the start of a name or a whole word is enough). "
                           "The names are the site's own. Nothing was sent.")
    await _press(page, row, "model", wanted)


async def _choose_effort(page: TabSession, wanted: str) -> None:
    rows = await open_menu(page, "picker", "model picker")
    toggles = [r for r in rows if _is_toggle(page.t, r)]
    on = _toggle_wanted(page.t, wanted)
    if on is not None:
        if not toggles:
            await close_menus(page)
            raise UnknownModel(f"the {page.t.title} picker shows no {_toggle_labels(page.t)[0]!r} switch, so the "
                               f"effort {wanted!r} cannot be chosen; nothing was sent",
                               hint="Ask without effort, or with a model that offers it.")
        if toggles[0].checked != on:
            await _press(page, toggles[0], "effort", wanted, checked=on)
        else:
            await close_menus(page)
        return
    if opener := next((r for r in rows if r.menu == 0 and _is_effort_opener(page.t, r)), None):
        # Claude: the efforts are a submenu of the picker ("Effort" → Low … Max).
        tiers = _choices(page.t, await _submenu(page, opener))
        row = match_row(wanted, tiers, "effort", page.t.title)
        if row is None:
            await close_menus(page)
            raise UnknownModel(f"{page.t.title} offers no effort {wanted!r}; its Effort menu shows: "
                               f"{', '.join(r.label for r in tiers)}",
                               hint="Use one of these (any case), or \"thinking\" / \"off\" for the Thinking switch. "
                               "Nothing was sent.")
        await _press(page, row, "effort", wanted)
        return
    tiers = [r for r in _choices(page.t, rows) if r.menu == 0]
    row = match_row(wanted, tiers, "effort", page.t.title)
    if row is None:
        await close_menus(page)
        raise UnknownModel(f"{page.t.title} offers no effort {wanted!r}; its picker shows: "
                           f"{', '.join(r.label for r in tiers)}",
                           hint="Use one of these tiers (any case). The names are the site's own. Nothing was sent.")
    await _press(page, row, "effort", wanted)


def _tool_row(t: ProviderTable, tool: str, rows: Sequence[Row]) -> Row | None:
    for label in t.labels.get(TOOL_LABELS[tool], ()):
        for r in rows:
            if _norm(r.label) == _norm(label) or _norm(r.label).startswith(_norm(label)):
                return r
    return None


async def _find_tool(page: TabSession, tool: str) -> tuple[Row | None, list[Row]]:
    """Open the tools menu and find `tool`'s row (searching for it where the menu lists its tools only when searched
    for: ChatGPT, July 2026); the menu stays open. The row (None: not offered) and the rows the menu showed."""
    rows = await open_menu(page, "toolsMenu", "tools menu")
    row = _tool_row(page.t, tool, rows)
    if row is None and (search := await trigger_box(page, "toolSearch")) is not None:
        await page.mouse_click(search)
        await page.insert_text(page.t.labels[TOOL_LABELS[tool]][0], focus_input=False)
        with trio.move_on_after(MENU_S):
            while True:
                if (row := _tool_row(page.t, tool, await _rows(page))) is not None:
                    break
                await trio.sleep(POLL_S)
    return row, rows


async def _choose_tool(page: TabSession, tool: str) -> None:
    row, rows = await _find_tool(page, tool)
    if row is None:
        await close_menus(page)
        raise UnknownModel(f"the {page.t.title} tools menu offers no {tool!r}; it shows: "
                           f"{', '.join(r.label for r in rows)}", hint="Nothing was sent.")
    if row.checked:
        await close_menus(page)
        return
    await _press(page, row, "tool", tool)


async def _press(page: TabSession, row: Row, what: str, wanted: str, *, checked: bool = True) -> None:
    if row.disabled:
        await close_menus(page)
        raise UnknownModel(f"{page.t.title} shows the {what} {row.label!r} but it cannot be chosen now (disabled); "
                           "nothing was sent", hint="Your plan or this conversation may not offer it.")
    await page.mouse_click(row.box)
    page.log.info("%s: chose the %s %r (asked for %r)", page.t.title, what, row.label, wanted)
    with trio.move_on_after(MENU_S):  # a choice closes its menu; a switch may leave it open, checked
        while True:
            rows = await _rows(page)
            if not rows or any(r.label == row.label and r.checked == checked for r in rows):
                break
            await trio.sleep(POLL_S)
    await close_menus(page)


# -- reading back ----------------------------------------------------------------------------------------------------


async def shown(page: TabSession, *, tools: bool) -> Choice:
    """What the page shows chosen now: the picker's checked rows (its submenus' too) and, if `tools`, the tools'
    chips (else the tools menu's checked rows)."""
    offered = await offered_now(page, tools=tools)
    return offered.current


async def offered_safely(page: TabSession) -> Offered:
    """`offered_now` for a report: what could not be read is said in `problem`, never raised."""
    try:
        return await offered_now(page)
    except UnknownModel as exc:
        return Offered(problem=exc.message)


async def offered_now(page: TabSession, *, tools: bool = True) -> Offered:
    """Open the picker (and its submenus) and the tools menu, read them, close them: nothing is chosen."""
    t = page.t
    model_rows: list[Row] = []
    effort_rows: list[Row] = []
    if t.selectors.get("picker"):
        rows = await _open_picker(page)
        model_rows, effort_rows = await _models_and_efforts(page, rows)
        await close_menus(page)
    tool_rows: list[Row] = []
    if tools and t.selectors.get("toolsMenu"):
        for name in (n for n, key in TOOL_LABELS.items() if t.labels.get(key)):
            try:
                row, _ = await _find_tool(page, name)
            finally:
                await close_menus(page)
            if row is not None:
                tool_rows.append(row)
    chips = await _chips(page)
    model = next((r.label for r in model_rows if r.checked), "")
    # Every effort row that is on: a tier and a switch may both be (Claude's "High, Thinking").
    effort = ", ".join(dict.fromkeys(r.label for r in effort_rows if r.checked))
    on = [name for name in TOOL_LABELS if _tool_on(t, name, chips, tool_rows)]
    return Offered(tuple(r.offered() for r in model_rows), tuple(r.offered() for r in effort_rows),
                   tuple(r.offered() for r in tool_rows), Choice(model, effort, tuple(on)))


def _tool_on(t: ProviderTable, tool: str, chips: Sequence[str], rows: Sequence[Row]) -> bool:
    # A chip names its tool in whole words: ChatGPT's "Deep research, click to remove" is not web search's "Search".
    labels = [re.compile(rf"(?<!\w){re.escape(_norm(label))}(?!\w)") for label in t.labels.get(TOOL_LABELS[tool], ())]
    if any(label.search(_norm(chip)) for chip in chips for label in labels):
        return True
    row = _tool_row(t, tool, rows)
    return row is not None and row.checked


# -- the whole choice ------------------------------------------------------------------------------------------------


def check_names(t: ProviderTable, want: Choice) -> None:
    """Before the page is touched: tools this site does not have at all."""
    for tool in want.tools:
        if tool not in TOOL_LABELS or not t.labels.get(TOOL_LABELS[tool]):
            have = [name for name, key in TOOL_LABELS.items() if t.labels.get(key)]
            raise UnknownModel(f"{t.title} has no tool {tool!r}; it has: {', '.join(have) or 'none'}",
                               hint="Nothing was sent.")


async def choose(page: TabSession, want: Choice) -> Choice:
    """Choose `want` on the page and read it back: what the page shows chosen (the result's `chosen`). Raises
    `UnknownModel` (a name the page does not offer) or `ChoiceUnverified` (the page does not show the choice)."""
    check_names(page.t, want)
    if want.model:
        await _choose_model(page, want.model)
    if want.effort:
        await _choose_effort(page, want.effort)
    for tool in want.tools:
        await _choose_tool(page, tool)
    got = await shown(page, tools=bool(want.tools))
    missing = _unconfirmed(page.t, want, got)
    if missing:
        shows = ", ".join(f"{k} {v!r}" for k, v in got.as_json().items() if v) or "no choice at all"
        raise ChoiceUnverified(f"{page.t.title} does not show the {' and the '.join(missing)} chosen after choosing "
                               f"it; the page shows {shows}. Nothing was sent",
                               hint="The site may have ignored the click or changed its picker: check the tab, run "
                               "`ai-bridge models` to see what it offers, or ask without this choice.")
    return got


def _unconfirmed(t: ProviderTable, want: Choice, got: Choice) -> list[str]:
    missing = []
    if want.model and (not got.model or match_label(want.model, [got.model]) is None):
        missing.append(f"model {want.model!r}")
    if want.effort:
        shown = [part.strip() for part in got.effort.split(",") if part.strip()]
        if (on := _toggle_wanted(t, want.effort)) is not None:
            switched = any(_norm(part).startswith(_norm(label)) for part in shown for label in _toggle_labels(t))
            if switched != on:
                missing.append(f"effort {want.effort!r}")
        elif not shown or match_label(want.effort, shown) is None:
            # The header picker (no submenu) shows one choice: the effort row is the model row.
            if not (got.model and match_label(want.effort, [got.model]) is not None):
                missing.append(f"effort {want.effort!r}")
    missing += [f"tool {tool!r}" for tool in want.tools if tool not in got.tools]
    return missing
