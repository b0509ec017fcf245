"""Asking the user mid-call (MCP elicitation), where the client can (docs/install.md#asking-you-mid-call):

- ``--confirm-costly``: an ask that uses a Pro model or effort, Deep Think or Deep Research spends a scarce quota,
  so the user is asked first; a decline is the typed error ``declined`` and nothing is sent.
- ``login_required`` (and ``site_challenge``, a bot check in its place): the user is offered the site's page (URL
  mode); once they say done, the ask runs once more. A decline, or a second failure, is the typed error as before.

A client that cannot be asked (no elicitation capability, or a 2026-07-28 session, which has no server-to-client
requests) gets what it got before: the costly ask is sent, the login error returned."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from supervisor.constants import SHARED
from supervisor.errors import AskDeclined, BridgeError

from ...protocol.common import ProviderName
from ...protocol.provider import LONG_MODES, Choice
from ..deps import ToolCall

T = TypeVar("T")


def costly(choices: Iterable[tuple[ProviderName, Choice]]) -> list[str]:
    """The parts of an ask's choices that spend a scarce quota, as "ChatGPT: pro"."""
    return [f"{p.display}: {c.words().strip()}" for p, c in choices if LONG_MODES.search(c.words())]


async def confirm_costly(call: ToolCall, choices: Iterable[tuple[ProviderName, Choice]]) -> None:
    """Ask the user before a costly ask (called only with --confirm-costly); raise `AskDeclined` on a no."""
    parts = costly(choices)
    if not parts:
        return
    answer = await call.elicit(f"ai-bridge is about to send an ask that uses {'; '.join(parts)}. Such asks count "
                               "against a small quota of your plan. Send it?")
    if answer is False:
        raise AskDeclined(f"you declined the ask ({'; '.join(parts)}); nothing was sent",
                          hint="Ask again without the Pro model, Deep Think or Deep Research, or accept when asked.")


def login_url(provider: ProviderName) -> str:
    site = next(s for s in SHARED.providers if s.name == provider.value)
    return site.origins[0] + "/"


async def with_login(call: ToolCall, provider: ProviderName, attempt: Callable[[bool], Awaitable[T]]) -> T:
    """Run ``attempt(False)``; on `login_required` or `site_challenge`, offer the site's page and, once the user says
    done, run ``attempt(True)`` (a new ask: the first sent nothing)."""
    try:
        return await attempt(False)
    except BridgeError as exc:
        if exc.code not in ("login_required", "site_challenge"):
            raise
        url = login_url(provider)
        what = "log in" if exc.code == "login_required" else "complete its check that you are human"
        done = await call.elicit(f"{provider.display} needs you to {what}, in the browser ai-bridge uses. Open "
                                 f"{url}, {what} there, then choose to continue.", url=url)
        if not done:
            raise
    return await attempt(True)
