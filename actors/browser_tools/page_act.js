  // page_act.js: geometry and hit testing, the input guards, screenshot masks, typing and forms.
  // A part of the page script's one closure, which page_tree.js opens and page_ops.js closes: page.py joins
  // the parts in a fixed order (PARTS) and evaluates them as one script, so each part sees the names of the
  // parts before it.

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
    const roots = [document]; // watched once the frames are masked (masking them is not the page touching them)
    let frames = 0;
    for (const el of allElements(document.documentElement)) {
      if (el.shadowRoot) roots.push(el.shadowRoot);
      if (!isFrame(el)) continue;
      frames++;
      const doc = frameDoc(el);
      if (doc) roots.push(doc);
      if (!sealed(el)) continue;
      const st = el.style;
      els.push([el, st.getPropertyValue('visibility'), st.getPropertyPriority('visibility'),
        st.getPropertyValue('transition'), st.getPropertyPriority('transition')]);
      st.setProperty('transition', 'none', 'important');
      st.setProperty('visibility', 'hidden', 'important');
    }
    const observer = new MutationObserver(() => {});
    const watch = { subtree: true, childList: true, attributes: true };
    for (const root of roots) observer.observe(root, watch);
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

