// The health probe's page script (probe.py), run in ai-bridge's isolated world: which selector of each table entry
// matches on this page, which label of each label entry is shown, the page's language and its open shadow roots.
// It only reads the page: no click, no focus, no typing.
//
// Called as `Runtime.callFunctionOn(probe, [config])` with the table's watcher config (selectors and labels, with
// the user's overrides prepended).
function probe(cfg) {
  const shadowRoots = [];
  if (cfg.shadow) {
    const visit = (root) => {
      for (const el of root.querySelectorAll('*')) {
        if (el.shadowRoot) { shadowRoots.push(el.shadowRoot); visit(el.shadowRoot); }
      }
    };
    visit(document);
  }
  const roots = [document, ...shadowRoots];
  const isVisible = (el) => {
    if (!el || !el.isConnected) return false;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) return false;
    const st = getComputedStyle(el);
    return st.visibility !== 'hidden' && st.display !== 'none';
  };
  const queryAll = (scopes, s) => {
    const out = [];
    for (const root of scopes) {
      let found;
      try { found = root.querySelectorAll(s); } catch (e) { return null; } // bad syntax
      for (const el of found) out.push(el);
    }
    return out;
  };
  // Each selector of an entry in order: how many elements match and how many are visible; null = bad syntax.
  const entry = (sels, scopes) => sels.map((s) => {
    const els = queryAll(scopes, s);
    return els === null ? { selector: s, invalid: true, count: 0, visible: 0 }
      : { selector: s, invalid: false, count: els.length, visible: els.filter(isVisible).length };
  });

  const sel = cfg.sel || {};
  const result = { selectors: {}, labels: {} };
  for (const [name, sels] of Object.entries(sel)) {
    if (name === 'content') continue; // searched inside the last response, below
    result.selectors[name] = entry(sels, roots);
  }
  // The answer's content, as the watcher finds it: inside the last response (or turn), its shadow root too.
  // Each response once: the messages, else the turns around them (ChatGPT has both for every response).
  const msgs = queryAll(roots, (sel.assistant || []).join(',') || ':not(*)') || [];
  const turns = queryAll(roots, (sel.turn || []).join(',') || ':not(*)') || [];
  const responses = msgs.length ? msgs : turns;
  const last = responses.length ? responses[responses.length - 1] : null;
  if (sel.content) {
    result.selectors.content = last ? entry(sel.content, [last, ...(last.shadowRoot ? [last.shadowRoot] : [])])
      : sel.content.map((s) => ({ selector: s, invalid: false, count: 0, visible: 0 }));
  }
  result.responses = responses.length;

  // Labels: accessible names and the visible text of the page (open shadow roots too) — never user content
  // (answers, reports, questions, the chips of attached files): a report that says "ログイン" is no login page, and a
  // file named in Japanese does not make an English page Japanese.
  const messages = new Set(queryAll(roots, [...(sel.content || []), ...(sel.user || []), ...(sel.report || []),
    ...(sel.attachment || []), ...(sel.toolChip || [])].join(',') || ':not(*)') || []);
  const up = (n) => (n.parentNode instanceof ShadowRoot ? n.parentNode.host : n.parentNode);
  const inMessage = (el) => { for (let n = el; n; n = up(n)) if (messages.has(n)) return true; return false; };
  const names = [];
  for (const root of roots) {
    for (const el of root.querySelectorAll('[aria-label], button, [role="button"], a')) {
      if (!isVisible(el) || inMessage(el)) continue;
      names.push(((el.getAttribute('aria-label') || '') + ' ' + (el.textContent || '')).trim());
    }
  }
  const textOf = (root) => {
    const parts = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => (n.nodeType !== Node.ELEMENT_NODE ? NodeFilter.FILTER_ACCEPT
        : messages.has(n) || /^(SCRIPT|STYLE|TEMPLATE|NOSCRIPT)$/.test(n.tagName) ? NodeFilter.FILTER_REJECT
          : NodeFilter.FILTER_SKIP),
    });
    for (let n = walker.nextNode(); n; n = walker.nextNode()) parts.push(n.data);
    return parts.join(' ');
  };
  const text = [document.body ? textOf(document.body) : '', ...shadowRoots.map(textOf)].join('\n');
  for (const [name, labels] of Object.entries(cfg.labels || {})) {
    result.labels[name] = labels.map((l) => ({
      label: l, shown: !!l && (names.some((n) => n.includes(l)) || text.includes(l)),
    }));
  }
  // An empty composer: the 2026 ChatGPT shows voice and dictate buttons there instead of a send button.
  const input = (queryAll(roots, (sel.input || []).join(',') || ':not(*)') || []).find(isVisible);
  const inputText = !input ? '' : (input.tagName === 'TEXTAREA' || input.tagName === 'INPUT') ? input.value || ''
    : input.innerText || input.textContent || '';
  result.composerEmpty = !!input && inputText.trim().length === 0;
  result.url = location.href;
  result.lang = (document.documentElement.getAttribute('lang') || '').trim();
  // The site's own UI language: kana in its buttons' labels (never in user content, above, nor in links, which
  // carry the user's conversation titles).
  result.kana = roots.some((root) => [...root.querySelectorAll('button[aria-label], [role="button"][aria-label]')]
    .some((el) => isVisible(el) && !inMessage(el) && /[\u3040-\u30ff]/.test(el.getAttribute('aria-label'))));
  result.shadowRoots = shadowRoots.length;
  return result;
}
