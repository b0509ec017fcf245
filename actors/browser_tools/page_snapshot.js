  // page_snapshot.js: the snapshot: the accessibility-like tree with refs.
  // A part of the page script's one closure, which page_tree.js opens and page_ops.js closes: page.py joins
  // the parts in a fixed order (PARTS) and evaluates them as one script, so each part sees the names of the
  // parts before it.

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

