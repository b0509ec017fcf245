// Markdown → the site's answer HTML, shared by both fake sites (bundled after vendor/markdown-it.min.js and before
// each site's app.js, inside one IIFE). The parsing is markdown-it's (CommonMark + GFM tables, strikethrough and
// autolinks; newlines inside a paragraph become <br> as both sites render them), plus what the sites add:
//   $…$ and $$…$$ math, "- [ ] " task items and {{cite:Label|https://url}} citation markers (where a real answer
//   carries the site's citation reference; ChatGPT shows a link pill, Gemini a footnote and a chip without URL).
// The markup is each site's: a site passes `hooks` (code-block chrome, table wrappers, link and math markup, block
// attributes); the renderer here only walks the tokens. Unclosed constructs of a streaming answer render as far as
// they arrived (markdown-it closes them at the end of the input).
//
// renderMarkdown(src, opts) -> HTML string
//   opts.hooks   the site's markup (see the two app.js files)
//   opts.blank   keep the elements but render no answer text (the background-tab quirk)

const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => (
  { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));

// Display names the sites show in a code block's header.
const LANGUAGE_LABELS = {
  python: 'Python', py: 'Python', javascript: 'JavaScript', js: 'JavaScript', typescript: 'TypeScript',
  ts: 'TypeScript', bash: 'Bash', sh: 'Bash', shell: 'Shell', zsh: 'Zsh', json: 'JSON', sql: 'SQL', html: 'HTML',
  css: 'CSS', yaml: 'YAML', yml: 'YAML', toml: 'TOML', rust: 'Rust', go: 'Go', cpp: 'C++', 'c++': 'C++', c: 'C',
  java: 'Java', kotlin: 'Kotlin', swift: 'Swift', ruby: 'Ruby', php: 'PHP', diff: 'Diff', xml: 'XML',
  csharp: 'C#', cs: 'C#', dockerfile: 'Dockerfile', makefile: 'Makefile', text: 'Text', markdown: 'Markdown',
  md: 'Markdown', powershell: 'PowerShell', r: 'R', lua: 'Lua', haskell: 'Haskell', scala: 'Scala',
};
const languageLabel = (lang) => LANGUAGE_LABELS[lang.toLowerCase()] || lang;

// A token-level highlighter's output: the code split into spans (what a real highlighter leaves in the DOM).
function highlight(code, classes) {
  let out = '';
  const re = /("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|#[^\n]*|\/\/[^\n]*|\b\d+(?:\.\d+)?\b|\b[A-Za-z_]\w*\b)/g;
  let last = 0;
  let m;
  while ((m = re.exec(code))) {
    if (m.index > last) out += `<span>${escapeHtml(code.slice(last, m.index))}</span>`;
    const t = m[0];
    const kind = /^["']/.test(t) ? 'string' : /^(#|\/\/)/.test(t) ? 'comment' : /^\d/.test(t) ? 'number' : 'name';
    out += `<span class="${classes[kind]}">${escapeHtml(t)}</span>`;
    last = m.index + t.length;
  }
  if (last < code.length) out += `<span>${escapeHtml(code.slice(last))}</span>`;
  return out;
}

// KaTeX-like output for the fakes: a MathML copy holding the TeX in an annotation, then the visible glyphs.
function katexHtml(tex, { display = false, mathml = true } = {}) {
  const glyphs = escapeHtml(tex.replace(/\\[a-zA-Z]+/g, '').replace(/[{}^_]/g, ''));
  const ml = mathml
    ? `<span class="katex-mathml"><math xmlns="http://www.w3.org/1998/Math/MathML"${display ? ' display="block"' : ''}>`
      + `<semantics><mrow><mi>${glyphs}</mi></mrow><annotation encoding="application/x-tex">${escapeHtml(tex)}`
      + '</annotation></semantics></math></span>'
    : '';
  return `<span class="katex">${ml}<span class="katex-html" aria-hidden="true"><span class="base">`
    + `<span class="strut" style="height: 0.8141em;"></span><span class="mord mathnormal">${glyphs}</span>`
    + '</span></span></span>';
}

// --- markdown-it plugins: math, task items, citation markers ------------------------------------------------------

function mathPlugin(md) {
  md.inline.ruler.after('escape', 'math_inline', (state, silent) => {
    const src = state.src;
    const start = state.pos;
    if (src[start] !== '$' || src[start + 1] === '$') return false;
    if (start + 1 >= state.posMax || /\s/.test(src[start + 1])) return false;
    let end = start + 1;
    while ((end = src.indexOf('$', end)) !== -1) {
      if (src[end - 1] !== '\\' && !/\s/.test(src[end - 1]) && !/\d/.test(src[end + 1] || '')) break;
      end += 1;
    }
    if (end === -1 || end > state.posMax) return false;
    if (!silent) {
      const tok = state.push('math_inline', 'math', 0);
      tok.content = src.slice(start + 1, end);
    }
    state.pos = end + 1;
    return true;
  });
  md.block.ruler.after('blockquote', 'math_block', (state, startLine, endLine, silent) => {
    const first = state.src.slice(state.bMarks[startLine] + state.tShift[startLine], state.eMarks[startLine]);
    if (!first.startsWith('$$')) return false;
    if (silent) return true;
    const lines = [];
    let rest = first.slice(2);
    let line = startLine;
    let closed = false;
    for (;;) {
      const at = rest.indexOf('$$');
      if (at !== -1) { lines.push(rest.slice(0, at)); closed = true; break; }
      lines.push(rest);
      line += 1;
      if (line >= endLine) break;
      rest = state.src.slice(state.bMarks[line] + state.tShift[line], state.eMarks[line]);
    }
    const tok = state.push('math_block', 'math', 0);
    tok.block = true;
    tok.content = lines.join('\n').trim();
    tok.map = [startLine, Math.min(line + 1, endLine)];
    state.line = Math.min(line + (closed ? 1 : 0), endLine);
    return true;
  }, { alt: ['paragraph', 'reference', 'blockquote', 'list'] });
}

function taskPlugin(md) {
  md.core.ruler.after('inline', 'task_items', (state) => {
    const tokens = state.tokens;
    for (let i = 2; i < tokens.length; i++) {
      const inline = tokens[i];
      if (inline.type !== 'inline' || tokens[i - 1].type !== 'paragraph_open'
          || tokens[i - 2].type !== 'list_item_open') continue;
      const m = inline.content.match(/^\[([ xX])\] /);
      const first = inline.children[0];
      if (!m || !first || first.type !== 'text' || !first.content.startsWith(m[0])) continue;
      first.content = first.content.slice(m[0].length);
      const box = new state.Token('task_checkbox', 'input', 0);
      box.meta = { checked: m[1] !== ' ' };
      inline.children.unshift(box);
      tokens[i - 2].meta = { task: true };
    }
  });
}

function citePlugin(md) {
  md.inline.ruler.before('link', 'cite', (state, silent) => {
    if (!state.src.startsWith('{{cite:', state.pos)) return false;
    const end = state.src.indexOf('}}', state.pos);
    if (end === -1) return false;
    const [label, url] = state.src.slice(state.pos + 7, end).split('|');
    if (!url) return false;
    if (!silent) {
      const tok = state.push('cite', '', 0);
      tok.meta = { label: label.trim(), url: url.trim() };
    }
    state.pos = end + 2;
    return true;
  });
}

let parser = null;
function getParser() {
  if (!parser) {
    parser = markdownit({ html: false, linkify: true, breaks: true, typographer: false });
    parser.use(mathPlugin).use(taskPlugin).use(citePlugin);
  }
  return parser;
}

// --- rendering ---------------------------------------------------------------------------------------------------

function renderMarkdown(src, opts) {
  opts = opts || {};
  const hooks = opts.hooks;
  const blank = !!opts.blank;
  const tokens = getParser().parse(src, {});
  const lineStarts = [0];
  for (let i = 0; i < src.length; i++) if (src[i] === '\n') lineStarts.push(i + 1);
  const span = (map) => {
    if (!map) return null;
    const start = lineStarts[map[0]] ?? src.length;
    const endLine = Math.max(map[0], map[1] - 1);
    const next = lineStarts[endLine + 1];
    return { start, end: next === undefined ? src.length : next - 1 };
  };
  // Block path like Gemini's data-path-to-node ("3,1,0": block 3, its child 1, that one's child 0)
  const path = [];
  const counters = [0];
  const enter = () => { path.push(counters[counters.length - 1]++); counters.push(0); return path.join(','); };
  const leave = () => { path.pop(); counters.pop(); };
  const ctx = { blank, escapeHtml, highlight, katexHtml, languageLabel };

  const inline = (children) => {
    let out = '';
    const stack = [];
    for (let i = 0; i < children.length; i++) {
      const t = children[i];
      switch (t.type) {
        case 'text': out += blank ? '' : escapeHtml(t.content); break;
        case 'softbreak': case 'hardbreak': out += '<br>'; break;
        case 'code_inline': out += hooks.codeInline(blank ? '' : escapeHtml(t.content), ctx); break;
        case 'strong_open': out += hooks.open('strong', ctx); break;
        case 'strong_close': out += hooks.close('strong', ctx); break;
        case 'em_open': out += hooks.open('em', ctx); break;
        case 'em_close': out += hooks.close('em', ctx); break;
        case 's_open': out += hooks.open('s', ctx); break;
        case 's_close': out += hooks.close('s', ctx); break;
        case 'link_open': stack.push(t.attrGet('href') || ''); out += hooks.linkOpen(t.attrGet('href') || '', ctx); break;
        case 'link_close': out += hooks.linkClose(stack.pop(), ctx); break;
        case 'math_inline': out += hooks.mathInline(t.content, ctx); break;
        case 'task_checkbox': out += `<input type="checkbox" disabled=""${t.meta.checked ? ' checked=""' : ''}>`; break;
        case 'cite': out += hooks.cite(t.meta.label, t.meta.url, ctx); break;
        case 'image': out += blank ? '' : escapeHtml(t.content); break;
        default: out += blank ? '' : escapeHtml(t.content || ''); break;
      }
    }
    return out;
  };

  let html = '';
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    const where = span(t.map);
    switch (t.type) {
      case 'paragraph_open': html += `<p${hooks.attrs('p', where, enter(), ctx)}>`; break;
      case 'paragraph_close': html += '</p>'; leave(); break;
      case 'heading_open': html += `<${t.tag}${hooks.attrs(t.tag, where, enter(), ctx)}>`; break;
      case 'heading_close': html += `</${t.tag}>`; leave(); break;
      case 'bullet_list_open': html += `<ul${hooks.attrs('ul', where, enter(), ctx)}>`; break;
      case 'bullet_list_close': html += '</ul>'; leave(); break;
      case 'ordered_list_open': {
        const start = t.attrGet('start');
        html += `<ol${hooks.listStart(start ? Number(start) : 1, ctx)}${hooks.attrs('ol', where, enter(), ctx)}>`;
        break;
      }
      case 'ordered_list_close': html += '</ol>'; leave(); break;
      case 'list_item_open': html += `<li${hooks.attrs('li', where, enter(), ctx)}${t.meta && t.meta.task ? ' class="task-list-item"' : ''}>`; break;
      case 'list_item_close': html += '</li>'; leave(); break;
      case 'blockquote_open': html += `<blockquote${hooks.attrs('blockquote', where, enter(), ctx)}>`; break;
      case 'blockquote_close': html += '</blockquote>'; leave(); break;
      case 'hr': html += `<hr${hooks.attrs('hr', where, enter(), ctx)}>`; leave(); break;
      case 'fence': case 'code_block': {
        const lang = (t.info || '').trim().split(/\s+/)[0] || '';
        const code = t.content.replace(/\n$/, '');
        html += hooks.codeBlock(lang, blank ? '' : code, where, enter(), ctx);
        leave();
        break;
      }
      case 'math_block': html += hooks.mathBlock(t.content, where, enter(), ctx); leave(); break;
      case 'table_open': html += hooks.tableOpen(where, enter(), ctx); break;
      case 'table_close': html += hooks.tableClose(ctx); leave(); break;
      case 'thead_open': html += '<thead>'; break;
      case 'thead_close': html += '</thead>'; break;
      case 'tbody_open': html += '<tbody>'; break;
      case 'tbody_close': html += '</tbody>'; break;
      case 'tr_open': html += `<tr${hooks.attrs('tr', where, enter(), ctx)}>`; break;
      case 'tr_close': html += '</tr>'; leave(); break;
      case 'th_open': case 'td_open': {
        const style = t.attrGet('style') || '';
        const align = (style.match(/text-align:\s*(\w+)/) || [])[1] || '';
        const tag = t.type === 'th_open' ? 'th' : 'td';
        html += hooks.cellOpen(tag, align, where, enter(), ctx);
        break;
      }
      case 'th_close': case 'td_close': html += hooks.cellClose(t.type === 'th_close' ? 'th' : 'td', ctx); leave(); break;
      case 'inline': html += inline(t.children || []); break;
      default: break;
    }
  }
  return html;
}
