// ai-bridge browser tools: the page side. Evaluated once per document in an isolated world of the main frame
// (actors/browser_tools/page.py): the page's own scripts never see it, and cannot tamper with what it reads.
//
// It walks the composed tree — open shadow roots and same-origin iframes whose document the domain policy allows
// (`init.hosts`, the server's patterns) included — to build the snapshot, keeps the
// ref registry (a ref names one element of this document; refs count on from `refStart`, which the server raises
// across documents so that a ref of an earlier page never names an element of a later one), resolves targets, and
// reads the page. Every op returns {ok, url, nextRef, ...} or {ok: false, error: {code, message, retry}}; the server
// checks `url` against the domain policy before it uses anything read here.
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

  // ---- geometry and hit testing ---------------------------------------------------------------------------------

  /** The element's box in the top viewport (CSS px): its own rect plus the offsets of the frames it lives in. */
  function viewportBox(el) {
    const rects = el.getClientRects();
    let r = el.getBoundingClientRect();
    if (rects.length > 1 && getComputedStyle(el).display.startsWith('inline')) r = rects[0];
    let x = r.left;
    let y = r.top;
    for (let win = el.ownerDocument.defaultView; win && win !== window;) {
      const fe = win.frameElement;
      if (!fe) break;
      const fr = fe.getBoundingClientRect();
      const cs = getComputedStyle(fe);
      x += fr.left + fe.clientLeft + parseFloat(cs.paddingLeft);
      y += fr.top + fe.clientTop + parseFloat(cs.paddingTop);
      win = fe.ownerDocument.defaultView;
    }
    return { x, y, width: r.width, height: r.height };
  }

  function deepHit(x, y) {
    let doc = document;
    let ox = 0;
    let oy = 0;
    for (let guard = 0; guard < 20; guard++) {
      let hit = doc.elementFromPoint(x - ox, y - oy);
      while (hit?.shadowRoot) {
        const inner = hit.shadowRoot.elementFromPoint(x - ox, y - oy);
        if (!inner || inner === hit) break;
        hit = inner;
      }
      const inner = hit && frameDoc(hit);
      if (!inner) return hit;
      const fr = hit.getBoundingClientRect();
      const cs = getComputedStyle(hit);
      ox += fr.left + hit.clientLeft + parseFloat(cs.paddingLeft);
      oy += fr.top + hit.clientTop + parseFloat(cs.paddingTop);
      doc = inner;
    }
    return null;
  }

  function describe(el) {
    if (!el) return 'nothing';
    const id = el.id ? `#${el.id}` : '';
    const cls = typeof el.className === 'string' && el.className.trim() ? `.${el.className.trim().split(/\s+/).join('.')}` : '';
    return `<${el.tagName.toLowerCase()}${id}${cls}>`;
  }

  function inViewport(box) {
    return box.x + box.width > 0 && box.y + box.height > 0 && box.x < innerWidth && box.y < innerHeight;
  }

  function isDisabled(el) {
    if (el.disabled === true) return true;
    if (el.closest?.('[aria-disabled="true"]')) return true;
    return Boolean(el.closest?.('fieldset[disabled]') && el.matches?.('input, select, textarea, button'));
  }

  function scrollIntoViewIfNeeded(el) {
    const box = viewportBox(el);
    const cx = box.x + box.width / 2;
    const cy = box.y + box.height / 2;
    if (cx < 0 || cy < 0 || cx > innerWidth || cy > innerHeight) {
      el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
      return viewportBox(el);
    }
    return box;
  }

  /** Make `target` ready for a pointer action: resolved, visible, enabled (unless hover), scrolled into view, and
   * the topmost element at its centre. Returns the point to act at. Transient failures are retry: true (the server
   * polls until its timeout); a ref that is gone is not. */
  function pointAt(target, { needEnabled = true } = {}) {
    const { el: found, reResolved } = resolve(target);
    let el = found;
    if (el.tagName === 'OPTION') el = el.closest('select') ?? el;
    if (!isVisible(el)) fail('element_not_interactable', `${describe(el)} is not visible (${hiddenReason(el) || 'hidden'})`, true);
    if (needEnabled && isDisabled(el)) fail('element_not_interactable', `${describe(el)} is disabled`, true);
    const box = scrollIntoViewIfNeeded(el);
    const x = box.x + box.width / 2;
    const y = box.y + box.height / 2;
    const hit = deepHit(x, y);
    if (hit && sealed(hit)) {
      fail('policy_denied', `${describe(el)} is, at (${Math.round(x)}, ${Math.round(y)}), ${describe(hit)}: ${SEALED}; input there is refused`);
    }
    if (hit && !onTarget(el, hit)) {
      fail('element_not_interactable', `${describe(el)} is covered by ${describe(hit)} at (${Math.round(x)}, ${Math.round(y)})`, true);
    }
    return { x, y, element: brief(el), reResolved, aim: aim(el) };
  }

  /** Input at `hit` reaches `el`: it is the element, inside it, or its label. (Not an element around it: that is
   * what a click meets once the element moved away.) */
  function onTarget(el, hit) {
    return containsComposed(el, hit) || (hit.tagName === 'LABEL' && hit.control === el);
  }

  // The elements pointer actions were aimed at, by the id `point` returned: right before the input, the point guard
  // checks the point is still on it. A page still laying out moves things between our look and the click, which
  // would then land beside the element, on whatever is there now.
  const aimed = new Map();
  let aimSeq = 0;
  function aim(el) {
    aimed.set(++aimSeq, new WeakRef(el));
    if (aimed.size > 16) aimed.delete(aimed.keys().next().value);
    return aimSeq;
  }

  /** Starts the point guard's refusal when the aimed element moved: the server then aims again (never an error of
   * the policy's). */
  const MOVED = 'moved:';

  // Pointer input a guard armed for (click, hover): a trusted event of these kinds that reaches another element is
  // stopped before the page's own listeners see it, and the server, asking afterwards (`aimed`), aims again. The
  // guard checks the point right before the input, but a page whose layout or scroll is still settling can move
  // the element between that check and the event.
  const AIM_EVENTS = ['pointermove', 'mousemove', 'pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click',
    'auxclick', 'dblclick', 'contextmenu'];
  const ARMED_MS = 10_000;
  let armed = null;
  function intercept(e) {
    if (!armed || !e.isTrusted) return;
    if (performance.now() > armed.until) {
      armed = null;
      return;
    }
    const hit = e.composedPath()[0];
    if (hit instanceof Element && onTarget(armed.el, hit)) return;
    armed.missed ??= `${MOVED} the ${e.type} reached ${describe(hit instanceof Element ? hit : null)}, not ${describe(armed.el)}`;
    e.preventDefault();
    e.stopImmediatePropagation();
  }
  for (const type of AIM_EVENTS) addEventListener(type, intercept, { capture: true });

  /** After armed input: null, or how it missed (its events were stopped). Disarms. */
  function aimedVerdict(aimId) {
    const verdict = armed && armed.aim === aimId ? armed.missed : null;
    armed = null;
    return { missed: verdict };
  }

  // ---- input guards: input never lands in a sealed frame, and a new-tab click never opens a denied URL -----------

  const SEALED = 'a frame the browser tools may not read (cross-origin, or outside the allowed domains)';

  /** What a click at an element would open, when a modifier or the middle button sends it to a new tab or window:
   * a link's URL, or a submit button's form action. */
  function opensAt(hit) {
    for (let n = hit; n; n = composedParent(n)) {
      if (n.nodeType !== 1) continue;
      if ((n.tagName === 'A' || n.tagName === 'AREA') && n.hasAttribute('href')) return n.href;
      if ((n.tagName === 'BUTTON' || n.tagName === 'INPUT') && n.form && (n.type === 'submit' || n.type === 'image')) {
        return n.formAction || n.form.action;
      }
    }
    return null;
  }

  function urlOk(url) {
    return url === 'about:blank' || httpAllowed(url) === true;
  }

  /** true, or why input at (x, y) is refused. `frame`: the key of the open frame the input is meant to enter here
   * (the guard of that frame's own world checks where it lands inside). */
  function pointGuard(x, y, newTab, frame, aimId, arm) {
    const hit = deepHit(x, y);
    if (hit && frame !== undefined && frame !== null) {
      return openKey(hit) === frame ? true
        : `(${Math.round(x)}, ${Math.round(y)}) is on ${describe(hit)}, not on the frame the element is in: input refused`;
    }
    if (hit && sealed(hit)) return `(${Math.round(x)}, ${Math.round(y)}) is inside ${describe(hit)}, ${SEALED}: input there is refused`;
    if (Number.isInteger(aimId)) {
      const el = aimed.get(aimId)?.deref();
      if (!el || !el.isConnected || !hit || !onTarget(el, hit)) {
        return `${MOVED} ${describe(el)} is no longer at (${Math.round(x)}, ${Math.round(y)}): ${describe(hit)} is`;
      }
      if (arm === true) armed = { aim: aimId, el, missed: null, until: performance.now() + ARMED_MS };
    }
    if (newTab) {
      const url = hit && opensAt(hit);
      if (url !== null && url !== undefined && !url.startsWith('javascript:') && !urlOk(url)) {
        return `this click would open ${url.slice(0, 300)} in a new tab, outside the allowed domains: ${url.slice(0, 300)}`;
      }
    }
    return true;
  }

  /** true, or why key input now is refused (the keyboard focus is inside a sealed frame). */
  const SEES_FOCUS = new Set(['INPUT', 'TEXTAREA', 'SELECT', 'BUTTON', 'A', 'AREA', 'BODY', 'HTML', 'SUMMARY']);

  /** true; 'unseen' when the focus may be inside a closed shadow root (the extension then looks there for
   * frames); or why key input now is refused (the keyboard focus is inside a sealed frame). */
  function focusGuard(frame) {
    const a = deepActive();
    if (frame !== undefined && frame !== null) {
      return openKey(a) === frame ? true : `the keyboard focus left the frame (it is on ${describe(a)}): key input refused`;
    }
    if (a && sealed(a)) return `the keyboard focus is inside ${describe(a)}, ${SEALED}: key input is refused`;
    // An element that is the active element without being where typing goes may be a closed shadow root's host.
    if (a && !a.shadowRoot && !SEES_FOCUS.has(a.tagName) && !a.isContentEditable) return 'unseen';
    return true;
  }

  // ---- screenshots: sealed frames are hidden while the picture is taken --------------------------------------------

  let mask = null; // {els: [[el, visibility, priority, transition, priority]], set: Set of els, observer}

  function unmaskFrames() {
    if (!mask) return { restored: 0 };
    mask.observer.disconnect();
    for (const [el, vis, visPrio, tr, trPrio] of mask.els) {
      el.style.setProperty('visibility', vis, visPrio);
      el.style.setProperty('transition', tr, trPrio);
      if (!el.getAttribute('style')) el.removeAttribute('style');
    }
    const restored = mask.els.length;
    mask = null;
    return { restored };
  }

  /** Hide every sealed frame (found through open shadow roots and readable frames) until `unmaskFrames`; inline
   * `visibility: hidden !important` wins over every author style, and `transition: none` keeps it from easing in.
   * A MutationObserver notices the page touching a masked frame; `maskHeld` then fails the screenshot. */
  function maskFrames() {
    unmaskFrames();
    const els = [];
    let frames = 0;
    for (const el of allElements(document.documentElement)) {
      if (!isFrame(el)) continue;
      frames++;
      if (!sealed(el)) continue;
      const st = el.style;
      els.push([el, st.getPropertyValue('visibility'), st.getPropertyPriority('visibility'),
        st.getPropertyValue('transition'), st.getPropertyPriority('transition')]);
      st.setProperty('transition', 'none', 'important');
      st.setProperty('visibility', 'hidden', 'important');
    }
    const observer = new MutationObserver(() => {});
    const watch = { subtree: true, childList: true, attributes: true };
    observer.observe(document, watch);
    for (const el of allElements(document.documentElement)) {
      if (el.shadowRoot) observer.observe(el.shadowRoot, watch);
      const doc = frameDoc(el);
      if (doc) observer.observe(doc, watch);
    }
    mask = { els, set: new Set(els.map((e) => e[0])), observer };
    return { masked: els.length, frames };
  }

  const FRAME_SELECTOR = 'iframe,frame,object,embed,fencedframe';
  const holdsFrame = (n) => n.nodeType === 1 && (isFrame(n) || Boolean(n.querySelector?.(FRAME_SELECTOR)));

  /** true when the mask held since `maskFrames`, else why not: no masked frame touched, moved or shown, and no
   * sealed frame added or left unmasked. */
  function maskHeld() {
    if (!mask) return 'the frames were not masked';
    for (const r of mask.observer.takeRecords()) {
      if (r.type === 'attributes' && mask.set.has(r.target)) return 'the page restyled a masked frame: screenshot refused';
      if (r.type === 'childList' && ([...r.addedNodes].some(holdsFrame) || [...r.removedNodes].some(holdsFrame))) {
        return 'the page added or moved a frame while the screenshot was taken: screenshot refused';
      }
    }
    for (const [el] of mask.els) {
      if (!el.isConnected || getComputedStyle(el).visibility !== 'hidden') return 'a masked frame was shown again';
    }
    for (const el of allElements(document.documentElement)) {
      if (isFrame(el) && sealed(el) && !mask.set.has(el) && isVisible(el)) return 'a sealed frame was not masked';
    }
    return true;
  }

  // ---- typing ------------------------------------------------------------------------------------------------------

  const TEXT_INPUTS = new Set(['text', 'search', 'url', 'tel', 'password', 'email', 'number', '', 'date',
    'datetime-local', 'month', 'time', 'week']);

  function editable(el) {
    if (el.tagName === 'LABEL' && el.control) el = el.control;
    if (el.tagName === 'TEXTAREA') return el;
    if (el.tagName === 'INPUT' && TEXT_INPUTS.has(el.type)) return el;
    if (el.isContentEditable) return el;
    return null;
  }

  function deepActive() {
    let a = document.activeElement;
    for (let guard = 0; a && guard < 20; guard++) {
      const inner = a.shadowRoot?.activeElement ?? (frameDoc(a)?.activeElement || null);
      if (!inner || inner === a) break;
      a = inner;
    }
    return a;
  }

  function valueOf(el) {
    if (!el) return null;
    if (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT') {
      return el.type === 'password' ? '•'.repeat(el.value.length) : el.value;
    }
    if (el.isContentEditable) return el.innerText;
    return null;
  }

  /** Focus the field of `target` and select what `text` replaces (all of it with clear, else the caret at its end). */
  function focusField(target, clear) {
    const { el: found, reResolved } = resolve(target);
    const el = editable(found);
    if (!el) fail('element_not_interactable', `${describe(found)} is not a text field (input, textarea or contenteditable)`);
    if (!isVisible(el)) fail('element_not_interactable', `${describe(el)} is not visible (${hiddenReason(el) || 'hidden'})`, true);
    if (isDisabled(el) || el.readOnly) fail('element_not_interactable', `${describe(el)} is ${el.readOnly ? 'read-only' : 'disabled'}`, true);
    scrollIntoViewIfNeeded(el);
    el.focus({ preventScroll: true });
    if (el.isContentEditable) {
      const sel = el.ownerDocument.getSelection();
      const range = el.ownerDocument.createRange();
      range.selectNodeContents(el);
      if (!clear) range.collapse(false);
      sel.removeAllRanges();
      sel.addRange(range);
    } else if (clear) {
      el.select();
    } else {
      try {
        el.setSelectionRange(el.value.length, el.value.length);
      } catch {
        // email / number fields have no selection API; the caret stays where focus put it
      }
    }
    return { element: brief(el), reResolved, empty: !valueOf(el) };
  }

  // ---- forms -------------------------------------------------------------------------------------------------------

  const nativeSetter = (el) => Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), 'value')?.set;

  function fire(el, type) {
    el.dispatchEvent(new Event(type, { bubbles: true, composed: true }));
  }

  function chooseOptions(select, values) {
    if (select.tagName !== 'SELECT') fail('element_not_interactable', `${describe(select)} is not a <select>`);
    if (isDisabled(select)) fail('element_not_interactable', `${describe(select)} is disabled`, true);
    const options = [...select.options];
    const picked = values.map((v) => {
      const o = options.find((opt) => opt.value === v) ?? options.find((opt) => squash(opt.label || opt.text) === squash(v));
      if (!o) {
        fail('element_not_found', `no option ${JSON.stringify(v)} in ${describe(select)}; options: ` +
          options.slice(0, 30).map((opt) => JSON.stringify(opt.label || opt.value)).join(', '));
      }
      if (o.disabled) fail('element_not_interactable', `option ${JSON.stringify(v)} is disabled`);
      return o;
    });
    if (picked.length > 1 && !select.multiple) fail('invalid_argument', `${describe(select)} takes one value, not ${picked.length}`);
    for (const o of options) o.selected = picked.includes(o);
    fire(select, 'input');
    fire(select, 'change');
    return picked.map((o) => o.value);
  }

  function setValue(el, value) {
    if (el.tagName === 'SELECT') return chooseOptions(el, [String(value)]).join(',');
    if (el.tagName === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) {
      if (typeof value !== 'boolean') fail('invalid_argument', `${describe(el)} is a ${el.type}: give true or false`);
      if (el.type === 'radio' && !value && el.checked) fail('element_not_interactable', 'a radio button is unchecked by checking another one');
      if (el.checked !== value) el.click(); // fires input/change as a user's click would
      return el.checked;
    }
    if (el.tagName === 'INPUT' && el.type === 'file') fail('element_not_interactable', 'file inputs cannot be filled');
    const field = editable(el);
    if (!field) fail('element_not_interactable', `${describe(el)} is not a form field`);
    if (isDisabled(field) || field.readOnly) fail('element_not_interactable', `${describe(field)} is not editable`);
    const text = String(value);
    if (field.isContentEditable) {
      field.focus({ preventScroll: true });
      field.textContent = text;
    } else {
      // The prototype's setter (not an instance override a framework put there), then the events a user's typing
      // would cause: React, Vue and plain listeners all see the change.
      const set = nativeSetter(field);
      if (set) set.call(field, text);
      else field.value = text;
    }
    field.dispatchEvent(new InputEvent('input', { bubbles: true, composed: true, inputType: 'insertText', data: text }));
    fire(field, 'change');
    return valueOf(field);
  }

  function fillForm(fields) {
    return fields.map((f) => {
      try {
        const { el } = resolve(f.target);
        const value = setValue(el, f.value);
        return { ok: true, element: brief(el), value, error: null };
      } catch (e) {
        if (!(e instanceof OpError)) throw e;
        return { ok: false, element: null, value: null, error: `[${e.code}] ${e.message}` };
      }
    });
  }

  // ---- snapshot ----------------------------------------------------------------------------------------------------

  function states(el, role) {
    const out = [];
    if (role === 'heading') {
      const level = el.getAttribute('aria-level') || (/^H(\d)$/.exec(el.tagName) || [])[1];
      if (level) out.push(`level=${level}`);
    }
    if (el.tagName === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) {
      if (el.indeterminate) out.push('checked=mixed');
      else if (el.checked) out.push('checked');
    } else {
      const checked = el.getAttribute('aria-checked');
      if (checked === 'true') out.push('checked');
      else if (checked === 'mixed') out.push('checked=mixed');
    }
    if (isDisabled(el)) out.push('disabled');
    const expanded = el.getAttribute('aria-expanded') ?? (el.tagName === 'DETAILS' ? String(el.open) : null);
    if (expanded === 'true') out.push('expanded');
    else if (expanded === 'false') out.push('collapsed');
    if (el.getAttribute('aria-selected') === 'true' || (el.tagName === 'OPTION' && el.selected)) out.push('selected');
    if (el.required) out.push('required');
    if (el.tagName === 'A' && el.hasAttribute('href')) out.push(`url=${JSON.stringify(cap(el.getAttribute('href'), 100))}`);
    if (['textbox', 'searchbox', 'spinbutton', 'combobox', 'slider', 'listbox'].includes(role)) {
      const v = el.tagName === 'SELECT' ? [...el.selectedOptions].map((o) => squash(o.text)).join(', ') : valueOf(el);
      if (v) out.push(`value=${JSON.stringify(cap(v, 80))}`);
    }
    return out;
  }

  /** The light tree: semantic nodes {el, role, name, kids}; generic wrappers are spliced into their parent and text
   * runs merged. With a role filter, nodes that do not match are spliced too (their text dropped). */
  function build(node, opts, depth) {
    if (node.nodeType === 3) {
      if (opts.filter) return [];
      const t = node.data;
      return t.trim() ? [t] : [];
    }
    if (node.nodeType !== 1) return [];
    const el = node;
    if (SKIP_TAGS.has(el.tagName) || el.getAttribute('aria-hidden') === 'true' || el.hidden) return [];
    if (el.tagName === 'INPUT' && el.type === 'hidden') return [];
    const visible = el.checkVisibility ? el.checkVisibility({ visibilityProperty: true }) : true;
    if (!visible) {
      // display:contents has no box but its children do
      if (getComputedStyle(el).display !== 'contents') return [];
    }
    // What names another node is said there already: a label of a control, a fieldset's legend, a table's caption.
    if (el.tagName === 'LEGEND' && el.parentElement?.tagName === 'FIELDSET') return [];
    if (el.tagName === 'CAPTION') return [];
    let role = roleOf(el);
    if (role === 'none' || role === 'presentation' || role === 'generic' || role === 'label') role = '';
    const labelOfControl = el.tagName === 'LABEL' && el.control;
    const keep = role && (!opts.filter || opts.filter(role));
    const items = [];
    const deeper = keep ? depth + 1 : depth;
    // A text field's content is its value (shown as a state), not child nodes.
    const leaf = role === 'textbox' || role === 'searchbox' || role === 'spinbutton' || role === 'slider';
    if (!leaf && !(keep && opts.maxDepth !== null && deeper > opts.maxDepth)) {
      for (const k of kids(el)) {
        if (labelOfControl && k.nodeType === 3) continue;
        for (const item of build(k, opts, deeper)) {
          if (typeof item === 'string' && typeof items[items.length - 1] === 'string') {
            items[items.length - 1] += item;
          } else {
            items.push(item);
          }
        }
      }
    }
    if (el.tagName === 'BR' && !opts.filter) return [' '];
    if (!keep) {
      if (!role && !opts.filter && isBlock(el) && items.length) return [' ', ...items, ' '];
      return items;
    }
    const frameKey = openKey(el);
    return [{ el, role, kids: items, crossOrigin: sealed(el) && frameKey === undefined, frameKey }];
  }

  function render(items, opts, depth, out) {
    for (const item of items) {
      if (out.truncated) return;
      if (typeof item === 'string') {
        const t = squash(item);
        if (t) emit(out, opts, depth, `text: ${JSON.stringify(cap(t, 300))}`);
        continue;
      }
      const { el, role } = item;
      const name = nameOf(el, role);
      const marks = states(el, role);
      // An empty structural node says nothing: leave it out (its children, if any, move up).
      if (!name && !marks.length && !INTERACTIVE.has(role) && !KEEP_EMPTY.has(role) &&
          item.kids.every((c) => typeof c === 'string' && !c.trim())) continue;
      const ref = refFor(el, role, name);
      out.refs++;
      let line = role + (name ? ` ${JSON.stringify(name)}` : '');
      for (const s of marks) line += ` [${s}]`;
      if (item.crossOrigin) line += ' [cross-origin or not allowed: not inspected]';
      line += ` [ref=${ref}]`;
      let children = item.kids;
      // One line for a node whose content is only text: its name says it already, or it goes after a colon.
      if (children.every((c) => typeof c === 'string')) {
        const t = squash(children.join(''));
        if (t && t !== name && !NAME_FROM_CONTENT.has(role)) line += `: ${JSON.stringify(cap(t, 300))}`;
        children = [];
      } else if (NAME_FROM_CONTENT.has(role)) {
        children = children.filter((c) => typeof c !== 'string');
      }
      if (!emit(out, opts, depth, line)) return;
      // An open frame's content is the server's to fill in (read in the frame's own world): a marker line.
      if (item.frameKey !== undefined) {
        out.frames.push(item.frameKey);
        emit(out, opts, depth + 1, `\u0000F${item.frameKey}`);
      }
      render(children, opts, depth + 1, out);
    }
  }

  function emit(out, opts, depth, text) {
    const line = `${'  '.repeat(depth)}- ${text}`;
    if (out.chars + line.length + 1 > opts.maxChars) {
      out.truncated = true;
      return false;
    }
    out.lines.push(line);
    out.chars += line.length + 1;
    out.nodes++;
    return true;
  }

  function snapshot(args) {
    prune();
    const roles = args.roles && args.roles.length ? new Set(args.roles) : null;
    let filter = null;
    if (roles) filter = (role) => roles.has(role);
    else if (args.interactiveOnly) filter = (role) => INTERACTIVE.has(role);
    const opts = { filter, maxDepth: args.maxDepth ?? null, maxChars: args.maxChars };
    const root = args.root ? resolve(args.root, { retryMissing: false }).el : document.body ?? document.documentElement;
    const out = { lines: [], chars: 0, nodes: 0, refs: 0, truncated: false, frames: [] };
    render(build(root, opts, 0), opts, 0, out);
    const full = out.lines.join('\n');
    const text = wholeChars(fitBytes(full));
    return { text, nodes: out.nodes, refs: out.refs, chars: text.length < full.length ? text.length : out.chars,
      truncated: out.truncated || text.length < full.length, frames: out.frames };
  }

  // ---- reading -----------------------------------------------------------------------------------------------------

  // A reply travels in one extension frame (4 MiB): text is also cut to this many bytes of JSON, whatever max_chars
  // says (2,000,000 CJK characters are 6 MB; a control character is 6 bytes escaped).
  const REPLY_TEXT_BYTES = 3 * 1024 * 1024;
  const encoder = new TextEncoder();

  function fitBytes(t) {
    if (t.length * 6 <= REPLY_TEXT_BYTES) return t;
    for (let size = encoder.encode(JSON.stringify(t)).length; size > REPLY_TEXT_BYTES;) {
      t = t.slice(0, Math.floor((t.length * REPLY_TEXT_BYTES) / size * 0.98));
      size = encoder.encode(JSON.stringify(t)).length;
    }
    return t;
  }

  /** Never end on half of a surrogate pair (it would not survive as UTF-8). */
  function wholeChars(t) {
    const last = t.charCodeAt(t.length - 1);
    return last >= 0xd800 && last <= 0xdbff ? t.slice(0, -1) : t;
  }

  function clip(text, max) {
    const t = wholeChars(fitBytes(text.length > max ? text.slice(0, max) : text));
    return { text: t, chars: text.length, truncated: t.length < text.length };
  }

  /** Rendered text, like innerText, but through open shadow roots and same-origin frames (innerText enters
   * neither). Subtrees without either are innerText's, so the common case costs what innerText costs. */
  function visibleText(el) {
    if (!el) return ''; // a document just committed has no element yet (a wait for text waits on)
    let special = false;
    for (const e of allElements(el)) {
      if (e.shadowRoot || frameDoc(e) || openKey(e) !== undefined) {
        special = true;
        break;
      }
    }
    // NUL never comes from the page here: it marks where an open frame's text goes.
    if (!special) return (el.innerText ?? el.textContent ?? '').replace(/\u0000/g, '');
    let out = '';
    const walk = (node) => {
      if (node.nodeType === 3) {
        out += node.data.replace(/\s+/g, ' ').replace(/\u0000/g, '');
        return;
      }
      if (node.nodeType !== 1 || SKIP_TAGS.has(node.tagName)) return;
      const doc = frameDoc(node);
      if (doc) {
        if (doc.body && isVisible(node)) out += `\n\n[frame${node.title ? ` "${node.title}"` : ''}]\n${visibleText(doc.body)}\n`;
        return;
      }
      const key = openKey(node);
      if (key !== undefined) {
        // The server puts the frame's own text in place of the marker.
        if (isVisible(node)) out += `\n\n[frame${node.title ? ` "${node.title}"` : ''}]\n\u0000F${key}\u0000\n`;
        return;
      }
      const cs = getComputedStyle(node);
      if (cs.display === 'none' || cs.visibility === 'hidden') return;
      const block = !cs.display.startsWith('inline') && cs.display !== 'contents';
      if (block) out += '\n';
      if (!node.shadowRoot && node.tagName !== 'SLOT' && !hasSpecial(node)) out += (node.innerText ?? '').replace(/\u0000/g, '');
      else for (const k of kids(node)) walk(k);
      if (block) out += '\n';
    };
    const hasSpecial = (node) => {
      for (const e of allElements(node)) if (e.shadowRoot || frameDoc(e) || openKey(e) !== undefined) return true;
      return false;
    };
    walk(el);
    return out.replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim();
  }

  function escapeAttr(v) {
    return v.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  }

  function openTag(el) {
    let s = `<${el.localName}`;
    for (const a of el.attributes) s += ` ${a.name}="${escapeAttr(a.value)}"`;
    return `${s}>`;
  }

  function html(el) {
    const roots = [];
    for (const e of allElements(el)) if (e.shadowRoot) roots.push(e.shadowRoot);
    if (!roots.length || !el.getHTML) return el.outerHTML;
    // Open shadow roots as declarative shadow DOM (<template shadowrootmode="open">).
    return `${openTag(el)}${el.getHTML({ shadowRoots: roots })}</${el.localName}>`;
  }

  const MD_SKIP = new Set(['NAV', 'FOOTER', 'ASIDE', 'FORM', 'BUTTON', 'INPUT', 'SELECT', 'TEXTAREA', 'SVG', 'CANVAS',
    'VIDEO', 'AUDIO', 'IFRAME', 'OBJECT', 'EMBED']);

  function markdown(root) {
    if (!root) return '';
    const out = [];
    const inline = (node) => {
      if (node.nodeType === 3) return node.data.replace(/\s+/g, ' ');
      if (node.nodeType !== 1) return '';
      const el = node;
      if (SKIP_TAGS.has(el.tagName) || MD_SKIP.has(el.tagName) || el.getAttribute('aria-hidden') === 'true') return '';
      if (el.checkVisibility && !el.checkVisibility({ visibilityProperty: true }) && getComputedStyle(el).display !== 'contents') return '';
      const inner = () => kids(el).map(inline).join('');
      switch (el.tagName) {
        case 'BR': return '\n';
        case 'STRONG': case 'B': { const t = inner().trim(); return t ? `**${t}**` : ''; }
        case 'EM': case 'I': { const t = inner().trim(); return t ? `_${t}_` : ''; }
        case 'CODE': return `\`${el.textContent}\``;
        case 'A': {
          const t = inner().trim();
          return el.hasAttribute('href') && t ? `[${t}](${el.href})` : t;
        }
        case 'IMG': return el.alt ? `![${el.alt}](${el.src})` : '';
        default: return inner();
      }
    };
    const block = (node, prefix = '') => {
      if (node.nodeType === 3) {
        const t = node.data.replace(/\s+/g, ' ');
        if (t.trim()) out.push({ inline: t, prefix });
        return;
      }
      if (node.nodeType !== 1) return;
      const el = node;
      if (SKIP_TAGS.has(el.tagName) || MD_SKIP.has(el.tagName) || el.getAttribute('aria-hidden') === 'true') return;
      if (el.checkVisibility && !el.checkVisibility({ visibilityProperty: true }) && getComputedStyle(el).display !== 'contents') return;
      const tag = el.tagName;
      const para = (text) => {
        const t = squash(text.replace(/\n/g, '\u0000')).replace(/\u0000 ?/g, '  \n');
        if (t) out.push({ text: prefix + t });
      };
      if (/^H[1-6]$/.test(tag)) return para(`${'#'.repeat(Number(tag[1]))} ${inline(el).trim()}`);
      if (tag === 'P' || tag === 'DT' || tag === 'DD' || tag === 'FIGCAPTION' || tag === 'CAPTION') return para(inline(el));
      if (tag === 'PRE') return out.push({ text: `${prefix}\`\`\`\n${el.innerText.replace(/\n$/, '')}\n${prefix}\`\`\`` });
      if (tag === 'HR') return out.push({ text: `${prefix}---` });
      if (tag === 'BLOCKQUOTE') return kids(el).forEach((k) => block(k, `${prefix}> `));
      if (tag === 'UL' || tag === 'OL') {
        let i = 1;
        for (const li of el.children) {
          if (li.tagName !== 'LI') continue;
          const mark = tag === 'OL' ? `${i++}. ` : '- ';
          const nested = [...li.children].filter((c) => c.tagName === 'UL' || c.tagName === 'OL');
          const text = [...li.childNodes].filter((c) => !nested.includes(c)).map(inline).join('');
          out.push({ text: `${prefix}${mark}${squash(text)}`, tight: true });
          for (const n of nested) block(n, `${prefix}   `);
        }
        return;
      }
      if (tag === 'TABLE') {
        const rows = [...el.rows].map((r) => [...r.cells].map((c) => squash(inline(c)).replace(/\|/g, '\\|')));
        if (!rows.length) return;
        const width = Math.max(...rows.map((r) => r.length));
        const line = (r) => `${prefix}| ${Array.from({ length: width }, (_, i) => r[i] ?? '').join(' | ')} |`;
        out.push({ text: [line(rows[0]), `${prefix}|${' --- |'.repeat(width)}`, ...rows.slice(1).map(line)].join('\n') });
        return;
      }
      // Other elements: inline runs become paragraphs, blocks recurse.
      let run = '';
      const flush = () => {
        if (run.trim()) para(run);
        run = '';
      };
      for (const k of kids(el)) {
        if (k.nodeType === 1 && !isInline(k)) {
          flush();
          block(k, prefix);
        } else {
          run += inline(k);
        }
      }
      flush();
    };
    block(root);
    let md = '';
    let prevTight = false;
    for (const o of out) {
      const text = o.text ?? squash(o.inline);
      if (!text) continue;
      md += md ? (o.tight && prevTight ? '\n' : '\n\n') : '';
      md += text;
      prevTight = Boolean(o.tight);
    }
    return md;
  }

  const INLINE = new Set(['A', 'ABBR', 'B', 'BDI', 'BDO', 'BR', 'CITE', 'CODE', 'DATA', 'DFN', 'EM', 'I', 'IMG', 'KBD',
    'LABEL', 'MARK', 'Q', 'S', 'SAMP', 'SMALL', 'SPAN', 'STRONG', 'SUB', 'SUP', 'TIME', 'U', 'VAR', 'WBR']);
  const isInline = (el) => INLINE.has(el.tagName);

  function mainContent() {
    return document.querySelector('main, [role="main"]') ?? document.querySelector('article') ?? document.body;
  }

  function links(args) {
    const root = args.target ? resolve(args.target, { retryMissing: false }).el : document.documentElement;
    const seen = new Set();
    const found = [];
    const needle = args.contains ? args.contains.toLowerCase() : null;
    let total = 0;
    for (const a of queryAll('a[href], area[href]', root.nodeType === 1 ? root : document)) {
      const href = a.href;
      if (!href || href.startsWith('javascript:')) continue;
      let internal = false;
      try {
        internal = new URL(href).origin === (args.origin || location.origin);
      } catch {
        continue;
      }
      if (args.internalOnly && !internal) continue;
      const text = cap(squash(textOf(a)) || a.title || a.getAttribute('aria-label') || '', 200);
      if (needle && !text.toLowerCase().includes(needle) && !href.toLowerCase().includes(needle)) continue;
      const key = `${href}\u0000${text}`;
      if (seen.has(key)) continue;
      seen.add(key);
      total++;
      if (found.length < args.limit) found.push({ text, href, internal, rel: a.rel || '' });
    }
    return { links: found, total, truncated: total > found.length };
  }

  // ---- query (unibrowse's exploration tools) ---------------------------------------------------------------------

  const STYLE_DEFAULTS = ['display', 'visibility', 'opacity', 'position', 'z-index', 'color', 'background-color',
    'font-family', 'font-size', 'font-weight', 'width', 'height', 'margin', 'padding', 'border', 'overflow', 'cursor'];

  function visibility(el) {
    const reason = hiddenReason(el);
    const box = el.isConnected ? viewportBox(el) : null;
    return {
      visible: !reason, inViewport: Boolean(box) && !reason && inViewport(box), reason,
      box: box && { x: Math.round(box.x), y: Math.round(box.y), width: Math.round(box.width), height: Math.round(box.height) },
    };
  }

  function elementState(el) {
    const checkable = el.tagName === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio');
    const ariaChecked = el.getAttribute('aria-checked');
    const expanded = el.getAttribute('aria-expanded') ?? (el.tagName === 'DETAILS' ? String(el.open) : null);
    const ariaSelected = el.getAttribute('aria-selected');
    return {
      enabled: !isDisabled(el), editable: Boolean(editable(el)) && !el.readOnly && !isDisabled(el),
      focused: deepActive() === el,
      checked: checkable ? el.checked : ariaChecked === null ? null : ariaChecked === 'true',
      selected: el.tagName === 'OPTION' ? el.selected : ariaSelected === null ? null : ariaSelected === 'true',
      expanded: expanded === null ? null : expanded === 'true', required: Boolean(el.required), value: valueOf(el),
    };
  }

  function formFields(form) {
    const els = form.tagName === 'FORM' ? [...form.elements] : queryAll('input, select, textarea', form);
    return els.filter((e) => !['submit', 'button', 'reset', 'image'].includes(e.type) && e.tagName !== 'FIELDSET' && e.tagName !== 'BUTTON')
      .map((e) => ({
        name: e.name || e.id || '', type: e.tagName === 'INPUT' ? e.type : e.tagName.toLowerCase(),
        value: e.type === 'checkbox' || e.type === 'radio' ? e.value : valueOf(e),
        checked: e.type === 'checkbox' || e.type === 'radio' ? e.checked : null, element: brief(e),
      }));
  }

  function metadata() {
    const meta = [];
    for (const m of document.querySelectorAll('meta[name], meta[property]')) {
      if (meta.length >= 50) break;
      meta.push([m.getAttribute('name') || m.getAttribute('property'), cap(m.getAttribute('content') || '', 500)]);
    }
    return {
      title: document.title, lang: document.documentElement.lang || '', charset: document.characterSet,
      description: document.querySelector('meta[name="description"]')?.content ?? '',
      canonical: document.querySelector('link[rel="canonical"]')?.href ?? '', meta,
    };
  }

  function findText(text, exact, limit) {
    const needle = exact ? squash(text) : squash(text).toLowerCase();
    const hits = [];
    let count = 0;
    const seen = new Set();
    for (const el of allElements(document.documentElement)) {
      if (SKIP_TAGS.has(el.tagName)) continue;
      for (const n of el.childNodes) {
        if (n.nodeType !== 3) continue;
        const t = squash(n.data);
        if (!t || (exact ? t !== needle : !t.toLowerCase().includes(needle))) continue;
        if (seen.has(el) || !isVisible(el)) continue;
        seen.add(el);
        count++;
        if (hits.length < limit) hits.push({ element: brief(el), text: cap(squash(textOf(el)), 300) });
      }
    }
    return { count, elements: hits };
  }

  function query(args) {
    const what = args.what;
    if (what === 'metadata') return { count: 1, elements: [], metadata: metadata() };
    if (what === 'find_text') return findText(args.text, args.exact, args.limit);
    if (what === 'form_values' && !args.target) {
      const forms = queryAll('form');
      return { count: forms.length, elements: forms.slice(0, args.limit).map((f) => ({ element: brief(f), fields: formFields(f) })) };
    }
    const all = args.target.ref ? [resolveRef(args.target.ref).el] : queryAll(args.target.selector);
    if (what === 'count') return { count: all.length, elements: [] };
    const elements = all.slice(0, args.limit).map((el) => {
      const item = { element: brief(el), text: cap(squash(textOf(el)), 300) };
      if (what === 'attributes') item.attributes = [...el.attributes].map((a) => [a.name, cap(a.value, 500)]);
      if (what === 'styles') {
        const cs = getComputedStyle(el);
        item.styles = (args.properties.length ? args.properties : STYLE_DEFAULTS).map((p) => [p, cs.getPropertyValue(p)]);
      }
      if (what === 'visibility') item.visibility = visibility(el);
      if (what === 'state') item.state = elementState(el);
      if (what === 'form_values') item.fields = formFields(el.tagName === 'FORM' ? el : el.closest('form') ?? el);
      return item;
    });
    return { count: all.length, elements };
  }

  // ---- waiting (one check; the server polls) -------------------------------------------------------------------

  function check(args) {
    if (args.text !== undefined && args.text !== null) {
      return { matched: visibleText(document.body ?? document.documentElement).includes(args.text) };
    }
    if (args.textGone !== undefined && args.textGone !== null) {
      return { matched: !visibleText(document.body ?? document.documentElement).includes(args.textGone) };
    }
    let el = null;
    try {
      el = resolve(args.target, { retryMissing: false }).el;
    } catch (e) {
      if (!(e instanceof OpError) || e.code !== 'element_not_found' || args.target.ref) throw e;
    }
    const visible = Boolean(el) && isVisible(el);
    const matched = { attached: Boolean(el), detached: !el, visible, hidden: !visible }[args.state];
    return { matched, element: matched && el ? brief(el) : null };
  }

  // ---- ops -----------------------------------------------------------------------------------------------------------

  function pageBox() {
    const d = document.documentElement;
    return {
      scrollX, scrollY, scrollWidth: d.scrollWidth, scrollHeight: d.scrollHeight, viewportWidth: innerWidth,
      viewportHeight: innerHeight,
    };
  }

  function scrollOp(args) {
    let el = null;
    let element = null;
    if (args.target) {
      el = resolve(args.target).el;
      element = brief(el);
    }
    if (el && !args.dx && !args.dy && !args.to) {
      el.scrollIntoView({ block: 'center', inline: 'nearest', behavior: 'instant' });
      return { ...pageBox(), element };
    }
    // The box that scrolls: the target's nearest scrollable ancestor, else the page.
    let box = null;
    for (let n = el; n; n = composedParent(n)) {
      if (n.nodeType !== 1) continue;
      const cs = getComputedStyle(n);
      if ((n.scrollHeight > n.clientHeight && /(auto|scroll)/.test(cs.overflowY)) ||
          (n.scrollWidth > n.clientWidth && /(auto|scroll)/.test(cs.overflowX))) {
        box = n;
        break;
      }
    }
    const scroller = box ?? document.scrollingElement ?? document.documentElement;
    if (args.to === 'top') scroller.scrollTo({ top: 0, behavior: 'instant' });
    else if (args.to === 'bottom') scroller.scrollTo({ top: scroller.scrollHeight, behavior: 'instant' });
    else scroller.scrollBy({ left: args.dx, top: args.dy, behavior: 'instant' });
    return { ...pageBox(), element };
  }

  function elementRect(target) {
    const { el } = resolve(target);
    if (!isVisible(el)) fail('element_not_interactable', `${describe(el)} is not visible (${hiddenReason(el) || 'hidden'})`, true);
    const box = scrollIntoViewIfNeeded(el);
    return { x: box.x + scrollX, y: box.y + scrollY, width: box.width, height: box.height, element: brief(el) };
  }

  function html5Drag(source, dest) {
    // A draggable source: HTML5 drag-and-drop, which CDP mouse input does not start; synthesized here with one
    // DataTransfer, in the order a browser fires them.
    const src = resolve(source).el;
    const dst = resolve(dest).el;
    if (!src.draggable) return { html5: false };
    const dt = new DataTransfer();
    const at = (el) => {
      const b = el.getBoundingClientRect();
      return { clientX: b.left + b.width / 2, clientY: b.top + b.height / 2 };
    };
    const ev = (el, type) => el.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, composed: true, dataTransfer: dt, ...at(el) }));
    ev(src, 'dragstart');
    ev(dst, 'dragenter');
    ev(dst, 'dragover');
    ev(dst, 'drop');
    ev(src, 'dragend');
    return { html5: true, element: brief(src), toElement: brief(dst) };
  }

  /** Where an open frame's viewport starts in this document's viewport (CSS px), its owner scrolled so that
   * (x, y) of the frame's viewport is in view; and that the owner is the topmost element there. */
  function frameBox(a) {
    const el = openedKeys.get(a.key)?.deref();
    if (!el || !el.isConnected || openKey(el) !== a.key) {
      fail('element_not_found', 'the frame the element is in is no longer in the page; take a new snapshot');
    }
    const origin = () => {
      const b = viewportBox(el);
      const cs = getComputedStyle(el);
      return { x: b.x + el.clientLeft + parseFloat(cs.paddingLeft), y: b.y + el.clientTop + parseFloat(cs.paddingTop) };
    };
    let o = origin();
    if (o.x + a.x < 0 || o.y + a.y < 0 || o.x + a.x > innerWidth || o.y + a.y > innerHeight) {
      el.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior: 'instant' });
      o = origin();
      const dx = o.x + a.x - innerWidth / 2;
      const dy = o.y + a.y - innerHeight / 2;
      if (o.x + a.x < 0 || o.y + a.y < 0 || o.x + a.x > innerWidth || o.y + a.y > innerHeight) {
        scrollBy({ left: dx, top: dy, behavior: 'instant' });
        o = origin();
      }
    }
    const x = o.x + a.x;
    const y = o.y + a.y;
    const hit = deepHit(x, y);
    if (hit !== el) fail('element_not_interactable', `${describe(el)} is covered by ${describe(hit)} at (${Math.round(x)}, ${Math.round(y)})`, true);
    return { x: o.x, y: o.y };
  }

  const OPS = {
    hello: () => ({ status: performance.getEntriesByType?.('navigation')?.[0]?.responseStatus || null }),
    snapshot,
    point: (a) => pointAt(a.target, { needEnabled: a.needEnabled }),
    aimed: (a) => aimedVerdict(a.aim),
    focus: (a) => focusField(a.target, a.clear),
    focusAny: (a) => {
      const { el, reResolved } = resolve(a.target);
      el.focus({ preventScroll: false });
      return { element: brief(el), reResolved };
    },
    activeValue: () => ({ value: valueOf(deepActive()) }),
    pickFile: (a) => {
      // upload_file: the file input to fill, kept for the server to take as an object (takePicked).
      const { el, reResolved } = resolve(a.target);
      if (!(el instanceof HTMLInputElement) || el.type !== 'file') {
        fail('element_not_interactable', `${describe(el)} is not a file input (<input type=file>)`, false);
      }
      if (el.disabled) fail('element_not_interactable', `${describe(el)} is disabled`, true);
      picked = el;
      return { element: brief(el), multiple: el.multiple, reResolved };
    },
    linkOf: (a) => {
      // download by click: the link the element is (or is in), whose URL is fetched rather than clicked; null for
      // an element that is in no link (the server clicks it and catches the download the page's script starts).
      const { el, reResolved } = resolve(a.target);
      const link = el.closest('a[href], area[href]');
      return { href: link ? link.href : null, element: brief(el), reResolved };
    },
    mask: () => maskFrames(),
    unmask: () => unmaskFrames(),
    select: (a) => {
      const { el, reResolved } = resolve(a.target);
      if (!isVisible(el)) fail('element_not_interactable', `${describe(el)} is not visible`, true);
      return { selected: chooseOptions(el, a.values), element: brief(el), reResolved };
    },
    fill: (a) => ({ fields: fillForm(a.fields) }),
    scroll: scrollOp,
    rect: (a) => elementRect(a.target),
    frameBox,
    html5Drag: (a) => html5Drag(a.source, a.dest),
    text: (a) => clip(visibleText(a.target ? resolve(a.target, { retryMissing: false }).el : document.body ?? document.documentElement), a.max),
    html: (a) => clip(a.target ? html(resolve(a.target, { retryMissing: false }).el)
      : `<!DOCTYPE html>\n${html(document.documentElement)}`, a.max),
    markdown: (a) => clip(markdown(a.target ? resolve(a.target, { retryMissing: false }).el : mainContent()), a.max),
    links,
    query,
    check,
  };

  // Ops that read the whole page: their reply says which open frames the server should read too, and how many
  // frames are sealed (then the server looks for frames it could open).
  const FRAME_OPS = new Set(['snapshot', 'text', 'links', 'query']);

  const api = {
    /** Guards run inside an extension batch right before its input or capture: true, or a refusal message (the
     * extension then stops the batch with policy_denied). Never throw. */
    guard(kind, a) {
      try {
        // In a frame's own world: its document must still be one the tools may read.
        if (!docAllowed(document)) return `the frame is now ${location.href.slice(0, 200)}, ${SEALED}: refused`;
        if (kind === 'point') return pointGuard(a.x, a.y, a.newTab === true, a.frame, a.aim, a.arm);
        if (kind === 'focus') return focusGuard(a.frame);
        if (kind === 'mask') { // after the capture: the frames are shown again whatever the verdict
          const held = maskHeld();
          unmaskFrames();
          return held;
        }
        return `unknown guard ${kind}`;
      } catch (e) {
        return `guard ${kind} failed: ${e?.message ?? e}`;
      }
    },
    /** The server found `el` (a frame owner) to be the frame it reads as `key`. */
    openFrame(el, key) {
      if (!isFrame(el) || !Number.isInteger(key)) return false;
      opened.set(el, key);
      openedKeys.set(key, new WeakRef(el));
      return true;
    },
    takePicked() {
      const el = picked;
      picked = null;
      return el;
    },
    hello: () => ({
      ok: true, url: location.href, origin: String(self.origin), title: document.title, nextRef: next, refStart: start,
      status: performance.getEntriesByType?.('navigation')?.[0]?.responseStatus || null,
    }),
    run(op, args, floor) {
      // Refs count on from the tab's highest (the frames of the page number theirs from the same counter).
      if (Number.isInteger(floor) && floor > next) next = floor;
      try {
        const result = OPS[op](args);
        if (FRAME_OPS.has(op)) Object.assign(result, frameCensus(document.documentElement), { frames: result.frames ?? [] });
        return { ok: true, url: location.href, origin: String(self.origin), title: document.title, nextRef: next, ...result };
      } catch (e) {
        const known = e instanceof OpError;
        return {
          ok: false, url: location.href, origin: String(self.origin), nextRef: next,
          error: { code: known ? e.code : 'page_error', message: String(e?.message ?? e), retry: known && e.retry },
        };
      }
    },
  };
  Object.defineProperty(globalThis, '__aibTools', { value: api });
  return api.hello();
})
