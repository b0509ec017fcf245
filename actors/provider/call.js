// Calls one page action of the watcher (watcher.js) in ai-bridge's isolated world, with its arguments passed as
// values by Runtime.callFunctionOn (never spliced into source). A missing watcher (a new document) is an exception
// the server answers by installing it again.
function callWatcher(name, ...args) {
  const W = window.__aibWatcher;
  if (!W) throw new Error('ai-bridge watcher missing');
  return W[name](...args);
}
