"""Asking the user mid-call (issue 39, item 6): --confirm-costly asks before a Pro / Deep Think / Deep Research ask,
and login_required offers the site's login page; both through MCP elicitation where the client declares it, and as
before where it does not.

Units with a fake call for the login retry and the consent rule; real servers with the SDK's client (one declaring
elicitation with a callback, one not) for the consent on the wire. The asks run as background jobs, which answer at
once: no browser is needed to see whether the ask was sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from actors.mcp_front.tools.consent import confirm_costly, costly, login_url, with_login
from actors.protocol.common import ProviderName
from actors.protocol.provider import Choice
from supervisor.errors import AskDeclined, LoginRequired, RateLimited

from .mcp_clients import open_client, server_env


class FakeCall:
    """A ToolCall whose user answers `answer` (None: a client that cannot be asked)."""

    def __init__(self, answer: bool | None) -> None:
        self.answer = answer
        self.asked: list[tuple[str, str | None]] = []

    async def elicit(self, message: str, *, url: str | None = None) -> bool | None:
        self.asked.append((message, url))
        return self.answer


PRO = ((ProviderName.CHATGPT, Choice("", "pro", ())),)


def test_which_choices_are_costly() -> None:
    assert costly(PRO) == ["ChatGPT: pro"]
    assert costly([(ProviderName.GEMINI, Choice("", "", ("deep research",)))]) == ["Gemini: deep research"]
    assert costly([(ProviderName.GEMINI, Choice("3.1 Pro", "", ()))]) == ["Gemini: 3.1 Pro"]
    assert costly([(ProviderName.CHATGPT, Choice("GPT-5.5", "medium", ("web search",)))]) == []
    assert costly([(ProviderName.CHATGPT, Choice())]) == []


@pytest.mark.parametrize(("answer", "sent"), [(True, True), (False, False), (None, True)])
async def test_a_costly_ask_is_sent_unless_the_user_declines(answer: bool | None, sent: bool) -> None:
    call = FakeCall(answer)
    if sent:
        await confirm_costly(call, PRO)  # type: ignore[arg-type]
    else:
        with pytest.raises(AskDeclined, match="nothing was sent") as info:
            await confirm_costly(call, PRO)  # type: ignore[arg-type]
        assert info.value.code == "declined" and info.value.hint
    (message, url), = call.asked
    assert "ChatGPT: pro" in message and url is None
    cheap = FakeCall(False)
    await confirm_costly(cheap, [(ProviderName.CHATGPT, Choice("GPT-5.5"))])  # type: ignore[arg-type]
    assert cheap.asked == []  # nothing to confirm: the user is not asked


@pytest.mark.parametrize("answer", [True, False, None])
async def test_login_required_offers_the_login_page_and_asks_once_more(answer: bool | None) -> None:
    call = FakeCall(answer)
    attempts: list[bool] = []

    async def attempt(after_login: bool) -> str:
        attempts.append(after_login)
        if not after_login:
            raise LoginRequired("ChatGPT shows its login page", hint="Log in.")
        return "the answer"

    if answer:
        assert await with_login(call, ProviderName.CHATGPT, attempt) == "the answer"  # type: ignore[arg-type]
        assert attempts == [False, True]
    else:
        with pytest.raises(LoginRequired):  # a decline, or a client that cannot be asked: the error as before
            await with_login(call, ProviderName.CHATGPT, attempt)  # type: ignore[arg-type]
        assert attempts == [False]
    (message, url), = call.asked
    assert url == login_url(ProviderName.CHATGPT) == "https://chatgpt.com/" and url in message


async def test_other_errors_and_a_second_login_required_are_not_asked_again() -> None:
    call = FakeCall(True)

    async def limited(after_login: bool) -> str:
        raise RateLimited("limit reached")

    with pytest.raises(RateLimited):
        await with_login(call, ProviderName.GEMINI, limited)  # type: ignore[arg-type]
    assert call.asked == []

    async def always_login(after_login: bool) -> str:
        raise LoginRequired("still the login page")

    with pytest.raises(LoginRequired):
        await with_login(call, ProviderName.GEMINI, always_login)  # type: ignore[arg-type]
    assert [u for _, u in call.asked] == ["https://gemini.google.com/"]  # asked once, not in a loop


COSTLY = {"question": "Prove it.", "effort": "pro", "background": True}
CHEAP = {"question": "Prove it.", "background": True}


@pytest.mark.process
async def test_confirm_costly_over_the_wire_with_and_without_elicitation(tmp_path: Path) -> None:
    answers: list[str] = ["decline", "accept"]
    asked: list[Any] = []

    async def on_elicit(ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action=answers.pop(0))

    args = ["serve", "--browser", "connect", "--confirm-costly"]
    with open(tmp_path / "serve.log", "w") as errlog:
        async with open_client(args, server_env(tmp_path / "a"), mode="legacy", errlog=errlog,
                               elicitation_callback=on_elicit) as client:
            declined = await client.call_tool("ask_chatgpt_web", COSTLY)
            assert declined.is_error and declined.structured_content["error"]["code"] == "declined"
            assert asked[0].mode == "form" and "ChatGPT: pro" in asked[0].message
            accepted = await client.call_tool("ask_chatgpt_web", COSTLY)
            assert not accepted.is_error and accepted.structured_content["jobId"]
            cheap = await client.call_tool("ask_chatgpt_web", CHEAP)
            assert not cheap.is_error and len(asked) == 2  # a cheap ask asks nobody
        # A client without elicitation: the costly ask goes as it did before the option.
        async with open_client(args, server_env(tmp_path / "b"), mode="legacy", errlog=errlog) as plain:
            started = await plain.call_tool("ask_chatgpt_web", COSTLY)
            assert not started.is_error and started.structured_content["jobId"]
