"""ChatGPT: selectors, labels, timeouts, completion rule, typing and extraction rules (seed sections 3, 5.1, 6, 9,
13). The one table."""

from __future__ import annotations

from ..page import PageState
from ..table import NOT_YET, Anchor, Completion, Newline, ProviderTable, Timeouts, TypePhase, Watch
from .claude import CHALLENGE_LABELS, CHALLENGE_SELECTORS


def still_generating(s: PageState) -> bool:
    """Seed 3.6: `isStillGenerating` — generating text without the thinking-done marker, or still thinking."""
    return (s.generating_text and not s.thinking_done) or s.skip_thinking or s.thinking


def completion(s: PageState, w: Watch) -> Completion:
    """Seed 3.3's four conditions, evaluated on every state change instead of every second, behind the 2026 page's
    own signal: the turn action buttons (copy, good, bad) that ChatGPT adds to a turn when it is finished. Never
    while the page is still thinking or generating (seed 3.6: completing early would capture an intermediate
    thinking state)."""
    if s.assistant_count <= w.initial_assistant or s.stop or still_generating(s):
        return NOT_YET
    if s.last_has_feedback:
        return Completion(True, "turn action buttons on the new turn")  # 0 (2026)
    if s.send_found and s.send_enabled:
        return Completion(True, "send button enabled again")  # 1
    if w.saw_stop and s.input_empty:
        return Completion(True, "stop button seen then gone")  # 2
    if w.elapsed_s >= 5 and s.input_empty:
        return Completion(True, "5 s fallback")  # 3
    if w.elapsed_s >= 10 and s.input_empty:
        return Completion(True, "10 s thinking fallback")  # 4 (3 already covers it once thinking is over)
    return NOT_YET


TABLE = ProviderTable(
    name="chatgpt",
    title="ChatGPT",
    home_url="https://chatgpt.com/",
    url_patterns=("https://chatgpt.com/*", "https://chat.openai.com/*"),
    # A conversation at the top level, or inside a Project (`/g/g-p-<id>-<slug>/c/<id>`; peers also see
    # `/g/<slug>/project/c/<id>`).
    conversation_re=r"^https://(chatgpt\.com|chat\.openai\.com)/(g/[A-Za-z0-9_-]+/(project/)?)?c/[0-9a-f-]+",
    shadow_dom=False,
    selectors={
        # Today's composer is the ProseMirror div first; the seed's textareas (the older composer) after it, so the
        # probe calls the current site "ok" rather than "fallback".
        "input": ('#prompt-textarea[contenteditable="true"]', '.ProseMirror[contenteditable="true"]',
                  "textarea#prompt-textarea", 'textarea[data-testid="prompt-textarea"]'),
        # The 2026 composer shows no send button while it is empty (see `voice`): send is judged on a typed one.
        "send": ('button[data-testid="send-button"]', 'button[aria-label*="送信"]', 'button[aria-label*="Send"]'),
        # What stands where the send button goes on an empty 2026 composer: the submit slot's button that is not
        # send or stop (whatever the UI language), else by its English or Japanese label.
        "voice": ("button.composer-submit-button-color:not([data-testid])", 'button[aria-label="Start Voice"]',
                  'button[aria-label*="Dictate"]', 'button[aria-label*="音声"]', 'button[data-testid*="voice"]'),
        "stop": ('button[data-testid="stop-button"]',),
        "user": ('[data-message-author-role="user"]',),
        "assistant": ('[data-message-author-role="assistant"]',),
        "turn": ('article[data-turn="assistant"]',),
        "content": (".markdown.prose", ".markdown", ".prose", '[class*="markdown"]'),
        # The turn action buttons of a finished turn (inside the last assistant turn): the completion signal.
        "feedback": ('[data-testid="copy-turn-action-button"]', '[data-testid="good-response-turn-action-button"]',
                     '[data-testid="bad-response-turn-action-button"]'),
        # The model that answered: the message's own slug (without one, the watcher reads the picker's label).
        "model": ('[data-message-model-slug]',),
        # Files and models (issue 20): the composer's own file input (not the photo / camera ones), the chips of
        # attached files with their progress, the model picker (a Radix menu opened by a pointer press) and its items.
        "fileInput": ("input#upload-files", 'form div.hidden > input[type="file"]',
                      'form input[type="file"]:not([accept])', 'input[type="file"]'),
        # The real tile is div[role=group][aria-label=<name>].group/file-tile, no test id (README of the captures;
        # agbrowse); its progress markup is not captured (a guess: a progressbar or a busy or spinning element).
        "attachment": ('[role="group"][class*="file-tile"]', '[data-testid="file-tile"]', 'form [class*="file-tile"]'),
        "attachmentBusy": ('[role="progressbar"]', '[aria-busy="true"]', ".animate-spin"),
        # Models and effort (issue 34): the composer pill of July 2026 (chatgpt-2607-model-menu-open.html: it shows
        # the effort tier; its menu has the tiers and a submenu of models), then the header switcher of Jan 2026
        # (chatgpt-chat-simple.html). Rows are Radix menu items; a chosen one is aria-checked.
        "picker": ('button.__composer-pill[aria-haspopup="menu"]',
                   'button[data-testid="model-switcher-dropdown-button"]'),
        "menu": ('[role="menu"]',),
        "pickerItem": ('[role="menuitemradio"]', '[role="menuitem"]', '[role="menuitemcheckbox"]', ".__menu-item"),
        "pickerChecked": ('[aria-checked="true"]', '[data-state="checked"]'),
        # Tools (issue 34): the composer's "+" menu (chatgpt-2607-file-input-ready.html: "Add files and more", rows
        # div.__menu-item and a search field; the tools show when searched for, as oracle does). A chosen tool is a
        # composer pill named "<tool>, click to remove" (agbrowse's live probe of 2026-06-15; no capture).
        "toolsMenu": ('button[data-testid="composer-plus-btn"]', "button#composer-plus-btn"),
        "toolSearch": ('[role="menu"] input[type="text"]', '[role="menu"] input:not([type])'),
        "toolChip": ('button[aria-label$="click to remove"]', ".__composer-pill-composite"),
        # Deep Research (issue 34). The sent turn is section[data-turn=assistant] with no message element, only this
        # frame: cross-origin and out of process (NX capture 2026-07-29, nuncaeslupus/ai-chat-exporter
        # tests/fixtures/dom-snapshots/chatgpt/deep-research-2026-07.html). Read through its child session
        # (research.py; its host is in shared.js frameHosts).
        "researchFrame": ('iframe[title="internal://deep-research"]', 'iframe[src*="connector-openai-deep-research"]'),
        # Inside that frame the widget renders into a nested same-origin about:blank iframe#root; the shell's own body
        # holds a few characters (NX src/extension/content/deep-research-frame.ts, "lo-6333, measured live"). The
        # frame's own document is read when neither shows.
        "researchDoc": ("iframe#root", "iframe"),
        # Files back (issue 35). No capture shows them: from peers, so guesses. A generated image is an <img> of the
        # turn served from /backend-api/estuary/content, alt "Generated image", in a container id="image-…" or class
        # imagegen-image (oracle src/browser/chatgptImages.ts, agbrowse web-ai/chatgpt-images.mjs); such an answer
        # streams no text and shows no turn actions. A code-sandbox file is a link to sandbox:/mnt/data/<name>
        # (oracle chatgptFiles.ts), fetched by the page's own download API (files_back.js).
        "generatedImage": ('img[src*="/backend-api/estuary/content"]', '[id^="image-"] img', ".imagegen-image img"),
        "fileLink": ('a[href^="sandbox:"]', "a[download][href]"),
        "login": ('button[data-testid="login-button"]', 'a[href*="/auth/login"]'),
        # seed 3.6: only inside the last assistant turn (a button by the input box changes the input mode)
        "expandThinking": ('button[aria-expanded="false"]',),
        # Where ChatGPT shows limits and errors outside the answer: alert boxes in the thread, toasts, banners,
        # error-styled blocks.
        "notice": ('[role="alert"]', '[aria-live="assertive"]', '[data-testid*="toast"]', ".toast-root",
                   '[data-testid*="banner"]', '[class*="text-token-text-error"]',
                   '[class*="border-token-border-error"]'),
        # chatgpt.com is behind Cloudflare too: its bot check instead of the page (issue 40).
        "challenge": CHALLENGE_SELECTORS,
        # Page chrome: never part of an answer, whatever a wide fallback finds next to it.
        "chrome": ("form", "header", "nav", "footer", '[data-testid*="disclaimer"]'),
        "main": ("main",),
    },
    labels={
        "stop": ("Stop generating", "Stop streaming", "生成を停止", "ストリーミングの停止"),
        "skipThinking": ("Skip thinking", "今すぐ回答", "Answer now"),
        "thinking": ("Thinking", "思考中", "Reasoning"),  # the in-progress label, matched exactly
        "thinkingDone": ("Thinking time", "思考時間", "Thought for"),
        "generating": ("is still generating", "generating a response", "回答を生成しています"),
        "login": ("Log in", "ログイン"),
        "rateLimit": ("reached our limit", "reached the limit", "usage cap", "上限に達しました", "too many requests",
                      "limit of messages"),
        "siteError": ("something went wrong", "network error", "error generating", "問題が発生しました",
                      "エラーが発生しました"),
        "retry": ("Retry", "Try again", "Regenerate", "再試行", "もう一度試す", "再生成"),
        # A deleted (or never existing) conversation, in a toast or on the page.
        "unavailable": ("Unable to load conversation", "Conversation not found", "conversation is not available",
                        "conversation isn't available", "会話を読み込めません", "会話が見つかりません"),
        # The disclaimer under the thread: page chrome, never an answer.
        "chrome": ("ChatGPT can make mistakes", "Check important info", "ChatGPT の回答は必ずしも正しいとは限りません"),
        # A file the site refused (its type, its size, too many): the toast that says so.
        # ChatGPT's own upload errors (a 2025 copy of its bundle, README of the captures): "Unable to upload {name}",
        # "… Max {n} uploads at a time", "Too many files uploaded. Maximum number of files at a time is {n}", "File is
        # empty", "This file is corrupted…", "File is too large. Maximum file size is {n}MB", "Uploads with file type
        # … are not supported". The Japanese ones are guesses.
        "attachRefused": ("unable to upload", "uploads at a time", "too many files uploaded", "file is empty",
                          "file is corrupted", "file is too large", "are not supported", "not supported",
                          "failed to upload", "サポートされていない", "大きすぎ", "アップロードできません"),
        "challenge": CHALLENGE_LABELS,
        "answerMarkers": ("ChatGPT said:", "ChatGPT:"),  # seed 3.5 P5
        "endMarkers": ("You said:", "あなた:", "You:"),
        # The tools' rows (agbrowse 2026-06-15; oracle also accepts "Get a detailed report"); the chips say "Search"
        # for web search. The Japanese names are guesses.
        "toolDeepResearch": ("Deep research", "Get a detailed report", "ディープリサーチ"),
        "toolWebSearch": ("Web search", "Search", "ウェブ検索"),
        # Inside the Deep Research frame (RESEARCH.md 2.3). The plan card's buttons are Edit / Cancel / Start with
        # "Plan starts in NN seconds." (agbrowse's live probe, 2026-06-15); agbrowse also presses "Start research" and
        # "Confirm" (web-ai/chatgpt-deep-research.mjs:34-40): matched exactly, on buttons only.
        "frameStart": ("Start", "Start research", "Confirm"),
        # Done: the frame's text says "Research completed" and the report follows a "Deep research report" heading,
        # after counter lines "N citations" / "N sources" / "N searches" (oracle src/browser/actions/deepResearch.ts,
        # its frame status expression). Progress: oracle's and agbrowse's markers (the exact lines are a guess).
        "researchDone": ("Research completed",),
        "reportHeading": ("Deep research report",),
        "researchCounters": ("citations", "citation", "sources", "source", "searches", "search"),
        "researchProgress": ("Researching", "Reading sources", "Searching the web", "Considering", "Planning",
                             "Plan starts in"),
    },
    timeouts=Timeouts(input_s=30.0, user_message_s=15.0),
    completion=completion,
    type_phases=(TypePhase.JS, TypePhase.INSERT_TEXT, TypePhase.KEYS),
    newline=Newline.SHIFT_ENTER,
    # The whole turn before its paragraphs: a turn whose content class was renamed keeps its code blocks and tables
    # read by the turn (issue 37); the paragraphs are plain text.
    anchors=(Anchor.CONTENT, Anchor.TURN, Anchor.PARAGRAPHS, Anchor.BODY),
    # A Project's page, where its new chats start (oracle and agbrowse drive `https://chatgpt.com/g/g-p-<id>-<slug>/
    # project`).
    chat_base_re=r"^https://chatgpt\.com/g/g-p-[A-Za-z0-9_-]+/project/?(\?[^#]*)?$",
    # A temporary chat opens at this URL (oracle's `--chatgpt-url`, agbrowse's archive rule). What the page shows
    # while it is on is a guess (no capture of the 2026 page shows it): the composer's "Temporary Chat" heading.
    temporary_url="https://chatgpt.com/?temporary-chat=true",
    temporary_on=('[data-testid="temporary-chat-label"]', 'h1[aria-label*="Temporary" i]'),
)
