"""emulate and resize: the tab's viewport, device scale, user agent, color scheme, network and CPU throttling.

Every override belongs to our debugger session: Chrome drops them all when the session ends, so releasing a tab
(tab_close on an adopted one, or the tab's lease ending) gives it back as it was. A re-attach after a detach starts
with none (the tab's `emulation` is cleared there too).
"""

from __future__ import annotations

import attrs

from supervisor.errors import InvalidArgument

from ..protocol.browser_tools import Emulate, EmulateReport, Emulation, NetworkPreset, Resize, Viewport
from ..protocol.common import JSON, JSONObject
from .page import Page

MAX_DEVICE_SIDE = 8192  # device px each way, as screenshots (reading.MAX_SHOT_SIDE)

# DevTools' presets: latency ms, download / upload bytes per second (-1: no limit).
NETWORK: dict[NetworkPreset, JSONObject] = {
    NetworkPreset.NONE: {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    NetworkPreset.OFFLINE: {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
    NetworkPreset.SLOW_3G: {"offline": False, "latency": 2000, "downloadThroughput": 500 * 1024 // 8 * 0.8,
                            "uploadThroughput": 500 * 1024 // 8 * 0.8},
    NetworkPreset.FAST_3G: {"offline": False, "latency": 562.5, "downloadThroughput": 1.6 * 1024 * 1024 / 8 * 0.9,
                            "uploadThroughput": 750 * 1024 / 8 * 0.9},
    NetworkPreset.SLOW_4G: {"offline": False, "latency": 150, "downloadThroughput": 9 * 1024 * 1024 / 8 * 0.9,
                            "uploadThroughput": 9 * 1024 * 1024 / 8 * 0.9},
}


def check_viewport(v: Viewport) -> None:
    """A viewport within MAX_DEVICE_SIDE device pixels each way (CSS px times the scale; a scale of 0 is the browser's
    own, taken as 1): a 10,000 x 10,000 viewport at scale 10 made the next screenshot abort the whole browser."""
    scale = v.device_scale_factor or 1.0
    if v.width * scale > MAX_DEVICE_SIDE or v.height * scale > MAX_DEVICE_SIDE:
        raise InvalidArgument(f"a {v.width} x {v.height} viewport at scale {scale:g} is "
                              f"{v.width * scale:,.0f} x {v.height * scale:,.0f} device pixels; at most "
                              f"{MAX_DEVICE_SIDE} each way", hint="Use a smaller viewport or device_scale_factor.")


def _metrics(v: Viewport) -> JSONObject:
    return {"width": v.width, "height": v.height, "deviceScaleFactor": v.device_scale_factor, "mobile": v.mobile}


async def _apply(page: Page, old: Emulation, new: Emulation, *, every: bool = False) -> None:
    """Send what changed from `old` to `new` (`every`: all of it, as a reset must: what we remember of the session
    may be behind what Chrome holds)."""
    cmds: list[tuple[str, JSONObject]] = []
    if every or new.viewport != old.viewport:
        cmds.append(("Emulation.setDeviceMetricsOverride", _metrics(new.viewport)) if new.viewport is not None
                    else ("Emulation.clearDeviceMetricsOverride", {}))
    if every or new.user_agent != old.user_agent:
        # An empty override is Chrome's "none": the browser's own user agent again.
        cmds.append(("Emulation.setUserAgentOverride", {"userAgent": new.user_agent or ""}))
    if every or new.color_scheme != old.color_scheme:
        features: list[JSON] = ([{"name": "prefers-color-scheme", "value": new.color_scheme.value}]
                                if new.color_scheme else [])
        cmds.append(("Emulation.setEmulatedMedia", {"features": features}))
    if every or new.network != old.network:
        cmds.append(("Network.emulateNetworkConditions", NETWORK[new.network or NetworkPreset.NONE]))
    if every or new.cpu_throttling != old.cpu_throttling:
        cmds.append(("Emulation.setCPUThrottlingRate", {"rate": new.cpu_throttling or 1}))
    if cmds:
        await page.cdp.batch(cmds, timeout_s=15)
    page.tab.emulation = new


async def emulate(page: Page, msg: Emulate) -> EmulateReport:
    old = page.tab.emulation
    base = Emulation() if msg.reset else old
    new = attrs.evolve(
        base,
        viewport=msg.viewport if msg.viewport is not None else base.viewport,
        user_agent=msg.user_agent if msg.user_agent is not None else base.user_agent,
        color_scheme=msg.color_scheme if msg.color_scheme is not None else base.color_scheme,
        network=msg.network if msg.network is not None else base.network,
        cpu_throttling=msg.cpu_throttling if msg.cpu_throttling is not None else base.cpu_throttling)
    if new.viewport is not None:
        check_viewport(new.viewport)
    if new.network is NetworkPreset.NONE:
        new = attrs.evolve(new, network=None)
    if new.cpu_throttling == 1:
        new = attrs.evolve(new, cpu_throttling=None)
    await _apply(page, old, new, every=msg.reset)
    return EmulateReport(page.tab.tab_id, page.tab.url, new)


async def resize(page: Page, msg: Resize) -> EmulateReport:
    old = page.tab.emulation
    v = old.viewport
    viewport = Viewport(msg.width, msg.height, v.device_scale_factor if v else 0, v.mobile if v else False)
    check_viewport(viewport)
    new = attrs.evolve(old, viewport=viewport)
    await _apply(page, old, new)
    return EmulateReport(page.tab.tab_id, page.tab.url, new)



