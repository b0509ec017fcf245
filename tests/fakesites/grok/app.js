// Fake grok.com: the skin of common/chatsite.js. Shaped on ../shared/real-dom/grok-2607-file-input-ready.html and
// grok-2607-model-menu-open.html (July 2026: the composer, the Attach menu's file input, the model picker) and
// tokenless's reduced Grok page (its user and assistant messages, the submit button). No whole conversation is
// captured: a response's container, its action buttons, the stop button and the notices are guesses, marked so.
//
// DOM:
//   aside (New chat, History) + main >
//     div#conversation.overflow-y-auto.overflow-x-hidden.scrollbar-gutter-stable (the thread's scroller, as a chat
//       exporter's live notes of grok.com, February 2026, and three userscripts' thread selectors name it: stored index
//       ids 57944575639, 38101057146, 31274303629) > div.thread >
//       (per message, guess after chat exporters: div.relative.group.flex.flex-col)
//       user:      div.items-end > div[data-testid=user-message] > div.message-bubble > div.response-content-markdown
//                  > p (tokenless's fixture) + actions (Edit, Copy)
//       assistant: div.items-start > div[data-testid=assistant-message] > div.message-bubble > [thinking: button
//                  "Thinking" then "Thought for Ns", its text collapsed] + div.response-content-markdown; then, once
//                  done, div.action-buttons (guess): Regenerate, Copy, Like, Dislike, Share (+ QuillBot's)
//     form.composer > input[type=file][name=files][multiple][hidden] + chips + div.tiptap.ProseMirror
//       [contenteditable][role=textbox][aria-label="Ask Grok anything"] + a row: button[data-testid=attach-button]
//       [aria-label=Attach] (its menu: Upload a file, Recent, Skills, Add connector, Work folder),
//       button#model-select-trigger[aria-label="Model select"] > span "Fast" (the rows Fast / Auto / Expert / Heavy
//       are menuitems with span.font-semibold labels and no aria-checked: only the trigger shows the choice; Upgrade
//       and Custom Instructions rows), then button[data-testid=chat-submit][type=submit][aria-label=Submit]
//       (disabled while empty) or, answering, button[aria-label="Stop model response"] (guess)
// Code blocks (chat exporters): div[data-testid=code-block] > a header (span.font-mono.text-xs language + Copy) and
// pre > code. Math as KaTeX (a guess).

const T = {
  en: {
    ask: 'Ask Grok anything', placeholder: 'What do you want to know?', submit: 'Submit', stop: 'Stop model response',
    attach: 'Attach', thinking: 'Thinking', thought: (s) => `Thought for ${s}s`, retry: 'Try again',
    netError: 'Something went wrong. Please try again.', unavailable: 'Conversation not found', copy: 'Copy',
  },
  ja: {
    ask: 'Grok に何でも聞いてください', placeholder: '何を知りたいですか？', submit: '送信', stop: '停止', attach: '添付',
    thinking: '思考中', thought: (s) => `${s}秒間思考しました`, retry: '再試行',
    netError: '問題が発生しました。もう一度お試しください。', unavailable: '会話が見つかりません', copy: 'コピー',
  },
  de: {
    ask: 'Frag Grok alles', placeholder: 'Was möchtest du wissen?', submit: 'Senden', stop: 'Antwort anhalten',
    attach: 'Anhängen', thinking: 'Denkt nach', thought: (s) => `${s}s nachgedacht`, retry: 'Erneut versuchen',
    netError: 'Etwas ist schiefgelaufen.', unavailable: 'Unterhaltung nicht gefunden', copy: 'Kopieren',
  },
}[LANG];

const btn = (label, extra) => h('button', { type: 'button', 'aria-label': label, ...extra, html: ICON });

const GROK_MARKUP = {
  attrs: (tag) => (tag === 'p' ? ' class="break-words" dir="auto"' : ''),
  listStart: (start) => (start !== 1 ? ` start="${start}"` : ''),
  open: (kind) => ({ strong: '<strong class="font-semibold">', em: '<em>', s: '<del>' }[kind]),
  close: (kind) => ({ strong: '</strong>', em: '</em>', s: '</del>' }[kind]),
  codeInline: (html) => `<code class="text-sm">${html}</code>`,
  linkOpen: (href, ctx) => `<a href="${ctx.escapeHtml(href)}" target="_blank" rel="noopener noreferrer nofollow">`,
  linkClose: () => '</a>',
  mathInline: (tex, ctx) => (ctx.blank ? '<span class="katex"></span>' : ctx.katexHtml(tex)),
  mathBlock: (tex, where, path, ctx) => (ctx.blank ? '<span class="katex-display"></span>'
    : `<span class="katex-display">${ctx.katexHtml(tex, { display: true })}</span>`),
  cite: (label, url, ctx) => `<a href="${ctx.escapeHtml(url)}" target="_blank" rel="noopener noreferrer nofollow">${ctx.blank ? '' : ctx.escapeHtml(label)}</a>`,
  codeBlock(lang, code, where, path, ctx) {
    return '<div data-testid="code-block" class="relative not-prose flex flex-col rounded-lg border">'
      + `<div class="flex flex-row px-4 py-2 h-10 items-center"><span class="font-mono text-xs">${ctx.blank ? '' : ctx.escapeHtml(lang || 'text')}</span>`
      + `<button type="button" aria-label="${T.copy}" class="ml-auto">${ICON}</button></div>`
      + `<div class="shiki"><pre class="shiki"><code>${ctx.blank ? '' : ctx.highlight(code, { string: 's', comment: 'c', number: 'n', name: 'x' })}</code></pre></div></div>`;
  },
  tableOpen: () => '<div class="table-container"><table>',
  tableClose: () => '</table></div>',
  cellOpen: (tag, align) => `<${tag}${align ? ` style="text-align: ${align};"` : ''}>`,
  cellClose: (tag) => `</${tag}>`,
};

const MODELS = [
  { label: 'Fast', details: ['Quick responses'] }, { label: 'Auto', details: ['Chooses Fast or Expert'] },
  { label: 'Expert', details: ['Thinks hard'] }, { label: 'Heavy', details: ['Team of Experts'] },
];

const picker = {
  models: MODELS, defaultModel: 0, rowRole: 'menuitem', checks: false, labelClass: 'font-semibold',
  // The Upgrade and Custom Instructions rows are no radix collection items (grok-2607-model-menu-open.html).
  extraRows: [() => h('div', { role: 'menuitem', class: 'menu-row' }, h('button', { type: 'button' }, 'Upgrade')),
    () => h('div', { role: 'menuitem', class: 'menu-row' }, h('span', {}, 'Custom Instructions'))],
  trigger: (pick, onDown) => h('button', { id: 'model-select-trigger', type: 'button', 'aria-label': 'Model select',
    'aria-haspopup': 'menu', 'aria-expanded': 'false', 'data-state': 'closed', onpointerdown: onDown },
  h('span', { class: 'model-label' }, pick.model.label)),
  show: (b, pick) => { b.querySelector('.model-label').textContent = pick.model.label; },
  request: (pick) => ({ model: pick.model.label }),
};

let toastHost;

function assistantTurn(messageId, { error }) {
  const markdown = h('div', { class: 'response-content-markdown markdown prose dark:prose-invert max-w-none' });
  const bubble = h('div', { class: 'message-bubble relative rounded-3xl text-primary min-h-7 prose' }, driftWrap(markdown));
  const message = h('div', { 'data-testid': 'assistant-message', class: 'relative' }, bubble);
  const el = h('div', { class: 'relative group flex flex-col justify-center w-full max-w-3xl md:px-4 pb-2 items-start',
    id: 'response-' + messageId }, message);
  if (error) markdown.classList.add('text-red-500');
  return {
    el,
    get content() { return markdown; },
    render(html) { markdown.innerHTML = html; },
    startThinking() {
      this.toggle = h('button', { type: 'button', class: 'thinking-toggle', 'aria-expanded': 'false' },
        h('span', {}, T.thinking));
      bubble.insertBefore(h('div', { class: 'thinking-container' }, this.toggle,
        h('div', { class: 'collapsed' }, h('div', {}, 'Considering the question.'))), bubble.firstChild);
    },
    endThinking(seconds) { if (this.toggle) this.toggle.firstChild.textContent = T.thought(seconds); },
    finish() {
      el.append(h('div', { class: 'action-buttons flex flex-row items-center gap-0.5' },
        btn('Regenerate'), btn(T.copy), EXT ? btn('Humanize with QuillBot') : null, btn('Like'), btn('Dislike'),
        btn('Share'), btn('More actions', { 'aria-haspopup': 'menu' })));
    },
    fail(text, retry) { el.append(h('div', { role: 'alert', class: 'text-red-500' }, text, retry)); },
  };
}

chatSite({
  T,
  convPath: (id) => '/c/' + id,
  convFromPath: (path) => (path.match(/^\/c\/([0-9a-f-]+)/i) || [])[1] || null,
  layout() {
    const thread = h('div', { class: 'thread flex flex-col items-center w-full' });
    const composerHost = h('div', { class: 'composer-host composer-shell' });
    toastHost = h('section', { 'aria-label': 'Notifications', class: 'toaster' });
    const aside = h('aside', { class: 'sidebar' }, h('a', { href: '/' }, 'New chat'),
      h('button', { type: 'button', 'aria-label': 'History' }, 'History'));
    const main = h('main', { class: 'flex flex-col flex-1 min-h-0' }, h('header', { class: 'h-12' }),
      h('div', { id: 'conversation', class: 'thread-scroll flex-1 overflow-y-auto overflow-x-hidden scrollbar-gutter-stable' },
        thread), composerHost);
    return { elements: [h('div', { class: 'app flex flex-row h-full' }, aside, main), toastHost], thread, composerHost };
  },
  editor: () => h('div', { contenteditable: 'true', role: 'textbox', 'aria-label': T.ask, 'aria-multiline': 'true',
    translate: 'no', tabindex: '0', class: 'tiptap ProseMirror w-full' }),
  emptyEditor: (el) => { el.innerHTML = `<p data-placeholder="${T.placeholder}" class="is-empty is-editor-empty"><br class="ProseMirror-trailingBreak"></p>`; },
  fileInput: () => h('input', { type: 'file', name: 'files', multiple: true, hidden: true, accept: BOOT.uploadAccept || null }),
  chip: (file, onRemove) => {  // guess
    const bar = h('div', { role: 'progressbar', class: 'animate-spin', 'aria-label': 'Uploading' });
    const el = h('div', { 'data-testid': 'file-attachment', 'data-filename': file.name, class: 'rounded-xl border p-2' },
      h('span', {}, file.name), bar, h('button', { type: 'button', 'aria-label': 'Remove', onclick: onRemove }, '×'));
    return { el, bar };
  },
  composer({ editor, sendSlot, fileInput, chipHost, picker: pickerEl }) {
    const attachMenu = () => {
      const open = document.querySelector('.attach-menu');
      if (open) { open.remove(); return; }
      const r = attach.getBoundingClientRect();
      const item = (label, onclick) => h('div', { role: 'menuitem', class: 'menu-row', onclick }, label);
      document.body.append(h('div', { role: 'menu', class: 'attach-menu', style: `position: fixed; left: ${r.left}px; top: ${Math.max(0, r.top - 200)}px; background: #fff; border: 1px solid #ddd;` },
        item('Upload a file', () => { document.querySelector('.attach-menu')?.remove(); fileInput.click(); }),
        item('Recent'), item('Skills'), item('Add connector'), item('Work folder')));
    };
    const attach = btn(T.attach, { 'data-testid': 'attach-button', 'aria-haspopup': 'menu', 'aria-expanded': 'false', onclick: attachMenu });
    const form = h('form', { class: 'composer composer-box', onsubmit: (ev) => ev.preventDefault() },
      fileInput, chipHost, driftWrap(editor),
      h('div', { class: 'composer-row' }, attach, pickerEl, EXT ? btn('Improve prompt with QuillBot') : null,
        h('div', { class: 'ml-auto flex' }, sendSlot)));
    return form;
  },
  sendButton(kind, { onSend, onStop, busy }) {
    if (kind === 'streaming') return btn(T.stop, { onclick: onStop, class: 'stop' });
    return h('button', { type: 'submit', 'data-testid': 'chat-submit', 'aria-label': T.submit, class: 'submit',
      disabled: kind === 'empty' || busy, onclick: (ev) => { ev.preventDefault(); onSend(ev); }, html: ICON });
  },
  userTurn: (text) => h('div', { class: 'relative group flex flex-col justify-center w-full max-w-3xl md:px-4 pb-2 items-end' },
    driftWrap(h('div', { 'data-testid': 'user-message', class: 'relative' },
      h('div', { class: 'message-bubble rounded-3xl bg-surface-l1' },
        h('div', { class: 'response-content-markdown markdown' }, h('p', { class: 'break-words whitespace-pre-wrap' }, text))))),
    h('div', { class: 'action-buttons flex' }, btn('Edit'), btn(T.copy))),
  assistantTurn,
  markup: GROK_MARKUP,
  picker,
  toast: (text) => toastHost.append(h('li', { 'data-sonner-toast': '', role: 'status', class: 'toast' }, text)),
  banner: (text) => toastHost.append(h('div', { role: 'alert', class: 'limit-banner' }, text)),
  unavailable: () => toastHost.append(h('li', { 'data-sonner-toast': '', role: 'status', class: 'toast' }, T.unavailable)),
});
