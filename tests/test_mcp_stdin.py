"""The MCP front's boot (actors/mcp_front/actor.py, stdio.py): stdin is read by one pump for the server's life, so a
client that leaves while the SDK is still importing is not kept waiting, and one that leaves requests behind gets
them answered."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator

import pytest
import trio

from actors.mcp_front import actor
from actors.mcp_front.stdio import StdinLines, StdinPump, StdoutWriter

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


@pytest.fixture
def slow_import(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The SDK import, as slow as on a loaded machine: it ends only when the test says so."""
    release = threading.Event()
    monkeypatch.setattr(actor, "_import_sdk", lambda: release.wait(30))
    yield release
    release.set()


def pipes() -> tuple[int, int, int, int]:
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    return stdin_r, stdin_w, stdout_r, stdout_w


async def test_a_client_gone_during_the_import_is_not_kept_waiting(slow_import: threading.Event) -> None:
    stdin_r, stdin_w, stdout_r, stdout_w = pipes()
    stdout = StdoutWriter(stdout_w)
    lines = StdinLines(stdout, stdin_r)
    pump = StdinPump(lines, stdout)
    os.write(stdin_w, (json.dumps(INIT) + "\n").encode())
    os.close(stdin_w)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pump.run)
        with trio.fail_after(5):  # the import would take 30 s
            assert await actor._boot(stdout, pump) is None
    assert not slow_import.is_set()
    reply = json.loads(os.read(stdout_r, 1 << 16).decode().splitlines()[0])
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "ai-bridge"  # answered before it left
    lines.close()
    for fd in (stdin_r, stdout_r, stdout_w):
        os.close(fd)


async def test_requests_left_behind_wait_for_the_sdk(slow_import: threading.Event) -> None:
    stdin_r, stdin_w, stdout_r, stdout_w = pipes()
    stdout = StdoutWriter(stdout_w)
    lines = StdinLines(stdout, stdin_r)
    pump = StdinPump(lines, stdout)
    list_tools = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    os.write(stdin_w, "".join(json.dumps(m) + "\n" for m in (INIT, list_tools)).encode())
    os.close(stdin_w)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pump.run)
        booted: list[list[str] | None] = []

        async def boot() -> None:
            booted.append(await actor._boot(stdout, pump))

        nursery.start_soon(boot)
        await pump.eof.wait()
        await trio.sleep(1)  # past the EOF grace: tools/list is still owed, so the boot waits for the SDK
        assert not booted
        slow_import.set()
    assert booted and booted[0] is not None and json.loads(booted[0][0])["id"] == 1
    # The SDK reads on from the pump: tools/list, then the end.
    assert json.loads(await pump.__anext__())["id"] == 2
    with pytest.raises(StopAsyncIteration):
        await pump.__anext__()
    lines.close()
    for fd in (stdin_r, stdout_r, stdout_w):
        os.close(fd)
