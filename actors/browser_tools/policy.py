"""Safe mode and the domain policy of the general browser tools (docs/security.md, seed 002 sections 5–7).

- Safe mode: only read-only requests run unless the server was started with ``--enable-mutations`` (interaction and
  navigation) or ``--unsafe-enable-eval`` (`Eval`). The flags come from the configuration only; nothing a page says
  or does can change them.
- Domain policy, default-deny: a request may touch a tab only while the tab's URL passes ``allowed_domains`` (reads
  included: they are the exfiltration path), and may send it only to a URL that passes. The extension checks the
  same patterns again before every chrome.debugger call (extension/policy.js — the two must agree on every URL).
"""

from __future__ import annotations

import enum
from urllib.parse import urlsplit

import attrs

from supervisor.config import Config
from supervisor.errors import EvalDisabled, InvalidArgument, MutationsDisabled, PolicyDenied

from ..protocol import browser_tools as bt
from ..protocol.common import JSONObject


class Capability(enum.Enum):
    READ = "read"
    MUTATE = "mutate"
    EVAL = "eval"


# What each request needs. HandleDialog is a read when it dismisses (a page's alert must not lock a read-only agent
# out of the page) and a mutation when it accepts; see `Policy.require_for`.
CAPABILITY: dict[type[bt.BrowserToolsRequest], Capability] = {
    bt.TabsList: Capability.READ, bt.TabSelect: Capability.READ, bt.ToolsStatus: Capability.READ,
    bt.Snapshot: Capability.READ, bt.Screenshot: Capability.READ, bt.GetText: Capability.READ,
    bt.ExtractLinks: Capability.READ, bt.Query: Capability.READ, bt.WaitFor: Capability.READ,
    bt.ConsoleLogs: Capability.READ, bt.NetworkLog: Capability.READ, bt.HandleDialog: Capability.READ,
    bt.TabNew: Capability.MUTATE, bt.TabClose: Capability.MUTATE, bt.Navigate: Capability.MUTATE,
    bt.History: Capability.MUTATE, bt.Click: Capability.MUTATE, bt.Hover: Capability.MUTATE,
    bt.TypeText: Capability.MUTATE, bt.Press: Capability.MUTATE, bt.Scroll: Capability.MUTATE,
    bt.SelectOption: Capability.MUTATE, bt.Drag: Capability.MUTATE, bt.FillForm: Capability.MUTATE,
    bt.Emulate: Capability.MUTATE, bt.Resize: Capability.MUTATE, bt.UploadFile: Capability.MUTATE,
    bt.Download: Capability.MUTATE,
    bt.Eval: Capability.EVAL,
}

MUTATIONS_HINT = ("Start the server with --enable-mutations (config enable_mutations = true) to allow interaction "
                  "and navigation tools; only do so for an agent you trust with your browser.")
EVAL_HINT = ("Start the server with --unsafe-enable-eval (config unsafe_enable_eval = true) to allow eval; it runs "
             "any JavaScript the agent writes in allowed pages.")
POLICY_HINT = ("The browser tools touch only allowed domains. Start the server with --allow-domain {host} (config "
               "allowed_domains; *.{host} includes its subdomains) if the agent should use this site.")


def policy_host(url: str) -> str | None:
    """The host a URL is judged by (lower case, IPv6 in brackets as browsers write it), or None when it is not an
    http(s) URL. Matches extension/policy.js `policyHost`."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not host:
        return None
    host = host.rstrip(".")
    return f"[{host}]" if ":" in host else host


def is_blank(url: str) -> bool:
    return url == "about:blank" or url.startswith("about:blank#")


def host_allowed(hosts: tuple[str, ...], host: str) -> bool:
    for p in hosts:
        if p == "*":
            return True
        if p.startswith("*."):
            if host == p[2:] or host.endswith(p[1:]):
                return True
        elif host == p:
            return True
    return False


def url_allowed(hosts: tuple[str, ...], url: str) -> bool:
    if is_blank(url):
        return True
    host = policy_host(url)
    return host is not None and host_allowed(hosts, host)


def normalize_url(url: str) -> str:
    """An agent's navigation target as a URL: ``example.com/x`` means ``https://example.com/x``. Refuses what browsers
    and Python would parse differently (backslashes, whitespace, control characters)."""
    text = url.strip()
    if not text or any(c in text for c in "\\\t\n\r ") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise InvalidArgument(f"not a URL a browser and ai-bridge would read the same way: {url[:200]!r}",
                              hint="Pass an absolute http(s) URL without spaces or backslashes.")
    if is_blank(text):
        return text
    if "://" not in text:
        text = "https://" + text
    return text


@attrs.frozen
class Policy:
    hosts: tuple[str, ...]
    mutations: bool
    eval: bool
    network_secrets: bool = False  # credential headers in network_log unredacted (the user's choice)
    download_dir: str | None = None  # where download saves (the user's choice); None: download is refused

    @classmethod
    def from_config(cls, config: Config) -> Policy:
        return cls(hosts=config.allowed_domains, mutations=config.enable_mutations, eval=config.unsafe_enable_eval,
                   network_secrets=config.network_secrets,
                   download_dir=str(config.download_dir) if config.download_dir is not None else None)

    def wire(self) -> JSONObject:
        """What every general-tool command carries to the extension."""
        return {"hosts": list(self.hosts)}

    def allows(self, url: str) -> bool:
        return url_allowed(self.hosts, url)

    def check_url(self, url: str, what: str) -> None:
        if not self.allows(url):
            raise denied(what, url)

    def check_document(self, url: str, origin: str, what: str) -> None:
        """A document as the page script saw it: its URL, and its origin when that is an http(s) one. An
        ``about:blank`` popup that a denied frame opened and filled inherits that frame's origin, and is denied."""
        self.check_url(url, what)
        if policy_host(origin) is not None and not self.allows(origin):
            raise denied(f"{what} (an {url[:40]} document made by {origin[:200]})", origin)

    def require(self, msg: bt.BrowserToolsRequest, tool: str) -> None:
        cap = CAPABILITY[type(msg)]
        if isinstance(msg, bt.HandleDialog) and msg.accept:
            cap = Capability.MUTATE
        if cap is Capability.MUTATE and not self.mutations:
            raise MutationsDisabled(f"{tool} changes the page, and ai-bridge runs its browser tools in safe mode "
                                    "(read-only)", hint=MUTATIONS_HINT)
        if cap is Capability.EVAL and not self.eval:
            raise EvalDisabled("eval is off: it runs arbitrary JavaScript in your logged-in pages", hint=EVAL_HINT)


def denied(what: str, url: str) -> PolicyDenied:
    host = policy_host(url)
    if host is None:
        return PolicyDenied(f"{what} is not an http(s) page the browser tools may touch: {url[:200]}",
                            hint="Only http(s) pages on allowed domains (and about:blank) can be used.")
    return PolicyDenied(f"{what} is on {host}, which is not an allowed domain ({url[:200]})",
                        hint=POLICY_HINT.format(host=host.removeprefix("www.")))
