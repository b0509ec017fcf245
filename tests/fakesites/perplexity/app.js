// Fake www.perplexity.ai: the skin of common/chatsite.js. Shaped on ../shared/real-dom/perplexity-chat-simple.html
// (January 2026: the thread, answers with KaTeX math, the Lexical composer with its file input and "Choose a model"
// button, the answer's action bar) and pplxport's exporter (2026: inline citations as span.citation holding the
// source's link). No capture shows an answer being written: the stop button, the search steps and the model menu
// are guesses, marked so.
//
// DOM:
//   header (Share) + div.thread > per turn: div.mt-md > div > div.flex.flex-col >
//     div[data-state=active][role=tabpanel] > div.flex.flex-col.gap-y-md >
//       div.bg-base > ... > div.group/title > (h1 for the first question, div after) [class*="group/query"] > span
//       div.gap-y-lg.flex.flex-col >
//         [while it searches (guess): div.search-steps "Searching" then a "Reviewed N sources" button]
//         div > div.min-w-0 > div#markdown-content-N[dir=auto] > div > div > div.prose > the answer
//           (citations: span.citation.inline[aria-label=<source>] > a[href] > span.text-3xs "<source>")
//         then, once done: div.flex.items-center.justify-between > Share, Download, Copy, Rewrite | Helpful,
//         Not helpful, More actions (+ QuillBot's)
//     + the hidden tab panels of the answer's other tabs (sources, images)
//   footer: div[data-ask-input-container] > QuillBot's highlighter + div#ask-input[contenteditable][role=textbox]
//     [data-lexical-editor][aria-placeholder] + its placeholder (aria-hidden) + input[type=file][multiple][accept=…]
//     + button "Add files or tools" + button "Choose a model" "Model" + button "Dictation" + button "Submit" (disabled
//     while empty) or, answering, button "Stop" (guess)

const T = {
  en: {
    ask: 'Ask anything…', followUp: 'Ask a follow-up', submit: 'Submit', stop: 'Stop', searching: 'Searching',
    reviewed: (n) => `Reviewed ${n} sources`, retry: 'Retry', netError: 'Something went wrong. Please try again.',
    unavailable: 'This thread is no longer available', copy: 'Copy',
  },
  ja: {
    ask: '何でも質問してください…', followUp: 'フォローアップを質問', submit: '送信', stop: '停止', searching: '検索中',
    reviewed: (n) => `${n}件のソースを確認しました`, retry: '再試行', netError: '問題が発生しました。もう一度お試しください。',
    unavailable: 'スレッドが見つかりません', copy: 'コピー',
  },
  de: {
    ask: 'Frag irgendwas…', followUp: 'Folgefrage stellen', submit: 'Senden', stop: 'Anhalten', searching: 'Sucht',
    reviewed: (n) => `${n} Quellen geprüft`, retry: 'Wiederholen', netError: 'Etwas ist schiefgelaufen.',
    unavailable: 'Thread nicht gefunden', copy: 'Kopieren',
  },
}[LANG];

const btn = (label, extra) => h('button', { type: 'button', 'aria-label': label, 'data-state': 'closed', ...extra, html: ICON });
const hostOf = (url) => { try { return new URL(url).hostname.replace(/^www\./, '').split('.')[0]; } catch (e) { return 'source'; } };

const PERPLEXITY_MARKUP = {
  attrs: (tag) => (tag === 'p' ? ' class="my-2 [&amp;+p]:mt-4"' : ''),
  listStart: (start) => (start !== 1 ? ` start="${start}"` : ''),
  open: (kind) => ({ strong: '<strong>', em: '<em>', s: '<del>' }[kind]),
  close: (kind) => ({ strong: '</strong>', em: '</em>', s: '</del>' }[kind]),
  codeInline: (html) => `<code>${html}</code>`,
  linkOpen: (href, ctx) => `<a href="${ctx.escapeHtml(href)}" target="_blank" rel="nofollow noopener" class="reset interactable">`,
  linkClose: () => '</a>',
  mathInline: (tex, ctx) => (ctx.blank ? '<span class="katex"></span>' : ctx.katexHtml(tex)),
  mathBlock: (tex, where, path, ctx) => (ctx.blank ? '<span class="katex-display"></span>'
    : `<span class="katex-display">${ctx.katexHtml(tex, { display: true })}</span>`),
  // pplxport (2026): span.citation with the source's name; the link to its first source inside.
  cite: (label, url, ctx) => {
    const name = label || hostOf(url);
    return `<span class="citation inline" aria-label="${ctx.escapeHtml(name)}" data-state="closed">`
      + `<a href="${ctx.escapeHtml(url)}" target="_blank" rel="nofollow noopener" class="reset interactable">`
      + `<span class="text-3xs relative -top-px font-mono">${ctx.blank ? '' : ctx.escapeHtml(name)}</span></a></span>`;
  },
  codeBlock(lang, code, where, path, ctx) {
    return `<pre class="not-prose w-full rounded font-mono text-sm"><div class="codeWrapper"><div class="flex items-center justify-between">`
      + `<div class="font-thin">${ctx.blank ? '' : ctx.escapeHtml(lang || '')}</div><button type="button" aria-label="${T.copy}">${ICON}</button></div>`
      + `<code class="language-${ctx.escapeHtml(lang || 'text')}" style="white-space: pre;">${ctx.blank ? '' : ctx.highlight(code, { string: 'token string', comment: 'token comment', number: 'token number', name: 'token' })}</code></div></pre>`;
  },
  tableOpen: () => '<div class="group relative"><div class="w-full overflow-x-auto"><table class="my-0 w-full">',
  tableClose: () => '</table></div></div>',
  cellOpen: (tag, align) => `<${tag}${align ? ` style="text-align: ${align};"` : ''}>`,
  cellClose: (tag) => `</${tag}>`,
};

const MODELS = [  // guess: the menu is not captured
  { label: 'Best', details: ['Selects the best model for each query'] }, { label: 'Sonar', details: ["Perplexity's fast model"] },
  { label: 'Claude Sonnet 4.5' }, { label: 'GPT-5.2' }, { label: 'Gemini 3 Pro' },
];

const picker = {
  models: MODELS, defaultModel: 0, rowRole: 'menuitemradio',
  trigger: (pick, onDown) => h('button', { type: 'button', 'aria-label': 'Choose a model', 'aria-haspopup': 'menu',
    'aria-expanded': 'false', onpointerdown: onDown },
  h('span', { class: 'text-box-trim-both pr-1 model-label' }, pick.model.label === 'Best' ? 'Model' : pick.model.label)),
  show: (b, pick) => { b.querySelector('.model-label').textContent = pick.model.label === 'Best' ? 'Model' : pick.model.label; },
  request: (pick) => ({ model: pick.model.label }),
};

let toastHost;
let answers = 0;

function assistantTurn(messageId, { error }) {
  const prose = h('div', { class: 'prose dark:prose-invert inline leading-relaxed break-words min-w-0 [word-break:break-word]' });
  const content = h('div', { dir: 'auto', id: `markdown-content-${answers++}`, class: 'gap-y-md' },
    h('div', { class: 'relative' }, h('div', {}, h('div', {}, driftWrap(prose)))));
  const column = h('div', { class: 'gap-y-lg flex flex-col' }, h('div', {}, h('div', { class: 'min-w-0 break-words' }, content)));
  const panel = h('div', { 'data-state': 'active', 'data-orientation': 'horizontal', role: 'tabpanel',
    id: `radix-:r${messageId.slice(0, 3)}:-content-default`, tabindex: '0', class: 'focus:outline-none' },
  h('div', { class: 'flex flex-col gap-y-md md:gap-y-lg' }, column));
  // The turn's question is its first part (added by userTurn into the same block, see below).
  const pending = lastQuestion;
  lastQuestion = null;
  if (pending) panel.firstChild.prepend(pending);
  const el = h('div', { class: 'mt-md md:mt-lg' }, h('div', {}, h('div', { class: 'flex flex-col gap-md md:gap-lg w-full' },
    panel, h('div', { 'data-state': 'inactive', role: 'tabpanel', hidden: true, id: 'radix-sources', tabindex: '0' }))));
  if (error) prose.classList.add('text-caution');
  return {
    el,
    get content() { return prose; },
    render(html) { prose.innerHTML = html; },
    startThinking() {  // guess: the search steps before the answer
      this.steps = h('div', { class: 'search-steps flex items-center gap-2' }, h('span', { class: 'text-quiet' }, T.searching));
      column.prepend(this.steps);
    },
    endThinking() { if (this.steps) this.steps.replaceChildren(h('button', { type: 'button', class: 'reset' }, T.reviewed(4))); },
    finish() {
      column.append(h('div', { class: 'flex items-center justify-between' },
        h('div', { class: '-ml-sm gap-xs flex items-center' }, btn('Share'), btn('Download', { 'aria-haspopup': 'menu' }),
          btn(T.copy), btn('Rewrite', { 'aria-haspopup': 'menu' })),
        h('div', { class: 'gap-x-xs flex items-center' }, EXT ? btn('Humanize with QuillBot') : null,
          btn('Helpful'), btn('Not helpful'), btn('More actions', { 'aria-haspopup': 'menu' }))));
    },
    fail(text, retry) { column.append(h('div', { role: 'alert', class: 'text-caution' }, text, retry)); },
  };
}

// A question's block waits for its answer's turn (one tab panel holds both); until then it stands on its own.
let lastQuestion = null;

chatSite({
  T,
  convPath: (id) => '/search/' + id,
  convFromPath: (path) => (path.match(/^\/search\/([^/?#]+)/) || [])[1] || null,
  layout() {
    const thread = h('div', { class: 'thread mx-auto flex w-full flex-col' });
    const composerHost = h('div', { class: 'composer-host pointer-events-auto' });
    toastHost = h('div', { id: 'footer-portal-high' });
    const header = h('div', { class: 'h-headerHeight' }, h('div', { role: 'tablist', 'aria-label': 'Answer mode tabs' },
      h('button', { type: 'button', role: 'tab', 'aria-selected': 'true' }, 'Answer')), btn('Share'));
    return { elements: [header, thread, toastHost, composerHost], thread, composerHost };
  },
  editor: () => h('div', { contenteditable: 'true', id: 'ask-input', role: 'textbox', spellcheck: 'true',
    'aria-placeholder': T.followUp, 'data-lexical-editor': 'true', class: 'overflow-auto max-h-[45vh] outline-none w-full' }),
  emptyEditor: (el) => { el.innerHTML = '<p><br></p>'; },
  editorChanged: (el, empty) => { const ph = el.parentNode && el.parentNode.querySelector('.placeholder'); if (ph) ph.hidden = !empty; },
  fileInput: () => h('input', { multiple: true, type: 'file', accept: BOOT.uploadAccept
    || '.bash,.c,.cpp,.css,.csv,.docx,.go,.html,.java,.js,.json,.md,.pdf,.py,.rs,.sql,.ts,.txt,.xml,.yaml,.yml,.jpeg,.jpg,.png,.gif,.webp' }),
  chip: (file, onRemove) => {  // guess
    const bar = h('div', { role: 'progressbar', class: 'animate-pulse', 'aria-label': 'Uploading' });
    const el = h('div', { 'data-testid': 'file-attachment', 'data-filename': file.name, class: 'rounded-lg border p-2' },
      h('span', {}, file.name), bar, h('button', { type: 'button', 'aria-label': 'Remove', onclick: onRemove }, '×'));
    return { el, bar };
  },
  composer({ editor, sendSlot, fileInput, chipHost, picker: pickerEl }) {
    const placeholder = h('div', { 'aria-hidden': 'true', class: 'placeholder absolute inset-0 pointer-events-none text-quieter' }, T.ask);
    return h('div', { class: 'bg-base rounded-2xl', 'data-ask-input-container': 'true' }, h('div', { class: 'composer-box' },
      chipHost,
      h('div', { class: 'w-full relative' }, EXT ? h('span', { class: 'qb-host', 'aria-hidden': 'true' }) : null, driftWrap(editor), placeholder),
      h('div', { class: 'composer-row' },
        h('div', { class: 'gap-sm flex items-center' }, fileInput, btn('Add files or tools', { 'aria-haspopup': 'menu', onclick: () => fileInput.click() })),
        h('div', { class: 'flex items-center gap-sm ml-auto' }, pickerEl, btn('Dictation'), sendSlot))));
  },
  sendButton(kind, { onSend, onStop, busy }) {
    if (kind === 'streaming') return btn(T.stop, { onclick: onStop });
    return btn(T.submit, { onclick: onSend, disabled: kind === 'empty' || busy });
  },
  userTurn(text, n) {
    const query = h(n === 1 ? 'h1' : 'div', { class: 'group/query relative whitespace-pre-line break-words' },
      h('div', { class: 'relative' }, h('span', { class: 'select-text' }, text)));
    const block = h('div', { class: 'bg-base' }, h('div', { class: 'group relative flex items-end gap-0.5' },
      h('div', { class: 'flex items-start gap-2' }, h('div', { class: 'opacity-0 group-hover:opacity-100', 'aria-hidden': 'false' },
        btn('Edit Query'), btn('Copy Query')), h('div', { class: 'group/title relative inline-flex flex-col' }, driftWrap(query)))));
    lastQuestion = block;
    return block;  // moved into its answer's tab panel when the answer starts
  },
  assistantTurn,
  markup: PERPLEXITY_MARKUP,
  picker,
  toast: (text) => toastHost.append(h('div', { 'data-sonner-toast': '', role: 'status', class: 'toast' }, text)),
  banner: (text) => toastHost.append(h('div', { role: 'alert', class: 'limit-banner' }, text)),
  unavailable: () => toastHost.append(h('div', { role: 'alert', class: 'toast' }, T.unavailable)),
});
