// ai-bridge browser tools: the page side. Evaluated once per document in an isolated world of the main frame
// (actors/browser_tools/page.py): the page's own scripts never see it, and cannot tamper with what it reads.
//
// It walks the composed tree — open shadow roots and same-origin iframes whose document the domain policy allows
// (`init.hosts`, the server's patterns) included — to build the snapshot, keeps the
// ref registry (a ref names one element of this document; refs count on from `refStart`, which the server raises
// across documents so that a ref of an earlier page never names an element of a later one), resolves targets, and
// reads the page. Every op returns {ok, url, nextRef, ...} or {ok: false, error: {code, message, retry}}; the server
// checks `url` against the domain policy before it uses anything read here.
//
// The script is in parts, joined in this order by page.py (PARTS) and evaluated as one: page_tree.js (this part:
// it opens the closure; the state, the composed tree, the domain policy, roles and names, visibility, refs),
// page_act.js, page_snapshot.js, page_read.js, page_ops.js (which closes it).
(function install(init) {
  'use strict';
  if (globalThis.__aibTools) return globalThis.__aibTools.hello();

  const start = init.refStart;
  const HOSTS = Array.isArray(init.hosts) ? init.hosts.map((h) => String(h).toLowerCase()) : [];
  let next = start;
  let picked = null; // pickFile's element, until takePicked
  const refs = new Map(); // 'e12' -> {el: WeakRef, role, name, tag}
  const refOf = new WeakMap(); // element -> 'e12'
  // Cross-origin frames whose own origin the policy allows, as the server found them through the debugger (it reads
  // them in a world of their own): frame owner -> the server's key for the frame, and back.
  const opened = new WeakMap();
  const openedKeys = new Map(); // key -> WeakRef(owner)

  class OpError extends Error {
    constructor(code, message, retry = false) {
      super(message);
      this.code = code;
      this.retry = retry;
    }
  }
  const fail = (code, message, retry = false) => {
    throw new OpError(code, message, retry);
  };

  // ---- the composed tree ---------------------------------------------------------------------------------------

  const SKIP_TAGS = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'TITLE', 'BASE']);
  // Elements that can hold a document of their own.
  const FRAME_TAGS = new Set(['IFRAME', 'FRAME', 'OBJECT', 'EMBED', 'FENCEDFRAME']);

  // ---- the domain policy, as extension/policy.js and actors/browser_tools/policy.py judge a URL -----------------

  function hostAllowed(host) {
    for (const p of HOSTS) {
      if (p === '*') return true;
      if (p.startsWith('*.') ? host === p.slice(2) || host.endsWith(p.slice(1)) : host === p) return true;
    }
    return false;
  }

  /** true / false for an http(s) URL or origin; null when the policy cannot judge it (about:, blob:, 'null'). */
  function httpAllowed(url) {
    let u;
    try {
      u = new URL(url);
    } catch {
      return null;
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
    const host = u.hostname.toLowerCase();
    return hostAllowed(host.endsWith('.') ? host.slice(0, -1) : host);
  }

  /** May the tools read this document? Its URL and its origin must both pass: an about:blank or srcdoc document (or
   * one whose URL document.open changed) is judged by the origin it inherited from whoever made it, and
   * document.domain changes neither. */
  function docAllowed(doc) {
    const win = doc.defaultView;
    let origin = 'null';
    try {
      origin = String(win?.origin ?? 'null');
    } catch {
      return false;
    }
    const byOrigin = httpAllowed(origin);
    if (byOrigin === false) return false;
    const url = doc.URL;
    if (url === 'about:blank' || url === 'about:srcdoc' || url.startsWith('about:blank#')) return true;
    const byUrl = httpAllowed(url);
    return byUrl === true || (byUrl === null && byOrigin === true);
  }

  function isFrame(el) {
    return FRAME_TAGS.has(el.tagName);
  }

  /** A frame's document when the tools may read it: same origin (or made reachable by document.domain) *and*
   * allowed by the policy. null for every other frame — a *sealed* one. */
  function frameDoc(el) {
    if (!isFrame(el)) return null;
    try {
      const doc = el.contentDocument || null; // null for cross-origin frames
      return doc && docAllowed(doc) ? doc : null;
    } catch {
      return null;
    }
  }

  /** A frame owner whose document the tools cannot read: input into it, or its pixels, could reach a denied site. */
  function sealed(el) {
    if (!el || !isFrame(el)) return false;
    if (el.tagName === 'OBJECT' || el.tagName === 'EMBED') {
      let doc = null;
      try {
        doc = el.contentDocument || null;
      } catch {
        doc = null;
      }
      // An <object> showing an image or nothing holds no frame; one holding a document we cannot read is sealed.
      if (!doc && el.tagName === 'OBJECT' && !el.contentWindow) return false;
    }
    return !frameDoc(el);
  }

  /** The server's key of a frame we cannot read here but the server reads through its own session, or undefined. */
  function openKey(el) {
    if (!el || !isFrame(el)) return undefined;
    const key = opened.get(el);
    return key !== undefined && !frameDoc(el) ? key : undefined;
  }

  /** The open frames under `root` (keys, in document order), and how many sealed ones nobody has opened. */
  function frameCensus(root) {
    const open = [];
    let sealedCount = 0;
    for (const el of allElements(root)) {
      if (!isFrame(el) || !sealed(el)) continue;
      const key = openKey(el);
      if (key !== undefined) open.push(key);
      else sealedCount++;
    }
    return { open, sealed: sealedCount };
  }

  /** Child nodes as rendered: a shadow host's shadow tree (with slots filled), a same-origin frame's body. */
  function kids(node) {
    if (node.nodeType === 1) {
      const el = node;
      if (el.shadowRoot) return slotted(el.shadowRoot.childNodes);
      const doc = frameDoc(el);
      if (doc) return doc.body ? [doc.body] : doc.documentElement ? [doc.documentElement] : [];
      if (el.tagName === 'SLOT') {
        const assigned = el.assignedNodes({ flatten: true });
        if (assigned.length) return assigned;
      }
    }
    return slotted(node.childNodes);
  }

  function slotted(list) {
    return Array.prototype.slice.call(list);
  }

  function composedParent(node) {
    if (node.assignedSlot) return node.assignedSlot;
    const p = node.parentNode;
    if (!p) return null;
    if (p.nodeType === 11 && p.host) return p.host; // shadow root
    if (p.nodeType === 9) return p.defaultView?.frameElement ?? null; // a frame's document
    return p;
  }

  function containsComposed(el, node) {
    for (let n = node; n; n = composedParent(n)) if (n === el) return true;
    return false;
  }

  /** Every element under `root` (inclusive) in document order, through open shadow roots and same-origin frames. */
  function* allElements(root) {
    const stack = root ? [root] : []; // none: a document just committed, before its first element
    while (stack.length) {
      const n = stack.pop();
      if (n.nodeType === 1) {
        yield n;
        if (SKIP_TAGS.has(n.tagName)) continue;
      }
      const list = n.nodeType === 1 || n.nodeType === 9 || n.nodeType === 11 ? kidsForSearch(n) : [];
      for (let i = list.length - 1; i >= 0; i--) if (list[i].nodeType === 1) stack.push(list[i]);
    }
  }

  function kidsForSearch(n) {
    if (n.nodeType !== 1) return n.childNodes;
    const out = slotted(n.childNodes); // light children too (slotted content is found once, here)
    if (n.shadowRoot) out.push(...n.shadowRoot.childNodes);
    const doc = frameDoc(n);
    if (doc?.documentElement) out.push(doc.documentElement);
    return out;
  }

  function queryAll(selector, root = document) {
    let own;
    try {
      own = root.querySelectorAll(selector);
    } catch (e) {
      fail('invalid_argument', `not a valid CSS selector: ${selector} (${e.message})`);
    }
    const out = [...own];
    // Then every open shadow root and same-origin frame below, in document order.
    for (const el of allElements(root.nodeType === 9 ? root.documentElement : root)) {
      if (el.shadowRoot) out.push(...el.shadowRoot.querySelectorAll(selector));
      const doc = frameDoc(el);
      if (doc) out.push(...doc.querySelectorAll(selector));
    }
    return [...new Set(out)];
  }

  function queryFirst(selector) {
    let el;
    try {
      el = document.querySelector(selector);
    } catch (e) {
      fail('invalid_argument', `not a valid CSS selector: ${selector} (${e.message})`);
    }
    return el || queryAll(selector)[0] || null;
  }

  // ---- roles and names (a compact accessible-name computation) ------------------------------------------------

  const INPUT_ROLES = {
    button: 'button', submit: 'button', reset: 'button', image: 'button', checkbox: 'checkbox', radio: 'radio',
    range: 'slider', number: 'spinbutton', search: 'searchbox', email: 'textbox', tel: 'textbox', text: 'textbox',
    url: 'textbox', password: 'textbox', date: 'textbox', 'datetime-local': 'textbox', month: 'textbox',
    time: 'textbox', week: 'textbox', color: 'button', file: 'button',
  };
  const TAG_ROLES = {
    BUTTON: 'button', SELECT: 'combobox', OPTION: 'option', TEXTAREA: 'textbox', H1: 'heading', H2: 'heading',
    H3: 'heading', H4: 'heading', H5: 'heading', H6: 'heading', NAV: 'navigation', MAIN: 'main', ASIDE: 'complementary',
    FORM: 'form', ARTICLE: 'article', UL: 'list', OL: 'list', LI: 'listitem', TABLE: 'table', TR: 'row', TD: 'cell',
    TH: 'columnheader', DIALOG: 'dialog', P: 'paragraph', BLOCKQUOTE: 'blockquote', IFRAME: 'iframe', FRAME: 'iframe',
    HR: 'separator', PROGRESS: 'progressbar', FIELDSET: 'group', SUMMARY: 'button', DETAILS: 'group', IMG: 'img',
    CAPTION: 'caption', THEAD: 'rowgroup', TBODY: 'rowgroup', TFOOT: 'rowgroup', DL: 'list', DT: 'term',
    DD: 'definition', LABEL: 'label', LEGEND: 'legend', FIGURE: 'figure', METER: 'meter', OUTPUT: 'status',
    CODE: 'code', PRE: 'code',
  };
  const INTERACTIVE = new Set(['button', 'link', 'textbox', 'searchbox', 'checkbox', 'radio', 'combobox', 'listbox',
    'option', 'slider', 'spinbutton', 'switch', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'treeitem']);
  const KEEP_EMPTY = new Set(['img', 'iframe', 'separator', 'progressbar', 'meter', 'dialog']);
  const NAME_FROM_CONTENT = new Set(['button', 'link', 'heading', 'option', 'tab', 'menuitem', 'menuitemcheckbox',
    'menuitemradio', 'treeitem', 'cell', 'columnheader', 'rowheader', 'switch', 'checkbox', 'radio', 'term',
    'tooltip', 'label', 'legend', 'caption', 'code']);

  function roleOf(el) {
    const explicit = el.getAttribute('role');
    if (explicit) return explicit.trim().split(/\s+/)[0];
    const tag = el.tagName;
    if (tag === 'A' || tag === 'AREA') return el.hasAttribute('href') ? 'link' : '';
    if (tag === 'INPUT') return el.type === 'hidden' ? '' : INPUT_ROLES[el.type] ?? 'textbox';
    if (tag === 'SELECT') return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
    if (tag === 'IMG') return el.getAttribute('alt') === '' ? '' : 'img';
    if (tag === 'SECTION') return el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby') ? 'region' : '';
    if (tag === 'HEADER') return el.closest('article, section, main, aside, nav') ? '' : 'banner';
    if (tag === 'FOOTER') return el.closest('article, section, main, aside, nav') ? '' : 'contentinfo';
    if (el.isContentEditable && !el.parentElement?.isContentEditable) return 'textbox';
    return TAG_ROLES[tag] ?? '';
  }

  const squash = (s) => s.replace(/\s+/g, ' ').trim();
  const cap = (s, n) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

  function textOf(node, depth = 0) {
    if (node.nodeType === 3) return node.data;
    if (node.nodeType !== 1 || depth > 20) return '';
    const el = node;
    if (SKIP_TAGS.has(el.tagName) || el.getAttribute('aria-hidden') === 'true') return '';
    if (el.tagName === 'IMG') return el.getAttribute('alt') ?? '';
    if (el.tagName === 'INPUT' && ['button', 'submit', 'reset'].includes(el.type)) return el.value;
    let s = '';
    for (const k of kids(el)) s += textOf(k, depth + 1) + (k.nodeType === 1 && isBlock(k) ? ' ' : '');
    return s;
  }

  const BLOCKS = new Set(['DIV', 'P', 'LI', 'TR', 'TD', 'TH', 'BR', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'SECTION']);
  const isBlock = (el) => BLOCKS.has(el.tagName);

  function byIds(el, attr) {
    const ids = (el.getAttribute(attr) || '').split(/\s+/).filter(Boolean);
    const root = el.getRootNode();
    return ids.map((id) => root.getElementById?.(id) ?? el.ownerDocument.getElementById(id)).filter(Boolean);
  }

  function nameOf(el, role = roleOf(el)) {
    const labelled = byIds(el, 'aria-labelledby');
    if (labelled.length) return cap(squash(labelled.map((e) => textOf(e)).join(' ')), 120);
    const aria = el.getAttribute('aria-label');
    if (aria && aria.trim()) return cap(squash(aria), 120);
    const tag = el.tagName;
    if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') {
      if (tag === 'INPUT' && ['button', 'submit', 'reset'].includes(el.type)) {
        return cap(squash(el.value || (el.type === 'submit' ? 'Submit' : el.type === 'reset' ? 'Reset' : '')), 120);
      }
      if (tag === 'INPUT' && el.type === 'image') return cap(squash(el.alt || el.title || 'Submit'), 120);
      const labels = el.labels ? [...el.labels] : [];
      if (labels.length) return cap(squash(labels.map((l) => textOf(l)).join(' ')), 120);
      return cap(squash(el.getAttribute('placeholder') || el.title || ''), 120);
    }
    if (tag === 'IMG' || tag === 'AREA') return cap(squash(el.getAttribute('alt') || el.title || ''), 120);
    if (tag === 'IFRAME' || tag === 'FRAME') return cap(squash(el.title || el.name || ''), 120);
    if (tag === 'FIELDSET') {
      const legend = el.querySelector(':scope > legend');
      if (legend) return cap(squash(textOf(legend)), 120);
    }
    if (tag === 'TABLE' && el.caption) return cap(squash(textOf(el.caption)), 120);
    if (NAME_FROM_CONTENT.has(role)) {
      const t = squash(textOf(el));
      if (t) return cap(t, 120);
    }
    return cap(squash(el.title || ''), 120);
  }

  // ---- visibility ------------------------------------------------------------------------------------------------

  function isVisible(el) {
    if (!el.isConnected) return false;
    if (el.checkVisibility && !el.checkVisibility({ visibilityProperty: true })) return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  }

  function hiddenReason(el) {
    if (!el.isConnected) return 'detached';
    const cs = getComputedStyle(el);
    if (cs.display === 'none') return 'display:none';
    if (cs.visibility === 'hidden' || cs.visibility === 'collapse') return `visibility:${cs.visibility}`;
    if (el.checkVisibility && !el.checkVisibility()) return 'an ancestor is not rendered (display:none)';
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return 'zero size';
    if (Number(cs.opacity) === 0) return 'opacity:0';
    return '';
  }

  // ---- refs --------------------------------------------------------------------------------------------------------

  function refFor(el, role = roleOf(el), name = nameOf(el, role)) {
    let r = refOf.get(el);
    if (!r) {
      r = `e${next++}`;
      refOf.set(el, r);
    }
    refs.set(r, { el: new WeakRef(el), role, name, tag: el.tagName });
    return r;
  }

  function brief(el, role = roleOf(el), name = nameOf(el, role)) {
    return { ref: refFor(el, role, name), tag: el.tagName.toLowerCase(), role: role || 'generic', name };
  }

  function prune() {
    if (refs.size < 4000) return;
    for (const [r, entry] of refs) if (!entry.el.deref()?.isConnected) refs.delete(r);
  }

  /** A ref's element. When a re-render replaced the node, the one element with the same tag, role and name is taken
   * instead (reResolved); none or several: element_not_found, never a guess. */
  function resolveRef(ref) {
    const m = /^e(\d+)$/.exec(ref);
    if (!m) fail('invalid_argument', `not a ref: ${ref} (refs look like e12; take them from snapshot)`);
    const entry = refs.get(ref);
    if (!entry) {
      if (Number(m[1]) < start) {
        fail('element_not_found', `ref ${ref} is from an earlier page of this tab (it has navigated since); take a new snapshot`);
      }
      fail('element_not_found', `ref ${ref} is unknown in this page; take a new snapshot`);
    }
    const el = entry.el.deref();
    if (el?.isConnected) return { el, reResolved: false };
    const found = [];
    for (const cand of allElements(document.documentElement)) {
      if (cand.tagName !== entry.tag || roleOf(cand) !== entry.role || nameOf(cand) !== entry.name) continue;
      if (!isVisible(cand)) continue;
      found.push(cand);
      if (found.length > 1) break;
    }
    if (found.length === 1) {
      refs.set(ref, { ...entry, el: new WeakRef(found[0]) });
      if (!refOf.has(found[0])) refOf.set(found[0], ref);
      return { el: found[0], reResolved: true };
    }
    const what = `${entry.role || entry.tag.toLowerCase()}${entry.name ? ` "${entry.name}"` : ''}`;
    fail('element_not_found', `ref ${ref} (${what}) is no longer in the page` +
      (found.length > 1 ? ', and several elements now look like it' : '') + '; take a new snapshot');
  }

  function resolve(target, { retryMissing = true } = {}) {
    if (target.ref !== undefined && target.ref !== null) return resolveRef(target.ref);
    const el = queryFirst(target.selector);
    if (!el) fail('element_not_found', `no element matches ${target.selector}`, retryMissing);
    return { el, reResolved: false };
  }

  function resolveAll(target, limit) {
    if (target.ref !== undefined && target.ref !== null) return [resolveRef(target.ref).el];
    return queryAll(target.selector).slice(0, limit);
  }

