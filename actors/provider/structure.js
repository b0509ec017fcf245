// Structural finders (issue 37): what the watcher falls back to when the table's selectors find nothing on a page
// that changed. They find things by what they are, never by a name the site may rename:
//   composerInput  a visible, editable text box outside the thread (textarea, contenteditable of any editor:
//                  ProseMirror, Quill, Lexical), the lowest one on the page (composers sit at the bottom)
//   questionEls    the elements showing the question the flow typed (our own text in the thread)
//   answerAfter    the content that follows a sent question in the thread
//   contentParts   every content block of an answer, in order (an answer may come in several .markdown parts)
// The table's selectors stay first: these run only where they matched nothing, and the flow reports each use as
// `site_changed`. Loaded with the watcher (tab.py wraps the two into one function).
const aibStructure = (() => {
  const EDITABLE = 'textarea, [contenteditable="true"], [contenteditable="plaintext-only"], [role="textbox"]';
  const shown = (el) => {
    if (!el || !el.isConnected) return false;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) return false;
    const st = getComputedStyle(el);
    return st.visibility !== 'hidden' && st.display !== 'none';
  };
  // Not inert: Claude keeps its server-rendered textarea in an inert, transparent fieldset under the live editor.
  const editable = (el) => !el.disabled && el.getAttribute('aria-readonly') !== 'true'
    && el.getAttribute('aria-disabled') !== 'true' && !el.closest('[inert]')
    && (el.tagName === 'TEXTAREA' || el.isContentEditable || el.getAttribute('contenteditable') === 'true');
  const squash = (s) => (s || '').replace(/\s+/g, '');

  // The lowest editable text box on the page, outside `exclude` (message content); an editor's inner box (a
  // contenteditable inside a role=textbox wrapper) stands for it.
  const composerInput = (roots, exclude) => {
    const found = [];
    for (const root of roots) {
      for (const el of root.querySelectorAll(EDITABLE)) {
        if (!editable(el) || !shown(el) || exclude(el)) continue;
        if (found.some((f) => f.contains(el))) found.splice(found.findIndex((f) => f.contains(el)), 1);
        if (found.some((f) => el.contains(f))) continue;
        found.push(el);
      }
    }
    if (!found.length) return null;
    return found.reduce((a, b) => (b.getBoundingClientRect().bottom >= a.getBoundingClientRect().bottom ? b : a));
  };

  // The elements showing the question's start in the thread (never in an editor): from each text node that holds the
  // start of its first line, up to the element that holds the start of the whole question. Text nodes, not elements,
  // are scanned: a page's text is read once.
  const questionEls = (roots, question) => {
    const key = squash(question).slice(0, 120);
    const head = squash((question.split('\n').find((l) => l.trim()) || '')).slice(0, 40);
    if (key.length < 4 || !head) return [];
    const hits = [];
    for (const root of roots) {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let t = walker.nextNode(); t; t = walker.nextNode()) {
        if (!squash(t.data).includes(head)) continue;
        let el = t.parentElement;
        if (!el || el.isContentEditable || el.closest('textarea, script, style, template, noscript')) continue;
        for (let i = 0; el && i < 8 && !squash(el.textContent).includes(key); i++) el = el.parentElement;
        if (el && squash(el.textContent).includes(key) && !hits.includes(el) && shown(el)) hits.push(el);
      }
    }
    return hits.filter((el) => !hits.some((o) => o !== el && el.contains(o)));
  };

  const hasText = (el) => !!el && squash(el.innerText || el.textContent).length > 0;
  // The question's own controls beside it: a group or toolbar of actions, or buttons with a few words of their own
  // (Claude puts the message's date, "Jan 29", beside its Retry, Edit and Copy buttons: claude-chat-simple.html).
  const controlsOnly = (el) => {
    if (el.matches('[role="group"], [role="toolbar"], [role="menu"]')) return true;
    if (!el.querySelector('button, [role="button"]')) return false;
    let words = 0;
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (!n.parentElement.closest('button, [role="button"]')) words += squash(n.data).length;
    }
    return words < 16;
  };
  // What follows `q` in the thread: climbing from the question, the first following sibling with text at the lowest
  // level that has one (the answer's own container), never the composer, page chrome or the question's controls.
  const answerAfter = (q, stop) => {
    for (let el = q; el && el !== document.body; el = el.parentElement) {
      for (let sib = el.nextElementSibling; sib; sib = sib.nextElementSibling) {
        if (stop(sib)) return null;
        if (hasText(sib) && !controlsOnly(sib)) return sib;
      }
    }
    return null;
  };

  // Every block `selectors` name inside `resp`, outermost only, in order: the first selector that matches any.
  const contentParts = (resp, selectors) => {
    if (!resp) return [];
    const scopes = [resp, ...(resp.shadowRoot ? [resp.shadowRoot] : [])];
    for (const s of selectors) {
      const hits = [];
      for (const scope of scopes) {
        try { hits.push(...scope.querySelectorAll(s)); } catch (e) { break; }
      }
      const outer = hits.filter((el) => !hits.some((o) => o !== el && o.contains(el)));
      if (outer.length) return outer;
    }
    return [];
  };

  return { composerInput, questionEls, answerAfter, contentParts };
})();
