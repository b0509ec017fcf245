// Popup: one row per server, from the status the worker keeps in chrome.storage.session; pairing with a server's key
// (pairing.js): the code `ai-bridge pair` prints, pasted here by the user.

import { addPairing, fingerprint, listPairings, removePairing } from './pairing.js';

const rows = document.getElementById('rows');
const empty = document.getElementById('empty');
const keys = document.getElementById('keys');
const noKeys = document.getElementById('no-keys');
const form = document.getElementById('pair-form');
const codeInput = document.getElementById('code');
const result = document.getElementById('pair-result');

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
      if (s.unknown) {
        // Not proven to be a server of this browser's user: nothing it wrote is shown, only our own words.
        tr.append(cell(`an unknown server on port ${Number(s.port)}`), cell(String(Number(s.port))), cell('—', 'key'),
          cell(s.state, s.state.replace(' ', '-')), cell('—'), cell(s.lastError || '', 'err'));
        return tr;
      }
      tr.title = s.serverId ? `serverId ${s.serverId}` : '';
      tr.append(
        cell(s.project || '—'),
        cell(String(s.port)),
        cell(s.key || '—', 'key'),
        cell(s.state, s.state.replace(' ', '-')),
        cell(s.connectedSince ? `${new Date(s.connectedSince).toLocaleTimeString()} (${ago(s.connectedSince)})` : '—'),
        cell(s.lastError || '', 'err'),
      );
      return tr;
    }),
  );
  empty.hidden = servers.length > 0;
}

async function renderKeys() {
  const paired = await listPairings();
  keys.replaceChildren(
    ...paired.map((p) => {
      const tr = document.createElement('tr');
      const remove = document.createElement('button');
      remove.textContent = 'Remove';
      remove.addEventListener('click', async () => {
        await removePairing(p.keyId);
        await renderKeys();
      });
      const action = document.createElement('td');
      action.append(remove);
      tr.append(cell(fingerprint(p.keyId), 'key'), cell(p.label || ''),
        cell(p.pairedAt ? new Date(p.pairedAt).toLocaleString() : ''), action);
      return tr;
    }),
  );
  noKeys.hidden = paired.length > 0;
}

form.addEventListener('submit', async (ev) => {
  ev.preventDefault();
  try {
    const keyId = await addPairing(codeInput.value, 'paired in the popup');
    codeInput.value = '';
    result.className = 'good';
    result.textContent = `paired: key ${fingerprint(keyId)}`;
  } catch (e) {
    result.className = 'bad';
    result.textContent = String(e?.message ?? e);
  }
  await renderKeys();
});

chrome.storage.onChanged.addListener((changes, area) => {
  if (area === 'session' && changes.servers) render();
  if (area === 'local') renderKeys();
});
setInterval(render, 1000); // keeps the "… ago" column current
render();
renderKeys();
// Wakes a stopped service worker and makes it look for servers now (background.js).
chrome.runtime.sendMessage({ type: 'status' }).catch(() => {});
