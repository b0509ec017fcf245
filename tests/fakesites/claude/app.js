// Fake claude.ai: the skin of common/chatsite.js. Shaped on ../shared/real-dom/claude-chat-simple.html (January
// 2026, a whole conversation) and claude-2607-*.html (July 2026: the "+" menu's file input, the model picker), plus
// tokenless's thinking-effort capture (the picker's Effort submenu and Thinking switch). Guesses are marked.
//
// DOM:
//   header[data-testid=page-header] > button[data-testid=chat-title-button] + button[data-testid=chat-menu-trigger]
//   div.overflow-y-scroll > div.thread > div[data-test-render-count]* :
//     user:      div.mb-1.mt-6.group > div.flex.flex-col.items-end > div.bg-bg-300 > div.flex-1 >
//                div[data-testid=user-message] > p.whitespace-pre-wrap; div[role=group][aria-label="Message actions"]
//                (date, Retry, Edit, button[data-testid=action-bar-copy] "Copy")
//     assistant: div.group > div.contents > div[data-is-streaming=true|false] > div.font-claude-response >
//                  div > div.progressive-markdown (streaming) | div.standard-markdown (done), or with thinking
//                  div.grid > div.row-start-1 (the thinking block: button "Thinking…" then "Thought process", its
//                  own .standard-markdown collapsed) + div.row-start-2 > div > the answer's markdown;
//                then, once done, div[role=group][aria-label="Message actions"]: action-bar-copy, "Give positive
//                feedback", "Give negative feedback", "Retry" (+ QuillBot's button)
//   div[data-chat-input-container] > div.grid[data-testid=chat-input-grid-container] >
//     div[data-testid=chat-input-grid-area] > fieldset[data-testid=prompt-input-ssr-interactive][inert].opacity-0 >
//       textarea[data-testid=chat-input-ssr] (the server-rendered editor, left in place, inert and transparent)
//     div[data-testid=chat-input-grid-area] > fieldset > input#chat-input-file-upload-bottom[data-testid=file-upload]
//       + div[data-alert-band-wrapper] (limits show here) + QuillBot's highlighter + div.tiptap.ProseMirror
//       [data-testid=chat-input][aria-label="Write your prompt to Claude"] > p[data-placeholder] + a row:
//       button "Add files, connectors, and more", button[data-testid=model-selector-dropdown][aria-label="Model:
//       Sonnet 5 Medium"] "Sonnet 5", the send slot: an unnamed button (empty), button "Send message" (guess, with
//       text), button "Stop response" (guess, while streaming)
//   div[role=note][data-disclaimer] "Claude is AI and can make mistakes. Please double-check responses."
// Code blocks (guess: no capture has one): a wrapper with the language as its own text, a Copy button, then
// pre.code-block__code > code.language-xxx. Math: KaTeX (the capture). Tables (guess): div.overflow-x-auto > table.

const T = {
  en: {
    retry: 'Retry', edit: 'Edit', copy: 'Copy', good: 'Give positive feedback', bad: 'Give negative feedback',
    send: 'Send message', stop: 'Stop response', add: 'Add files, connectors, and more', prompt: 'Write your prompt to Claude',
    placeholder: 'How can I help you today?', reply: 'Reply...', thinking: 'Thinking…', thought: 'Thought process',
    disclaimer: 'Claude is AI and can make mistakes. Please double-check responses.', netError: "Claude's response was interrupted. Please try again.",
    unavailable: 'Conversation not found', upload: 'Upload files', title: 'New chat',
  },
  ja: {
    retry: '再試行', edit: '編集', copy: 'コピー', good: '良い回答', bad: '悪い回答', send: 'メッセージを送信',
    stop: '応答を停止', add: 'ファイル、コネクタなどを追加', prompt: 'Claude へのプロンプトを入力', placeholder: '今日はどのようなご用件ですか？',
    reply: '返信...', thinking: 'Thinking…', thought: '思考プロセス', disclaimer: 'Claude は AI のため、誤りを含む可能性があります。',
    netError: '問題が発生しました。もう一度お試しください。', unavailable: '会話が見つかりません', upload: 'ファイルをアップロード',
    title: '新しいチャット',
  },
  de: {
    retry: 'Wiederholen', edit: 'Bearbeiten', copy: 'Kopieren', good: 'Positives Feedback', bad: 'Negatives Feedback',
    send: 'Nachricht senden', stop: 'Antwort anhalten', add: 'Dateien hinzufügen', prompt: 'Schreibe deinen Prompt an Claude',
    placeholder: 'Wie kann ich helfen?', reply: 'Antworten...', thinking: 'Denkt nach…', thought: 'Denkprozess',
    disclaimer: 'Claude ist eine KI und kann Fehler machen.', netError: 'Etwas ist schiefgelaufen.',
    unavailable: 'Unterhaltung nicht gefunden', upload: 'Dateien hochladen', title: 'Neuer Chat',
  },
}[LANG];

const btn = (label, extra) => h('button', { type: 'button', class: 'Button_ghost', 'aria-label': label, ...extra, html: ICON });
const copyButton = () => h('div', { class: 'w-fit', 'data-state': 'closed' }, btn(T.copy, { 'data-testid': 'action-bar-copy' }));

const CLAUDE_MARKUP = {
  attrs: (tag) => (tag === 'p' ? ' class="font-claude-response-body break-words whitespace-normal leading-[1.7]"'
    : tag === 'li' ? ' class="whitespace-normal break-words pl-2"' : ''),
  listStart: (start) => (start !== 1 ? ` start="${start}"` : ''),
  open: (kind) => ({ strong: '<strong>', em: '<em>', s: '<del>' }[kind]),
  close: (kind) => ({ strong: '</strong>', em: '</em>', s: '</del>' }[kind]),
  codeInline: (html) => `<code class="bg-text-200/5 rounded-[0.4rem] px-1 py-px text-[0.9rem]">${html}</code>`,
  linkOpen: (href, ctx) => `<a href="${ctx.escapeHtml(href)}" target="_blank" rel="noopener noreferrer" class="underline">`,
  linkClose: () => '</a>',
  mathInline: (tex, ctx) => (ctx.blank ? '<span class="katex"></span>' : ctx.katexHtml(tex)),
  mathBlock: (tex, where, path, ctx) => (ctx.blank ? '<span class="katex-display"></span>'
    : `<span class="katex-display">${ctx.katexHtml(tex, { display: true })}</span>`),
  cite: (label, url, ctx) => `<a href="${ctx.escapeHtml(url)}" target="_blank" rel="noopener noreferrer">${ctx.blank ? '' : ctx.escapeHtml(label)}</a>`,
  codeBlock(lang, code, where, path, ctx) {
    const label = ctx.blank ? '' : ctx.escapeHtml(lang || 'text');
    return '<div class="relative group/copy bg-bg-000/50 border-0.5 rounded-lg">'
      + `<div class="text-text-500 font-small p-3.5 pb-0">${label}</div>`
      + `<div class="pointer-events-none sticky my-0.5 ml-0.5 flex items-center justify-end top-10"><button type="button" class="pointer-events-auto" aria-label="${T.copy}">${ICON}</button></div>`
      + `<div class="overflow-x-auto"><pre class="code-block__code !my-0 !rounded-lg"><code class="language-${ctx.escapeHtml(lang || 'text')}" style="white-space: pre;">${ctx.blank ? '' : ctx.highlight(code, { string: 'token string', comment: 'token comment', number: 'token number', name: 'token' })}</code></pre></div></div>`;
  },
  tableOpen: () => '<div class="overflow-x-auto w-full px-2 mb-6"><table class="min-w-full border-collapse text-sm">',
  tableClose: () => '</table></div>',
  cellOpen: (tag, align) => `<${tag}${align ? ` style="text-align: ${align};"` : ''} class="border-b px-2 py-1">`,
  cellClose: (tag) => `</${tag}>`,
};

const MODELS = [
  { label: 'Sonnet 5', model: 'claude-sonnet-5' },
  { label: 'Opus 4.8', details: ['Pro', 'Upgrade'], locked: true },
  { label: 'Fable 5', details: ['Pro', 'Upgrade'], locked: true },
  { label: 'Haiku 4.5', model: 'claude-haiku-4-5' },
];
const EFFORTS = [{ label: 'Low' }, { label: 'Medium', details: ['Default'] }, { label: 'High' }, { label: 'Extra' },
  { label: 'Max' }];

const picker = {
  models: MODELS, defaultModel: 0, efforts: EFFORTS, defaultEffort: 1, effortLabel: 'Effort',
  toggle: { label: 'Thinking', on: false }, rowRole: 'menuitemradio',
  trigger: (pick, onDown) => {
    const b = h('button', { type: 'button', 'data-testid': 'model-selector-dropdown', 'aria-haspopup': 'menu',
      'aria-expanded': 'false', 'data-state': 'closed', class: 'model-selector', onpointerdown: onDown },
    h('div', { class: 'whitespace-nowrap select-none model-label' }));
    picker.show(b, pick);
    return b;
  },
  show: (b, pick) => {
    b.setAttribute('aria-label', `Model: ${pick.model.label} ${pick.effort.label}`);
    b.querySelector('.model-label').textContent = pick.model.label;
  },
  request: (pick) => ({ model: pick.model.label, effort: pick.effort.label + (pick.thinking ? ' thinking' : '') }),
};

let alertBand;

// The streaming marker's name (a redesign of kind "elements" renames it).
const STREAMING = driftKind() === 'elements' ? 'data-streaming-state' : 'data-is-streaming';
const markdownClass = (streaming, error) => drifted('div', {
  class: (streaming ? 'progressive-markdown' : 'standard-markdown') + ' grid-cols-1 grid gap-3' + (error ? ' text-danger-000' : ''),
})[1].class;

function assistantTurn(messageId, { error }) {
  const markdown = h('div', { class: markdownClass(true, error) });
  const response = h('div', { class: 'font-claude-response relative leading-[1.65rem]' }, h('div', {}, driftWrap(markdown)));
  const message = h('div', { 'data-is-streaming': 'true', class: 'group relative pb-3' }, response);
  const group = h('div', { class: 'group', style: 'height: auto; opacity: 1; transform: none' },
    h('div', { class: 'contents' }, message));
  const el = h('div', { 'data-test-render-count': '2' }, group);
  let grid = null;
  return {
    el,
    get content() { return markdown; },
    render(html, streaming) {
      markdown.className = markdownClass(streaming, error);  // .progressive-markdown while it streams
      markdown.innerHTML = html;
    },
    startThinking() {
      // With thinking, the response is row 2 of a grid; row 1 keeps the thinking (obsidian-AI-exporter, 2026).
      const toggle = h('button', { type: 'button', 'aria-expanded': 'false', class: 'thinking-toggle' },
        h('span', { class: 'truncate text-sm' }, T.thinking));
      const thoughts = h('div', { class: 'collapsed' }, h('div', {},
        h('div', { class: 'standard-markdown grid-cols-1 grid gap-3' },
          h('p', { class: 'font-claude-response-body' }, 'Let me work through the question before answering it.'))));
      grid = h('div', { class: 'grid grid-rows-[auto_auto] min-w-0' },
        h('div', { class: 'row-start-1 col-start-1 min-w-0' }, h('div', { class: 'min-w-0 pl-2 py-1.5' }, toggle, thoughts)),
        h('div', { class: 'row-start-2 col-start-1 relative grid isolate min-w-0' }, h('div', {}, markdown)));
      response.replaceChildren(grid);
      this.toggle = toggle;
    },
    endThinking() { if (this.toggle) this.toggle.firstChild.textContent = T.thought; },
    finish() {
      message.setAttribute(STREAMING, 'false');
      group.append(h('div', { role: 'group', 'aria-label': 'Message actions', class: 'flex justify-start' },
        h('div', { class: 'text-text-300 flex items-stretch justify-between' },
          copyButton(),
          EXT ? h('div', { class: 'w-fit' }, btn('Humanize with QuillBot', { 'data-testid': 'quillbot-humanize-button' })) : null,
          h('div', { class: 'w-fit' }, btn(T.good)), h('div', { class: 'w-fit' }, btn(T.bad)),
          h('div', { class: 'flex items-center' }, btn(T.retry, { 'aria-haspopup': 'menu' })))));
    },
    fail(text, retry) {
      message.setAttribute(STREAMING, 'false');
      group.append(h('div', { class: 'text-danger-000 border border-danger-200 rounded-lg p-3', role: 'alert' }, text, retry));
    },
  };
}

chatSite({
  T,
  convPath: (id) => '/chat/' + id,
  convFromPath: (path) => (path.match(/^\/chat\/([0-9a-f-]+)/i) || [])[1] || null,
  layout() {
    const thread = h('div', { class: 'thread flex-1 flex flex-col px-4 max-w-3xl mx-auto w-full pt-1' });
    const composerHost = h('div', { 'data-chat-input-container': 'true', class: 'composer-host sticky bottom-0 mx-auto w-full pt-6 relative' });
    const header = h('header', { 'data-testid': 'page-header', class: 'flex w-full sticky top-0' },
      h('button', { type: 'button', 'data-testid': 'chat-title-button' }, h('div', { class: 'truncate' }, T.title)),
      h('button', { type: 'button', 'data-testid': 'chat-menu-trigger', 'aria-haspopup': 'menu', html: ICON }));
    const scroller = h('div', { class: 'overflow-y-scroll overflow-x-hidden pt-6 flex-1' }, thread);
    const note = h('div', { role: 'note', 'data-disclaimer': 'true', class: 'text-center text-xs py-2' },
      h('a', { href: 'https://support.anthropic.com/', target: '_blank', rel: 'noopener noreferrer' }, T.disclaimer));
    return { elements: [header, scroller, composerHost, note], thread, composerHost };
  },
  editor: () => h('div', {
    contenteditable: 'true', role: 'textbox', enterkeyhint: 'enter', 'data-testid': 'chat-input', 'aria-label': T.prompt,
    'aria-multiline': 'true', translate: 'no', class: 'tiptap ProseMirror', tabindex: '0',
  }),
  emptyEditor: (el) => { el.innerHTML = `<p data-placeholder="${T.reply}" class="is-empty is-editor-empty"><br class="ProseMirror-trailingBreak"></p>`; },
  fileInput: () => h('input', { id: 'chat-input-file-upload-bottom', 'data-testid': 'file-upload', 'aria-hidden': 'true',
    tabindex: '-1', class: 'absolute -z-10 h-0 w-0 overflow-hidden opacity-0', accept: BOOT.uploadAccept || '', multiple: true,
    'aria-label': T.upload, type: 'file' }),
  chip: (file, onRemove) => {  // guess: no capture shows an attached file
    const bar = h('div', { role: 'progressbar', class: 'animate-pulse', 'aria-label': 'Uploading' });
    const el = h('div', { 'data-testid': 'file-thumbnail', class: 'relative rounded-lg border p-2' },
      h('span', { class: 'truncate' }, file.name), bar, h('button', { type: 'button', 'aria-label': 'Remove', onclick: onRemove }, '×'));
    return { el, bar };
  },
  composer({ editor, sendSlot, fileInput, chipHost, picker: pickerEl }) {
    alertBand = h('div', { class: 'px-3 md:px-2', 'data-alert-band-wrapper': 'true' });
    const ssr = h('div', { class: '[grid-area:1/1] min-w-0', 'data-testid': 'chat-input-grid-area' },
      h('fieldset', { 'data-testid': 'prompt-input-ssr-interactive', class: 'opacity-0 pointer-events-none', inert: true,
        style: 'opacity: 0; position: absolute; inset: 0; pointer-events: none;' },
      h('textarea', { 'data-testid': 'chat-input-ssr', 'aria-label': T.prompt, placeholder: T.placeholder, tabindex: '-1' })));
    const quill = EXT ? h('span', { class: 'qb-host', 'aria-hidden': 'true' }) : null;
    const live = h('div', { class: '[grid-area:1/1] min-w-0', 'data-testid': 'chat-input-grid-area' },
      h('fieldset', { class: 'flex w-full min-w-0 flex-col' }, fileInput, alertBand,
        h('div', { class: 'composer-box' }, chipHost, h('div', { class: 'relative' }, quill, driftWrap(editor)),
          h('div', { class: 'composer-row relative flex gap-2 w-full items-center' },
            h('div', { class: 'relative flex-1 flex items-center gap-1' },
              btn(T.add, { 'aria-haspopup': 'menu', 'aria-expanded': 'false', onclick: () => fileInput.click() }),
              EXT ? btn('Improve prompt with QuillBot') : null),
            pickerEl, sendSlot))));
    return h('div', { class: 'grid', 'data-testid': 'chat-input-grid-container', style: 'position: relative;' }, ssr, live);
  },
  sendButton(kind, { onSend, onStop, busy }) {
    if (kind === 'streaming') return btn(T.stop, { onclick: onStop });
    if (kind === 'empty') return h('button', { type: 'button', 'data-state': 'closed', class: 'h-8 rounded-lg', html: ICON });
    return btn(T.send, { onclick: onSend, disabled: busy });
  },
  userTurn: (text) => h('div', { 'data-test-render-count': '2' }, h('div', { class: 'mb-1 mt-6 group' },
    h('div', { class: 'flex flex-col items-end gap-1' },
      h('div', { class: 'group relative inline-flex gap-2 bg-bg-300 rounded-xl' }, h('div', { class: 'flex flex-row gap-2 relative' },
        h('div', { class: 'flex-1' }, driftWrap(h('div', { 'data-testid': 'user-message', class: 'font-large !font-user-message grid grid-cols-1 gap-2 py-0.5 relative' },
          h('p', { class: 'whitespace-pre-wrap break-words' }, text)))))),
      h('div', { role: 'group', 'aria-label': 'Message actions', class: 'flex justify-start' },
        h('span', { class: 'text-text-500 text-xs', 'data-state': 'closed' }, 'Jan 29'),
        btn(T.retry), btn(T.edit), copyButton())))),
  assistantTurn,
  markup: CLAUDE_MARKUP,
  picker,
  toast: (text) => document.body.append(h('div', { class: 'toast', 'data-testid': 'toast', role: 'status' }, text)),
  banner: (text) => alertBand.append(h('div', { class: 'rounded-lg border p-2', role: 'status' }, text)),
  unavailable: () => document.body.append(h('div', { class: 'toast', role: 'alert' }, T.unavailable)),
});
