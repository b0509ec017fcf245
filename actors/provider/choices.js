// Pickers and tools menus (issue 34), run in ai-bridge's isolated world with the table's selectors as
// values. Read only: the clicks are real mouse events the server sends at the boxes this returns.
//   'trigger' (arg: a selector entry, e.g. 'picker', 'toolsMenu') -> {box, label, aria, expanded} of the first
//             shown element the entry names, or null
//   'rows'    -> [{label, detail, checked, opener, kind, ids, disabled, menu, box}]: the rows of every open menu, menus
//             in document order (a submenu comes after the menu that opened it), rows in order
//   'chips'   -> [text]: the tool chips shown ("Deselect Deep Research")
// A row's label is its own label element (the table's `pickerLabel`), else the text of the element holding its first
// text: never the whole row ("GPT-5.4" not "GPT-5.4Leaving on July 23"; "3.1 Pro" not "3.1 ProSelected").
// Searched in open shadow roots too when `shadow` is set (Gemini's 2025 page).
function aibChoices(op, sel, shadow, arg) {
  const roots = () => {
    const out = [document];
    if (!shadow) return out;
    for (let i = 0; i < out.length; i++) {
      for (const el of out[i].querySelectorAll('*')) if (el.shadowRoot) out.push(el.shadowRoot);
    }
    return out;
  };
  // Every element any of the selectors names, once, in document order.
  const union = (list, scopes) => {
    const seen = new Set();
    for (const s of list || []) {
      for (const r of scopes) {
        let hits;
        try { hits = r.querySelectorAll(s); } catch { break; }
        for (const el of hits) seen.add(el);
      }
    }
    return [...seen].sort((a, b) => (a === b ? 0 : a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
  };
  const first = (list) => {
    for (const s of list || []) {
      for (const r of roots()) {
        let hits;
        try { hits = r.querySelectorAll(s); } catch { break; }
        const el = [...hits].find(shown);
        if (el) return el;
      }
    }
    return null;
  };
  const shown = (el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden';
  };
  const box = (el) => {
    const r = el.getBoundingClientRect();
    return { x: r.left + r.width / 2, y: r.top + r.height / 2, width: r.width, height: r.height };
  };
  const squash = (t) => (t || '').replace(/\s+/g, ' ').trim();
  const ICONISH = 'mat-icon, svg, [class*="icon"], [aria-hidden="true"]';
  const labelOf = (row) => {
    for (const s of sel.pickerLabel || []) {
      let el = null;
      try { el = row.querySelector(s); } catch { continue; }
      if (el && squash(el.textContent)) return squash(el.textContent);
    }
    const walker = document.createTreeWalker(row, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const holder = n.parentElement;
      if (!squash(n.data) || !holder || (holder !== row && holder.closest(ICONISH) && row.contains(holder.closest(ICONISH)))) continue;
      return squash(holder === row ? n.data : holder.textContent);
    }
    return squash(row.getAttribute('aria-label'));
  };
  const matchesAny = (el, list) => (list || []).some((s) => { try { return el.matches(s) || !!el.querySelector(s); } catch { return false; } });
  if (op === 'trigger') {
    const el = first(sel[arg]);
    if (!el) return null;
    return {
      box: box(el), label: squash(el.innerText || el.textContent).slice(0, 200),
      aria: squash(el.getAttribute('aria-label')).slice(0, 300), expanded: el.getAttribute('aria-expanded') === 'true',
    };
  }
  if (op === 'rows') {
    const menus = union(sel.menu, roots()).filter(shown);
    const isMenu = (el) => (sel.menu || []).some((s) => { try { return el.matches(s); } catch { return false; } });
    const menuOf = (row) => {  // a row belongs to its closest menu (a submenu may be nested in its opener)
      for (let n = row.parentElement; n; n = n.parentElement) if (isMenu(n)) return n;
      return null;
    };
    const out = [];
    menus.forEach((menu, index) => {
      for (const row of union(sel.pickerItem, [menu])) {
        if (menuOf(row) !== menu || !shown(row)) continue;
        const label = labelOf(row);
        if (!label) continue;
        const whole = squash(row.innerText || row.textContent);
        const popup = (row.getAttribute('aria-haspopup') || '').toLowerCase();
        out.push({
          label: label.slice(0, 200),
          detail: squash(whole.startsWith(label) ? whole.slice(label.length) : whole.replace(label, '')).slice(0, 200),
          checked: row.getAttribute('aria-checked') === 'true' || row.getAttribute('data-state') === 'checked'
            || matchesAny(row, sel.pickerChecked),
          opener: popup === 'menu' || popup === 'true' || row.hasAttribute('data-has-submenu'),
          kind: row.getAttribute('role') || row.tagName.toLowerCase(),
          ids: ['data-mode-id', 'data-testid', 'data-test-id'].map((a) => row.getAttribute(a)).filter(Boolean),
          disabled: row.getAttribute('aria-disabled') === 'true' || row.hasAttribute('disabled'),
          menu: index,
          box: box(row),
        });
      }
    });
    return out;
  }
  if (op === 'chips') {
    return union(sel.toolChip, roots()).filter(shown)
      .map((el) => squash(el.getAttribute('aria-label') || el.innerText || el.textContent).slice(0, 200))
      .filter(Boolean);
  }
  throw new Error('aibChoices: unknown op ' + op);
}
