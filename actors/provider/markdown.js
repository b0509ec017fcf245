// The answer as the model wrote it: the rendered answer (DOM) back to GFM markdown, in ai-bridge's isolated world.
//
// Turndown (vendor/turndown.js) with its GFM plugin (vendor/turndown-plugin-gfm.js) does the walking; the rules
// below teach it what chatgpt.com and gemini.google.com actually render (see docs/answers.md for the output form):
//   - code blocks: ChatGPT's <pre> with a header (language label, "Copy"/"Run" buttons) and the code in a CodeMirror
//     viewer (older builds: code.language-xxx); Gemini's <code-block> with .code-block-decoration > span (label) and
//     pre > code.code-container; Claude's and Grok's label beside the pre (`labelledCode`). The fence gets the
//     language, never the chrome.
//   - math: KaTeX (TeX in annotation[encoding="application/x-tex"]), Gemini's .math-inline / .math-block[data-math],
//     MathJax <mjx-container>; inline as $…$, display as $$…$$ blocks.
//   - tables with a header row and the alignment of each column (align attribute or inline text-align).
//   - links as [text](url) (ChatGPT's added utm_source=chatgpt.com is taken off; a bare URL stays bare); ChatGPT's
//     citation pills and Perplexity's inline citations become links; Gemini's citation chips carry no URL and are dropped, except in a Deep Research
//     report, whose sources list gives the URLs: its footnotes (sup[data-turn-source-index=N], 1-based) become
//     ` [N](url)` links (`sources` below).
//   - UI inside the answer (buttons, icons, screen-reader labels, thinking panels, table footers) is dropped.
//
// Bundled by actors/provider/actor.py as one function body after the two vendored files; defines only
// window.__aibMarkdown(element, sources?) -> string. It never changes the page: open shadow roots are inlined
// into a copy made in an inert document (no browsing context, so no custom-element constructor of the page runs).

const LANGUAGE_NAMES = {
  // The sites label a code block with a display name; these are the ones whose lower case is not the fence id.
  'c++': 'cpp', 'c#': 'csharp', 'f#': 'fsharp', 'objective-c': 'objectivec', 'plaintext': '', 'plain text': '',
  'code snippet': '', 'code': '',
};

const DROP_TAGS = [
  'script', 'style', 'template', 'noscript', 'button', 'svg', 'mat-icon', 'gem-icon', 'gem-icon-button',
  // Gemini: citation markers and chips (no URL in the page), thinking, the response's own action bar
  'source-footnote', 'sources-carousel-inline', 'source-inline-chips', 'source-inline-chip', 'sources-list',
  'model-thoughts', 'thinking-overlay', 'message-actions',
];
const DROP_CLASSES = [
  'sr-only', 'cdk-visually-hidden', 'table-footer', 'thoughts-container', 'thinking-status', 'thinking-details',
  'thinking-toggle', 'turn-actions', 'katex-html',
];

const PILL = '\uE000'; // where a citation pill was: one space before it, however the page spaced it
const inertDoc = document.implementation.createHTMLDocument('');

// What never reaches the markdown; removed from the copy before Turndown walks it (KaTeX's glyph spans and the
// highlighter's spans are most of an answer's nodes).
const DROP_SELECTOR = [...DROP_TAGS, ...DROP_CLASSES.map((c) => '.' + c), '[aria-hidden="true"]'].join(',');

// A detached copy of `node` in which every open shadow root stands in for its host's children and every <slot>
// for the nodes assigned to it: what the user sees, as a tree Turndown can walk. Subtrees without a shadow host
// or slot are imported whole (native and fast); only the paths down to hosts and slots are copied node by node.
function flatten(node, sources) {
  const manual = new Set();
  const mark = (root) => {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
    for (let el = walker.nextNode(); el; el = walker.nextNode()) {
      if (!el.shadowRoot && el.nodeName !== 'SLOT') continue;
      for (let up = el; up && up !== root && !manual.has(up); up = up.parentNode) manual.add(up);
    }
  };
  const copyOf = (n) => {
    if (n.nodeType === Node.TEXT_NODE) return inertDoc.createTextNode(n.data);
    if (n.nodeType !== Node.ELEMENT_NODE) return null;
    if (!manual.has(n)) return inertDoc.importNode(n, true);
    const copy = inertDoc.importNode(n, false);
    let kids = n.childNodes;
    if (n.shadowRoot) {
      mark(n.shadowRoot);
      kids = n.shadowRoot.childNodes;
    } else if (n.nodeName === 'SLOT') {
      const assigned = n.assignedNodes({ flatten: true });
      if (assigned.length) kids = assigned;
      for (const a of assigned) if (a.nodeType === Node.ELEMENT_NODE) { manual.add(a); mark(a); }
    }
    for (const kid of kids) {
      const c = copyOf(kid);
      if (c) copy.appendChild(c);
    }
    return copy;
  };
  if (node.nodeType === Node.ELEMENT_NODE) manual.add(node);
  mark(node);
  const copy = copyOf(node);
  if (sources && sources.length) {
    // Deep Research footnotes: a link to the source they number, kept out of the drop below.
    for (const sup of copy.querySelectorAll('sup[data-turn-source-index]')) {
      const n = parseInt(sup.getAttribute('data-turn-source-index'), 10);
      const url = Number.isFinite(n) && n >= 1 ? sources[n - 1] : null;
      const holder = sup.closest('source-footnote') || sup;
      if (!url || !holder.parentNode) continue;
      const a = inertDoc.createElement('a');
      a.setAttribute('href', url);
      a.setAttribute('data-testid', 'webpage-citation-pill');
      a.textContent = String(n);
      const pill = inertDoc.createElement('span');
      pill.setAttribute('data-testid', 'webpage-citation-pill');
      pill.appendChild(a);
      a.removeAttribute('data-testid');
      holder.replaceWith(pill);
    }
  }
  for (const el of copy.querySelectorAll(DROP_SELECTOR)) el.remove();
  // Code as one text node, math as its TeX: the rules read them, and Turndown need not walk their spans.
  for (const pre of copy.querySelectorAll('pre')) {
    const codeEl = codeElementOf(pre);
    if (codeEl !== pre) codeEl.replaceChildren(inertDoc.createTextNode(codeText(codeEl)));
  }
  // (A math element left without text would lose the space after it to Turndown's whitespace collapsing.)
  for (const math of copy.querySelectorAll(MATH_SELECTOR)) {
    if (!copy.contains(math) || (math.parentNode && math.parentNode.closest(MATH_SELECTOR))) continue;
    const tex = texOf(math);
    math.setAttribute('data-tex', tex);
    math.replaceChildren(inertDoc.createTextNode(tex));
  }
  return copy;
}

const hasClass = (node, names) => node.nodeType === Node.ELEMENT_NODE && !!node.classList
  && names.some((n) => node.classList.contains(n));
// Wrappers the sites put around blocks (ChatGPT's table containers, Gemini's <response-element>, <table-block>…).
const isWrapper = (node) => node.nodeName === 'DIV' || node.nodeName.includes('-');
function inListItem(node) {
  let p = node.parentNode;
  while (p && isWrapper(p)) p = p.parentNode;
  return !!p && p.nodeName === 'LI';
}
// Blocks inside a list item are kept tight (one newline), elsewhere separated by a blank line.
const block = (node, text) => (inListItem(node) ? '\n' + text + '\n' : '\n\n' + text + '\n\n');
const longestRun = (text, ch) => Math.max(0, ...(text.match(new RegExp(`\\${ch}+`, 'g')) || []).map((m) => m.length));

// --- code blocks -------------------------------------------------------------------------------------------------

function codeElementOf(node) {
  // ChatGPT's viewer nests a second <pre> (pre.cm-content > code); Gemini: pre > code.code-container
  return node.querySelector('.cm-content code, .cm-content, pre code, code') || node;
}

function codeText(codeEl) {
  const lines = codeEl.querySelectorAll('.cm-line');
  const text = lines.length ? Array.from(lines, (l) => l.textContent).join('\n') : codeEl.textContent;
  return text.replace(/\r\n?/g, '\n').replace(/\n+$/, '');
}

// Text of the block outside the code (its buttons and icons are already gone): the language label of the header.
function headerText(node, codeEl) {
  let out = '';
  const walk = (n) => {
    if (n === codeEl) return;
    if (n.nodeType === Node.TEXT_NODE) out += n.data + ' ';
    else for (const c of n.childNodes) walk(c);
  };
  walk(node);
  return out.replace(/\s+/g, ' ').trim();
}

function languageOf(node, codeEl) {
  const m = (codeEl.getAttribute && codeEl.getAttribute('class') || '').match(/(?:^|\s)language-([^\s]+)/);
  if (m) return m[1];
  const deco = node.querySelector('.code-block-decoration');
  const label = deco ? ((deco.querySelector(':scope > span') || deco).textContent || '') : headerText(node, codeEl);
  const name = label.replace(/\s+/g, ' ').trim().toLowerCase();
  if (name in LANGUAGE_NAMES) return LANGUAGE_NAMES[name];
  return name.split(' ')[0];
}

// A code block whose language label sits beside its <pre>, in a wrapper of the site's: Grok's
// [data-testid=code-block] (the label, a Copy button, then pre > code), Claude's unnamed wrapper whose only text
// besides the code is the code's language (its class language-xxx). The fence takes the label; the label is no
// paragraph of its own.
function labelledCode(node) {
  if (node.nodeName !== 'DIV') return false;
  const pres = node.querySelectorAll('pre');
  if (pres.length !== 1) return false;
  if (node.getAttribute('data-testid') === 'code-block') return true;
  const m = (codeElementOf(pres[0]).getAttribute('class') || '').match(/(?:^|\s)language-([^\s]+)/);
  const label = headerText(node, pres[0]).toLowerCase();
  return !!m && !!label && (label === m[1].toLowerCase() || LANGUAGE_NAMES[label] === m[1].toLowerCase());
}

const codeBlockRule = {
  filter: (node) => node.nodeName === 'CODE-BLOCK' || (node.nodeName === 'DIV' && hasClass(node, ['code-block'])
    && !!node.querySelector('pre')) || node.nodeName === 'PRE' || labelledCode(node),
  replacement: (content, node) => {
    const codeEl = codeElementOf(node);
    const code = codeText(codeEl);
    const lang = languageOf(node, codeEl);
    const fence = '`'.repeat(Math.max(3, longestRun(code, '`') + 1));
    return block(node, fence + lang + '\n' + code + '\n' + fence);
  },
};

// --- math --------------------------------------------------------------------------------------------------------

function texOf(node) {
  const data = node.getAttribute('data-math') || node.getAttribute('data-tex') || node.getAttribute('data-latex');
  if (data) return data.trim();
  const ann = node.querySelector('annotation[encoding="application/x-tex"], annotation[encoding="TeX"]');
  if (ann) return ann.textContent.trim();
  const math = node.nodeName === 'MATH' ? node : node.querySelector('math');
  if (math && math.getAttribute('alttext')) return math.getAttribute('alttext').trim();
  return (math || node).textContent.trim();
}

const MATH_SELECTOR = '.katex-display, .math-block, .katex, .math-inline, mjx-container, math';
const isDisplayMath = (node) => hasClass(node, ['katex-display', 'math-block'])
  || (node.nodeName === 'MJX-CONTAINER' && node.getAttribute('display') === 'true')
  || (node.nodeName === 'MATH' && node.getAttribute('display') === 'block');

const mathRule = {
  filter: (node) => isDisplayMath(node) || hasClass(node, ['katex', 'math-inline'])
    || node.nodeName === 'MJX-CONTAINER' || node.nodeName === 'MATH',
  replacement: (content, node) => {
    const tex = texOf(node);
    if (!tex) return '';
    return isDisplayMath(node) ? block(node, '$$\n' + tex + '\n$$') : '$' + tex + '$';
  },
};

// --- tables ------------------------------------------------------------------------------------------------------

const cellsOf = (tr) => Array.from(tr.children).filter((c) => c.nodeName === 'TH' || c.nodeName === 'TD');

function isHeadingRow(tr) {
  if (!tr) return false;
  const parent = tr.parentNode;
  if (parent.nodeName === 'THEAD') return true;
  const table = tr.closest('table');
  return !!table && table.rows[0] === tr && cellsOf(tr).every((c) => c.nodeName === 'TH');
}

function alignmentOf(cell) {
  const a = (cell.getAttribute('align') || (cell.style && cell.style.textAlign) || '').toLowerCase();
  return { left: ':---', center: ':---:', right: '---:' }[a] || '---';
}

const cellText = (content) => content.trim().replace(/\s*\n\s*/g, '<br>').replace(/\|/g, '\\|');

const tableRules = {
  tableCell: {
    filter: ['th', 'td'],
    replacement: (content, node) => (cellsOf(node.parentNode).indexOf(node) === 0 ? '| ' : ' ')
      + cellText(content) + ' |',
  },
  tableRow: {
    filter: 'tr',
    replacement: (content, node) => {
      const row = '\n' + content.trim();
      const table = node.closest('table');
      const first = !!table && table.rows[0] === node;
      // A table without a header row still needs one in GFM: its first row becomes the header.
      if (isHeadingRow(node) || (first && !isHeadingRow(table.rows[0]))) {
        return row + '\n| ' + cellsOf(node).map(alignmentOf).join(' | ') + ' |';
      }
      return row;
    },
  },
  tableSection: { filter: ['thead', 'tbody', 'tfoot'], replacement: (content) => content },
  table: {
    filter: 'table',
    replacement: (content, node) => block(node, content.replace(/\n{2,}/g, '\n').trim()),
  },
};

// --- links, lists, paragraphs ------------------------------------------------------------------------------------

// ChatGPT appends utm_source=chatgpt.com to the links of an answer; the model did not write it.
const siteHref = (href) => href.replace(/([?&])utm_source=chatgpt\.com(&?)/, (m, sep, amp) => (amp ? sep : ''));

function linkMarkdown(content, node) {
  const href = siteHref(node.getAttribute('href') || '');
  const text = content.trim();
  if (!href) return content;
  if (!text || text === href || 'mailto:' + text === href) return href.replace(/^mailto:/, '');
  const dest = /[\s<>]/.test(href) ? '<' + href.replace(/>/g, '%3E') + '>' : href;
  const title = node.getAttribute('title');
  return '[' + text + '](' + dest + (title ? ' "' + title.replace(/"/g, '\\"') + '"' : '') + ')';
}

const rules = {
  // Consulted last of ours: a wrapper keeps the block spacing of what it holds, and inline content stays inline.
  wrapper: {
    filter: (node) => isWrapper(node),
    replacement: (content, node) => {
      const inner = content.replace(/^\n+|\n+$/g, '');
      if (!inner.trim()) return '';
      return node.nodeName === 'DIV' || /\n/.test(content) ? block(node, inner) : content;
    },
  },
  codeBlock: codeBlockRule,
  math: mathRule,
  ...tableRules,
  citationPill: {
    // ChatGPT: <span data-testid="webpage-citation-pill"><a href=…><span>Label</span></a></span>, set off by margin;
    // Perplexity: <span class="citation inline" aria-label=…><a href=…><span>source+2</span></a></span> (pplxport,
    // 2026: the first source's link; "+2" says how many more share the marker)
    filter: (node) => node.getAttribute('data-testid') === 'webpage-citation-pill'
      || (hasClass(node, ['citation']) && !!node.querySelector('a[href]')),
    replacement: (content) => (content.trim() ? PILL + content.trim() : ''),
  },
  link: {
    filter: (node) => node.nodeName === 'A' && !!node.getAttribute('href'),
    replacement: linkMarkdown,
  },
  image: {
    // An image without alt text is decoration (favicons of citation pills, file-type icons).
    filter: 'img',
    replacement: (content, node) => {
      const alt = (node.getAttribute('alt') || '').trim();
      const src = node.getAttribute('src') || '';
      return alt && src ? '![' + alt + '](' + src + ')' : '';
    },
  },
  strikethrough: { filter: ['del', 's', 'strike'], replacement: (content) => '~~' + content + '~~' },
  taskCheckbox: {
    filter: (node) => node.nodeName === 'INPUT' && node.getAttribute('type') === 'checkbox' && !!node.closest('li'),
    replacement: (content, node) => (node.checked || node.hasAttribute('checked') ? '[x] ' : '[ ] '),
  },
  paragraph: {
    filter: 'p',
    replacement: (content, node) => {
      const prev = node.previousElementSibling;
      // Two paragraphs of one list item keep their blank line; a lone one stays tight with its list.
      if (inListItem(node) && !(prev && prev.nodeName === 'P')) return '\n' + content + '\n';
      return '\n\n' + content + '\n\n';
    },
  },
  blockquote: {
    filter: 'blockquote',
    replacement: (content, node) => block(node, content.replace(/^\n+|\n+$/g, '')
      .split('\n').map((l) => (l ? '> ' + l : '>')).join('\n')),
  },
  list: {
    filter: ['ul', 'ol'],
    replacement: (content, node) => block(node, content.replace(/^\n+|\n+$/g, '')),
  },
  listItem: {
    filter: 'li',
    replacement: (content, node) => {
      const parent = node.parentNode;
      let marker = '- ';
      if (parent.nodeName === 'OL') {
        const start = parseInt(parent.getAttribute('start') || '1', 10);
        const index = Array.prototype.indexOf.call(parent.children, node);
        marker = (Number.isFinite(start) ? start : 1) + index + '. ';
      }
      const pad = ' '.repeat(marker.length);
      const body = content.replace(/^\n+|\n+$/g, '').split('\n')
        .map((l, i) => (i === 0 || !l ? l : pad + l)).join('\n');
      return marker + body + (node.nextElementSibling ? '\n' : '');
    },
  },
};

function makeService() {
  const td = new TurndownService({
    headingStyle: 'atx', hr: '---', bulletListMarker: '-', codeBlockStyle: 'fenced', fence: '```',
    emDelimiter: '*', strongDelimiter: '**', linkStyle: 'inlined',
    br: '', // a line break inside a paragraph comes back as a plain newline, as the sites render a newline
    // Turndown gives a node without text its blank rule before any other: an empty table cell must stay a cell,
    // and Gemini's math (TeX in data-math, glyphs only in aria-hidden spans) has no text of its own.
    blankReplacement: (content, node) => {
      if (node.nodeName === 'TD' || node.nodeName === 'TH') return tableRules.tableCell.replacement('', node);
      if (mathRule.filter(node)) return mathRule.replacement('', node);
      return node.isBlock ? '\n\n' : '';
    },
  });
  td.use(turndownPluginGfm.gfm);
  // The text is what the model wrote, not markdown source to protect: no backslash escapes are added.
  td.escape = (text) => text;
  for (const [key, rule] of Object.entries(rules)) td.addRule(key, rule); // added last = consulted first
  return td;
}

let service = null;

function convert(element, sources) {
  if (!element) return '';
  service = service || makeService();
  const copy = flatten(element, Array.isArray(sources) ? sources : null);
  const holder = inertDoc.createElement('div');
  holder.appendChild(copy);
  const md = service.turndown(holder);
  return md.replace(/[ \t]*\uE000/g, ' ').replace(/^[ \t]+$/gm, '').trim();
}

window.__aibMarkdown = convert;
