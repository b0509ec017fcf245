"""The door of `serve --http-port` (actors/mcp_front/http.py), without a server: which requests reach the SDK.
The whole path (two SDKs' clients asking side by side, refusals over a real socket) is in
test_third_party_clients.py."""

from __future__ import annotations

import os
from typing import Any

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.mcp_front.http import MCP_PATH, Door, refusal
from supervisor.peergate import RefusalLog

PORT = 8790
TOKEN = "t" * 43
GOOD = [(b"host", f"127.0.0.1:{PORT}".encode()), (b"authorization", f"Bearer {TOKEN}".encode())]


def scope(headers: list[tuple[bytes, bytes]], path: str = MCP_PATH) -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": path, "headers": headers}


def why(headers: list[tuple[bytes, bytes]], path: str = MCP_PATH, uid: int | None = None) -> str | None:
    got = refusal(scope(headers, path), port=PORT, token=TOKEN, uid=os.getuid() if uid is None else uid)
    return None if got is None else got[1]


def test_what_gets_in_and_what_does_not() -> None:
    assert why(GOOD) is None
    assert why([(b"host", f"localhost:{PORT}".encode()), GOOD[1]]) is None
    assert why([(b"Host", f"[::1]:{PORT}".encode()), (b"Authorization", GOOD[1][1])]) is None  # names: any case
    assert why(GOOD, uid=os.getuid() + 1) == "user"
    assert why([(b"host", b"evil.example:8790"), GOOD[1]]) == "host"  # DNS rebinding
    assert why([(b"host", b"127.0.0.1:8791"), GOOD[1]]) == "host"
    assert why([*GOOD, (b"host", GOOD[0][1])]) == "host"  # two Hosts: which one would the SDK read?
    assert why([*GOOD, (b"origin", b"null")]) == "origin"  # even a sandboxed page's
    assert why([GOOD[0]]) == "token"
    assert why([GOOD[0], (b"authorization", f"bearer {TOKEN}x".encode())]) == "token"
    assert why([*GOOD, GOOD[1]]) == "token"
    assert why(GOOD, path="/mcp/") == "path"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([b"host", b"Host", b"origin", b"authorization", b"x-other"]) | st.binary(),
                          st.sampled_from([GOOD[0][1], GOOD[1][1], b"null", b""]) | st.binary()), max_size=6),
       st.sampled_from([MCP_PATH, "/", "/mcp/x"]) | st.text(max_size=20))
def test_only_the_exact_request_gets_in(headers: list[tuple[bytes, bytes]], path: str) -> None:
    """Whatever the headers, the answer is a refusal unless there is exactly one loopback Host of this port,
    exactly the bearer token, no Origin and the endpoint's path; it is never an exception."""
    lower = [(k.lower(), v) for k, v in headers]
    exact = ([v for k, v in lower if k == b"host"] == [GOOD[0][1]]
             and [v for k, v in lower if k == b"authorization"] == [GOOD[1][1]]
             and not any(k == b"origin" for k, _ in lower) and path == MCP_PATH)
    assert (why(headers, path) is None) == exact


async def test_the_door_answers_refusals_itself_and_lets_the_rest_through() -> None:
    seen: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["path"])

    door = Door(inner, port=PORT, token=TOKEN, refusals=RefusalLog("test"), uid_of=lambda scope: os.getuid())
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:
        raise AssertionError("a refusal reads nothing of the body")

    await door(scope([GOOD[0]]), receive, send)
    assert sent[0]["status"] == 401 and (b"www-authenticate", b'Bearer realm="ai-bridge"') in sent[0]["headers"]
    assert not any(k == b"access-control-allow-origin" for k, _ in sent[0]["headers"])
    assert TOKEN.encode() not in sent[1]["body"] and seen == []
    await door(scope(GOOD), receive, send)
    assert seen == [MCP_PATH] and len(sent) == 2

    # The server's lifespan is answered here (the session manager lives as long as the actor, not hypercorn).
    events = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def lifespan_receive() -> Any:
        await trio.lowlevel.checkpoint()
        return next(events)

    sent.clear()
    await door({"type": "lifespan"}, lifespan_receive, send)
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
