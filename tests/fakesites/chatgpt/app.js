// Fake chatgpt.com client. Bundled after common/markdown.js inside one IIFE by the server.
//
// Two shapes (BOOT.shape, PageOptions.shape). "2026" (default) is the markup captured from the real site in
// Jan-Feb 2026; "2025" is the spec's older picture, unchanged.
//
// DOM, shape 2025:
//   main#main > #thread > article[data-turn=user|assistant][data-testid=conversation-turn-N]
//     user:      h5.sr-only "You said:" + div[data-message-author-role=user] > div.whitespace-pre-wrap
//     assistant: h6.sr-only "ChatGPT said:" + div[data-message-author-role=assistant]
//                  > [div.thinking-status (thinking) | button "Thinking time: Xs"] + div.markdown.prose
//                + div.turn-actions (after completion)
//   form.composer: #prompt-textarea (ProseMirror contenteditable div, or a textarea) and one button
//     #composer-submit-button: data-testid=send-button (disabled while the editor is empty) or, while an
//     answer streams, data-testid=stop-button aria-label "Stop generating".
// DOM, shape 2026 (wrappers as on the real page):
//   header#page-header > the model picker of PageOptions.picker "header", else the brand (see menus.js; "pill" puts
//       the picker into the composer)
//   main#main > #thread > article[data-turn][data-testid=conversation-turn-N]
//     user:      h5.sr-only + div.text-base > div > div.grow > div[data-message-author-role=user][data-message-id]
//                  > div > div.user-message-bubble-color > div.whitespace-pre-wrap
//                + (beside div.grow) div.z-0 > div > button[data-testid=copy-turn-action-button] + button "Edit message"
//     assistant: h6.sr-only + div.text-base > div > div.grow > div[data-message-author-role=assistant]
//                  [data-message-id][data-message-model-slug=gpt-5-2] > [thinking status/toggle] + div > div.markdown.prose
//                + (after completion, beside div.grow) div.z-0 > div > copy-turn-action-button,
//                  [QuillBot "Humanize with QuillBot"], good-/bad-response-turn-action-button, "Share",
//                  "Switch model", "More actions"
//   form[data-type=unified-composer] > div.hidden > input[type=file]; the ProseMirror #prompt-textarea;
//     button#composer-plus-btn[data-testid=composer-plus-btn] "Add files and more"; [QuillBot "Improve prompt with
//     QuillBot"]; button "Dictate button"; then ONE of: button "Start Voice" (idle, empty editor: no send button
//     at all), button#composer-submit-button[data-testid=send-button] "Send prompt" (idle, text in the editor),
//     button#composer-submit-button[data-testid=stop-button] "Stop streaming" (answering)
//   then, in main, the disclaimer "ChatGPT can make mistakes. Check important info. See Cookie Preferences."
//   A conversation that cannot be loaded (deleted, unknown) keeps its URL, shows no turns and a toast
//   div[data-testid=toast-root][role=status] "Unable to load conversation <id>"; the composer stays usable.
// Answers stream from POST /backend-api/conversation (SSE). While the document is hidden, answer text is not
// rendered (elements with data-start/data-end stay empty; text already shown is stripped when the page is hidden)
// and comes back in the first animation frame after the page becomes visible (frames do not run while hidden), or
// BOOT.rerenderDelayMs later. A script's renderLagMs holds the text back until that long after the stop button
// went (the turn actions come first). Limits show as an error-styled turn, an alert box in the thread, a toast or
// a banner; a broken stream as an error block with a Retry button. BOOT.stopDelayMs: the stop button and the
// new turn come that long after the user turn. BOOT.layout moves the answer text (to pin
// extraction anchors), BOOT.sendClick makes the send button ignore untrusted (script) clicks or all clicks.

const BOOT = JSON.parse(document.getElementById('client-bootstrap').textContent);
const LANG = ['ja', 'de'].includes(BOOT.locale) ? BOOT.locale : 'en';
// BOOT.drift: the markup changed under us (PageOptions.drift): renamed test ids, a moved input, German labels.
const DRIFT = !!BOOT.drift;
const NEW = BOOT.shape !== '2025';                  // the 2026 markup
const EXT = NEW && BOOT.extensionButtons !== false; // another extension's (QuillBot's) buttons
const MODEL = BOOT.model || '5.2';
const T = {
  en: {
    send: 'Send prompt', stop: 'Stop generating', skip: 'Skip thinking', thinking: 'Thinking',
    thinkingTime: (s) => `Thinking time: ${s}s`, placeholder: 'Ask anything', you: 'You said:',
    gpt: 'ChatGPT said:', copy: 'Copy', copyCode: 'Copy code', good: 'Good response', bad: 'Bad response',
    loadError: 'Unable to load conversation', netError: 'Something went wrong while generating the response.',
    newChat: 'New chat', thoughts: 'Reasoned about the question step by step.', retry: 'Retry',
    stopStreaming: 'Stop streaming', share: 'Share', switchModel: 'Switch model', moreActions: 'More actions',
    edit: 'Edit message', addFiles: 'Add files and more', dictate: 'Dictate button', voice: 'Start Voice',
    modelSelector: (m) => `Model selector, current model is ${m}`, unableToLoad: (id) => `Unable to load conversation ${id}`,
    disclaimer: 'ChatGPT can make mistakes. Check important info. See ', cookies: 'Cookie Preferences',
  },
  ja: {
    send: 'プロンプトを送信する', stop: '生成を停止', skip: '今すぐ回答', thinking: '思考中',
    thinkingTime: (s) => `思考時間: ${s}s`, placeholder: '質問してみましょう', you: 'あなた:',
    gpt: 'ChatGPT:', copy: 'コピーする', copyCode: 'コードをコピーする', good: '良い回答', bad: '悪い回答',
    loadError: '会話を読み込めません', netError: '回答の生成中に問題が発生しました。',
    newChat: '新しいチャット', thoughts: '質問について段階的に考えました。', retry: '再試行',
    stopStreaming: 'ストリーミングの停止', share: '共有する', switchModel: 'モデルを切り替える',
    moreActions: 'その他のアクション', edit: 'メッセージを編集する', addFiles: 'ファイルの追加など',
    dictate: 'ディクテーションボタン', voice: '音声モードを開始する',
    modelSelector: (m) => `モデル セレクター、現在のモデルは ${m} です`, unableToLoad: () => '会話を読み込めません',
    disclaimer: 'ChatGPT の回答は必ずしも正しいとは限りません。重要な情報は確認するようにしてください。', cookies: '',
  },
  de: {
    send: 'Prompt senden', stop: 'Generierung anhalten', skip: 'Nachdenken überspringen', thinking: 'Denkt nach',
    thinkingTime: (s) => `Bedenkzeit: ${s}s`, placeholder: 'Frag einfach', you: 'Du hast gesagt:',
    gpt: 'ChatGPT hat gesagt:', copy: 'Kopieren', copyCode: 'Code kopieren', good: 'Gute Antwort',
    bad: 'Schlechte Antwort', loadError: 'Unterhaltung kann nicht geladen werden',
    netError: 'Beim Generieren der Antwort ist etwas schiefgelaufen.', newChat: 'Neuer Chat',
    thoughts: 'Schritt für Schritt über die Frage nachgedacht.', retry: 'Wiederholen',
    stopStreaming: 'Streaming anhalten', share: 'Teilen', switchModel: 'Modell wechseln',
    moreActions: 'Weitere Aktionen', edit: 'Nachricht bearbeiten', addFiles: 'Dateien hinzufügen und mehr',
    dictate: 'Diktieren', voice: 'Sprachmodus starten',
    modelSelector: (m) => `Modellauswahl, aktuelles Modell ist ${m}`,
    unableToLoad: (id) => `Unterhaltung ${id} kann nicht geladen werden`,
    disclaimer: 'ChatGPT kann Fehler machen. Überprüfe wichtige Informationen. Siehe ', cookies: 'Cookie-Voreinstellungen',
  },
}[LANG];

const ICON_SEND = '<svg width="20" height="20" viewBox="0 0 20 20" aria-hidden="true"><path d="M10 3l6 6h-4v8H8V9H4z" fill="currentColor"/></svg>';
const ICON_STOP = '<svg width="20" height="20" viewBox="0 0 20 20" aria-hidden="true"><rect x="5" y="5" width="10" height="10" fill="currentColor"/></svg>';
const ICON_DOT = '<svg width="16" height="16" viewBox="0 0 16 16" aria-hidden="true"><circle cx="8" cy="8" r="3" fill="currentColor"/></svg>';

function h(tag, attrs, ...children) {
  [tag, attrs] = drifted(tag, attrs);  // common/drift.js: PageOptions.mutation, one redesign at a time
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v == null) continue;
    if (k === 'html') el.innerHTML = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c != null) el.append(c);
  return el;
}

const state = {
  conversationId: null,
  streaming: false,
  delayed: false,      // BOOT.stopDelayMs: the question went, the answer has not started yet
  frozen: false,       // the server said this answer hangs: the stop button no longer does anything
  abort: null,
  turnIndex: 0,
  assistantTurns: [],
};

// Issue 38: a Project's pages are /g/<project>/project (its new chat) and /g/<project>/c/<id> (its conversations),
// as oracle and agbrowse drive them; a temporary chat opens at /?temporary-chat=true (oracle's --chatgpt-url).
const m = location.pathname.match(/^(?:\/g\/([A-Za-z0-9_-]+))?\/c\/([0-9a-f-]+)/i);
if (m) state.conversationId = m[2];
const PROJECT = (location.pathname.match(/^\/g\/([A-Za-z0-9_-]+)\//) || [])[1] || null;
const TEMPORARY = !m && new URLSearchParams(location.search).get('temporary-chat') === 'true';

let thread, editor, sendSlot, uploader;

// ---------------------------------------------------------------------------------------------------------------
// Turns

const actionButton = (label, testid, extra) => h('button', {
  class: 'text-token-text-secondary hover:bg-token-bg-secondary rounded-lg', 'aria-label': label,
  'data-testid': testid, 'data-state': 'closed', type: 'button', ...extra,
}, h('span', { class: 'flex items-center justify-center touch:w-10 h-8 w-8', html: ICON_DOT }));

function addUserTurn(text, tool) {
  const n = ++state.turnIndex;
  // A Deep Research question shows the tool as an inline pill before its text (NX capture deep-research-2026-07.html).
  const pill = NEW && tool === 'deep research' ? h('span', {
    'data-inline-selection-pill': '', 'data-id': 'plugin:connector_openai_deep_research', 'data-symbol': 'ecosystemMention',
    'data-keyword': 'Deep research',
  }, h('span', { class: 'truncate' }, 'Deep research'), ' ') : null;
  if (!NEW) {
    const art = h('article', { 'data-turn': 'user', 'data-testid': `conversation-turn-${n}`, class: 'w-full' },
      h('h5', { class: 'sr-only' }, T.you),
      h('div', { 'data-message-author-role': 'user', 'data-message-id': crypto.randomUUID(), dir: 'auto' },
        h('div', { class: 'whitespace-pre-wrap' }, text)));
    thread.append(art);
    return art;
  }
  const art = h('article', {
    'data-turn': 'user', 'data-testid': `conversation-turn-${n}`, class: 'text-token-text-primary w-full',
  }, h('h5', { class: 'sr-only' }, T.you),
  h('div', { class: 'text-base my-auto mx-auto pt-3' }, h('div', { class: 'thread-content' },
    h('div', { class: 'flex max-w-full flex-col grow' },
      h('div', {
        'data-message-author-role': 'user', 'data-message-id': crypto.randomUUID(), dir: 'auto',
        class: 'min-h-8 text-message relative flex w-full flex-col items-end',
      }, h('div', { class: 'flex w-full flex-col gap-1 empty:hidden items-end' },
        h('div', { class: 'user-message-bubble-color relative rounded-[18px] px-4 py-1.5' },
          driftWrap(h('div', { class: 'whitespace-pre-wrap' }, pill, text)))))),
    h('div', { class: 'z-0 flex justify-end' }, h('div', { class: 'flex flex-wrap items-center' },
      actionButton(T.copy, 'copy-turn-action-button'), actionButton(T.edit, null))))));
  thread.append(art);
  return art;
}

// ---------------------------------------------------------------------------------------------------------------
// Answer markup (as chatgpt.com renders an answer in 2026): blocks carry data-start / data-end source offsets; code
// blocks are a <pre> holding a header (icon + language display name, Copy code / Run buttons) and a CodeMirror-style
// viewer (pre.cm-content > code > highlighted spans, no language class); tables sit in two wrappers with a
// "Copy table" button; links open in a new tab with utm_source=chatgpt.com appended and an icon; math is KaTeX
// (TeX in the MathML annotation; display math as a block of its own); citations are link pills.

const ICON_USE = (id, cls) => `<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20" aria-hidden="true" class="${cls}"><use href="/cdn/assets/sprites-core.svg#${id}" fill="currentColor"></use></svg>`;
const HL = { string: 'ͼk', comment: 'ͼl', number: 'ͼj', name: 'ͼm' };
const sectionId = () => Math.random().toString(36).slice(2, 9);

function withUtm(href) {
  if (!/^https?:/i.test(href)) return href;
  const hash = href.indexOf('#');
  const base = hash === -1 ? href : href.slice(0, hash);
  const frag = hash === -1 ? '' : href.slice(hash);
  return base + (base.includes('?') ? '&' : '?') + 'utm_source=chatgpt.com' + frag;
}

const CHATGPT_MARKUP = {
  attrs(tag, where, path) {
    if (!where) return '';
    const sec = /^(h\d|li)$/.test(tag) ? ` data-section-id="${sectionId()}"` : '';
    return `${sec} data-start="${where.start}" data-end="${where.end}"`;
  },
  listStart: (start) => (start !== 1 ? ` start="${start}"` : ''),
  open: (kind) => ({ strong: '<strong>', em: '<em>', s: '<del>' }[kind]),
  close: (kind) => ({ strong: '</strong>', em: '</em>', s: '</del>' }[kind]),
  codeInline: (html) => `<code>${html}</code>`,
  linkOpen: (href, ctx) => `<span class="" data-state="closed"><a target="_blank" class="decorated-link" rel="noopener" href="${ctx.escapeHtml(withUtm(href))}">`,
  linkClose: () => `<span aria-hidden="true" class="ms-0.5 inline-block align-middle leading-none select-none">${ICON_USE('304883', 'block h-[0.75em] w-[0.75em] stroke-current stroke-[0.75] select-none')}</span></a></span>`,
  mathInline: (tex, ctx) => (ctx.blank ? '<span class="katex"></span>' : ctx.katexHtml(tex)),
  mathBlock: (tex, where, path, ctx) => (ctx.blank ? '<span class="katex-display"></span>'
    : `<span class="katex-display">${ctx.katexHtml(tex, { display: true })}</span>`),
  cite: (label, url, ctx) => `<span class="" data-state="closed"><span class="ms-1 inline-flex max-w-full items-center relative top-[-0.094rem] animate-[show_150ms_ease-in]" data-testid="webpage-citation-pill" style="width: auto;">`
    + `<a href="${ctx.escapeHtml(withUtm(url))}" target="_blank" rel="noopener" alt="${ctx.escapeHtml(withUtm(url))}" class="flex h-4.5 overflow-hidden rounded-xl px-2 text-[9px] font-medium text-token-text-secondary!">`
    + '<span class="relative start-0 bottom-0 flex h-full w-full items-center"><span class="flex h-4 w-full items-center justify-between overflow-hidden">'
    + `<span class="max-w-[15ch] grow truncate overflow-hidden text-center">${ctx.blank ? '' : ctx.escapeHtml(label)}</span></span></span></a></span></span>`,
  codeBlock(lang, code, where, path, ctx) {
    if (ctx.blank) return `<pre class="overflow-visible! px-0!"${this.attrs('pre', where, path)}></pre>`;
    const label = lang ? ctx.languageLabel(lang) : 'plaintext';
    const run = /^(python|py|javascript|js)$/i.test(lang)
      ? `<button class="btn relative btn-ghost border-token-border-default ms-2 border font-sans" aria-label="Run code" type="button"><div class="flex w-full items-center justify-center gap-1.5">${ICON_USE('6ef7a4', '-ms-0.5 icon')}Run</div></button>`
      : '';
    const codeHtml = code ? ctx.highlight(code, HL) : '';
    return `<pre class="overflow-visible! px-0!"${this.attrs('pre', where, path)}><div class="relative w-full mt-4 mb-1"><div class=""><div class="contents">`
      + '<div class="border border-token-border-light border-radius-3xl corner-superellipse/1.1 rounded-3xl"><div class="relative h-full w-full border-radius-3xl bg-(--code-block-surface) overflow-clip rounded-3xl">'
      + '<div class="select-none sticky z-2 top-(--sticky-padding-top)"><div class="flex w-full items-center justify-between py-1.5 ps-4 pe-1.5 font-sans md:ps-5 bg-(--code-block-surface)">'
      + `<div class="flex max-w-[75%] min-w-0 cursor-default items-center text-sm font-medium justify-self-start text-token-text-primary">${ICON_USE('e45ab3', 'icon-sm me-2.5 shrink-0')}${ctx.escapeHtml(label)}</div>`
      + `<div class="flex flex-row items-center gap-0.5 justify-self-end"><button type="button" class="flex gap-1 items-center select-none py-2 text-sm font-medium rounded-full px-2" aria-label="${T.copy}" data-state="closed">${ICON_USE('ce3544', 'icon-md')}<span>${T.copyCode}</span></button>${run}</div></div></div>`
      + '<div class="pointer-events-none absolute inset-x-4 top-12 bottom-4"><div class="pointer-events-none sticky z-40 shrink-0 z-1!"><div class="sticky bg-token-border-light" style="height: 1px;"></div></div></div>'
      + '<div class="relative"><div class="h-full min-h-0 min-w-0"><div class="h-full min-h-0 min-w-0" style="width: 100%; transform: none;"><div class=""><div class="relative"><div class="" style="transform: none;"><div class="relative z-0 flex max-w-full">'
      + '<div id="code-block-viewer" dir="ltr" class="q9tKkq_viewer cm-editor z-10 light:cm-light dark:cm-light flex h-full w-full flex-col items-stretch ͼd ͼr"><div class="cm-scroller">'
      + `<pre class="cm-content q9tKkq_readonly m-0"><code>${codeHtml}</code></pre></div></div>`
      + '</div></div></div></div></div></div></div><div class=""><div class="" style="width: 100%; transform: none;"></div></div></div></div></div></div></div></pre>';
  },
  tableOpen(where, path) {
    return '<div class="TyagGW_tableContainer"><div tabindex="-1" class="group TyagGW_tableWrapper flex flex-col-reverse w-fit">'
      + `<table${this.attrs('table', where, path)} class="w-fit min-w-(--thread-content-width)">`;
  },
  tableClose: () => '</table><div class="relative h-0 self-end select-none"><div class="absolute end-0 flex items-end" style="height: 33px;">'
    + `<span class="" data-state="closed"><button aria-label="Copy table" class="hover:bg-token-bg-tertiary text-token-text-secondary relative z-10 my-1 rounded-sm p-1">${ICON_USE('ce3544', 'icon')}</button></span></div></div></div></div>`,
  cellOpen(tag, align, where, path) {
    const style = align ? ` style="text-align: ${align};"` : '';
    return `<${tag}${this.attrs(tag, where, path)} data-col-size="sm"${tag === 'th' ? ' class="last:pe-10"' : ''}${style}>`;
  },
  cellClose: (tag) => `</${tag}>`,
};

const LAYOUT = BOOT.layout || 'standard';

class AssistantTurn {
  constructor(messageId, { error = false } = {}) {
    this.messageId = messageId;
    this.text = '';
    this.stale = false;
    // standard: div.markdown.prose; bare: no markdown class; divs: no class and no <p>; detached: the text lives
    // outside the turn (the turn itself stays empty).
    const cls = LAYOUT === 'standard' || error
      ? 'markdown prose dark:prose-invert wrap-break-word w-full light markdown-new-styling' : 'w-full';
    this.markdown = h('div', { class: cls });
    if (error) this.markdown.classList.add('text-token-text-error');
    const inTurn = LAYOUT === 'detached' && !error ? null : this.markdown;
    // 2026: the markdown sits in a wrapper of the message; thinking status / toggle go before that wrapper
    this.content = NEW ? h('div', { class: 'flex w-full flex-col gap-1 empty:hidden first:pt-[1px]' }, driftWrap(inTurn))
      : inTurn;
    this.message = h('div', {
      'data-message-author-role': 'assistant', 'data-message-id': messageId,
      'data-message-model-slug': NEW ? currentChoice().model : 'gpt-5', dir: 'auto',
      class: NEW ? 'min-h-8 text-message relative flex w-full flex-col items-end' : 'min-h-8 text-message',
    }, this.content);
    if (NEW) {
      this.column = h('div', { class: 'thread-content' }, h('div', { class: 'flex max-w-full flex-col grow' }, this.message));
      this.article = h('article', {
        'data-turn': 'assistant', 'data-testid': `conversation-turn-${++state.turnIndex}`,
        class: 'text-token-text-primary w-full',
      }, h('h6', { class: 'sr-only' }, T.gpt), h('div', { class: 'text-base my-auto mx-auto' }, this.column));
    } else {
      this.article = h('article', {
        'data-turn': 'assistant', 'data-testid': `conversation-turn-${++state.turnIndex}`, class: 'w-full',
      }, h('h6', { class: 'sr-only' }, T.gpt), this.message);
    }
    thread.append(this.article);
    if (LAYOUT === 'detached' && !error) thread.append(this.markdown);
    state.assistantTurns.push(this);
  }

  setText(text) { this.text = text; this.render(); }

  append(piece) { this.text += piece; this.render(); }

  render() {
    // React does not commit text for a background tab: the block elements exist, their text does not.
    const hidden = document.visibilityState === 'hidden';
    this.stale = hidden;
    // renderLagMs: the text is held back (the turn stays empty) until release()
    let html = renderMarkdown(this.held ? '' : this.text, { hooks: CHATGPT_MARKUP, blank: hidden });
    if (LAYOUT === 'divs') html = html.replace(/<(\/?)p(?=[\s>])/g, '<$1div');
    this.markdown.innerHTML = html;
    driftSplit(this.markdown);
  }

  release() { if (this.held) { this.held = false; this.render(); } }

  fail(text) {
    this.release();
    this.article.append(h('div', { class: 'text-token-text-error border-token-border-error error-block' },
      h('div', {}, text),
      h('button', { class: 'btn btn-secondary', type: 'button', onclick: () => {} }, T.retry)));
  }

  startThinking() {
    this.status = h('div', { class: 'thinking-status', 'aria-live': 'polite' },
      h('span', { class: 'loading-shimmer' }, T.thinking),
      h('button', { class: 'btn btn-secondary skip-thinking', type: 'button', onclick: () => this.skip() }, T.skip));
    this.message.insertBefore(this.status, this.content && this.content.parentNode === this.message ? this.content : null);
  }

  skip() {
    fetch('/backend-api/skip_thinking', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message_id: this.messageId }),
    }).catch(() => {});
  }

  endThinking(seconds) {
    if (this.status) this.status.remove();
    const details = h('div', { class: 'thinking-details', hidden: true }, T.thoughts);
    const btn = h('button', {
      type: 'button', class: 'thinking-toggle', 'aria-expanded': 'false',
      onclick: () => {
        const open = btn.getAttribute('aria-expanded') === 'true';
        btn.setAttribute('aria-expanded', open ? 'false' : 'true');
        details.hidden = open;
      },
    }, h('span', {}, T.thinkingTime(seconds)));
    const before = this.content && this.content.parentNode === this.message ? this.content : null;
    this.message.insertBefore(btn, before);
    this.message.insertBefore(details, before);
  }

  showFiles(files) {
    const shown = chatgptGenerated(files);
    if (shown) this.message.append(shown);
    this.imageOnly = !!shown && !this.text.trim();
  }

  finish() {
    if (this.actions || this.imageOnly) return;  // an image-only answer mounts no action bar (oracle)
    if (NEW) {
      this.actions = h('div', { class: 'z-0 flex min-h-[46px] justify-start' }, h('div', { class: 'flex flex-wrap items-center' },
        actionButton(T.copy, 'copy-turn-action-button'),
        EXT ? h('div', {}, actionButton('Humanize with QuillBot', 'quillbot-humanize-button', { 'data-test-id': '' })) : null,
        actionButton(T.good, 'good-response-turn-action-button'),
        actionButton(T.bad, 'bad-response-turn-action-button'),
        actionButton(T.share, null),
        h('span', { 'data-state': 'closed' }, actionButton(T.switchModel, null, { 'aria-haspopup': 'menu', 'aria-expanded': 'false' })),
        actionButton(T.moreActions, null, { 'aria-haspopup': 'menu', 'aria-expanded': 'false' })));
      this.column.append(this.actions);
      return;
    }
    this.actions = h('div', { class: 'turn-actions' },
      h('button', { class: 'icon-btn', 'aria-label': T.copy, 'data-testid': 'copy-turn-action-button', html: ICON_DOT }),
      h('button', { class: 'icon-btn', 'aria-label': T.good, 'data-testid': 'good-response-turn-action-button', html: ICON_DOT }),
      h('button', { class: 'icon-btn', 'aria-label': T.bad, 'data-testid': 'bad-response-turn-action-button', html: ICON_DOT }));
    this.article.append(this.actions);
  }
}

document.addEventListener('visibilitychange', () => {
  if (document.visibilityState !== 'visible') {
    for (const t of state.assistantTurns) t.render();  // hidden: the text nodes go
    return;
  }
  const rerender = () => { for (const t of state.assistantTurns) if (t.stale) t.render(); };
  if (BOOT.rerenderDelayMs > 0) setTimeout(rerender, BOOT.rerenderDelayMs);  // a slower page catches up later
  else requestAnimationFrame(rerender);
});

// ---------------------------------------------------------------------------------------------------------------
// Composer

function editorText() {
  if (editor.tagName === 'TEXTAREA') return editor.value;
  return editor.innerText.replace(/\n+$/, '');
}

function clearEditor() {
  if (editor.tagName === 'TEXTAREA') { editor.value = ''; return; }
  editor.innerHTML = `<p data-placeholder="${T.placeholder}" class="placeholder"><br class="ProseMirror-trailingBreak"></p>`;
}

function updatePlaceholder() {
  if (editor.tagName === 'TEXTAREA') return;
  const p = editor.querySelector('p');
  const empty = !editorText().trim();
  if (p) p.classList.toggle('placeholder', empty && editor.childNodes.length === 1);
}

function renderButton() {
  let btn;
  if (state.streaming) {
    btn = h('button', {
      id: 'composer-submit-button', type: 'button', 'data-testid': DRIFT ? 'composer-stop-button' : 'stop-button',
      'aria-label': NEW ? T.stopStreaming : T.stop,
      class: 'composer-submit-btn', html: ICON_STOP, onclick: onStop,
    });
  } else if (NEW && !editorText().trim() && !(uploader && uploader.count())) {
    // 2026: nothing to send, so no send button at all: the voice button stands in its place
    btn = h('button', {
      type: 'button', 'aria-label': T.voice, class: 'composer-submit-button-color text-submit-btn-text flex h-9 w-9',
      html: ICON_DOT,
    });
  } else {
    btn = h('button', {
      id: 'composer-submit-button', type: 'button', 'data-testid': DRIFT ? 'send-prompt-button' : 'send-button',
      'aria-label': T.send,
      class: NEW ? 'composer-submit-btn composer-submit-button-color' : 'composer-submit-btn', html: ICON_SEND,
      disabled: !(editorText().trim() || (uploader && uploader.count())) || (uploader && uploader.busy()),
      onclick: onSendClick,
    });
  }
  sendSlot.replaceChildren(btn);
  state.shownEmpty = !editorText().trim();
}

function onSendClick(ev) {
  if (BOOT.sendClick === 'none') return;
  if (BOOT.sendClick === 'trusted' && !ev.isTrusted) return;  // a script's click() is not a user's click
  send();
}

function onEditorChange() {
  updatePlaceholder();
  if (!state.streaming) {
    const empty = !editorText().trim();
    if (NEW) {
      if (empty !== state.shownEmpty) renderButton();  // voice button <-> send button
      return;
    }
    const btn = sendSlot.firstChild;
    if (btn) btn.disabled = empty;
  }
}

function buildComposer() {
  if (BOOT.composer === 'textarea') {
    editor = h('textarea', {
      id: DRIFT ? 'composer-input' : 'prompt-textarea', 'data-testid': DRIFT ? 'composer-input' : 'prompt-textarea',
      name: 'prompt-textarea',
      placeholder: T.placeholder, rows: '1', dir: 'auto', class: 'text-token-text-primary',
    });
  } else {
    editor = h('div', {
      contenteditable: 'true', translate: 'no', class: 'ProseMirror', id: DRIFT ? 'composer-input' : 'prompt-textarea',
      'data-virtualkeyboard': 'true', role: 'textbox', 'aria-multiline': 'true',
    });
    clearEditor();
    // ProseMirror watches DOM mutations, so text put there by any means is picked up.
    new MutationObserver(onEditorChange).observe(editor, { childList: true, characterData: true, subtree: true });
  }
  editor.addEventListener('input', onEditorChange);
  editor.addEventListener('change', onEditorChange);
  editor.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      if (!state.streaming) send();
    }
  });
  sendSlot = h('div', { class: 'composer-actions' });
  if (NEW) return buildComposer2026();
  const form = h('form', {
    class: 'composer w-full', 'data-type': 'unified-composer',
    onsubmit: (ev) => { ev.preventDefault(); if (!state.streaming) send(); },
  }, DRIFT ? h('div', { id: 'composer-background', class: 'composer-bg' }, h('div', { class: 'input-wrap' }, editor))
    : h('div', { class: 'composer-editor' }, editor), sendSlot);
  const fileInput = h('input', { type: 'file', multiple: true, tabindex: '-1' });
  const chipHost = h('div', { class: 'composer-attachments' });
  form.prepend(h('div', { class: 'hidden' }, fileInput), chipHost);
  makeUploader(fileInput, chipHost);
  renderButton();
  return form;
}

// ChatGPT's own upload errors (a 2025 copy of its bundle, README of the captures), shown as toasts.
const CHATGPT_UPLOAD_TEXTS = {
  ...UPLOAD_TEXTS.en,
  failed: (n) => `Unable to upload ${n}`,
  tooMany: (m) => `Too many files uploaded. Maximum number of files at a time is ${m}`,
  badType: (n) => `Uploads with file type ${n.slice(n.lastIndexOf('.'))} are not supported`,
  tooLarge: (n, max) => `File is too large. Maximum file size is ${Math.max(1, Math.round((max || 0) / 1048576))}MB`,
  empty: () => 'File is empty',
};

// The tile (README of the captures; agbrowse): div[role=group][aria-label=<name>].group/file-tile, no test id; its
// progress while uploading is not captured (a guess: a progressbar inside). PageOptions.fileTile "testid": the tile
// this fake used to invent (data-testid=file-tile), kept as a variant.
function chatgptTile(file, onRemove) {
  const bar = h('div', { role: 'progressbar', class: 'absolute inset-0 animate-pulse', 'aria-label': 'Uploading' });
  const el = BOOT.fileTile === 'testid'
    ? h('div', { 'data-testid': 'file-tile', 'data-filename': file.name, class: 'file-chip' }, h('span', {}, file.name), bar)
    : h('div', { role: 'group', 'aria-label': file.name, class: 'group/file-tile relative rounded-2xl border' },
      h('button', { type: 'button', 'aria-label': file.name, class: 'flex items-center gap-2' },
        h('span', { class: 'truncate font-semibold' }, file.name),
        h('span', { class: 'text-token-text-secondary' }, (file.name.split('.').pop() || '').toUpperCase())),
      bar,
      h('button', { type: 'button', 'aria-label': `Remove file 1: ${file.name}`, onclick: onRemove }, '×'));
  return { el, bar };
}

function makeUploader(input, host) {
  const texts = LANG === 'ja' ? UPLOAD_TEXTS.ja : CHATGPT_UPLOAD_TEXTS;
  uploader = fakeUploader({
    input, host, endpoint: '/backend-api/files', texts, chip: NEW ? chatgptTile : plainChip('div', texts, 'file-tile'),
    toast: (text) => document.body.append(h('div', { 'data-testid': 'toast-root', class: 'toast-root', role: 'status' },
      h('div', { class: 'toast' }, text))),
    onChange: () => { if (!state.streaming) renderButton(); },
  });
}

function buildComposer2026() {
  // chatgpt-2607-file-input-ready.html: form[data-testid=composer] holds input#upload-files[type=file][multiple]
  // [hidden]; "Upload from computer" in the "+" menu opens it (menus.js).
  const fileInput = h('input', { id: 'upload-files', type: 'file', multiple: true, hidden: true, tabindex: '-1',
    accept: BOOT.uploadAccept || null });
  const chipHost = h('div', { class: 'composer-attachments flex flex-wrap gap-2' });
  makeUploader(fileInput, chipHost);
  const composerButton = (label, extra) => h('button', { type: 'button', class: 'composer-btn', 'aria-label': label, ...extra, html: ICON_DOT });
  const surface = h('div', { class: 'composer-surface bg-token-bg-primary', 'data-composer-surface': 'true' },
    chipHost,
    h('div', { class: 'composer-primary flex min-h-14 items-center' },
      DRIFT ? h('div', { id: 'composer-background', class: 'composer-bg' }, h('div', { class: 'input-wrap' }, editor))
        : h('div', { class: 'prosemirror-parent text-token-text-primary flex-1' }, editor)),
    h('div', { class: 'composer-leading' }, h('span', { class: 'flex', 'data-state': 'closed' },
      composerButton(T.addFiles, { 'data-testid': 'composer-plus-btn', id: 'composer-plus-btn', 'aria-haspopup': 'menu', 'aria-expanded': 'false',
        onpointerdown: (ev) => { if (ev.button === 0) plusMenu(ev.currentTarget); } })),  // menus.js
      h('span', { class: 'composer-tool-pills flex' })),
    h('div', { class: 'composer-trailing flex items-center gap-2' }, h('div', { class: 'ms-auto flex items-center gap-1.5' },
      EXT ? h('span', { 'data-state': 'closed' }, composerButton('Improve prompt with QuillBot')) : null,
      PILL ? composerPill() : null,  // menus.js
      h('span', { 'data-state': 'closed' }, composerButton(T.dictate)),
      sendSlot)));
  const form = h('form', {
    class: 'composer group/composer w-full', 'data-type': 'unified-composer', 'data-testid': 'composer',
    onsubmit: (ev) => { ev.preventDefault(); if (!state.streaming) send(); },
  }, fileInput,
  h('div', {}, surface),
  h('input', { class: 'sr-only select-none', id: 'upload-photos', type: 'file', accept: 'image/*', multiple: true, tabindex: '-1' }),
  h('input', { class: 'sr-only select-none', id: 'upload-camera', type: 'file', accept: 'image/*', capture: 'environment', tabindex: '-1' }));
  renderButton();
  return form;
}

function setStreaming(on) {
  state.streaming = on;
  if (!on) { state.abort = null; state.frozen = false; }
  renderButton();
}

function onStop() {
  if (state.frozen || !state.abort) return;
  state.abort.abort();
}

// ---------------------------------------------------------------------------------------------------------------
// Talking to the backend

function reportComplete(messageId) {
  // The UI just went idle: tell the backend when, in wall-clock epoch ms.
  const t = performance.timeOrigin + performance.now();
  fetch('/ces/v1/t', {
    method: 'POST', headers: { 'content-type': 'application/json' }, keepalive: true,
    body: JSON.stringify({ event: 'answer_complete', message_id: messageId, t }),
  }).catch(() => {});
}


// A Deep Research turn (NX capture 2026-07-29, deep-research-2026-07.html): section[data-turn=assistant] with its
// sr-only heading and the research frame, nothing else: no message element, no markdown, no turn actions. The plan,
// its progress and the report live in the cross-origin frame (chatgpt/research.js).
function addResearchTurn(url) {
  const n = ++state.turnIndex;
  thread.append(h('section', {
    dir: 'auto', 'data-turn-id': 'request-WEB:' + crypto.randomUUID(), 'data-testid': `conversation-turn-${n}`,
    'data-turn': 'assistant',
  }, h('h4', { class: 'sr-only select-none' }, T.gpt),
  h('div', { class: 'text-base' }, h('div', { 'data-conversation-screenshot-content': '', class: 'agent-turn' },
    h('div', {}, h('div', { class: 'no-scrollbar relative' },
      h('div', { class: 'relative max-w-full overflow-hidden h-full', style: 'height: 484px;' },
        h('iframe', { title: 'internal://deep-research', src: url, sandbox: 'allow-scripts allow-same-origin allow-forms',
          allowfullscreen: '', class: 'h-full w-full max-w-full' }))))))));
}

function showError(text) {
  const turn = new AssistantTurn(crypto.randomUUID(), { error: true });
  turn.setText(text);
  return turn;
}

function showLimit(place, text, messageId) {
  if (place === 'alert') {
    thread.append(h('div', { role: 'alert', class: 'limit-alert border-token-border-warning' }, text));
  } else if (place === 'toast') {
    document.body.append(h('div', { 'data-testid': 'toast-root', class: 'toast-root', role: 'status' },
      h('div', { class: 'toast' }, text)));
  } else if (place === 'banner') {
    const form = document.querySelector('form.composer');
    form.parentNode.insertBefore(h('div', { 'data-testid': 'usage-limit-banner', class: 'limit-banner' }, text), form);
  } else {
    const turn = new AssistantTurn(messageId, { error: true });
    turn.setText(text);
    return turn;
  }
  return null;
}

async function send() {
  if (state.streaming || state.delayed || (uploader && uploader.busy())) return;  // no send while a file uploads
  const question = editorText().trim();   // read at send time: whatever the editor holds now is what is asked
  if (!question) return;
  const attachments = uploader ? uploader.ids() : [];
  if (uploader) uploader.clear();
  clearEditor();
  onEditorChange();
  const tools = currentTools();
  addUserTurn(question, tools[0]);
  if (BOOT.stopDelayMs > 0) {
    // The site takes a moment to answer: the user turn shows, the composer stays idle (no stop button, no new
    // turn), and the previous answer still looks finished.
    state.delayed = true;
    await new Promise((resolve) => setTimeout(resolve, BOOT.stopDelayMs));
    state.delayed = false;
  }
  const abort = new AbortController();
  state.abort = abort;
  setStreaming(true);
  let turn = null;
  let finished = false;
  const finish = (t) => {
    finished = true;
    setStreaming(false);
    if (!t) return;
    t.finish();
    if (t.held) {
      // renderLagMs: stop button gone and actions shown, the text only comes later; the page is done then
      setTimeout(() => { t.release(); reportComplete(t.messageId); }, t.lagMs);
    } else {
      reportComplete(t.messageId);
    }
  };
  try {
    const response = await fetch('/backend-api/conversation', {
      method: 'POST', signal: abort.signal,
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'oai-language': LANG === 'ja' ? 'ja-JP' : 'en-US' },
      body: JSON.stringify({
        action: 'next', conversation_id: state.conversationId, ...currentChoice(), tools, attachments,
        // A guess (no capture shows the 2026 request): the web client of 2024 sent these for a GPT's or Project's
        // chat and for a temporary one.
        ...(PROJECT ? { gizmo_id: PROJECT } : {}), ...(TEMPORARY ? { history_and_training_disabled: true } : {}),
        messages: [{ id: crypto.randomUUID(), author: { role: 'user' }, content: { content_type: 'text', parts: [question] } }],
      }),
    });
    if (response.status === 429) {
      const body = await response.json();
      turn = showLimit(body.notice, body.detail, body.message_id);
      finish(turn);
      return;
    }
    if (!response.ok) throw new Error('HTTP ' + response.status);
    await readEvents(response, (ev) => {
      switch (ev.type) {
        case 'meta':
          if (!state.conversationId) {
            state.conversationId = ev.conversation_id;
            // A temporary chat keeps its URL (a guess: nothing public shows where the 2026 page goes).
            if (!TEMPORARY) history.pushState({}, '', (PROJECT ? '/g/' + PROJECT : '') + '/c/' + ev.conversation_id);
          }
          if (ev.research_url) { addResearchTurn(ev.research_url); break; }  // Deep Research: its frame only
          turn = new AssistantTurn(ev.message_id);
          if (ev.render_lag_ms > 0) { turn.held = true; turn.lagMs = ev.render_lag_ms; }
          turn.render();
          break;
        case 'thinking_start': turn.startThinking(); break;
        case 'thinking_end': turn.endThinking(ev.seconds); break;
        case 'delta': turn.append(ev.v); break;
        case 'hang': state.frozen = true; break;
        case 'files': turn.showFiles(ev.files); break;  // common/generated.js
        case 'error':
          finished = true;
          setStreaming(false);
          if (turn) turn.fail(T.netError); else showError(T.netError);
          break;
        case 'done': finish(turn); break;
        default: break;
      }
    });
    // A stream that ends without [DONE] leaves the UI generating (stuck), like the real site sometimes does.
  } catch (err) {
    if (finished) return;
    if (err && err.name === 'AbortError') {
      setStreaming(false);   // stopped by the user: keep the partial answer
      if (turn) { turn.release(); turn.finish(); }
    } else {
      setStreaming(false);
      showError(T.netError);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Boot

async function loadConversation(id) {
  const r = await fetch('/backend-api/conversation/' + encodeURIComponent(id) + '?b=' + encodeURIComponent(BOOT.b || ''));
  if (!r.ok) {
    state.conversationId = null;   // a question from here starts a new conversation
    if (NEW) {
      // 2026: the URL stays, no turn ever comes, a toast says so; the composer stays usable
      document.body.append(h('div', { 'data-testid': 'toast-root', class: 'toast-root', role: 'status', 'aria-live': 'polite' },
        h('div', { class: 'toast' }, T.unableToLoad(id))));
      return null;
    }
    history.replaceState({}, '', '/');
    return h('div', { class: 'error-toast', role: 'alert' }, T.loadError);
  }
  const data = await r.json();
  for (const msg of data.messages) {
    if (msg.role === 'user') addUserTurn(msg.text);
    else {
      const t = new AssistantTurn(msg.messageId);
      if (msg.thinkingSeconds) t.endThinking(msg.thinkingSeconds);
      t.setText(msg.text);
      if (msg.inProgress) {
        // Still generating on the server (and hanging there): the page shows it streaming, for good.
        setStreaming(true);
        state.frozen = true;
      } else {
        t.finish();
      }
    }
  }
  return null;
}

async function boot() {
  await fetch('/backend-api/me?b=' + encodeURIComponent(BOOT.b || '')).then((r) => r.json());
  const root = document.getElementById('__next');
  thread = h('div', { id: 'thread', class: 'flex flex-col text-sm' });
  const header = NEW
    ? h('header', { id: 'page-header', class: 'page-header draggable sticky top-0' },
      PILL ? h('span', { class: 'brand' }, 'ChatGPT') : headerSwitcher(),  // menus.js
      h('a', { href: '/', 'data-testid': 'create-new-chat-button', class: 'btn' }, T.newChat),
      // What the page shows in a temporary chat: a guess (the label's test id and text are ours).
      TEMPORARY ? h('div', { 'data-testid': 'temporary-chat-label', class: 'temporary-label' }, 'Temporary Chat') : null,
      PROJECT ? h('span', { class: 'project-name' }, PROJECT) : null)
    : h('header', { class: 'page-header' }, h('span', { class: 'brand' }, 'ChatGPT'),
      h('a', { href: '/', 'data-testid': 'create-new-chat-button', class: 'btn' }, T.newChat));
  const main = h('main', { id: 'main', class: 'transition-width' }, thread);
  root.replaceChildren(header, main);
  main.append(buildComposer());
  if (NEW) {
    main.append(h('div', { class: 'composer-disclaimer text-token-text-secondary relative w-full text-center text-xs' },
      h('div', {}, T.disclaimer, T.cookies ? h('a', { href: '#', class: 'text-token-text-primary underline' }, T.cookies) : null,
        T.cookies ? '.' : '')));
  }
  editor.focus();
  driftDialog();
  // Like the real SPA, the composer is usable before an existing conversation's turns arrive: code that
  // counts turns right after the input appears sees too few (seed 3.1 steps 2-5 wait for this).
  const notice = state.conversationId ? await loadConversation(state.conversationId) : null;
  if (notice) main.prepend(notice);
}

boot();
