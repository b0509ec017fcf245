"""Gemini: selectors, labels, timeouts, completion rule, typing and extraction rules (seed sections 4, 5.2-5.4,
9.3). The one table.

The 2026 page renders its custom elements in the light DOM, and its icons are Material font icons
(`mat-icon[data-mat-icon-name=thumb_up]`); the seed's 2025 page put everything in open shadow roots with `img alt`
icons. Both stay in the table, the current shapes first: every selector is also searched in open shadow roots
(collectDeep), and icon names are language-independent (seed 5.4).
"""

from __future__ import annotations

from ..page import PageState
from ..table import NOT_YET, QUIET_S, Anchor, Completion, Newline, ProviderTable, Timeouts, TypePhase, Watch


def completion(s: PageState, w: Watch) -> Completion:
    """Seed 4.3: five conditions by priority plus the fallback, evaluated on every state change. Never while a
    thinking indicator shows (a Pro / Deep Think answer thinks quietly for minutes). On the 2026 page the mic stays
    up while an answer streams and the send button is aria-disabled with an empty input, so 0 (the feedback icons
    of the new response) is what fires there; 1 and 2 are the seed's."""
    if s.assistant_count <= w.initial_assistant or s.stop or s.thinking:
        return NOT_YET
    if w.saw_stop and s.last_has_feedback:
        return Completion(True, "feedback buttons on the new response")  # 0
    if w.saw_stop and s.mic_found:
        return Completion(True, "mic button back")  # 1
    if w.saw_stop and s.send_found and s.send_enabled and s.input_empty:
        return Completion(True, "send button enabled, input empty")  # 2
    if w.saw_stop and not s.stop and w.quiet_s >= QUIET_S and s.last_len > 0:
        return Completion(True, "stop button gone, page quiet")  # issue 37: whatever the icons are named
    if w.text_stable_s >= 5 and s.last_len > 0:
        return Completion(True, "text stable for 5 s")  # 3
    if w.elapsed_s > 10 and not w.saw_stop:
        return Completion(True, "10 s fallback without a stop button")  # FB
    return NOT_YET


UPLOAD_AND_TOOLS = ('button[aria-label="Upload and tools"]', 'button[aria-label="Upload & tools"]',
                    'uploader button[aria-haspopup="menu"]')

TABLE = ProviderTable(
    name="gemini",
    title="Gemini",
    home_url="https://gemini.google.com/app",
    url_patterns=("https://gemini.google.com/*",),
    # A conversation at /app/<16 hex>, or inside a Gem: /gem/<gem id>/<16 hex> (public exports of 2026 link these).
    conversation_re=r"^https://gemini\.google\.com/(app|gem/[A-Za-z0-9_-]+)/[0-9a-f]+",
    shadow_dom=True,
    selectors={
        "input": ('[role="textbox"][contenteditable="true"]', '[role="textbox"]', 'div[contenteditable="true"]',
                  "textarea"),
        # aria-disabled="true" (no disabled attribute) while the input is empty, on the 2026 page
        "send": ('button:has(mat-icon[data-mat-icon-name="send"])', 'button[aria-label*="送信"]',
                 'button[aria-label*="Send"]'),
        "sendIcon": ('mat-icon[data-mat-icon-name="send"]',),
        "stop": ('button:has(mat-icon[data-mat-icon-name="stop"])', 'button[aria-label*="Stop"]',
                 'button[aria-label*="停止"]'),
        "user": ("user-query", ".user-query"),
        "assistant": ("model-response",),
        "content": (".markdown.markdown-main-panel", ".markdown", "message-content", ".model-response-text"),
        # Material font icons in 2026; the seed's img alt icons after them
        "mic": ('mat-icon[data-mat-icon-name="mic"]', 'mat-icon[fonticon="mic"]', 'img[alt="mic"]'),
        "feedback": ('mat-icon[data-mat-icon-name="thumb_up"]', 'mat-icon[data-mat-icon-name="thumb_down"]',
                     'mat-icon[fonticon="thumb_up"]', 'img[alt="thumb_up"]', 'img[alt="thumb_down"]'),
        # Files back (issue 35). No capture shows them, and no peer reads them from the page: a guess from public
        # notes (Feb and Aug 2026): div.attachment-container.generated-images > generated-image >
        # single-image.generated-image … img[src*="googleusercontent.com/gg-dl/"], alt ending ", AI generated".
        "generatedImage": ("generated-image img", "single-image.generated-image img",
                           'img[src*="googleusercontent.com/gg-dl/"]'),
        # The mode picker's label names the model ("Fast", "Thinking", "Pro"; 高速モード …)
        "model": ('[data-test-id="bard-mode-menu-button"] [data-test-id="logo-pill-label-container"]',
                  'button[data-test-id="bard-mode-menu-button"]', "bard-mode-switcher button"),
        # Files and modes (issue 20): the uploader's file input, the chips of attached files with their progress,
        # the mode picker and its menu's items.
        "fileInput": ('uploader input[type="file"]', 'input[type="file"].hidden-local-file-input',
                      'input[type="file"]'),
        "attachment": ("uploader-file-preview", '[data-test-id="file-preview"]', ".file-preview-container"),
        "attachmentBusy": ('[role="progressbar"]', "mat-progress-spinner", ".loading", '[aria-busy="true"]'),
        # Models and effort (issue 34): the mode picker's rows are gem-menu-item[data-mode-id] with a span.label
        # ("3.1 Pro"), the chosen one's gem-menu-item-content.selected (gemini-2607-model-menu-open.html; data-active
        # is only the keyboard highlight); "Extended thinking" is a switch row in the same menu
        # (gemini-2607-extended-thinking.html). The 2025 shape's rows are button[role=menuitem].is-selected.
        "picker": ('button[data-test-id="bard-mode-menu-button"]', "bard-mode-switcher button"),
        "menu": ('[role="menu"]',),
        "pickerItem": ('gem-menu-item[role="menuitem"]', '[role="menuitem"]', '[role="menuitemradio"]',
                       '[role="menuitemcheckbox"]'),
        "pickerLabel": ("gem-menu-item-content .label", ".mode-title"),
        "pickerChecked": ("gem-menu-item-content.selected", ".is-selected", '[aria-checked="true"]'),
        # Tools (issue 34) and uploads (issue 35) share "Upload and tools" (gemini-2607-file-input-ready.html; other
        # peers read "Upload & tools"). The tools' rows are menuitemcheckbox and a chosen tool shows a "Deselect …"
        # chip (README of the captures; agbrowse, oracle: .toolbox-drawer-item-deselect-button).
        "toolsMenu": UPLOAD_AND_TOOLS,
        "toolChip": ('button[aria-label^="Deselect"]', ".toolbox-drawer-item-deselect-button"),
        # No file input at rest (gemini-2607-composer-idle.html): "Upload files" opens a chooser with one it makes.
        "uploadMenu": UPLOAD_AND_TOOLS,
        "uploadItem": ('[data-test-id="local-images-files-uploader-button"]',
                       'button[data-test-id="hidden-local-file-upload-button"]'),
        # The quota notice (gemini-chat-simple.html holds the element, empty; its text is not captured).
        "attachNotice": ("freemium-file-upload-quota-exceeded-disclaimer",),
        "thinkingIndicator": ("model-thoughts", ".thoughts-header", '[class*="thinking"]'),
        # A Deep Research report: its own panel beside the chat, opened from a chip in the response
        "report": ("deep-research-immersive-panel #extended-response-markdown-content",
                   "#extended-response-markdown-content"),
        "reportEntry": ("immersive-entry-chip", '[data-test-id*="immersive-entry"]'),
        # the report's sources in order: data-turn-source-index N is the N-th link
        "reportSources": ('deep-research-source-lists a[data-test-id="browse-web-item-link"]',
                          '#used-sources-list a[data-test-id="browse-web-item-link"]',
                          'deep-research-source-lists a[href]'),
        # A Deep Research ask first gets a plan to confirm (a capture of July 28, 2026 in nuncaeslupus/
        # ai-chat-exporter): deep-research-confirmation-widget with gem-button[data-test-id=confirm-button] > button
        # "Start research" (disabled and inert once started).
        "researchStart": ('gem-button[data-test-id="confirm-button"] button',
                          'deep-research-confirmation-widget button[aria-label="Start research"]'),
        "login": ('a[aria-label*="Sign in"]', 'a[href*="ServiceLogin"]', 'button[data-test-id="login-button"]'),
        "notice": ('[role="alert"]', '[aria-live="assertive"]', "snack-bar-container", "mat-snack-bar-container",
                   ".mat-mdc-snack-bar-container", '[class*="error-message"]', ".error"),
        # Page chrome: never part of an answer, whatever a wide fallback finds next to it.
        "chrome": ("hallucination-disclaimer", '[data-test-id="disclaimer"]', "input-container", "input-area-v2",
                   "input-area", "header", "nav", "footer", "bard-sidenav"),
    },
    labels={
        "stop": ("Stop response", "Stop", "回答を停止", "停止"),
        "skipThinking": (),
        "thinking": ("Thinking", "Thinking…", "Thinking...", "思考中", "思考中…", "考え中"),  # matched exactly
        "thinkingDone": (),
        "generating": (),
        "login": ("Sign in", "Log in", "ログイン"),
        "rateLimit": ("reached your limit", "limit for now", "上限に達しています", "上限に達しました",
                      "too many requests"),
        "siteError": ("something went wrong", "network error", "問題が発生しました", "エラーが発生しました"),
        "retry": ("Retry", "Try again", "再試行", "もう一度試す"),
        "unavailable": ("Couldn't load this conversation", "Conversation not found", "この会話を読み込めませんでした",
                        "会話が見つかりません"),
        "chrome": ("Gemini can make mistakes", "Gemini may display inaccurate info",
                   "Gemini は AI であり、間違えることがあります"),
        "attachRefused": ("not supported", "unsupported", "too large", "can only upload", "upload up to",
                          "couldn't upload", "failed to upload", "サポートされていない", "大きすぎ",
                          "アップロードできません"),
        "answerMarkers": (),
        "endMarkers": (),
        # Effort and tools (issue 34): the Extended thinking switch (gemini-2607-extended-thinking.html) and the
        # tools' rows (no capture: the names from the README of the captures; the Japanese ones are guesses).
        "effortToggle": ("Extended thinking", "拡張思考"),
        "startResearch": ("Start research", "リサーチを開始"),  # the Japanese one is a guess
        "toolDeepResearch": ("Deep Research",),
        "toolDeepThink": ("Deep Think",),
        "toolCanvas": ("Canvas",),
    },
    timeouts=Timeouts(input_s=15.0, user_message_s=8.0),
    completion=completion,
    type_phases=(TypePhase.JS, TypePhase.INSERT_TEXT),
    newline=Newline.SHIFT_ENTER,
    # The report first (a Deep Research turn), then the response's own content; the seed's P1 (the box around the
    # feedback icons) is kept where it holds that content.
    anchors=(Anchor.REPORT, Anchor.CONTENT, Anchor.FEEDBACK, Anchor.TURN, Anchor.ARIA_LIVE),
    # The page shows an image at 1024 px (a "=s1024-rj" URL); "=s0" asks the image host for its own size (a guess:
    # oracle asks the HTTP API for "=s2048"). When that fails, the image as shown.
    image_full_size=(r"=[a-z]\d+(-[a-z]+)*$", "=s0"),
    limit_as_answer=True,  # Gemini gives its limit as a model response
    # A Gem's page, where its chats start: /gem/<id> (ids such as "1RrpDHQocP7E…" or "coding-partner").
    chat_base_re=r"^https://gemini\.google\.com/gem/[A-Za-z0-9_-]+/?(\?[^#]*)?$",
    # Gemini's temporary chat is a button of a new chat's page (`temp-chat-button`, data-test-id "temp-chat-button",
    # aria-label "Temporary chat"; userscripts of 2025-26 click it). That it carries "temp-chat-on" while on is from
    # one of them; the Japanese label is a guess.
    temporary_toggle=('button[data-test-id="temp-chat-button"]', 'temp-chat-button button',
                      'button[aria-label="Temporary chat"]', 'button[aria-label="一時チャット"]'),
    temporary_on=('button[data-test-id="temp-chat-button"].temp-chat-on', 'temp-chat-button button.temp-chat-on',
                  '.temporary-chat-card'),
)
