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
// the whole answer so far.

const BOOT = JSON.parse(document.getElementById('boot-data').textContent);
const LANG = BOOT.hl === 'ja' ? 'ja' : 'en';
const T = {
  en: {
    send: 'Send message', stop: 'Stop response', mic: 'Use microphone', good: 'Good response',
    bad: 'Bad response', copy: 'Copy response', copyCode: 'Copy code', prompt: 'Enter a prompt here',
    placeholder: 'Ask Gemini', youSaid: 'You said', geminiSaid: 'Gemini said', newChat: 'New chat',
    loadError: "Couldn't load this conversation.", netError: 'Something went wrong. Please try again.',
  },
  ja: {
    send: 'プロンプトを送信', stop: '回答を停止', mic: 'マイクを使用', good: '良い回答', bad: '悪い回答',
    copy: '回答をコピー', copyCode: 'コードをコピー', prompt: 'ここにプロンプトを入力してください',
    placeholder: 'Gemini に相談', youSaid: 'あなたのプロンプト', geminiSaid: 'Gemini の回答', newChat: 'チャットを新規作成',
    loadError: 'この会話を読み込めませんでした。', netError: '問題が発生しました。もう一度お試しください。',
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

const state = { conversation: null, streaming: false, frozen: false, abort: null };
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

function geminiCodeBlock(lang, code) {
  const label = escapeHtml(lang || 'code');
  return `<div class="code-block"><div class="code-block-decoration header-formatted"><span>${label}</span>`
    + `<button aria-label="${T.copyCode}"><img alt="content_copy" width="24" height="24" src="${ICONS.content_copy}"></button></div>`
    + `<div class="formatted-code-block-internal-container"><pre><code class="code-container formatted" role="text">${code}</code></pre></div></div>`;
}

class ModelResponse extends ShadowElement {
  constructor() {
    super(`.response-container { padding: 8px 0; } .markdown pre { background: #f0f4f9; padding: 12px;
      border-radius: 12px; overflow: auto; } .response-footer { display: flex; gap: 4px; }`);
    this.markdown = h('div', {
      class: 'markdown markdown-main-panel', 'aria-live': 'polite', 'aria-busy': 'true', dir: 'ltr',
    });
    // thumb_up -> closest button -> footer -> response-container: the container also holds the text
    this.container = h('div', { class: 'response-container' }, h('span', { class: 'sr-only' }, T.geminiSaid), this.markdown);
    this.root.append(this.container);
  }

  setText(text, { error = false } = {}) {
    this.markdown.innerHTML = renderMarkdown(text, { codeBlock: geminiCodeBlock });
    this.markdown.classList.toggle('error', !!error);
  }

  complete() {
    if (this.footer) return;
    this.markdown.setAttribute('aria-busy', 'false');
    this.footer = h('div', { class: 'response-footer actions-container' },
      h('button', { class: 'feedback-button', 'aria-label': T.good, 'aria-pressed': 'false' }, icon('thumb_up')),
      h('button', { class: 'feedback-button', 'aria-label': T.bad, 'aria-pressed': 'false' }, icon('thumb_down')),
      h('button', { class: 'copy-button', 'aria-label': T.copy }, icon('content_copy')));
    this.container.append(this.footer);
  }
}

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

  notice(text) {
    this.scroller.append(h('div', { class: 'notice', role: 'alert' }, text));
  }
}

class InputArea extends ShadowElement {
  constructor() {
    super(`.input-area-container { display: flex; align-items: flex-end; gap: 8px; margin: 8px 10% 16px;
      border-radius: 28px; background: #f0f4f9; padding: 8px 12px; }
      .text-input-field { flex: 1; } .ql-editor { outline: none; min-height: 24px; padding: 8px; }
      .ql-editor p { margin: 0; } .trailing-actions { display: flex; gap: 4px; }`);
    this.editor = h('div', {
      class: 'ql-editor ql-blank textarea new-input-ui', role: 'textbox', contenteditable: 'true',
      'aria-label': T.prompt, 'aria-multiline': 'true', 'data-placeholder': T.placeholder,
      'data-gramm': 'false', enterkeyhint: 'send',
    });
    this.clear();
    this.actions = h('div', { class: 'trailing-actions' });
    this.root.append(h('div', { class: 'input-area-container' },
      h('div', { class: 'text-input-field' }, h('rich-textarea', { class: 'text-input-field_textarea' }, this.editor)),
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
      }, matIcon('stop')));
      return;
    }
    const empty = !this.text().trim();
    this.sendButton = h('button', {
      class: 'send-button', 'aria-label': T.send, disabled: empty, 'aria-disabled': empty ? 'true' : 'false',
      onclick: () => send(),
    }, matIcon('send'));
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
        case 'text': response.setText(f.text, { error: f.error }); break;
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
      app.history.notice(T.netError);
    }
  }
}

async function loadConversation(id) {
  const r = await fetch('/_/BardChatUi/data/conversation/' + encodeURIComponent(id));
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
      mr.complete();
    }
  }
}

async function boot() {
  await fetch('/_/BardChatUi/data/bootstrap?b=' + encodeURIComponent(BOOT.b || '')).then((r) => r.json());
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
