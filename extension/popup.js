// Popup: one row per server, from the status the worker keeps in chrome.storage.session.

const rows = document.getElementById('rows');
const empty = document.getElementById('empty');

function ago(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  return `${Math.floor(s / 3600)} h ago`;
}

function cell(text, className) {
  const td = document.createElement('td');
  td.textContent = text; // textContent, never innerHTML: project names and errors come from local servers
  if (className) td.className = className;
  return td;
}

async function render() {
  const { servers = [] } = await chrome.storage.session.get('servers');
  rows.replaceChildren(
    ...servers.map((s) => {
      const tr = document.createElement('tr');
      tr.title = s.serverId ? `serverId ${s.serverId}` : '';
      tr.append(
        cell(s.project || '—'),
        cell(String(s.port)),
        cell(s.state, s.state.replace(' ', '-')),
        cell(s.connectedSince ? `${new Date(s.connectedSince).toLocaleTimeString()} (${ago(s.connectedSince)})` : '—'),
        cell(s.lastError || '', 'err'),
      );
      return tr;
    }),
  );
  empty.hidden = servers.length > 0;
}

chrome.storage.onChanged.addListener((changes, area) => {
  if (area === 'session' && changes.servers) render();
});
setInterval(render, 1000); // keeps the "… ago" column current
render();
// Wakes a stopped service worker and makes it look for servers now (background.js).
chrome.runtime.sendMessage({ type: 'status' }).catch(() => {});
