// CDP executor: runs server commands against chrome.tabs / chrome.debugger.
//
// It enforces the two allowlists of docs/protocol.md (CDP methods, sites) and the per-connection tab leases: a tab
// whose debugger a connection attached belongs to that connection until it detaches, the tab closes or the
// connection closes. Other connections do not see it in tabs.query and get `tab_busy` for any command naming it.

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
]);

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

const isBlank = (url) => !url || url === 'about:blank';

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

export class Executor {
  constructor() {
    /**
     * tabId -> {conn, ready: Promise (the chrome.debugger.attach), subs: Set of forwarded CDP event methods,
     *           url: the tab's current URL, kept by onTabUpdated (a chrome.tabs.get per cdp.send cost ~2 ms)}
     */
    this.leases = new Map();
    /** connection -> Set of tabIds it attached or created (it gets tabClosed / tabUpdated for them) */
    this.known = new Map();
    /** tabId -> Set of re-check callbacks of pending tabs.create waits */
    this.waiters = new Map();
  }

  /** Called once per connection when its handshake completes. */
  register(conn) {
    if (!this.known.has(conn)) this.known.set(conn, new Set());
  }

  /** Called when a connection closes: drop its bookkeeping and detach the tabs it leased. */
  release(conn) {
    this.known.delete(conn);
    for (const [tabId, lease] of this.leases) {
      if (lease.conn !== conn) continue;
      this.leases.delete(tabId);
      // Detach so the tab is free for the server's next connection (it would otherwise get tab_busy / "already
      // attached"). Failures only mean it is already gone.
      lease.ready.then(() => chrome.debugger.detach({ tabId })).catch(() => {});
    }
  }

  /** Run one command; returns the result object or throws (CommandError for protocol errors). */
  async handle(conn, method, params) {
    if (!Object.hasOwn(HANDLERS, method)) throw new CommandError('unknown_method', `unknown method: ${method}`);
    return HANDLERS[method].call(this, conn, params);
  }

  // ---- helpers -------------------------------------------------------------------------------------------------

  _info(tab, conn) {
    return {
      tabId: tab.id,
      url: tab.url || tab.pendingUrl || '',
      title: tab.title ?? '',
      status: tab.status ?? 'unknown',
      active: Boolean(tab.active),
      windowId: tab.windowId,
      attachedByMe: this.leases.get(tab.id)?.conn === conn,
    };
  }

  async _getTab(tabId) {
    try {
      return await chrome.tabs.get(tabId);
    } catch {
      throw new CommandError('no_such_tab', `no tab with id ${tabId}`);
    }
  }

  _notBusy(conn, tabId) {
    const lease = this.leases.get(tabId);
    if (lease && lease.conn !== conn) throw new CommandError('tab_busy', `tab ${tabId} is leased by another server`);
  }

  /** The caller's lease on an attached tab (waits for a still-running attach). */
  async _myLease(conn, tabId) {
    this._notBusy(conn, tabId);
    const lease = this.leases.get(tabId);
    if (!lease) throw new CommandError('not_attached', `debugger is not attached to tab ${tabId}`);
    try {
      await lease.ready;
    } catch {
      throw new CommandError('not_attached', `debugger is not attached to tab ${tabId}`);
    }
    if (this.leases.get(tabId) !== lease) throw new CommandError('not_attached', `tab ${tabId} was detached`);
    return lease;
  }

  /** Tabs the connection may activate/close: on the site allowlist, or ones it created/attached itself. */
  async _drivableTab(conn, tabId) {
    this._notBusy(conn, tabId);
    const tab = await this._getTab(tabId);
    if (!siteAllowed(tab.url || tab.pendingUrl, conn.selfTestUrl) && !this.known.get(conn)?.has(tabId)) {
      throw new CommandError('site_not_allowed', `tab ${tabId} is not on the site allowlist`);
    }
    return tab;
  }

  /** Resolves with the tab once it is complete with a non-blank URL, or as it is after `timeoutMs`. */
  _waitLoaded(tabId, timeoutMs) {
    return new Promise((resolve, reject) => {
      let done = false;
      let set = this.waiters.get(tabId);
      if (!set) this.waiters.set(tabId, (set = new Set()));
      const finish = (fn, value) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        set.delete(check);
        if (set.size === 0 && this.waiters.get(tabId) === set) this.waiters.delete(tabId);
        fn(value);
      };
      // Re-read the tab rather than trusting one onUpdated payload: url and status arrive in separate events.
      const check = async (final = false) => {
        try {
          const tab = await chrome.tabs.get(tabId);
          if (final || (tab.status === 'complete' && !isBlank(tab.url))) finish(resolve, tab);
        } catch {
          finish(reject, new CommandError('no_such_tab', `tab ${tabId} closed while loading`));
        }
      };
      const timer = setTimeout(() => check(true), timeoutMs);
      set.add(check);
      check();
    });
  }

  async _attach(tabId) {
    try {
      await chrome.debugger.attach({ tabId }, '1.3');
    } catch (e) {
      const message = String(e?.message ?? e);
      if (!/already attached/i.test(message)) throw new CommandError('cdp_error', message);
      // A session of ours may have survived a service-worker restart (the lease table did not). detach() only
      // succeeds for this extension's own sessions, so DevTools or another extension is never kicked off.
      try {
        await chrome.debugger.detach({ tabId });
        await chrome.debugger.attach({ tabId }, '1.3');
      } catch {
        throw new CommandError('cdp_error', message);
      }
    }
  }

  // ---- chrome event sinks (the listeners themselves are registered at top level in background.js) ------------

  onDebuggerEvent(source, method, params) {
    if (source.tabId === undefined || source.sessionId) return; // child sessions: never requested
    const lease = this.leases.get(source.tabId);
    if (lease?.subs.has(method)) {
      lease.conn.sendEvent('cdp', { tabId: source.tabId, method, params: params ?? {} });
    }
  }

  onDebuggerDetach(source, reason) {
    const lease = this.leases.get(source.tabId);
    if (!lease) return;
    this.leases.delete(source.tabId);
    lease.conn.sendEvent('detached', { tabId: source.tabId, reason });
  }

  onTabRemoved(tabId) {
    for (const check of this.waiters.get(tabId) ?? []) check();
    for (const [conn, tabs] of this.known) {
      if (tabs.delete(tabId)) conn.sendEvent('tabClosed', { tabId });
    }
    this.leases.delete(tabId); // normally onDetach already did this
  }

  onTabUpdated(tabId, changeInfo, tab) {
    for (const check of this.waiters.get(tabId) ?? []) check();
    const lease = this.leases.get(tabId);
    if (lease && changeInfo.url !== undefined) lease.url = changeInfo.url;
    if (!('url' in changeInfo) && !('status' in changeInfo)) return; // title/favicon/audible noise
    for (const [conn, tabs] of this.known) {
      if (tabs.has(tabId)) conn.sendEvent('tabUpdated', { tabId, url: tab.url || tab.pendingUrl || '', status: tab.status });
    }
  }
}

// ---- command handlers (`this` is the Executor) ------------------------------------------------------------------

const HANDLERS = {
  async 'ext.info'(conn) {
    const attached = [...this.leases].filter(([, l]) => l.conn === conn).map(([tabId]) => tabId);
    return { version: chrome.runtime.getManifest().version, extensionId: chrome.runtime.id, attached };
  },

  async 'tabs.query'(conn, params) {
    const patterns = stringList(params.urlPatterns, 'urlPatterns');
    if (patterns.length === 0) return { tabs: [] }; // chrome.tabs.query({url: []}) would list every tab
    let tabs;
    try {
      tabs = await chrome.tabs.query({ url: patterns });
    } catch (e) {
      throw new CommandError('bad_params', String(e?.message ?? e)); // e.g. an invalid match pattern
    }
    return {
      tabs: tabs.filter((t) => (this.leases.get(t.id)?.conn ?? conn) === conn).map((t) => this._info(t, conn)),
    };
  },

  async 'tabs.get'(conn, params) {
    const tabId = tabIdOf(params);
    this._notBusy(conn, tabId);
    return { tab: this._info(await this._getTab(tabId), conn) };
  },

  async 'tabs.create'(conn, params) {
    const { url, newWindow = false } = params;
    if (typeof url !== 'string') throw new CommandError('bad_params', 'url must be a string');
    if (typeof newWindow !== 'boolean') throw new CommandError('bad_params', 'newWindow must be a boolean');
    if (!siteAllowed(url, conn.selfTestUrl)) throw new CommandError('site_not_allowed', `url not allowed: ${url}`);
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
    return { tab: this._info(await this._waitLoaded(tab.id, CREATE_WAIT_MS), conn) };
  },

  async 'tabs.activate'(conn, params) {
    const tab = await this._drivableTab(conn, tabIdOf(params));
    await chrome.tabs.update(tab.id, { active: true });
    await chrome.windows.update(tab.windowId, { focused: true });
    return {};
  },

  async 'tabs.close'(conn, params) {
    const tab = await this._drivableTab(conn, tabIdOf(params));
    try {
      await chrome.tabs.remove(tab.id);
    } catch {
      throw new CommandError('no_such_tab', `no tab with id ${tab.id}`);
    }
    return {};
  },

  async 'debugger.attach'(conn, params) {
    const tabId = tabIdOf(params);
    this._notBusy(conn, tabId);
    const tab = await this._getTab(tabId);
    if (!siteAllowed(tab.url || tab.pendingUrl, conn.selfTestUrl)) {
      throw new CommandError('site_not_allowed', `tab ${tabId} is not on the site allowlist`);
    }
    // Re-check after the await: take the lease synchronously *before* attaching so that a concurrent attach from
    // another connection sees tab_busy instead of racing us inside chrome.debugger.
    this._notBusy(conn, tabId);
    const existing = this.leases.get(tabId);
    if (existing) {
      await this._myLease(conn, tabId);
      return {};
    }
    const lease = { conn, ready: this._attach(tabId), subs: new Set(), url: tab.url };
    this.leases.set(tabId, lease);
    try {
      await lease.ready;
      lease.url = (await this._getTab(tabId)).url; // in case it navigated before the lease existed
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
    return {};
  },

  async 'debugger.detach'(conn, params) {
    const tabId = tabIdOf(params);
    this._notBusy(conn, tabId);
    const lease = this.leases.get(tabId);
    if (!lease) return {};
    this.leases.delete(tabId);
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
    const { method, params: cdpParams = {} } = params;
    if (typeof method !== 'string') throw new CommandError('bad_params', 'method must be a string');
    if (!isPlainObject(cdpParams)) throw new CommandError('bad_params', 'params must be an object');
    if (!CDP_METHODS.has(method)) throw new CommandError('method_not_allowed', `CDP method not allowed: ${method}`);
    const lease = await this._myLease(conn, tabId);
    // The tab may have navigated since the attach: check where it is now, and where it is being sent.
    if (!siteAllowed(lease.url, conn.selfTestUrl)) {
      throw new CommandError('site_not_allowed', `tab ${tabId} is not on the site allowlist: ${lease.url}`);
    }
    if (method === 'Page.navigate' && !siteAllowed(cdpParams.url, conn.selfTestUrl)) {
      throw new CommandError('site_not_allowed', `navigation target not allowed: ${cdpParams.url}`);
    }
    try {
      // Verbatim; e.g. Runtime.evaluate of `undefined` has no result.value and that is passed on as is.
      return (await chrome.debugger.sendCommand({ tabId }, method, cdpParams)) ?? {};
    } catch (e) {
      throw new CommandError('cdp_error', String(e?.message ?? e));
    }
  },

  async 'cdp.subscribe'(conn, params) {
    const tabId = tabIdOf(params);
    const methods = stringList(params.methods, 'methods');
    const lease = await this._myLease(conn, tabId);
    lease.subs = new Set(methods);
    return {};
  },
};
