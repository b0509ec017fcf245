// Pairing with ai-bridge servers (docs/security.md, "Pairing"): the extension obeys only a server that proves it
// holds a key this browser was given — by the server's own user, never by whoever answers on a discovery port.
//
// A key is the 256-bit secret in <state-dir>/pairing.key (0600). It reaches chrome.storage.local once: over the
// private debugging pipe of a browser ai-bridge launched (the server calls globalThis.aiBridgePair), or pasted by
// the user into the popup from `ai-bridge pair`. Each key is stored under "pair:<keyId>" (one entry per key: two
// pairings at once never overwrite each other). supervisor/pairing.py computes the same key ids and proofs; a test
// runs both on the same inputs.

const CODE_PREFIX = 'aib1-';
const KEY_ID_LABEL = 'ai-bridge key id v1';
const PROOF_LABEL = 'ai-bridge server proof v1';
const ENTRY_PREFIX = 'pair:';
const KEY_ID_RE = /^[0-9a-f]{16}$/;

const utf8 = (s) => new TextEncoder().encode(s);
const hex = (bytes) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('');

/** The 32 secret bytes of a pairing code (blanks and the prefix optional); throws Error on anything else. */
export function parseCode(text) {
  let body = String(text).replace(/\s+/g, '');
  if (body.startsWith(CODE_PREFIX)) body = body.slice(CODE_PREFIX.length);
  if (!/^[A-Za-z0-9_-]{43}$/.test(body)) {
    throw new Error(`not a pairing code: copy the whole line \`ai-bridge pair\` prints (it starts with ${CODE_PREFIX})`);
  }
  const bin = atob(body.replace(/-/g, '+').replace(/_/g, '/') + '=');
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

function encodeSecret(bytes) {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

async function importKey(secret) {
  return crypto.subtle.importKey('raw', secret, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
}

async function keyIdOf(key) {
  return hex(await crypto.subtle.sign('HMAC', key, utf8(KEY_ID_LABEL))).slice(0, 16);
}

/** The key id of a pairing code (as discovery answers name keys). */
export async function keyIdForCode(code) {
  return keyIdOf(await importKey(parseCode(code)));
}

/** The worker's CryptoKey for a pairing code. */
export async function keyForCode(code) {
  return importKey(parseCode(code));
}

/** "1a2b-3c4d-5e6f-7a8b": a key id as the popup and `ai-bridge pair` show it. */
export function fingerprint(keyId) {
  return typeof keyId === 'string' && KEY_ID_RE.test(keyId) ? keyId.match(/.{4}/g).join('-') : '?';
}

/** A fresh challenge for one hello: 32 random bytes, hex. */
export function newNonce() {
  return hex(crypto.getRandomValues(new Uint8Array(32)));
}

/** Whether `proof` (hex) is the server's HMAC over our nonce, its serverId and token. Constant-time; never throws. */
export async function verifyProof(key, proof, nonce, serverId, token) {
  if (typeof proof !== 'string' || !/^[0-9a-f]{64}$/.test(proof)) return false;
  try {
    const sig = Uint8Array.from(proof.match(/.{2}/g), (h) => parseInt(h, 16));
    return await crypto.subtle.verify('HMAC', key, sig, utf8([PROOF_LABEL, nonce, serverId, token].join('\n')));
  } catch {
    return false;
  }
}

/** Store a pairing code (the popup, or the server over a launched browser's pipe) → its key id. */
export async function addPairing(code, label = '') {
  const secret = parseCode(code);
  const keyId = await keyIdOf(await importKey(secret));
  await chrome.storage.local.set({
    [ENTRY_PREFIX + keyId]: { secret: encodeSecret(secret), label: String(label).slice(0, 100), pairedAt: Date.now() },
  });
  return keyId;
}

export async function removePairing(keyId) {
  await chrome.storage.local.remove(ENTRY_PREFIX + keyId);
}

/** [{keyId, label, pairedAt}] of every stored key (never the secrets). */
export async function listPairings() {
  const all = await chrome.storage.local.get(null);
  return Object.entries(all)
    .filter(([k]) => k.startsWith(ENTRY_PREFIX))
    .map(([k, v]) => ({ keyId: k.slice(ENTRY_PREFIX.length), label: v?.label ?? '', pairedAt: v?.pairedAt ?? null }));
}

/** The worker's view of the stored keys: keyId → CryptoKey, kept current from chrome.storage.onChanged. */
export class PairingStore {
  constructor() {
    this.keys = new Map();
    this.ready = this.reload();
  }

  has(keyId) {
    return this.keys.has(keyId);
  }

  get(keyId) {
    return this.keys.get(keyId) ?? null;
  }

  /** True when `changes` (a storage.onChanged batch) touches a pairing. */
  static touches(changes) {
    return Object.keys(changes).some((k) => k.startsWith(ENTRY_PREFIX));
  }

  async reload() {
    const keys = new Map();
    try {
      const all = await chrome.storage.local.get(null);
      for (const [k, v] of Object.entries(all)) {
        if (!k.startsWith(ENTRY_PREFIX) || typeof v?.secret !== 'string') continue;
        try {
          const key = await importKey(parseCode(v.secret));
          const keyId = await keyIdOf(key);
          if (ENTRY_PREFIX + keyId === k) keys.set(keyId, key); // an entry whose name and secret disagree is ignored
        } catch (e) {
          console.warn('ai-bridge: unreadable pairing entry', k, e);
        }
      }
    } catch (e) {
      console.warn('ai-bridge: cannot read pairings', e);
    }
    this.keys = keys;
  }
}
