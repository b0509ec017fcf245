"""Local imitations of chatgpt.com, gemini.google.com, claude.ai, grok.com and www.perplexity.ai for tests and
benchmarks.

Claude, Grok and Perplexity (issue 40) are one generic chat client (common/chatsite.js, served by chatsites.py)
dressed by each site's app.js after its captures (../shared/real-dom/, cited in each app.js header; guesses marked):
Claude's [data-is-streaming] answers beside their action bar, its thinking kept in its own .standard-markdown above
the answer, its inert server-rendered editor under the live one, its picker's Effort submenu and Thinking switch and
"Upgrade" rows; Grok's tiptap editor, disabled submit button, [data-testid=code-block] and a picker whose choice shows
only on its trigger; Perplexity's Lexical #ask-input, tab-panel turns, action bar and span.citation links. They take
the same control API (scripts and page options below; ``shape``, ``layout``, ``editor``, ``picker``, ``toolsMenu``
and the Gemini-only options do not apply), stream as ChatGPT does, render nothing in a hidden tab, hold text back with
``renderLagMs``, show limits in a turn, an alert, a toast or a banner (Claude's alert band), and
``challenge: true`` (a page option, ChatGPT too) serves Cloudflare's "Just a moment..." interstitial instead of the
site. Pages: ``https://claude.ai/new`` (``/`` redirects there) and ``/chat/<uuid>``, ``https://grok.com/`` and
``/c/<uuid>``, ``https://www.perplexity.ai/`` and ``/search/<slug>``.

The fakes reproduce the DOM that provider code is written against, in two shapes (page option ``shape``): "2026"
(default), the markup captured from the real sites in Jan-Feb 2026 (ChatGPT: ProseMirror ``#prompt-textarea``, no
send button while the composer is empty ("Start Voice"/"Dictate button"), ``button[data-testid=send-button]`` once
it has text, ``stop-button`` "Stop streaming", ``article[data-turn]`` turns with ``data-message-model-slug``,
``.markdown.prose``, copy/good/bad/Share/Switch model/More actions turn actions, a model switcher, a disclaimer,
QuillBot's buttons; Gemini: all in the light DOM, ``model-response > ... > message-content > .markdown``, empty
``mat-icon[fonticon][data-mat-icon-name]`` icons (thumb_up, thumb_down, refresh, content_copy, more_vert, mic,
send, stop, volume_up, add_2), a send button with ``aria-disabled``, a mic that stays while answering, a mode
picker, a disclaimer, Deep Research in ``deep-research-immersive-panel``) and "2025", the spec's older picture
(ChatGPT's send button always there, disabled while empty; Gemini: custom elements with open shadow roots,
``[role=textbox]``, ``mat-icon[data-mat-icon-name=send]``, ``img[alt=mic|thumb_up|thumb_down]``); both with
``<model-thoughts>`` / Thinking mode. The app.js files start with a DOM outline of each shape. The fakes also show
the awkward ways the real sites behave: a hidden tab renders no answer text (both sites strip it when the page is
hidden and render it again in the first animation frame after it is visible, or ``rerenderDelayMs`` later), text
that renders after the stop button went (``renderLagMs``), a conversation that no longer loads, limit notices
outside the answer (alert boxes, toasts, banners), "Something went wrong" with a Retry button, a stuck stop button
(with the server finished, or hanging too), no answer, login page, slow boot, a conversation's turns arriving after
the input box, send buttons that ignore script clicks, answers in unusual places of the DOM, i18n strings in an
inline script of the body. Answers stream from the server, so the server logs exactly what was asked and controls
the timing. No test hook is visible in the pages' DOM.

Starting
========

``python -m tests.fakesites --cert-dir DIR [--chatgpt-port 0 ... --perplexity-port 0] [--ignore-stdin] [--verbose]``
(from the repository root) writes a CA and a leaf certificate for every site's host names (``flags.HOSTS``),
``localhost`` and ``127.0.0.1`` into DIR, prints ONE JSON line to stdout::

    {"ports": {"chatgpt": 40123, ...}, "chatgptPort": 40123, "geminiPort": 40125, "claudePort": 40127,
     "grokPort": 40129, "perplexityPort": 40131, "host": "127.0.0.1", "caCert": ".../ca.pem",
     "certFile": ".../server.pem", "keyFile": ".../server.key", "spki": "<base64 sha256 of the SPKI>", "pid": 123}

and serves HTTPS (h2 + http/1.1) until SIGTERM/SIGINT or EOF on stdin. Point Chromium at it with::

    --host-resolver-rules=MAP chatgpt.com 127.0.0.1:<chatgptPort>, MAP gemini.google.com 127.0.0.1:<geminiPort>,
        MAP claude.ai ..., MAP grok.com ..., MAP www.perplexity.ai ..., MAP perplexity.ai ...,
        MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1
    --ignore-certificate-errors-spki-list=<spki>

In tests use :func:`tests.fakesites.fixture.start_fakesites` (a subprocess; ``chromium_args()`` builds both
flags, in ``flags.py``) and its control clients; in-process use :func:`tests.fakesites.server.serve_sites`.

This folder also ships with ai-bridge, as ``supervisor/_fakesites`` in the wheel (pyproject's force-include):
``ai-bridge demo`` serves these sites in-process with the certificate in ``tls/`` (made once by
``make_certificates``; ``python -m tests.fakesites --remake-shipped-certificate`` makes a new one), so keep
``server.py`` free of imports the package does not install (trustme and cryptography are imported only to make a
certificate).

Pages: ``https://chatgpt.com/`` (and ``/c/<uuid>``), ``https://gemini.google.com/app`` (and ``/app/<16 hex>``;
``/`` redirects to ``/app``).

Control API (the same on every site, on the site's own port; JSON in and out)
=============================================================================

``POST /__control`` — script what comes next. Body fields (all optional):

``next``: a *script* for the coming questions, with ``count``: how many (``null``/absent = until reset or
replaced). ``answers``: a list of scripts, one per coming question, in order. ``append``: add to the queue
instead of replacing it (default false). ``page``: page-load options (replace the current ones), with their own
``count`` (number of page loads; absent = until reset). Answer: the new state (as ``GET /__control``).
Unknown fields are rejected with 400 and a message.

*Script* fields (defaults = the benchmark's standard 1.3 s generation)::

    text          null     literal markdown answer; null = use ``rule``. Rendered as the site renders an answer
                           (common/markdown.js: markdown-it, GFM tables / strikethrough / autolinks, newlines as
                           line breaks, $…$ / $$…$$ math, task items, ``{{cite:Label|URL}}`` citation markers)
    rule          default  "default": deterministic answer derived from the question (see below) | "echo"
    chunks        10       streamed chunks
    intervalMs    100      pause between chunks
    firstTokenMs  400      pause from receiving the question to the first chunk (or to thinking start)
    thinking      false    think first. ChatGPT: "Skip thinking"/"今すぐ回答" button and a "Thinking"/"思考中"
                           label, then a collapsed "Thinking time: Xs"/"思考時間: Xs" button in the turn. Gemini:
                           <model-thoughts> with a "Thinking"/"思考中" label, then a "Show thinking" button
    thinkingMs    2000     thinking duration; a click on ChatGPT's Skip thinking ends it early
    stuck         false    stream the text, then never finish on this page: the stop button stays (clicking it
                           does nothing). The server finished: a reload shows the whole answer
    hangsOnReload false    with stuck: the server hangs too, so a reload shows the partial answer still being
                           generated (stop button up, forever)
    neverAnswer   false    the user turn appears, no assistant turn ever does (stop button stays); the
                           conversation keeps the question, so a reload of it shows the question unanswered
    rateLimited   false    answer with the site's rate-limit text, "You've reached our limit of messages. Please
                           try again later." / Gemini "You've reached your limit for now. ..."
    notice        turn     where the limit shows: "turn" (ChatGPT: HTTP 429 rendered as an error-styled assistant
                           turn; Gemini: a plain model response), "alert" (a role=alert box in the thread),
                           "toast" (ChatGPT [data-testid=toast-root]; Gemini mat-snack-bar-container), "banner"
    siteError     false    the stream breaks after ``errorAfterChunks`` chunks (default 0): "Something went
                           wrong" with a Retry button (ChatGPT: an error block in the turn; Gemini: an alert)
    renderLagMs   0        the text renders only this long AFTER the stop button went: while streaming the turn
                           stays empty; turn actions / feedback buttons appear when the stop goes, BEFORE the
                           text. ``completedAtMs`` is stamped when the text rendered
    deepResearch  false    Gemini: a Deep Research report. The response shows a short note and an
                           <immersive-entry-chip> naming the report (its first heading); ``text`` streams into
                           <deep-research-immersive-panel> (h2.title-text, message-content#extended-response-
                           message-content > div.markdown#extended-response-markdown-content). Citations are
                           ``{{cite:Label|URL}}``: source-footnote > sup.superscript[data-turn-source-index=N] plus a
                           sources-carousel-inline chip (no URL); N is the URL's 1-based place in the panel's list
                           <deep-research-source-lists> a[data-test-id=browse-web-item-link][href] = ``sources``
                           (optional) then cited URLs not in it, in order of first citation. Logged as ``sources``
    sources       null     Deep Research: the source list's URLs in order (see deepResearch)

Time from question to completion = firstTokenMs + (thinking ? thinkingMs : 0) + (chunks - 1) * intervalMs.

The default rule (:func:`tests.fakesites.scripting.default_answer`): mentions ``answer_ref(question)`` (8 hex
digits), names the question's topic words ("It is about ...": its words of 3+ letters; Japanese: its kanji and
katakana runs), repeats every number of the question, has a bullet list and a numbered list, a fenced code block
when the question asks for code (code, function, script, python, コード, 関数 ...), and eight more paragraphs
(over 1500 characters) when it asks for detail (in detail, step by step, comprehensive, 詳しく ...). Japanese
questions get a Japanese answer. An unscripted question that asks the model to think (think carefully, reason
step by step, よく考えて ...) is answered with ``thinking`` on, as a model in "auto" mode decides to think.

*Page* fields::

    lang        en           "en" | "ja": UI labels (aria-labels, buttons), <html lang>, rate-limit text
    login       false        logged-out page: no input box, a "Log in"/"ログイン" button
    slowBootMs  0            the app's boot request is answered this late: readyState is complete at once but
                             the input box (ChatGPT) / the custom elements (Gemini) appear only after it
    editor      prosemirror  ChatGPT: "prosemirror" (contenteditable div#prompt-textarea) | "textarea"
    historyDelayMs 0         an existing conversation's turns arrive this late after the input box
    sendClick   any          the send button answers "any" click, only "trusted" (real mouse) clicks, or "none"
                             (only Enter sends)
    layout      standard     where the answer text lives, to pin each extraction anchor. ChatGPT: "standard"
                             (.markdown.prose), "bare" (no markdown class: <p>s), "divs" (no class, no <p>),
                             "detached" (the text follows the turn, outside it). Gemini: "standard", "nofeedback"
                             (no thumb icons), "detached" (the text in an aria-live region outside the response)
    drift       false        the site changed under us: renamed test ids / icons, a moved input, German UI
    shape       2026         "2026": the markup of the real sites as captured in Jan-Feb 2026; "2025": the spec's
                             older markup, exactly as before (see the top of each app.js for both outlines)
    extensionButtons true    2026: another extension's (QuillBot's) buttons in each answer's actions and in the
                             composer
    model       5.2          ChatGPT 2026: the model switcher's model ("Model selector, current model is 5.2")
                             and each answer's data-message-model-slug ("gpt-5-2")
    rerenderDelayMs 0        a hidden tab's stale answer text re-renders this long after the page became visible
                             (0: in the next animation frame)
    stopDelayMs 0            ChatGPT: the site answers this long after the user turn shows; until then the
                             composer stays idle (no stop button, no new turn), so the previous answer looks finished
    uploadMs    300          uploads (issue 20): each file chosen in the composer's file input (ChatGPT
                             ``form div.hidden > input[type=file]``; Gemini ``uploader input[type=file]``) shows a
                             chip (ChatGPT ``div[data-testid=file-tile]``, Gemini ``uploader-file-preview``, both with
                             data-filename) with a ``role=progressbar`` while its bytes are POSTed to the site and
                             for at least this long; no send while one uploads; the message carries the file ids
    uploadMaxBytes 20 MiB    a bigger file is refused with a toast "<name> is too large to upload"
    uploadMaxFiles 10        more files at once are refused: "You can only upload N files at a time"
    uploadRefuse [.exe, .dmg] refused name endings: "File type not supported: <name>" (toasts: ChatGPT
                             ``toast-root``, Gemini ``mat-snack-bar-container``)
    count       null         number of page loads these apply to (null = until reset)

Pickers (issue 20), chosen per page (a reload shows the default again): ChatGPT 2026's model switcher opens a Radix
menu on a pointer press (not on a script's click): ``[role=menu]`` with ``[role=menuitemradio][aria-checked]`` items
Auto, Instant, Thinking, Pro; the choice shows in the switcher, each answer's ``data-message-model-slug``
(``gpt-5-2-thinking``) and the request's model. Gemini (both shapes): ``bard-mode-switcher >
button[data-test-id=bard-mode-menu-button]`` opens a mat-menu panel in the cdk overlay, ``button[role=menuitem]``
items Fast, Thinking, Pro (高速モード, 思考モード, Pro); the choice shows in the label pill and the request's mode.

``delete``: a list of conversation ids deleted elsewhere (``SiteControl.delete_conversation``): loading one (as
any unknown id) fails. 2026: the URL stays, no turns ever come, the composer is usable and a notice shows
(ChatGPT: toast ``div[data-testid=toast-root][role=status]`` "Unable to load conversation <id>" / "会話を読み込め
ません"; Gemini: ``mat-snack-bar-container`` "Couldn't load this conversation." / "この会話を読み込めませんでした。").
2025: the old behaviour (ChatGPT: a role=alert notice and the URL goes back to /; Gemini: an alert in the history,
URL /app). A question asked from such a page starts a new conversation.

``GET /__control`` — current queue, page options, the script defaults and the deleted conversation ids.

``GET /__log`` — ``{"site", "questions": [...], "pages": [...]}``. One question entry per question received::

    seq, site, question (exactly what the page read from its editor at send time), receivedAtMs,
    conversationId, messageId, script (the effective script), answer (markdown), status, firstTokenAtMs,
    thinkingSeconds, thinkingSkipped, streamEndAtMs, completedAtMs, sources (Deep Research: the source list),
    attachments (the files sent with it: name, size, sha256 of the bytes received), model (ChatGPT: the model slug
    the request named, "auto" on the 2025 page; Gemini: the mode label)

``status``: received | thinking | streaming | complete | rate_limited | stuck | never | error (siteError) |
disconnected (the page went away or clicked stop) | aborted (``/__reset`` during the answer). All times are
wall-clock epoch ms (floats). ``streamEndAtMs``: server time right after the transport accepted the final chunk.
``completedAtMs``: reported by the page, ``performance.timeOrigin + performance.now()`` taken right after it
switched its UI to idle (stop button gone, send button back; Gemini also feedback buttons and mic) and the text
is rendered (with ``renderLagMs``, that is when the held-back text rendered) — the moment
a detector could first see completion, so detection latency = detection time - completedAtMs exactly (same
machine, same wall clock). It arrives by a telemetry request a few ms after the switch (poll ``/__log``).
Stuck / never-answered / stopped answers have none, nor do limits shown outside a turn. In a hidden tab the UI
still goes idle (text empty) and that moment is reported. ``pages`` lists page loads (path, time, page options).

``POST /__reset`` — clear the queue, page options, log and conversations; ends hanging streams. ``?all=1``: every
site of the server at once.
"""
