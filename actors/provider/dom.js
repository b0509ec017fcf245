// get_page_dom: the HTML of the element matching `selector` (the whole document when null), open shadow roots
// inlined as <template shadowrootmode="open">, scripts and styles elided, capped at `maxChars`. Returns null when
// nothing matches.
function serializeDom(selector, maxChars) {
  const findDeep = (sel) => {
    const stack = [document];
    while (stack.length) {
      const root = stack.shift();
      const hit = root.querySelector(sel);
      if (hit) return hit;
      for (const el of root.querySelectorAll('*')) if (el.shadowRoot) stack.push(el.shadowRoot);
    }
    return null;
  };
  const root = selector ? findDeep(selector) : document.documentElement;
  if (!root) return null;
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const attr = (s) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
  const out = [];
  let size = 0;
  let truncated = false;
  const push = (s) => {
    if (size + s.length > maxChars) { truncated = true; return false; }
    out.push(s); size += s.length; return true;
  };
  const walk = (node) => {
    if (truncated) return;
    if (node.nodeType === Node.TEXT_NODE) { push(esc(node.textContent)); return; }
    if (node.nodeType === Node.COMMENT_NODE) return;
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const tag = node.tagName.toLowerCase();
    if (tag === 'script' || tag === 'style') { push(`<${tag}>…</${tag}>`); return; }
    const attrs = Array.from(node.attributes).map((a) => ` ${a.name}="${attr(a.value)}"`).join('');
    if (!push(`<${tag}${attrs}>`)) return;
    if (node.shadowRoot) {
      push('<template shadowrootmode="open">');
      node.shadowRoot.childNodes.forEach(walk);
      push('</template>');
    }
    node.childNodes.forEach(walk);
    push(`</${tag}>`);
  };
  walk(root);
  return { html: out.join(''), truncated, chars: size };
}
