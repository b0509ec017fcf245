// In-page watcher, evaluated in ai-bridge's *isolated world* (never the page's own world, so nothing of ours is
// visible to the site's scripts). A MutationObserver — on the document and on every open shadow root it finds —
// recomputes the provider state after each batch of DOM changes and reports it through the CDP binding only when
// it changed. The server decides completion from these reports, so detection follows the DOM within
// milliseconds instead of a 1 s poll.
//
// Evaluated as `(WATCHER_SOURCE)(config, bindingName)`; idempotent per document.
(function install(cfg, binding) {
  if (window.__aibWatcher) {
    window.__aibWatcher.cfg = cfg;
    return 'reused';
  }
  const W = { cfg, last: '', seq: 0, roots: new WeakSet(), armed: true };

  const isVisible = (el) => {
    if (!el || !el.isConnected) return false;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) return false;
    const st = getComputedStyle(el);
    return st.visibility !== 'hidden' && st.display !== 'none';
  };
  const isDisabled = (el) => el.disabled || el.getAttribute('aria-disabled') === 'true';

  // collectDeep (seed 5.3): selectors searched in the document and, for shadow-DOM sites, every open shadow root.
  const shadowRoots = () => {
    const out = [];
    const visit = (root) => {
      const all = root.querySelectorAll('*');
      for (const el of all) {
        if (el.shadowRoot) { out.push(el.shadowRoot); visit(el.shadowRoot); }
      }
    };
    if (W.cfg.shadow) visit(document);
    return out;
  };
  const deep = (sels, roots) => {
    const res = [];
    const seen = new Set();
    for (const root of roots) {
      for (const sel of sels) {
        let found;
        try { found = root.querySelectorAll(sel); } catch (e) { continue; }
        for (const el of found) if (!seen.has(el)) { seen.add(el); res.push(el); }
      }
    }
    return res;
  };
  const labelOf = (el) => ((el.getAttribute('aria-label') || '') + ' ' + (el.textContent || '')).trim();
  const hasLabel = (el, labels) => { const t = labelOf(el); return labels.some((l) => l && t.includes(l)); };

  const inputText = (el) => {
    if (!el) return '';
    if (el.tagName === 'TEXTAREA' || el.tagName === 'INPUT') return el.value || '';
    return el.innerText || el.textContent || '';
  };

  // Text of an element, entering open shadow roots (innerText alone stops at a shadow host).
  const deepText = (el) => {
    if (!el) return '';
    if (el.shadowRoot) {
      return Array.from(el.shadowRoot.children).map((c) => deepText(c)).join('\n').trim();
    }
    return (el.innerText || el.textContent || '').trim();
  };

  const lastResponse = (roots) => {
    const s = W.cfg.sel;
    const turns = deep(s.turn || [], roots);
    const msgs = deep(s.assistant, roots);
    const lastTurn = turns.length ? turns[turns.length - 1] : null;
    const lastMsg = msgs.length ? msgs[msgs.length - 1] : null;
    return { turns, msgs, last: lastMsg || lastTurn, lastTurn };
  };

  const contentOf = (resp, roots) => {
    if (!resp) return null;
    const s = W.cfg.sel;
    for (const sel of s.content) {
      let el = null;
      try { el = resp.querySelector(sel) || (resp.shadowRoot && resp.shadowRoot.querySelector(sel)); } catch (e) {}
      if (el) return el;
    }
    return resp;
  };

  const state = () => {
    const s = W.cfg.sel;
    const L = W.cfg.labels;
    const roots = [document, ...shadowRoots()];
    if (W.cfg.shadow) for (const r of roots) if (r !== document && !W.roots.has(r)) { W.roots.add(r); observe(r); }
    const inputs = deep(s.input, roots).filter(isVisible);
    const input = inputs[0] || null;
    const buttons = deep(['button', '[role="button"]'], roots).filter(isVisible);
    const stopBySel = deep(s.stop || [], roots).filter(isVisible);
    const stop = stopBySel.length > 0 || buttons.some((b) => hasLabel(b, L.stop) && !isDisabled(b));
    let send = null;
    for (const sel of s.send) {
      const cand = deep([sel], roots).filter(isVisible);
      if (cand.length) { send = cand[0]; break; }
    }
    if (!send && s.sendIcon) {
      const icon = deep(s.sendIcon, roots)[0];
      send = icon ? icon.closest('button') : null;
    }
    const { msgs, turns, last, lastTurn } = lastResponse(roots);
    const users = deep(s.user, roots);
    const content = contentOf(last, roots);
    const text = content ? deepText(content) : '';
    const skipThinking = buttons.some((b) => hasLabel(b, L.skipThinking));
    const turnScope = lastTurn || last;
    const thinkingDone = !!turnScope && Array.from((turnScope.querySelectorAll && turnScope.querySelectorAll('button')) || [])
      .some((b) => hasLabel(b, L.thinkingDone));
    const bodyText = L.generating.length ? (document.body ? document.body.textContent || '' : '') : '';
    const generatingText = L.generating.some((l) => bodyText.includes(l));
    const mic = deep(s.mic || [], roots).filter((img) => isVisible(img.closest('button') || img)).length > 0;
    const feedbackImgs = deep(s.feedback || [], roots);
    // Feedback icons belong to the last response when there are as many thumb_up icons as responses.
    const thumbsUp = feedbackImgs.filter((i) => i.getAttribute('alt') === 'thumb_up').length;
    const loginEl = deep(s.login || [], roots).find(isVisible)
      || (!input && buttons.find((b) => L.login.some((l) => (b.textContent || '').trim() === l)));
    const lastTurnText = turnScope ? deepText(turnScope) : '';
    const rateLimited = !!last && L.rateLimit.some((l) => lastTurnText.toLowerCase().includes(l.toLowerCase()));
    return {
      url: location.href,
      ready: document.readyState,
      visible: document.visibilityState === 'visible',
      inputFound: !!input,
      inputText: inputText(input).slice(0, 2000),
      inputEmpty: inputText(input).trim().length === 0,
      sendFound: !!send,
      sendEnabled: !!send && !isDisabled(send),
      stop,
      userCount: users.length,
      assistantCount: msgs.length || turns.length,
      lastLen: text.length,
      lastHead: text.slice(0, 80),
      skipThinking,
      thinkingDone,
      generatingText,
      micFound: mic,
      lastHasFeedback: msgs.length > 0 && thumbsUp >= msgs.length,
      login: !!loginEl,
      rateLimited,
    };
  };

  const report = (force) => {
    let st;
    try { st = state(); } catch (e) { st = { error: String(e) }; }
    const key = JSON.stringify(st);
    if (!force && key === W.last) return;
    W.last = key;
    st.seq = ++W.seq;
    st.at = Date.now();
    try { window[binding](JSON.stringify(st)); } catch (e) { /* binding gone: the server polls instead */ }
  };

  const mo = new MutationObserver(() => report(false));
  const observe = (root) => mo.observe(root, {
    subtree: true, childList: true, characterData: true, attributes: true,
    attributeFilter: ['disabled', 'aria-disabled', 'aria-label', 'data-testid', 'style', 'class', 'hidden', 'alt'],
  });
  observe(document);
  document.addEventListener('visibilitychange', () => report(false));

  W.state = state;
  W.report = report;
  W.input = () => { const s = W.cfg.sel; const roots = [document, ...shadowRoots()]; return deep(s.input, roots).filter(isVisible)[0] || null; };
  W.inputText = () => inputText(W.input());
  W.sendButton = () => {
    const s = W.cfg.sel; const roots = [document, ...shadowRoots()];
    for (const sel of s.send) { const c = deep([sel], roots).filter(isVisible); if (c.length) return c[0]; }
    if (s.sendIcon) { const icon = deep(s.sendIcon, roots)[0]; return icon ? icon.closest('button') : null; }
    return null;
  };
  W.stopButton = () => {
    const s = W.cfg.sel; const roots = [document, ...shadowRoots()];
    const bySel = deep(s.stop || [], roots).filter(isVisible)[0];
    if (bySel) return bySel;
    return deep(['button', '[role="button"]'], roots).filter(isVisible).find((b) => hasLabel(b, W.cfg.labels.stop)) || null;
  };
  W.extract = () => {
    const roots = [document, ...shadowRoots()];
    const { last } = lastResponse(roots);
    if (!last) return { text: '', how: 'none' };
    // Gemini (seed 4.4): the container found from the feedback icon is preferred, then the response element.
    const content = contentOf(last, roots);
    // The converter (markdown.js) is installed in this world just before the watcher.
    let md = '';
    const convert = typeof window.__aibMarkdown === 'function' ? window.__aibMarkdown : null;
    let error = convert ? null : 'no converter';
    try { md = convert ? convert(content) : ''; } catch (e) { error = String(e); }
    if (md) return { text: md, how: content === last ? 'response' : 'content' };
    return { text: deepText(last), how: 'innerText', error };
  };
  window.__aibWatcher = W;
  report(true);
  return 'installed';
})
