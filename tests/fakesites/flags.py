"""The Chromium flags that take a browser to the fake sites at the real host names (stdlib only: the test fixture
and `ai-bridge demo` both build them here).

``MAP * ~NOTFOUND`` keeps every other host off the network; ``EXCLUDE 127.0.0.1`` matters, since ``MAP *`` also
catches IP literals and would break the extension's fetch to the local server (NOTES.md). The SPKI pin alone makes
the sites' certificate acceptable (pages load and CDP attaches without an interstitial).
"""

from __future__ import annotations

from collections.abc import Mapping

# Every fake site, in ProviderName's order, and the host names each serves (the first is its own).
SITES = ("chatgpt", "gemini", "claude", "grok", "perplexity")
# Gemini's generated images come from Google's image host: the gemini fake serves them too (issue 35). ChatGPT's Deep
# Research runs in a frame on its sandbox host (NX capture deep-research-2026-07.html): the chatgpt fake serves it.
HOSTS = {"chatgpt": ("chatgpt.com", "connector-openai-deep-research.web-sandbox.oaiusercontent.com"),
         "gemini": ("gemini.google.com", "lh3.googleusercontent.com"),
         "claude": ("claude.ai",), "grok": ("grok.com",), "perplexity": ("www.perplexity.ai", "perplexity.ai")}


def host_resolver_rules(ports: Mapping[str, int], host: str = "127.0.0.1") -> str:
    """Each site's host names to its port on `host` (the sites not in `ports` go nowhere, as every other host)."""
    maps = [f"MAP {name} {host}:{ports[site]}" for site in SITES if site in ports for name in HOSTS[site]]
    return ", ".join([*maps, "MAP * ~NOTFOUND", "EXCLUDE localhost", "EXCLUDE 127.0.0.1"])


def chromium_args(ports: Mapping[str, int], spki: str, *, blanket_cert_errors: bool = False) -> list[str]:
    args = [f"--host-resolver-rules={host_resolver_rules(ports)}", f"--ignore-certificate-errors-spki-list={spki}"]
    if blanket_cert_errors:
        args.append("--ignore-certificate-errors")
    return args
