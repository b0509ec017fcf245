"""The fake claude.ai, grok.com and www.perplexity.ai (issue 40): one quart-trio app each, all three the same app over
a `ChatSpec` (the site's page paths, title and login page words). Their pages are one generic chat client
(common/chatsite.js) dressed by each site's own app.js, which builds the markup the captures show; answers stream as
ChatGPT's do (server-sent events), so every script of the control API works on them too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from quart import Response, request
from quart_trio import QuartTrio

from .scripting import SiteState

NO_STORE = {"Cache-Control": "no-store"}


@dataclass(frozen=True)
class ChatSpec:
    name: str  # the SiteState's name, the folder of its app.js and app.css
    title: str  # <title> of its pages
    home: str  # the page of a new chat
    conversation: str  # the route of a conversation's page (one <cid> part)
    login_words: tuple[str, ...]  # the signed-out page's buttons (the table's login labels match them)
    login_testid: str  # the signed-out page's own element (the table's login selector)


SPECS = {
    # claude-chat-simple.html: https://claude.ai/chat/{conversation-id}; a new chat is /new.
    "claude": ChatSpec("claude", "Claude", "/new", "/chat/<cid>", ("Continue with Google", "Continue with email"),
                       "login-with-google"),
    # grok-2607-*.provenance.json: https://grok.com/ for a new chat; conversations /c/<id>.
    "grok": ChatSpec("grok", "Grok", "/", "/c/<cid>", ("Sign in", "Sign up"), "anon-paywall-sign-up-card"),
    # perplexity-chat-simple.html: https://www.perplexity.ai/search/{conversation-id}.
    "perplexity": ChatSpec("perplexity", "Perplexity", "/", "/search/<cid>", ("Sign in", "Continue with Google"),
                           "login-button"),
}


def challenge_page(host: str, lang: str) -> str:
    """Cloudflare's interstitial, as a page that stands where the site should be (no app, no input box): its title,
    its text and its widget (#challenge-stage, .cf-turnstile), by no name of the site's."""
    return (f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8"><title>Just a moment...</title></head>'
            '<body><div class="main-wrapper" role="main"><div class="main-content">'
            f'<h1 class="zone-name-title h1">{host}</h1>'
            '<h2 id="challenge-body-text" class="h2">Verify you are human by completing the action below.</h2>'
            '<div id="challenge-stage"><div class="cf-turnstile" style="width: 300px; height: 65px; border: 1px solid '
            '#ccc;"><label><input type="checkbox"> Verify you are human</label></div></div>'
            f'<p>{host} needs to review the security of your connection before proceeding.</p>'
            '</div></div></body></html>')


def _page_response(body: str) -> Response:
    return Response(body, content_type="text/html; charset=utf-8", headers=NO_STORE)


def _login_page(spec: ChatSpec, lang: str) -> str:
    buttons = "".join(f'<button type="button" class="btn">{w}</button>' for w in spec.login_words)
    return (f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8"><title>{spec.title}</title></head>'
            f'<body><main class="login-main"><h1>{spec.title}</h1>'
            f'<div data-testid="{spec.login_testid}">{buttons}</div>'
            '<input type="email" placeholder="Enter your email" aria-label="Email"></main></body></html>')


def create_chat_app(site: SiteState, spec: ChatSpec, *, host: str) -> QuartTrio:
    """One of the three newer sites. The shared routes (control, uploads, streaming) come from server.py."""
    from . import server  # its helpers; server.py imports this module only inside serve_sites

    app = server._new_app(site)

    def page(path: str) -> Response:
        opts, token = site.take_page(path)
        if opts.challenge:
            return _page_response(challenge_page(host, opts.lang))
        if opts.login:
            return _page_response(_login_page(spec, opts.lang))
        lang = "de" if opts.drift else opts.lang
        boot = {"site": spec.name, "locale": lang, "b": token, "sendClick": opts.sendClick, "drift": opts.drift,
                "extensionButtons": opts.extensionButtons, "rerenderDelayMs": opts.rerenderDelayMs,
                "stopDelayMs": opts.stopDelayMs, "home": spec.home, **server._upload_boot(opts)}
        body = server._read("common/chatsite.html")
        body = (body.replace("{{LANG}}", lang).replace("{{TITLE}}", spec.title).replace("{{SITE}}", spec.name)
                .replace("{{BOOT}}", json.dumps(boot, ensure_ascii=False).replace("</", "<\\/")))
        return _page_response(body)

    async def serve_home() -> Response:
        await server._load_delay(site)
        return page(spec.home)

    app.add_url_rule(spec.home, f"{spec.name}_home", serve_home, methods=["GET"])
    if spec.home != "/":
        @app.get("/")
        async def root() -> Response:
            return Response(b"", status=302, headers={"Location": spec.home, **NO_STORE})

    async def serve_conversation(cid: str) -> Response:
        await server._load_delay(site)
        return page(spec.conversation.replace("<cid>", cid))

    app.add_url_rule(spec.conversation, f"{spec.name}_conversation", serve_conversation, methods=["GET"])

    @app.get("/_fake/app.js")
    async def app_js() -> Response:
        return server._script("common/vendor/markdown-it.min.js", "common/markdown.js", "common/uploads.js",
                              "common/drift.js", "common/sse.js", "common/chatsite.js", f"{spec.name}/app.js")

    @app.get("/_fake/app.css")
    async def app_css() -> Response:
        css = server._read("common/chatsite.css") + "\n" + server._read(f"{spec.name}/app.css")
        return Response(css, content_type="text/css; charset=utf-8", headers=NO_STORE)

    @app.get("/api/bootstrap")
    async def bootstrap() -> Response:
        await server._boot_delay(site)
        return server._json({"signedIn": True, "user": "test@example.com"})

    @app.get("/api/conversation/<cid>")
    async def get_conversation(cid: str) -> Response:
        await server._history_delay(site)
        turns = site.conversations.get(cid)
        if turns is None:
            return server._json({"detail": "not found"}, 404)
        return server._json({"conversationId": cid, "messages": turns})

    @app.post("/api/ask")
    async def ask() -> Response:
        site.sends += 1
        body = await request.get_json(force=True)
        question = body.get("question") if isinstance(body, dict) else None
        if not isinstance(question, str):
            return server._json({"detail": "bad request"}, 400)
        lang = "ja" if str(body.get("lang", "en")).startswith("ja") else "en"
        gen = site.begin(question, body.get("conversationId") or None, lang, attachments=body.get("attachments"),
                         model=body.get("model"), effort=body.get("effort"), tools=body.get("tools"))
        script = gen.script
        if script.rateLimited:
            await gen.pause(script.firstTokenMs)
            site.finish(gen, "rate_limited")
            return server._json({"detail": gen.answer, "notice": script.notice, "message_id": gen.entry["messageId"],
                                 "conversation_id": gen.entry["conversationId"]}, 429)
        return Response(server._sse_stream(site, gen), content_type="text/event-stream; charset=utf-8",
                        headers={**NO_STORE, "X-Accel-Buffering": "no"})

    server._add_upload_route(app, site, "/api/upload")

    server._add_telemetry_route(app, site, "/api/telemetry")

    return app
