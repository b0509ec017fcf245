"""Local imitations of chatgpt.com and gemini.google.com for tests and benchmarks.

The fakes reproduce the DOM that provider code is written against (ChatGPT: ProseMirror ``#prompt-textarea``,
``button[data-testid=send-button]``/stop button, ``article[data-turn]`` turns, ``.markdown.prose``, Thinking mode;
Gemini: custom elements with open shadow roots, ``[role=textbox]``, ``mat-icon[data-mat-icon-name=send]``,
``img[alt=mic|thumb_up|thumb_down]``, ``<model-thoughts>``) and the awkward ways the real sites behave: a hidden
tab renders no answer text (both sites strip it when the page is hidden and render it again in the first animation
frame after it is visible), limit notices outside the answer (alert boxes, toasts, banners), "Something went wrong"
with a Retry button, a stuck stop button (with the server finished, or hanging too), no answer, login page, slow
boot, a conversation's turns arriving after the input box, send buttons that ignore script clicks, answers in
unusual places of the DOM, i18n strings in an inline script of the body. Answers stream from the server, so the
server logs exactly what was asked and controls the timing. No test hook is visible in the pages' DOM.

Starting
========

``python -m tests.fakesites --chatgpt-port 0 --gemini-port 0 --cert-dir DIR [--ignore-stdin] [--verbose]``
(from the repository root) writes a CA and a leaf certificate for ``chatgpt.com``, ``gemini.google.com``,
``localhost`` and ``127.0.0.1`` into DIR, prints ONE JSON line to stdout::

    {"chatgptPort": 40123, "geminiPort": 40125, "host": "127.0.0.1", "caCert": ".../ca.pem",
     "certFile": ".../server.pem", "keyFile": ".../server.key", "spki": "<base64 sha256 of the SPKI>", "pid": 123}

and serves HTTPS (h2 + http/1.1) until SIGTERM/SIGINT or EOF on stdin. Point Chromium at it with::

    --host-resolver-rules=MAP chatgpt.com 127.0.0.1:<chatgptPort>, MAP gemini.google.com 127.0.0.1:<geminiPort>,
        MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1
    --ignore-certificate-errors-spki-list=<spki>

In tests use :func:`tests.fakesites.fixture.start_fakesites` (a subprocess; ``chromium_args()`` builds both
flags) and its control clients; in-process use :func:`tests.fakesites.server.serve_sites`.

Pages: ``https://chatgpt.com/`` (and ``/c/<uuid>``), ``https://gemini.google.com/app`` (and ``/app/<16 hex>``;
``/`` redirects to ``/app``).

Control API (same on both sites, on the site's own port; JSON in and out)
========================================================================

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
    count       null         number of page loads these apply to (null = until reset)

``GET /__control`` — current queue, page options and the script defaults.

``GET /__log`` — ``{"site", "questions": [...], "pages": [...]}``. One question entry per question received::

    seq, site, question (exactly what the page read from its editor at send time), receivedAtMs,
    conversationId, messageId, script (the effective script), answer (markdown), status, firstTokenAtMs,
    thinkingSeconds, thinkingSkipped, streamEndAtMs, completedAtMs

``status``: received | thinking | streaming | complete | rate_limited | stuck | never | error (siteError) |
disconnected (the page went away or clicked stop) | aborted (``/__reset`` during the answer). All times are
wall-clock epoch ms (floats). ``streamEndAtMs``: server time right after the transport accepted the final chunk.
``completedAtMs``: reported by the page, ``performance.timeOrigin + performance.now()`` taken right after it
switched its UI to idle (stop button gone, send button back; Gemini also feedback buttons and mic) — the moment
a detector could first see completion, so detection latency = detection time - completedAtMs exactly (same
machine, same wall clock). It arrives by a telemetry request a few ms after the switch (poll ``/__log``).
Stuck / never-answered / stopped answers have none, nor do limits shown outside a turn. In a hidden tab the UI
still goes idle (text empty) and that moment is reported. ``pages`` lists page loads (path, time, page options).

``POST /__reset`` — clear the queue, page options, log and conversations; ends hanging streams.
"""
