  // page_ops.js: the ops table and the api the server calls; it closes the closure.
  // A part of the page script's one closure, which page_tree.js opens and page_ops.js closes: page.py joins
  // the parts in a fixed order (PARTS) and evaluates them as one script, so each part sees the names of the
  // parts before it.

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
