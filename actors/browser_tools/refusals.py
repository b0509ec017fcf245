"""The browser tools' typed errors for what the extension refuses (its error codes) and for a JavaScript dialog
that blocks a tab: each with the hint that says what to do next."""

from __future__ import annotations

from supervisor.errors import (
    BadExtensionReply,
    BridgeError,
    CdpError,
    Detached,
    DevtoolsOpen,
    DialogOpen,
    NoTarget,
    PolicyDenied,
    TargetGone,
)

from .policy import denied, policy_host
from .tab import ToolTab

BUSY_HINT = "tabs_list shows the tabs this server's browser tools may use."
DIALOG_HINT = "Call handle_dialog with accept: true (OK) or false (Cancel) to answer it."

OLD_EXTENSION = ("Reload the ai-bridge extension in chrome://extensions (the reload icon on its card): it is older "
                 "than this server and does not know the browser tools' commands.")


def extension_error(tab_id: int, exc: CdpError) -> BridgeError:
    """An extension refusal (its error code) as the browser tools' typed error."""
    code = exc.ext_code
    # A current extension never answers a general-tool command with these: only one from before the tools does.
    if code in ("unknown_method", "site_not_allowed") or (code == "bad_params" and "urlPatterns" in exc.message):
        return BadExtensionReply(f"the extension refused a browser-tool command ({exc.message})", hint=OLD_EXTENSION)
    if code == "policy_denied":
        # The extension's own check ("... is outside the allowed domains: <url>"): name the host as ours does.
        url = exc.message.rsplit(": ", 1)[-1]
        err = denied(f"tab {tab_id} (checked by the extension)", url)
        return err if policy_host(url) else PolicyDenied(f"the extension refused: {exc.message}", hint=err.hint)
    if code == "tab_busy":
        return NoTarget(f"tab {tab_id} is not this server's browser tools' to drive ({exc.message})", hint=BUSY_HINT)
    if code == "no_such_tab":
        return TargetGone(f"tab {tab_id} no longer exists", hint=BUSY_HINT)
    if code == "not_attached":
        return Detached(f"the debugger is not attached to tab {tab_id}", hint="Retry: the next call attaches.")
    if code == "devtools_open":
        return DevtoolsOpen(f"another debugger holds tab {tab_id}: {exc.message}",
                            hint="Close DevTools on that tab (or the other debugging extension), then retry.")
    return exc


def dialog_open(tab: ToolTab, interrupted: bool) -> DialogOpen:
    d = tab.dialog
    assert d is not None
    article = "an" if d.type.value[0] in "aeiou" else "a"
    how = "opened during the call, which stopped there" if interrupted else "is open"
    return DialogOpen(f"{article} {d.type.value} dialog {how} on tab {tab.tab_id}: it blocks the page until it is "
                      f"answered (its message, page content: {d.message[:300]!r})", hint=DIALOG_HINT)
