// One redesign at a time (issue 37): PageOptions.mutation names a change the real sites make every few weeks, and
// every fake applies it as it builds the page, each still a page a person could use. The apps' element factory
// (h) passes every element through `drifted`; the answer's rendering and the stop control ask `driftKind()`.
// Kinds:
//   testids    every data-testid / data-test-id value renamed (suffix -v2)
//   classes    the answer content's classes renamed (markdown → md-content, prose → md-prose, markdown-main-panel →
//              md-main)
//   labels     the controls' aria-labels reworded (Stop streaming → Halt answer, Send prompt → Submit, …)
//   icons      Gemini's Material icon names changed (thumb_up → recommend, mic → keyboard_voice, send → arrow_upward,
//              stop → stop_circle, content_copy → copy_all)
//   unnamed    Gemini's icons drawn as inline svg with no name at all
//   wrappers   extra wrapper elements around the answer's content and the user's messages
//   split      the answer shown as two content blocks: its text, then its code
//   editor     the composer's editor replaced (a Lexical-style contenteditable[role=textbox], no id or editor class)
//   elements   the turns' elements renamed (Gemini user-query → user-turn, model-response → model-turn, message-content
//              → msg-content; ChatGPT article → section, data-message-author-role → data-author; Claude
//              data-is-streaming → data-streaming-state; Perplexity #markdown-content-N → #answer-body-N)
//   dialog     a "What's new" dialog over the page on load, closed by its button or Escape
function driftKind() {
  return (typeof BOOT !== 'undefined' && BOOT.mutation) || '';
}

const DRIFT_LABELS = {
  'Stop streaming': 'Halt answer', 'Stop generating': 'Halt answer', 'Stop response': 'Halt answer',
  'Send prompt': 'Submit', 'Send message': 'Submit', Copy: 'Duplicate text', 'Good response': 'Like',
  'Bad response': 'Dislike', Microphone: 'Voice input', 'Dictate button': 'Voice typing', 'Start Voice': 'Talk',
  // the three newer sites (issue 40)
  'Stop model response': 'Halt answer', Stop: 'Halt', Submit: 'Ask', 'Give positive feedback': 'Good answer',
  'Give negative feedback': 'Poor answer', Helpful: 'Useful', 'Not helpful': 'Not useful', Rewrite: 'Redo',
  Regenerate: 'Redo', Like: 'Thumbs up', Dislike: 'Thumbs down',
};
const DRIFT_ICONS = { thumb_up: 'recommend', thumb_down: 'thumb_down_alt', mic: 'keyboard_voice', send: 'arrow_upward',
  stop: 'stop_circle', content_copy: 'copy_all' };
const DRIFT_CLASSES = { markdown: 'md-content', prose: 'md-prose', 'markdown-main-panel': 'md-main',
  'standard-markdown': 'md-standard', 'progressive-markdown': 'md-progressive',
  'response-content-markdown': 'md-response' };
const DRIFT_TAGS = { 'user-query': 'user-turn', 'model-response': 'model-turn', 'message-content': 'msg-content',
  article: 'section' };

// [tag, attrs] as the drifted site writes them.
function drifted(tag, attrs) {
  const kind = driftKind();
  if (!kind || !attrs) return [kind === 'elements' && DRIFT_TAGS[tag] ? DRIFT_TAGS[tag] : tag, attrs];
  const out = { ...attrs };
  if (kind === 'testids') {
    for (const k of ['data-testid', 'data-test-id']) if (typeof out[k] === 'string' && out[k]) out[k] += '-v2';
  } else if (kind === 'classes' && typeof out.class === 'string') {
    out.class = out.class.split(/\s+/).map((c) => DRIFT_CLASSES[c] || c).join(' ');
  } else if (kind === 'labels' && typeof out['aria-label'] === 'string' && DRIFT_LABELS[out['aria-label']]) {
    out['aria-label'] = DRIFT_LABELS[out['aria-label']];
  } else if (kind === 'elements') {
    if ('data-message-author-role' in out) { out['data-author'] = out['data-message-author-role']; delete out['data-message-author-role']; }
    if ('data-is-streaming' in out) { out['data-streaming-state'] = out['data-is-streaming']; delete out['data-is-streaming']; }
    if (typeof out.id === 'string' && out.id.startsWith('markdown-content-')) out.id = out.id.replace('markdown-content-', 'answer-body-');
    tag = DRIFT_TAGS[tag] || tag;
  } else if (kind === 'editor' && (out.id === 'prompt-textarea' || out.id === 'ask-input'
      || /\bProseMirror\b/.test(out.class || ''))) {
    delete out.id;
    delete out['data-testid'];
    out.class = 'editor-input';
    out.role = 'textbox';
    out['data-lexical-editor'] = 'true';
  } else if (kind === 'editor' && /\bql-editor\b/.test(out.class || '')) {
    out.class = 'editor-input';
    delete out.role;
    out['data-lexical-editor'] = 'true';
  }
  return [tag, out];
}

// An icon's name as the drifted site writes it (null: an icon with no name).
function driftIcon(name) {
  const kind = driftKind();
  if (kind === 'unnamed') return null;
  return kind === 'icons' ? DRIFT_ICONS[name] || name : name;
}

// After the answer's markdown was rendered into `el`: with "split", its code moves into a second content block.
function driftSplit(el) {
  if (driftKind() !== 'split') return;
  const next = el.nextElementSibling;
  if (next && next.hasAttribute('data-split-part')) next.remove();
  // the first top-level block that is (or holds) a code block: ChatGPT wraps its code in a header and a box
  const pre = [...el.children].find((c) => c.tagName === 'PRE' || c.querySelector('pre'));
  if (!pre) return;
  const second = el.cloneNode(false);
  second.setAttribute('data-split-part', '');
  second.removeAttribute('id');
  for (let n = pre; n;) { const after = n.nextSibling; second.append(n); n = after; }
  el.after(second);
}

// Wrap a freshly built element in two more (a new layout's containers), for "wrappers".
function driftWrap(el) {
  if (driftKind() !== 'wrappers' || !el) return el;
  const outer = document.createElement('div');
  outer.className = 'layout-v2';
  const inner = document.createElement('div');
  inner.className = 'layout-v2-inner';
  inner.append(el);
  outer.append(inner);
  return outer;
}

// The dialog on load, for "dialog": an overlay over the page until it is closed.
function driftDialog() {
  if (driftKind() !== 'dialog') return;
  const close = () => overlay.remove();
  const overlay = document.createElement('div');
  overlay.className = 'dialog-overlay';
  overlay.setAttribute('style', 'position: fixed; inset: 0; z-index: 100; background: rgba(0,0,0,0.4);');
  const dialog = document.createElement('div');
  dialog.setAttribute('role', 'dialog');
  dialog.setAttribute('aria-modal', 'true');
  dialog.setAttribute('aria-label', "What's new");
  dialog.setAttribute('style', 'margin: 20vh auto; width: 360px; background: #fff; padding: 16px;');
  const title = document.createElement('h2');
  title.textContent = "What's new";
  const text = document.createElement('p');
  text.textContent = 'Projects, memory and a faster composer.';
  const button = document.createElement('button');
  button.type = 'button';
  button.textContent = 'Got it';
  button.addEventListener('click', close);
  dialog.append(title, text, button);
  overlay.append(dialog);
  document.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') close(); });
  document.body.append(overlay);
}
