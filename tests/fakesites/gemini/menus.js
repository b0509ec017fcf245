// Gemini's menus: the mode picker, the tools and the upload menu. Bundled after app.js (whose boot awaits a fetch
// before it builds the composer, so these consts are set by then).
//
// Shape 2026, as the July 2026 captures show them (a signed-in session, redacted):
// - The mode picker (gemini-2607-model-menu-open.html): button[data-test-id=bard-mode-menu-button]
//   [aria-label="Open mode picker, currently Pro"] "Pro"; its menu (in the cdk overlay) holds gem-menu-item
//   [role=menuitem][data-mode-id][data-test-id=bard-mode-option-<id>][data-active][aria-disabled] rows, each a
//   gem-menu-item-content > span.label "3.1 Pro" (+ span "Selected" when chosen). The chosen row is marked by
//   gem-menu-item-content.selected; data-active is only the keyboard highlight (the first row has it).
// - Extended thinking (gemini-2607-extended-thinking.html): a gem-menu-item in the same menu whose content is
//   .selected while it is on; the picker then reads "Pro Extended". A switch: the menu stays open. Offered with Pro
//   only (a guess: the capture shows it with Pro).
// - The composer has no file input at rest (gemini-2607-composer-idle.html). "Upload and tools"
//   (gemini-2607-file-input-ready.html) opens a menu: button[role=menuitem][data-test-id=
//   local-images-files-uploader-button] "Upload files", uploader-drive-button "Add from Drive". Pressing "Upload
//   files" creates input[type=file][name=Filedata][multiple][hidden] and opens a chooser with it. PageOptions
//   uploadChooser "detached" keeps the input out of the document (only the chooser reaches it).
// - Tools (no capture of the menu's tools part; README: menuitemcheckbox rows, a "Deselect …" chip when on): Deep
//   Research, Deep Think, Canvas, Create image after a separator in the same menu; one tool at a time. The row ids
//   and the chip's markup are guesses.
// Shape 2025 (the spec's picture): bard-mode-switcher > button "Fast" with a pill; menu rows button[role=menuitem]
// .bard-mode-list-button (.is-selected, aria-checked) with a title and a description. No tools menu.
// PageOptions.pickerIgnoresClicks: a row's click closes the menu and changes nothing (an unconfirmed choice).

const GEMINI_MENU_TEXT = {
  en: {
    currently: (l) => `Open mode picker, currently ${l}`, selected: 'Selected', extended: 'Extended thinking',
    extendedShort: 'Extended', uploadTools: 'Upload and tools', uploadFiles: 'Upload files',
    uploadFilesAria: 'Upload files. Documents, data, code files', drive: 'Add from Drive',
    driveAria: 'Add from Drive. Sheets, Docs, Slides', deselect: (n) => `Deselect ${n}`,
    tools: [['deep-research', 'Deep Research'], ['deep-think', 'Deep Think'], ['canvas', 'Canvas'], ['image', 'Create image']],
  },
  // Japanese and German rows are guesses (no capture): the model names stay the site's product names.
  ja: {
    currently: (l) => `モード選択ツールを開く、現在は ${l}`, selected: '選択済み', extended: '拡張思考', extendedShort: '拡張',
    uploadTools: 'アップロードとツール', uploadFiles: 'ファイルをアップロード', uploadFilesAria: 'ファイルをアップロード。ドキュメント、データ、コード ファイル',
    drive: 'ドライブから追加', driveAria: 'ドライブから追加。スプレッドシート、ドキュメント、スライド', deselect: (n) => `${n} の選択を解除`,
    tools: [['deep-research', 'Deep Research'], ['deep-think', 'Deep Think'], ['canvas', 'Canvas'], ['image', '画像を作成']],
  },
  de: {
    currently: (l) => `Modusauswahl öffnen, aktuell ${l}`, selected: 'Ausgewählt', extended: 'Erweitertes Denken',
    extendedShort: 'Erweitert', uploadTools: 'Hochladen und Tools', uploadFiles: 'Dateien hochladen',
    uploadFilesAria: 'Dateien hochladen. Dokumente, Daten, Code-Dateien', drive: 'Aus Drive hinzufügen',
    driveAria: 'Aus Drive hinzufügen. Tabellen, Dokumente, Präsentationen', deselect: (n) => `${n} abwählen`,
    tools: [['deep-research', 'Deep Research'], ['deep-think', 'Deep Think'], ['canvas', 'Canvas'], ['image', 'Bild erstellen']],
  },
}[LANG];

const MODES_2026 = [
  { id: 'flash-lite', label: '3.1 Flash-Lite', short: 'Flash-Lite' },
  { id: 'flash', label: '3.5 Flash', short: 'Flash' },
  { id: 'pro', label: '3.1 Pro', short: 'Pro' },
];
const MODES_2025 = {
  en: [['Fast', 'Answers quickly'], ['Thinking', 'Solves complex problems'], ['Pro', 'Thinks longer for advanced math & code']],
  ja: [['高速モード', 'すばやく回答'], ['思考モード', '複雑な問題を解決'], ['Pro', '高度な数学とコードのために長く考える']],
  de: [['Schnell', 'Antwortet schnell'], ['Denken', 'Löst komplexe Probleme'], ['Pro', 'Denkt länger nach']],
}[LANG].map(([label, desc]) => ({ id: label.toLowerCase(), label, short: label, desc }));

// What the page has chosen; the send code reads it (`currentChoice`).
const menuState = {
  mode: (NEW ? MODES_2026 : MODES_2025)[NEW ? 1 : 0], extended: false, tool: null,
  pickerButton: null, chipHost: null, uploadHost: null, uploader: null,
};
const IGNORE_CLICKS = !!BOOT.pickerIgnoresClicks;

function currentChoice() {
  return { mode: NEW ? menuState.mode.id : menuState.mode.label, effort: menuState.extended ? 'extended' : 'standard',
    tools: menuState.tool ? [menuState.tool[0].replace('-', ' ')] : [] };
}

function overlayPane(anchor, cls, ...kids) {
  let overlay = document.querySelector('.cdk-overlay-container');
  if (!overlay) { overlay = h('div', { class: 'cdk-overlay-container' }); document.body.append(overlay); }
  const r = anchor.getBoundingClientRect();
  const pane = h('div', { class: `cdk-overlay-pane ${cls}`, style: `position: fixed; left: ${r.left}px; top: ${Math.max(0, r.top - 260)}px; z-index: 1000; background: #fff; border: 1px solid #ddd;` }, ...kids);
  overlay.append(pane);
  anchor.setAttribute('aria-expanded', 'true');
  return pane;
}

function closeMenus() {
  for (const pane of document.querySelectorAll('.cdk-overlay-container .cdk-overlay-pane')) pane.remove();
  for (const b of document.querySelectorAll('[aria-haspopup="menu"][aria-expanded="true"]')) b.setAttribute('aria-expanded', 'false');
}

document.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') closeMenus(); });
document.addEventListener('pointerdown', (ev) => {
  if (!ev.target.closest('.cdk-overlay-pane, [aria-haspopup="menu"]')) closeMenus();
});

// --- the mode picker ----------------------------------------------------------------------------------------------

function pickerText() {
  return menuState.mode.short + (menuState.extended ? ' ' + GEMINI_MENU_TEXT.extendedShort : '');
}

function renderPicker() {
  const btn = menuState.pickerButton;
  if (!btn) return;
  if (NEW) {
    btn.setAttribute('aria-label', GEMINI_MENU_TEXT.currently(pickerText()));
    btn.querySelector('.mode-label').textContent = pickerText();
  } else {
    btn.querySelector('.mode-label').textContent = menuState.mode.label;
  }
}

function modeSwitcher(ariaLabel) {
  const pill = h('span', { class: 'ng-star-inserted mode-label' }, '');
  const btn = h('button', {
    'aria-label': ariaLabel, 'data-test-id': 'bard-mode-menu-button', 'aria-haspopup': 'menu', type: 'button',
    'aria-expanded': 'false', class: 'mdc-button mat-mdc-button-base mat-mdc-menu-trigger input-area-switch',
    onclick: (ev) => toggleModeMenu(ev.currentTarget),
  }, h('span', { class: 'mdc-button__label' }, h('div', {
    'data-test-id': 'logo-pill-label-container', class: 'logo-pill-label-container input-area-switch-label',
  }, pill, NEW ? fontIcon('keyboard_arrow_down', 'dropdown-icon gds-icon-l') : null)));
  menuState.pickerButton = btn;
  renderPicker();
  return h('bard-mode-switcher', {}, btn, h('mat-menu', { 'data-test-id': 'desktop-nested-mode-menu' }));
}

function toggleModeMenu(btn) {
  if (document.querySelector('.cdk-overlay-container .mode-menu-pane')) { closeMenus(); return; }
  closeMenus();
  if (!NEW) {
    overlayPane(btn, 'mode-menu-pane', h('div', { class: 'mat-mdc-menu-panel gds-mode-switch-menu', role: 'menu', tabindex: '-1' },
      h('div', { class: 'mat-mdc-menu-content' }, ...MODES_2025.map((md) => h('button', {
        role: 'menuitem', class: 'mat-mdc-menu-item bard-mode-list-button' + (md === menuState.mode ? ' is-selected' : ''),
        'data-test-id': 'bard-mode-option-' + md.id, 'aria-checked': String(md === menuState.mode),
        onclick: () => { if (!IGNORE_CLICKS) menuState.mode = md; renderPicker(); closeMenus(); },
      }, h('span', { class: 'mat-mdc-menu-item-text' }, h('div', { class: 'mode-title gds-label-l' }, md.label),
        h('div', { class: 'mode-desc gds-body-s' }, md.desc)))))));
    return;
  }
  const T = GEMINI_MENU_TEXT;
  const content = (label, selected) => h('gem-menu-item-content', { class: selected ? 'selected' : null },
    h('span', { class: 'label' }, label), selected ? h('span', { class: 'selected-text' }, T.selected) : null);
  const rows = MODES_2026.map((md, i) => h('gem-menu-item', {
    role: 'menuitem', 'data-mode-id': md.id, 'data-test-id': 'bard-mode-option-' + md.id, tabindex: '0',
    'data-active': String(i === 0), 'aria-disabled': 'false',
    onclick: () => {
      if (!IGNORE_CLICKS) { menuState.mode = md; if (md.id !== 'pro') menuState.extended = false; }
      renderPicker();
      closeMenus();
    },
  }, content(md.label, md === menuState.mode)));
  const proOnly = menuState.mode.id !== 'pro';
  const extended = h('gem-menu-item', {
    role: 'menuitem', 'data-test-id': 'bard-mode-extended-thinking', tabindex: '0', 'aria-disabled': String(proOnly),
    onclick: (ev) => {
      if (proOnly) return;
      if (!IGNORE_CLICKS) menuState.extended = !menuState.extended;
      renderPicker();
      ev.currentTarget.replaceChildren(content(T.extended, menuState.extended));  // a switch: the menu stays open
    },
  }, content(T.extended, menuState.extended));
  overlayPane(btn, 'mode-menu-pane', h('div', { class: 'mat-mdc-menu-panel gds-mode-switch-menu', role: 'menu', tabindex: '-1' },
    h('div', { class: 'mat-mdc-menu-content' }, ...rows, h('div', { role: 'separator', class: 'menu-divider' }), extended)));
}

// --- "Upload and tools" (2026) -------------------------------------------------------------------------------------

function uploadAndTools(host, uploader) {
  menuState.uploadHost = host;
  menuState.uploader = uploader;
  return matButton(GEMINI_MENU_TEXT.uploadTools, 'add_2', {
    'aria-haspopup': 'menu', 'aria-expanded': 'false', type: 'button',
    onclick: (ev) => toggleToolsMenu(ev.currentTarget),
  });
}

function toggleToolsMenu(btn) {
  if (document.querySelector('.cdk-overlay-container .tools-menu-pane')) { closeMenus(); return; }
  closeMenus();
  const T = GEMINI_MENU_TEXT;
  const item = (attrs, label) => h('button', { type: 'button', class: 'mat-mdc-menu-item', 'aria-disabled': 'false', ...attrs },
    h('span', { class: 'mat-mdc-menu-item-text' }, label));
  const tools = T.tools.map(([id, label]) => item({
    role: 'menuitemcheckbox', 'data-test-id': 'toolbox-drawer-item-' + id,
    'aria-checked': String(!!menuState.tool && menuState.tool[0] === id),
    onclick: () => { if (!IGNORE_CLICKS) menuState.tool = [id, label]; renderToolChip(); closeMenus(); },
  }, label));
  overlayPane(btn, 'tools-menu-pane', h('div', { role: 'menu', class: 'mat-mdc-menu-panel toolbox-drawer-menu', tabindex: '-1' },
    item({ role: 'menuitem', 'data-test-id': 'local-images-files-uploader-button', 'aria-label': T.uploadFilesAria,
      onclick: () => { closeMenus(); openChooser(); } }, T.uploadFiles),
    item({ role: 'menuitem', 'data-test-id': 'uploader-drive-button', 'aria-label': T.driveAria, onclick: () => closeMenus() }, T.drive),
    h('div', { role: 'separator', class: 'menu-divider' }), ...tools));
}

function renderToolChip() {
  const host = menuState.chipHost;
  if (!host) return;
  host.replaceChildren();
  if (!menuState.tool) return;
  const [, label] = menuState.tool;
  host.append(h('button', {
    type: 'button', class: 'toolbox-drawer-item-deselect-button mdc-button', 'aria-label': GEMINI_MENU_TEXT.deselect(label),
    onclick: () => { menuState.tool = null; renderToolChip(); },
  }, fontIcon('close', 'gds-icon-s'), h('span', { class: 'toolbox-drawer-button-label' }, label)));
}

// The real page makes its file input when "Upload files" is pressed, and opens a chooser with it.
function openChooser() {
  let input = document.querySelector('input[type="file"][name="Filedata"]');
  if (!input) {
    input = h('input', { type: 'file', name: 'Filedata', multiple: true, hidden: true, accept: BOOT.uploadAccept || null });
    if (BOOT.uploadChooser !== 'detached') menuState.uploadHost.append(input);
    menuState.uploader.watch(input);
  }
  input.click();
}

// The quota notice: gemini-chat-simple.html holds the element (empty); its text is not captured (a guess).
function showQuotaNotice(host) {
  if (!document.querySelector('freemium-file-upload-quota-exceeded-disclaimer')) {
    host.before(h('freemium-file-upload-quota-exceeded-disclaimer', {},
      h('div', { class: 'disclaimer-text' }, "You've reached your file upload limit. Try again later.")));
  }
  return true;
}

// --- a Deep Research plan (a capture of July 28, 2026 in nuncaeslupus/ai-chat-exporter, as the research notes give it)
// The first answer of a Deep Research ask is a plan inside the response: deep-research-confirmation-widget with a
// heading, the steps, a time estimate, "Edit the research plan" and "Start research" buttons (gem-button[data-test-id=
// edit-button|confirm-button] > button). The response also gets its feedback buttons (a completion rule that fires on
// them takes the plan for the answer). Pressing Start makes both buttons disabled and inert, adds a user turn "Start
// research", and the report comes as the next response (a chip and the report panel: ReportPanel in app.js).
function showResearchPlan(response, planId, steps) {
  const start = h('button', { type: 'button', 'aria-label': 'Start research', class: 'mdc-button mat-mdc-button-base' }, 'Start research');
  const edit = h('button', { type: 'button', 'aria-label': 'Edit the research plan', class: 'mdc-button mat-mdc-button-base' }, 'Edit plan');
  const widget = h('deep-research-confirmation-widget', { class: 'ng-star-inserted' },
    h('div', { role: 'heading', 'aria-level': '3', 'data-test-id': 'title' }, 'Research plan'),
    h('div', { 'data-test-id': 'research-steps' }, ...steps.map((step, i) => h('div', { class: 'research-step' },
      h('span', { role: 'img', 'aria-label': `The plan has ${steps.length} steps, step ${i + 1}` }), h('span', {}, step)))),
    h('div', { 'data-test-id': 'time-estimation-message' }, 'Ready in a few mins'),
    h('gem-button', { 'data-test-id': 'edit-button' }, edit),
    h('gem-button', { 'data-test-id': 'confirm-button' }, start));
  start.addEventListener('click', () => {
    if (state.streaming) return;
    for (const b of [start, edit]) { b.disabled = true; b.setAttribute('inert', ''); }
    app.history.addUserQuery('Start research');
    streamAnswer({ prompt: 'Start research', conversation: state.conversation, startResearch: planId });
  });
  response.content.after(widget);
}
