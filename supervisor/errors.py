"""Typed errors shared by every actor and by the MCP front.

Each error says what happened *and* what the user can do about it; the MCP front turns them into tool errors
verbatim, so messages are written for the person reading the agent's transcript.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class ErrorInfo:
    """An error as structured tool results, job records and history carry it."""

    code: str
    message: str
    hint: str | None = None
    partial: str | None = None  # the answer received before the error (a deadline, a stuck page)
    url: str | None = None  # the conversation to look at (interrupted)

    def as_dict(self) -> dict[str, str | None]:
        out = {"code": self.code, "message": self.message, "hint": self.hint}
        if self.partial is not None:
            out["partial"] = self.partial
        if self.url is not None:
            out["url"] = self.url
        return out

    def text(self) -> str:
        return f"[{self.code}] {self.message}" + (f" {self.hint}" if self.hint else "")


class BridgeError(Exception):
    """Base of every error ai-bridge reports on purpose (as opposed to bugs)."""

    #: Short stable identifier, used in structured tool results and logs.
    code = "bridge_error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} {self.hint}" if self.hint else self.message

    def info(self) -> ErrorInfo:
        """The error as structured tool results and job records carry it."""
        return ErrorInfo(self.code, self.message, self.hint)

    def as_dict(self) -> dict[str, str | None]:
        return self.info().as_dict()


# --- runtime -------------------------------------------------------------------------------------------------


class ActorDown(BridgeError):
    """The target actor is stopped (not merely restarting) and will not take messages."""

    code = "actor_down"


class ActorCrashed(BridgeError):
    """The actor crashed while handling the request and the request will not be retried."""

    code = "actor_crashed"


class InternalError(BridgeError):
    """A request crashed its actor twice (a bug, or an input nothing validated): it was dropped, the actor lives."""

    code = "internal_error"


class RequestTimeout(BridgeError):
    """The per-request deadline passed before the actor replied."""

    code = "request_timeout"


class SupervisorEscalation(BridgeError):
    """A supervisor exceeded its restart intensity; it stopped its children and gives up."""

    code = "supervisor_escalation"


class ConfigError(BridgeError):
    """Bad configuration: names the key and the problem in one line."""

    code = "config_error"


class StateFileError(BridgeError):
    """A state file (sessions.json, history.jsonl) could not be read or written."""

    code = "state_file_error"


class StateDirRefused(StateFileError):
    """The state dir is not ours to use: another user owns it, or it is a symlink or a file."""

    code = "state_dir_refused"


class PairingCodeInvalid(BridgeError):
    """A pairing code that is not one `ai-bridge pair` prints."""

    code = "pairing_code_invalid"


# --- browser link -----------------------------------------------------------------------------------------------


class ExtensionNotConnected(BridgeError):
    code = "extension_not_connected"


class ExtensionDisconnected(BridgeError):
    """The relay WebSocket dropped while a command was pending."""

    code = "extension_disconnected"


class CommandTimeout(BridgeError):
    code = "command_timeout"


class BadExtensionReply(BridgeError):
    """The extension answered with something of the wrong shape."""

    code = "bad_extension_reply"


class PortsInUse(BridgeError):
    """Every discovery port is taken (or the pinned one is)."""

    code = "ports_in_use"


class CdpError(BridgeError):
    """The extension or Chrome rejected a command (carries the extension's error code)."""

    code = "cdp_error"

    def __init__(self, message: str, *, ext_code: str = "cdp_error", hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.ext_code = ext_code


class TabClosed(BridgeError):
    code = "tab_closed"


class BrowserNotFound(BridgeError):
    code = "browser_not_found"


class BrowserLaunchFailed(BridgeError):
    """The browser we launched could not start or died at once; the message carries its own stderr line."""

    code = "browser_launch_failed"


class BrowserCrashedAtLaunch(BrowserLaunchFailed):
    """The browser we launched was killed by a signal before its extension connected (a crash, not a refusal)."""


class ProfileInUse(BridgeError):
    """Another browser holds the dedicated profile and no ai-bridge extension connected from it."""

    code = "profile_in_use"


# --- providers --------------------------------------------------------------------------------------------------


class ProviderError(BridgeError):
    code = "provider_error"

    def __init__(self, message: str, *, hint: str | None = None, partial: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.partial = partial  # the answer text received so far, if any

    def info(self) -> ErrorInfo:
        return ErrorInfo(self.code, self.message, self.hint, self.partial)


class LoginRequired(ProviderError):
    code = "login_required"


class RateLimited(ProviderError):
    code = "rate_limited"


class StuckError(ProviderError):
    """The provider UI stopped making progress; the actor crashes with this so its supervisor restarts it."""

    code = "stuck"


class ResponseTimeout(ProviderError):
    code = "response_timeout"


class NoResponse(ProviderError):
    """The question was sent and the site never started answering before the deadline."""

    code = "no_response"


class SiteError(ProviderError):
    """The site showed an error notice ("Something went wrong", a network error with a Retry button)."""

    code = "site_error"


class SiteChallenge(ProviderError):
    """The site shows a bot check (Cloudflare's "Verify you are human") instead of the chat: a person must complete
    it in the browser; nothing was sent."""

    code = "site_challenge"


class InputRejected(ProviderError):
    code = "input_rejected"


class SiteUnreachable(ProviderError):
    """The provider's page did not load: the browser showed its own error page instead (no network, a name that
    does not resolve, a refused or reset connection, a certificate it refused). Carries the browser's error name
    (``net::ERR_INTERNET_DISCONNECTED``). Nothing was typed or sent."""

    code = "site_unreachable"


class AskCancelled(ProviderError):
    code = "cancelled"


class AskDeclined(ProviderError):
    """The user said no when asked (MCP elicitation) whether a costly ask may be sent (--confirm-costly)."""

    code = "declined"


class AnswerNotFound(ProviderError):
    """The site finished, but the new turn's own content never rendered: what the page showed around it was page
    chrome (the composer, a disclaimer), never returned as an answer."""

    code = "answer_not_found"


class AnswerIncomplete(ProviderError):
    """The page showed more answer than ai-bridge could read (the site changed how it lays answers out): never a
    partial answer as ok. The part that was read is attached."""

    code = "answer_incomplete"


class ResearchUnreadable(ProviderError):
    """A Deep Research report that runs in a frame of its own (ChatGPT) could not be read: the frame went away or its
    debugger session failed. The research may still be running on the site: its question is never sent again."""

    code = "research_unreadable"


class SendUnconfirmed(ProviderError):
    """A retry could not tell whether the earlier attempt's question reached the conversation, so it did not send
    it again (a second paid message is worse than an error)."""

    code = "send_unconfirmed"


class AttachmentRefused(ProviderError):
    """The site refused a file the ask attached (its type, its size, too many files): nothing was sent."""

    code = "attachment_refused"


class UploadIncomplete(ProviderError):
    """Not every file the ask attached showed as uploaded (its own chip, no progress left) in time: the question was
    not sent, neither with these files nor with fewer. The message names the files and what the page showed."""

    code = "upload_incomplete"


class UnknownModel(ProviderError):
    """The model, effort or tool asked for is not among what the site's picker and tools menu offer (the message
    lists them). Nothing was sent."""

    code = "unknown_model"


class ChoiceUnverified(ProviderError):
    """A model, effort or tool was chosen, but the page does not show it chosen when read back (the click was
    ignored, the site changed). Fail closed: nothing was sent. The message names what the page shows."""

    code = "choice_unverified"


class Interrupted(ProviderError):
    """A background job's ask was running when its server stopped, and the next server could not find its turn to
    wait for (the conversation did not load, or its last message is not this question). Carries the conversation's
    URL and the partial answer the job had recorded. Nothing was sent again."""

    code = "interrupted"

    def __init__(self, message: str, *, url: str | None, hint: str | None = None,
                 partial: str | None = None) -> None:
        super().__init__(message, hint=hint, partial=partial)
        self.url = url

    def info(self) -> ErrorInfo:
        return ErrorInfo(self.code, self.message, self.hint, self.partial, self.url)


class ConversationUnavailable(ProviderError):
    """The conversation an ask named (`conversation_url`) does not load on its site: deleted, or another account's.
    Nothing was sent."""

    code = "conversation_unavailable"


class InvalidArgument(BridgeError):
    code = "invalid_argument"


class FileRefused(BridgeError):
    """A file an ask names is not the project's to send (outside it, a link out of it, the state dir), is missing,
    or breaks a limit: nothing was sent."""

    code = "file_refused"


class JobNotFound(BridgeError):
    """A background job id that this server does not know (never started, or older than the retention)."""

    code = "job_not_found"


# --- general browser tools (actors/browser_tools) -----------------------------------------------------------------


class BrowserToolError(BridgeError):
    """Base of the general browser tools' errors (each subclass has its own code)."""


class NoTarget(BrowserToolError):
    """No tab to act on: none selected, an unknown tab id, or a tab that is not this server's to drive."""

    code = "no_target"


class TargetGone(BrowserToolError):
    """The tab closed (or the browser went away) while the tools held it."""

    code = "target_gone"


class PolicyDenied(BrowserToolError):
    """The tab's URL, or where a call would take it, is outside the allowed domains."""

    code = "policy_denied"


class MutationsDisabled(BrowserToolError):
    """An interaction or navigation tool in safe mode (the server runs without --enable-mutations)."""

    code = "mutations_disabled"


class EvalDisabled(BrowserToolError):
    """`eval` on a server started without --unsafe-enable-eval."""

    code = "eval_disabled"


class DevtoolsOpen(BrowserToolError):
    """Another debugger (DevTools, another extension) is attached to the tab, so ours cannot be."""

    code = "devtools_open"


class Detached(BrowserToolError):
    """Our debugger was detached from the tab during the call (the user cancelled it, or the tab crashed)."""

    code = "detached"


class NavigationFailed(BrowserToolError):
    """The browser could not load the page (DNS, connection, TLS, a bad URL, no history entry)."""

    code = "navigation_failed"


class ElementNotFound(BrowserToolError):
    """No element matches the selector, or the ref no longer resolves to one."""

    code = "element_not_found"


class ElementNotInteractable(BrowserToolError):
    """The element exists but cannot take the action: hidden, disabled, covered, or of the wrong kind."""

    code = "element_not_interactable"


class BrowserTimeout(BrowserToolError):
    """A wait of the browser tools ran out (a page load, wait_for, an element to become actionable)."""

    code = "timeout"


class DialogOpen(BrowserToolError):
    """A JavaScript dialog (alert, confirm, prompt, beforeunload) is open on the tab and blocks the page."""

    code = "dialog_open"


class DownloadFailed(BrowserToolError):
    """The downloaded file could not be saved into the download folder (the disk is full, the folder was removed or
    is not writable)."""

    code = "download_failed"


class DownloadUnavailable(BrowserToolError):
    """A download the page starts from script is caught only in a browser ai-bridge launched: the download commands
    are browser-level, and chrome.debugger refuses those in the user's own Chrome."""

    code = "download_unavailable"
