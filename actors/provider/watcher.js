// In-page watcher, run in ai-bridge's *isolated world* (never the page's own world, so nothing of ours is visible
// to the site's scripts). A MutationObserver — on the document and on every open shadow root it finds — recomputes
// the provider state after each batch of DOM changes and reports it through the CDP binding only when it changed;
// visibility changes are reported the moment they happen. Nothing here waits on a timer: a hidden page throttles
// timers, but mutation and visibility callbacks still run at once.
//
// Called as `Runtime.callFunctionOn(install, [config, bindingName])` in the isolated world's context. Idempotent
// per document. The server calls the page actions below through call.js (`window.__aibWatcher[name](...args)`).
function install(cfg, binding, S) {
  if (window.__aibWatcher) {
    window.__aibWatcher.cfg = cfg;
    window.__aibWatcher.report(true);
    return 'reused';
  }
  const W = {
    cfg, last: '', seq: 0, roots: new WeakSet(), marked: new WeakMap(), markedAll: false,
    doc: Math.random().toString(36).slice(2, 10) + Date.now().toString(36),
    question: null,  // the question the flow typed (W.expect): the structural finders look for it in the thread
    used: new Set(),  // the table entries a structural finder stood in for (issue 37): reported as site_changed
  };
  const sel = (k) => W.cfg.sel[k] || [];
  const lab = (k) => W.cfg.labels[k] || [];

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
      for (const el of root.querySelectorAll('*')) {
        if (el.shadowRoot) { out.push(el.shadowRoot); visit(el.shadowRoot); }
      }
    };
    if (W.cfg.shadow) visit(document);
    return out;
  };
  const allRoots = () => [document, ...shadowRoots()];
  const deep = (sels, roots) => {
    const res = [];
    const seen = new Set();
    for (const root of roots) {
      for (const s of sels) {
        let found;
        try { found = root.querySelectorAll(s); } catch (e) { continue; }
        for (const el of found) if (!seen.has(el)) { seen.add(el); res.push(el); }
      }
    }
    return res;
  };
  const labelOf = (el) => ((el.getAttribute('aria-label') || '') + ' ' + (el.textContent || '')).trim();
  const hasLabel = (el, labels) => { const t = labelOf(el); return labels.some((l) => l && t.includes(l)); };
  const squash = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const bare = (s) => (s || '').replace(/\s+/g, '');
  const READ_AHEAD_MAX = 200000;  // characters: a longer answer is read by the flow's own call
  const hasLabelCI = (el, labels) => {
    const t = labelOf(el).toLowerCase();
    return labels.some((l) => l && t.includes(l.toLowerCase()));
  };

  // The element's parent, crossing a shadow boundary to its host.
  const up = (n) => n.parentNode instanceof ShadowRoot ? n.parentNode.host : n.parentNode;
  const within = (el, ancestor) => { for (let n = el; n; n = up(n)) if (n === ancestor) return true; return false; };
  // Is `el` inside one of the elements of `set` (or one of them)? One walk up, whatever the size of the set.
  const inSet = (el, set) => { for (let n = el; n; n = up(n)) if (set.has(n)) return true; return false; };
  // Message content: the answers' content and the users' messages. Page text there is what somebody wrote, so no
  // label is ever matched in it (a question about "is still generating" must not stall the ask).
  const messagesOf = (roots) => {
    const out = new Set([...deep(sel('content'), roots), ...usersOf(roots)]);
    if (W.used.has('assistant')) { const { last } = responses(roots); if (last) out.add(last); }
    return out;
  };
  // Text of `el` outside message content (and outside scripts), with its aria-label: where a UI label can be.
  const uiTextOf = (el, msgs) => {
    let out = el.getAttribute('aria-label') || '';
    const root = el.shadowRoot || el;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => (n.nodeType === Node.ELEMENT_NODE
        ? (msgs.has(n) || /^(SCRIPT|STYLE|TEMPLATE|NOSCRIPT)$/.test(n.tagName) ? NodeFilter.FILTER_REJECT
          : NodeFilter.FILTER_SKIP)
        : NodeFilter.FILTER_ACCEPT),
    });
    for (let n = walker.nextNode(); n; n = walker.nextNode()) out += ' ' + n.data;
    return out;
  };
  // A visible UI element (button, status or live region, notice, thinking header) outside message content that
  // shows one of `labels`. The cheap test first: most elements carry none of them at all.
  const UI = ['button', '[role="button"]', '[role="status"]', '[role="alert"]', '[aria-live]'];
  const uiShows = (roots, labels, msgs, extra) => {
    if (!labels.length) return false;
    for (const el of deep([...UI, ...sel('notice'), ...(extra || [])], roots)) {
      if (!hasLabel(el, labels) || inSet(el, msgs)) continue;
      const t = uiTextOf(el, msgs);
      if (labels.some((l) => l && t.includes(l)) && isVisible(el)) return true;
    }
    return false;
  };
  // What a person reads in a message: no screen-reader prefixes ("You said", "あなたのプロンプト"), no buttons or icons.
  const HIDDEN_TEXT = '.sr-only, .cdk-visually-hidden, button, [role="button"], mat-icon, svg, [aria-hidden="true"]';
  const plainText = (el, skip = HIDDEN_TEXT) => {
    if (!el) return '';
    const parts = [];
    const visit = (root) => {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
        acceptNode: (n) => (n.nodeType !== Node.ELEMENT_NODE ? NodeFilter.FILTER_ACCEPT
          : /^(SCRIPT|STYLE|TEMPLATE|NOSCRIPT)$/.test(n.tagName) || n.matches(skip) ? NodeFilter.FILTER_REJECT
            : NodeFilter.FILTER_SKIP),
      });
      for (let n = walker.nextNode(); n; n = walker.nextNode()) parts.push(n.data);
      for (const host of root.querySelectorAll('*')) if (host.shadowRoot) visit(host.shadowRoot);
    };
    visit(el.shadowRoot || el);
    return parts.join(' ');
  };
  // Not measured as answer text: UI inside the message, and math (rendered twice over, as symbols and as MathML with
  // its TeX; the answer carries the TeX, which drift.solid_len leaves out too).
  const SOLID_SKIP = HIDDEN_TEXT + ', .katex, .katex-display, math, mjx-container';
  // Does `a` come before `b` in the page (shadow trees placed where their host is)?
  const precedes = (a, b) => {
    const chain = (n) => { const out = []; for (let x = n; x; x = up(x)) out.unshift(x); return out; };
    const ca = chain(a); const cb = chain(b);
    let i = 0;
    while (i < ca.length && i < cb.length && ca[i] === cb[i]) i += 1;
    if (i >= ca.length) return true; // a contains b
    if (i >= cb.length) return false;
    return !!(ca[i].compareDocumentPosition(cb[i]) & Node.DOCUMENT_POSITION_FOLLOWING);
  };

  const inputText = (el) => {
    if (!el) return '';
    if (el.tagName === 'TEXTAREA' || el.tagName === 'INPUT') return el.value || '';
    return el.innerText || el.textContent || '';
  };

  // Text of an element, entering open shadow roots (innerText alone stops at a shadow host).
  const deepText = (el) => {
    if (!el || /^(STYLE|SCRIPT|TEMPLATE)$/.test(el.tagName)) return '';
    if (el.shadowRoot) return Array.from(el.shadowRoot.children).map((c) => deepText(c)).join('\n').trim();
    return (el.innerText || el.textContent || '').trim();
  };

  // A visible element whose own text is exactly one of `labels` (an in-progress "Thinking" label, not a sentence
  // of the answer that happens to contain the word).
  // Never inside message content (`msgs`): a heading "Thinking" in an answer is the answer's.
  const exactLabelIn = (scopes, labels, msgs) => {
    if (!labels.length) return false;
    let budget = 3000;
    for (const scope of scopes) {
      if (inSet(scope, msgs)) continue;
      const root = scope.shadowRoot || scope;
      const all = root.textContent || '';
      const walker = labels.some((l) => all.includes(l)) ? document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
        acceptNode: (n) => (n.nodeType === Node.ELEMENT_NODE
          ? (msgs.has(n) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_SKIP) : NodeFilter.FILTER_ACCEPT),
      }) : null;
      for (let n = walker && walker.nextNode(); n && budget > 0; n = walker.nextNode(), budget -= 1) {
        const t = n.data.trim();
        if (t && labels.includes(t) && isVisible(n.parentElement)) return true;
      }
      if (scope.shadowRoot) {
        for (const inner of scope.shadowRoot.querySelectorAll('*')) {
          if (inner.shadowRoot && exactLabelIn([inner], labels, msgs)) return true;
        }
      }
    }
    return false;
  };

  const lastOf = (list) => (list.length ? list[list.length - 1] : null);
  // The users' messages: the table's, else (issue 37) the elements showing the question the flow typed.
  const usersOf = (roots) => {
    const found = deep(sel('user'), roots);
    if (found.length || !W.question) return found;
    const ours = S.questionEls(roots, W.question);
    if (ours.length) W.used.add('user');
    return ours;
  };
  const responses = (roots) => {
    const turns = deep(sel('turn'), roots);
    const msgs = deep(sel('assistant'), roots);
    if (!msgs.length && !turns.length && W.question) {
      // The table names no response on this page: the content that follows our question in the thread.
      const q = lastOf(usersOf(roots));
      const composer = input();
      const chrome = new Set(chromeEls(roots));
      const answer = q && S.answerAfter(q, (el) => (composer && (el === composer || el.contains(composer)))
        || inSet(el, chrome) || el.matches('form, footer, nav, [role="dialog"]'));
      if (answer) {
        W.used.add('assistant');
        return { turns: [], msgs: [answer], last: answer, lastTurn: null };
      }
    }
    return { turns, msgs, last: lastOf(msgs) || lastOf(turns), lastTurn: lastOf(turns) };
  };
  // Every content part of a response (issue 37: a message may show its text and its code as two .markdown blocks);
  // none when the table's content selectors find nothing in it.
  const contentParts = (resp) => S.contentParts(resp, sel('content'));
  const partsText = (parts) => parts.map((p) => deepText(p)).filter(Boolean).join('\n\n');

  // Limit and error notices (alerts, toasts, banners, error-styled blocks): only those that appeared, or changed,
  // after `mark` count. The text decides the kind; a notice that is neither is ignored ("Copied" toasts).
  const classify = (el) => {
    const text = squash(labelOf(el)).slice(0, 300);
    const low = text.toLowerCase();
    if (lab('rateLimit').some((l) => low.includes(l.toLowerCase()))) return { kind: 'rate_limit', text };
    if (lab('siteError').some((l) => low.includes(l.toLowerCase()))) return { kind: 'site_error', text };
    const buttons = el.querySelectorAll ? el.querySelectorAll('button, [role="button"]') : [];
    if (Array.from(buttons).some((b) => lab('retry').some((l) => squash(labelOf(b)) === l))) return { kind: 'site_error', text };
    return null;
  };
  const whereOf = (el) => {
    const role = el.getAttribute('role');
    const cls = (typeof el.className === 'string' ? el.className : '') + ' ' + (el.getAttribute('data-testid') || '') + ' ' + el.tagName.toLowerCase();
    if (/toast|snack/i.test(cls)) return 'toast';
    if (/banner/i.test(cls)) return 'banner';
    if (role === 'alert' || el.getAttribute('aria-live') === 'assertive') return 'alert';
    return 'error';
  };
  // Page chrome the table names (the disclaimer under the thread): never an answer.
  const chromeEls = (roots) => deep(sel('chrome'), roots);
  const notices = (roots) => deep(sel('notice'), roots).filter(isVisible);
  const currentNotice = (roots) => {
    for (const el of notices(roots)) {
      const text = squash(labelOf(el));
      if (W.marked.has(el) && W.marked.get(el) === text) continue;
      const c = classify(el);
      if (c) return { kind: c.kind, text: c.text, where: whereOf(el) };
    }
    return null;
  };

  // The model that answered: the answering message's own slug (ChatGPT), else the picker's label (Gemini's mode).
  const modelOf = (roots, scope) => {
    if (scope) {
      const own = scope.matches && scope.matches('[data-message-model-slug]') ? scope
        : scope.querySelector && scope.querySelector('[data-message-model-slug]');
      if (own) return squash(own.getAttribute('data-message-model-slug')).slice(0, 80);
    }
    const labelled = [...sel('model').filter((s) => !s.includes('data-message-model-slug')), ...sel('picker')];
    for (const el of deep(labelled, roots)) {
      if (!isVisible(el)) continue;
      const aria = el.getAttribute('aria-label') || '';
      const named = aria.match(/current model is\s+(.+)$/i);
      const text = squash(named ? named[1] : plainText(el) || aria);
      if (text) return text.slice(0, 80);
    }
    return '';
  };

  const state = () => {
    const roots = allRoots();
    if (W.cfg.shadow) for (const r of roots) if (r !== document && !W.roots.has(r)) { W.roots.add(r); observe(r); }
    const input = inputIn(roots);
    const msgs = messagesOf(roots);
    // Every button of the page, but the (layout-forcing) visibility check only for those whose label matches;
    // buttons inside message content never count.
    const buttons = deep(['button', '[role="button"]'], roots);
    const uiButton = (labels) => buttons.some((b) => hasLabel(b, labels) && !inSet(b, msgs) && isVisible(b));
    // An answer is being generated: a stop control shows, or an element the table names says so (Claude marks its
    // streaming message data-is-streaming="true"): such an element is no button, so it is never clicked as Stop.
    const stop = deep(sel('stop'), roots).filter(isVisible).length > 0
      || buttons.some((b) => hasLabel(b, lab('stop')) && !isDisabled(b) && !inSet(b, msgs) && isVisible(b))
      || deep(sel('busy'), roots).some((el) => el.isConnected);
    const send = findSend(roots);
    const { msgs: responsesEls, turns, last, lastTurn } = responses(roots);
    const users = usersOf(roots);
    const lastUser = lastOf(users);
    const parts = contentParts(last);
    const text = (parts.length ? partsText(parts) : last ? plainText(last) : '').trim();
    const skipThinking = uiButton(lab('skipThinking'));
    const turnScope = lastTurn || last;
    const thinkingDone = !!turnScope && Array.from((turnScope.querySelectorAll && turnScope.querySelectorAll('button')) || [])
      .some((b) => hasLabel(b, lab('thinkingDone')) && !inSet(b, msgs));
    const scopes = [...(turnScope ? [turnScope] : []), ...deep(sel('thinkingIndicator'), roots)];
    const answered = !!last && (!lastUser || precedes(lastUser, last));
    const thinking = skipThinking || (answered && exactLabelIn(scopes, lab('thinking'), msgs));
    const generatingText = uiShows(roots, lab('generating'), msgs, sel('thinkingIndicator'));
    const mic = deep(sel('mic'), roots).filter((img) => isVisible(img.closest('button') || img)).length > 0;
    // The finished-turn buttons (Gemini's feedback icons, ChatGPT's turn actions) of the last response.
    const lastFeedback = turnScope ? deep(sel('feedback'), roots).some((el) => within(el, turnScope)) : false;
    const loginEl = deep(sel('login'), roots).find(isVisible)
      || (!input && buttons.find((b) => lab('login').some((l) => (b.textContent || '').trim() === l) && isVisible(b)));
    // Deep Research (issue 34): the plan's start button in the last response, and whether the last response opened
    // its report.
    const researchButton = W.researchStart(roots, turnScope, msgs);
    const reportOpen = !!turnScope && deep(sel('reportEntry'), roots).some((el) => within(el, turnScope));
    // ChatGPT's Deep Research turn holds only its frame (no message element, so no new response is counted): the
    // frame after the last user message is the answer on its way (NX capture deep-research-2026-07.html).
    const researchFrame = sel('researchFrame').length > 0
      && deep(sel('researchFrame'), roots).some((el) => !lastUser || precedes(lastUser, el));
    // A bot check (Cloudflare's interstitial or its widget) instead of the site: by the table's selectors, or by
    // its words in the page's title or headings.
    const challenge = deep(sel('challenge'), roots).some((el) => el.isConnected) || (lab('challenge').length > 0
      && [document.title, ...deep(['h1', 'h2', '[role="heading"]', '#challenge-body-text'], roots)
        .map((el) => el.textContent || '')].some((t) => lab('challenge').some((l) => l && t.includes(l))));
    const unavailable = lab('unavailable').length > 0
      && deep([...sel('notice'), '[role="status"]', '[role="alert"]', 'main h1', 'main h2'], roots)
        .some((el) => hasLabelCI(el, lab('unavailable')) && !inSet(el, msgs) && isVisible(el));
    return {
      url: location.href,
      ready: document.readyState,
      visible: document.visibilityState === 'visible',
      doc: W.doc,
      inputFound: !!input,
      inputEmpty: inputText(input).trim().length === 0,
      sendFound: !!send,
      sendEnabled: !!send && !isDisabled(send),
      stop,
      userCount: users.length,
      assistantCount: responsesEls.length || turns.length,
      lastLen: text.length,
      // How much answer the page shows, as its reader sees it: no buttons (a code block's "Copy code"), icons or
      // screen-reader labels (issue 37: an answer read shorter than this is not whole).
      lastSolid: (parts.length ? parts.map((p) => plainText(p, SOLID_SKIP)).join('') : plainText(last, SOLID_SKIP))
        .replace(/\s+/g, '').length,
      // The answer's generated images and file links (issue 35): an image-only answer has no text and is still one.
      lastMedia: turnScope ? deep([...sel('generatedImage'), ...sel('fileLink')], roots)
        .filter((el) => within(el, turnScope)).length : 0,
      lastHead: text.slice(0, 80),
      lastUser: squash(plainText(lastUser)).slice(0, 300),
      answered,
      thinking,
      skipThinking,
      thinkingDone,
      generatingText,
      micFound: mic,
      lastHasFeedback: lastFeedback,
      login: !!loginEl,
      unavailable,
      researchStart: !!researchButton,
      reportOpen,
      researchFrame,
      fallbacks: [...W.used].sort(),
      challenge,
      model: answered ? modelOf(roots, turnScope) : modelOf(roots, null),
      notice: currentNotice(roots),
    };
  };

  const findSend = (roots) => {
    for (const s of sel('send')) {
      const cand = deep([s], roots).filter(isVisible);
      if (cand.length) return cand[0];
    }
    const icon = deep(sel('sendIcon'), roots)[0];
    return icon ? icon.closest('button') : null;
  };

  const report = (force) => {
    let st;
    try { st = state(); } catch (e) { return; } // a half-built page: the next mutation reports again
    const key = JSON.stringify(st);
    if (!force && key === W.last) return;
    W.last = key;
    st.seq = ++W.seq;
    st.at = Date.now();
    // Read ahead: a state that looks finished (the sent question answered, its finished-turn buttons, nothing still
    // streaming or thinking, the tab visible) carries the answer's own-content extraction of this very DOM, so the
    // flow need not ask for it again when this state completes the ask (the time to the client). Never before the
    // question is in the thread, never a big one (an event's frame), never while thinking could still be expanded.
    if (W.question && st.answered && st.lastHasFeedback && st.visible && !st.stop && !st.thinking
        && !st.thinkingDone && !st.generatingText && bare(st.lastUser).includes(bare(W.question).slice(0, 200))) {
      try {
        const read = W.extract(true);
        if (read.text.length <= READ_AHEAD_MAX) st.read = read;
      } catch (e) { /* the flow reads it itself */ }
    }
    try { window[binding](JSON.stringify(st)); } catch (e) { /* binding gone: the server polls instead */ }
  };

  const mo = new MutationObserver(() => report(false));
  const observe = (root) => mo.observe(root, {
    subtree: true, childList: true, characterData: true, attributes: true,
    attributeFilter: ['disabled', 'aria-disabled', 'aria-label', 'aria-expanded', 'data-testid', 'style', 'class',
      'hidden', 'alt', 'role'],
  });
  observe(document);
  // Visibility is not a DOM mutation: report it the moment it changes (a hidden tab renders no answer text).
  for (const ev of ['visibilitychange', 'pageshow', 'pagehide']) document.addEventListener(ev, () => report(false), true);
  window.addEventListener('focus', () => report(false));

  // ---- page actions (called by the server through call.js) ------------------------------------------------------

  // The composer's input: the table's, else (issue 37) a visible editable text box outside the thread, whatever
  // its editor.
  const inputIn = (roots) => {
    const found = deep(sel('input'), roots).filter(isVisible)[0];
    if (found) return found;
    const msgs = new Set([...deep(sel('content'), roots), ...usersOf(roots)]);
    const box = S.composerInput(roots, (el) => inSet(el, msgs));
    if (box) W.used.add('input');
    return box;
  };
  const input = () => inputIn(allRoots());
  W.expect = (question) => { W.question = question; report(true); return true; };
  // An ask's first call (issue 40.6): the question told to the structural finders, the page counted as it is
  // before anything is typed, and the question typed and read back (W.fill) unless a stop button stands in the way
  // (typed: null). What W.expect, a state read and W.fill did in three round trips.
  W.begin = (question) => {
    W.question = question;
    const st = state();
    if (st.stop) { report(true); return { state: st, typed: null }; }
    return { state: st, typed: W.fill(question) };
  };
  const caretToEnd = (el) => {
    el.focus();
    if (el.tagName === 'TEXTAREA' || el.tagName === 'INPUT') { el.selectionStart = el.selectionEnd = el.value.length; return; }
    const r = document.createRange();
    r.selectNodeContents(el);
    r.collapse(false);
    const s = getSelection(); s.removeAllRanges(); s.addRange(r);
  };
  W.state = state;
  W.report = report;
  W.inputText = () => inputText(input());
  W.focusInput = () => { const el = input(); if (!el) return false; caretToEnd(el); return true; };
  // The box shows nothing: an empty textarea, or an editor's one empty paragraph ("\n"; ProseMirror, Lexical and
  // Quill all keep one).
  const blank = (el) => /^\n?$/.test(inputText(el));
  W.clear = () => {
    const el = input();
    if (!el) return false;
    el.focus();
    if (el.tagName === 'TEXTAREA' || el.tagName === 'INPUT') el.select();
    else { const r = document.createRange(); r.selectNodeContents(el); const s = getSelection(); s.removeAllRanges(); s.addRange(r); }
    if (inputText(el).length) document.execCommand('delete');
    if (inputText(el).trim().length && (el.tagName === 'TEXTAREA' || el.tagName === 'INPUT')) {
      Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), 'value').set.call(el, '');
      el.dispatchEvent(new Event('input', { bubbles: true }));
    }
    return inputText(el).trim().length === 0;
  };
  // Seed 5.1 / 5.2 phase 1: a textarea through its native value setter (React sees it), a contenteditable through
  // execCommand('insertText') (ProseMirror / Quill see a real input event; line breaks become paragraphs). Clears
  // first and returns the box's text, so the hot path types and verifies in one round trip. An editor's text is
  // read as its textContent: the flow compares it with the question whitespace-free, where it equals innerText,
  // and reading innerText right after the insert would make the page lay out once more before the reply (the
  // watcher's report lays it out once anyway).
  W.fill = (text) => {
    // A one-line question into a box that shows nothing: no clearing. The delete would change the editor's DOM all
    // the same, and every change to a composer makes the page lay out again (on a long conversation that costs
    // milliseconds each). A question with line breaks is typed into the cleared box, as always: typed into the
    // editor's paragraph, each line would become a paragraph of its own, blank lines between them in what the page
    // sends.
    const box = input();
    if (!box || text.includes('\n') || !blank(box)) W.clear();
    const el = input();
    if (!el) return '';
    el.focus();
    if (el.tagName === 'TEXTAREA' || el.tagName === 'INPUT') {
      Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), 'value').set.call(el, text);
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
      return el.value || '';
    }
    caretToEnd(el);
    document.execCommand('insertText', false, text);
    return el.textContent || '';
  };
  // `markFirst`: notices shown now are not news (see `mark`), in the same round trip as the click.
  W.clickSend = (markFirst) => {
    if (markFirst) W.mark(false, true);
    const b = findSend(allRoots());
    if (!b || isDisabled(b)) return false;
    b.click();
    return true;
  };
  // The centre of the enabled send button in viewport coordinates, scrolled into view: where a mouse event lands.
  W.sendBox = () => {
    const b = findSend(allRoots());
    if (!b || isDisabled(b)) return null;
    b.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    const r = b.getBoundingClientRect();
    return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
  };
  W.stopButton = () => {
    const roots = allRoots();
    const bySel = deep(sel('stop'), roots).filter(isVisible)[0];
    if (bySel) return bySel;
    return deep(['button', '[role="button"]'], roots).filter(isVisible).find((b) => hasLabel(b, lab('stop'))) || null;
  };
  W.clickStop = () => { const b = W.stopButton(); if (!b) return false; b.click(); return true; };
  // A Deep Research plan's start button inside the last response: by the table's selectors, else by its label;
  // shown and enabled (it goes inert once the research started).
  W.researchStart = (roots, scope, msgs) => {
    if (!scope) return null;
    const usable = (b) => within(b, scope) && !isDisabled(b) && !b.closest('[inert]') && isVisible(b);
    const bySel = deep(sel('researchStart'), roots).find(usable);
    if (bySel) return bySel;
    return lab('startResearch').length ? deep(['button'], roots).find((b) => hasLabel(b, lab('startResearch'))
      && usable(b)) || null : null;
  };
  W.researchStartBox = () => {
    const { last, lastTurn } = responses(allRoots());
    const b = W.researchStart(allRoots(), lastTurn || last, new Set());
    if (!b) return null;
    b.scrollIntoView({ block: 'center', inline: 'center' });  // a click lands only inside the viewport
    const r = b.getBoundingClientRect();
    return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
  };
  // Notices already shown are not news. `keepAfterLastUser`: a retry that did not send again still wants the
  // notices that follow its question in the thread.
  W.mark = (keepAfterLastUser, quiet) => {
    const roots = allRoots();
    const lastUser = lastOf(usersOf(roots));
    W.marked = new WeakMap();
    for (const el of notices(roots)) {
      if (keepAfterLastUser && lastUser && precedes(lastUser, el)) continue;
      W.marked.set(el, squash(labelOf(el)));
    }
    if (!quiet) report(true);  // a click follows at once when quiet: its mutations report
    return true;
  };
  // Seed 3.6: open the collapsed thinking of the last answer — only a button inside the last assistant turn.
  W.expandThinking = () => {
    const { last, lastTurn } = responses(allRoots());
    const scope = lastTurn || last;
    if (!scope) return false;
    for (const s of sel('expandThinking')) {
      const b = scope.querySelector(s);
      if (b && hasLabel(b, lab('thinkingDone'))) { b.click(); return true; }
    }
    return false;
  };

  // The answer's readers (answer.js): W.extract and W.extractBy.
  aibAnswer(W, { sel, lab, deep, within, inSet, precedes, lastOf, squash, plainText, deepText, contentParts, notices,
    chromeEls, allRoots, responses });

  window.__aibWatcher = W;
  report(true);
  return 'installed';
}
