// The commands a server may send the extension: their parameters checked (tab ids, string lists, the domain
// policy), the CDP method allowlists, and one handler per command (`this` is the Executor, executor.js: the
// handlers reach tabs only through its leases and checks). docs/protocol.md lists the commands.

import { fileHostAllowed, frameHostAllowed, isBlankUrl, parsePolicy, policyHost, urlAllowed } from './policy.js';
import SHARED from './shared.js';

/** An error with a protocol error code; anything else thrown by a handler is reported as `internal`. */
export class CommandError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

const PROVIDER_ORIGINS = new Set(Object.values(SHARED.providers).flatMap((p) => p.origins));

export const CDP_METHODS = new Set([
  'Runtime.evaluate', 'Runtime.callFunctionOn', 'Runtime.addBinding', 'Runtime.removeBinding', 'Runtime.enable',
  'Runtime.disable', 'Runtime.releaseObject',
  'Page.enable', 'Page.disable', 'Page.bringToFront', 'Page.navigate', 'Page.reload', 'Page.captureScreenshot',
  'Page.getFrameTree', 'Page.createIsolatedWorld', 'Page.addScriptToEvaluateOnNewDocument',
  'Page.removeScriptToEvaluateOnNewDocument',
  'Input.insertText', 'Input.dispatchKeyEvent', 'Input.dispatchMouseEvent',
  'Accessibility.getFullAXTree', 'DOM.getDocument', 'DOM.describeNode',
  'DOM.setFileInputFiles',  // provider tabs only: an ask's files, which the server checked are the project's
  // Gemini makes its file input only when its upload menu opens a chooser: the chooser is intercepted (no dialog)
  // and the files set on the node it names (issue 35). Nothing wider: no DOM writes, no file reads.
  'Page.setInterceptFileChooserDialog',
  // An answer's generated images and files (issue 35): loaded with the tab's cookies from its provider's own file
  // hosts only (fileHosts in shared.js, checked below), read back in slices, the stream closed.
  'Network.loadNetworkResource', 'IO.read', 'IO.close',
]);

/** What the general browser tools may send (actors/browser_tools): page scripts in an isolated world, input,
 * navigation and history, dialogs, screenshots, console and network events. Nothing else (shared.js: a test checks
 * it is exactly what the server's tools send). */
export const GENERAL_CDP_METHODS = new Set(SHARED.generalCdpMethods);

// A provider tab's cross-site frames (issue 34: ChatGPT's Deep Research report): only frames on its provider's
// frameHosts (shared.js) keep a child session, one level deep, and get only these: a world of our own, and our page
// script run in it (to read the report and press the plan's start button). Nothing else reaches such a frame.
const PROVIDER_FRAME_METHODS = new Set(['Page.createIsolatedWorld', 'Runtime.evaluate', 'Runtime.callFunctionOn']);

const MAX_BATCH = 64;
const CREATE_WAIT_MS = 30_000;

/** Provider origins, plus the commanding server's own self-test page (exact origin, path prefix /selftest). */
export function siteAllowed(url, selfTestUrl) {
  let u;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (PROVIDER_ORIGINS.has(u.origin)) return true;
  if (typeof selfTestUrl !== 'string') return false;
  try {
    const s = new URL(selfTestUrl);
    return u.origin === s.origin && u.pathname.startsWith('/selftest');
  } catch {
    return false;
  }
}

function isPlainObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function tabIdOf(params) {
  const { tabId } = params;
  if (!Number.isInteger(tabId) || tabId < 0) throw new CommandError('bad_params', 'tabId must be a non-negative integer');
  return tabId;
}

function stringList(value, name) {
  if (!Array.isArray(value) || !value.every((s) => typeof s === 'string')) {
    throw new CommandError('bad_params', `${name} must be an array of strings`);
  }
  return value;
}

/** The command's domain policy, or null for a provider command. */
function policyOf(params) {
  if (params.policy === undefined) return null;
  const policy = parsePolicy(params.policy);
  if (policy === null) throw new CommandError('bad_params', 'policy must be {"hosts": [host patterns]}');
  return policy;
}

export function denied(what, url) {
  return new CommandError('policy_denied', `${what} is outside the allowed domains: ${String(url).slice(0, 300)}`);
}

// ---- command handlers (`this` is the Executor) ------------------------------------------------------------------

/** One CDP command of a cdp.send / cdp.batch. A `Runtime.evaluate` with `aibGuard: true` in its params is a
 * *guard* (never sent with that key): it must evaluate to true, else the batch stops there with policy_denied — the
 * server's page script checks that input or a capture right after it cannot reach a sealed frame or a denied URL. */
function cdpCommand(c) {
  if (!isPlainObject(c)) throw new CommandError('bad_params', 'each command must be {"method", "params"}');
  const { method, params: raw = {} } = c;
  if (typeof method !== 'string') throw new CommandError('bad_params', 'method must be a string');
  if (!isPlainObject(raw)) throw new CommandError('bad_params', 'params must be an object');
  const { aibGuard, aibSession, ...params } = raw;
  // aibSession: the command goes to that frame's session (a cross-site frame of the tab) instead of the tab's.
  if (aibSession !== undefined && typeof aibSession !== 'string') throw new CommandError('bad_params', 'aibSession must be a string');
  let guard = null;
  if (aibGuard !== undefined) {
    if (method !== 'Runtime.evaluate') throw new CommandError('bad_params', 'aibGuard is only for Runtime.evaluate');
    // true, or what the extension checks itself after the page's guard: {point: {x, y}}, {focus: true}, {shot: true}
    if (aibGuard === true) guard = {};
    else if (isPlainObject(aibGuard)) guard = aibGuard;
    else throw new CommandError('bad_params', 'aibGuard must be true or an object');
    const p = guard.point;
    if (p !== undefined && !(isPlainObject(p) && Number.isFinite(p.x) && Number.isFinite(p.y))) {
      throw new CommandError('bad_params', 'aibGuard.point must be {x, y} numbers');
    }
    if (guard.frames !== undefined) guard.frames = stringList(guard.frames, 'aibGuard.frames');
  }
  return { method, params, guard, session: aibSession ?? null };
}

/** The page's guard verdict: true, 'unseen' (the page script cannot tell; the extension looks itself), or a refusal. */
export function checkGuard(result) {
  const value = result?.result?.value;
  if (value === true || value === 'unseen') return value;
  const why = typeof value === 'string' ? value
    : `the check failed (${JSON.stringify(result?.exceptionDetails?.text ?? result?.result ?? null).slice(0, 200)})`;
  throw new CommandError('policy_denied', why.slice(0, 1000));
}

export const HANDLERS = {
  async 'ext.info'(conn) {
    const attached = [...this.leases].filter(([, l]) => l.conn === conn).map(([tabId]) => tabId);
    return { version: chrome.runtime.getManifest().version, extensionId: chrome.runtime.id, attached };
  },

  async 'tabs.query'(conn, params) {
    const policy = policyOf(params);
    const mine = (t) => (this.leases.get(t.id)?.conn ?? conn) === conn && (this.claims.get(t.id) ?? conn) === conn;
    if (policy) {
      // Every web tab this connection may know of: its own, its providers', and the ones nobody holds. Other
      // servers' tabs are left out; pages of other schemes (chrome://, extensions) are never offered.
      const out = [];
      for (const t of await chrome.tabs.query({})) {
        this._claimByOpener(t);
        const url = t.url || t.pendingUrl || '';
        if (!mine(t) || !(isBlankUrl(url) || /^https?:/i.test(url) || this.claims.get(t.id) === conn)) continue;
        out.push(this._generalInfo(t, conn, policy));
      }
      return { tabs: out };
    }
    const patterns = stringList(params.urlPatterns, 'urlPatterns');
    if (patterns.length === 0) return { tabs: [] }; // chrome.tabs.query({url: []}) would list every tab
    let tabs;
    try {
      tabs = await chrome.tabs.query({ url: patterns });
    } catch (e) {
      throw new CommandError('bad_params', String(e?.message ?? e)); // e.g. an invalid match pattern
    }
    return { tabs: tabs.filter((t) => mine(t) && !this.claims.has(t.id)).map((t) => this._info(t, conn)) };
  },

  async 'tabs.get'(conn, params) {
    const tabId = tabIdOf(params);
    const policy = policyOf(params);
    this._notBusy(conn, tabId);
    const tab = await this._getTab(tabId);
    return { tab: policy ? this._generalInfo(tab, conn, policy) : this._info(tab, conn) };
  },

  async 'tabs.create'(conn, params) {
    const { url, newWindow = false, waitMs = CREATE_WAIT_MS } = params;
    const policy = policyOf(params);
    if (typeof url !== 'string') throw new CommandError('bad_params', 'url must be a string');
    if (typeof newWindow !== 'boolean') throw new CommandError('bad_params', 'newWindow must be a boolean');
    if (!Number.isInteger(waitMs) || waitMs < 0 || waitMs > CREATE_WAIT_MS) {
      throw new CommandError('bad_params', `waitMs must be an integer from 0 to ${CREATE_WAIT_MS}`);
    }
    if (policy ? !urlAllowed(policy, url) : !siteAllowed(url, conn.selfTestUrl)) {
      throw policy ? denied('url', url) : new CommandError('site_not_allowed', `url not allowed: ${url}`);
    }
    let tab;
    if (newWindow) {
      // A window of its own keeps the page visible (visibilityState 'visible') whatever else is in front.
      const win = await chrome.windows.create({ url, focused: false });
      tab = win.tabs?.[0];
      if (!tab) throw new CommandError('internal', 'windows.create returned no tab');
    } else {
      tab = await chrome.tabs.create({ url, active: true });
    }
    this.known.get(conn)?.add(tab.id);
    if (policy) {
      // The general tools navigate it themselves (with their own load wait): return at once.
      this.claims.set(tab.id, conn);
      return { tab: this._generalInfo(tab, conn, policy) };
    }
    // Wait for the load at most waitMs, then answer with the tab as it is: a reply after the server gave up
    // would leave a window nobody owns (a heavy page, e.g. a long conversation, can take longer to load).
    return { tab: this._info(await this._waitLoaded(tab.id, waitMs), conn) };
  },

  async 'tabs.activate'(conn, params) {
    const tab = await this._drivableTab(conn, tabIdOf(params), policyOf(params));
    await chrome.tabs.update(tab.id, { active: true });
    // A minimized window keeps its tabs hidden (no text rendered) even when focused: restore it first.
    const win = await chrome.windows.get(tab.windowId);
    await chrome.windows.update(tab.windowId, win.state === 'minimized' ? { state: 'normal', focused: true } : { focused: true });
    return {};
  },

  async 'tabs.close'(conn, params) {
    const tab = await this._drivableTab(conn, tabIdOf(params), policyOf(params));
    try {
      await chrome.tabs.remove(tab.id);
    } catch {
      throw new CommandError('no_such_tab', `no tab with id ${tab.id}`);
    }
    return {};
  },

  async 'debugger.attach'(conn, params) {
    const tabId = tabIdOf(params);
    const policy = policyOf(params);
    this._notBusy(conn, tabId);
    const tab = await this._getTab(tabId);
    const url = tab.url || tab.pendingUrl;
    if (policy) {
      if (!urlAllowed(policy, url)) throw denied(`tab ${tabId}`, url);
    } else {
      if (this.claims.has(tabId)) throw new CommandError('tab_busy', 'that tab belongs to the general browser tools');
      if (!siteAllowed(url, conn.selfTestUrl)) {
        throw new CommandError('site_not_allowed', `tab ${tabId} is not on the site allowlist`);
      }
    }
    // Re-check after the await: take the lease synchronously *before* attaching so that a concurrent attach from
    // another connection sees tab_busy instead of racing us inside chrome.debugger.
    this._notBusy(conn, tabId);
    const done = async () => (policy ? { tab: this._generalInfo(await this._getTab(tabId), conn, policy) } : {});
    const existing = this.leases.get(tabId);
    if (existing) {
      await this._myLease(conn, tabId, policy);
      if (policy) existing.policy = policy;
      if (policy && params.claim === true && !this.claims.has(tabId)) this.claims.set(tabId, conn);
      return done();
    }
    const lease = {
      conn, ready: null, subs: new Set(), url: tab.url || tab.pendingUrl, kind: policy ? 'general' : 'provider', policy,
      mainFrameId: null, blankOrigin: null, children: new Map(), unseenTargets: false,
    };
    lease.ready = policy ? this._attachGeneral(tabId, lease) : this._attach(tabId);
    this.leases.set(tabId, lease);
    try {
      await lease.ready;
      // In case it navigated before the lease existed. A tab still loading its first document has only a
      // pendingUrl (its initial empty document holds nothing to read); onUpdated replaces it when that commits.
      const now = await this._getTab(tabId);
      lease.url = now.url || now.pendingUrl;
      // A connection that closed meanwhile was already released; a lease kept now would block the tab forever.
      if (conn.state === 'closed') throw new CommandError('internal', 'connection closed during attach');
    } catch (e) {
      if (this.leases.get(tabId) === lease) {
        this.leases.delete(tabId);
        lease.ready.then(() => chrome.debugger.detach({ tabId })).catch(() => {});
      }
      throw e;
    }
    this.known.get(conn)?.add(tabId);
    // `claim`: a tab the server's tools opened before this connection existed (the extension reconnected).
    if (policy && params.claim === true && !this.claims.has(tabId)) this.claims.set(tabId, conn);
    return done();
  },

  async 'debugger.detach'(conn, params) {
    const tabId = tabIdOf(params);
    const policy = policyOf(params);
    this._notBusy(conn, tabId);
    const lease = this.leases.get(tabId);
    if (!lease) return {};
    this._sameKind(lease, policy);
    this.leases.delete(tabId);
    lease.children?.clear();  // detaching the tab ends its frames' child sessions
    try {
      await lease.ready;
      await chrome.debugger.detach({ tabId });
    } catch {
      // already detached (tab closed, attach failed): detach is idempotent
    }
    return {};
  },

  async 'cdp.send'(conn, params) {
    const tabId = tabIdOf(params);
    const policy = policyOf(params);
    const command = cdpCommand(params);
    const { method, params: cdpParams, guard, session } = command;
    if (guard && !policy) throw new CommandError('bad_params', 'a guard is a general-tool command: it needs a policy');
    if (session !== null && !policy && !PROVIDER_FRAME_METHODS.has(method)) {
      throw new CommandError('method_not_allowed', `not allowed in a provider's frame: ${method}`);
    }
    if (!(policy ? GENERAL_CDP_METHODS : CDP_METHODS).has(method)) {
      throw new CommandError('method_not_allowed', `CDP method not allowed: ${method}`);
    }
    const lease = await this._myLease(conn, tabId, policy);
    if (policy) {
      lease.policy = policy;
      return this._sendGeneral(lease, tabId, command, policy);
    }
    if (session !== null) {
      // A provider's frame (issue 34): the tab on its site, the frame (at its last commit) on the site's frame hosts.
      const child = this._child(lease, session);
      if (!siteAllowed(lease.url, conn.selfTestUrl)) {
        throw new CommandError('site_not_allowed', `tab ${tabId} is not on the site allowlist: ${lease.url}`);
      }
      if (!frameHostAllowed(SHARED.providers, lease.url, child.url)) {
        throw new CommandError('site_not_allowed', `not a frame host of this site: ${String(child.url).slice(0, 200)}`);
      }
      return this._send(tabId, method, cdpParams, session);
    }
    // The tab may have navigated since the attach: check where it is now, and where it is being sent.
    if (!siteAllowed(lease.url, conn.selfTestUrl)) {
      throw new CommandError('site_not_allowed', `tab ${tabId} is not on the site allowlist: ${lease.url}`);
    }
    if (method === 'Page.navigate' && !siteAllowed(cdpParams.url, conn.selfTestUrl)) {
      throw new CommandError('site_not_allowed', `navigation target not allowed: ${cdpParams.url}`);
    }
    if (method === 'Network.loadNetworkResource' && !fileHostAllowed(SHARED.providers, lease.url, cdpParams && cdpParams.url)) {
      throw new CommandError('site_not_allowed', `not a file host of this site: ${String(cdpParams && cdpParams.url).slice(0, 200)}`);
    }
    return this._send(tabId, method, cdpParams);
  },

  /** General tools only: several CDP commands in order, in one frame (an input sequence, a screenshot after
   * bringing the tab to front). Each is checked like a cdp.send right before it is sent; the first failure ends the
   * batch with its error. */
  async 'cdp.batch'(conn, params) {
    const tabId = tabIdOf(params);
    const policy = policyOf(params);
    if (!policy) throw new CommandError('bad_params', 'cdp.batch is a general-tool command: it needs a policy');
    const { commands } = params;
    if (!Array.isArray(commands) || commands.length === 0 || commands.length > MAX_BATCH) {
      throw new CommandError('bad_params', `commands must be an array of 1 to ${MAX_BATCH} commands`);
    }
    const list = commands.map(cdpCommand);
    for (const { method } of list) {
      if (!GENERAL_CDP_METHODS.has(method)) throw new CommandError('method_not_allowed', `CDP method not allowed: ${method}`);
    }
    const lease = await this._myLease(conn, tabId, policy);
    lease.policy = policy;
    const results = [];
    for (const command of list) results.push(await this._sendGeneral(lease, tabId, command, policy));
    return { results };
  },

  /** General tools only: the tab's cross-site frames (child sessions) whose own URL the policy allows — each with
   * its session, frame id and the session of the frame it is in (null: the tab's). */
  async 'debugger.frames'(conn, params) {
    const tabId = tabIdOf(params);
    const policy = policyOf(params);
    if (!policy) return this._providerFrames(conn, tabId);
    const lease = await this._myLease(conn, tabId, policy);
    lease.policy = policy;
    await this._checkGeneral(lease, tabId, 'Page.getFrameTree', {}, policy);
    const frames = [];
    for (const [sessionId, c] of lease.children) {
      if (policyHost(c.url) === null || !urlAllowed(policy, c.url)) continue;
      frames.push({ sessionId, frameId: c.targetId, parentSessionId: c.parent, url: c.url });
    }
    return { frames };
  },

  async 'cdp.subscribe'(conn, params) {
    const tabId = tabIdOf(params);
    const methods = stringList(params.methods, 'methods');
    // Only forwards events of the caller's own lease, of either kind (the relay subscribes for every actor).
    const lease = await this._myLease(conn, tabId, null, true);
    lease.subs = new Set(methods);
    return {};
  },
};
