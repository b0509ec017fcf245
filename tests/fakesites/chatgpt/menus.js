// ChatGPT's model picker, in its two 2026 shapes. Bundled after app.js (whose boot awaits a fetch before it builds
// the page, so these consts are set by then).
//
// PageOptions.picker "pill" (default), as captured in July 2026 (chatgpt-2607-model-menu-open.html): no header
// switcher; a composer pill button.__composer-pill[aria-haspopup=menu] shows the effort tier ("High"). Its Radix menu
// (opened by a pointer press, never by a script's click) holds the tiers as div[role=menuitemradio][aria-checked] —
// Instant (with a second span "5.5": the model it runs), Medium, High, and with proPlan Extra High and Pro — then a
// submenu opener div[role=menuitem][aria-haspopup=menu] named after the current model ("GPT-5.6 Sol"). The submenu
// (a second [role=menu], opened by hovering the opener or pressing it) lists the models as menuitemradio rows:
// GPT-5.6 Sol, GPT-5.5, GPT-5.4 (+ "Leaving on July 23"), GPT-5.3, o3. Choosing a row closes every menu.
// PageOptions.picker "header" (Jan 2026, chatgpt-chat-simple.html): header > button[data-testid=
// model-switcher-dropdown-button][aria-label="Model selector, current model is 5.2"] "ChatGPT 5.2", a Radix menu of
// menuitemradio rows Auto / Instant / Thinking / Pro (a title and a description each).
// PageOptions.pickerIgnoresClicks: a row's click closes the menu and changes nothing.

const PILL_TIERS = [
  { id: 'instant', label: 'Instant', detail: '5.5' }, { id: 'medium', label: 'Medium' }, { id: 'high', label: 'High' },
  ...(BOOT.proPlan ? [{ id: 'extra-high', label: 'Extra High' }, { id: 'pro', label: 'Pro' }] : []),
];
const PILL_MODELS = [
  { slug: 'gpt-5-6-sol', label: 'GPT-5.6 Sol' }, { slug: 'gpt-5-5', label: 'GPT-5.5' },
  { slug: 'gpt-5-4', label: 'GPT-5.4', detail: 'Leaving on July 23' }, { slug: 'gpt-5-3', label: 'GPT-5.3' },
  { slug: 'o3', label: 'o3' },
];
const HEADER_MODELS = [
  { label: 'Auto', desc: 'Decides how long to think', slug: '' },
  { label: 'Instant', desc: 'Answers right away', slug: '-instant' },
  { label: 'Thinking', desc: 'Thinks longer for better answers', slug: '-thinking' },
  { label: 'Pro', desc: 'Research-grade intelligence', slug: '-pro' },
];
const PILL = NEW && BOOT.picker !== 'header';
const pickerState = { tier: PILL_TIERS[1], model: PILL_MODELS[0], header: HEADER_MODELS[0] };
const IGNORE_PICKS = !!BOOT.pickerIgnoresClicks;

// What the request carries: the model that will answer (its slug) and the effort tier.
function currentChoice() {
  if (!NEW) return { model: 'auto', effort: null };
  if (!PILL) return { model: 'gpt-' + MODEL.replace(/\./g, '-') + pickerState.header.slug, effort: null };
  // Instant runs on the model its row names (the capture's "5.5"), whatever the submenu says.
  const slug = pickerState.tier.id === 'instant' ? 'gpt-5-5' : pickerState.model.slug;
  return { model: slug, effort: pickerState.tier.id };
}

function closeModelMenu() {
  for (const w of document.querySelectorAll('[data-radix-popper-content-wrapper].model-menu-wrapper')) w.remove();
  for (const b of document.querySelectorAll('.__composer-pill, [data-testid="model-switcher-dropdown-button"], [data-model-submenu]')) {
    b.setAttribute('aria-expanded', 'false');
    b.setAttribute('data-state', 'closed');
  }
}

function popper(anchor, menu, side, kind = 'model-menu-wrapper') {
  const r = anchor.getBoundingClientRect();
  const left = side === 'right' ? r.right + 4 : r.left;
  const top = side === 'right' ? r.top : side === 'above' ? Math.max(0, r.top - 220) : r.bottom + 4;
  const wrapper = h('div', { 'data-radix-popper-content-wrapper': '', class: kind,
    style: `position: fixed; left: ${left}px; top: ${top}px; z-index: 50; min-width: 220px; background: #fff; border: 1px solid #ddd;` }, menu);
  document.body.append(wrapper);
  anchor.setAttribute('aria-expanded', 'true');
  anchor.setAttribute('data-state', 'open');
  return wrapper;
}

const radio = (checked, onSelect, ...spans) => h('div', {
  role: 'menuitemradio', 'aria-checked': String(checked), 'data-state': checked ? 'checked' : 'unchecked',
  class: 'group __menu-item', tabindex: '-1', onclick: onSelect,
}, ...spans);

// --- the composer pill (July 2026) ---------------------------------------------------------------------------------

function composerPill() {
  return h('button', {
    type: 'button', class: '__composer-pill composer-btn', 'aria-haspopup': 'menu', 'aria-expanded': 'false',
    'data-state': 'closed', onpointerdown: (ev) => { if (ev.button === 0) togglePillMenu(ev.currentTarget); },
  }, h('span', { class: 'pill-label' }, pickerState.tier.label));
}

function renderPill() {
  const label = document.querySelector('.__composer-pill .pill-label');
  if (label) label.textContent = pickerState.tier.label;
}

function togglePillMenu(pill) {
  if (document.querySelector('.model-menu-wrapper')) { closeModelMenu(); return; }
  const pick = (apply) => () => { if (!IGNORE_PICKS) apply(); renderPill(); closeModelMenu(); };
  const opener = h('div', {
    role: 'menuitem', 'aria-haspopup': 'menu', 'aria-expanded': 'false', 'data-state': 'closed', 'data-model-submenu': '',
    class: '__menu-item', tabindex: '-1',
  }, h('span', {}, pickerState.model.label));
  let hover = null;
  const openSub = () => {
    clearTimeout(hover);
    if (!opener.isConnected || document.querySelector('.model-submenu')) return;
    popper(opener, h('div', { role: 'menu', 'data-radix-menu-content': '', class: 'popover model-submenu', tabindex: '-1' },
      ...PILL_MODELS.map((m) => radio(m === pickerState.model, pick(() => { pickerState.model = m; }),
        h('span', {}, m.label), m.detail ? h('span', { class: 'text-token-text-tertiary text-xs' }, m.detail) : null))), 'right')
      .classList.add('model-submenu');
  };
  // Radix opens a sub-trigger on hover (after a moment) or on a press.
  opener.addEventListener('pointermove', () => { if (!hover) hover = setTimeout(openSub, 100); });
  opener.addEventListener('pointerleave', () => { clearTimeout(hover); hover = null; });
  opener.addEventListener('click', openSub);
  popper(pill, h('div', { role: 'menu', 'data-radix-menu-content': '', 'data-state': 'open', class: 'popover', tabindex: '-1' },
    ...PILL_TIERS.map((t) => radio(t === pickerState.tier, pick(() => { pickerState.tier = t; }),
      h('span', {}, t.label), t.detail ? h('span', { class: 'text-token-text-tertiary text-xs' }, t.detail) : null)),
    opener), 'above');
}

// --- the header switcher (Jan 2026) --------------------------------------------------------------------------------

function headerSwitcher() {
  return h('button', {
    type: 'button', 'data-testid': 'model-switcher-dropdown-button', 'aria-label': T.modelSelector(MODEL),
    'aria-haspopup': 'menu', 'aria-expanded': 'false', 'data-state': 'closed', class: 'group flex items-center gap-1 brand',
    onpointerdown: (ev) => { if (ev.button === 0) toggleHeaderMenu(ev.currentTarget); },
  }, h('div', {}, 'ChatGPT ', h('span', { class: 'text-token-text-tertiary model-label' }, MODEL)));
}

function toggleHeaderMenu(btn) {
  if (document.querySelector('.model-menu-wrapper')) { closeModelMenu(); return; }
  const name = (mdl) => MODEL + (mdl.slug ? ' ' + mdl.label : '');
  popper(btn, h('div', { role: 'menu', 'data-state': 'open', 'data-radix-menu-content': '', class: 'popover model-menu', tabindex: '-1' },
    h('div', { class: 'menu-heading text-token-text-tertiary' }, 'GPT-' + MODEL),
    ...HEADER_MODELS.map((mdl) => {
      const row = radio(mdl === pickerState.header, () => {
        if (!IGNORE_PICKS) {
          pickerState.header = mdl;
          btn.querySelector('.model-label').textContent = name(mdl);
          btn.setAttribute('aria-label', T.modelSelector(name(mdl)));
        }
        closeModelMenu();
      }, h('div', { class: 'flex flex-col' }, h('div', { class: 'item-label' }, mdl.label),
        h('div', { class: 'item-desc text-token-text-tertiary text-xs' }, mdl.desc)));
      row.setAttribute('data-testid', 'model-switcher-gpt-' + MODEL.replace(/\./g, '-') + mdl.slug);
      return row;
    })), 'below');
}

document.addEventListener('keydown', (ev) => {
  if (ev.key !== 'Escape') return;
  const sub = document.querySelector('.model-submenu');
  if (!sub) { closeModelMenu(); return; }
  sub.remove();  // Escape closes a submenu first, as Radix does
  document.querySelector('[data-model-submenu]')?.setAttribute('aria-expanded', 'false');
});
document.addEventListener('pointerdown', (ev) => {
  if (!ev.target.closest('[data-radix-popper-content-wrapper], .__composer-pill, [data-testid="model-switcher-dropdown-button"]')) closeModelMenu();
});

// --- the "+" menu's tools ------------------------------------------------------------------------------------------
// July 2026 (chatgpt-2607-file-input-ready.html): button#composer-plus-btn "Add files and more" opens a menu of
// div.__menu-item rows: "Upload from computer", "Connect", and a search field "Type to search plugins, files,
// folders & skills". The tools are not rows until searched for (oracle types "Deep research" there when the row is
// missing; agbrowse saw them as rows in June: PageOptions.toolsMenu "rows"). A chosen tool is a composer pill named
// "<tool>, click to remove" (agbrowse's live probe, 2026-06-15); one Escape closes the menu and keeps the pill, a
// second Escape (with no menu open) removes it. Deep research changes the placeholder to "Get a detailed report".
const CHATGPT_TOOLS = [
  { id: 'deep research', label: 'Deep research', pill: 'Deep research', placeholder: 'Get a detailed report' },
  { id: 'web search', label: 'Web search', pill: 'Search' },
  { id: 'image', label: 'Create image', pill: 'Image' },
];
const toolState = { tool: null };

function currentTools() {
  return toolState.tool ? [toolState.tool.id] : [];
}

function renderToolPill() {
  const host = document.querySelector('.composer-tool-pills');
  if (!host) return;
  host.replaceChildren();
  const t = toolState.tool;
  editor?.setAttribute('data-placeholder', t?.placeholder || T.placeholder);
  if (!t) return;
  host.append(h('button', {
    type: 'button', class: '__composer-pill-composite composer-btn', 'aria-label': `${t.pill}, click to remove`,
    onclick: () => { toolState.tool = null; renderToolPill(); },
  }, h('span', {}, t.pill)));
}

function plusMenu(btn) {
  if (document.querySelector('.plus-menu-wrapper')) { closePlusMenu(); return; }
  const rows = h('div', { class: 'plus-menu-rows' });
  const toolRow = (t) => h('div', {
    role: 'menuitemradio', 'aria-checked': String(toolState.tool === t), class: '__menu-item', tabindex: '0',
    onclick: () => { if (!IGNORE_PICKS) toolState.tool = t; renderToolPill(); closePlusMenu(); },
  }, h('span', {}, t.label));
  const search = h('input', {
    type: 'text', class: 'plus-menu-search', placeholder: 'Type to search plugins, files, folders & skills',
    oninput: () => {
      const q = search.value.trim().toLowerCase();
      rows.replaceChildren(...(q ? CHATGPT_TOOLS.filter((t) => t.label.toLowerCase().includes(q)).map(toolRow) : []));
    },
  });
  const menu = h('div', { role: 'menu', 'data-radix-menu-content': '', class: 'popover', tabindex: '-1' },
    h('div', { class: '__menu-item', tabindex: '0', onclick: () => { closePlusMenu(); document.getElementById('upload-files')?.click(); } },
      'Upload from computer'),
    h('div', { class: '__menu-item', tabindex: '0' }, 'Connect'),
    BOOT.toolsMenu === 'rows' ? null : h('div', { class: '__menu-item', tabindex: '0' }, search),
    rows);
  if (BOOT.toolsMenu === 'rows') rows.append(...CHATGPT_TOOLS.map(toolRow));
  popper(btn, menu, 'above', 'plus-menu-wrapper');
}

function closePlusMenu() {
  document.querySelector('.plus-menu-wrapper')?.remove();
  const btn = document.getElementById('composer-plus-btn');
  if (btn) { btn.setAttribute('aria-expanded', 'false'); btn.setAttribute('data-state', 'closed'); }
}

document.addEventListener('keydown', (ev) => {
  if (ev.key !== 'Escape') return;
  if (document.querySelector('.plus-menu-wrapper')) { closePlusMenu(); return; }
  if (toolState.tool && !document.querySelector('.model-menu-wrapper')) { toolState.tool = null; renderToolPill(); }
}, true);
document.addEventListener('pointerdown', (ev) => {
  if (!ev.target.closest('.plus-menu-wrapper, #composer-plus-btn')) closePlusMenu();
});
