"""The fake sites: chatgpt.com and gemini.google.com here, claude.ai, grok.com and www.perplexity.ai in chatsites.py;
quart-trio apps served by hypercorn over TLS, one port each.

Run ``python -m tests.fakesites --cert-dir DIR`` (``--chatgpt-port`` … ``--perplexity-port``, default 0: free
ports): it prints one JSON line (ports, SPKI hash, certificate paths) to stdout, then serves until SIGTERM/SIGINT or
EOF on stdin. See ``tests/fakesites/__init__.py`` for the control API.
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve as hypercorn_serve
from quart import Response, request
from quart_trio import QuartTrio

from . import chatsites
from .flags import HOSTS, SITES
from .scripting import ControlError, Generation, SiteState, now_ms, split_chunks

HERE = Path(__file__).resolve().parent
IMAGE_HOST = HOSTS["gemini"][1]  # Gemini's generated images (served by the gemini fake)
RESEARCH_HOST = HOSTS["chatgpt"][1]  # ChatGPT's Deep Research frame (served by the chatgpt fake)
HOSTNAMES = tuple(h for site in SITES for h in HOSTS[site])
SESSION_COOKIE = "__Secure-next-auth.session-token"  # ChatGPT's signed-in session
# A certificate made once by `make_certificates` and shipped with ai-bridge for `ai-bridge demo` (which must not
# need the test extras to make one): trustme's leaf, valid to the year 3000, trusted by no browser but one launched
# with its SPKI pin. Remake it with ``python -m tests.fakesites --remake-shipped-certificate``.
SHIPPED_TLS = HERE / "tls"

NO_STORE = {"Cache-Control": "no-store"}


# ---------------------------------------------------------------------------------------------------------------
# TLS


def make_certificates(cert_dir: str | os.PathLike) -> dict:
    """Create a throwaway CA and a leaf certificate for every site's host names (and localhost / 127.0.0.1).

    Returns paths and the base64 SHA-256 of the leaf's SubjectPublicKeyInfo, the value Chromium's
    ``--ignore-certificate-errors-spki-list`` wants.
    """
    import trustme  # the test extras: `ai-bridge demo` uses the shipped certificate instead
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    cert_dir = Path(cert_dir)
    cert_dir.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="ai-bridge fakesites CA")
    leaf = ca.issue_cert(*HOSTNAMES, "localhost", "127.0.0.1", common_name="chatgpt.com")
    ca_path = cert_dir / "ca.pem"
    chain_path = cert_dir / "server.pem"
    key_path = cert_dir / "server.key"
    ca.cert_pem.write_to_path(str(ca_path))
    with open(chain_path, "wb") as f:
        for blob in leaf.cert_chain_pems:
            f.write(blob.bytes())
    leaf.private_key_pem.write_to_path(str(key_path))
    cert = x509.load_pem_x509_certificate(leaf.cert_chain_pems[0].bytes())
    spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    return {
        "caCert": str(ca_path),
        "certFile": str(chain_path),
        "keyFile": str(key_path),
        "spki": base64.b64encode(hashlib.sha256(spki).digest()).decode(),
    }


def shipped_certificates() -> dict:
    """The certificate that ships with ai-bridge (`SHIPPED_TLS`), as `make_certificates` describes one."""
    spki = json.loads((SHIPPED_TLS / "spki.json").read_text(encoding="utf-8"))["spki"]
    return {"caCert": str(SHIPPED_TLS / "ca.pem"), "certFile": str(SHIPPED_TLS / "server.pem"),
            "keyFile": str(SHIPPED_TLS / "server.key"), "spki": spki}


def remake_shipped_certificates() -> None:
    info = make_certificates(SHIPPED_TLS)
    (SHIPPED_TLS / "spki.json").write_text(json.dumps({"spki": info["spki"]}) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------------
# Helpers shared by both apps


def _read(rel: str) -> str:
    return (HERE / rel).read_text(encoding="utf-8")


def _page(template: str, *, lang: str, boot: dict) -> Response:
    body = _read(template)
    body = body.replace("{{LANG}}", lang).replace(
        "{{BOOT}}", json.dumps(boot, ensure_ascii=False).replace("</", "<\\/"))
    return Response(body, content_type="text/html; charset=utf-8", headers=NO_STORE)


def _script(*parts: str) -> Response:
    body = "\n;\n".join(_read(p) for p in parts)
    return Response("(() => {\n'use strict';\n" + body + "\n})();\n",
                    content_type="application/javascript; charset=utf-8", headers=NO_STORE)


def _json(data: Any, status: int = 200) -> Response:
    return Response(json.dumps(data, ensure_ascii=False), status=status,
                    content_type="application/json; charset=utf-8", headers=NO_STORE)


def _upload_boot(opts: Any) -> dict:
    """What both pages take of the uploads and choices options."""
    return {"uploadMs": opts.uploadMs, "uploadMaxBytes": opts.uploadMaxBytes, "uploadMaxFiles": opts.uploadMaxFiles,
            "uploadRefuse": list(opts.uploadRefuse), "picker": opts.picker, "proPlan": opts.proPlan,
            "pickerIgnoresClicks": opts.pickerIgnoresClicks, "uploadChooser": opts.uploadChooser,
            "toolsMenu": opts.toolsMenu, "uploadFail": list(opts.uploadFail), "uploadStall": list(opts.uploadStall),
            "uploadNoChip": opts.uploadNoChip, "fileTile": opts.fileTile, "uploadQuota": opts.uploadQuota,
            "uploadAccept": opts.uploadAccept, "mutation": opts.mutation}


def _add_upload_route(app: QuartTrio, site: SiteState, path: str) -> None:
    @app.post(path)
    async def upload() -> Response:
        name = request.args.get("name", "")
        data = await request.get_data()
        if request.args.get("fail"):  # PageOptions.uploadFail: the site answers this upload with an error
            return _json({"detail": "upload failed"}, 500)
        return _json(site.upload(name, data))


def _add_telemetry_route(app: QuartTrio, site: SiteState, path: str) -> None:
    """Where the page reports the moment its answer completed (its own clock): detection latency is measured from it."""
    @app.post(path)
    async def telemetry() -> Response:
        body = await request.get_json(force=True)
        if body.get("event") == "answer_complete":
            site.report_complete(str(body.get("message_id", "")), float(body["t"]))
        return Response(b"", status=204)


def _new_app(site: SiteState) -> QuartTrio:
    app = QuartTrio(f"fakesite-{site.name}")
    app.config["RESPONSE_TIMEOUT"] = None  # answers may stream (or hang) for as long as a test wants
    app.config["BODY_TIMEOUT"] = 30
    _add_control_routes(app, site)
    return app


def _add_control_routes(app: QuartTrio, site: SiteState) -> None:
    @app.post("/__control")
    async def control() -> Response:
        try:
            body = await request.get_json(force=True, silent=False)
            return _json(site.control(body))
        except ControlError as exc:
            return _json({"error": str(exc)}, 400)
        except Exception as exc:  # malformed JSON
            return _json({"error": f"bad request: {exc}"}, 400)

    @app.get("/__control")
    async def control_state() -> Response:
        return _json(site.state())

    @app.get("/__log")
    async def log() -> Response:
        return _json(site.log())

    @app.post("/__reset")
    async def reset() -> Response:
        # ?all=1: every site of this server at once (FakeSites.reset: one request where five would each cost a TLS
        # handshake, before every test).
        for each in app.config.get("EVERY_SITE", [site]) if request.args.get("all") else [site]:
            each.reset()
        return _json({"ok": True})

    @app.get("/favicon.ico")
    async def favicon() -> Response:
        return Response(b"", status=204)


async def _boot_delay(site: SiteState) -> None:
    delay = site.boot_delay_ms(request.args.get("b", ""))
    if delay > 0:
        await trio.sleep(delay / 1000.0)


async def _load_delay(site: SiteState) -> None:
    delay = site.page.slowLoadMs  # the options the coming take_page() uses
    if delay > 0:
        await trio.sleep(delay / 1000.0)


async def _history_delay(site: SiteState) -> None:
    delay = site.history_delay_ms(request.args.get("b", ""))
    if delay > 0:
        await trio.sleep(delay / 1000.0)


async def _thinking(gen: Generation) -> int:
    """Think for ``thinkingMs`` (or until "Skip thinking"); returns the displayed seconds."""
    start = trio.current_time()
    await gen.pause(gen.script.thinkingMs, also=gen.skip_thinking)
    elapsed = trio.current_time() - start
    gen.entry["thinkingSkipped"] = gen.skip_thinking.is_set()
    seconds = max(1, round(elapsed))
    gen.entry["thinkingSeconds"] = seconds
    return seconds


def _hang(site: SiteState, gen: Generation, so_far: str) -> None:
    """The page's stream hangs here. By default the backend finished (a reload shows the whole answer); with
    ``hangsOnReload`` the backend hangs too (a reload shows the partial answer, still generating)."""
    gen.entry["status"] = "stuck"
    if gen.script.hangsOnReload:
        site.record_answer(gen, so_far, in_progress=True)
    else:
        site.record_answer(gen, gen.answer, in_progress=False)


def _close_entry(site: SiteState, gen: Generation, completed: bool) -> None:
    if completed:
        return
    status = gen.entry["status"]
    if status in ("stuck", "never", "error"):
        return  # keep the more telling status
    site.finish(gen, "aborted" if gen.aborted.is_set() else "disconnected")


# ---------------------------------------------------------------------------------------------------------------
# chatgpt.com


def create_chatgpt_app(site: SiteState) -> QuartTrio:
    app = _new_app(site)

    def page(path: str) -> Response:
        opts, token = site.take_page(path)
        if opts.challenge:  # chatgpt.com is behind Cloudflare too
            return Response(chatsites.challenge_page("chatgpt.com", opts.lang), content_type="text/html; charset=utf-8",
                            headers=NO_STORE)
        if opts.login:
            return _page("chatgpt/login.html", lang=opts.lang, boot={"locale": opts.lang})
        lang = "de" if opts.drift else opts.lang
        resp = _page("chatgpt/index.html", lang=lang,
                     boot={"locale": lang, "composer": opts.editor, "b": token, "sendClick": opts.sendClick,
                           "layout": opts.layout, "drift": opts.drift, "shape": opts.shape,
                           "extensionButtons": opts.extensionButtons, "model": opts.model,
                           "rerenderDelayMs": opts.rerenderDelayMs, "stopDelayMs": opts.stopDelayMs,
                           **_upload_boot(opts)})
        # The signed-in session: the files an answer makes are served only with it (estuary URLs are cookie-bound,
        # agbrowse web-ai/code-artifact.mjs).
        resp.set_cookie(SESSION_COOKIE, site.token, secure=True, httponly=True, samesite="Lax")
        return resp

    @app.get("/")
    async def home() -> Response:
        if request.host.split(":")[0] == RESEARCH_HOST:  # the Deep Research frame's own page
            return Response(_read("chatgpt/research.html"), content_type="text/html; charset=utf-8",
                            headers=NO_STORE)
        await _load_delay(site)
        return page("/")

    # ChatGPT's Deep Research frame (on its sandbox host only): its script and its task's state.
    @app.get("/dr/frame.js")
    async def research_js() -> Response:
        if request.host.split(":")[0] != RESEARCH_HOST:
            return Response(b"", status=404)
        return _script("common/vendor/markdown-it.min.js", "common/markdown.js", "chatgpt/research.js")

    @app.route("/dr/task/<task_id>", methods=["GET", "POST"])
    async def research_task(task_id: str) -> Response:
        if request.host.split(":")[0] != RESEARCH_HOST:
            return Response(b"", status=404)
        got = site.research_state(task_id, start=request.method == "POST")
        return _json(got if got is not None else {"detail": "no such task"}, 200 if got is not None else 404)

    @app.get("/c/<conversation_id>")
    async def conversation_page(conversation_id: str) -> Response:
        await _load_delay(site)
        return page(f"/c/{conversation_id}")

    # A Project (issue 38): its page starts its new chats; its conversations live under it.
    @app.get("/g/<project>/project")
    async def project_page(project: str) -> Response:
        await _load_delay(site)
        return page(f"/g/{project}/project")

    @app.get("/g/<project>/c/<conversation_id>")
    async def project_conversation_page(project: str, conversation_id: str) -> Response:
        await _load_delay(site)
        return page(f"/g/{project}/c/{conversation_id}")

    @app.get("/cdn/assets/app.js")
    async def app_js() -> Response:
        return _script("common/vendor/markdown-it.min.js", "common/markdown.js", "common/uploads.js", "common/drift.js",
                       "common/generated.js", "common/sse.js", "chatgpt/app.js", "chatgpt/menus.js")

    @app.get("/cdn/assets/app.css")
    async def app_css() -> Response:
        return Response(_read("chatgpt/app.css"), content_type="text/css; charset=utf-8", headers=NO_STORE)

    @app.get("/backend-api/me")
    async def me() -> Response:
        await _boot_delay(site)
        return _json({"object": "user", "id": "user-fakesites", "name": "Test User", "email": "test@example.com"})

    @app.get("/backend-api/conversation/<conversation_id>")
    async def get_conversation(conversation_id: str) -> Response:
        await _history_delay(site)
        turns = site.conversations.get(conversation_id) if conversation_id not in site.temporary else None
        if turns is None:
            return _json({"detail": "Can't load conversation " + conversation_id}, 404)
        return _json({"conversation_id": conversation_id, "messages": turns})

    @app.post("/backend-api/conversation")
    async def conversation() -> Response:
        site.sends += 1
        body = await request.get_json(force=True)
        try:
            question = body["messages"][0]["content"]["parts"][0]
        except (KeyError, IndexError, TypeError):
            return _json({"detail": "bad request"}, 400)
        lang = "ja" if request.headers.get("oai-language", "en").startswith("ja") else "en"
        gen = site.begin(question, body.get("conversation_id"), lang, attachments=body.get("attachments"),
                         model=body.get("model"), effort=body.get("effort"), tools=body.get("tools"),
                         place=body.get("gizmo_id"), temporary=body.get("history_and_training_disabled") is True)
        script = gen.script
        if "deep research" in gen.entry["tools"] and not script.rateLimited:
            site.research_task(gen)
            return Response(_research_stream(gen), content_type="text/event-stream; charset=utf-8",
                            headers={**NO_STORE, "X-Accel-Buffering": "no"})
        if script.rateLimited:
            await gen.pause(script.firstTokenMs)
            site.finish(gen, "rate_limited")
            return _json({"detail": gen.answer, "code": "rate_limit_exceeded", "notice": script.notice,
                          "message_id": gen.entry["messageId"]}, 429)
        return Response(_sse_stream(site, gen), content_type="text/event-stream; charset=utf-8",
                        headers={**NO_STORE, "X-Accel-Buffering": "no"})

    _add_upload_route(app, site, "/backend-api/files")

    # Files back (issue 35): generated images and code-sandbox files, as peers fetch them from the real site
    # (oracle chatgptImages.ts / chatgptFiles.ts, agbrowse code-artifact.mjs); no capture shows them.
    @app.get("/backend-api/estuary/content")
    async def estuary() -> Response:
        if request.cookies.get(SESSION_COOKIE) != site.token:
            return Response("<html><body>Log in</body></html>", status=403, content_type="text/html")
        made = site.made.get(request.args.get("id", "").removeprefix("file_"))
        if made is None:
            return _json({"detail": "not found"}, 404)
        kind = "image/png" if made["kind"] == "image" else "text/csv"
        headers = {**NO_STORE} if made["kind"] == "image" else {
            **NO_STORE, "Content-Disposition": f'attachment; filename="{made["name"]}"'}
        return Response(made["data"], content_type=kind, headers=headers)

    @app.get("/api/auth/session")
    async def auth_session() -> Response:
        if request.cookies.get(SESSION_COOKIE) != site.token:
            return _json({})
        return _json({"user": {"email": "test@example.com"}, "accessToken": site.token})

    @app.get("/backend-api/conversation/<conversation_id>/interpreter/download")
    async def interpreter_download(conversation_id: str) -> Response:
        if request.headers.get("authorization") != f"Bearer {site.token}":
            return _json({"detail": "Unauthorized"}, 401)
        path, message_id = request.args.get("sandbox_path", ""), request.args.get("message_id", "")
        made = next((m for m in site.made.values() if m["kind"] == "file" and m["messageId"] == message_id
                     and path == f"/mnt/data/{m['name']}"), None)
        if made is None:
            return _json({"detail": "file not found"}, 404)
        return _json({"status": "success", "download_url":
                      f"https://chatgpt.com/backend-api/estuary/content?id=file_{made['id']}&sig=fake"})

    @app.post("/backend-api/skip_thinking")
    async def skip_thinking() -> Response:
        body = await request.get_json(force=True)
        return _json({"ok": site.skip_thinking(str(body.get("message_id", "")))})

    _add_telemetry_route(app, site, "/ces/v1/t")

    return app


def _sse(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"


async def _research_stream(gen: Generation) -> AsyncIterator[bytes]:
    """A ChatGPT Deep Research ask: the turn is only the research frame (its plan, progress and report come from
    /dr/task on the frame's own host), then the stream ends."""
    entry = gen.entry
    await gen.pause(gen.script.firstTokenMs)
    yield _sse({"type": "meta", "conversation_id": entry["conversationId"], "message_id": entry["messageId"],
                "research_url": f"https://{RESEARCH_HOST}?app=chatgpt&locale=en-US&deviceType=desktop"
                                 f"&task={entry['messageId']}"})
    yield b"data: [DONE]\n\n"


async def _sse_stream(site: SiteState, gen: Generation) -> AsyncIterator[bytes]:
    """An answer as server-sent events (ChatGPT's, and the three newer fakes'): meta, thinking, deltas, [DONE]."""
    entry, script = gen.entry, gen.script
    completed = False
    try:
        if script.neverAnswer:
            entry["status"] = "never"
            while not gen.aborted.is_set():
                yield b": keep-alive\n\n"
                await gen.pause(1000)
            return
        yield _sse({"type": "meta", "conversation_id": entry["conversationId"], "message_id": entry["messageId"],
                    "render_lag_ms": script.renderLagMs})
        await gen.pause(script.firstTokenMs)
        if script.thinking and not gen.aborted.is_set():
            entry["status"] = "thinking"
            yield _sse({"type": "thinking_start"})
            seconds = await _thinking(gen)
            yield _sse({"type": "thinking_end", "seconds": seconds})
        entry["status"] = "streaming"
        so_far = ""
        for i, piece in enumerate(split_chunks(gen.answer, script.chunks)):
            if i:
                await gen.pause(script.intervalMs)
            if gen.aborted.is_set():
                return
            if script.siteError and i >= script.errorAfterChunks:
                break
            so_far += piece
            yield _sse({"type": "delta", "v": piece})
            if i == 0:
                entry["firstTokenAtMs"] = now_ms()
        if script.siteError:
            entry["status"] = "error"
            yield _sse({"type": "error", "message": "stream interrupted"})
            return
        if script.stuck:
            _hang(site, gen, so_far)
            yield _sse({"type": "hang"})
            while not gen.aborted.is_set():
                await gen.pause(1000)
                yield b": keep-alive\n\n"
            return
        if script.files:
            yield _sse({"type": "files", "files": site.make_files(gen)})
        yield b"data: [DONE]\n\n"
        # Resumed only after the transport took the final chunk: stamp the server-side stream end now.
        completed = True
        site.finish(gen, "complete")
    finally:
        _close_entry(site, gen, completed)


# ---------------------------------------------------------------------------------------------------------------
# gemini.google.com


def create_gemini_app(site: SiteState) -> QuartTrio:
    app = _new_app(site)

    def page(path: str) -> Response:
        opts, token = site.take_page(path)
        if opts.login:
            return _page("gemini/login.html", lang=opts.lang, boot={"hl": opts.lang})
        lang = "de" if opts.drift else opts.lang
        return _page("gemini/index.html", lang=lang, boot={
            "hl": lang, "b": token, "sendClick": opts.sendClick, "layout": opts.layout, "drift": opts.drift,
            "shape": opts.shape, "extensionButtons": opts.extensionButtons, "rerenderDelayMs": opts.rerenderDelayMs,
            **_upload_boot(opts)})

    @app.get("/")
    async def root() -> Response:
        return Response(b"", status=302, headers={"Location": "/app", **NO_STORE})

    @app.get("/app")
    async def app_home() -> Response:
        await _load_delay(site)
        return page("/app")

    @app.get("/app/<conversation_id>")
    async def app_conversation(conversation_id: str) -> Response:
        await _load_delay(site)
        return page(f"/app/{conversation_id}")

    # A Gem (issue 38): /gem/<id> starts its chats, /gem/<id>/<conversation> continues one.
    @app.get("/gem/<gem>")
    async def gem_page(gem: str) -> Response:
        await _load_delay(site)
        return page(f"/gem/{gem}")

    @app.get("/gem/<gem>/<conversation_id>")
    async def gem_conversation(gem: str, conversation_id: str) -> Response:
        await _load_delay(site)
        return page(f"/gem/{gem}/{conversation_id}")

    @app.get("/_/static/gemini.js")
    async def gemini_js() -> Response:
        return _script("common/vendor/markdown-it.min.js", "common/markdown.js", "common/uploads.js", "common/drift.js",
                       "common/generated.js", "gemini/app.js", "gemini/menus.js")

    @app.get("/_/static/gemini.css")
    async def gemini_css() -> Response:
        return Response(_read("gemini/app.css"), content_type="text/css; charset=utf-8", headers=NO_STORE)

    @app.get("/_/BardChatUi/data/bootstrap")
    async def bootstrap() -> Response:
        await _boot_delay(site)
        return _json({"signedIn": True, "user": "test@example.com"})

    @app.get("/_/BardChatUi/data/conversation/<conversation_id>")
    async def get_conversation(conversation_id: str) -> Response:
        await _history_delay(site)
        turns = site.conversations.get(conversation_id) if conversation_id not in site.temporary else None
        if turns is None:
            return _json({"error": "not found"}, 404)
        return _json({"conversation": conversation_id, "turns": turns})

    @app.post("/_/BardChatUi/data/assistant.lamda.BardFrontendService/StreamGenerate")
    async def stream_generate() -> Response:
        site.sends += 1
        body = await request.get_json(force=True)
        question = body.get("prompt")
        if not isinstance(question, str):
            return _json({"error": "bad request"}, 400)
        if isinstance(body.get("startResearch"), str):  # a Deep Research plan's start button
            started = site.start_research(body["startResearch"])
            if started is None:
                return _json({"error": "no such plan"}, 404)
            return Response(_gemini_stream(site, started), content_type="application/json+protobuf; charset=utf-8",
                            headers=NO_STORE)
        lang = "ja" if request.args.get("hl", "en").startswith("ja") else "en"
        gen = site.begin(question, body.get("conversation") or None, lang, attachments=body.get("attachments"),
                         model=body.get("mode"), effort=body.get("effort"), tools=body.get("tools"),
                         place=body.get("gem"), temporary=body.get("temporary") is True)
        stream = _gemini_plan(site, gen) if "deep research" in gen.entry["tools"] else _gemini_stream(site, gen)
        return Response(stream, content_type="application/json+protobuf; charset=utf-8", headers=NO_STORE)

    _add_upload_route(app, site, "/_/BardChatUi/data/upload")

    # Files back (issue 35): a generated image on Google's image host (lh3.googleusercontent.com, mapped to this
    # server): "<id>=s1024-rj" as the page shows it, "<id>=s0" at its own size (a guess from public notes).
    @app.get("/gg-dl/<path:name>")
    async def generated_image(name: str) -> Response:
        file_id, _, size = name.partition("=")
        made = site.made.get(file_id)
        if made is None or made["kind"] != "image" or request.host.split(":")[0] != IMAGE_HOST:
            return Response(b"", status=404)
        return Response(made["data"] if size == "s0" else made["small"], content_type="image/png",
                        headers=NO_STORE)

    @app.post("/_/BardChatUi/jslog")
    async def jslog() -> Response:
        body = await request.get_json(force=True)
        if body.get("event") == "response_complete":
            site.report_complete(str(body.get("rid", "")), float(body["t"]))
        return Response(b"", status=204)

    return app


def _frame(obj: dict) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode() + b"\n"


RESEARCH_STEPS = ("Research websites", "Analyze results", "Create report")
PLAN_TEXT = "Here's a research plan for that topic. If you need to update it, let me know!"


async def _gemini_plan(site: SiteState, gen: Generation) -> AsyncIterator[bytes]:
    """A Deep Research ask's first answer: its plan, then it waits for the page's "Start research"."""
    entry = gen.entry
    yield b")]}'\n"
    yield _frame({"t": "meta", "conversation": entry["conversationId"], "rid": entry["messageId"]})
    await gen.pause(gen.script.firstTokenMs)
    yield _frame({"t": "text", "text": PLAN_TEXT})
    yield _frame({"t": "plan", "plan": entry["messageId"], "steps": list(RESEARCH_STEPS)})
    site.hold_plan(gen, PLAN_TEXT)
    yield _frame({"t": "done"})


async def _gemini_stream(site: SiteState, gen: Generation) -> AsyncIterator[bytes]:
    """``)]}'`` then one JSON object per line; text frames carry the whole answer so far, like Gemini's."""
    entry, script = gen.entry, gen.script
    completed = False
    try:
        yield b")]}'\n"
        if script.neverAnswer:
            entry["status"] = "never"
            while not gen.aborted.is_set():
                await gen.pause(1000)
                yield b"\n"
            return
        yield _frame({"t": "meta", "conversation": entry["conversationId"], "rid": entry["messageId"],
                      "renderLagMs": script.renderLagMs, "sources": entry["sources"]})
        await gen.pause(script.firstTokenMs)
        if script.rateLimited and script.notice != "turn":
            # The limit outside any response: an alert in the thread, a toast, a banner. No answer comes.
            yield _frame({"t": "notice", "place": script.notice, "text": gen.answer})
            site.finish(gen, "rate_limited")
            return
        if script.thinking and not gen.aborted.is_set():
            entry["status"] = "thinking"
            yield _frame({"t": "thinking_start"})
            seconds = await _thinking(gen)
            yield _frame({"t": "thinking_end", "seconds": seconds})
        entry["status"] = "streaming"
        pieces = [gen.answer] if script.rateLimited else split_chunks(gen.answer, script.chunks)
        so_far = ""
        for i, piece in enumerate(pieces):
            if i:
                await gen.pause(script.intervalMs)
            if gen.aborted.is_set():
                return
            if script.siteError and i >= script.errorAfterChunks:
                break
            so_far += piece
            yield _frame({"t": "text", "text": so_far})
            if i == 0:
                entry["firstTokenAtMs"] = now_ms()
        if script.siteError:
            entry["status"] = "error"
            yield _frame({"t": "error"})
            return
        if script.stuck and not script.rateLimited:
            _hang(site, gen, so_far)
            yield _frame({"t": "hang"})
            while not gen.aborted.is_set():
                await gen.pause(1000)
                yield b"\n"
            return
        if script.files:
            yield _frame({"t": "files", "files": site.make_files(gen)})
        yield _frame({"t": "done"})
        completed = True
        site.finish(gen, "rate_limited" if script.rateLimited else "complete")
    finally:
        _close_entry(site, gen, completed)


# ---------------------------------------------------------------------------------------------------------------
# Serving


def _hypercorn_config(host: str, port: int, tls: dict) -> Config:
    cfg = Config()
    cfg.bind = [f"{host}:{port}"]
    cfg.certfile = tls["certFile"]
    cfg.keyfile = tls["keyFile"]
    cfg.accesslog = None
    cfg.errorlog = logging.getLogger("fakesites.hypercorn")
    cfg.graceful_timeout = 1.0
    # The real sites' front ends keep an idle HTTP/2 connection for minutes (hypercorn's default is 5 s): a page
    # asking again after 10 s reuses its connection there, so it does here too.
    cfg.keep_alive_timeout = 300
    return cfg


async def serve_sites(*, ports: dict[str, int] | None = None, host: str = "127.0.0.1",
                      cert_dir: str | os.PathLike | None = None, tls: dict | None = None, shutdown: trio.Event,
                      task_status: trio.TaskStatus[dict] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve every site until ``shutdown`` is set, each on its port of ``ports`` (absent or 0: a free one).
    ``task_status.started`` gets the info dict (``ports`` by site, ``chatgptPort`` … ``perplexityPort``, ``spki``,
    ``caCert``, ...). ``sites`` in it holds the SiteState objects (only when used in-process; the CLI prints the dict
    without them). The certificate: ``tls`` (for example `shipped_certificates()`), else one made in ``cert_dir``."""
    if tls is None:
        if cert_dir is None:
            raise ValueError("serve_sites needs cert_dir or tls")
        tls = make_certificates(cert_dir)
    sites = {name: SiteState(name) for name in SITES}
    apps = {"chatgpt": create_chatgpt_app(sites["chatgpt"]), "gemini": create_gemini_app(sites["gemini"]),
            **{name: chatsites.create_chat_app(sites[name], spec, host=HOSTS[name][0])
               for name, spec in chatsites.SPECS.items()}}
    for app in apps.values():
        app.config["EVERY_SITE"] = list(sites.values())
    async with trio.open_nursery() as nursery:
        bound: dict[str, int] = {}
        for name in SITES:
            cfg = _hypercorn_config(host, (ports or {}).get(name, 0), tls)
            urls = await nursery.start(_serve_app, apps[name], cfg, shutdown)
            bound[name] = int(urls[0].rsplit(":", 1)[1])
        info = {
            "ports": bound,
            **{f"{name}Port": port for name, port in bound.items()},
            "host": host,
            **tls,
            "pid": os.getpid(),
            "sites": sites,
        }
        task_status.started(info)
        await shutdown.wait()
        for site in sites.values():
            site.reset()  # ends hanging (stuck / never) streams so hypercorn's graceful stop is quick
        # hypercorn stops accepting and returns after graceful_timeout at most; cap the whole stop anyway
        nursery.cancel_scope.deadline = trio.current_time() + 3


async def _serve_app(app: QuartTrio, cfg: Config, shutdown: trio.Event,
                     task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
    await hypercorn_serve(app, cfg, shutdown_trigger=shutdown.wait, task_status=task_status)


async def _watch_stdin(shutdown: trio.Event) -> None:
    """Set ``shutdown`` at EOF on stdin (the parent went away or closed our pipe)."""
    def read_until_eof() -> None:
        try:
            while os.read(0, 65536):
                pass
        except OSError:
            pass
    await trio.to_thread.run_sync(read_until_eof, abandon_on_cancel=True)
    shutdown.set()


async def _watch_signals(shutdown: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            shutdown.set()
            return


async def amain(args: argparse.Namespace) -> None:
    shutdown = trio.Event()
    async with trio.open_nursery() as watchers:
        watchers.start_soon(_watch_signals, shutdown)
        if not args.ignore_stdin:
            watchers.start_soon(_watch_stdin, shutdown)
        async with trio.open_nursery() as server:
            info = await server.start(functools.partial(
                serve_sites, ports={name: getattr(args, f"{name}_port") for name in SITES}, host=args.host,
                cert_dir=args.cert_dir, shutdown=shutdown))
            public = {k: v for k, v in info.items() if k != "sites"}
            sys.stdout.write(json.dumps(public) + "\n")
            sys.stdout.flush()
        # serve_sites returned: shutdown was requested and the servers stopped
        watchers.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fakesites", description=__doc__.splitlines()[0])
    for name in SITES:
        parser.add_argument(f"--{name}-port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--cert-dir", help="where the CA, certificate and key are written (required to serve)")
    parser.add_argument("--remake-shipped-certificate", action="store_true",
                        help="write a new certificate into tls/ (the one `ai-bridge demo` ships with) and exit")
    parser.add_argument("--ignore-stdin", action="store_true",
                        help="do not stop at EOF on stdin (stop with SIGTERM/SIGINT only)")
    parser.add_argument("--verbose", action="store_true", help="log hypercorn errors to stderr")
    args = parser.parse_args(argv)
    if args.remake_shipped_certificate:
        remake_shipped_certificates()
        return
    if not args.cert_dir:
        parser.error("--cert-dir is required")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr)
    trio.run(amain, args)
