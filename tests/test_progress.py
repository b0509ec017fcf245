"""Progress a person can read (issue 33): each change once, and a heartbeat with the elapsed time every 20 s while
nothing changes — in `supervisor.progress.pace`, on the CLI (`ai-bridge ask`) and in MCP progress notifications.
trio's MockClock: a 50 s think takes no time."""

from __future__ import annotations

from collections.abc import Callable

import trio
import trio.testing

from actors.mcp_front.tools.asks import _ProgressPump
from actors.protocol.common import ProviderName
from actors.protocol.provider import AskPhase, AskProgress
from supervisor.app.ask import narrate
from supervisor.progress import pace

CHATGPT, GEMINI = ProviderName.CHATGPT, ProviderName.GEMINI


def item(provider: ProviderName, phase: AskPhase, chars: int = 0, text: str = "") -> AskProgress:
    return AskProgress(provider, phase, chars, text)


async def feed(send: trio.MemorySendChannel[AskProgress], script: list[tuple[float, AskProgress]]) -> None:
    """Send each item at its time (seconds from now), then close."""
    t0 = trio.current_time()
    async with send:
        for at, it in script:
            await trio.sleep_until(t0 + at)
            await send.send(it)


def a_long_think() -> list[tuple[float, AskProgress]]:
    """What a provider reports for a 50 s think: "thinking" about once a second (the page's timer ticks), then the
    answer streaming."""
    script = [(0.0, item(CHATGPT, AskPhase.TYPING)), (1.0, item(CHATGPT, AskPhase.SENT))]
    script += [(2.0 + s, item(CHATGPT, AskPhase.THINKING)) for s in range(50)]
    script += [(53.0 + s / 2, item(CHATGPT, AskPhase.ANSWERING, 100 * (s + 1), "x" * 100 * (s + 1)))
               for s in range(6)]
    return script


async def run(script: list[tuple[float, AskProgress]],
              consume: Callable[[trio.MemoryReceiveChannel[AskProgress]], object]) -> None:
    send, recv = trio.open_memory_channel[AskProgress](256)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(feed, send, script)
        await consume(recv)  # type: ignore[misc]


async def test_each_change_once_and_a_heartbeat_while_nothing_changes(autojump_clock: trio.testing.MockClock) -> None:
    said: list[tuple[float, str]] = []
    t0 = trio.current_time()

    async def say(line: str) -> bool:
        said.append((round(trio.current_time() - t0, 1), line))
        return True

    await run(a_long_think(), lambda recv: pace(recv, say, group=lambda i: i.provider, key=lambda i: i.phase,
                                                line=lambda i: f"{i.provider.value} {i.phase.value} {i.chars}"))
    assert said == [
        (0.0, "chatgpt typing 0"), (1.0, "chatgpt sent 0"), (2.0, "chatgpt thinking 0"),
        (22.0, "chatgpt thinking 0 — still going, 22s"), (42.0, "chatgpt thinking 0 — still going, 42s"),
        (53.0, "chatgpt answering 100"),
    ]


async def test_a_provider_that_shows_nothing_new_gets_its_heartbeat_while_the_other_streams(
        autojump_clock: trio.testing.MockClock) -> None:
    script = [(0.0, item(CHATGPT, AskPhase.THINKING))]
    script += [(s * 0.5, item(GEMINI, AskPhase.ANSWERING, s, "y" * s)) for s in range(1, 61)]  # 30 s of text
    said: list[tuple[float, str]] = []
    t0 = trio.current_time()

    async def say(line: str) -> bool:
        said.append((round(trio.current_time() - t0, 1), line))
        return True

    await run(script, lambda recv: pace(recv, say, group=lambda i: i.provider, key=lambda i: (i.phase, i.chars),
                                        line=lambda i: f"{i.provider.value} {i.phase.value}"))
    chatgpt = [s for s in said if s[1].startswith("chatgpt")]
    assert chatgpt == [(0.0, "chatgpt thinking"), (20.0, "chatgpt thinking — still going, 20s")]
    assert len([s for s in said if s[1].startswith("gemini")]) == 60  # every change of the other, as it came


async def test_the_cli_prints_each_phase_once_then_the_elapsed_time(autojump_clock: trio.testing.MockClock,
                                                                   capsys: object) -> None:
    await run(a_long_think(), narrate)
    err = capsys.readouterr().err.splitlines()  # type: ignore[attr-defined]
    assert err == ["[chatgpt] typing", "[chatgpt] sent", "[chatgpt] thinking",
                   "[chatgpt] thinking — still going, 22s", "[chatgpt] thinking — still going, 42s",
                   "[chatgpt] answering (100 chars)"]


class FakeCall:
    """The MCP tool call's progress sender: records each notification with its time."""

    def __init__(self) -> None:
        self.t0 = trio.current_time()
        self.sent: list[tuple[float, str]] = []

    async def progress(self, message: str) -> bool:
        self.sent.append((round(trio.current_time() - self.t0, 1), message))
        return True


async def test_mcp_progress_says_a_long_think_once_and_then_that_it_is_still_going(
        autojump_clock: trio.testing.MockClock) -> None:
    """The 20 s heartbeat of install.md ("… still going, 12m 30s") never came: each repeated "thinking" report
    restarted its timer, and each one went out as a notification of its own."""
    call = FakeCall()
    pump = _ProgressPump(call)  # type: ignore[arg-type]

    async def consume(recv: trio.MemoryReceiveChannel[AskProgress]) -> None:
        pump.recv = recv
        await pump.run()

    await run(a_long_think(), consume)
    assert [s for s in call.sent if "answering" not in s[1]] == [
        (0.0, "ChatGPT: typing"), (1.0, "ChatGPT: sent"), (2.0, "ChatGPT: thinking"),
        (22.0, "ChatGPT: thinking — still going, 22s"), (42.0, "ChatGPT: thinking — still going, 42s"),
    ]
    # The streaming answer still goes out as it grows: each new partial text is a change.
    assert len([s for s in call.sent if "answering" in s[1]]) == 6


async def test_mcp_progress_says_it_is_working_before_any_report(autojump_clock: trio.testing.MockClock) -> None:
    call = FakeCall()
    pump = _ProgressPump(call)  # type: ignore[arg-type]

    async def consume(recv: trio.MemoryReceiveChannel[AskProgress]) -> None:
        pump.recv = recv
        await pump.run()

    await run([(45.0, item(GEMINI, AskPhase.CONNECTING))], consume)
    assert call.sent == [(20.0, "working — still going, 20s"), (40.0, "working — still going, 40s"),
                         (45.0, "Gemini: connecting")]
