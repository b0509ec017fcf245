"""``ai-bridge doctor``: launch headless Chromium with the bundled extension (temporary profile), check every link of
the chain, print a table with timings and the fix for each failure. Exit 0 only when everything passes."""

from __future__ import annotations

import contextlib
import http.client
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterator

import attrs
import trio

from actors.browser import browser_version, find_browser
from actors.protocol.browser import BROWSER, EnsureBrowser
from actors.protocol.discovery import DISCOVERY, DiscoveryPort
from actors.protocol.relay import RELAY, ExtCommand

from ..config import PORT_RANGE, Config
from ..errors import BridgeError
from ..safetext import for_terminal, json_for_terminal
from . import open_bridge
from .failure import leaf, one_line


@attrs.define
class Check:
    name: str
    ok: bool = False
    detail: str = ""
    ms: float | None = None
    fix: str = ""


TOP_LEVEL = ("supervisor", "actors")  # the import packages ai-bridge installs (pyproject's wheel packages)


def package_clashes(path: list[str] | None = None) -> list[str]:
    """Other installed distributions that also install a top-level `supervisor` or `actors` package, e.g. PyPI's
    Supervisor: in one environment the two overwrite each other's files and either may break."""
    from importlib.metadata import distributions

    found = set()
    for dist in distributions(path=path) if path is not None else distributions():
        name = dist.metadata["Name"] or "?"
        if name.lower().replace("_", "-") == "ai-bridge":
            continue
        tops = set((dist.read_text("top_level.txt") or "").split())
        tops |= {f.parts[0].removesuffix(".py") for f in dist.files or () if f.parts}
        if clash := tops.intersection(TOP_LEVEL):
            found.add(f"{name} {dist.version} (installs {', '.join(sorted(clash))}/)")
    return sorted(found)


async def doctor_main(config: Config) -> int:
    config = attrs.evolve(config, browser="launch", headless=True, isolated=True)
    checks: list[Check] = []

    async def step(name: str, fix: str, fn: Callable[[], Awaitable[str]]) -> bool:
        check = Check(name, fix=fix)
        checks.append(check)
        t0 = time.perf_counter()
        try:
            check.detail = await fn()
            check.ok = True
        except (BridgeError, OSError, trio.TooSlowError, KeyError, AssertionError) as exc:
            check.detail = f"{type(exc).__name__}: {exc}"
        check.ms = (time.perf_counter() - t0) * 1000
        return check.ok

    async def own_package_names() -> str:
        clashes = await trio.to_thread.run_sync(package_clashes)
        assert not clashes, "also installed here: " + "; ".join(clashes)
        return f"no other package installs {'/ or '.join(TOP_LEVEL)}/"

    await step("package names not shared", "ai-bridge's top-level packages supervisor/ and actors/ clash with "
               "PyPI's Supervisor: install ai-bridge on its own (uvx, pipx or a venv; docs/install.md)",
               own_package_names)

    path: list[str] = []

    async def browser_found() -> str:
        found = await trio.to_thread.run_sync(find_browser, config.browser_path, config.channel)
        path.append(found)
        return f"{found} ({await trio.to_thread.run_sync(browser_version, found) or 'unknown version'})"

    if not await step("browser found", "apt-get install -y chromium (or pass --browser-path)", browser_found):
        return report(checks)
    config = attrs.evolve(config, browser_path=path[0])
    try:
        await _bridge_checks(config, step)
    except (BridgeError, OSError, BaseExceptionGroup) as failure:
        # The tree did not start (every discovery port taken, an unusable state dir): a row of the table like any
        # other check, with the error's own fix.
        exc = leaf(failure)
        if not isinstance(exc, BridgeError | OSError):
            raise
        typed = isinstance(exc, BridgeError)
        checks.append(Check("ai-bridge started (discovery, relay)",
                            detail=f"[{exc.code}] {exc.message}" if isinstance(exc, BridgeError) else one_line(exc),
                            fix=(exc.hint if isinstance(exc, BridgeError) else None) or
                            ("see the code's section in docs/troubleshooting.md" if typed else "fix the file's "
                             "permissions, or pass a --state-dir you can write")))
    return report(checks)


Step = Callable[[str, str, Callable[[], Awaitable[str]]], Awaitable[bool]]


async def _bridge_checks(config: Config, step: Step) -> None:
    """The checks that need the actor tree: discovery, the launched browser and its extension, the relay."""
    async with open_bridge(config) as bridge:
        port = await bridge.ref(DISCOVERY).call(DiscoveryPort(), timeout=5)

        async def discovery_guarded() -> str:
            def probe(origin: str | None) -> int:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                headers = {"Origin": origin} if origin else {}
                conn.request("GET", "/mcp-discovery", headers=headers)
                status = conn.getresponse().status
                conn.close()
                return status

            own = await trio.to_thread.run_sync(probe, None)
            # The refusal of our own forged probe is logged as a security event (to the log file); on the terminal
            # it would only look like a problem in the middle of the report.
            with _quiet_on_stderr("ai_bridge.security"):
                web = await trio.to_thread.run_sync(probe, "https://example.com")
            assert own == 200 and web == 403, f"own request {own}, web origin {web}"
            return f"http://127.0.0.1:{port}: local 200, web origin 403"

        await step("discovery (loopback, web origins refused)",
                   f"another program may hold the discovery ports {PORT_RANGE}", discovery_guarded)

        async def extension_connected() -> str:
            await bridge.ref(BROWSER).call(EnsureBrowser(timeout_s=20), timeout=30)
            return "connected"

        ok = await step("browser launched, extension connected",
                        "see <state-dir>/browser.log; a branded Chrome >= 137 needs the extension loaded by hand",
                        extension_connected)
        relay = bridge.ref(RELAY)
        if ok:
            async def roundtrip() -> str:
                samples = []
                for _ in range(20):
                    t0 = time.perf_counter()
                    await relay.call(ExtCommand("ext.info", {}, 5), timeout=10)
                    samples.append((time.perf_counter() - t0) * 1000)
                return f"median {statistics.median(samples):.2f} ms over 20"

            await step("relay round trip", "the extension's service worker may be crashing: chrome://extensions",
                       roundtrip)

            async def attach_selftest() -> str:
                created = await relay.call(ExtCommand("tabs.create", {
                    "url": f"http://127.0.0.1:{port}/selftest", "newWindow": True}, 30), timeout=40)
                tab_info = created.get("tab")
                assert isinstance(tab_info, dict) and isinstance(tab_info.get("tabId"), int), "tabs.create: no tab"
                tab = tab_info["tabId"]
                try:
                    await relay.call(ExtCommand("debugger.attach", {"tabId": tab}), timeout=15)
                    got = await relay.call(ExtCommand("cdp.send", {"tabId": tab, "method": "Runtime.evaluate",
                                                                   "params": {"expression": "document.title",
                                                                              "returnByValue": True}}), timeout=15)
                    result = got.get("result")
                    title = result.get("value") if isinstance(result, dict) else None
                    assert title == "ai-bridge self-test", f"unexpected page title {title!r}"
                    await relay.call(ExtCommand("cdp.send", {"tabId": tab, "method": "Runtime.evaluate", "params": {
                        "expression": "document.getElementById('probe').focus()"}}), timeout=15)
                    await relay.call(ExtCommand("cdp.send", {"tabId": tab, "method": "Input.insertText",
                                                             "params": {"text": "ai-bridge ✓"}}), timeout=15)
                    got = await relay.call(ExtCommand("cdp.send", {"tabId": tab, "method": "Runtime.evaluate",
                                                                   "params": {"expression": "probe.value",
                                                                              "returnByValue": True}}), timeout=15)
                    result = got.get("result")
                    value = result.get("value") if isinstance(result, dict) else None
                    assert value == "ai-bridge ✓", "typed text did not arrive"
                finally:
                    await relay.call(ExtCommand("tabs.close", {"tabId": tab}), timeout=10)
                return "attached, evaluated, typed"

            await step("debugger attach on the self-test page", "check chrome://extensions for errors",
                       attach_selftest)


async def live_main(config: Config, provider: str, timeout_s: float, as_json: bool) -> int:
    """`doctor --live`: the no-send health probe of the provider pages in the browser ai-bridge uses (any --browser
    mode, the same actors as `serve`). Reads the project's kept conversation when it has one; never types."""
    from pathlib import Path

    from actors.protocol.common import sites_named

    from .probe import all_ok, probe_providers, render_table, reports_json

    providers = list(sites_named(provider))
    project = config.project or Path.cwd().name
    async with open_bridge(config) as bridge:
        results = await probe_providers(bridge, providers, timeout_s=timeout_s, project=project, choices=True)
    if as_json:
        print(json_for_terminal(reports_json(results)))  # page text: shown, never obeyed
    else:
        print(for_terminal(render_table(results)))
    sys.stdout.flush()
    return 0 if all_ok(results) else 1


@contextlib.contextmanager
def _quiet_on_stderr(logger: str) -> Iterator[None]:
    import logging

    def keep(record: logging.LogRecord) -> bool:
        return not record.name.startswith(logger)

    stderr_handlers = [h for h in logging.getLogger().handlers
                       if isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) is sys.stderr]
    for h in stderr_handlers:
        h.addFilter(keep)
    try:
        yield
    finally:
        for h in stderr_handlers:
            h.removeFilter(keep)


def report(checks: list[Check]) -> int:
    width = max(len(c.name) for c in checks)
    out = sys.stdout
    print(f"{'check':<{width}}  result  {'time':>9}  detail", file=out)
    for c in checks:
        ms = f"{c.ms:8.0f}ms" if c.ms is not None else ""
        print(for_terminal(f"{c.name:<{width}}  {'ok' if c.ok else 'FAIL':<6}  {ms:>9}  {c.detail}"), file=out)
        if not c.ok:
            print(for_terminal(f"{'':<{width}}  fix: {c.fix}"), file=out)
    ok = all(c.ok for c in checks)
    print("all checks passed" if ok else "some checks failed", file=out)
    return 0 if ok else 1
