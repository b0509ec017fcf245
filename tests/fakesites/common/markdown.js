// A small streaming-safe markdown renderer shared by both fake sites (bundled into each site's script).
// Blocks: paragraphs, #-headings, fenced code (```lang, unclosed fences render what arrived so far),
// bullet and numbered lists. Inline: `code`, **bold**, *em*. Everything else is escaped text.
//
// renderMarkdown(src, opts) -> HTML string
//   opts.positions  add data-start / data-end (source offsets) to blocks, like chatgpt.com
//   opts.blank      keep the elements but render no answer text (the background-tab quirk)
//   opts.codeBlock  (lang, codeHtml, start, end) -> HTML for a code block (site-specific chrome)

const escapeHtml = (s) => s.replace(/[&<>"']/g, (c) => (
  { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));

function renderInline(s, blank) {
  if (blank) return '';
  let out = '';
  for (const part of s.split(/(`[^`]*`)/)) {
    if (part.length >= 2 && part[0] === '`' && part[part.length - 1] === '`') {
      out += '<code>' + escapeHtml(part.slice(1, -1)) + '</code>';
    } else {
      out += escapeHtml(part)
        .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
        .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, '$1<em>$2</em>');
    }
  }
  return out;
}

function renderMarkdown(src, opts) {
  opts = opts || {};
  const blank = !!opts.blank;
  const pos = (a, b) => (opts.positions ? ` data-start="${a}" data-end="${b}"` : '');
  const codeBlock = opts.codeBlock || ((lang, code) =>
    `<pre><code${lang ? ` class="language-${escapeHtml(lang)}"` : ''}>${code}</code></pre>`);
  const lines = src.split('\n');
  const starts = [];
  let off = 0;
  for (const line of lines) { starts.push(off); off += line.length + 1; }
  const endOf = (i) => starts[i] + lines[i].length;

  const fence = /^\s*```\s*([\w+#.-]*)\s*$/;
  const heading = /^(#{1,6})\s+(.*)$/;
  const bullet = /^\s*[-*+]\s+(.*)$/;
  const ordered = /^\s*\d+[.)]\s+(.*)$/;
  const special = (l) => fence.test(l) || heading.test(l) || bullet.test(l) || ordered.test(l);

  let html = '';
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    let m;
    if ((m = line.match(fence))) {
      const lang = m[1] || '';
      const first = i;
      const body = [];
      i++;
      while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) body.push(lines[i++]);
      const last = Math.min(i, lines.length - 1);
      if (i < lines.length) i++; // closing fence
      const code = blank ? '' : escapeHtml(body.join('\n'));
      html += codeBlock(lang, code, starts[first], endOf(last));
      continue;
    }
    if ((m = line.match(heading))) {
      const n = m[1].length;
      html += `<h${n}${pos(starts[i], endOf(i))}>${renderInline(m[2], blank)}</h${n}>`;
      i++;
      continue;
    }
    const isBullet = bullet.test(line);
    if (isBullet || ordered.test(line)) {
      const re = isBullet ? bullet : ordered;
      const tag = isBullet ? 'ul' : 'ol';
      const first = i;
      let items = '';
      while (i < lines.length && re.test(lines[i])) {
        const text = lines[i].match(re)[1];
        items += `<li${pos(starts[i], endOf(i))}>${renderInline(text, blank)}</li>`;
        i++;
      }
      html += `<${tag}${pos(starts[first], endOf(i - 1))}>${items}</${tag}>`;
      continue;
    }
    const first = i;
    const para = [];
    while (i < lines.length && lines[i].trim() && !special(lines[i])) para.push(lines[i++]);
    html += `<p${pos(starts[first], endOf(i - 1))}>${para.map((l) => renderInline(l, blank)).join(blank ? '' : '<br>')}</p>`;
  }
  return html;
}
