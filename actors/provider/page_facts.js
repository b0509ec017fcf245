// The page's facts for a snapshot or a debug dump (seed 9.5): URL, title, ready state, visibility, and its text
// with open shadow roots included (Gemini renders inside them; innerText skips them), capped at `maxText`.
function pageFacts(maxText) {
  const out = [];
  let size = 0;
  const walk = (node) => {
    if (size > maxText) return;
    if (node.nodeType === Node.TEXT_NODE) { out.push(node.data); size += node.data.length; return; }
    if (node.nodeName === 'SCRIPT' || node.nodeName === 'STYLE') return;
    if (node.shadowRoot) walk(node.shadowRoot);
    node.childNodes.forEach(walk);
  };
  walk(document.body || document);
  const text = out.join(' ').replace(/\s+/g, ' ').trim();
  // The page's last finished requests (host and path, never a query): a page stuck on its loading screen shows
  // which of its own requests never came back by their absence.
  const loaded = performance.getEntriesByType('resource').slice(-40).map((e) => {
    try { const u = new URL(e.name); return `${u.host}${u.pathname.slice(0, 200)} ${Math.round(e.duration)}ms`; }
    catch { return ''; }
  });
  return {
    url: location.href, title: document.title, readyState: document.readyState,
    visibility: document.visibilityState, textLength: text.length, text: text.slice(0, maxText), loaded,
  };
}
