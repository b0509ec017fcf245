"""The pairing key: how the extension knows a server runs as the user who paired it (docs/security.md).

Discovery ports are open to every local user: a process of another uid can answer ``/mcp-discovery`` first and
would be obeyed. So each state dir has a 256-bit secret, ``<state-dir>/pairing.key`` (0600, in the 0700 state dir:
only its user reads it). The extension stores the same secret once, when it is paired: over the private debugging
pipe of a browser ai-bridge launched, or by the user pasting the code ``ai-bridge pair`` prints into the popup.

Discovery names the key by its `key_id` (public: an HMAC of a fixed label, it reveals nothing of the secret). The
extension connects only to a server whose key it holds, sends a fresh random nonce in its hello, and obeys the
server only after the welcome carries ``HMAC-SHA256(secret, label ‖ nonce ‖ serverId ‖ token)`` — which no other
user can compute. The same functions are in ``extension/pairing.js``; tests check the two agree.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

import attrs

from .errors import PairingCodeInvalid, StateFileError
from .files import open_private, read_private

KEY_FILE = "pairing.key"
KEY_BYTES = 32
CODE_PREFIX = "aib1-"  # version 1 of the pairing code: the prefix, then the secret in unpadded base64url
KEY_ID_LABEL = b"ai-bridge key id v1"
PROOF_LABEL = "ai-bridge server proof v1"
MCP_TOKEN_LABEL = b"ai-bridge mcp http token v1"
NONCE = re.compile(r"[0-9a-f]{32,128}")  # the extension sends 64 (32 random bytes, hex)
_CODE_BODY = re.compile(r"[A-Za-z0-9_-]{43}")


@attrs.frozen
class PairingKey:
    secret: bytes = attrs.field(repr=False)  # never in logs

    @secret.validator
    def _check(self, _attr: object, value: bytes) -> None:
        if len(value) != KEY_BYTES:
            raise ValueError(f"a pairing key is {KEY_BYTES} bytes")

    @property
    def key_id(self) -> str:
        """16 hex digits naming the key in discovery answers and the popup; reveals nothing of the secret."""
        return hmac.new(self.secret, KEY_ID_LABEL, hashlib.sha256).hexdigest()[:16]

    @property
    def fingerprint(self) -> str:
        """The key id as the popup shows it: ``1a2b-3c4d-5e6f-7a8b``."""
        k = self.key_id
        return "-".join(k[i:i + 4] for i in range(0, 16, 4))

    @property
    def code(self) -> str:
        """What the user pastes into the popup: the secret itself (so: as private as the key file)."""
        return CODE_PREFIX + base64.urlsafe_b64encode(self.secret).decode("ascii").rstrip("=")

    @property
    def mcp_token(self) -> str:
        """The bearer token MCP clients send to `serve --http-port`: an HMAC of a fixed label, so the key file
        stays the one secret of the state dir, and the token reveals nothing of the key (it cannot pair a
        browser)."""
        digest = hmac.new(self.secret, MCP_TOKEN_LABEL, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

    def server_proof(self, nonce: str, server_id: str, token: str) -> str:
        """The welcome's proof for the extension's `nonce` (hex, from its hello), bound to this server and boot."""
        message = "\n".join((PROOF_LABEL, nonce, server_id, token)).encode("utf-8")
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()

    def check_proof(self, proof: object, nonce: str, server_id: str, token: str) -> bool:
        """What the extension checks (constant-time); for tests and Python clients."""
        if not isinstance(proof, str) or not proof.isascii():
            return False
        return hmac.compare_digest(proof.encode("ascii"), self.server_proof(nonce, server_id, token).encode("ascii"))


def generate() -> PairingKey:
    return PairingKey(secrets.token_bytes(KEY_BYTES))


def parse_code(text: str) -> PairingKey:
    """A pairing code as the user may paste it (surrounding blanks, the prefix or not) → its key."""
    body = "".join(text.split())
    body = body.removeprefix(CODE_PREFIX)
    if not _CODE_BODY.fullmatch(body):
        raise PairingCodeInvalid("not a pairing code",
                                 hint=f"Copy the whole line `ai-bridge pair` prints (it starts with {CODE_PREFIX}).")
    try:
        secret = base64.urlsafe_b64decode(body + "=")
    except (binascii.Error, ValueError) as exc:
        raise PairingCodeInvalid("not a pairing code") from exc
    return PairingKey(secret)


def load(state_dir: Path) -> PairingKey | None:
    """The state dir's key, or None when it has none yet. A damaged file is a `StateFileError`."""
    path = state_dir / KEY_FILE
    raw = read_private(path, limit=1024)
    if raw is None:
        return None
    try:
        return parse_code(raw.decode("ascii"))
    except (UnicodeDecodeError, PairingCodeInvalid) as exc:
        raise StateFileError(f"{path} is not a pairing key",
                             hint="Delete it (a new key is made at the next start) and pair your browser again: "
                             "`ai-bridge pair`.") from exc


def load_or_create(state_dir: Path) -> PairingKey:
    """The state dir's key, made on first use. Two processes starting at once end up with the same key: the file
    appears whole (a private temp file, then a hard link that fails if another process linked first)."""
    if (key := load(state_dir)) is not None:
        return key
    key = generate()
    path = state_dir / KEY_FILE
    tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        try:
            os.write(fd, (key.code + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path, follow_symlinks=False)
        except FileExistsError:
            pass  # another process made it first: use theirs
    finally:
        os.unlink(tmp)
    key = load(state_dir)
    if key is None:
        raise StateFileError(f"{path} vanished right after it was written")
    return key
