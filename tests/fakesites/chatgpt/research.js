// Fake ChatGPT Deep Research widget, run in its shell page on connector-openai-deep-research.web-sandbox.
// oaiusercontent.com (research.html; bundled after common/markdown.js). As awkward as the real one:
// - the widget renders into a nested same-origin about:blank iframe#root made here, not into the shell's own body,
//   and the nested document carries an inline script body (NX deep-research-frame.ts: the nested body's raw
//   textContent was megabytes of inline scripts);
// - the plan card (agbrowse's live probe, 2026-06-15): a title, the plan's rows, buttons Edit / Cancel / Start and
//   "Plan starts in NN seconds."; the countdown's end starts it as Start does;
// - progress (oracle's and agbrowse's markers): "Researching...", then lines such as "Reading sources" with text that
//   reads like an answer ("The answer is probably ...");
// - done: "Research completed", counter lines ("32 searches", "3 citations"), a "Deep research report" heading
//   (oracle src/browser/actions/deepResearch.ts), another counter line ("2 sources") under it, then the report, which
//   renders in three parts a moment apart (render lag). Citations are links (their real markup is not captured: a
//   guess).
// The task id comes in the frame's URL (the real src carries app/locale/deviceType only: ours adds `task`).

const TASK = new URLSearchParams(location.search).get('task') || '';
const root = document.createElement('iframe');
root.id = 'root';
document.body.append(root);
const doc = root.contentDocument;
doc.open();
doc.write('<!DOCTYPE html><html><head><style>body{margin:8px;font:14px/1.4 system-ui,sans-serif}'
  + '.plan-row{margin:2px 0}.counter{color:#666;font-size:12px}</style></head><body>'
  + '<main id="widget"></main><script>window.__widgetBundle = "' + 'x'.repeat(20000) + '";</' + 'script></body></html>');
doc.close();
const widget = doc.getElementById('widget');

function el(tag, attrs, ...children) {
  const e = doc.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
// Plain markup for the report (the real report's markup is not captured): citations are links.
const HOOKS = {
  attrs: () => '', listStart: (start) => (start !== 1 ? ` start="${start}"` : ''),
  open: (k) => ({ strong: '<strong>', em: '<em>', s: '<del>' }[k]), close: (k) => ({ strong: '</strong>', em: '</em>', s: '</del>' }[k]),
  codeInline: (html) => `<code>${html}</code>`,
  linkOpen: (href) => `<a href="${esc(href)}" target="_blank" rel="noopener">`, linkClose: () => '</a>',
  mathInline: (tex) => `<code>${esc(tex)}</code>`, mathBlock: (tex) => `<pre>${esc(tex)}</pre>`,
  cite: (label, url) => ` <a class="dr-citation" href="${esc(url)}" target="_blank" rel="noopener">${esc(label)}</a>`,
  codeBlock: (lang, code) => `<pre><code>${esc(code)}</code></pre>`,
  tableOpen: () => '<table>', tableClose: () => '</table>',
  cellOpen: (tag, align) => `<${tag}${align ? ` style="text-align: ${align};"` : ''}>`, cellClose: (tag) => `</${tag}>`,
};

let shown = '';
let parts = 0;
const PROGRESS = ['Researching...', 'Searching the web', 'Reading sources: the answer is probably in the first '
  + 'three papers, which agree on most of it.', 'Considering what the sources say', 'Writing the report'];

function planCard(state) {
  const start = el('button', { type: 'button', class: 'btn btn-primary', onclick: () => post(true) }, 'Start');
  return el('section', { class: 'plan-card' },
    el('h2', {}, 'Research plan'),
    ...state.steps.map((s) => el('div', { class: 'plan-row' }, s)),
    el('div', { class: 'plan-actions' }, el('button', { type: 'button', class: 'btn' }, 'Edit'),
      el('button', { type: 'button', class: 'btn' }, 'Cancel'), start),
    el('p', { class: 'countdown' }, `Plan starts in ${state.countdownS} seconds.`));
}

function render(state) {
  const key = state.phase + ':' + (state.countdownS ?? state.step ?? '');
  if (state.phase !== 'done' && key === shown) return;
  if (state.phase === 'plan') {
    widget.replaceChildren(planCard(state));
  } else if (state.phase === 'researching') {
    widget.replaceChildren(el('div', { class: 'status' }, 'Researching...'),
      ...PROGRESS.slice(1, 1 + Math.min(state.step + 1, PROGRESS.length - 1)).map((p) => el('div', { class: 'activity' }, p)));
  } else if (state.phase === 'done') {
    if (shown.startsWith('done') && parts >= 3) return;
    // The report renders in parts: the first poll that sees it done shows a third, then the rest comes.
    const blocks = state.report.split(/\n\n+/);
    parts = shown.startsWith('done') ? parts + 1 : 1;
    const upto = Math.ceil(blocks.length * Math.min(parts, 3) / 3);
    const report = el('article', { class: 'report' });
    report.innerHTML = renderMarkdown(blocks.slice(0, upto).join('\n\n'), { hooks: HOOKS });
    widget.replaceChildren(
      el('div', { class: 'status' }, 'Research completed'),
      el('div', { class: 'counter' }, `${state.searches} searches`),
      el('div', { class: 'counter' }, `${state.citations} citations`),
      el('h1', { class: 'report-title' }, 'Deep research report'),
      el('div', { class: 'counter' }, '2 sources'),
      report);
  }
  shown = key;
}

async function post(start) {
  const r = await fetch('/dr/task/' + encodeURIComponent(TASK), { method: start ? 'POST' : 'GET' });
  if (r.ok) render(await r.json());
}

async function poll() {
  try { await post(false); } catch (e) { /* the next poll tries again */ }
  setTimeout(poll, 300);
}
poll();
