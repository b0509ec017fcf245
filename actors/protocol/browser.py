"""browser: makes sure a browser with our extension is connected (waits for the user's Chrome, or launches one)."""

from __future__ import annotations

import enum

import attrs

from supervisor.otp import Address, Request


class BrowserState(enum.StrEnum):
    WAITING = "waiting"  # nothing connected yet, nothing asked for
    LAUNCHING = "launching"
    CONNECTED = "connected"
    DEGRADED = "degraded"  # was connected (or must be, in connect mode) and is not
    CLOSING = "closing"


class Ownership(enum.StrEnum):
    LAUNCHED = "launched"  # we started it
    ATTACHED = "attached"  # a browser already running on our profile
    USER = "user"  # the user's own Chrome


@attrs.frozen
class BrowserReport:
    mode: str
    state: BrowserState
    ownership: Ownership | None
    pid: int | None
    path: str | None
    headless: bool | None
    launch_to_connected_s: float | None
    profile: str
    extension_dir: str
    last_error: str | None
    recoveries: int = 0

    def as_json(self) -> dict[str, object]:
        return {"mode": self.mode, "state": self.state.value,
                "ownership": self.ownership.value if self.ownership else None, "pid": self.pid, "path": self.path,
                "headless": self.headless, "launchToConnectedS": self.launch_to_connected_s,
                "profile": self.profile, "extensionDir": self.extension_dir, "lastError": self.last_error,
                "recoveries": self.recoveries}


@attrs.frozen
class EnsureBrowser(Request[None]):
    """→ None once a browser with our extension is connected: waits (connect), or launches (launch / auto when
    nothing connected in time). Fails with `ExtensionNotConnected` or `BrowserLaunchFailed`."""

    timeout_s: float = 30.0


@attrs.frozen
class BrowserStatus(Request[BrowserReport]):
    pass


BrowserRequest = EnsureBrowser | BrowserStatus
BROWSER = Address[BrowserRequest]("browser", BrowserRequest)
