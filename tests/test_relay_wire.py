"""The relay's I/O-free protocol core (actors/relay/wire.py): hellos, frames, pending commands, tab events — without
a socket, a browser or a clock. Each case is a frame the extension (or an impostor) could send."""

from __future__ import annotations

import json

import pytest
import trio
import trio.testing

from actors.protocol.relay import TabEventKind
from actors.relay import wire
from supervisor.constants import SHARED

TOKEN = "ab" * 32


def hello(**over: object) -> str:
    frame: dict[str, object] = {"type": "hello", "token": TOKEN, "protocolVersion": SHARED.protocol_version,
                                "extensionVersion": "0.1.0", "userAgent": "Chromium"}
    frame.update(over)
    return json.dumps(frame)


def link() -> wire.Link[str]:
    got = wire.check_hello(hello(), token=TOKEN)
    assert isinstance(got, wire.Hello)
    return wire.Link(got)


# -- hello ----------------------------------------------------------------------------------------------------------


def test_a_good_hello_is_accepted_with_its_fields_clipped() -> None:
    got = wire.check_hello(hello(extensionVersion="9" * 100, userAgent=3), token=TOKEN)
    assert got == wire.Hello(extension_version="9" * 40, user_agent="")


@pytest.mark.parametrize(("raw", "code"), [
    (hello(token="cd" * 32), SHARED.close.bad_token),
    (hello(token="\ud800"), SHARED.close.bad_token),  # a lone surrogate: no longer a crash
    (hello(token="é" * 64), SHARED.close.bad_token),  # non-ASCII
    (hello(token=None), SHARED.close.bad_token),
    (hello(token=["list"]), SHARED.close.bad_token),
    (hello(protocolVersion=999), SHARED.close.bad_hello),
    (hello(protocolVersion="1"), SHARED.close.bad_hello),
    (hello(type="result"), SHARED.close.bad_hello),
    ("[" * 100_000 + "]" * 100_000, SHARED.close.bad_hello),  # nested 100,000 deep: no RecursionError
    ("not json", SHARED.close.bad_hello),
    (b"\xff\xfe", SHARED.close.bad_hello),  # bytes that are not UTF-8
    ("null", SHARED.close.bad_hello),
    ('"hello"', SHARED.close.bad_hello),
])
def test_a_bad_hello_is_a_refusal_with_its_close_code(raw: str | bytes, code: int) -> None:
    got = wire.check_hello(raw, token=TOKEN)
    assert isinstance(got, wire.Refusal) and got.code == code
    assert TOKEN not in got.reason and TOKEN not in got.log  # never echoed


def test_version_mismatch_is_not_a_security_event_but_a_bad_token_is() -> None:
    version = wire.check_hello(hello(protocolVersion=2), token=TOKEN)
    token = wire.check_hello(hello(token="x"), token=TOKEN)
    assert isinstance(version, wire.Refusal) and not version.security
    assert isinstance(token, wire.Refusal) and token.security and token.log == "hello with a wrong token refused"


# -- commands and replies -------------------------------------------------------------------------------------------


def test_a_command_is_settled_by_its_result_once() -> None:
    ln = link()
    p, frame = ln.command("cdp.send", {"tabId": 7, "method": "Runtime.evaluate"}, now=10.0, timeout_s=30, owner="env")
    assert json.loads(frame) == {"type": "command", "id": p.id, "method": "cdp.send",
                                 "params": {"tabId": 7, "method": "Runtime.evaluate"}}
    assert (p.tab_id, p.deadline, p.owner) == (7, 40.0, "env")
    (ev,) = ln.receive(json.dumps({"type": "result", "id": p.id, "result": {"result": {"value": 2}}}))
    assert isinstance(ev, wire.Settled) and ev.pending is p and ev.result == {"result": {"value": 2}}
    (late,) = ln.receive(json.dumps({"type": "result", "id": p.id, "result": {}}))  # a second reply
    assert isinstance(late, wire.Stray)


def test_a_non_object_result_is_wrapped_and_an_error_keeps_its_code() -> None:
    ln = link()
    a, _ = ln.command("ext.info", {}, now=0, timeout_s=5, owner="a")
    b, _ = ln.command("tabs.get", {"tabId": 3}, now=0, timeout_s=5, owner="b")
    (ra,) = ln.receive(json.dumps({"type": "result", "id": a.id, "result": [1, 2]}))
    assert isinstance(ra, wire.Settled) and ra.result == {"value": [1, 2]}
    (rb,) = ln.receive(json.dumps({"type": "error", "id": b.id, "error": {"code": "no_such_tab", "message": "gone"}}))
    assert isinstance(rb, wire.Settled) and (rb.result, rb.error_code, rb.error_message) == (None, "no_such_tab",
                                                                                               "gone")


def test_attached_tabs_follow_attach_replies_and_detach_events() -> None:
    ln = link()
    ok, _ = ln.command("debugger.attach", {"tabId": 1}, now=0, timeout_s=5, owner="x")
    busy, _ = ln.command("debugger.attach", {"tabId": 2}, now=0, timeout_s=5, owner="y")
    assert ln.attached == {1, 2}  # optimistic, while the replies are on their way
    ln.receive(json.dumps({"type": "result", "id": ok.id, "result": {}}))
    ln.receive(json.dumps({"type": "error", "id": busy.id, "error": {"code": "tab_busy", "message": "leased"}}))
    assert ln.attached == {1}
    ln.receive(json.dumps({"type": "event", "event": "detached", "tabId": 1}))
    assert ln.attached == set()


def test_a_closed_tab_fails_its_commands_at_once_except_the_closing_one() -> None:
    ln = link()
    evaluate, _ = ln.command("cdp.send", {"tabId": 5}, now=0, timeout_s=30, owner="eval")
    close, _ = ln.command("tabs.close", {"tabId": 5}, now=0, timeout_s=30, owner="close")
    other, _ = ln.command("cdp.send", {"tabId": 6}, now=0, timeout_s=30, owner="other")
    events = ln.receive(json.dumps({"type": "event", "event": "tabClosed", "tabId": 5, "reason": "user"}))
    settled = [e for e in events if isinstance(e, wire.Settled)]
    assert [e.pending for e in settled] == [evaluate] and settled[0].error_code == "no_such_tab"
    notice = events[-1]
    assert isinstance(notice, wire.TabNotice) and notice.kind is TabEventKind.TAB_CLOSED
    assert notice.params == {"reason": "user"}
    assert set(ln.pending) == {close.id, other.id}


def test_expiry_and_drain() -> None:
    ln = link()
    short, _ = ln.command("ext.info", {}, now=0, timeout_s=1, owner="s")
    long, _ = ln.command("ext.info", {}, now=0, timeout_s=100, owner="l")
    huge, _ = ln.command("ext.info", {}, now=0, timeout_s=1e9, owner="h")  # capped at 600 s
    assert ln.next_deadline() == 1 and huge.deadline == 600
    assert ln.expired(0.5) == [] and ln.expired(1.0) == [short]
    assert ln.next_deadline() == 100
    assert set(p.id for p in ln.drain()) == {long.id, huge.id} and ln.pending == {}


# -- whatever else arrives ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [
    "garbage", "[1, 2]", "null", '{"type": 3}', '{"type": "nope"}', '{"no": "type"}', "[" * 50_000,
    '{"type": "event", "tabId": "7", "event": "cdp"}', '{"type": "event", "tabId": true, "event": "cdp"}',
    '{"type": "event", "tabId": 7, "event": "exploded"}', b"\x80\x81",
])
def test_malformed_frames_are_reported_and_answered_never_raised(raw: str | bytes) -> None:
    events = link().receive(raw)
    assert isinstance(events[0], wire.Malformed)
    assert isinstance(events[1], wire.Send) and json.loads(events[1].text)["error"]["code"] == "bad_frame"


def test_pings_get_pongs_and_pongs_and_hellos_nothing() -> None:
    ln = link()
    (pong,) = ln.receive('{"type": "ping", "id": 4}')
    assert isinstance(pong, wire.Send) and json.loads(pong.text) == {"type": "pong", "id": 4}
    assert ln.receive('{"type": "pong", "id": 1}') == [] and ln.receive(hello()) == []
    assert json.loads(ln.ping()) == {"type": "ping", "id": 1}


def test_replies_with_odd_ids_are_strays() -> None:
    ln = link()
    p, _ = ln.command("ext.info", {}, now=0, timeout_s=5, owner="x")
    for cid in (True, str(p.id), None, 1.0, [p.id]):
        (ev,) = ln.receive(json.dumps({"type": "result", "id": cid, "result": {}}))
        assert isinstance(ev, wire.Stray)
    assert p.id in ln.pending


# -- issue 25: which browser, and is its extension current --------------------------------------------------------


def test_a_hello_names_its_browser_profile_only_by_a_well_formed_id() -> None:
    good = wire.check_hello(hello(browserId="0123456789abcdef" * 2), token=TOKEN)
    assert isinstance(good, wire.Hello) and good.browser_id == "0123456789abcdef" * 2
    for bad in ("ABCDEF" * 6, "0" * 31, "0" * 33, 7, None, "../" * 11):
        got = wire.check_hello(hello(browserId=bad), token=TOKEN)
        assert isinstance(got, wire.Hello) and got.browser_id is None, bad


@pytest.mark.parametrize(("version", "stale"), [
    ("0.2.0", True), ("0.1.9", True), ("?", True), ("", True), ("0.3.0", False), ("0.3.1", False), ("1.0", False),
    ("0.10.0", False),  # numbers, not strings: 10 > 3
])
def test_an_extension_older_than_the_shipped_one_is_stale(version: str, stale: bool) -> None:
    assert wire.stale_extension(version, "0.3.0") is stale


class _GoneSocket:
    """A WebSocket (or handshake request) whose peer has just closed: asking for its address fails (ENOTCONN)."""

    @property
    def remote(self) -> object:
        raise OSError(107, "Transport endpoint is not connected")

    local = remote


async def test_a_peer_gone_mid_status_or_mid_handshake_never_crashes_the_relay() -> None:
    # Seen in a loaded full run: bridge_status raced the extension's close, getpeername failed, and the relay
    # actor crashed (its restart relaunched the browser).
    from actors.relay.actor import Relay, _peer_port
    from supervisor.pairing import KEY_BYTES, PairingKey

    assert _peer_port(_GoneSocket()) is None  # type: ignore[arg-type]
    relay = Relay(extension_origin=SHARED.extension_origin, allow_faults=False, key=PairingKey(b"k" * KEY_BYTES))
    await relay._handle(_GoneSocket())  # type: ignore[arg-type]  # returns: nothing to serve


class _SilentSocket:
    """An upgraded WebSocket whose client never sends its hello."""

    def __init__(self) -> None:
        self.closed: tuple[int, str] | None = None

    async def get_message(self) -> str:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def aclose(self, code: int = 1000, reason: str | None = None) -> None:
        self.closed = (code, reason or "")


async def test_a_client_silent_for_5_s_after_the_upgrade_is_closed_with_4408(
        autojump_clock: trio.testing.MockClock) -> None:
    """docs/security.md: the hello must come within 5 s (the end-to-end test sees the close code; the time is
    checked here, on trio's mock clock)."""
    from actors.relay.actor import Relay
    from supervisor.pairing import KEY_BYTES, PairingKey

    relay = Relay(extension_origin=SHARED.extension_origin, allow_faults=False, key=PairingKey(b"k" * KEY_BYTES))
    ws = _SilentSocket()
    t0 = trio.current_time()
    assert await relay._hello(ws) is None  # type: ignore[arg-type]
    assert ws.closed == (SHARED.close.hello_timeout, "no hello in time") == (4408, "no hello in time")
    assert trio.current_time() - t0 == 5.0


class _OtherUsersRequest:
    """A WebSocket upgrade from another local user's process, as if it got past the accept gate (peergate.py): the
    relay's own check must refuse it before reading anything it sent."""

    class _Addr:
        address, port = "127.0.0.1", 40000

    remote = local = _Addr()
    rejected: int | None = None

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        raise AssertionError("read the request of another user's process")

    async def reject(self, status: int, *, body: bytes = b"") -> None:
        self.rejected = status


@pytest.mark.parametrize("same", [False, True])
async def test_a_websocket_from_another_users_process_is_refused_before_its_request_is_read(
        monkeypatch: pytest.MonkeyPatch, same: bool) -> None:
    """The second check behind the accept gate (docs/security.md): the peer's uid, not the request, decides."""
    from actors.relay import actor
    from supervisor.pairing import KEY_BYTES, PairingKey

    monkeypatch.setattr(actor, "same_user", lambda remote, local: same)
    relay = actor.Relay(extension_origin=SHARED.extension_origin, allow_faults=False,
                        key=PairingKey(b"k" * KEY_BYTES))
    req = _OtherUsersRequest()
    if same:  # our own user's process: its request is read (here, the fake's headers refuse to be)
        with pytest.raises(AssertionError, match="read the request"):
            await relay._handle(req)  # type: ignore[arg-type]
    else:
        await relay._handle(req)  # type: ignore[arg-type]
        assert req.rejected == 403
