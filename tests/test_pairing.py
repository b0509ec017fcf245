"""The pairing key and the proof the relay's welcome carries (supervisor/pairing.py, actors/relay/wire.py), and that
the extension's implementation (extension/pairing.js, run in Node) computes the same key ids and accepts exactly the
proofs the server makes. Every hello, nonce, code and proof from outside is either accepted or a typed refusal."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.relay import wire
from supervisor import pairing
from supervisor.constants import SHARED
from supervisor.errors import PairingCodeInvalid, StateFileError

from .conftest import REPO, requires_node

NONCE = "ab" * 32
SERVER_ID = "0123456789abcdef0123456789abcdef"
TOKEN = "f" * 64
NODE = shutil.which("node")

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                           max_leaves=8)


# --- the key file ----------------------------------------------------------------------------------------------------


def test_key_is_made_once_private_and_stable(tmp_path: Path) -> None:
    first = pairing.load_or_create(tmp_path)
    path = tmp_path / pairing.KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert pairing.load_or_create(tmp_path) == first == pairing.load(tmp_path)
    assert path.read_text().strip() == first.code and first.code.startswith("aib1-")
    assert [p.name for p in tmp_path.iterdir()] == [pairing.KEY_FILE]  # no temp file left behind
    assert first.secret.hex() not in repr(first)  # never in logs


def test_processes_starting_together_share_one_key(tmp_path: Path) -> None:
    keys: list[pairing.PairingKey] = []
    threads = [threading.Thread(target=lambda: keys.append(pairing.load_or_create(tmp_path))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(keys) == 8 and len(set(keys)) == 1


def test_a_planted_link_or_damaged_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text(pairing.generate().code)
    os.symlink(target, tmp_path / pairing.KEY_FILE)
    with pytest.raises(StateFileError, match="symlink"):
        pairing.load_or_create(tmp_path)
    (tmp_path / pairing.KEY_FILE).unlink()
    (tmp_path / pairing.KEY_FILE).write_text("garbage\n")
    with pytest.raises(StateFileError, match="not a pairing key"):
        pairing.load_or_create(tmp_path)


# --- codes ------------------------------------------------------------------------------------------------------------


def test_code_round_trip_as_users_paste_it() -> None:
    key = pairing.generate()
    body = key.code.removeprefix("aib1-")
    for pasted in (key.code, f"  {key.code}\n", body, f"{key.code[:20]} {key.code[20:]}"):
        assert pairing.parse_code(pasted) == key
    assert len(key.fingerprint) == 19 and key.fingerprint.replace("-", "") == key.key_id


@given(st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_any_text_is_a_key_or_a_typed_refusal(text: str) -> None:
    try:
        key = pairing.parse_code(text)
    except PairingCodeInvalid as exc:
        assert exc.code == "pairing_code_invalid"
    else:
        assert len(key.secret) == pairing.KEY_BYTES


# --- the hello's nonce and the welcome's proof ------------------------------------------------------------------------


def hello(**over: Any) -> str:
    return json.dumps({"type": "hello", "token": TOKEN, "protocolVersion": SHARED.protocol_version,
                       "extensionVersion": "0.2.0", "userAgent": "test", **over})


def test_welcome_proves_the_key_over_the_extensions_nonce() -> None:
    key = pairing.generate()
    got = wire.check_hello(hello(nonce=NONCE), token=TOKEN)
    assert isinstance(got, wire.Hello) and got.nonce == NONCE
    welcome = json.loads(wire.welcome(got, key=key, server_id=SERVER_ID, token=TOKEN))
    assert welcome["type"] == "welcome" and welcome["serverId"] == SERVER_ID
    assert key.check_proof(welcome["proof"], NONCE, SERVER_ID, TOKEN)
    # Bound to the key, the nonce, the server and the boot: none of them can be swapped.
    assert not pairing.generate().check_proof(welcome["proof"], NONCE, SERVER_ID, TOKEN)
    assert not key.check_proof(welcome["proof"], "cd" * 32, SERVER_ID, TOKEN)
    assert not key.check_proof(welcome["proof"], NONCE, "1" * 32, TOKEN)
    assert not key.check_proof(welcome["proof"], NONCE, SERVER_ID, "e" * 64)


def test_a_hello_without_a_nonce_gets_no_proof() -> None:
    got = wire.check_hello(hello(), token=TOKEN)
    assert isinstance(got, wire.Hello) and got.nonce is None
    assert "proof" not in json.loads(wire.welcome(got, key=pairing.generate(), server_id=SERVER_ID, token=TOKEN))


@given(json_values)
@settings(max_examples=300, deadline=None)
def test_any_nonce_is_accepted_or_refused_as_a_bad_hello(nonce: Any) -> None:
    got = wire.check_hello(hello(nonce=nonce), token=TOKEN)
    if isinstance(got, wire.Refusal):
        assert got.code == SHARED.close.bad_hello and got.security
    else:
        assert got.nonce is None if nonce is None else pairing.NONCE.fullmatch(nonce)


@given(json_values | st.text(alphabet="0123456789abcdef", min_size=64, max_size=64))
@settings(max_examples=300, deadline=None)
def test_a_forged_proof_is_false_never_a_crash(proof: Any) -> None:
    assert pairing.generate().check_proof(proof, NONCE, SERVER_ID, TOKEN) is False


# --- the extension computes the same ---------------------------------------------------------------------------------

NODE_SCRIPT = """
const m = await import(process.argv[2]);
const cases = JSON.parse(process.argv[3]);
const out = [];
for (const c of cases) {
  const key = await m.keyForCode(c.code);
  out.push({keyId: await m.keyIdForCode(c.code), ok: await m.verifyProof(key, c.proof, c.nonce, c.serverId, c.token)});
}
let bad = null;
try { m.parseCode('aib1-short'); } catch (e) { bad = String(e.message); }
console.log(JSON.stringify({out, bad, fingerprint: m.fingerprint(cases[0].keyIdGiven)}));
"""


@requires_node
def test_the_extension_agrees_with_the_server(tmp_path: Path) -> None:
    assert NODE is not None
    module = tmp_path / "pairing.mjs"
    shutil.copy(REPO / "extension" / "pairing.js", module)
    script = tmp_path / "check.mjs"
    script.write_text(NODE_SCRIPT)
    key, other = pairing.generate(), pairing.generate()
    good = key.server_proof(NONCE, SERVER_ID, TOKEN)
    cases = [
        {"code": key.code, "proof": good, "nonce": NONCE, "serverId": SERVER_ID, "token": TOKEN},
        {"code": other.code, "proof": good, "nonce": NONCE, "serverId": SERVER_ID, "token": TOKEN},  # wrong key
        {"code": key.code, "proof": good, "nonce": "cd" * 32, "serverId": SERVER_ID, "token": TOKEN},  # replayed
        {"code": key.code, "proof": good.upper(), "nonce": NONCE, "serverId": SERVER_ID, "token": TOKEN},
        {"code": key.code, "proof": None, "nonce": NONCE, "serverId": SERVER_ID, "token": TOKEN},
        {"code": key.code, "proof": "0" * 64, "nonce": NONCE, "serverId": SERVER_ID, "token": TOKEN},
    ]
    cases[0]["keyIdGiven"] = key.key_id
    done = subprocess.run([NODE, str(script), module.as_uri(), json.dumps(cases)], capture_output=True, text=True,
                          timeout=30, check=True)
    got = json.loads(done.stdout)
    assert [o["ok"] for o in got["out"]] == [True, False, False, False, False, False]
    assert [o["keyId"] for o in got["out"]] == [key.key_id, other.key_id, *[key.key_id] * 4]
    assert got["fingerprint"] == key.fingerprint
    assert "not a pairing code" in got["bad"]


# --- the extension opens sockets only on loopback (docs/security.md, "connects only to loopback ws:// URLs") ----------

DISCOVERY_SCRIPT = """
const opened = [];
globalThis.WebSocket = class { constructor(url) { opened.push(url); } close() {} };  // records, opens nothing
globalThis.chrome = { storage: { local: { get: async () => ({}), set: async () => {} } } };
const { Discovery, PORTS } = await import(process.argv[2]);
const urls = JSON.parse(process.argv[3]);
const hex = (i, n) => String(i).padStart(n, '0');
const answers = PORTS.map((_, i) => i >= urls.length ? null : {
  wsUrl: urls[i][0], token: hex(i, 64), serverId: hex(i, 32), keyId: urls[i][1] ? 'ab'.repeat(8) : 'cd'.repeat(8),
  protocolVersion: 1 });
const pairings = { ready: Promise.resolve(), get: (keyId) => keyId === 'ab'.repeat(8) ? 'a paired key' : null };
const d = new Discovery({ executor: {}, pairings, onChange() {} });
d._reconcile(answers);  // one discovery round
console.log(JSON.stringify({ opened, rows: d.snapshot().map((r) => [r.port, r.state, r.lastError]) }));
process.exit(0);  // the connections' welcome timers would keep node running
"""


@requires_node
def test_the_extension_sends_its_hello_only_to_a_loopback_socket(tmp_path: Path) -> None:
    """The token goes in the hello, so the extension opens a WebSocket only to a loopback ws:// URL, whatever a
    paired server's discovery answer names; and none at all to a server whose key it does not hold.
    extension/discovery.js itself, under node, with a WebSocket that only records where it was asked to connect."""
    assert NODE is not None
    shutil.copytree(REPO / "extension", tmp_path / "ext")
    (tmp_path / "ext" / "package.json").write_text('{"type": "module"}')
    loopback = ["ws://127.0.0.1:9001/", "ws://localhost:9002", "ws://[::1]:9003/relay"]
    elsewhere = ["ws://evil.example:9004", "wss://127.0.0.1:9005", "ws://127.0.0.2:9006", "ws://0.0.0.0:9007",
                 "http://127.0.0.1:9008", "ws://127.0.0.1.evil.example:9009"]
    unpaired = "ws://127.0.0.1:9010/"
    urls = [(u, True) for u in loopback + elsewhere] + [(unpaired, False)]
    (tmp_path / "ext" / "run.js").write_text(DISCOVERY_SCRIPT)
    done = subprocess.run([NODE, str(tmp_path / "ext" / "run.js"), "./discovery.js", json.dumps(urls)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["opened"] == loopback
    refused = [(state, why) for _, state, why in got["rows"] if state != "connecting"]
    # In the extension's own words, never echoing what the server wrote (issue 36): no URL of theirs in the popup.
    assert refused == [("refused", "its discovery answer is not one this extension accepts (another version, or not "
                        "ai-bridge): its wsUrl is not a loopback ws:// URL")] * len(elsewhere) + [
        ("unpaired", "not paired with this browser. If it is yours, run `ai-bridge pair` in your own terminal and "
         "paste the code it prints below; a server never asks you for a code")]
