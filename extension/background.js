// ai-bridge service worker entry point.
//
// Every chrome.* listener is registered synchronously here, at module top level: Chrome only delivers the event
// that woke a stopped worker to listeners that exist after the first evaluation of the module.
//
// Passive by design: the extension never opens a tab by itself; it only acts on server commands.

import { Discovery } from './discovery.js';
import { Executor } from './executor.js';
import { addPairing, PairingStore } from './pairing.js';

const ALARM = 'ai-bridge-discovery';

const executor = new Executor();
const pairings = new PairingStore();
const discovery = new Discovery({ executor, pairings, onChange: publishStatus });

// A browser ai-bridge launched is paired by the server itself, through its private debugging pipe: it evaluates
// `aiBridgePair(code)` in this worker (no web page and no other extension can reach the worker's global scope).
// The popup pairs the user's own Chrome (popup.js). Either way the new key lands in chrome.storage.local, and the
// listener below reloads the keys and polls discovery at once.
globalThis.aiBridgePair = (code, label = 'paired by the ai-bridge that launched this browser') => addPairing(code, label);

// ---- status for the popup (chrome.storage.session: survives worker restarts, not browser restarts) ---------------
// The server reads these rows too, through the debugging pipe of a browser it launched, to tell whether the
// connected extension is the one in that browser (auto mode steps aside for the user's Chrome): keep `serverId`
// and `state` ('open' once welcomed).

let publishTimer = null;
let lastPublished = '';

function publishStatus() {
  if (publishTimer !== null) return; // coalesce bursts (one discovery round touches every server)
  publishTimer = setTimeout(() => {
    publishTimer = null;
    const servers = discovery.snapshot();
    const text = JSON.stringify(servers);
    if (text === lastPublished) return;
    lastPublished = text;
    chrome.storage.session.set({ servers, updatedAt: Date.now() }).catch((e) => console.warn('ai-bridge: status', e));
  }, 100);
}

// ---- listeners (top level) -----------------------------------------------------------------------------------------

chrome.debugger.onEvent.addListener((source, method, params) => executor.onDebuggerEvent(source, method, params));
chrome.debugger.onDetach.addListener((source, reason) => executor.onDebuggerDetach(source, reason));
chrome.tabs.onRemoved.addListener((tabId) => executor.onTabRemoved(tabId));
chrome.tabs.onUpdated.addListener((tabId, changeInfo, tab) => executor.onTabUpdated(tabId, changeInfo, tab));

// The alarm is only the reconnect driver: its firing (re)starts a worker Chrome has stopped, and evaluating this
// module restarts polling. The setTimeout loop in discovery.js does the actual polling while the worker lives.
chrome.storage.onChanged.addListener((changes, area) => {
  if (area === 'local' && PairingStore.touches(changes)) {
    pairings.ready = pairings.reload();
    discovery.kick(0);
  }
});
chrome.alarms.onAlarm.addListener((alarm) => {
  if (alarm.name === ALARM) discovery.ensureRunning();
});
chrome.runtime.onInstalled.addListener(ensureAlarm);
chrome.runtime.onStartup.addListener(ensureAlarm);

// The popup sends this when it opens. The message itself restarts a worker Chrome has stopped, and the kick polls
// discovery at once, so opening the popup reconnects now instead of at the next alarm (up to 30 s).
chrome.runtime.onMessage.addListener((msg, sender, sendResponse) => {
  if (msg?.type === 'status' && sender.id === chrome.runtime.id) {
    discovery.kick();
    sendResponse({ servers: discovery.snapshot() });
  }
  return false;
});

async function ensureAlarm() {
  try {
    // Recreating an existing alarm would restart its period; only create it when missing.
    if (!(await chrome.alarms.get(ALARM))) await chrome.alarms.create(ALARM, { periodInMinutes: 0.5 });
  } catch (e) {
    console.warn('ai-bridge: alarm', e);
  }
}

ensureAlarm();
discovery.ensureRunning(); // first round right away, not after the first alarm
publishStatus();
