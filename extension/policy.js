// The domain policy of the general browser tools (docs/security.md), as the extension checks it.
//
// The server sends its allowed host patterns with every general-tool command; the extension checks the tab's
// current URL (and a navigation's target) against them before any chrome.debugger call. Pure functions without
// chrome.* so that tests can run them under node next to the server's copy (actors/browser_tools/policy.py): the
// two must agree on every URL.
//
// Patterns: `*` (every http/https host), `example.com` (that host only), `*.example.com` (example.com and every
// subdomain, as in Chrome's match patterns). Hosts compare in lower case, ports are ignored. Only http: and https:
// URLs can be allowed, plus about:blank (an empty page has nothing to read).

const LABEL = '[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?';
const HOST_RE = new RegExp(`^${LABEL}(\\.${LABEL})*$`);
const MAX_PATTERNS = 256;

/** A policy object from a command's `policy` param, or null when it is malformed. */
export function parsePolicy(raw) {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const { hosts } = raw;
  if (!Array.isArray(hosts) || hosts.length > MAX_PATTERNS) return null;
  const out = [];
  for (const p of hosts) {
    if (typeof p !== 'string') return null;
    const pattern = p.toLowerCase();
    const bare = pattern.startsWith('*.') ? pattern.slice(2) : pattern;
    if (pattern !== '*' && !HOST_RE.test(bare) && !/^\[[0-9a-f:.]+\]$/.test(bare)) return null;
    out.push(pattern);
  }
  return { hosts: out };
}

/** The host a URL may be judged by, or null when no policy can allow it (not http/https). */
export function policyHost(url) {
  let u;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  const host = u.hostname.toLowerCase();
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

export function isBlankUrl(url) {
  return url === 'about:blank' || (typeof url === 'string' && url.startsWith('about:blank#'));
}

export function hostAllowed(policy, host) {
  for (const p of policy.hosts) {
    if (p === '*') return true;
    if (p.startsWith('*.')) {
      const base = p.slice(2);
      if (host === base || host.endsWith(`.${base}`)) return true;
    } else if (host === p) {
      return true;
    }
  }
  return false;
}

/** May the general tools touch a page at `url`? */
export function urlAllowed(policy, url) {
  if (isBlankUrl(url)) return true;
  const host = policyHost(url);
  return host !== null && hostAllowed(policy, host);
}

/** The host of an https URL on the default port without user info, in lower case (null for any other URL). */
function httpsHost(url) {
  let u;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== 'https:' || u.username || u.password || u.port) return null;
  return u.hostname.toLowerCase();
}

/** The provider (as shared.js has it) whose site a tab on `tabUrl` shows, or null. */
function siteOf(providers, tabUrl) {
  let tab;
  try {
    tab = new URL(tabUrl);
  } catch {
    return null;
  }
  return Object.values(providers).find((p) => p.origins.includes(tab.origin)) ?? null;
}

const onHosts = (host, hosts) => host !== null && (hosts || []).some((h) => host === h || host.endsWith('.' + h));

/** Whether a provider tab on `tabUrl` may load `url` as an answer's file (issue 35): https on the default port, on
 * its provider's file hosts (`providers` as shared.js has them) or a subdomain of one. The server checks the same
 * (actors/provider/files_back.py). */
export function fileHostAllowed(providers, tabUrl, url) {
  const site = siteOf(providers, tabUrl);
  return !!site && onHosts(httpsHost(url), site.fileHosts);
}

/** Whether a provider tab on `tabUrl` may read a cross-site frame at `url` through a child session (issue 34: the
 * report of ChatGPT's Deep Research): https on the default port, on its provider's frame hosts or a subdomain of one.
 * The server checks the same (actors/provider/frames.py). */
export function frameHostAllowed(providers, tabUrl, url) {
  const site = siteOf(providers, tabUrl);
  return !!site && onHosts(httpsHost(url), site.frameHosts);
}
