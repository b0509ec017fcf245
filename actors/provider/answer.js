// The answer's readers (seed 3.5 / 4.4), W.extract and W.extractBy: installed into the watcher (watcher.js), whose
// finders they use; tab.py loads the two into one function. `h`: the watcher's helpers.
function aibAnswer(W, h) {
  const { sel, lab, deep, within, inSet, precedes, lastOf, squash, plainText, deepText, contentParts, notices,
    chromeEls, allRoots, responses } = h;
  // DOM → markdown: the converter (markdown.js, Turndown) installed in this world just before the watcher. If it
  // fails, the element's text stands in (and the failure is reported with the extracted answer).
  let convertError = null;
  const toMarkdown = (el, sources) => {
    if (typeof window.__aibMarkdown !== 'function') { convertError = 'no converter'; return deepText(el); }
    try { return window.__aibMarkdown(el, sources); } catch (e) { convertError = String(e); return deepText(el); }
  };
  // The table's anchors in order; the first whose element holds rendered text wins
  // (a hidden React page leaves empty list items and paragraphs, whose markdown is only markers). `own` reads only
  // the new turn's own content (report, content, the box of its feedback icons): the flow asks for that first and
  // waits for it to render before it lets the wider anchors look around the turn. No anchor returns page chrome.
  const hasText = (el) => !!el && (el.textContent || '').trim().length > 0;
  // Markdown that says something: more than list markers, fences and other syntax.
  const meaningful = (md) => md.replace(/^\s*([-*+]|\d+\.)\s/gm, '').replace(/[\s#>`|*_~-]/g, '').length > 0;
  // Page chrome (the disclaimer under the thread): every line of the text carries one of its labels.
  const chromeOnly = (text) => {
    const lines = text.split('\n').map((l) => l.trim()).filter(Boolean);
    return lines.length > 0 && lines.every((l) => lab('chrome').some((c) => c && l.includes(c)));
  };
  const OWN = new Set(['report', 'content', 'feedback']);
  const PLAIN = new Set(['paragraphs', 'body']);
  const anchors = {
    report: (roots, last) => {
      // Only when the last response opened the report: a report of an earlier turn is not this answer.
      if (!deep(sel('reportEntry'), roots).some((el) => within(el, last))) return '';
      const panel = deep(sel('report'), roots).find(hasText);
      if (!panel) return '';
      const sources = deep(sel('reportSources'), roots).map((a) => a.href || a.getAttribute('href') || '');
      return toMarkdown(panel, sources);
    },
    feedback: (roots, last) => {
      const icons = deep(sel('feedback'), roots).filter((el) => within(el, last)
        && [el.getAttribute('alt'), el.getAttribute('data-mat-icon-name'), el.getAttribute('fonticon')].includes('thumb_up'));
      const btn = lastOf(icons) && lastOf(icons).closest('button');
      const box = btn && btn.parentElement && btn.parentElement.parentElement;
      // The seed's P1: the box two levels above the thumb's button holds the text. On the 2026 page that box is
      // the action bar (buttons only): it counts only where it holds text of its own.
      return box && plainText(box).trim() ? toMarkdown(box) : '';
    },
    content: (roots, last) => contentParts(last).map((c) => toMarkdown(c)).filter((t) => t.trim()).join('\n\n'),
    paragraphs: (roots, last, lastTurn) => {
      const scope = lastTurn || last;
      const ps = Array.from(scope.querySelectorAll('p'));
      return ps.map((p) => squash(p.innerText || p.textContent)).filter(Boolean).join('\n\n');
    },
    turn: (roots, last) => toMarkdown(last),
    'aria-live': (roots, last) => {
      // A live region of the last response, or after it in the page; never one in the page chrome.
      const chrome = new Set(chromeEls(roots));
      const regions = deep(['[aria-live="polite"]'], roots)
        .filter((r) => hasText(r) && !inSet(r, chrome) && (within(r, last) || precedes(last, r)));
      return regions.length ? toMarkdown(lastOf(regions)) : '';
    },
    body: (roots) => {
      const main = deep(sel('main'), roots)[0] || document.body;
      // The page's text in order, without the composer, header, footer, notices and buttons: never the answer.
      const skip = new Set([...chromeEls(roots), ...notices(roots)]);
      const BLOCK = /^(P|DIV|LI|H[1-6]|ARTICLE|SECTION|PRE|TR|BR|UL|OL|TABLE|BLOCKQUOTE|MAIN|FORM|HEADER|FOOTER)$/;
      const parts = [];
      const walker = document.createTreeWalker(main, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
        acceptNode: (n) => {
          if (n.nodeType !== Node.ELEMENT_NODE) return NodeFilter.FILTER_ACCEPT;
          if (skip.has(n) || /^(SCRIPT|STYLE|TEMPLATE|NOSCRIPT|BUTTON|SVG|MAT-ICON)$/.test(n.tagName.toUpperCase())
            || n.getAttribute('role') === 'button' || n.getAttribute('aria-hidden') === 'true') return NodeFilter.FILTER_REJECT;
          if (BLOCK.test(n.tagName)) parts.push('\n');
          return NodeFilter.FILTER_SKIP;
        },
      });
      for (let n = walker.nextNode(); n; n = walker.nextNode()) parts.push(n.data);
      const text = parts.join('').split('\n').map((l) => l.replace(/\s+/g, ' ').trim()).filter(Boolean).join('\n');
      let start = -1;
      for (const m of lab('answerMarkers')) {
        const i = text.lastIndexOf(m);
        if (i >= 0 && i + m.length > start) start = i + m.length;
      }
      if (start < 0) return '';
      let rest = text.slice(start);
      let cut = rest.length;
      for (const m of lab('endMarkers')) {
        const i = rest.indexOf(m);
        if (i > 10 && i < cut) cut = i; // seed 3.5: a marker in the first 10 characters is part of the answer
      }
      return rest.slice(0, cut).split('\n').filter((l) => !chromeOnly(l)).join('\n').trim();
    },
  };
  // One anchor, by name: the flow's second look when the first read shows less than the page streamed.
  W.extractBy = (how) => {
    const roots = allRoots();
    const { last, lastTurn } = responses(roots);
    convertError = null;
    let text = '';
    try { text = (last || how === 'body') && anchors[how] ? anchors[how](roots, last, lastTurn) || '' : ''; } catch (e) { text = ''; }
    if (!meaningful(text) || chromeOnly(text)) return { text: '', how: 'none', error: convertError, plain: false };
    return { text, how, error: convertError, plain: PLAIN.has(how) || !!convertError };
  };
  W.extract = (ownOnly) => {
    const roots = allRoots();
    const { last, lastTurn } = responses(roots);
    convertError = null;
    let chrome = false;
    for (const how of W.cfg.anchors) {
      if (ownOnly && !OWN.has(how)) continue;
      if (!last && how !== 'body') continue;
      let text = '';
      try { text = anchors[how](roots, last, lastTurn) || ''; } catch (e) { text = ''; }
      if (!meaningful(text)) continue;
      if (chromeOnly(text)) { chrome = true; continue; }
      return { text, how, error: convertError, plain: PLAIN.has(how) || !!convertError };
    }
    return { text: '', how: chrome ? 'chrome' : 'none', error: convertError, plain: false };
  };
}
