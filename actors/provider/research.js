// A Deep Research run inside its own cross-site frame (issue 34: ChatGPT's, RESEARCH.md 2.3). research.py calls it
// through the frame's child session, in ai-bridge's isolated world of that frame (the frame's own scripts never see
// it), as `researchFrame(cfg, op)`:
//   'status' -> {ready, start, plan, done, heading, reportChars, progress}: what the frame shows now
//   'start'  -> true when it pressed the plan's start button (false: none is usable)
//   'report' -> {markdown, chars, how}: the report after its heading, as markdown (window.__aibMarkdown, installed in
//               this world just before), with `chars` its non-blank text, measured as 'status' measures it
// The widget renders into a nested same-origin about:blank iframe#root; the frame's own body holds a few characters
// (nuncaeslupus/ai-chat-exporter src/extension/content/deep-research-frame.ts, measured live): `cfg.docs` names it.
// Inline script bodies there are megabytes (the same file): text is read without script and style.
function researchFrame(cfg, op) {
  const lab = (k) => (cfg.labels && cfg.labels[k]) || [];
  const squash = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const low = (s) => squash(s).toLowerCase();
  const docOf = () => {
    for (const s of cfg.docs || []) {
      let frame = null;
      try { frame = document.querySelector(s); } catch (e) { continue; }
      try {
        const d = frame && frame.contentDocument;
        if (d && d.body && (d.body.textContent || '').trim()) return d;
      } catch (e) { /* not same-origin: not the report's document */ }
    }
    return document;
  };
  const doc = docOf();
  const body = doc.body;
  if (!body) return op === 'status' ? { ready: false } : op === 'start' ? false : null;
  const view = doc.defaultView || window;
  const isVisible = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) return false;
    const st = view.getComputedStyle(el);
    return st.visibility !== 'hidden' && st.display !== 'none';
  };
  const SKIP = /^(SCRIPT|STYLE|TEMPLATE|NOSCRIPT)$/;
  // The text of a node without scripts and styles (a detached copy's innerText would be empty).
  const textOf = (root) => {
    const parts = [];
    const walker = doc.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => (n.nodeType !== Node.ELEMENT_NODE ? NodeFilter.FILTER_ACCEPT
        : SKIP.test(n.tagName) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_SKIP),
    });
    for (let n = walker.nextNode(); n; n = walker.nextNode()) parts.push(n.data);
    return parts.join(' ');
  };
  // The smallest visible element whose whole text is one of `labels` (any case), or starts with one when `prefix`.
  const labelled = (labels, prefix) => {
    const want = labels.map(low).filter(Boolean);
    if (!want.length) return null;
    const all = low(body.innerText);
    if (!want.some((w) => all.includes(w))) return null;
    let best = null;
    for (const el of body.querySelectorAll('*')) {
      if (SKIP.test(el.tagName)) continue;
      const t = low(el.textContent);
      if (!want.some((w) => (prefix ? t.startsWith(w) : t === w))) continue;
      if (!best || best.contains(el)) best = el;  // a deeper match is the label itself, not its box
    }
    return best && isVisible(best) ? best : null;
  };
  const startButton = () => {
    const want = lab('frameStart').map(low);
    return Array.from(body.querySelectorAll('button, [role="button"]')).find((b) => {
      const t = low(b.textContent) || low(b.getAttribute('aria-label'));
      return want.includes(t) && !b.disabled && b.getAttribute('aria-disabled') !== 'true' && !b.closest('[inert]')
        && isVisible(b);
    }) || null;
  };
  // The report: everything after its heading (else after the "completed" line) to the end of the document.
  const heading = () => labelled(lab('reportHeading'), false);
  const region = (anchor) => {
    const range = doc.createRange();
    range.setStartAfter(anchor);
    range.setEndAfter(body.lastChild);
    const box = doc.createElement('div');
    box.append(range.cloneContents());
    for (const el of box.querySelectorAll('script, style, template, noscript')) el.remove();
    return box;
  };
  const solid = (s) => s.replace(/\s+/g, '').length;

  if (op === 'start') {
    const b = startButton();
    if (!b) return false;
    b.scrollIntoView({ block: 'center', inline: 'center' });
    b.click();
    return true;
  }
  const head = heading();
  const doneEl = labelled(lab('researchDone'), true);
  const anchor = head || doneEl;
  if (op === 'report') {
    if (!anchor) return null;
    const box = region(anchor);
    return { markdown: window.__aibMarkdown(box), chars: solid(textOf(box)), how: head ? 'heading' : 'done' };
  }
  // 'status'
  const lines = (body.innerText || '').split('\n').map(squash).filter(Boolean);
  const progress = lab('researchProgress').map(low).filter(Boolean);
  const shown = lines.filter((l) => progress.some((p) => l.toLowerCase().includes(p)));
  const start = !!startButton();
  return {
    ready: true,
    start,
    plan: start || lines.some((l) => /plan starts in/i.test(l)),
    done: !!doneEl,
    heading: !!head,
    reportChars: anchor ? solid(textOf(region(anchor))) : 0,
    progress: shown.length ? shown[shown.length - 1].slice(0, 200) : '',
  };
}
