"""The Chromium flags that take a browser to the fake sites at the real host names (stdlib only: the test fixture
and `ai-bridge demo` both build them here).

``MAP * ~NOTFOUND`` keeps every other host off the network; ``EXCLUDE 127.0.0.1`` matters, since ``MAP *`` also
catches IP literals and would break the extension's fetch to the local server (NOTES.md). The SPKI pin alone makes
the sites' certificate acceptable (pages load and CDP attaches without an interstitial).
"""

from __future__ import annotations


def host_resolver_rules(chatgpt_port: int, gemini_port: int, host: str = "127.0.0.1") -> str:
    # Gemini's generated images come from Google's image host: the gemini fake serves them too (issue 35).
    return (f"MAP chatgpt.com {host}:{chatgpt_port}, MAP gemini.google.com {host}:{gemini_port}, "
            f"MAP lh3.googleusercontent.com {host}:{gemini_port}, "
            "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1")


def chromium_args(chatgpt_port: int, gemini_port: int, spki: str, *, blanket_cert_errors: bool = False) -> list[str]:
    args = [f"--host-resolver-rules={host_resolver_rules(chatgpt_port, gemini_port)}",
            f"--ignore-certificate-errors-spki-list={spki}"]
    if blanket_cert_errors:
        args.append("--ignore-certificate-errors")
    return args
