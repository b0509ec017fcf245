// Fake gemini.google.com client. Bundled after common/markdown.js inside one IIFE by the server.
//
// Two shapes (BOOT.shape, PageOptions.shape): "2026" (default) is the markup captured from the real site in
// Jan-Feb 2026, "2025" the spec's older picture, unchanged.
//
// Shape 2025: everything lives in open shadow roots of custom elements, so plain document.querySelector finds
// none of it:
//   <chat-app> #shadow
//     header, main.chat-container
//       <chat-history> #shadow  div#chat-history > div.conversation-container*
//           <user-query> #shadow      div.query-text > p.query-text-line
//           <model-response> #shadow  div.response-container
//                                        > div.markdown.markdown-main-panel[aria-live=polite]
//                                        > div.response-footer (after completion: buttons with img[alt=thumb_up],
//                                          img[alt=thumb_down], img[alt=content_copy])
//       <input-area> #shadow  div.ql-editor[role=textbox][contenteditable=true], div.trailing-actions:
//           idle:      button.mic-button (img[alt=mic]) + button.send-button (mat-icon[data-mat-icon-name=send],
//                      disabled while the editor is empty)
//           answering: button.send-button.stop (mat-icon[data-mat-icon-name=stop], aria-label "Stop response")
// Shape 2026: all in the light DOM (only <code-block> keeps its shadow header); icons are empty
// mat-icon[fonticon][data-mat-icon-name] inside buttons with localized aria-labels:
//   chat-app > div.chat-app > main > chat-window > div > chat-window-content > div#chat-history >
//     infinite-scroller > div.conversation-container*
//       user-query > span.user-query-container > user-query-content > div.user-query-container > div.query-content
//         > (div > button "Copy prompt") + span.user-query-bubble-with-background > span > div.query-text[role=heading]
//         > span.cdk-visually-hidden "You said" + p.query-text-line*
//       model-response > div > response-container > div.response-container >
//         div.response-container-header (tts-control "Listen" volume_up, after completion)
//         div.presented-response-container > div.avatar-gutter > bard-avatar (inline svg)
//                                          + div.response-container-content > div.response-content >
//                                            div.thoughts-container (model-thoughts) + h2.cdk-visually-hidden
//                                            "Gemini said" + structured-content-container.model-response-text >
//                                            div > message-content > div.markdown.markdown-main-panel[aria-live]
//         div.response-container-footer > message-actions (after completion): thumb-up-button, thumb-down-button,
//           regenerate-button (refresh), copy-button (content_copy), [QuillBot], more_vert
//   input-container > fieldset > input-area-v2 > div.input-area > ... rich-textarea > div.ql-editor[role=textbox]
//     [aria-label="Enter a prompt for Gemini"]; uploader (add_2 "Open upload file menu", hidden input[type=file]);
//     bard-mode-switcher > button[data-test-id=bard-mode-menu-button] "Fast"; speech-dictation-mic-button (mic,
//     visible even while answering); div.send-button-container > button.send[aria-disabled=true|false] (send;
//     never the disabled attribute; a click while aria-disabled does nothing) or, answering, button "Stop
//     response" (stop); then hallucination-disclaimer > div.capabilities-disclaimer > p[data-test-id=disclaimer]
//   A conversation that cannot be loaded keeps its URL, shows no turns and a mat-snack-bar-container
//   "Couldn't load this conversation."; the input stays usable.
// Answers stream from POST .../StreamGenerate: ")]}'" then one JSON object per line, each text frame carrying
// the whole answer so far. While the document is hidden no answer text is rendered (text already shown is
// stripped) until the first animation frame after it is visible again (or BOOT.rerenderDelayMs later). A script's
// renderLagMs holds the text back until that long after the stop button went (the feedback buttons come first).
// Thinking shows <model-thoughts> with a "Thinking" label, then a collapsed "Show thinking" button. Limits outside
// a response show as an alert, a snack-bar toast or a banner; a broken stream as an alert with a Retry button.
// Deep Research (meta frame with `sources`): see ReportPanel. BOOT.layout and BOOT.sendClick as on the ChatGPT fake.

const BOOT = JSON.parse(document.getElementById('boot-data').textContent);
const LANG = ['ja', 'de'].includes(BOOT.hl) ? BOOT.hl : 'en';
// BOOT.drift: the markup changed under us (PageOptions.drift): renamed icons, a moved input, German labels.
const DRIFT = !!BOOT.drift;
const NEW = BOOT.shape !== '2025';                  // the 2026 markup
const EXT = NEW && BOOT.extensionButtons !== false; // another extension's (QuillBot's) buttons
const T = {
  en: {
    send: 'Send message', stop: 'Stop response', mic: 'Use microphone', good: 'Good response',
    bad: 'Bad response', copy: 'Copy response', copyCode: 'Copy code', downloadCode: 'Download code',
    moreOptions: 'More options', prompt: 'Enter a prompt here', upload: 'Open upload file menu',
    modePicker: 'Open mode picker',
    placeholder: 'Ask Gemini', youSaid: 'You said', geminiSaid: 'Gemini said', newChat: 'New chat',
    loadError: "Couldn't load this conversation.", netError: 'Something went wrong. Please try again.',
    thinking: 'Thinking', showThinking: 'Show thinking', retry: 'Retry',
  },
  ja: {
    send: 'プロンプトを送信', stop: '回答を停止', mic: 'マイクを使用', good: '良い回答', bad: '悪い回答',
    copy: '回答をコピー', copyCode: 'コードをコピー', downloadCode: 'コードをダウンロード', moreOptions: 'その他のオプション', prompt: 'ここにプロンプトを入力してください',
    upload: '[ファイルをアップロード] メニューを開く', modePicker: 'モード選択ツールを開く',
    placeholder: 'Gemini に相談', youSaid: 'あなたのプロンプト', geminiSaid: 'Gemini の回答', newChat: 'チャットを新規作成',
    loadError: 'この会話を読み込めませんでした。', netError: '問題が発生しました。もう一度お試しください。',
    thinking: '思考中', showThinking: '思考プロセスを表示', retry: '再試行',
  },
  de: {
    send: 'Nachricht senden', stop: 'Antwort anhalten', mic: 'Mikrofon verwenden', good: 'Gute Antwort',
    bad: 'Schlechte Antwort', copy: 'Antwort kopieren', copyCode: 'Code kopieren', downloadCode: 'Code herunterladen',
    moreOptions: 'Weitere Optionen', prompt: 'Prompt hier eingeben', placeholder: 'Gemini fragen',
    upload: 'Menü zum Hochladen von Dateien öffnen', modePicker: 'Modusauswahl öffnen',
    youSaid: 'Du hast gesagt', geminiSaid: 'Gemini hat gesagt', newChat: 'Neuer Chat',
    loadError: 'Diese Unterhaltung konnte nicht geladen werden.', netError: 'Etwas ist schiefgelaufen. Bitte versuch es noch einmal.',
    thinking: 'Denkt nach', showThinking: 'Gedankengang anzeigen', retry: 'Wiederholen',
  },
}[LANG];

const svg = (body) => 'data:image/svg+xml,' + encodeURIComponent(
  `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="24" height="24">${body}</svg>`);
const ICONS = {
  mic: svg('<rect x="9" y="3" width="6" height="11" rx="3"/><path d="M6 11a6 6 0 0 0 12 0" stroke="black" fill="none"/>'),
  thumb_up: svg('<path d="M2 21h4V9H2zm20-11a2 2 0 0 0-2-2h-6l1-5-2-1-6 7v12h10l5-9z"/>'),
  thumb_down: svg('<path d="M22 3h-4v12h4zM2 14a2 2 0 0 0 2 2h6l-1 5 2 1 6-7V3H7L2 12z"/>'),
  content_copy: svg('<rect x="8" y="8" width="12" height="12"/><rect x="4" y="4" width="12" height="12" fill="none" stroke="black"/>'),
};

function h(tag, attrs, ...children) {
  [tag, attrs] = drifted(tag, attrs);  // common/drift.js: PageOptions.mutation, one redesign at a time
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v == null) continue;
    if (k === 'html') el.innerHTML = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c != null) el.append(c);
  return el;
}

const icon = (name) => h('img', { alt: name, src: ICONS[name], width: '24', height: '24', class: 'gds-icon', 'aria-hidden': 'true' });
const matIcon = (name) => h('mat-icon', {
  role: 'img', fonticon: name, 'data-mat-icon-name': name, 'aria-hidden': 'true',
  class: 'mat-icon notranslate google-symbols mat-icon-no-color',
}, name);

const SHARED_CSS = `
  :host { display: block; }
  button { font: inherit; cursor: pointer; border: 0; background: transparent; border-radius: 50%;
    min-width: 40px; min-height: 40px; display: inline-flex; align-items: center; justify-content: center; }
  button[disabled] { opacity: .38; cursor: default; }
  .sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
  mat-icon { font-size: 14px; }
`;

const state = { conversation: null, streaming: false, frozen: false, abort: null, responses: [], temporary: false };
const LAYOUT = BOOT.layout || 'standard';
// Issue 38: a Gem's chats are /gem/<gem id>/<conversation> and start at /gem/<gem id> (public 2026 exports link
// such URLs); the others are /app/<conversation>.
const m = location.pathname.match(/^\/(?:app|gem\/([A-Za-z0-9_-]+))\/([0-9a-f]+)$/i);
if (m) state.conversation = m[2];
const GEM = (location.pathname.match(/^\/gem\/([A-Za-z0-9_-]+)/) || [])[1] || null;

// The top bar's temporary chat button (userscripts of 2025-26 click `button[data-test-id="temp-chat-button"]`
// inside <temp-chat-button>, aria-label "Temporary chat"; one reads its "temp-chat-on" class). Offered on a new chat
// only. The card it shows while on, and what the request carries, are guesses.
function tempChatButton() {
  if (state.conversation) return null;
  const card = h('div', { class: 'temporary-chat-card', hidden: true }, 'Temporary chat');
  const button = h('button', {
    'data-test-id': 'temp-chat-button', 'aria-label': LANG === 'ja' ? '一時チャット' : 'Temporary chat',
    class: 'mdc-icon-button temp-chat', onclick: () => {
      if (state.conversation) return;
      state.temporary = !state.temporary;
      button.classList.toggle('temp-chat-on', state.temporary);
      card.hidden = !state.temporary;
    },
  }, fontIcon('chat_bubble_dashed', 'gds-icon-l'));
  return h('temp-chat-button', {}, button, card);
}

class ShadowElement extends HTMLElement {
  constructor(css) {
    super();
    this.root = this.attachShadow({ mode: 'open' });
    this.root.append(h('style', {}, SHARED_CSS + (css || '')));
  }
}

class UserQuery extends ShadowElement {
  constructor() {
    super(`.query-text { background: #e9eef6; border-radius: 24px 4px 24px 24px; padding: 12px 16px;
      margin-left: auto; max-width: 70%; white-space: pre-wrap; } p { margin: 0; }`);
  }

  setText(text) {
    const box = h('div', { class: 'query-text', dir: 'ltr' });
    for (const line of text.split('\n')) box.append(h('p', { class: 'query-text-line' }, line));
    this.root.append(h('div', { class: 'user-query-container' }, h('span', { class: 'sr-only' }, T.youSaid), box));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Answer markup (as gemini.google.com renders an answer in 2026, Angular components): blocks carry
// data-path-to-node; bold and italic are <b> and <i>; a code block is <response-element> > <code-block> whose
// header (language display name, Download / Copy buttons with icon ligatures) lives in the element's own shadow
// root, the code (pre > code.code-container with highlight spans) being slotted in; a table sits in five wrappers
// with a footer of buttons, and its cells hold a span; left alignment is not marked; math is
// span.math-inline / div.math-block with the TeX in data-math and KaTeX glyphs without MathML; a citation is an
// empty footnote <sup> plus a chip button naming the source (no URL in the page).

const HL = { string: 'hljs-string', comment: 'hljs-comment', number: 'hljs-number', name: 'hljs-built_in' };
const ng = 'ng-tns-c2185672871-17';

class CodeBlock extends HTMLElement {
  connectedCallback() {
    if (this.shadowRoot) return;
    const root = this.attachShadow({ mode: 'open' });
    const label = this.getAttribute('data-header') || 'Code snippet';
    const iconButton = (name, aria) => h('gem-icon-button', {
      tabindex: '-1', type: 'onSurface', size: 'small', fonticonname: name, arialabel: aria, gemtooltip: aria,
      class: 'mat-mdc-tooltip-trigger gem-button gem-button-size-small',
    }, h('button', { maticonbutton: '', class: 'mdc-icon-button mat-mdc-icon-button', 'aria-label': aria },
      h('span', { class: 'mat-mdc-button-persistent-ripple mdc-icon-button__ripple' }),
      h('gem-icon', {}, matIcon(name)),
      h('span', { class: 'mat-focus-indicator' }), h('span', { class: 'mat-mdc-button-touch-target' })));
    root.append(
      h('style', {}, SHARED_CSS + '.code-block { background: #f0f4f9; border-radius: 12px; padding: 8px 12px; }'),
      h('div', { class: `code-block ${ng} ng-trigger ng-trigger-codeBlockRevealAnimation`, 'data-hveid': '0' },
        h('div', { class: `formatted-code-block-internal-container ${ng}` },
          h('div', { class: `animated-opacity ${ng}` },
            h('div', { class: `code-block-decoration header-formatted gds-emphasized-body-m ${ng} ng-star-inserted` },
              h('span', { class: ng }, label),
              h('div', { class: `buttons ${ng} ng-star-inserted` },
                iconButton('arrow_circle_down', T.downloadCode), iconButton('content_copy', T.copyCode))),
            h('slot', {})))));
  }
}

const GEMINI_MARKUP = {
  attrs: (tag, where, path) => (/^(p|h\d|ul|ol|blockquote|hr|table)$/.test(tag) ? ` data-path-to-node="${path}"` : ''),
  listStart: (start) => ` start="${start}"`,
  open: (kind) => ({ strong: '<b>', em: '<i>', s: '<s>' }[kind]),
  close: (kind) => ({ strong: '</b>', em: '</i>', s: '</s>' }[kind]),
  codeInline: (html) => `<code>${html}</code>`,
  linkOpen: (href, ctx) => `<a href="${ctx.escapeHtml(href)}" target="_blank" rel="noopener" externallink="" jslog="197247;track:generic_click,impression">`,
  linkClose: () => '</a>',
  mathInline: (tex, ctx) => `<span class="math-inline" data-math="${ctx.escapeHtml(tex)}">${ctx.blank ? '' : ctx.katexHtml(tex, { mathml: false })}</span>`,
  mathBlock: (tex, where, path, ctx) => `<div class="math-block" data-math="${ctx.escapeHtml(tex)}"><span class="katex-display">`
    + `${ctx.blank ? '' : ctx.katexHtml(tex, { display: true, mathml: false })}</span></div>`,
  cite: (label, url, ctx) => {
    // a Deep Research report numbers a citation by its source's place in the panel's list
    const n = GEMINI_MARKUP.sourceIndex ? GEMINI_MARKUP.sourceIndex(url) : ++GEMINI_MARKUP.citations;
    return `<source-footnote ng-version="0.0.0-PLACEHOLDER"><sup class="superscript" data-turn-source-index="${n}"></sup></source-footnote>`
      + '<sources-carousel-inline ng-version="0.0.0-PLACEHOLDER"><source-inline-chips class="ng-star-inserted"><source-inline-chip class="ng-star-inserted">'
      + `<button aria-label="View source details for citation from ${ctx.escapeHtml(label)}.">${ctx.escapeHtml(label)}</button>`
      + '</source-inline-chip></source-inline-chips></sources-carousel-inline>';
  },
  citations: 0,
  sourceIndex: null,
  codeBlock(lang, code, where, path, ctx) {
    const header = lang ? ctx.languageLabel(lang) : 'Code snippet';
    return `<response-element class="no-md" ng-version="0.0.0-PLACEHOLDER"><!----><code-block class="${ng} enable-luminous-code-block ng-star-inserted" data-header="${ctx.escapeHtml(header)}">`
      + `<pre class="${ng}"><code role="text" data-test-id="code-content" class="code-container formatted ${ng}">${code ? ctx.highlight(code, HL) + '\n' : ''}</code></pre>`
      + '</code-block><!----></response-element>';
  },
  tableOpen: (where, path) => '<div class="horizontal-scroll-wrapper"><div class="table-block-component"><response-element class="no-md" ng-version="0.0.0-PLACEHOLDER">'
    + '<table-block class="enable-luminous-table-block ng-star-inserted"><div class="table-block has-export-button new-table-style is-at-scroll-start is-at-scroll-end">'
    + `<div not-end-of-paragraph="" class="table-content md-content" data-hveid="0"><table data-path-to-node="${path}">`,
  tableClose: () => '</table></div><div hide-from-message-actions="" class="table-footer hide-on-print hide-from-message-actions">'
    + `<gem-icon-button tabindex="0" theme="lm" type="tonal" arialabel="${T.moreOptions}" class="mat-mdc-tooltip-trigger overflow-menu-button gem-button">`
    + `<button maticonbutton="" class="mdc-icon-button mat-mdc-icon-button" aria-label="${T.moreOptions}"><gem-icon>`
    + '<mat-icon role="img" class="mat-icon notranslate lm-icon-l lumi-symbols mat-ligature-font" aria-hidden="true" data-mat-icon-name="more_horiz" fonticon="more_horiz">more_horiz</mat-icon>'
    + '</gem-icon></button></gem-icon-button><gem-popover class="ng-star-inserted"></gem-popover></div></div></table-block></response-element></div></div>',
  cellOpen: (tag, align, where, path) => `<${tag}${align && align !== 'left' ? ` style="text-align: ${align};"` : ''}><span data-path-to-node="${path},0">`,
  cellClose: (tag) => `</span></${tag}>`,
};

class ModelResponse extends ShadowElement {
  constructor() {
    super(`.response-container { padding: 8px 0; } .markdown pre { background: #f0f4f9; padding: 12px;
      border-radius: 12px; overflow: auto; } .response-footer { display: flex; gap: 4px; }
      .thoughts-header { color: #666; } .thoughts-body[hidden] { display: none; }`);
    this.text = '';
    this.stale = false;
    this.markdown = h('div', {
      'inline-copy-host': '', class: 'markdown markdown-main-panel enable-updated-hr-color md-content stronger',
      'aria-live': LAYOUT === 'detached' ? null : 'polite', 'aria-busy': 'true', dir: 'ltr',
    });
    // thumb_up -> closest button -> footer -> response-container: the container also holds the text
    this.content = h('message-content', { class: 'ng-star-inserted' }, this.markdown);
    this.container = h('div', { class: 'response-container' }, h('span', { class: 'sr-only' }, T.geminiSaid),
      this.content);
    this.root.append(this.container);
    state.responses.push(this);
  }

  setText(text) {
    if (this.report) { this.report.setText(text); return; }  // Deep Research: the text is the panel's report
    this.text = text;
    this.render();
  }

  release() {
    if (!this.held) return;
    this.held = false;
    if (this.report) { this.report.held = false; this.report.render(); } else this.render();
  }

  render() {
    // Like the real app, no answer text is committed while the document is hidden.
    const hidden = document.visibilityState === 'hidden';
    this.stale = hidden;
    GEMINI_MARKUP.citations = 0;
    const html = renderMarkdown(this.held && !this.report ? '' : this.text, { hooks: GEMINI_MARKUP, blank: hidden });
    if (LAYOUT === 'detached') {
      if (!this.live) {
        // The text outside the response element: an aria-live region of the chat history.
        this.live = h('div', { class: 'live-answer', 'aria-live': 'polite' });
        this.parentNode.append(this.live);
      }
      this.live.innerHTML = html;
    } else {
      this.markdown.innerHTML = html;
    }
  }

  startThinking() {
    this.thoughts = document.createElement('model-thoughts');
    this.thoughts.append(h('div', { class: 'thoughts-header' }, h('span', { class: 'thinking-label' }, T.thinking)));
    this.container.insertBefore(this.thoughts, this.content);
  }

  endThinking() {
    if (!this.thoughts) return;
    const body = h('div', { class: 'thoughts-body', hidden: true }, 'Considered the question.');
    const btn = h('button', {
      class: 'thoughts-header-button', 'aria-expanded': 'false',
      onclick: () => { body.hidden = !body.hidden; btn.setAttribute('aria-expanded', String(!body.hidden)); },
    }, T.showThinking);
    this.thoughts.replaceChildren(h('div', { class: 'thoughts-header' }, btn), body);
  }

  complete() {
    if (this.footer) return;
    this.markdown.setAttribute('aria-busy', 'false');
    if (this.report) this.report.complete();
    const feedback = LAYOUT === 'nofeedback' ? [] : [
      h('button', { class: 'feedback-button', 'aria-label': T.good, 'aria-pressed': 'false' }, icon('thumb_up')),
      h('button', { class: 'feedback-button', 'aria-label': T.bad, 'aria-pressed': 'false' }, icon('thumb_down'))];
    this.footer = h('div', { class: 'response-footer actions-container' }, ...feedback,
      h('button', { class: 'copy-button', 'aria-label': T.copy }, icon('content_copy')));
    this.container.append(this.footer);
  }
}

document.addEventListener('visibilitychange', () => {
  if (document.visibilityState !== 'visible') {
    for (const r of state.responses) r.render();  // hidden: the text nodes go
    return;
  }
  const rerender = () => { for (const r of state.responses) if (r.stale) r.render(); };
  if (BOOT.rerenderDelayMs > 0) setTimeout(rerender, BOOT.rerenderDelayMs);  // a slower page catches up later
  else requestAnimationFrame(rerender);
});

class ChatHistory extends ShadowElement {
  constructor() {
    super('#chat-history { padding: 16px 10%; }');
    this.scroller = h('div', { id: 'chat-history', class: 'chat-history-scroll-container' });
    this.root.append(this.scroller);
    this.current = null;
  }

  addUserQuery(text) {
    this.current = h('div', { class: 'conversation-container' });
    this.scroller.append(this.current);
    const uq = document.createElement('user-query');
    uq.setText(text);
    this.current.append(uq);
    return uq;
  }

  addModelResponse() {
    if (!this.current) {
      this.current = h('div', { class: 'conversation-container' });
      this.scroller.append(this.current);
    }
    const mr = document.createElement('model-response');
    this.current.append(mr);
    return mr;
  }

  notice(text, retry) {
    const box = h('div', { class: 'notice', role: 'alert' }, h('span', {}, text));
    if (retry) box.append(h('button', { class: 'retry-button', onclick: () => {} }, T.retry));
    this.scroller.append(box);
  }
}

// The editor's wiring, the same in both shapes: every change re-judges the send button (ProseMirror and Quill see
// DOM mutations, so text put there by any means counts); Enter sends, Shift+Enter breaks the line.
function wireEditor(area) {
  const changed = () => area.onChange();
  area.editor.addEventListener('input', changed);
  area.editor.addEventListener('change', changed);
  new MutationObserver(changed).observe(area.editor, { childList: true, characterData: true, subtree: true });
  area.editor.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      if (!state.streaming) send();
    }
  });
}

class InputArea extends ShadowElement {
  constructor() {
    super(`.input-area-container { display: flex; align-items: flex-end; gap: 8px; margin: 8px 10% 16px;
      border-radius: 28px; background: #f0f4f9; padding: 8px 12px; }
      .text-input-field, .prompt-box { flex: 1; } .ql-editor { outline: none; min-height: 24px; padding: 8px; }
      .ql-editor p { margin: 0; } .trailing-actions { display: flex; gap: 4px; }`);
    this.editor = h('div', {
      class: 'ql-editor ql-blank textarea new-input-ui', role: DRIFT ? null : 'textbox', contenteditable: 'true',
      'aria-label': T.prompt, 'aria-multiline': 'true', 'data-placeholder': T.placeholder,
      'data-gramm': 'false', enterkeyhint: 'send',
    });
    this.clear();
    this.actions = h('div', { class: 'trailing-actions' });
    const fileInput = h('input', { type: 'file', multiple: true, hidden: true, class: 'hidden-local-file-input', tabindex: '-1' });
    const chipHost = h('div', { class: 'attachment-previews' });
    this.root.append(chipHost, h('div', { class: 'input-area-container' },
      h('uploader', { class: 'upload-button' }, h('button', { 'aria-label': T.upload, class: 'upload' }, '+'), fileInput),
      DRIFT ? h('div', { class: 'prompt-box' }, h('div', { class: 'prompt-editor' }, this.editor))
        : h('div', { class: 'text-input-field' }, h('rich-textarea', { class: 'text-input-field_textarea' }, this.editor)),
      modeSwitcher(T.modePicker), this.actions));
    this.uploads = makeUploader(fileInput, chipHost, () => this.onChange());
    wireEditor(this);
    this.render();
  }

  text() { return this.editor.innerText.replace(/\n+$/, ''); }

  clear() { this.editor.innerHTML = '<p><br></p>'; }

  onChange() {
    const empty = !this.text().trim();
    this.editor.classList.toggle('ql-blank', empty);
    const blocked = empty || !!(this.uploads && this.uploads.busy());
    if (this.sendButton) {
      this.sendButton.disabled = blocked;
      this.sendButton.setAttribute('aria-disabled', blocked ? 'true' : 'false');
    }
  }

  render() {
    if (state.streaming) {
      this.sendButton = null;
      this.actions.replaceChildren(h('button', {
        class: 'send-button stop', 'aria-label': T.stop, onclick: onStop,
      }, matIcon(DRIFT ? 'stop_circle' : 'stop')));
      return;
    }
    const empty = !this.text().trim() || !!(this.uploads && this.uploads.busy());
    this.sendButton = h('button', {
      class: 'send-button', 'aria-label': T.send, disabled: empty, 'aria-disabled': empty ? 'true' : 'false',
      onclick: (ev) => {
        if (BOOT.sendClick === 'none') return;
        if (BOOT.sendClick === 'trusted' && !ev.isTrusted) return;  // a script's click() is not a user's click
        send();
      },
    }, matIcon(DRIFT ? 'arrow_upward' : 'send'));
    this.actions.replaceChildren(
      h('button', { class: 'speech_dictation_mic_button mic-button', 'aria-label': T.mic }, icon('mic')),
      this.sendButton);
  }
}

class ChatApp extends ShadowElement {
  constructor() {
    super(`.chat-app { display: flex; flex-direction: column; height: 100vh; }
      header { display: flex; justify-content: space-between; padding: 8px 16px; }
      main { flex: 1; display: flex; flex-direction: column; min-height: 0; }
      chat-history { flex: 1; overflow-y: auto; }`);
    this.history = document.createElement('chat-history');
    this.input = document.createElement('input-area');
    this.root.append(h('div', { class: 'chat-app' },
      h('header', { class: 'top-bar' }, h('span', { class: 'bard-logo' }, 'Gemini'),
        h('a', { href: '/app', class: 'new-chat', 'aria-label': T.newChat }, T.newChat), tempChatButton()),
      h('main', { class: 'chat-container' }, this.history, this.input)));
  }
}


// ---------------------------------------------------------------------------------------------------------------
// Shape 2026: everything in the light DOM, as captured from the real site in Jan-Feb 2026. Plain elements plus
// controller objects with the same methods as the 2025 custom elements (the send/load code drives either).
// Icons are empty <mat-icon fonticon=… data-mat-icon-name=…> (the glyph comes from the icon font, i.e. CSS).

const T26 = {
  en: {
    listen: 'Listen', good: 'Good response', bad: 'Bad response', redo: 'Redo', copy: 'Copy', more: 'Show more options',
    copyPrompt: 'Copy prompt', upload: 'Open upload file menu', modePicker: 'Open mode picker', fast: 'Fast',
    mic: 'Microphone', send: 'Send message', stop: 'Stop response', prompt: 'Enter a prompt for Gemini',
    disclaimer: 'Gemini can make mistakes, so double-check it', conversation: 'Conversation with Gemini',
    drNote: "I've completed your research. Here is the report.", drTitle: 'Research report',
    drSources: 'Sources used in the report', closePanel: 'Close panel',
  },
  ja: {
    listen: '読み上げる', good: '良い回答', bad: '悪い回答', redo: 'やり直す', copy: 'コピー', more: '他のオプションを表示',
    copyPrompt: 'プロンプトをコピー', upload: '[ファイルをアップロード] メニューを開く', modePicker: 'モード選択ツールを開く',
    fast: '高速モード', mic: 'マイク', send: 'プロンプトを送信', stop: '回答を停止', prompt: 'Gemini へのプロンプトを入力',
    disclaimer: 'Gemini は AI であり、間違えることがあります。', conversation: 'Gemini との会話',
    drNote: 'リサーチが完了しました。レポートはこちらです。', drTitle: 'リサーチ レポート',
    drSources: 'レポートに使用されているソース', closePanel: 'パネルを閉じる',
  },
  de: {
    listen: 'Vorlesen', good: 'Gute Antwort', bad: 'Schlechte Antwort', redo: 'Neu generieren', copy: 'Kopieren',
    more: 'Weitere Optionen anzeigen', copyPrompt: 'Prompt kopieren', upload: 'Menü zum Hochladen von Dateien öffnen',
    modePicker: 'Modusauswahl öffnen', fast: 'Schnell', mic: 'Mikrofon', send: 'Nachricht senden',
    stop: 'Antwort anhalten', prompt: 'Prompt für Gemini eingeben',
    disclaimer: 'Gemini kann Fehler machen. Überprüfe die Antworten.', conversation: 'Unterhaltung mit Gemini',
    drNote: 'Deine Recherche ist fertig. Hier ist der Bericht.', drTitle: 'Recherchebericht',
    drSources: 'Im Bericht verwendete Quellen', closePanel: 'Bereich schließen',
  },
}[LANG];

const fontIcon = (name, cls) => {
  const drawn = driftIcon(name);  // common/drift.js: renamed, or unnamed inline svg
  if (drawn === null) {
    return h('span', { class: `icon ${cls || ''}`, 'aria-hidden': 'true',
      html: '<svg width="20" height="20" viewBox="0 0 20 20"><path d="M4 4h12v12H4z" fill="currentColor"/></svg>' });
  }
  return h('mat-icon', {
    role: 'img', fonticon: drawn, 'data-mat-icon-name': drawn, 'aria-hidden': 'true',
    class: `mat-icon notranslate ${cls || 'gds-icon-m'} google-symbols mat-ligature-font mat-icon-no-color`,
  });
};
const matButton = (label, iconName, attrs) => h('button', {
  class: 'mdc-icon-button mat-mdc-icon-button mat-mdc-button-base', 'aria-label': label, ...attrs,
}, h('span', { class: 'mat-mdc-button-persistent-ripple mdc-icon-button__ripple' }), fontIcon(iconName),
h('span', { class: 'mat-focus-indicator' }), h('span', { class: 'mat-mdc-button-touch-target' }));
const quillBot = () => h('div', {}, h('button', {
  'aria-label': 'Humanize with QuillBot', 'data-test-id': '', 'data-testid': 'quillbot-humanize-button', type: 'button',
  class: 'mdc-button mat-mdc-button-base', 'aria-haspopup': 'menu', 'aria-expanded': 'false',
  html: '<svg width="20" height="20" viewBox="0 0 20 20"><path d="M4 4h12v12H4z" fill="#499557"/></svg>',
}));
// bard-avatar holds an inline lottie animation (an svg of paths), not an <img>
const AVATAR_SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32" width="32" height="32" preserveAspectRatio="xMidYMid meet">'
  + '<defs><linearGradient id="__lottie_element_1"><stop offset="0" stop-color="#4285f4"/><stop offset="1" stop-color="#9b72cb"/></linearGradient></defs>'
  + '<g><path fill="url(#__lottie_element_1)" d="M16 2C16 10 22 16 30 16C22 16 16 22 16 30C16 22 10 16 2 16C10 16 16 10 16 2Z"/></g></svg>';

class Response2026 {
  constructor() {
    this.text = '';
    this.stale = false;
    this.markdown = h('div', {
      class: 'markdown markdown-main-panel stronger enable-updated-hr-color',
      'aria-live': LAYOUT === 'detached' ? null : 'polite', 'aria-busy': 'true', dir: 'ltr',
    });
    this.content = h('message-content', { class: 'ng-star-inserted' }, driftWrap(this.markdown));
    this.thoughtsBox = h('div', { class: 'thoughts-container' });
    this.responseContent = h('div', { class: 'response-content' }, this.thoughtsBox,
      h('h2', { class: 'cdk-visually-hidden ng-star-inserted' }, T.geminiSaid),
      h('structured-content-container', { class: 'model-response-text processing-state-visible ng-star-inserted' },
        h('div', { class: 'container' }, this.content)));
    this.headerControls = h('div', { class: 'response-container-header-controls' });
    this.container = h('div', { class: 'response-container response-container-with-gpi' },
      h('div', { class: 'response-container-header' }, this.headerControls,
        h('div', { class: 'response-container-header-status' })),
      h('div', { class: 'presented-response-container' },
        h('div', { class: 'avatar-gutter ng-star-inserted' }, h('bard-avatar', { class: 'avatar-component' },
          h('div', { class: 'bard-avatar' }, h('div', { class: 'avatar-container' },
            h('div', { class: 'avatar avatar_primary', html: AVATAR_SVG }))))),
        h('div', { class: 'response-container-content' }, this.responseContent)));
    this.el = h('model-response', { class: 'ng-star-inserted' },
      h('div', {}, h('response-container', { class: 'ng-star-inserted' }, this.container)));
    state.responses.push(this);
  }

  set rid(value) {
    this._rid = value;
    const r = 'r_' + String(value).replace(/-/g, '').slice(0, 16);
    this.content.id = 'message-content-id-' + r;
    this.markdown.id = 'model-response-message-content' + r;
  }

  get rid() { return this._rid; }

  setText(text) {
    if (this.report) { this.report.setText(text); return; }  // Deep Research: the text is the panel's report
    this.text = text;
    this.render();
  }

  render() {
    const hidden = document.visibilityState === 'hidden';
    this.stale = hidden;
    GEMINI_MARKUP.citations = 0;
    const html = renderMarkdown(this.held && !this.report ? '' : this.text, { hooks: GEMINI_MARKUP, blank: hidden });
    if (LAYOUT === 'detached') {
      if (!this.live) {
        this.live = h('div', { class: 'live-answer', 'aria-live': 'polite' });
        this.el.parentNode.append(this.live);
      }
      this.live.innerHTML = html;
    } else {
      this.markdown.innerHTML = html;
      driftSplit(this.markdown);
    }
  }

  release() {
    if (!this.held) return;
    this.held = false;
    if (this.report) { this.report.held = false; this.report.render(); } else this.render();
  }

  startThinking() {
    this.thoughts = h('model-thoughts', {}, h('div', { class: 'thoughts-header' }, h('span', { class: 'thinking-label' }, T.thinking)));
    this.thoughtsBox.append(this.thoughts);
  }

  endThinking() {
    if (!this.thoughts) return;
    const body = h('div', { class: 'thoughts-body', hidden: true }, 'Considered the question.');
    const btn = h('button', {
      class: 'thoughts-header-button', 'aria-expanded': 'false',
      onclick: () => { body.hidden = !body.hidden; btn.setAttribute('aria-expanded', String(!body.hidden)); },
    }, T.showThinking);
    this.thoughts.replaceChildren(h('div', { class: 'thoughts-header' }, btn), body);
  }

  complete() {
    if (this.footer) return;
    this.markdown.setAttribute('aria-busy', 'false');
    if (this.report) this.report.complete();
    this.headerControls.append(h('tts-control', {}, h('div', { class: 'response-tts-container ng-star-inserted' },
      h('div', { class: 'mat-mdc-tooltip-trigger tts-button-container', 'data-test-id': 'disabled-tooltip' },
        matButton(T26.listen, 'volume_up')))));
    const feedback = LAYOUT === 'nofeedback' ? [] : [
      h('thumb-up-button', { class: 'ng-star-inserted' }, matButton(T26.good, 'thumb_up')),
      h('thumb-down-button', { class: 'ng-star-inserted' }, matButton(T26.bad, 'thumb_down'))];
    this.footer = h('div', { class: 'response-container-footer' }, h('message-actions', { class: 'ng-star-inserted' },
      h('div', { class: 'actions-container-v2' }, h('div', { class: 'buttons-container-v2 ng-star-inserted' },
        ...feedback,
        h('div', { class: 'ng-star-inserted' }, h('regenerate-button', { class: 'ng-star-inserted' }, matButton(T26.redo, 'refresh'))),
        h('copy-button', { class: 'ng-star-inserted' }, matButton(T26.copy, 'content_copy', { 'data-test-id': 'copy-button' })),
        h('div', { class: 'ng-star-inserted' }, h('div', { class: 'menu-button-wrapper' },
          EXT ? quillBot() : null,
          h('div', { class: 'more-menu-button-container' },
            matButton(T26.more, 'more_vert', { 'data-test-id': 'more-menu-button', 'aria-haspopup': 'menu' })))),
        h('div', { class: 'spacer' })))));
    this.container.append(this.footer);
  }
}

class History2026 {
  constructor() {
    this.scroller = h('infinite-scroller', { 'data-test-id': 'chat-history-container', class: 'chat-history' });
    this.el = h('div', { id: 'chat-history', class: 'chat-history-scroll-container' }, this.scroller);
    this.current = null;
    this.queries = 0;
  }

  addUserQuery(text) {
    this.current = h('div', { class: 'conversation-container message-actions-hover-boundary ng-star-inserted' });
    this.scroller.append(this.current);
    const box = h('div', { role: 'heading', class: 'query-text gds-body-l', dir: 'ltr' },
      h('span', { class: 'cdk-visually-hidden' }, T.youSaid));
    for (const line of text.split('\n')) box.append(h('p', { class: 'query-text-line ng-star-inserted' }, line));
    const uq = h('user-query', { class: 'ng-star-inserted' }, h('span', { class: 'user-query-container' },
      h('user-query-content', { class: 'user-query-container' }, h('div', { class: 'user-query-container' },
        h('div', { class: 'query-content ng-star-inserted', id: `user-query-content-${this.queries++}` },
          h('div', { class: 'ng-star-inserted' }, matButton(T26.copyPrompt, 'content_copy')),
          h('span', { class: 'user-query-bubble-with-background ng-star-inserted' },
            h('span', { class: 'horizontal-container' }, box)))))));
    this.current.append(uq);
    return uq;
  }

  addModelResponse() {
    if (!this.current) {
      this.current = h('div', { class: 'conversation-container message-actions-hover-boundary ng-star-inserted' });
      this.scroller.append(this.current);
    }
    const mr = new Response2026();
    this.current.append(mr.el);
    return mr;
  }

  notice(text, retry) {
    const box = h('div', { class: 'notice', role: 'alert' }, h('span', {}, text));
    if (retry) box.append(h('button', { class: 'retry-button', onclick: () => {} }, T.retry));
    this.scroller.append(box);
  }
}

class Input2026 {
  constructor() {
    this.editor = h('div', {
      class: 'ql-editor textarea new-input-ui ql-blank', role: DRIFT ? null : 'textbox', contenteditable: 'true',
      'aria-label': T26.prompt, 'aria-multiline': 'true', 'data-placeholder': T.placeholder,
      'data-gramm': 'false', enterkeyhint: 'send',
    });
    this.clear();
    this.sendSlot = h('div', { class: 'mat-mdc-tooltip-trigger send-button-container' });
    const textField = h('div', { class: 'text-input-field with-toolbox-drawer' },
      h('div', { class: 'text-input-field_textarea-wrapper' }, h('div', { class: 'text-input-field-main-area' },
        h('div', { class: 'text-input-field_textarea-inner' },
          // drift: the editor left rich-textarea for another container
          DRIFT ? h('div', { class: 'prompt-box' }, h('div', { class: 'prompt-editor' }, this.editor))
            : h('rich-textarea', { class: 'text-input-field_textarea ql-container ql-bubble' }, this.editor)))));
    // No file input at rest (gemini-2607-composer-idle.html): "Upload and tools" makes one (menus.js).
    const chipHost = h('div', { class: 'attachment-previews' });
    this.uploads = makeUploader(null, chipHost, () => this.onChange());
    const fileHost = h('div', { class: 'file-uploader ng-star-inserted' });
    fileHost.append(uploadAndTools(fileHost, this.uploads));
    const uploader = h('div', { class: 'leading-actions-wrapper' }, h('div', { class: 'uploader-button-container' },
      h('uploader', { class: 'upload-button' }, fileHost)));
    menuState.chipHost = h('div', { class: 'toolbox-drawer-selected-items' });
    const trailing = h('div', { class: 'trailing-actions-wrapper' },
      h('div', { class: 'model-picker-container' }, modeSwitcher(T26.modePicker)),
      h('div', { class: 'input-buttons-wrapper-bottom' },
        h('div', { class: 'mic-button-container' }, h('speech-dictation-mic-button', { class: 'speech-dictation-mic-button' },
          h('button', { class: 'mdc-icon-button mat-mdc-icon-button mat-mdc-button-base', 'aria-label': T26.mic },
            h('div', {}, fontIcon('mic', 'gds-icon-l'))))),
        this.sendSlot));
    this.el = h('input-container', { class: 'input-gradient' }, h('fieldset', { class: 'input-area-container' },
      h('input-area-v2', { class: 'ui-improvements-phase-1' }, chipHost, h('div', { class: 'input-area with-toolbox-drawer' },
        textField, uploader, menuState.chipHost, trailing))),
    h('hallucination-disclaimer', { class: 'hallucination-disclaimer' }, h('div', { class: 'capabilities-disclaimer' },
      h('p', { 'data-test-id': 'disclaimer', class: 'gds-body-s desktop-spacing ng-star-inserted' }, T26.disclaimer))));
    wireEditor(this);
    this.render();
  }

  text() { return this.editor.innerText.replace(/\n+$/, ''); }

  clear() { this.editor.innerHTML = '<p><br></p>'; }

  onChange() {
    const empty = !(this.text().trim() || (this.uploads && this.uploads.count())) || !!(this.uploads && this.uploads.busy());
    this.editor.classList.toggle('ql-blank', !this.text().trim());
    // 2026: never the disabled attribute, only aria-disabled
    if (this.sendButton) this.sendButton.setAttribute('aria-disabled', empty ? 'true' : 'false');
  }

  render() {
    if (state.streaming) {
      // the send button turns into the stop button; the mic stays where it is
      this.sendButton = null;
      this.sendSlot.replaceChildren(h('button', {
        class: 'mdc-icon-button mat-mdc-icon-button mat-mdc-button-base send-button stop', 'aria-label': T26.stop,
        onclick: onStop,
      }, fontIcon(DRIFT ? 'stop_circle' : 'stop', 'gds-icon-xl')));
      return;
    }
    const empty = !(this.text().trim() || (this.uploads && this.uploads.count())) || !!(this.uploads && this.uploads.busy());
    this.sendButton = h('button', {
      class: 'mdc-icon-button mat-mdc-icon-button mat-mdc-button-base send', 'aria-label': T26.send,
      'aria-disabled': empty ? 'true' : 'false',
      onclick: (ev) => {
        if (ev.currentTarget.getAttribute('aria-disabled') === 'true') return;
        if (BOOT.sendClick === 'none') return;
        if (BOOT.sendClick === 'trusted' && !ev.isTrusted) return;  // a script's click() is not a user's click
        send();
      },
    }, h('span', { class: 'mat-mdc-button-persistent-ripple mdc-icon-button__ripple' }),
    fontIcon(DRIFT ? 'arrow_upward' : 'send', 'send-button-icon icon-filled gds-icon-xl'),
    h('span', { class: 'mat-focus-indicator' }), h('span', { class: 'mat-mdc-button-touch-target' }));
    this.sendSlot.replaceChildren(this.sendButton);
  }
}

function buildApp2026() {
  const root = document.querySelector('chat-app');
  const history = new History2026();
  const input = new Input2026();
  const main = h('main', { class: 'chat-container' }, h('chat-window', { class: 'ng-star-inserted' },
    h('div', { class: 'chat-container' }, h('chat-window-content', { class: 'ng-star-inserted' },
      h('h1', { class: 'cdk-visually-hidden' }, T26.conversation), history.el),
    input.el)));
  root.replaceChildren(h('div', { class: 'chat-app' },
    h('header', { class: 'top-bar' }, h('span', { class: 'bard-logo' }, 'Gemini'),
      h('a', { href: '/app', class: 'new-chat', 'aria-label': T.newChat }, T.newChat), tempChatButton()),
    main));
  return { root, history, input, el: root.firstChild };
}

// ---------------------------------------------------------------------------------------------------------------
// Deep Research: the response shows a short note and a chip naming the report; the report streams into a side
// panel <deep-research-immersive-panel> (light DOM in both shapes). Its citations carry the cited URL's 1-based
// place in the panel's source list (`sources` from the server), whose links are the only URLs on the page.

class ReportPanel {
  constructor(response, sources) {
    this.sources = sources;
    this.text = '';
    this.held = response.held;
    this.stale = false;
    this.title = h('h2', { class: 'title-text gds-title-s ng-star-inserted' }, T26.drTitle);
    this.markdown = h('div', {
      class: 'markdown markdown-main-panel stronger enable-updated-hr-color', id: 'extended-response-markdown-content',
      'aria-live': 'off', dir: 'ltr',
    });
    const host = (u) => { try { return new URL(u).hostname.replace(/^www\./, ''); } catch { return u; } };
    this.lists = h('deep-research-source-lists', { class: 'ng-star-inserted' },
      h('collapsible-button', { 'data-test-id': 'used-sources-button' }, h('button', { 'aria-expanded': 'true' },
        h('span', { class: 'gds-title-m' }, T26.drSources))),
      h('div', { class: 'source-list used-sources', 'aria-expanded': 'true' }, ...sources.map((url) =>
        h('browse-web-item', {}, h('a', { 'data-test-id': 'browse-web-item-link', href: url, target: '_blank', rel: 'noopener' },
          h('span', { 'data-test-id': 'content', class: 'link-content' }, h('div', { class: 'browse-item gds-body-m' },
            h('div', { class: 'title-container' }, h('div', { 'data-test-id': 'domain-name', class: 'display-name' }, host(url)),
              h('div', { 'data-test-id': 'sub-title', class: 'sub-title' }, url)))))))));
    this.scroll = h('div', { 'data-test-id': 'scroll-container', class: 'container' },
      h('response-container', { class: 'response-container' }, h('div', { class: 'response-container' },
        h('div', { class: 'presented-response-container' }, h('div', { class: 'response-container-content' },
          h('structured-content-container', { 'data-test-id': 'message-content' }, h('div', { class: 'container' },
            h('message-content', { id: 'extended-response-message-content', class: 'ng-star-inserted' }, this.markdown))))))),
      this.lists);
    this.el = h('deep-research-immersive-panel', { class: 'ng-star-inserted' },
      h('toolbar', {}, h('div', { class: 'toolbar has-title' },
        h('div', { class: 'left-panel' }, fontIcon('travel_explore', 'gds-icon-l'), this.title),
        h('div', { class: 'action-buttons' }, matButton(T26.closePanel, 'close', { 'data-test-id': 'close-button' })))),
      this.scroll);
    (NEW ? app.el : document.body).append(h('immersive-panel', {}, this.el));
    // the response: a short note, then the chip that opens the report
    response.text = T26.drNote;
    response.report = null;
    response.render();
    this.chipLabel = h('span', { class: 'immersive-entry-chip-title' }, T26.drTitle);
    response.content.after(h('immersive-entry-chip', { class: 'ng-star-inserted' }, h('div', { class: 'container' },
      h('button', { class: 'mdc-button mat-mdc-button-base entry-chip', 'data-test-id': 'immersive-entry-chip-button' },
        fontIcon('travel_explore'), this.chipLabel))));
    response.report = this;
    state.responses.push(this);
  }

  setText(text) { this.text = text; this.render(); }

  render() {
    const hidden = document.visibilityState === 'hidden';
    this.stale = hidden;
    const heading = this.text.match(/^#{1,3}\s+(.+)$/m);
    const title = heading ? heading[1].trim() : T26.drTitle;
    this.title.textContent = title;
    this.chipLabel.textContent = title;
    GEMINI_MARKUP.sourceIndex = (url) => this.sources.indexOf(url) + 1;
    try {
      this.markdown.innerHTML = renderMarkdown(this.held ? '' : this.text, { hooks: GEMINI_MARKUP, blank: hidden });
    } finally {
      GEMINI_MARKUP.sourceIndex = null;
    }
  }

  complete() {
    if (!this.scroll.querySelector('.end-of-report-marker')) {
      this.lists.before(h('div', { class: 'end-of-report-marker ng-star-inserted' }));
    }
  }
}

let app;

// Uploads (issue 20), in both shapes; the mode picker, the tools and the upload menu are in menus.js. The request
// carries the page's choice (`mode`, `effort`, `tools`), which holds for this page.
function makeUploader(input, host, onChange) {
  const U = UPLOAD_TEXTS[LANG === 'ja' ? 'ja' : 'en'];
  return fakeUploader({
    input, host, endpoint: '/_/BardChatUi/data/upload', chip: plainChip('uploader-file-preview', U), texts: U, onChange,
    refuseAll: () => BOOT.uploadQuota && showQuotaNotice(host),  // menus.js
    toast: (text) => document.body.append(h('mat-snack-bar-container', { class: 'mat-mdc-snack-bar-container' },
      h('div', { class: 'mat-mdc-snack-bar-label', role: 'status' }, text))),
  });
}

function setStreaming(on) {
  state.streaming = on;
  if (!on) { state.abort = null; state.frozen = false; }
  app.input.render();
}

function onStop() {
  if (state.frozen || !state.abort) return;
  state.abort.abort();
}

function reportComplete(rid) {
  const t = performance.timeOrigin + performance.now();
  fetch('/_/BardChatUi/jslog', {
    method: 'POST', headers: { 'content-type': 'application/json' }, keepalive: true,
    body: JSON.stringify({ event: 'response_complete', rid, t }),
  }).catch(() => {});
}

async function readFrames(response, onFrame) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let first = true;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, cut).trim();
      buf = buf.slice(cut + 1);
      if (first) { first = false; if (line === ")]}'") continue; }
      if (line) onFrame(JSON.parse(line));
    }
  }
}

async function send() {
  if (state.streaming || app.input.uploads.busy()) return;  // no send while a file uploads
  const question = app.input.text().trim();   // read at send time
  if (!question) return;
  const attachments = app.input.uploads.ids();
  app.input.uploads.clear();
  app.input.clear();
  app.input.onChange();
  app.history.addUserQuery(question);
  await streamAnswer({ prompt: question, conversation: state.conversation, attachments, ...currentChoice(),
    ...(GEM ? { gem: GEM } : {}), ...(state.temporary ? { temporary: true } : {}) });
}

// The request and its frames: an answer, or a Deep Research plan (menus.js shows it; its start button streams the
// report through here again).
async function streamAnswer(body) {
  const abort = new AbortController();
  state.abort = abort;
  setStreaming(true);
  let response = null;
  let finished = false;
  try {
    const r = await fetch('/_/BardChatUi/data/assistant.lamda.BardFrontendService/StreamGenerate?hl=' + LANG + '&rt=c', {
      method: 'POST', signal: abort.signal, headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!r.ok) throw new Error('HTTP ' + r.status);
    await readFrames(r, (f) => {
      switch (f.t) {
        case 'meta':
          if (!state.conversation) {
            state.conversation = f.conversation;
            // A temporary chat keeps its URL (a guess, as on the ChatGPT fake).
            if (!state.temporary) history.pushState(null, '', (GEM ? '/gem/' + GEM : '/app') + '/' + f.conversation);
          }
          response = app.history.addModelResponse();
          response.rid = f.rid;
          if (f.renderLagMs > 0) { response.held = true; response.lagMs = f.renderLagMs; }
          if (f.sources) new ReportPanel(response, f.sources);
          break;
        case 'text': response.setText(f.text); break;
        case 'thinking_start': response.startThinking(); break;
        case 'thinking_end': response.endThinking(); break;
        case 'notice':
          finished = true;
          setStreaming(false);
          showLimit(f.place, f.text);
          break;
        case 'error':
          finished = true;
          setStreaming(false);
          app.history.notice(T.netError, true);
          break;
        case 'hang': state.frozen = true; break;
        case 'plan': showResearchPlan(response, f.plan, f.steps); break;  // menus.js
        case 'files': { const shown = geminiGenerated(f.files); if (shown) response.content.after(shown); break; }
        case 'done': {
          finished = true;
          setStreaming(false);
          response.complete();
          const done = response;
          if (done.held) {
            // renderLagMs: stop gone and feedback shown, the text only comes later; the page is done then
            setTimeout(() => { done.release(); reportComplete(done.rid); }, done.lagMs);
          } else {
            reportComplete(done.rid);
          }
          break;
        }
        default: break;
      }
    });
  } catch (err) {
    if (finished) return;
    setStreaming(false);
    if (err && err.name === 'AbortError') {
      if (response) { response.release(); response.complete(); }
    } else {
      console.error('gemini fake: stream failed', err);
      app.history.notice(T.netError);
    }
  }
}

function showLimit(place, text) {
  if (place === 'toast') {
    document.body.append(h('mat-snack-bar-container', { class: 'mat-mdc-snack-bar-container' },
      h('div', { class: 'mat-mdc-snack-bar-label', role: 'status' }, text)));
  } else if (place === 'banner') {
    app.root.prepend(h('div', { class: 'limit-banner', 'data-testid': 'limit-banner', role: 'alert' }, text));
  } else {
    app.history.notice(text, false);
  }
}

async function loadConversation(id) {
  const r = await fetch('/_/BardChatUi/data/conversation/' + encodeURIComponent(id) + '?b=' + encodeURIComponent(BOOT.b || ''));
  if (!r.ok) {
    state.conversation = null;   // a prompt from here starts a new conversation
    if (NEW) {
      // 2026: the URL stays, no turn ever comes, a snack bar says so; the input stays usable
      showLimit('toast', T.loadError);
      return;
    }
    history.replaceState(null, '', '/app');
    app.history.notice(T.loadError);
    return;
  }
  const data = await r.json();
  for (const turn of data.turns) {
    if (turn.role === 'user') app.history.addUserQuery(turn.text);
    else {
      const mr = app.history.addModelResponse();
      mr.rid = turn.messageId;
      if (turn.sources) new ReportPanel(mr, turn.sources);
      mr.setText(turn.text);
      if (turn.inProgress) {
        setStreaming(true);  // still generating on the server, and hanging there
        state.frozen = true;
      } else {
        mr.complete();
      }
    }
  }
}

async function boot() {
  await fetch('/_/BardChatUi/data/bootstrap?b=' + encodeURIComponent(BOOT.b || '')).then((r) => r.json());
  customElements.define('code-block', CodeBlock);
  if (NEW) {
    app = buildApp2026();
    app.input.editor.focus();
    driftDialog();
    if (state.conversation) await loadConversation(state.conversation);
    document.querySelector('.app-loading')?.remove();
    return;
  }
  customElements.define('user-query', UserQuery);
  customElements.define('model-response', ModelResponse);
  customElements.define('chat-history', ChatHistory);
  customElements.define('input-area', InputArea);
  customElements.define('chat-app', ChatApp);   // upgrades the <chat-app> already in the page
  app = document.querySelector('chat-app');
  app.input.editor.focus();
  // The input is there before an existing conversation's turns arrive, as on the real site.
  if (state.conversation) await loadConversation(state.conversation);
  document.querySelector('.app-loading')?.remove();
}

boot();
