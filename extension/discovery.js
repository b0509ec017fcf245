// Server discovery: poll GET http://127.0.0.1:<port>/mcp-discovery on the ports of shared.js and keep one
// Connection per live serverId (docs/protocol.md).
//
// Any local user can answer on these ports. A server whose discovery answer names a pairing key this browser does
// not hold (pairing.js) is listed for the popup as "unpaired" and never connected to: not even the hello is sent.
// Until a server has proved its pairing key, the popup shows nothing it wrote (no project name, no key, none of its
// error texts): only "an unknown server on port N" and what this extension says about it, so that no text of
// another user's server can talk the user into pasting a code. Discovery answers are read up to MAX_ANSWER_BYTES.
//
// Polling is a setTimeout loop while the worker lives: every 1 s while no server is connected, every 5 s once one
// is. When Chrome stops the worker the loop dies with it; background.js's alarm wakes the worker, module
// evaluation starts the loop again.

import { Connection, PROTOCOL_VERSION } from './connection.js';
import { fingerprint } from './pairing.js';
import SHARED from './shared.js';

const { first, last } = SHARED.discoveryPorts;
export const PORTS = Array.from({ length: last - first + 1 }, (_, i) => first + i);
const FAST_MS = 1_000;
const SLOW_MS = 5_000;
const FETCH_TIMEOUT_MS = 500;
const BACKOFF_MS = 30_000;
const FORGET_MS = 5 * 60_000; // a closed server that stopped answering leaves the popup after this
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);
const HEX_ID = /^[0-9a-f]{16,128}$/; // serverId and token: the proof's message joins them with newlines
const MAX_ANSWER_BYTES = 4096; // a real answer is about 450 bytes; a larger one is refused unread
const UNPAIRED_HINT = 'not paired with this browser. If it is yours, run `ai-bridge pair` in your own terminal and ' +
  'paste the code it prints below; a server never asks you for a code';
// What the popup says of a server that has not proved its pairing key, by state: our words, never the server's.
const UNPROVEN_TEXT = {
  unpaired: UNPAIRED_HINT,
  refused: 'its discovery answer is not one this extension accepts (another version, or not ai-bridge)',
  untrusted: 'it could not prove it holds a pairing key of this browser: not obeyed (another user\'s server?)',
  'backing off': 'it broke the protocol before proving its pairing key: not obeyed',
  closed: 'the connection ended before the server proved its pairing key',
  connecting: 'checking its pairing key',
  verifying: 'checking its pairing key',
};

/** The parsed discovery answer on `port`, or null (nothing listening, not 200, not JSON, too slow). */
async function probe(port) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), FETCH_TIMEOUT_MS);
  try {
    const resp = await fetch(`http://127.0.0.1:${port}${SHARED.discoveryPath}`, {
      signal: ctl.signal, // also bounds reading the body
      credentials: 'omit',
      cache: 'no-store',
      redirect: 'error',
    });
    return resp.ok ? await readCapped(resp) : null;
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}

/** The response's JSON, read up to MAX_ANSWER_BYTES (a local process decides how much it sends); null if larger. */
export async function readCapped(resp) {
  const declared = Number(resp.headers.get('content-length'));
  if (declared > MAX_ANSWER_BYTES) return null;
  const reader = resp.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_ANSWER_BYTES) {
      reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return JSON.parse(new TextDecoder().decode(bytes));
}

/** Why a discovery answer is unusable, or null if it is fine. (Our words only: it may be shown in the popup.) */
function problemWith(info) {
  if (info === null || typeof info !== 'object' || Array.isArray(info)) return 'discovery answer is not an object';
  if (info.protocolVersion !== PROTOCOL_VERSION) return `not protocol version ${PROTOCOL_VERSION}`;
  for (const key of ['wsUrl', 'token', 'serverId']) {
    if (typeof info[key] !== 'string' || !info[key]) return `discovery answer lacks ${key}`;
  }
  if (typeof info.keyId !== 'string' || !/^[0-9a-f]{16}$/.test(info.keyId)) {
    return 'the server names no pairing key (an ai-bridge older than this extension: update it)';
  }
  if (!HEX_ID.test(info.serverId) || !HEX_ID.test(info.token)) return 'serverId and token must be hex';
  let url;
  try {
    url = new URL(info.wsUrl);
  } catch {
    return 'its wsUrl is not a URL';
  }
  // The token is only ever sent to a loopback socket, whatever a discovery answer says.
  if (url.protocol !== 'ws:' || !LOOPBACK_HOSTS.has(url.hostname)) return 'its wsUrl is not a loopback ws:// URL';
  return null;
}

export class Discovery {
  /** @param {{executor: object, pairings: import('./pairing.js').PairingStore, onChange: () => void}} o */
  constructor({ executor, pairings, onChange }) {
    this.executor = executor;
    this.pairings = pairings;
    this.onChange = onChange;
    /** serverId -> Connection (the live one, or the last closed one: kept for backoff and the popup) */
    this.conns = new Map();
    /** port -> {port, serverId, project, lastError} for answers we refuse (e.g. another protocol version) */
    this.refused = new Map();
    this.timer = null;
    this.nextAt = Infinity;
    this.polling = false;
    this.hurry = false;
  }

  /** Start the loop unless it is running (worker start, alarm). */
  ensureRunning() {
    if (this.timer === null && !this.polling) this._schedule(0);
  }

  /** Poll again within `ms` (a connection closed: reconnect via polling). */
  kick(ms = FAST_MS) {
    if (this.polling) this.hurry = true;
    else if (this.nextAt > Date.now() + ms) this._schedule(ms);
  }

  /** Rows for the popup. A server that has not proved its pairing key is `unknown`: its row holds nothing it wrote
   * (the serverId, hex-checked, stays for the server that reads these rows over its pipe; the popup shows none). */
  snapshot() {
    const rows = [...this.conns.values()].map((c) => {
      const state = c.untrusted ? 'untrusted' : c.state === 'closed' && c.backoff ? 'backing off' : c.state;
      if (!c.proven) {
        return { serverId: c.serverId, unknown: true, project: '', port: c.port, key: '', state,
          connectedSince: null, lastError: UNPROVEN_TEXT[state] ?? '' };
      }
      return { serverId: c.serverId, project: c.project, port: c.port, key: fingerprint(c.keyId), state,
        connectedSince: c.connectedSince, lastError: c.lastError };
    });
    for (const r of this.refused.values()) {
      const state = r.state ?? 'refused';
      rows.push({ serverId: r.serverId, unknown: true, project: '', port: r.port, key: '', state,
        connectedSince: null, lastError: state === 'refused' ? `${UNPROVEN_TEXT.refused}: ${r.lastError}`
          : UNPROVEN_TEXT[state] ?? '' });
    }
    return rows.sort((a, b) => a.port - b.port || String(a.serverId).localeCompare(String(b.serverId)));
  }

  _anyOpen() {
    for (const c of this.conns.values()) if (c.state === 'open') return true;
    return false;
  }

  _schedule(ms) {
    clearTimeout(this.timer);
    this.nextAt = Date.now() + ms;
    this.timer = setTimeout(() => this._poll(), ms);
  }

  async _poll() {
    this.timer = null;
    this.nextAt = Infinity;
    this.polling = true;
    try {
      await this.pairings.ready;
      const answers = await Promise.all(PORTS.map(probe));
      this._reconcile(answers);
    } catch (e) {
      console.warn('ai-bridge: discovery round failed', e); // never let the loop die
    } finally {
      this.polling = false;
      const interval = this._anyOpen() ? SLOW_MS : FAST_MS;
      this._schedule(this.hurry ? Math.min(interval, FAST_MS) : interval);
      this.hurry = false;
    }
  }

  _reconcile(answers) {
    const now = Date.now();
    answers.forEach((info, i) => {
      const port = PORTS[i];
      if (info === null) {
        this.refused.delete(port);
        return;
      }
      const problem = problemWith(info);
      if (problem) {
        const serverId = typeof info?.serverId === 'string' && HEX_ID.test(info.serverId) ? info.serverId : null;
        this.refused.set(port, { port, serverId, lastError: problem });
        return;
      }
      const key = this.pairings.get(info.keyId);
      if (key === null) {
        // Shown, never obeyed: whoever runs it, this browser was not given its key.
        this.refused.set(port, { port, serverId: info.serverId, state: 'unpaired' });
        const old = this.conns.get(info.serverId);
        if (old && old.state !== 'closed') old.close('its pairing was removed');
        return;
      }
      this.refused.delete(port);
      this._offer(port, info, key, now);
    });
    for (const [id, c] of this.conns) {
      if (c.state === 'closed' && now - c.lastSeenAt > FORGET_MS) this.conns.delete(id);
    }
    this.onChange();
  }

  /** A valid discovery answer: make sure exactly one suitable connection to that server exists. */
  _offer(port, info, key, now) {
    const infoText = JSON.stringify(info);
    const old = this.conns.get(info.serverId);
    if (old) {
      old.lastSeenAt = now;
      const sameEndpoint = old.wsUrl === info.wsUrl && old.token === info.token && old.keyId === info.keyId;
      if (old.state !== 'closed') {
        if (sameEndpoint) return;
        old.close('server restarted on a new wsUrl/token'); // replaced below
      } else if (old.backoff && old.infoText === infoText && now - old.closedAt < BACKOFF_MS) {
        return; // do not hammer a server that refused us; retry when its answer changes or after 30 s
      } else if (old.untrusted && now - old.closedAt < BACKOFF_MS) {
        return; // a server that failed the proof gets no new attempt for 30 s, whatever its answer says now
      }
    }
    const conn = new Connection({
      port,
      info,
      infoText,
      key,
      executor: this.executor,
      onChange: this.onChange,
      onClosed: () => this.kick(),
    });
    conn.lastSeenAt = now;
    conn.lastError = old?.lastError ?? null; // keep showing why the previous attempt failed
    this.conns.set(info.serverId, conn);
    conn.open();
  }
}
