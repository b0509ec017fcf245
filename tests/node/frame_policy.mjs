// The extension's policy for a provider tab's frames (issue 34), run by tests/test_research_frames.py under node
// beside copies of executor.js and its pure modules, with a fake `chrome` that records every debugger command.
// SANDBOX stands for the Deep Research frame's host (the test fills it in).
const calls = [];
globalThis.chrome = {
  debugger: {
    attach: async () => {}, detach: async () => {},
    sendCommand: async (target, method, params) => { calls.push([target, method, params ?? null]); return { ok: true }; },
  },
  tabs: { get: async (id) => ({ id, url: id === 8 ? 'https://gemini.google.com/app/1' : 'https://chatgpt.com/c/1',
                                 status: 'complete', windowId: 1 }) },
  runtime: { getManifest: () => ({ version: '0.5.0' }), id: 'x' },
};
const { Executor } = await import('./executor.js');
const ex = new Executor();
const conn = { state: 'open', selfTestUrl: null, sendEvent: () => {} };
ex.register(conn);
const out = {};
const run = async (name, method, params) => {
  try { out[name] = { ok: await ex.handle(conn, method, params) }; } catch (e) { out[name] = { code: e.code, message: e.message }; }
};
const frame = (tabId, sessionId, targetId, url, parent) => ex.onDebuggerEvent(parent ? { tabId, sessionId: parent } : { tabId },
  'Target.attachedToTarget', { sessionId, targetInfo: { type: 'iframe', targetId, url } });
await run('attach', 'debugger.attach', { tabId: 7 });
await run('before', 'cdp.send', { tabId: 7, method: 'Runtime.evaluate', params: { expression: '1', aibSession: 'S1' } });
await run('frames0', 'debugger.frames', { tabId: 7 });
frame(7, 'S1', 'F1', 'https://SANDBOX/?app=chatgpt');
frame(7, 'S2', 'F2', 'https://ads.example/');               // another host: let go at once
frame(7, 'S3', 'F3', '');                                     // not committed yet: kept until it commits elsewhere
ex.onDebuggerEvent({ tabId: 7, sessionId: 'S3' }, 'Page.frameNavigated', { frame: { id: 'F3', url: 'https://ads.example/' } });
frame(7, 'S4', 'F4', 'https://SANDBOX/nested', 'S1');        // nested below the frame: not a provider's
await run('frames1', 'debugger.frames', { tabId: 7 });
await run('eval', 'cdp.send', { tabId: 7, method: 'Runtime.evaluate', params: { expression: '1', aibSession: 'S1' } });
await run('world', 'cdp.send', { tabId: 7, method: 'Page.createIsolatedWorld', params: { frameId: 'F1', aibSession: 'S1' } });
for (const m of ['Input.dispatchMouseEvent', 'Page.navigate', 'DOM.setFileInputFiles', 'Network.loadNetworkResource', 'Runtime.addBinding']) {
  await run('denied ' + m, 'cdp.send', { tabId: 7, method: m, params: { aibSession: 'S1', url: 'https://SANDBOX/' } });
}
await run('foreign', 'cdp.send', { tabId: 7, method: 'Runtime.evaluate', params: { expression: '1', aibSession: 'S2' } });
await run('guard', 'cdp.send', { tabId: 7, method: 'Runtime.evaluate', params: { expression: '1', aibSession: 'S1', aibGuard: true } });
// The frame navigates to another host: its session is let go.
ex.onDebuggerEvent({ tabId: 7 }, 'Target.targetInfoChanged', { targetInfo: { targetId: 'F1', url: 'https://evil.example/' } });
await run('moved', 'cdp.send', { tabId: 7, method: 'Runtime.evaluate', params: { expression: '1', aibSession: 'S1' } });
frame(7, 'S5', 'F5', 'https://SANDBOX/?again');
await run('detach', 'debugger.detach', { tabId: 7 });
await run('after', 'cdp.send', { tabId: 7, method: 'Runtime.evaluate', params: { expression: '1', aibSession: 'S5' } });
// Gemini has no frame hosts: its tab keeps no frame at all.
await run('attach8', 'debugger.attach', { tabId: 8 });
await run('frames8a', 'debugger.frames', { tabId: 8 });
frame(8, 'G1', 'H1', 'https://SANDBOX/?app=chatgpt');
await run('frames8', 'debugger.frames', { tabId: 8 });
out.calls = calls;
console.log(JSON.stringify(out));
