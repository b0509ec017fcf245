// Fake gemini.google.com client. Bundled after common/markdown.js inside one IIFE by the server.
//
// Everything lives in open shadow roots of custom elements, so plain document.querySelector finds none of it:
//   <chat-app> #shadow
//     header, main.chat-container
//       <chat-history> #shadow  div#chat-history > div.conversation-container*
//           <user-query> #shadow      div.query-text > p.query-text-line
//           <model-response> #shadow  div.response-container
//                                        > div.markdown.markdown-main-panel[aria-live=polite]
//                                        > div.response-footer (after completion: buttons with img[alt=thumb_up],
//                                          img[alt=thumb_down], img[alt=content_copy])
//       <input-area> #shadow  div.ql-editor[role=textbox][contenteditable=true], div.trailing-actions:
//           idle:      button.mic-button (img[alt=mic]) + button.send-button (mat-icon[data-mat-icon-name=send],
//                      disabled while the editor is empty)
//           answering: button.send-button.stop (mat-icon[data-mat-icon-name=stop], aria-label "Stop response")
// Answers stream from POST .../StreamGenerate: ")]}'" then one JSON object per line, each text frame carrying
// the whole answer so far. While the document is hidden no answer text is rendered (text already shown is
// stripped) until the first animation frame after it is visible again. Thinking shows <model-thoughts> with a
// "Thinking" label, then a collapsed "Show thinking" button. Limits outside a response show as an alert, a
// snack-bar toast or a banner; a broken stream as an alert with a Retry button. BOOT.layout and BOOT.sendClick as
// on the ChatGPT fake.

const BOOT = JSON.parse(document.getElementById('boot-data').textContent);
const LANG = ['ja', 'de'].includes(BOOT.hl) ? BOOT.hl : 'en';
// BOOT.drift: the markup changed under us (PageOptions.drift): renamed icons, a moved input, German labels.
const DRIFT = !!BOOT.drift;
const T = {
  en: {
    send: 'Send message', stop: 'Stop response', mic: 'Use microphone', good: 'Good response',
    bad: 'Bad response', copy: 'Copy response', copyCode: 'Copy code', downloadCode: 'Download code',
    moreOptions: 'More options', prompt: 'Enter a prompt here',
    placeholder: 'Ask Gemini', youSaid: 'You said', geminiSaid: 'Gemini said', newChat: 'New chat',
    loadError: "Couldn't load this conversation.", netError: 'Something went wrong. Please try again.',
    thinking: 'Thinking', showThinking: 'Show thinking', retry: 'Retry',
  },
  ja: {
    send: 'プロンプトを送信', stop: '回答を停止', mic: 'マイクを使用', good: '良い回答', bad: '悪い回答',
    copy: '回答をコピー', copyCode: 'コードをコピー', downloadCode: 'コードをダウンロード', moreOptions: 'その他のオプション', prompt: 'ここにプロンプトを入力してください',
    placeholder: 'Gemini に相談', youSaid: 'あなたのプロンプト', geminiSaid: 'Gemini の回答', newChat: 'チャットを新規作成',
    loadError: 'この会話を読み込めませんでした。', netError: '問題が発生しました。もう一度お試しください。',
    thinking: '思考中', showThinking: '思考プロセスを表示', retry: '再試行',
  },
  de: {
    send: 'Nachricht senden', stop: 'Antwort anhalten', mic: 'Mikrofon verwenden', good: 'Gute Antwort',
    bad: 'Schlechte Antwort', copy: 'Antwort kopieren', copyCode: 'Code kopieren', downloadCode: 'Code herunterladen',
    moreOptions: 'Weitere Optionen', prompt: 'Prompt hier eingeben', placeholder: 'Gemini fragen',
    youSaid: 'Du hast gesagt', geminiSaid: 'Gemini hat gesagt', newChat: 'Neuer Chat',
    loadError: 'Diese Unterhaltung konnte nicht geladen werden.', netError: 'Etwas ist schiefgelaufen. Bitte versuch es noch einmal.',
    thinking: 'Denkt nach', showThinking: 'Gedankengang anzeigen', retry: 'Wiederholen',
  },
}[LANG];

const svg = (body) => 'data:image/svg+xml,' + encodeURIComponent(
  `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="24" height="24">${body}</svg>`);
const ICONS = {
  mic: svg('<rect x="9" y="3" width="6" height="11" rx="3"/><path d="M6 11a6 6 0 0 0 12 0" stroke="black" fill="none"/>'),
  thumb_up: svg('<path d="M2 21h4V9H2zm20-11a2 2 0 0 0-2-2h-6l1-5-2-1-6 7v12h10l5-9z"/>'),
  thumb_down: svg('<path d="M22 3h-4v12h4zM2 14a2 2 0 0 0 2 2h6l-1 5 2 1 6-7V3H7L2 12z"/>'),
  content_copy: svg('<rect x="8" y="8" width="12" height="12"/><rect x="4" y="4" width="12" height="12" fill="none" stroke="black"/>'),
};

function h(tag, attrs, ...children) {
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

const icon = (name) => h('img', { alt: name, src: ICONS[name], width: '24', height: '24', class: 'gds-icon', 'aria-hidden': 'true' });
const matIcon = (name) => h('mat-icon', {
  role: 'img', fonticon: name, 'data-mat-icon-name': name, 'aria-hidden': 'true',
  class: 'mat-icon notranslate google-symbols mat-icon-no-color',
}, name);

const SHARED_CSS = `
  :host { display: block; }
  button { font: inherit; cursor: pointer; border: 0; background: transparent; border-radius: 50%;
    min-width: 40px; min-height: 40px; display: inline-flex; align-items: center; justify-content: center; }
  button[disabled] { opacity: .38; cursor: default; }
  .sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
  mat-icon { font-size: 14px; }
`;

const state = { conversation: null, streaming: false, frozen: false, abort: null, responses: [] };
const LAYOUT = BOOT.layout || 'standard';
const m = location.pathname.match(/^\/app\/([0-9a-f]+)/i);
if (m) state.conversation = m[1];

class ShadowElement extends HTMLElement {
  constructor(css) {
    super();
    this.root = this.attachShadow({ mode: 'open' });
    this.root.append(h('style', {}, SHARED_CSS + (css || '')));
  }
}

class UserQuery extends ShadowElement {
  constructor() {
    super(`.query-text { background: #e9eef6; border-radius: 24px 4px 24px 24px; padding: 12px 16px;
      margin-left: auto; max-width: 70%; white-space: pre-wrap; } p { margin: 0; }`);
  }

  setText(text) {
    const box = h('div', { class: 'query-text', dir: 'ltr' });
    for (const line of text.split('\n')) box.append(h('p', { class: 'query-text-line' }, line));
    this.root.append(h('div', { class: 'user-query-container' }, h('span', { class: 'sr-only' }, T.youSaid), box));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Answer markup (as gemini.google.com renders an answer in 2026, Angular components): blocks carry
// data-path-to-node; bold and italic are <b> and <i>; a code block is <response-element> > <code-block> whose
// header (language display name, Download / Copy buttons with icon ligatures) lives in the element's own shadow
// root, the code (pre > code.code-container with highlight spans) being slotted in; a table sits in five wrappers
// with a footer of buttons, and its cells hold a span; left alignment is not marked; math is
// span.math-inline / div.math-block with the TeX in data-math and KaTeX glyphs without MathML; a citation is an
// empty footnote <sup> plus a chip button naming the source (no URL in the page).

const HL = { string: 'hljs-string', comment: 'hljs-comment', number: 'hljs-number', name: 'hljs-built_in' };
const ng = 'ng-tns-c2185672871-17';

class CodeBlock extends HTMLElement {
  connectedCallback() {
    if (this.shadowRoot) return;
    const root = this.attachShadow({ mode: 'open' });
    const label = this.getAttribute('data-header') || 'Code snippet';
    const iconButton = (name, aria) => h('gem-icon-button', {
      tabindex: '-1', type: 'onSurface', size: 'small', fonticonname: name, arialabel: aria, gemtooltip: aria,
      class: 'mat-mdc-tooltip-trigger gem-button gem-button-size-small',
    }, h('button', { maticonbutton: '', class: 'mdc-icon-button mat-mdc-icon-button', 'aria-label': aria },
      h('span', { class: 'mat-mdc-button-persistent-ripple mdc-icon-button__ripple' }),
      h('gem-icon', {}, matIcon(name)),
      h('span', { class: 'mat-focus-indicator' }), h('span', { class: 'mat-mdc-button-touch-target' })));
    root.append(
      h('style', {}, SHARED_CSS + '.code-block { background: #f0f4f9; border-radius: 12px; padding: 8px 12px; }'),
      h('div', { class: `code-block ${ng} ng-trigger ng-trigger-codeBlockRevealAnimation`, 'data-hveid': '0' },
        h('div', { class: `formatted-code-block-internal-container ${ng}` },
          h('div', { class: `animated-opacity ${ng}` },
            h('div', { class: `code-block-decoration header-formatted gds-emphasized-body-m ${ng} ng-star-inserted` },
              h('span', { class: ng }, label),
              h('div', { class: `buttons ${ng} ng-star-inserted` },
                iconButton('arrow_circle_down', T.downloadCode), iconButton('content_copy', T.copyCode))),
            h('slot', {})))));
  }
}

const GEMINI_MARKUP = {
  attrs: (tag, where, path) => (/^(p|h\d|ul|ol|blockquote|hr|table)$/.test(tag) ? ` data-path-to-node="${path}"` : ''),
  listStart: (start) => ` start="${start}"`,
  open: (kind) => ({ strong: '<b>', em: '<i>', s: '<s>' }[kind]),
  close: (kind) => ({ strong: '</b>', em: '</i>', s: '</s>' }[kind]),
  codeInline: (html) => `<code>${html}</code>`,
  linkOpen: (href, ctx) => `<a href="${ctx.escapeHtml(href)}" target="_blank" rel="noopener" externallink="" jslog="197247;track:generic_click,impression">`,
  linkClose: () => '</a>',
  mathInline: (tex, ctx) => `<span class="math-inline" data-math="${ctx.escapeHtml(tex)}">${ctx.blank ? '' : ctx.katexHtml(tex, { mathml: false })}</span>`,
  mathBlock: (tex, where, path, ctx) => `<div class="math-block" data-math="${ctx.escapeHtml(tex)}"><span class="katex-display">`
    + `${ctx.blank ? '' : ctx.katexHtml(tex, { display: true, mathml: false })}</span></div>`,
  cite: (label, url, ctx) => {
    const n = ++GEMINI_MARKUP.citations;
    return `<source-footnote ng-version="0.0.0-PLACEHOLDER"><sup class="superscript" data-turn-source-index="${n}"></sup></source-footnote>`
      + '<sources-carousel-inline ng-version="0.0.0-PLACEHOLDER"><source-inline-chips class="ng-star-inserted"><source-inline-chip class="ng-star-inserted">'
      + `<button aria-label="View source details for citation from ${ctx.escapeHtml(label)}.">${ctx.escapeHtml(label)}</button>`
      + '</source-inline-chip></source-inline-chips></sources-carousel-inline>';
  },
  citations: 0,
  codeBlock(lang, code, where, path, ctx) {
    const header = lang ? ctx.languageLabel(lang) : 'Code snippet';
    return `<response-element class="no-md" ng-version="0.0.0-PLACEHOLDER"><!----><code-block class="${ng} enable-luminous-code-block ng-star-inserted" data-header="${ctx.escapeHtml(header)}">`
      + `<pre class="${ng}"><code role="text" data-test-id="code-content" class="code-container formatted ${ng}">${code ? ctx.highlight(code, HL) + '\n' : ''}</code></pre>`
      + '</code-block><!----></response-element>';
  },
  tableOpen: (where, path) => '<div class="horizontal-scroll-wrapper"><div class="table-block-component"><response-element class="no-md" ng-version="0.0.0-PLACEHOLDER">'
    + '<table-block class="enable-luminous-table-block ng-star-inserted"><div class="table-block has-export-button new-table-style is-at-scroll-start is-at-scroll-end">'
    + `<div not-end-of-paragraph="" class="table-content md-content" data-hveid="0"><table data-path-to-node="${path}">`,
  tableClose: () => '</table></div><div hide-from-message-actions="" class="table-footer hide-on-print hide-from-message-actions">'
    + `<gem-icon-button tabindex="0" theme="lm" type="tonal" arialabel="${T.moreOptions}" class="mat-mdc-tooltip-trigger overflow-menu-button gem-button">`
    + `<button maticonbutton="" class="mdc-icon-button mat-mdc-icon-button" aria-label="${T.moreOptions}"><gem-icon>`
    + '<mat-icon role="img" class="mat-icon notranslate lm-icon-l lumi-symbols mat-ligature-font" aria-hidden="true" data-mat-icon-name="more_horiz" fonticon="more_horiz">more_horiz</mat-icon>'
    + '</gem-icon></button></gem-icon-button><gem-popover class="ng-star-inserted"></gem-popover></div></div></table-block></response-element></div></div>',
  cellOpen: (tag, align, where, path) => `<${tag}${align && align !== 'left' ? ` style="text-align: ${align};"` : ''}><span data-path-to-node="${path},0">`,
  cellClose: (tag) => `</span></${tag}>`,
};

class ModelResponse extends ShadowElement {
  constructor() {
    super(`.response-container { padding: 8px 0; } .markdown pre { background: #f0f4f9; padding: 12px;
      border-radius: 12px; overflow: auto; } .response-footer { display: flex; gap: 4px; }
      .thoughts-header { color: #666; } .thoughts-body[hidden] { display: none; }`);
    this.text = '';
    this.stale = false;
    this.markdown = h('div', {
      'inline-copy-host': '', class: 'markdown markdown-main-panel enable-updated-hr-color md-content stronger',
      'aria-live': LAYOUT === 'detached' ? null : 'polite', 'aria-busy': 'true', dir: 'ltr',
    });
    // thumb_up -> closest button -> footer -> response-container: the container also holds the text
    this.content = h('message-content', { class: 'ng-star-inserted' }, this.markdown);
    this.container = h('div', { class: 'response-container' }, h('span', { class: 'sr-only' }, T.geminiSaid),
      this.content);
    this.root.append(this.container);
    state.responses.push(this);
  }

  setText(text) { this.text = text; this.render(); }

  render() {
    // Like the real app, no answer text is committed while the document is hidden.
    const hidden = document.visibilityState === 'hidden';
    this.stale = hidden;
    GEMINI_MARKUP.citations = 0;
    const html = renderMarkdown(this.text, { hooks: GEMINI_MARKUP, blank: hidden });
    if (LAYOUT === 'detached') {
      if (!this.live) {
        // The text outside the response element: an aria-live region of the chat history.
        this.live = h('div', { class: 'live-answer', 'aria-live': 'polite' });
        this.parentNode.append(this.live);
      }
      this.live.innerHTML = html;
    } else {
      this.markdown.innerHTML = html;
    }
  }

  startThinking() {
    this.thoughts = document.createElement('model-thoughts');
    this.thoughts.append(h('div', { class: 'thoughts-header' }, h('span', { class: 'thinking-label' }, T.thinking)));
    this.container.insertBefore(this.thoughts, this.content);
  }

  endThinking() {
    if (!this.thoughts) return;
    const body = h('div', { class: 'thoughts-body', hidden: true }, 'Considered the question.');
    const btn = h('button', {
      class: 'thoughts-header-button', 'aria-expanded': 'false',
      onclick: () => { body.hidden = !body.hidden; btn.setAttribute('aria-expanded', String(!body.hidden)); },
    }, T.showThinking);
    this.thoughts.replaceChildren(h('div', { class: 'thoughts-header' }, btn), body);
  }

  complete() {
    if (this.footer) return;
    this.markdown.setAttribute('aria-busy', 'false');
    const feedback = LAYOUT === 'nofeedback' ? [] : [
      h('button', { class: 'feedback-button', 'aria-label': T.good, 'aria-pressed': 'false' }, icon('thumb_up')),
      h('button', { class: 'feedback-button', 'aria-label': T.bad, 'aria-pressed': 'false' }, icon('thumb_down'))];
    this.footer = h('div', { class: 'response-footer actions-container' }, ...feedback,
      h('button', { class: 'copy-button', 'aria-label': T.copy }, icon('content_copy')));
    this.container.append(this.footer);
  }
}

document.addEventListener('visibilitychange', () => {
  if (document.visibilityState !== 'visible') {
    for (const r of state.responses) r.render();  // hidden: the text nodes go
    return;
  }
  requestAnimationFrame(() => { for (const r of state.responses) if (r.stale) r.render(); });
});

class ChatHistory extends ShadowElement {
  constructor() {
    super('#chat-history { padding: 16px 10%; }');
    this.scroller = h('div', { id: 'chat-history', class: 'chat-history-scroll-container' });
    this.root.append(this.scroller);
    this.current = null;
  }

  addUserQuery(text) {
    this.current = h('div', { class: 'conversation-container' });
    this.scroller.append(this.current);
    const uq = document.createElement('user-query');
    uq.setText(text);
    this.current.append(uq);
    return uq;
  }

  addModelResponse() {
    if (!this.current) {
      this.current = h('div', { class: 'conversation-container' });
      this.scroller.append(this.current);
    }
    const mr = document.createElement('model-response');
    this.current.append(mr);
    return mr;
  }

  notice(text, retry) {
    const box = h('div', { class: 'notice', role: 'alert' }, h('span', {}, text));
    if (retry) box.append(h('button', { class: 'retry-button', onclick: () => {} }, T.retry));
    this.scroller.append(box);
  }
}

class InputArea extends ShadowElement {
  constructor() {
    super(`.input-area-container { display: flex; align-items: flex-end; gap: 8px; margin: 8px 10% 16px;
      border-radius: 28px; background: #f0f4f9; padding: 8px 12px; }
      .text-input-field, .prompt-box { flex: 1; } .ql-editor { outline: none; min-height: 24px; padding: 8px; }
      .ql-editor p { margin: 0; } .trailing-actions { display: flex; gap: 4px; }`);
    this.editor = h('div', {
      class: 'ql-editor ql-blank textarea new-input-ui', role: DRIFT ? null : 'textbox', contenteditable: 'true',
      'aria-label': T.prompt, 'aria-multiline': 'true', 'data-placeholder': T.placeholder,
      'data-gramm': 'false', enterkeyhint: 'send',
    });
    this.clear();
    this.actions = h('div', { class: 'trailing-actions' });
    this.root.append(h('div', { class: 'input-area-container' },
      DRIFT ? h('div', { class: 'prompt-box' }, h('div', { class: 'prompt-editor' }, this.editor))
        : h('div', { class: 'text-input-field' }, h('rich-textarea', { class: 'text-input-field_textarea' }, this.editor)),
      this.actions));
    const changed = () => this.onChange();
    this.editor.addEventListener('input', changed);
    this.editor.addEventListener('change', changed);
    new MutationObserver(changed).observe(this.editor, { childList: true, characterData: true, subtree: true });
    this.editor.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        if (!state.streaming) send();
      }
    });
    this.render();
  }

  text() { return this.editor.innerText.replace(/\n+$/, ''); }

  clear() { this.editor.innerHTML = '<p><br></p>'; }

  onChange() {
    const empty = !this.text().trim();
    this.editor.classList.toggle('ql-blank', empty);
    if (this.sendButton) {
      this.sendButton.disabled = empty;
      this.sendButton.setAttribute('aria-disabled', empty ? 'true' : 'false');
    }
  }

  render() {
    if (state.streaming) {
      this.sendButton = null;
      this.actions.replaceChildren(h('button', {
        class: 'send-button stop', 'aria-label': T.stop, onclick: onStop,
      }, matIcon(DRIFT ? 'stop_circle' : 'stop')));
      return;
    }
    const empty = !this.text().trim();
    this.sendButton = h('button', {
      class: 'send-button', 'aria-label': T.send, disabled: empty, 'aria-disabled': empty ? 'true' : 'false',
      onclick: (ev) => {
        if (BOOT.sendClick === 'none') return;
        if (BOOT.sendClick === 'trusted' && !ev.isTrusted) return;  // a script's click() is not a user's click
        send();
      },
    }, matIcon(DRIFT ? 'arrow_upward' : 'send'));
    this.actions.replaceChildren(
      h('button', { class: 'speech_dictation_mic_button mic-button', 'aria-label': T.mic }, icon('mic')),
      this.sendButton);
  }
}

class ChatApp extends ShadowElement {
  constructor() {
    super(`.chat-app { display: flex; flex-direction: column; height: 100vh; }
      header { display: flex; justify-content: space-between; padding: 8px 16px; }
      main { flex: 1; display: flex; flex-direction: column; min-height: 0; }
      chat-history { flex: 1; overflow-y: auto; }`);
    this.history = document.createElement('chat-history');
    this.input = document.createElement('input-area');
    this.root.append(h('div', { class: 'chat-app' },
      h('header', { class: 'top-bar' }, h('span', { class: 'bard-logo' }, 'Gemini'),
        h('a', { href: '/app', class: 'new-chat', 'aria-label': T.newChat }, T.newChat)),
      h('main', { class: 'chat-container' }, this.history, this.input)));
  }
}

let app;

function setStreaming(on) {
  state.streaming = on;
  if (!on) { state.abort = null; state.frozen = false; }
  app.input.render();
}

function onStop() {
  if (state.frozen || !state.abort) return;
  state.abort.abort();
}

function reportComplete(rid) {
  const t = performance.timeOrigin + performance.now();
  fetch('/_/BardChatUi/jslog', {
    method: 'POST', headers: { 'content-type': 'application/json' }, keepalive: true,
    body: JSON.stringify({ event: 'response_complete', rid, t }),
  }).catch(() => {});
}

async function readFrames(response, onFrame) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let first = true;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, cut).trim();
      buf = buf.slice(cut + 1);
      if (first) { first = false; if (line === ")]}'") continue; }
      if (line) onFrame(JSON.parse(line));
    }
  }
}

async function send() {
  if (state.streaming) return;
  const question = app.input.text().trim();   // read at send time
  if (!question) return;
  app.input.clear();
  app.input.onChange();
  app.history.addUserQuery(question);
  const abort = new AbortController();
  state.abort = abort;
  setStreaming(true);
  let response = null;
  let finished = false;
  try {
    const r = await fetch('/_/BardChatUi/data/assistant.lamda.BardFrontendService/StreamGenerate?hl=' + LANG + '&rt=c', {
      method: 'POST', signal: abort.signal, headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: question, conversation: state.conversation }),
    });
    if (!r.ok) throw new Error('HTTP ' + r.status);
    await readFrames(r, (f) => {
      switch (f.t) {
        case 'meta':
          if (!state.conversation) {
            state.conversation = f.conversation;
            history.pushState(null, '', '/app/' + f.conversation);
          }
          response = app.history.addModelResponse();
          response.rid = f.rid;
          break;
        case 'text': response.setText(f.text); break;
        case 'thinking_start': response.startThinking(); break;
        case 'thinking_end': response.endThinking(); break;
        case 'notice':
          finished = true;
          setStreaming(false);
          showLimit(f.place, f.text);
          break;
        case 'error':
          finished = true;
          setStreaming(false);
          app.history.notice(T.netError, true);
          break;
        case 'hang': state.frozen = true; break;
        case 'done':
          finished = true;
          setStreaming(false);
          response.complete();
          reportComplete(response.rid);
          break;
        default: break;
      }
    });
  } catch (err) {
    if (finished) return;
    setStreaming(false);
    if (err && err.name === 'AbortError') {
      if (response) response.complete();
    } else {
      console.error('gemini fake: stream failed', err);
      app.history.notice(T.netError);
    }
  }
}

function showLimit(place, text) {
  if (place === 'toast') {
    document.body.append(h('mat-snack-bar-container', { class: 'mat-mdc-snack-bar-container' },
      h('div', { class: 'mat-mdc-snack-bar-label', role: 'status' }, text)));
  } else if (place === 'banner') {
    app.root.prepend(h('div', { class: 'limit-banner', 'data-testid': 'limit-banner', role: 'alert' }, text));
  } else {
    app.history.notice(text, false);
  }
}

async function loadConversation(id) {
  const r = await fetch('/_/BardChatUi/data/conversation/' + encodeURIComponent(id) + '?b=' + encodeURIComponent(BOOT.b || ''));
  if (!r.ok) {
    state.conversation = null;
    history.replaceState(null, '', '/app');
    app.history.notice(T.loadError);
    return;
  }
  const data = await r.json();
  for (const turn of data.turns) {
    if (turn.role === 'user') app.history.addUserQuery(turn.text);
    else {
      const mr = app.history.addModelResponse();
      mr.rid = turn.messageId;
      mr.setText(turn.text);
      if (turn.inProgress) {
        setStreaming(true);  // still generating on the server, and hanging there
        state.frozen = true;
      } else {
        mr.complete();
      }
    }
  }
}

async function boot() {
  await fetch('/_/BardChatUi/data/bootstrap?b=' + encodeURIComponent(BOOT.b || '')).then((r) => r.json());
  customElements.define('code-block', CodeBlock);
  customElements.define('user-query', UserQuery);
  customElements.define('model-response', ModelResponse);
  customElements.define('chat-history', ChatHistory);
  customElements.define('input-area', InputArea);
  customElements.define('chat-app', ChatApp);   // upgrades the <chat-app> already in the page
  app = document.querySelector('chat-app');
  app.input.editor.focus();
  // The input is there before an existing conversation's turns arrive, as on the real site.
  if (state.conversation) await loadConversation(state.conversation);
  document.querySelector('.app-loading')?.remove();
}

boot();
