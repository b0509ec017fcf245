"""Issue 26.1 end to end: another local user's server on a discovery port is never obeyed, and the user's own
Chrome is paired in the popup.

The squatter (tests/squatter.py) runs as uid 65534 (`setpriv`): it answers discovery, accepts the extension's
WebSocket, welcomes it with a proof it cannot make and sends the commands issue 26's attacker used (list every tab,
read a page and its cookies, open a tab, screenshot). Real headless Chromium, our real extension, the real
`ai-bridge serve` next to it. Every browser here stays on loopback (the fake sites' host rules map everything else to
nothing), and pairing itself keeps other test runs' browsers away from these servers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from supervisor import pairing

from .conftest import REPO
from .e2e import DevTools, open_bridge, requires_chromium
from .fakesites.fixture import FakeSites
from .other_user import OTHER_UID, as_other_user, copy_packages, public_folder, python_for_other_user
from .test_e2e_link import FAST, ask, discovery_port, eventually, extension_worker, linked_status
from .user_chrome import POPUP_URL

pytestmark = [requires_chromium, pytest.mark.chromium]


@attrs.define
class Squatter:
    lines: list[dict[str, Any]]
    key_id: str
    port: int

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.lines if e["event"] == kind]

    def frames(self) -> list[dict[str, Any]]:
        return [json.loads(e["data"]) for e in self.events("frame")]


# What tests/squatter.py imports: trio and trio-websocket with their dependencies, all pure Python (import name,
# distribution name: trio-websocket reads trio's version from its metadata).
SQUATTER_PACKAGES = (("trio", "trio"), ("trio_websocket", "trio-websocket"), ("wsproto", "wsproto"), ("h11", "h11"),
                     ("outcome", "outcome"), ("sniffio", "sniffio"), ("attr", "attrs"), ("attrs", "attrs"),
                     ("sortedcontainers", "sortedcontainers"), ("idna", "idna"))


@pytest.fixture
def squatter_program() -> Iterator[list[str]]:
    """How to start tests/squatter.py as uid 65534 from any checkout (tests/other_user.py): the script and the
    packages it imports are copied to a folder every user can read. Nothing of the checkout or its venv needs to be
    reachable: a fresh clone in a private folder runs this test too."""
    with public_folder() as folder:
        shutil.copy2(REPO / "tests" / "squatter.py", folder / "squatter.py")
        copy_packages(folder, SQUATTER_PACKAGES)
        yield as_other_user(*python_for_other_user(folder, "trio_websocket"), "-s", "-E", str(folder / "squatter.py"))


@asynccontextmanager
async def squatter(program: list[str], key_id: str | None = None, *,
                   commands_first: bool = False) -> AsyncIterator[Squatter]:
    """tests/squatter.py as uid 65534, on the first free discovery port."""
    cmd = [*program, *(["--key-id", key_id] if key_id else []), *(["--commands-first"] if commands_first else [])]
    lines: list[dict[str, Any]] = []
    async with trio.open_nursery() as nursery:
        proc = await nursery.start(partial(trio.run_process, cmd, stdout=subprocess.PIPE, cwd="/",
                                           env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, check=False))
        assert proc.stdout is not None

        async def read() -> None:
            buf = b""
            async for chunk in proc.stdout:
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    lines.append(json.loads(line))

        nursery.start_soon(read)
        with trio.fail_after(15):
            while not lines:
                await trio.sleep(0.05)
        up = lines[0]
        assert up["event"] == "listening" and up["uid"] == OTHER_UID and up["gid"] == OTHER_UID, up
        try:
            yield Squatter(lines, up["keyId"], up["discoveryPort"])
        finally:
            proc.kill()
            nursery.cancel_scope.cancel()


async def popup_rows(dt: DevTools) -> list[dict[str, Any]]:
    """What the popup shows: the worker's status rows (chrome.storage.session)."""
    worker = await extension_worker(dt)
    assert worker is not None
    session = (await dt.send("Target.attachToTarget", {"targetId": worker["targetId"], "flatten": True}))["sessionId"]
    try:
        got = await dt.send("Runtime.evaluate", {
            "expression": "chrome.storage.session.get('servers').then(r => JSON.stringify(r.servers ?? []))",
            "awaitPromise": True, "returnByValue": True}, session)
    finally:
        await dt.send("Target.detachFromTarget", {"sessionId": session})
    return json.loads(got["result"]["value"])  # type: ignore[no-any-return]


async def popup_text(dt: DevTools) -> str:
    """The text the popup shows the user (its server rows rendered)."""
    popup = (await dt.send("Target.createTarget", {"url": POPUP_URL}))["targetId"]
    try:
        return str(await eventually(lambda: dt.evaluate(
            popup, "document.readyState === 'complete' && document.getElementById('rows').children.length > 0 "
                   "&& document.body.innerText"), 10, "the popup's rows"))
    finally:
        await dt.send("Target.closeTarget", {"targetId": popup})


def row_on(rows: list[dict[str, Any]], port: int) -> dict[str, Any] | None:
    return next((r for r in rows if r.get("port") == port), None)


async def test_another_users_server_is_shown_never_obeyed(sites: FakeSites, tmp_path: Path,
                                                          squatter_program: list[str]) -> None:
    """Three squatters of uid 65534 hold discovery ports before our server starts: one with a key id of its own, two
    claiming our key's id (as if they had learned it), one of which sends its commands before its welcome. The
    extension connects to ours only; the first squatter never even gets a WebSocket, the others get one hello each
    (a fresh nonce, their own token) and nothing else: no command answered, no event, no pong. The popup shows the
    first as unpaired, the second as untrusted, the third as backing off."""
    sites.chatgpt.set_next(**FAST)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    key = pairing.load_or_create(state)  # what `serve` will find there
    async with squatter(squatter_program) as stranger, squatter(squatter_program, key_id=key.key_id) as impostor, \
            squatter(squatter_program, key_id=key.key_id, commands_first=True) as hasty, \
            open_bridge(sites, tmp_path, state_dir=state) as b, b.devtools() as dt:
        st = await linked_status(b)
        await ask(b, "chatgpt", "What is 5 plus 5?")  # our own server is obeyed meanwhile

        async def settled() -> list[dict[str, Any]] | None:
            rows = await popup_rows(dt)
            s, i, h = row_on(rows, stranger.port), row_on(rows, impostor.port), row_on(rows, hasty.port)
            done = (impostor.events("ws-closed") and hasty.events("ws-closed") and len(stranger.events("http")) >= 3
                    and s and i and h and s["state"] == "unpaired" and i["state"] == "untrusted"
                    and h["state"] == "backing off")
            return rows if done else None

        rows = await eventually(settled, 20, "every squatter seen and refused")
        # What proves nothing more happens: two more discovery rounds (every 5 s while ours is connected) that
        # reached every squatter. A socket the extension opened in the first would have shown by the second.
        seen = {sq.port: len(sq.events("http")) for sq in (stranger, impostor, hasty)}

        async def two_more_rounds() -> bool:
            return all(len(sq.events("http")) >= seen[sq.port] + 2 for sq in (stranger, impostor, hasty))

        await eventually(two_more_rounds, 20, "two more discovery rounds after the refusals")
        later = await b.status()
        pages = await dt.pages("https://chatgpt.com/")
        shown = await popup_text(dt)
    stranger_row, impostor_row, hasty_row = (row_on(rows, sq.port) for sq in (stranger, impostor, hasty))
    assert stranger_row is not None and impostor_row is not None and hasty_row is not None
    # None of them gets a word of its own into the popup (issue 36): no project text (their lure), no fingerprint,
    # only "an unknown server on port N" and what the extension says of it.
    for sq in (stranger, impostor, hasty):
        assert f"an unknown server on port {sq.port}" in shown
        assert row_on(rows, sq.port) == {**row_on(rows, sq.port), "unknown": True, "project": "", "key": ""}  # type: ignore[dict-item]
    assert "re-pairing" not in shown and "aib1-" not in shown and "SQUATTER" not in shown
    # The stranger: polled like any server, never connected to.
    assert stranger.events("ws-open") == [] and stranger.events("frame") == []
    assert "ai-bridge pair" in stranger_row["lastError"]
    # The impostor: one hello, then the extension hung up on it; none of its seven commands got an answer.
    frames = impostor.frames()
    assert [f["type"] for f in frames] == ["hello"], frames
    assert pairing.NONCE.fullmatch(frames[0]["nonce"]) and len(frames[0]["nonce"]) == 64
    assert len(impostor.events("ws-open")) == len(hasty.events("ws-open")) == 1  # and no second try
    assert impostor.events("ws-open")[0]["origin"].startswith("chrome-extension://")
    assert "could not prove" in impostor_row["lastError"]
    # The hasty one: its first command ended the connection, unanswered.
    assert [f["type"] for f in hasty.frames()] == ["hello"], hasty.frames()
    assert "broke the protocol before proving its pairing key" in hasty_row["lastError"]
    # Ours stayed connected throughout, on the same link; nothing opened a tab but our own ask.
    assert later["extension"]["connected"] and later["extension"]["since"] == st["extension"]["since"]
    assert len(pages) == 1


async def test_the_users_chrome_is_paired_in_the_popup(sites: FakeSites, tmp_path: Path) -> None:
    """A second server on its own state dir (--browser connect, as with the user's Chrome) is unpaired: listed with
    its key fingerprint, not connected. The user runs `ai-bridge pair` and pastes its code into the popup: the
    extension connects and the server answers asks."""
    sites.gemini.set_next(**FAST)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    b_state = tmp_path / "b" / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    async with open_bridge(sites, tmp_path / "a", project="proj-a") as a, a.devtools() as dt:
        await linked_status(a)
        async with open_bridge(sites, tmp_path / "b", project="proj-b", extra=("--browser", "connect")) as b:
            b_key = pairing.load(b_state)
            assert b_key is not None

            b_port = discovery_port(b)

            async def unpaired_row() -> dict[str, Any] | None:
                rows = await popup_rows(dt)
                return next((r for r in rows if r.get("port") == b_port and r["state"] == "unpaired"), None)

            await eventually(unpaired_row, 15, "server B listed as unpaired")
            assert not (await b.status())["extension"]["connected"]
            pair = subprocess.run([sys.executable, "-m", "supervisor.app.cli", "pair", "--state-dir", str(b_state)],
                                  capture_output=True, text=True, env=env, cwd=REPO, timeout=30, check=True)
            code = pair.stdout.strip()
            assert code == b_key.code and b_key.fingerprint in pair.stderr
            # The user opens the popup, pastes the code and presses Pair.
            popup = (await dt.send("Target.createTarget", {"url": POPUP_URL}))["targetId"]
            try:
                await eventually(lambda: dt.evaluate(popup, "location.protocol === 'chrome-extension:' && "
                                                            "document.readyState === 'complete'"), 10, "popup")
                await dt.evaluate(popup, f"document.getElementById('code').value = {json.dumps(code + chr(10))}; "
                                         "document.getElementById('pair-form').requestSubmit(); 0")
                shown = await eventually(lambda: dt.evaluate(popup, "document.getElementById('pair-result')"
                                                                    ".textContent"), 10, "the popup's answer")
            finally:
                await dt.send("Target.closeTarget", {"targetId": popup})
            st_b = await linked_status(b, timeout=15)
            sc = await ask(b, "gemini", "B: what is 6 plus 6?")
    assert shown == f"paired: key {b_key.fingerprint}"
    assert st_b["browser"]["ownership"] == "user" and sc["answer"]
