// CDP executor: runs server commands against chrome.tabs / chrome.debugger.
//
// It enforces the two allowlists of docs/protocol.md (CDP methods, sites) and the per-connection tab leases: a tab
// whose debugger a connection attached belongs to that connection until it detaches, the tab closes or the
// connection closes. Other connections do not see it in tabs.query and get `tab_busy` for any command naming it.
//
// Two kinds of commands. Provider commands (no `policy` param) may only touch the provider sites. General-tool
// commands carry the server's domain policy (`policy: {hosts: [...]}`); for them the tab's current URL, and any
// navigation target, must pass that policy before any chrome.debugger call, and only GENERAL_CDP_METHODS are
// allowed. A lease remembers its kind: a provider tab is never driven by a general command and vice versa, even from
// the same server. Tabs a connection opens for the general tools, and tabs their pages open, are *claimed* by that
// connection (other servers neither see nor touch them). While a general lease holds a tab, main-frame document
// requests are intercepted here (Fetch) and those to a host outside the policy are blocked before they are sent.
//
// The commands themselves (their parameters checked, the CDP method allowlists, one handler each) are in commands.js;
// this file holds the leases, the attach, the checks before each chrome.debugger call, and the events.
import { CommandError, HANDLERS, checkGuard, denied, siteAllowed } from './commands.js';
import { GENERAL_STRING_MAX_CHARS, capEvent, capString } from './limits.js';
import { frameHostAllowed, isBlankUrl, policyHost, urlAllowed } from './policy.js';
import SHARED from './shared.js';

// Methods that leave a page without reading it: allowed on a tab whose current URL the policy denies (so a tool can
// navigate away from a blocked page), as long as the destination passes. Network.enable reads nothing by itself:
// a navigation's networkidle wait needs its events (the server keeps no request a denied document made).
const LEAVING_METHODS = new Set(['Page.navigate', 'Page.navigateToHistoryEntry', 'Page.handleJavaScriptDialog',
  'Page.bringToFront', 'Network.enable']);
// Elements that hold a document of their own (extension-side checks of where input and pixels land).
const FRAME_OWNERS = new Set(['IFRAME', 'FRAME', 'OBJECT', 'EMBED', 'FENCEDFRAME']);

// Out-of-process frames (cross-site iframes) are auto-attached as child sessions of a general lease: the server may
// read and drive one whose own URL the policy allows. Bounded: frames nested deeper, or more of them, stay sealed.
const MAX_FRAME_DEPTH = 3;
const MAX_FRAMES = 64;
// What a general command may send to a frame's session: its page script, and the look-ups that find its frames.
const FRAME_METHODS = new Set(['Runtime.evaluate', 'Runtime.callFunctionOn', 'Page.createIsolatedWorld',
  'Page.getFrameTree', 'DOM.getFrameOwner', 'DOM.resolveNode', 'DOM.setFileInputFiles']);
const AUTO_ATTACH = { autoAttach: true, waitForDebuggerOnStart: false, flatten: true };

const isBlank = (url) => !url || url === 'about:blank';

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
    /** tabId -> connection: tabs opened for a connection's general tools (or by their pages), leased or not */
    this.claims = new Map();
  }

  /** Called once per connection when its handshake completes. */
  register(conn) {
    if (!this.known.has(conn)) this.known.set(conn, new Set());
  }

  /** Called when a connection closes: drop its bookkeeping and detach the tabs it leased. */
  release(conn) {
    this.known.delete(conn);
    for (const [tabId, owner] of this.claims) if (owner === conn) this.claims.delete(tabId);
    for (const [tabId, lease] of this.leases) {
      if (lease.conn !== conn) continue;
      this.leases.delete(tabId);
      lease.children?.clear();  // the tab's detach below ends its frames' child sessions with it
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
    const lease = this.leases.get(tab.id);
    return {
      tabId: tab.id,
      url: tab.url || tab.pendingUrl || '',
      title: tab.title ?? '',
      status: tab.status ?? 'unknown',
      active: Boolean(tab.active),
      windowId: tab.windowId,
      attachedByMe: lease?.conn === conn,
      leaseKind: lease?.conn === conn ? lease.kind : null,
      claimedByMe: this.claims.get(tab.id) === conn,
    };
  }

  /** A tab as a general command may see it: a tab outside the policy shows no title (page data), and no URL
   * either unless it is this connection's own (claimed, or leased by its providers). */
  _generalInfo(tab, conn, policy) {
    const info = this._info(tab, conn);
    info.allowed = urlAllowed(policy, info.url);
    if (!info.allowed) {
      info.title = '';
      if (!info.claimedByMe && !info.leaseKind) info.url = '';
    }
    // An about:blank page has the origin of whoever made it (a denied frame can open one and fill it): its title is
    // page data we cannot vouch for here.
    if (isBlankUrl(info.url)) info.title = '';
    return info;
  }

  /** A new tab whose opener is one of a connection's general tabs is claimed by that connection. */
  _claimByOpener(tab) {
    if (tab.openerTabId === undefined || this.claims.has(tab.id) || this.leases.has(tab.id)) return;
    const lease = this.leases.get(tab.openerTabId);
    const owner = lease?.kind === 'general' ? lease.conn : this.claims.get(tab.openerTabId);
    if (owner === undefined || owner.state === 'closed') return;
    this.claims.set(tab.id, owner);
    this.known.get(owner)?.add(tab.id);
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
    const claim = this.claims.get(tabId);
    if (claim && claim !== conn) throw new CommandError('tab_busy', `tab ${tabId} belongs to another server`);
  }

  /** A provider command may not touch a general lease of its own server, nor a general command a provider's. */
  _sameKind(lease, policy) {
    const kind = policy ? 'general' : 'provider';
    if (lease && lease.kind !== kind) {
      throw new CommandError('tab_busy', policy ? 'that tab belongs to a provider (an ask tab)'
        : 'that tab belongs to the general browser tools');
    }
  }

  /** The caller's lease on an attached tab (waits for a still-running attach). */
  async _myLease(conn, tabId, policy = null, anyKind = false) {
    this._notBusy(conn, tabId);
    const lease = this.leases.get(tabId);
    if (!lease) throw new CommandError('not_attached', `debugger is not attached to tab ${tabId}`);
    if (!anyKind) this._sameKind(lease, policy);
    try {
      await lease.ready;
    } catch {
      throw new CommandError('not_attached', `debugger is not attached to tab ${tabId}`);
    }
    if (this.leases.get(tabId) !== lease) throw new CommandError('not_attached', `tab ${tabId} was detached`);
    return lease;
  }

  /** Tabs the connection may activate/close: on the site allowlist, or ones it created/attached itself. */
  async _drivableTab(conn, tabId, policy = null) {
    this._notBusy(conn, tabId);
    const tab = await this._getTab(tabId);
    if (policy) {
      // The general tools activate or close only the tabs they hold: claimed (opened for them) or leased by them.
      const lease = this.leases.get(tabId);
      this._sameKind(lease, policy);
      if (this.claims.get(tabId) !== conn && !lease) {
        throw new CommandError('tab_busy', `tab ${tabId} is not held by this server's browser tools`);
      }
      return tab;
    }
    if (this.claims.has(tabId)) throw new CommandError('tab_busy', 'that tab belongs to the general browser tools');
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
        // Not ours to detach: DevTools (or another extension) holds the tab. Retrying cannot help.
        throw new CommandError('devtools_open', message);
      }
    }
  }

  /** Attach for the general tools: the debugger, then this tab's navigation guard (Page events for the URL at
   * commit, the main frame's id, Fetch interception of document requests). The lease is ready after all of it. */
  async _attachGeneral(tabId, lease) {
    await this._attach(tabId);
    const target = { tabId };
    try {
      await chrome.debugger.sendCommand(target, 'Page.enable');
      const tree = await chrome.debugger.sendCommand(target, 'Page.getFrameTree');
      lease.mainFrameId = tree?.frameTree?.frame?.id ?? null;
      await chrome.debugger.sendCommand(target, 'Fetch.enable', {
        patterns: [{ urlPattern: '*', resourceType: 'Document', requestStage: 'Request' }],
      });
    } catch (e) {
      throw new CommandError('cdp_error', String(e?.message ?? e));
    }
    // Cross-site frames as child sessions (Chrome 125+). Without them the tools still work; such frames stay sealed.
    await chrome.debugger.sendCommand(target, 'Target.setAutoAttach', AUTO_ATTACH).catch(() => {});
  }

  /** A provider lease's frames on its site's frame hosts (issue 34), each {sessionId, frameId, url}. The first call
   * turns on auto-attach for the tab (frames then attach as they come, and the others are let go at once): a
   * frame that shows up later is listed by a later call. */
  async _providerFrames(conn, tabId) {
    const lease = await this._myLease(conn, tabId, null);
    if (!siteAllowed(lease.url, conn.selfTestUrl)) {
      throw new CommandError('site_not_allowed', `tab ${tabId} is not on the site allowlist: ${lease.url}`);
    }
    lease.autoAttach ??= chrome.debugger.sendCommand({ tabId }, 'Target.setAutoAttach', AUTO_ATTACH);
    try {
      await lease.autoAttach;
    } catch (e) {
      lease.autoAttach = null;  // the next call tries again
      throw new CommandError('cdp_error', String(e?.message ?? e));
    }
    const frames = [];
    for (const [sessionId, c] of lease.children) {
      if (c.url && frameHostAllowed(SHARED.providers, lease.url, c.url)) frames.push({ sessionId, frameId: c.targetId, url: c.url });
    }
    return { frames };
  }

  /** A child session of the lease (an out-of-process frame), or a typed error when it is gone. */
  _child(lease, sessionId) {
    const child = lease.children?.get(sessionId);
    if (!child) {
      throw new CommandError('no_such_frame', 'that frame is no longer in the page (it navigated to another site, '
        + 'or was removed)');
    }
    return child;
  }

  /** The policy check of a command to a frame's session: the method is one a frame may get, and the frame's own URL
   * (kept at every commit) passes the policy, as must the tab's. */
  _checkFrame(lease, tabId, child, method, policy) {
    if (!urlAllowed(policy, lease.url) || isBlankUrl(lease.url)) throw denied(`tab ${tabId}`, lease.url);
    if (!FRAME_METHODS.has(method)) throw new CommandError('method_not_allowed', `not allowed in a frame: ${method}`);
    if (policyHost(child.url) === null || !urlAllowed(policy, child.url)) throw denied('the frame', child.url);
  }

  /** Check and send one command of a general cdp.send / cdp.batch, on the tab or on one of its frames. */
  async _sendGeneral(lease, tabId, { method, params: cdpParams, guard, session }, policy) {
    if (session !== null) this._checkFrame(lease, tabId, this._child(lease, session), method, policy);
    else await this._checkGeneral(lease, tabId, method, cdpParams, policy);
    // A screenshot's guard: the frame tree is read alongside the page's own check (both after the capture).
    const frames = guard?.shot === true ? this._anyFrames(session ? { tabId, sessionId: session } : { tabId }, lease,
      session) : null;
    frames?.catch(() => {}); // (awaited below unless the page's check failed first)
    const result = await this._send(tabId, method, cdpParams, session);
    if (guard) await this._guard(tabId, lease, guard, checkGuard(result), policy, session, frames);
    return result;
  }

  /** Target.attachedToTarget / detachedFromTarget / targetInfoChanged of a general lease (on the tab's session, or
   * a frame's for a frame inside it): keep each cross-site frame's session, URL and parent. Nothing is forwarded. */
  _onChild(source, lease, method, params) {
    const parent = source.sessionId ?? null;
    if (method === 'Target.detachedFromTarget') {
      lease?.children?.delete(params.sessionId);
      return;
    }
    if (method === 'Target.targetInfoChanged') {
      // A frame is attached before its first commit (no URL yet); this says where it is, at every commit.
      const info = params.targetInfo ?? {};
      for (const [sid, c] of lease?.children ?? []) {
        if (c.targetId === info.targetId && typeof info.url === 'string') {
          c.url = capString(info.url);
          this._dropForeignFrame(lease, sid, c);
        }
      }
      return;
    }
    const { sessionId, targetInfo = {} } = params;
    if (typeof sessionId !== 'string') return;
    const child = { tabId: source.tabId, sessionId };
    const up = parent === null ? null : lease?.children?.get(parent);
    const depth = up ? up.depth + 1 : 1;
    const provider = lease?.kind === 'provider';
    const maxDepth = provider ? 1 : MAX_FRAME_DEPTH;
    if (!lease || targetInfo.type !== 'iframe' || (parent !== null && !up) || depth > maxDepth
        || lease.children.size >= MAX_FRAMES
        || (provider && targetInfo.url && !frameHostAllowed(SHARED.providers, lease.url, targetInfo.url))) {
      // Something that may show in the page (not a worker) and goes unobserved: screenshots count the frames again.
      if (lease?.kind === 'general' && !/work(er|let)$/.test(String(targetInfo.type ?? ''))) lease.unseenTargets = true;
      // A worker, a frame too deep, or no lease of ours: let it run unobserved.
      chrome.debugger.sendCommand({ tabId: source.tabId, ...(parent ? { sessionId: parent } : {}) },
        'Target.detachFromTarget', { sessionId }).catch(() => {});
      return;
    }
    lease.children.set(sessionId, {
      targetId: String(targetInfo.targetId ?? ''), url: capString(String(targetInfo.url ?? '')), parent, depth,
      tabId: source.tabId,
    });
    // Page events keep its URL current at every commit; its own cross-site frames attach below it.
    chrome.debugger.sendCommand(child, 'Page.enable').catch(() => {});
    if (depth < maxDepth) chrome.debugger.sendCommand(child, 'Target.setAutoAttach', AUTO_ATTACH).catch(() => {});
  }

  /** A provider tab keeps a frame's child session only while the frame is on its provider's frame hosts: a frame
   * attached before its first commit is let go as soon as it commits anywhere else. */
  _dropForeignFrame(lease, sessionId, child) {
    if (lease.kind !== 'provider' || !child.url || frameHostAllowed(SHARED.providers, lease.url, child.url)) return;
    lease.children.delete(sessionId);
    chrome.debugger.sendCommand({ tabId: child.tabId }, 'Target.detachFromTarget', { sessionId }).catch(() => {});
  }

  /** An event of a frame's session: only its commits are used (its URL for the policy). */
  _onChildEvent(source, lease, method, params) {
    const child = lease?.children?.get(source.sessionId);
    if (!child || method !== 'Page.frameNavigated') return;
    const frame = params.frame ?? {};
    if (frame.id === child.targetId) {
      child.url = capString(String(frame.unreachableUrl || frame.url || ''));
      this._dropForeignFrame(lease, source.sessionId, child);
    }
  }

  /** The origin of the tab's about:blank document, read in a world of our own (the page cannot fake it there). */
  async _blankOrigin(tabId, subframeId = null, sessionId = null) {
    const target = sessionId ? { tabId, sessionId } : { tabId };
    try {
      const tree = subframeId ? null : await chrome.debugger.sendCommand(target, 'Page.getFrameTree');
      const frameId = subframeId ?? tree?.frameTree?.frame?.id;
      const world = await chrome.debugger.sendCommand(target, 'Page.createIsolatedWorld',
        { frameId, worldName: 'ai-bridge-policy', grantUniveralAccess: false });
      const got = await chrome.debugger.sendCommand(target, 'Runtime.evaluate',
        { expression: 'String(self.origin)', contextId: world.executionContextId, returnByValue: true });
      return typeof got?.result?.value === 'string' ? got.result.value : 'null';
    } catch (e) {
      throw new CommandError('cdp_error', String(e?.message ?? e));
    }
  }

  /** The policy check of one general CDP command, on the tab's URL now and on where it would go. */
  async _checkGeneral(lease, tabId, method, cdpParams, policy) {
    if (!LEAVING_METHODS.has(method) && !urlAllowed(policy, lease.url)) throw denied(`tab ${tabId}`, lease.url);
    if (!LEAVING_METHODS.has(method) && isBlankUrl(lease.url)) {
      // about:blank inherits the origin of the page that opened (or wrote) it: judge it by that origin. A document's
      // origin never changes, so it is read once per document (a commit or a URL change forgets it).
      lease.blankOrigin ??= await this._blankOrigin(tabId);
      const origin = lease.blankOrigin;
      if (policyHost(origin) !== null && !urlAllowed(policy, origin)) {
        throw denied(`tab ${tabId} (about:blank made by ${origin})`, origin);
      }
    }
    if (method === 'Page.navigate' && !urlAllowed(policy, cdpParams.url)) throw denied('navigation target', cdpParams.url);
    if (method === 'Page.navigateToHistoryEntry') {
      let entry;
      try {
        const history = await chrome.debugger.sendCommand({ tabId }, 'Page.getNavigationHistory');
        entry = history?.entries?.find((e) => e.id === cdpParams.entryId);
      } catch (e) {
        throw new CommandError('cdp_error', String(e?.message ?? e));
      }
      if (!entry) throw new CommandError('bad_params', `no history entry ${cdpParams.entryId}`);
      if (!urlAllowed(policy, entry.url)) throw denied('history entry', entry.url);
    }
  }

  /** After a page guard said yes: what the page script cannot see, checked through the DOM domain. A point must
   * not land on a frame owner (a cross-process frame) or inside a frame outside the policy; a screenshot, or keys
   * whose focus the page could not place, must not meet a frame inside a closed shadow root. */
  async _guard(tabId, lease, guard, verdict, policy, session = null, frames = null) {
    const target = session ? { tabId, sessionId: session } : { tabId };
    const root = session ? this._child(lease, session).targetId : lease.mainFrameId;
    const send = async (method, params = {}) => {
      try {
        return (await chrome.debugger.sendCommand(target, method, params)) ?? {};
      } catch (e) {
        throw new CommandError('cdp_error', `${method}: ${String(e?.message ?? e)}`);
      }
    };
    // A page with no frame at all holds none in a closed shadow root either: the census (the whole DOM, pierced:
    // several ms on a large page) is then skipped. A frame of this process is in the frame tree (a closed shadow
    // root's too); a cross-site one has a session (lease.children) or was refused one (lease.unseenTargets).
    const census = (guard.shot === true || (guard.focus === true && verdict === 'unseen'))
      && await (frames ?? this._anyFrames(target, lease, session));
    if (!guard.point && !census) return;
    await send('DOM.enable');
    try {
      if (guard.point) {
        // Input points are in the viewport; getNodeForLocation hit-tests in document coordinates.
        const metrics = await send('Page.getLayoutMetrics');
        const view = metrics.cssLayoutViewport ?? metrics.layoutViewport ?? {};
        let hit = null;
        try {
          hit = await chrome.debugger.sendCommand(target, 'DOM.getNodeForLocation', {
            x: Math.round(guard.point.x + (view.pageX ?? 0)), y: Math.round(guard.point.y + (view.pageY ?? 0)),
            includeUserAgentShadowDOM: false, ignorePointerEventsNone: true,
          });
        } catch (e) {
          // Nothing there (outside the document): nothing a frame could receive.
          if (!/No node found/i.test(String(e?.message ?? e))) throw new CommandError('cdp_error', String(e?.message ?? e));
        }
        const { node } = hit ? await send('DOM.describeNode', { backendNodeId: hit.backendNodeId }) : { node: null };
        // A frame owner the server named (guard.frames: the frame ids on the way to the element) is entered when
        // the frame is a cross-site frame of this lease whose own URL the policy allows.
        const into = FRAME_OWNERS.has(node?.nodeName) && Array.isArray(guard.frames) && guard.frames.includes(node.frameId)
          ? [...lease.children.values()].find((c) => c.targetId === node.frameId) : null;
        if (into && !(policyHost(into.url) !== null && urlAllowed(policy, into.url))) throw denied('the frame', into.url);
        if (FRAME_OWNERS.has(node?.nodeName) && !into) {
          throw new CommandError('policy_denied', `the point (${Math.round(guard.point.x)}, ${Math.round(guard.point.y)}) `
            + `is on a <${node.nodeName.toLowerCase()}> whose document the browser tools may not read: input there is refused`);
        }
        if (hit?.frameId && hit.frameId !== root) {
          const frame = findFrame((await send('Page.getFrameTree')).frameTree, hit.frameId);
          const url = frame?.url ?? '';
          // about:blank and about:srcdoc frames are their creator's document: judged by their origin only, read in
          // the frame itself (the frame tree says '://' for a srcdoc one); an opaque one, a sandboxed frame's, is
          // refused.
          const inherits = frame && (isBlankUrl(url) || url === 'about:srcdoc');
          const origin = inherits ? await this._blankOrigin(tabId, frame.id, session) : frame?.securityOrigin ?? '';
          const ok = frame && (inherits ? policyHost(origin) !== null && urlAllowed(policy, origin)
            : urlAllowed(policy, url) && (policyHost(origin) === null || urlAllowed(policy, origin)));
          if (!ok) throw denied(`the point (${Math.round(guard.point.x)}, ${Math.round(guard.point.y)}) is in a frame that`, url || 'an unknown frame');
        }
      }
      if (census) {
        const doc = await send('DOM.getDocument', { depth: -1, pierce: true });
        const hidden = closedShadowFrames(doc.root);
        if (hidden) {
          throw new CommandError('policy_denied', `the page holds ${hidden} frame(s) inside closed shadow roots, where `
            + `the browser tools cannot tell whose they are: ${guard.shot ? 'screenshot' : 'key input'} refused`);
        }
      }
    } finally {
      await send('DOM.disable').catch(() => {});
    }
  }

  /** Whether the document of `target` (the tab's, or a frame session's) may hold a frame: any child frame in its
   * frame tree, a frame session of the tab, or a target the tab's lease refused to observe since its last commit. */
  async _anyFrames(target, lease, session) {
    if (session !== null || lease.children.size > 0 || lease.unseenTargets) return true;
    try {
      const tree = await chrome.debugger.sendCommand(target, 'Page.getFrameTree');
      const root = tree?.frameTree;
      return !root || (root.childFrames?.length ?? 0) > 0;
    } catch (e) {
      throw new CommandError('cdp_error', `Page.getFrameTree: ${String(e?.message ?? e)}`);
    }
  }

  async _send(tabId, method, cdpParams, sessionId = null) {
    try {
      // Verbatim; e.g. Runtime.evaluate of `undefined` has no result.value and that is passed on as is.
      return (await chrome.debugger.sendCommand(sessionId ? { tabId, sessionId } : { tabId }, method, cdpParams)) ?? {};
    } catch (e) {
      throw new CommandError('cdp_error', String(e?.message ?? e));
    }
  }

  // ---- chrome event sinks (the listeners themselves are registered at top level in background.js) ------------

  onDebuggerEvent(source, method, params) {
    if (source.tabId === undefined) return;
    const lease = this.leases.get(source.tabId);
    if (method === 'Target.attachedToTarget' || method === 'Target.detachedFromTarget'
        || method === 'Target.targetInfoChanged') {
      return this._onChild(source, lease, method, params ?? {});
    }
    // A frame's session: kept for the policy checks, never forwarded (the server's tab state is the top document's).
    if (source.sessionId) return this._onChildEvent(source, lease, method, params ?? {});
    if (method === 'Fetch.requestPaused') return this._onRequestPaused(source.tabId, lease, params ?? {});
    if (method === 'Page.frameNavigated' && lease?.kind === 'general' && params?.frame && !params.frame.parentId) {
      // At commit, before the new document runs anything: the URL every later check of this tab uses.
      lease.url = params.frame.unreachableUrl || params.frame.url;
      lease.mainFrameId = params.frame.id;
      lease.blankOrigin = null;
      lease.unseenTargets = false; // the old document's targets go with it
    }
    if (lease?.subs.has(method)) {
      // A page decides how big an event is (a console string of 5 MB, a 1 MB script URL): cut it to fit one frame.
      const maxString = lease.kind === 'general' ? GENERAL_STRING_MAX_CHARS : Infinity;
      lease.conn.sendEvent('cdp', { tabId: source.tabId, method, params: capEvent(params ?? {}, undefined, maxString) });
    }
  }

  /** The general tools' navigation guard: a main-frame document request to a denied host is failed before it is
   * sent (a redirect hop is paused like the first request). Anything else continues at once. */
  _onRequestPaused(tabId, lease, params) {
    const target = { tabId };
    const { requestId } = params;
    const go = (method, extra = {}) =>
      chrome.debugger.sendCommand(target, method, { requestId, ...extra }).catch(() => {});
    if (lease?.kind !== 'general') {
      // The lease is gone (a restarted worker lost it, or the tab was released): stop intercepting this tab.
      go('Fetch.continueRequest');
      chrome.debugger.sendCommand(target, 'Fetch.disable').catch(() => {});
      return;
    }
    const url = params.request?.url ?? '';
    const mainFrame = params.resourceType === 'Document' && params.frameId === lease.mainFrameId;
    if (mainFrame && !urlAllowed(lease.policy, url)) {
      go('Fetch.failRequest', { errorReason: 'BlockedByClient' });
      lease.conn.sendEvent('policyBlocked', { tabId, url: url.slice(0, 2000) });
    } else {
      go('Fetch.continueRequest');
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
    this.claims.delete(tabId);
    for (const [conn, tabs] of this.known) {
      if (tabs.delete(tabId)) conn.sendEvent('tabClosed', { tabId });
    }
    this.leases.delete(tabId); // normally onDetach already did this
  }

  onTabUpdated(tabId, changeInfo, tab) {
    for (const check of this.waiters.get(tabId) ?? []) check();
    this._claimByOpener(tab);
    const lease = this.leases.get(tabId);
    if (lease && changeInfo.url !== undefined) {
      lease.url = changeInfo.url;
      lease.blankOrigin = null;
    }
    if (!('url' in changeInfo) && !('status' in changeInfo)) return; // title/favicon/audible noise
    for (const [conn, tabs] of this.known) {
      if (tabs.has(tabId)) {
        conn.sendEvent('tabUpdated', { tabId, url: capString(tab.url || tab.pendingUrl || ''), status: tab.status });
      }
    }
  }
}

function findFrame(tree, id) {
  if (!tree) return null;
  if (tree.frame?.id === id) return tree.frame;
  for (const child of tree.childFrames ?? []) {
    const found = findFrame(child, id);
    if (found) return found;
  }
  return null;
}

/** How many frame owners live inside closed shadow roots (DOM.getDocument with pierce: every shadow root and every
 * in-process frame's document are in the tree). */
function closedShadowFrames(root) {
  let count = 0;
  const stack = [[root, false]];
  while (stack.length) {
    const [node, closed] = stack.pop();
    if (!node) continue;
    if (closed && FRAME_OWNERS.has(node.nodeName)) count++;
    for (const child of node.children ?? []) stack.push([child, closed]);
    for (const sr of node.shadowRoots ?? []) stack.push([sr, closed || sr.shadowRootType === 'closed']);
    if (node.contentDocument) stack.push([node.contentDocument, closed]);
  }
  return count;
}
