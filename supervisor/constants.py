"""Constants the server shares with the extension, read from the one file both ship: ``extension/shared.js``
(packaged as ``supervisor/_extension/shared.js``), a module whose value is JSON between two markers. The extension
imports it; the server parses that JSON. tests/test_packaging.py fails if either side writes one of these values
again instead of reading it."""

from __future__ import annotations

import json
from typing import Final

import attrs

from .paths import extension_path


@attrs.frozen
class CloseCodes:
    dropped: int
    bad_hello: int
    bad_token: int
    hello_timeout: int
    replaced: int


@attrs.frozen
class ProviderSite:
    name: str
    title: str
    origins: tuple[str, ...]
    file_hosts: tuple[str, ...] = ()  # where its answers' images and files may be loaded from (and subdomains)
    frame_hosts: tuple[str, ...] = ()  # the cross-site frames its tab may read through child sessions (issue 34)


@attrs.frozen
class Shared:
    protocol_version: int
    extension_id: str
    discovery_ports: range
    discovery_path: str
    max_frame_bytes: int
    close: CloseCodes
    server_ping_interval_s: float
    providers: tuple[ProviderSite, ...]
    general_cdp_methods: frozenset[str]  # what the extension lets the general browser tools send

    @property
    def extension_origin(self) -> str:
        return f"chrome-extension://{self.extension_id}"


def _load() -> Shared:
    text = (extension_path() / "shared.js").read_text(encoding="utf-8")
    raw = json.loads(text[text.index("/*JSON*/") + len("/*JSON*/"):text.index("/*END*/")])
    cc = raw["closeCodes"]
    ports = raw["discoveryPorts"]
    return Shared(
        protocol_version=int(raw["protocolVersion"]),
        extension_id=str(raw["extensionId"]),
        discovery_ports=range(int(ports["first"]), int(ports["last"]) + 1),
        discovery_path=str(raw["discoveryPath"]),
        max_frame_bytes=int(raw["maxFrameBytes"]),
        close=CloseCodes(dropped=cc["dropped"], bad_hello=cc["badHello"], bad_token=cc["badToken"],
                         hello_timeout=cc["helloTimeout"], replaced=cc["replaced"]),
        server_ping_interval_s=raw["serverPingIntervalMs"] / 1000,
        providers=tuple(ProviderSite(name, p["title"], tuple(p["origins"]),
                                       tuple(p.get("fileHosts", ())), tuple(p.get("frameHosts", ())))
                        for name, p in raw["providers"].items()),
        general_cdp_methods=frozenset(raw["generalCdpMethods"]),
    )


SHARED: Final = _load()
