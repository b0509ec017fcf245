// Files back (issue 35), run in ai-bridge's isolated world with the table's selectors as values:
//   'list'    -> {messageId, files: [{kind: 'image' | 'file', url, name, alt}]}: the last response's generated images
//                (the table's generatedImage) and the files it links to (fileLink), each URL once, at most `max`
//   'sandbox' -> (ChatGPT) the download URL of a code-sandbox file (`arg`: {path, messageId}), asked of the site the
//                way its own page asks (agbrowse web-ai/code-artifact.mjs, verified 2026-06-11): the session's
//                token, then the conversation's interpreter/download. The token never leaves the page.
// Searched in open shadow roots too when `shadow` is set.
function aibFilesBack(op, sel, shadow, max, arg) {
  if (op === 'sandbox') {
    return (async () => {
      const conv = (location.pathname.match(/\/c\/([^/?#]+)/) || [])[1];
      if (!conv || !arg || typeof arg.path !== 'string') return null;
      const session = await fetch('/api/auth/session', { credentials: 'include' });
      const token = session.ok ? (await session.json()).accessToken : null;
      const q = new URLSearchParams({ message_id: String(arg.messageId || ''), sandbox_path: arg.path });
      const r = await fetch(`/backend-api/conversation/${encodeURIComponent(conv)}/interpreter/download?${q}`, {
        credentials: 'include', headers: token ? { authorization: 'Bearer ' + token } : {},
      });
      if (!r.ok) return { status: r.status };
      const body = await r.json();
      return { url: typeof body.download_url === 'string' ? new URL(body.download_url, location.href).href : null };
    })();
  }
  const roots = [document];
  if (shadow) {
    for (let i = 0; i < roots.length; i++) {
      for (const el of roots[i].querySelectorAll('*')) if (el.shadowRoot) roots.push(el.shadowRoot);
    }
  }
  const all = (list, scopes) => {
    for (const s of list || []) {
      const hits = [];
      for (const r of scopes) {
        try { hits.push(...r.querySelectorAll(s)); } catch { break; }
      }
      if (hits.length) return hits;
    }
    return [];
  };
  const responses = all(sel.assistant, roots);
  const last = responses[responses.length - 1];
  if (!last) return { messageId: '', files: [] };
  // The response's turn holds what the page shows beside the message (ChatGPT's article).
  const turn = (sel.turn || []).map((s) => { try { return last.closest(s); } catch { return null; } }).find(Boolean);
  const scope = turn || last;
  const scopes = [scope, ...Array.from(scope.querySelectorAll('*')).filter((el) => el.shadowRoot).map((el) => el.shadowRoot)];
  const seen = new Set();
  const files = [];
  const add = (kind, url, name, alt) => {
    if (!url || seen.has(url) || files.length >= max) return;
    seen.add(url);
    files.push({ kind, url, name: (name || '').trim().slice(0, 300), alt: (alt || '').trim().slice(0, 300) });
  };
  for (const img of all(sel.generatedImage, scopes)) {
    const src = img.currentSrc || img.getAttribute('src') || '';
    let url = '';
    try { url = new URL(src, location.href).href; } catch { continue; }
    if (/^https:/.test(url)) add('image', url, '', img.getAttribute('alt'));
  }
  for (const a of all(sel.fileLink, scopes)) {
    const href = a.getAttribute('href') || '';
    let url = href;
    if (!/^sandbox:/.test(href)) {
      try { url = new URL(href, location.href).href; } catch { continue; }
      if (!/^https:/.test(url)) continue;
    }
    add('file', url, a.getAttribute('download') || '', a.textContent);
  }
  return { messageId: last.getAttribute('data-message-id') || '', files };
}
