"""One real server and browser (`open_bridge`) kept open in a thread of its own, for tests that make many calls
through the same stack and cannot hold an async context across them: a Hypothesis test runs each example in a trio
run of its own (pytest-trio), but a server start and a Chromium cost a second of CPU each. `call` hands a tool call to
the bridge's own trio loop and waits for its result.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import trio

from .e2e import Bridge, open_bridge
from .fakesites.fixture import FakeSites


class BridgeThread:
    def __init__(self, sites: FakeSites, tmp: Path, **kw: Any) -> None:
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stop: trio.Event | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self.bridge: Bridge | None = None
        self._thread = threading.Thread(target=self._run, args=(sites, tmp, kw), name="bridge", daemon=True)
        self._thread.start()
        self._ready.wait(180)
        if self._error is not None:
            raise self._error
        if self.bridge is None:
            raise TimeoutError("the bridge did not start within 180 s")

    def _run(self, sites: FakeSites, tmp: Path, kw: dict[str, Any]) -> None:
        async def main() -> None:
            self._stop = trio.Event()
            self._token = trio.lowlevel.current_trio_token()
            async with open_bridge(sites, tmp, **kw) as bridge:
                self.bridge = bridge
                self._ready.set()
                await self._stop.wait()

        try:
            trio.run(main)
        except BaseException as exc:  # reported to the test that started it (or at close)
            self._error = exc
        finally:
            self._ready.set()

    def call(self, tool: str, args: dict[str, Any], timeout: float = 300) -> Any:
        """The tool's result, from the bridge's own loop."""
        assert self.bridge is not None and self._token is not None
        bridge = self.bridge

        async def one() -> Any:
            with trio.fail_after(timeout):
                return await bridge.call(tool, args)

        return trio.from_thread.run(one, trio_token=self._token)

    def close(self) -> None:
        if self._stop is not None and self._token is not None and self._thread.is_alive():
            trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join(60)
        if self._error is not None:
            raise self._error
