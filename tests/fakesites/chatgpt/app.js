// Fake chatgpt.com client. Bundled after common/markdown.js inside one IIFE by the server.
//
// DOM (what provider code sees):
//   main#main > #thread > article[data-turn=user|assistant][data-testid=conversation-turn-N]
//     user:      h5.sr-only "You said:" + div[data-message-author-role=user] > div.whitespace-pre-wrap
//     assistant: h6.sr-only "ChatGPT said:" + div[data-message-author-role=assistant]
//                  > [div.thinking-status (thinking) | button "Thinking time: Xs"] + div.markdown.prose
//                + div.turn-actions (after completion)
//   form.composer: #prompt-textarea (ProseMirror contenteditable div, or a textarea) and one button
//     #composer-submit-button: data-testid=send-button (disabled while the editor is empty) or, while an
//     answer streams, data-testid=stop-button aria-label "Stop generating".
// Answers stream from POST /backend-api/conversation (SSE). While the document is hidden, answer text is not
// rendered (elements with data-start/data-end stay empty) until the page becomes visible again.

const BOOT = JSON.parse(document.getElementById('client-bootstrap').textContent);
const LANG = BOOT.locale === 'ja' ? 'ja' : 'en';
const T = {
  en: {
    send: 'Send prompt', stop: 'Stop generating', skip: 'Skip thinking', thinking: 'Thinking',
    thinkingTime: (s) => `Thinking time: ${s}s`, placeholder: 'Ask anything', you: 'You said:',
    gpt: 'ChatGPT said:', copy: 'Copy', copyCode: 'Copy code', good: 'Good response', bad: 'Bad response',
    loadError: 'Unable to load conversation', netError: 'Something went wrong while generating the response.',
    newChat: 'New chat', thoughts: 'Reasoned about the question step by step.',
  },
  ja: {
    send: 'プロンプトを送信する', stop: '生成を停止', skip: '今すぐ回答', thinking: '思考中',
    thinkingTime: (s) => `思考時間: ${s}s`, placeholder: '質問してみましょう', you: 'あなた:',
    gpt: 'ChatGPT:', copy: 'コピーする', copyCode: 'コードをコピーする', good: '良い回答', bad: '悪い回答',
    loadError: '会話を読み込めません', netError: '回答の生成中に問題が発生しました。',
    newChat: '新しいチャット', thoughts: '質問について段階的に考えました。',
  },
}[LANG];

const ICON_SEND = '<svg width="20" height="20" viewBox="0 0 20 20" aria-hidden="true"><path d="M10 3l6 6h-4v8H8V9H4z" fill="currentColor"/></svg>';
const ICON_STOP = '<svg width="20" height="20" viewBox="0 0 20 20" aria-hidden="true"><rect x="5" y="5" width="10" height="10" fill="currentColor"/></svg>';
const ICON_DOT = '<svg width="16" height="16" viewBox="0 0 16 16" aria-hidden="true"><circle cx="8" cy="8" r="3" fill="currentColor"/></svg>';

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

const state = {
  conversationId: null,
  streaming: false,
  frozen: false,       // the server said this answer hangs: the stop button no longer does anything
  abort: null,
  turnIndex: 0,
  assistantTurns: [],
};

const m = location.pathname.match(/^\/c\/([0-9a-f-]+)/i);
if (m) state.conversationId = m[1];

let thread, editor, sendSlot;

// ---------------------------------------------------------------------------------------------------------------
// Turns

function addUserTurn(text) {
  const n = ++state.turnIndex;
  const art = h('article', { 'data-turn': 'user', 'data-testid': `conversation-turn-${n}`, class: 'w-full' },
    h('h5', { class: 'sr-only' }, T.you),
    h('div', { 'data-message-author-role': 'user', 'data-message-id': crypto.randomUUID(), dir: 'auto' },
      h('div', { class: 'whitespace-pre-wrap' }, text)));
  thread.append(art);
  return art;
}

function codeBlockHtml(lang, code) {
  const label = escapeHtml(lang || 'text');
  return '<pre class="overflow-visible"><div class="contain-inline-size rounded-2xl relative">'
    + `<div class="code-header"><span>${label}</span>`
    + `<button class="icon-btn copy-code" aria-label="${T.copy}">${T.copyCode}</button></div>`
    + `<div class="overflow-y-auto" dir="ltr"><code class="whitespace-pre language-${label}">${code}</code></div>`
    + '</div></pre>';
}

class AssistantTurn {
  constructor(messageId, { error = false } = {}) {
    this.messageId = messageId;
    this.text = '';
    this.stale = false;
    this.markdown = h('div', { class: 'markdown prose w-full break-words dark:prose-invert light' });
    if (error) this.markdown.classList.add('text-token-text-error');
    this.message = h('div', {
      'data-message-author-role': 'assistant', 'data-message-id': messageId,
      'data-message-model-slug': 'gpt-5', dir: 'auto', class: 'min-h-8 text-message',
    }, this.markdown);
    this.article = h('article', {
      'data-turn': 'assistant', 'data-testid': `conversation-turn-${++state.turnIndex}`, class: 'w-full',
    }, h('h6', { class: 'sr-only' }, T.gpt), this.message);
    thread.append(this.article);
    state.assistantTurns.push(this);
  }

  setText(text) { this.text = text; this.render(); }

  append(piece) { this.text += piece; this.render(); }

  render() {
    // React does not commit text for a background tab: the block elements exist, their text does not.
    const hidden = document.visibilityState === 'hidden';
    this.stale = hidden;
    this.markdown.innerHTML = renderMarkdown(this.text, { positions: true, blank: hidden, codeBlock: codeBlockHtml });
  }

  startThinking() {
    this.status = h('div', { class: 'thinking-status', 'aria-live': 'polite' },
      h('span', { class: 'loading-shimmer' }, T.thinking),
      h('button', { class: 'btn btn-secondary skip-thinking', type: 'button', onclick: () => this.skip() }, T.skip));
    this.message.insertBefore(this.status, this.markdown);
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
    this.message.insertBefore(btn, this.markdown);
    this.message.insertBefore(details, this.markdown);
  }

  finish() {
    if (this.actions) return;
    this.actions = h('div', { class: 'turn-actions' },
      h('button', { class: 'icon-btn', 'aria-label': T.copy, 'data-testid': 'copy-turn-action-button', html: ICON_DOT }),
      h('button', { class: 'icon-btn', 'aria-label': T.good, 'data-testid': 'good-response-turn-action-button', html: ICON_DOT }),
      h('button', { class: 'icon-btn', 'aria-label': T.bad, 'data-testid': 'bad-response-turn-action-button', html: ICON_DOT }));
    this.article.append(this.actions);
  }
}

document.addEventListener('visibilitychange', () => {
  if (document.visibilityState !== 'visible') return;
  setTimeout(() => {
    for (const t of state.assistantTurns) if (t.stale) t.render();
  }, 120);
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
      id: 'composer-submit-button', type: 'button', 'data-testid': 'stop-button', 'aria-label': T.stop,
      class: 'composer-submit-btn', html: ICON_STOP, onclick: onStop,
    });
  } else {
    btn = h('button', {
      id: 'composer-submit-button', type: 'button', 'data-testid': 'send-button', 'aria-label': T.send,
      class: 'composer-submit-btn', html: ICON_SEND, disabled: !editorText().trim(), onclick: () => send(),
    });
  }
  sendSlot.replaceChildren(btn);
}

function onEditorChange() {
  updatePlaceholder();
  if (!state.streaming) {
    const btn = sendSlot.firstChild;
    if (btn) btn.disabled = !editorText().trim();
  }
}

function buildComposer() {
  if (BOOT.composer === 'textarea') {
    editor = h('textarea', {
      id: 'prompt-textarea', 'data-testid': 'prompt-textarea', name: 'prompt-textarea',
      placeholder: T.placeholder, rows: '1', dir: 'auto', class: 'text-token-text-primary',
    });
  } else {
    editor = h('div', {
      contenteditable: 'true', translate: 'no', class: 'ProseMirror', id: 'prompt-textarea',
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
  const form = h('form', {
    class: 'composer w-full', 'data-type': 'unified-composer',
    onsubmit: (ev) => { ev.preventDefault(); if (!state.streaming) send(); },
  }, h('div', { class: 'composer-editor' }, editor), sendSlot);
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

async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      if (!data) continue;
      onEvent(data === '[DONE]' ? { type: 'done' } : JSON.parse(data));
    }
  }
}

function showError(text) {
  const turn = new AssistantTurn(crypto.randomUUID(), { error: true });
  turn.setText(text);
  return turn;
}

async function send() {
  if (state.streaming) return;
  const question = editorText().trim();   // read at send time: whatever the editor holds now is what is asked
  if (!question) return;
  clearEditor();
  onEditorChange();
  addUserTurn(question);
  const abort = new AbortController();
  state.abort = abort;
  setStreaming(true);
  let turn = null;
  let finished = false;
  const finish = (t) => {
    finished = true;
    setStreaming(false);
    if (t) { t.finish(); reportComplete(t.messageId); }
  };
  try {
    const response = await fetch('/backend-api/conversation', {
      method: 'POST', signal: abort.signal,
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'oai-language': LANG === 'ja' ? 'ja-JP' : 'en-US' },
      body: JSON.stringify({
        action: 'next', conversation_id: state.conversationId, model: 'auto',
        messages: [{ id: crypto.randomUUID(), author: { role: 'user' }, content: { content_type: 'text', parts: [question] } }],
      }),
    });
    if (response.status === 429) {
      const body = await response.json();
      turn = new AssistantTurn(body.message_id, { error: true });
      turn.setText(body.detail);
      finish(turn);
      return;
    }
    if (!response.ok) throw new Error('HTTP ' + response.status);
    await readEvents(response, (ev) => {
      switch (ev.type) {
        case 'meta':
          if (!state.conversationId) {
            state.conversationId = ev.conversation_id;
            history.pushState({}, '', '/c/' + ev.conversation_id);
          }
          turn = new AssistantTurn(ev.message_id);
          turn.render();
          break;
        case 'thinking_start': turn.startThinking(); break;
        case 'thinking_end': turn.endThinking(ev.seconds); break;
        case 'delta': turn.append(ev.v); break;
        case 'hang': state.frozen = true; break;
        case 'done': finish(turn); break;
        default: break;
      }
    });
    // A stream that ends without [DONE] leaves the UI generating (stuck), like the real site sometimes does.
  } catch (err) {
    if (finished) return;
    if (err && err.name === 'AbortError') {
      setStreaming(false);   // stopped by the user: keep the partial answer
      if (turn) turn.finish();
    } else {
      setStreaming(false);
      showError(T.netError);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Boot

async function loadConversation(id) {
  const r = await fetch('/backend-api/conversation/' + encodeURIComponent(id));
  if (!r.ok) {
    state.conversationId = null;
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
      t.finish();
    }
  }
  return null;
}

async function boot() {
  await fetch('/backend-api/me?b=' + encodeURIComponent(BOOT.b || '')).then((r) => r.json());
  const root = document.getElementById('__next');
  thread = h('div', { id: 'thread', class: 'flex flex-col text-sm' });
  const header = h('header', { class: 'page-header' }, h('span', { class: 'brand' }, 'ChatGPT'),
    h('a', { href: '/', 'data-testid': 'create-new-chat-button', class: 'btn' }, T.newChat));
  const main = h('main', { id: 'main', class: 'transition-width' }, thread);
  root.replaceChildren(header, main);
  main.append(buildComposer());
  editor.focus();
  // Like the real SPA, the composer is usable before an existing conversation's turns arrive: code that
  // counts turns right after the input appears sees too few (seed 3.1 steps 2-5 wait for this).
  const notice = state.conversationId ? await loadConversation(state.conversationId) : null;
  if (notice) main.prepend(notice);
}

boot();
