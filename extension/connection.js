// One WebSocket connection to one ai-bridge server (docs/protocol.md).
//
// Lifecycle: connecting -> verifying (a `welcome` came; checking its proof) -> open -> closed. A Connection object is
// never reused: after it closes, discovery.js decides whether and when to create a new one for the same server.
//
// Nothing from the server is obeyed before its welcome proves the pairing key (pairing.js): before the welcome any
// other frame closes the connection; frames that arrive while the proof is checked wait, and are dropped unread if
// it fails. Only a verified connection is registered with the executor, so only it can reach a tab.

import { CommandError } from './commands.js';
import { newNonce, verifyProof } from './pairing.js';
import SHARED from './shared.js';

// Shared with the server (shared.js is its source too; manifest.json's version_name names the protocol).
export const PROTOCOL_VERSION = SHARED.protocolVersion;
// The MV3 worker is stopped after 30 s without extension traffic; a frame we send every 20 s keeps it (and with
// it this socket) alive.
const PING_INTERVAL_MS = SHARED.extensionPingIntervalMs;
const WELCOME_TIMEOUT_MS = 10_000;
// The server pings every 15 s; hearing nothing for this long means the socket is dead without a close frame.
const SILENCE_LIMIT_MS = 60_000;
const MAX_FRAME_BYTES = SHARED.maxFrameBytes; // the server closes with 1009 above this
// Close codes after which reconnecting at once would only repeat the failure (bad token / bad hello, replaced by
// a newer connection): discovery.js waits for a changed discovery answer or 30 s.
const BACKOFF_CODES = new Set(SHARED.backoffCloseCodes.map((name) => SHARED.closeCodes[name]));
const MAX_HELD_FRAMES = 1000; // frames that may arrive while a welcome's proof is checked (milliseconds)

// This browser profile's random id, made once and kept in its storage: sent in the hello so that the server can
// tell this browser's connections from another browser's (the browser it attached to vs the user's Chrome). It
// names nothing but the profile, and only to servers that got our hello.
let browserIdPromise = null;
function browserId() {
  browserIdPromise ??= chrome.storage.local.get('browserId').then(async ({ browserId: known }) => {
    if (typeof known === 'string' && /^[0-9a-f]{32}$/.test(known)) return known;
    const made = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
    await chrome.storage.local.set({ browserId: made });
    return made;
  }).catch(() => null);
  return browserIdPromise;
}

export class Connection {
  /**
   * @param {object} o
   * @param {number} o.port         discovery port the server answered on
   * @param {object} o.info         the validated discovery answer
   * @param {CryptoKey} o.key        the pairing key discovery named (o.info.keyId): the welcome must prove it
   * @param {string} o.infoText     its JSON text (to notice a changed answer while backing off)
   * @param {import('./executor.js').Executor} o.executor
   * @param {() => void} o.onChange called on any state / error change (popup status)
   * @param {(c: Connection) => void} o.onClosed called exactly once, when the connection closes
   */
  constructor({ port, info, infoText, key, executor, onChange, onClosed }) {
    this.port = port;
    this.serverId = info.serverId;
    this.keyId = info.keyId;
    this.key = key;
    this.nonce = newNonce(); // this connection's challenge: a recorded welcome of another connection is worthless
    this.held = []; // frames received while the welcome's proof is checked
    this.untrusted = false; // the server failed to prove the pairing key
    this.proven = false; // its welcome proved the pairing key: only then does the popup show what it wrote
    this.project = typeof info.project === 'string' ? info.project : '';
    this.wsUrl = info.wsUrl;
    this.token = info.token;
    this.selfTestUrl = typeof info.selfTestUrl === 'string' ? info.selfTestUrl : null;
    this.infoText = infoText;
    this.executor = executor;
    this.onChange = onChange;
    this.onClosed = onClosed;

    this.state = 'connecting';
    this.connectedSince = null;
    this.closedAt = null;
    this.closeCode = null;
    this.lastError = null;
    this.backoff = false; // set when the close reason says "do not retry right away"
    this.lastHeardAt = 0;
    this.pingSeq = 0;
    this.ws = null;
    this.timers = [];
  }

  open() {
    try {
      this.ws = new WebSocket(this.wsUrl);
    } catch (e) {
      this._closed(null, `cannot open ${this.wsUrl}: ${e.message}`);
      return;
    }
    this.ws.onopen = async () =>
      this._send({
        type: 'hello',
        token: this.token,
        nonce: this.nonce,
        protocolVersion: PROTOCOL_VERSION,
        extensionVersion: chrome.runtime.getManifest().version,
        userAgent: navigator.userAgent,
        browserId: await browserId(),
      });
    this.ws.onmessage = (ev) => this._onFrame(ev.data);
    this.ws.onerror = () => {}; // always followed by onclose, which carries the code
    this.ws.onclose = (ev) => this._closed(ev.code, `closed by server (${ev.code}${ev.reason ? `: ${ev.reason}` : ''})`);
    this.timers.push(setTimeout(() => this.close(`no welcome within ${WELCOME_TIMEOUT_MS / 1000} s`), WELCOME_TIMEOUT_MS));
  }

  /** Idempotent. `reason` is recorded as lastError (popup) unless null. */
  close(reason = null, { backoff = false } = {}) {
    if (this.state === 'closed') return;
    if (backoff) this.backoff = true;
    try {
      this.ws?.close(1000, (reason ?? '').slice(0, 100));
    } catch {
      // already closing
    }
    this._closed(null, reason);
  }

  sendEvent(event, fields) {
    if (this.state === 'open') this._send({ type: 'event', event, ...fields });
  }

  // ---- internals -------------------------------------------------------------------------------------------------

  _closed(code, reason) {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.closedAt = Date.now();
    this.closeCode = code;
    this.connectedSince = null;
    if (BACKOFF_CODES.has(code)) this.backoff = true;
    if (reason) this.lastError = reason;
    for (const t of this.timers) clearTimeout(t); // clearTimeout also clears intervals
    this.timers = [];
    if (this.ws) this.ws.onmessage = null; // replies to in-flight commands have nowhere to go
    this.held = [];
    this.executor.release(this);
    this.onChange();
    this.onClosed(this);
  }

  _send(frame) {
    if (this.ws?.readyState !== WebSocket.OPEN) return;
    try {
      this.ws.send(JSON.stringify(frame));
    } catch (e) {
      console.warn('ai-bridge: send failed', e);
    }
  }

  _badFrame(message) {
    this._send({ type: 'error', id: null, error: { code: 'bad_frame', message } });
  }

  _onFrame(data) {
    this.lastHeardAt = Date.now();
    if (this.state === 'verifying') {
      if (this.held.length >= MAX_HELD_FRAMES) return this.close('too many frames before the welcome was verified');
      this.held.push(data);
      return undefined;
    }
    if (this.state === 'connecting') return this._beforeWelcome(data);
    if (this.state !== 'open') return undefined;
    if (typeof data !== 'string') return this._badFrame('binary frames are not supported');
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      return this._badFrame('invalid JSON');
    }
    if (msg === null || typeof msg !== 'object' || Array.isArray(msg) || typeof msg.type !== 'string') {
      return this._badFrame('a frame must be a JSON object with a string "type"');
    }
    switch (msg.type) {
      case 'ping':
        return this._send({ type: 'pong', id: msg.id });
      case 'pong':
        return undefined; // lastHeardAt is all we need
      case 'welcome':
        return undefined; // one welcome per connection
      case 'command':
        return void this._onCommand(msg);
      case 'error': {
        const e = msg.error ?? {};
        this.lastError = `server error ${e.code ?? '?'}: ${e.message ?? ''}`.slice(0, 500);
        return this.onChange();
      }
      default:
        return this._badFrame(`unknown frame type: ${msg.type.slice(0, 64)}`);
    }
  }

  /** Before the welcome: only a welcome (or an error to show) is read; anything else ends the connection. */
  _beforeWelcome(data) {
    let msg = null;
    try {
      msg = typeof data === 'string' ? JSON.parse(data) : null;
    } catch {
      // not JSON: handled below
    }
    if (msg?.type === 'welcome') return void this._onWelcome(msg);
    if (msg?.type === 'error') {
      const e = msg.error ?? {};
      this.lastError = `server error ${e.code ?? '?'}: ${e.message ?? ''}`.slice(0, 500);
      return this.onChange();
    }
    const what = typeof msg?.type === 'string' ? `a ${msg.type.slice(0, 30)} frame` : 'a malformed frame';
    return this.close(`server sent ${what} before its welcome; not obeyed`, { backoff: true });
  }

  async _onWelcome(msg) {
    if (msg.protocolVersion !== PROTOCOL_VERSION) {
      return this.close(`server welcomed with protocolVersion ${msg.protocolVersion}`, { backoff: true });
    }
    if (msg.serverId !== this.serverId) {
      return this.close(`welcome from serverId ${msg.serverId}, expected ${this.serverId}`, { backoff: true });
    }
    this.state = 'verifying';
    const ok = await verifyProof(this.key, msg.proof, this.nonce, this.serverId, this.token);
    if (this.state !== 'verifying') return undefined; // closed meanwhile
    if (!ok) {
      this.untrusted = true;
      console.warn(`ai-bridge: the server on port ${this.port} failed to prove its pairing key; not obeyed`);
      return this.close('the server could not prove it holds the pairing key: not obeyed (another user\'s ' +
        'server on a discovery port?)', { backoff: true });
    }
    for (const t of this.timers) clearTimeout(t); // the welcome timeout
    this.proven = true;
    this.state = 'open';
    this.connectedSince = Date.now();
    this.lastError = null;
    this.executor.register(this);
    this.timers = [setInterval(() => this._keepalive(), PING_INTERVAL_MS)];
    this.onChange();
    const held = this.held;
    this.held = [];
    for (const data of held) this._onFrame(data);
    return undefined;
  }

  _keepalive() {
    if (Date.now() - this.lastHeardAt > SILENCE_LIMIT_MS) {
      return this.close(`server silent for ${SILENCE_LIMIT_MS / 1000} s`);
    }
    this._send({ type: 'ping', id: ++this.pingSeq });
  }

  /** Answers the command's id exactly once, whatever happens. Never throws. */
  async _onCommand(msg) {
    const { id, method, params = {} } = msg;
    if (!Number.isInteger(id)) return this._badFrame('command id must be an integer');
    let reply;
    try {
      if (this.state !== 'open') throw new CommandError('bad_frame', 'command before welcome');
      if (typeof method !== 'string') throw new CommandError('bad_frame', 'command method must be a string');
      if (params === null || typeof params !== 'object' || Array.isArray(params)) {
        throw new CommandError('bad_params', 'params must be an object');
      }
      const result = await this.executor.handle(this, method, params);
      reply = { type: 'result', id, result: result ?? {} };
    } catch (e) {
      const code = e instanceof CommandError ? e.code : 'internal';
      reply = { type: 'error', id, error: { code, message: String(e?.message ?? e) } };
    }
    let text;
    try {
      text = JSON.stringify(reply);
    } catch (e) {
      text = JSON.stringify({ type: 'error', id, error: { code: 'internal', message: `unserialisable result: ${e}` } });
    }
    // Over the frame limit the server would drop the whole connection (1009); fail just this command instead.
    // (A UTF-16 length above limit/3 is the cheap pre-check: a JS char is at most 3 UTF-8 bytes.)
    if (text.length > MAX_FRAME_BYTES / 3 && new TextEncoder().encode(text).length > MAX_FRAME_BYTES) {
      text = JSON.stringify({
        type: 'error',
        id,
        error: { code: 'internal', message: `result too large for one frame (${text.length} chars)` },
      });
    }
    if (this.state !== 'closed' && this.ws.readyState === WebSocket.OPEN) {
      try {
        this.ws.send(text);
      } catch (e) {
        console.warn('ai-bridge: send failed', e);
      }
    }
  }
}
