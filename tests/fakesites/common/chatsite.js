// The generic chat page of the three newer fakes (claude.ai, grok.com, www.perplexity.ai; issue 40). Bundled after
// common/markdown.js, uploads.js and drift.js, before the site's own app.js, inside one IIFE; the site's app.js calls
// `chatSite(S)` with its skin S, which builds every element the way the site's captures show (the app.js headers
// cite them). This file holds only what all three do alike, as awkwardly as the real sites:
//   - answers stream from POST /api/ask (server-sent events: meta, thinking_start/end, delta, hang, error, [DONE]);
//     the conversation's URL comes with the first event (S.convPath);
//   - a hidden tab renders no answer text (text already shown is stripped) until the first animation frame after it
//     is visible again, or BOOT.rerenderDelayMs later;
//   - a script's renderLagMs holds the text back until that long after the stop button went (the turn's action bar
//     comes first);
//   - Stop aborts the stream (the partial answer stays); a hanging stream's Stop does nothing;
//   - limits (HTTP 429) show where the script says: an error-styled turn, an alert in the thread, a toast or a
//     banner; a broken stream shows the site's error with a Retry button;
//   - an existing conversation's turns arrive after the composer (BOOT.b / historyDelayMs); one that cannot be loaded
//     keeps its URL, shows no turns and a notice (S.unavailable);
//   - uploads go through common/uploads.js with the site's chips; the model picker is a Radix-like menu opened by a
//     pointer press (menus below, from S.picker);
//   - the UI goes idle, then the page reports when (POST /api/telemetry: detection latency is measured against it).
// Element factory `h` passes every element through common/drift.js (PageOptions.mutation).

const BOOT = JSON.parse(document.getElementById('client-bootstrap').textContent);
const LANG = ['ja', 'de'].includes(BOOT.locale) ? BOOT.locale : 'en';
const EXT = BOOT.extensionButtons !== false;  // another extension's (QuillBot's) buttons

function h(tag, attrs, ...children) {
  [tag, attrs] = drifted(tag, attrs);
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v == null) continue;
    if (k === 'html') el.innerHTML = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c != null && c !== false) el.append(c);
  return el;
}

const ICON = '<svg width="16" height="16" viewBox="0 0 16 16" aria-hidden="true"><circle cx="8" cy="8" r="3" fill="currentColor"/></svg>';

function chatSite(S) {
  const state = {
    conversationId: S.convFromPath(location.pathname), streaming: false, delayed: false, frozen: false,
    abort: null, turns: [], userCount: 0,
  };
  let thread, editor, sendSlot, uploader;

  // --- answers ---------------------------------------------------------------------------------------------------

  class Turn {
    constructor(messageId, opts = {}) {
      this.messageId = messageId;
      this.text = '';
      this.stale = false;
      this.held = false;
      this.parts = S.assistantTurn(messageId, { error: !!opts.error, index: state.turns.length + 1 });
      thread.append(this.parts.el);
      state.turns.push(this);
    }

    setText(text) { this.text = text; this.render(); }

    append(piece) { this.text += piece; this.render(); }

    render() {
      const hidden = document.visibilityState === 'hidden';  // React commits no text for a background tab
      this.stale = hidden;
      const html = renderMarkdown(this.held ? '' : this.text, { hooks: S.markup, blank: hidden });
      this.parts.render(html, state.streaming && state.turns[state.turns.length - 1] === this);
      if (this.parts.content) driftSplit(this.parts.content);
    }

    release() { if (this.held) { this.held = false; this.render(); } }

    finish() {
      if (this.finished) return;
      this.finished = true;
      this.parts.finish();
      this.render();
    }

    fail(text) { this.release(); this.parts.fail(text, h('button', { type: 'button', class: 'btn' }, S.T.retry)); }
  }

  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState !== 'visible') {
      for (const t of state.turns) t.render();  // hidden: the text nodes go
      return;
    }
    const rerender = () => { for (const t of state.turns) if (t.stale) t.render(); };
    if (BOOT.rerenderDelayMs > 0) setTimeout(rerender, BOOT.rerenderDelayMs);
    else requestAnimationFrame(rerender);
  });

  // --- the composer ------------------------------------------------------------------------------------------------

  const editorText = () => (editor.tagName === 'TEXTAREA' ? editor.value : editor.innerText.replace(/\n+$/, ''));
  const clearEditor = () => { S.emptyEditor(editor); };

  function renderButton() {
    const empty = !editorText().trim() && !(uploader && uploader.count());
    const kind = state.streaming ? 'streaming' : empty ? 'empty' : 'ready';
    const btn = S.sendButton(kind, {
      onSend: (ev) => {
        if (BOOT.sendClick === 'none' || (BOOT.sendClick === 'trusted' && !ev.isTrusted)) return;
        send();
      },
      onStop: () => { if (!state.frozen && state.abort) state.abort.abort(); },
      busy: !!(uploader && uploader.busy()),
    });
    sendSlot.replaceChildren(...(btn ? [btn] : []));
    state.shownKind = kind;
  }

  function onEditorChange() {
    S.editorChanged && S.editorChanged(editor, !editorText().trim());
    if (state.streaming) return;
    const empty = !editorText().trim() && !(uploader && uploader.count());
    if ((empty ? 'empty' : 'ready') !== state.shownKind) renderButton();
  }

  function buildComposer() {
    editor = S.editor();
    clearEditor();
    new MutationObserver(onEditorChange).observe(editor, { childList: true, characterData: true, subtree: true });
    editor.addEventListener('input', onEditorChange);
    editor.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        if (!state.streaming) send();
      }
    });
    sendSlot = h('div', { class: 'send-slot flex items-center' });
    const fileInput = S.fileInput();
    const chipHost = h('div', { class: 'attachments flex flex-wrap gap-2' });
    uploader = fakeUploader({
      input: fileInput, host: chipHost, endpoint: '/api/upload', texts: S.uploadTexts || UPLOAD_TEXTS[LANG === 'ja' ? 'ja' : 'en'],
      chip: S.chip, toast: (text) => S.toast(text), onChange: () => { if (!state.streaming) renderButton(); },
    });
    const composer = S.composer({ editor, sendSlot, fileInput, chipHost, picker: S.picker ? pickerButton() : null });
    renderButton();
    return composer;
  }

  function setStreaming(on) {
    state.streaming = on;
    if (!on) { state.abort = null; state.frozen = false; }
    renderButton();
  }

  // --- the model picker: a Radix-like menu (opened by a pointer press, never a script's click) --------------------

  const P = S.picker;
  const pick = P ? { model: P.models[P.defaultModel || 0], effort: P.efforts ? P.efforts[P.defaultEffort || 0] : null,
    thinking: !!(P.toggle && P.toggle.on) } : null;
  let triggerEl = null;

  function pickerButton() {
    triggerEl = P.trigger(pick, (ev) => { if (ev.button === 0) toggleMenu(); });
    return triggerEl;
  }

  function closeMenus() {
    for (const w of document.querySelectorAll('.picker-popper')) w.remove();
    if (triggerEl) { triggerEl.setAttribute('aria-expanded', 'false'); triggerEl.setAttribute('data-state', 'closed'); }
  }

  // A menu beside its anchor (a submenu to its right), kept inside the viewport as Radix's collision handling does.
  function popper(anchor, menu, right) {
    const r = anchor.getBoundingClientRect();
    const wrapper = h('div', { 'data-radix-popper-content-wrapper': '', class: 'picker-popper',
      style: 'position: fixed; left: 0; top: 0; z-index: 50; min-width: 220px; background: #fff; border: 1px solid #ddd;' }, menu);
    document.body.append(wrapper);
    const { width, height } = wrapper.getBoundingClientRect();
    let left = right ? r.right + 4 : r.left;
    if (left + width > innerWidth - 4) left = right ? Math.max(0, r.left - width - 4) : Math.max(0, innerWidth - width - 4);
    let top = right ? r.top : r.top - height - 4;
    top = Math.max(0, Math.min(top, innerHeight - height - 4));
    wrapper.style.left = `${left}px`;
    wrapper.style.top = `${top}px`;
    return wrapper;
  }

  const choose = (what, value) => {
    if (BOOT.pickerIgnoresClicks) { closeMenus(); return; }
    pick[what] = value;
    closeMenus();
    P.show(triggerEl, pick);
  };

  function row(item, checked, onSelect, extra) {
    const label = h('span', { class: P.labelClass || null }, item.label);
    return h('div', {
      role: P.rowRole || 'menuitemradio', 'aria-checked': P.checks === false ? null : String(checked),
      'data-state': P.checks === false ? null : checked ? 'checked' : 'unchecked', 'data-radix-collection-item': '',
      tabindex: '-1', class: 'menu-row', onclick: onSelect, ...extra,
    }, label, ...(item.details || []).map((d) => h('span', { class: 'row-detail' }, d)));
  }

  function toggleMenu() {
    if (document.querySelector('.picker-popper')) { closeMenus(); return; }
    const menu = h('div', { role: 'menu', 'aria-orientation': 'vertical', 'data-state': 'open', class: 'picker-menu' });
    for (const m of P.models) menu.append(row(m, m === pick.model, () => { if (!m.locked) choose('model', m); }));
    if (P.efforts) {
      const opener = h('div', { role: 'menuitem', 'aria-haspopup': 'menu', 'aria-expanded': 'false', tabindex: '-1',
        class: 'menu-row', onclick: () => openEfforts(opener) },
      h('span', {}, P.effortLabel), h('span', { class: 'row-detail' }, pick.effort.label));
      menu.append(opener);
    }
    if (P.toggle) {
      const sw = h('button', { type: 'button', role: 'switch', 'aria-label': P.toggle.label,
        'aria-checked': String(pick.thinking), class: 'switch' });
      menu.append(h('div', { role: 'menuitem', tabindex: '-1', class: 'menu-row', onclick: () => {
        if (BOOT.pickerIgnoresClicks) { closeMenus(); return; }
        pick.thinking = !pick.thinking;
        sw.setAttribute('aria-checked', String(pick.thinking));
        P.show(triggerEl, pick);
      } }, h('span', {}, P.toggle.label), sw));
    }
    for (const extra of P.extraRows || []) menu.append(extra());
    popper(triggerEl, menu, false);
    triggerEl.setAttribute('aria-expanded', 'true');
    triggerEl.setAttribute('data-state', 'open');
  }

  function openEfforts(opener) {
    for (const w of document.querySelectorAll('.picker-popper.sub')) w.remove();
    const sub = h('div', { role: 'menu', 'aria-orientation': 'vertical', 'data-state': 'open', class: 'picker-menu' });
    for (const e of P.efforts) sub.append(row(e, e === pick.effort, () => choose('effort', e)));
    popper(opener, sub, true).classList.add('sub');
    opener.setAttribute('aria-expanded', 'true');
  }

  document.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Escape') return;
    const subs = document.querySelectorAll('.picker-popper.sub');
    if (subs.length) subs.forEach((w) => w.remove()); else closeMenus();
  });

  // --- talking to the site -------------------------------------------------------------------------------------

  function reportComplete(messageId) {
    const t = performance.timeOrigin + performance.now();  // the UI just went idle
    fetch('/api/telemetry', {
      method: 'POST', headers: { 'content-type': 'application/json' }, keepalive: true,
      body: JSON.stringify({ event: 'answer_complete', message_id: messageId, t }),
    }).catch(() => {});
  }

  function showLimit(place, text, messageId) {
    if (place === 'alert') thread.append(h('div', { role: 'alert', class: 'limit-alert' }, text));
    else if (place === 'toast') S.toast(text);
    else if (place === 'banner') S.banner(text);
    else {
      const turn = new Turn(messageId, { error: true });
      turn.setText(text);
      return turn;
    }
    return null;
  }

  async function send() {
    if (state.streaming || state.delayed || (uploader && uploader.busy())) return;
    const question = editorText().trim();  // whatever the editor holds at send time is what is asked
    if (!question) return;
    const attachments = uploader ? uploader.ids() : [];
    if (uploader) uploader.clear();
    clearEditor();
    onEditorChange();
    thread.append(S.userTurn(question, ++state.userCount));
    if (BOOT.stopDelayMs > 0) {
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
      if (t.held) setTimeout(() => { t.release(); reportComplete(t.messageId); }, t.lagMs);
      else reportComplete(t.messageId);
    };
    try {
      const choice = pick ? P.request(pick) : {};
      const response = await fetch('/api/ask', {
        method: 'POST', signal: abort.signal, headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ question, conversationId: state.conversationId, lang: LANG, attachments, ...choice }),
      });
      if (response.status === 429) {
        const body = await response.json();
        finish(showLimit(body.notice, body.detail, body.message_id));
        return;
      }
      if (!response.ok) throw new Error('HTTP ' + response.status);
      await readEvents(response, (ev) => {
        switch (ev.type) {
          case 'meta':
            if (!state.conversationId) {
              state.conversationId = ev.conversation_id;
              history.pushState({}, '', S.convPath(ev.conversation_id));
            }
            turn = new Turn(ev.message_id);
            if (ev.render_lag_ms > 0) { turn.held = true; turn.lagMs = ev.render_lag_ms; }
            turn.render();
            break;
          case 'thinking_start': turn.parts.startThinking(); break;
          case 'thinking_end': turn.parts.endThinking(ev.seconds); break;
          case 'delta': turn.append(ev.v); break;
          case 'hang': state.frozen = true; break;
          case 'error':
            finished = true;
            setStreaming(false);
            if (turn) turn.fail(S.T.netError); else S.toast(S.T.netError);
            break;
          case 'done': finish(turn); break;
          default: break;
        }
      });
      // A stream that ends without [DONE] leaves the page generating (stuck), as the real sites sometimes do.
    } catch (err) {
      if (finished) return;
      setStreaming(false);
      if (err && err.name === 'AbortError') {  // stopped by the user: the partial answer stays
        if (turn) { turn.release(); turn.finish(); }
      } else {
        S.toast(S.T.netError);
      }
    }
  }

  // --- boot ----------------------------------------------------------------------------------------------------

  async function loadConversation(id) {
    const r = await fetch('/api/conversation/' + encodeURIComponent(id) + '?b=' + encodeURIComponent(BOOT.b || ''));
    if (!r.ok) {
      state.conversationId = null;  // a question from here starts a new conversation; the URL stays
      S.unavailable(id);
      return;
    }
    const data = await r.json();
    for (const msg of data.messages) {
      if (msg.role === 'user') { thread.append(S.userTurn(msg.text, ++state.userCount)); continue; }
      const t = new Turn(msg.messageId);
      if (msg.thinkingSeconds) { t.parts.startThinking(); t.parts.endThinking(msg.thinkingSeconds); }
      if (msg.inProgress) {  // still generating on the server (and hanging there): streaming, for good
        setStreaming(true);
        state.frozen = true;
        t.setText(msg.text);
      } else {
        t.text = msg.text;
        t.finish();
      }
    }
  }

  async function boot() {
    await fetch('/api/bootstrap?b=' + encodeURIComponent(BOOT.b || '')).then((r) => r.json());
    const frame = S.layout();
    thread = frame.thread;
    frame.composerHost.append(buildComposer());
    document.getElementById('root').replaceChildren(...frame.elements);
    if (S.afterBoot) S.afterBoot();
    editor.focus();
    driftDialog();
    // The composer is usable before an existing conversation's turns arrive (the SPA's order).
    if (state.conversationId) await loadConversation(state.conversationId);
  }

  boot();
}
