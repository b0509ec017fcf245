  // page_read.js: reading (text, html, markdown, links), query, and the one check behind waiting.
  // A part of the page script's one closure, which page_tree.js opens and page_ops.js closes: page.py joins
  // the parts in a fixed order (PARTS) and evaluates them as one script, so each part sees the names of the
  // parts before it.

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

