"""The spec's reference ChatGPT algorithm (seed 000 section 3.1 / 3.3 / 9.1 / 13), emulated over our own relay, so
the benchmark can put it side by side with ai-bridge on the same browser, extension, relay and fake site.

Faithful to the documented waits: readyState and input polling, the fixed 500 ms SPA stabilization,
stable-count check, the fixed 200 ms post-input wait, send-button search every 500 ms, completion polling every
1 s (conditions of section 3.3), bringToFront plus its 500 ms render wait, and text polling every 200 ms.
Everything runs in the page's main world with `Runtime.evaluate`, as the reference does. Benchmark use only.
"""

from __future__ import annotations

import json
import time
from typing import Any

import trio

from actors.protocol.relay import ExtCommand

STATE_JS = r"""(() => {
  const q = (s) => document.querySelector(s);
  const input = q('#prompt-textarea') || q('.ProseMirror[contenteditable="true"]');
  const send = q('button[data-testid="send-button"]');
  const stop = Array.from(document.querySelectorAll('button')).some(b =>
    ((b.getAttribute('aria-label') || '') + (b.textContent || '')).includes('Stop generating'));
  const text = input ? (input.value || input.innerText || '') : '';
  return JSON.stringify({
    ready: document.readyState, input: !!input, inputEmpty: text.trim().length === 0,
    send: !!send, sendEnabled: !!send && !send.disabled, stop,
    user: document.querySelectorAll('[data-message-author-role="user"]').length,
    assistant: document.querySelectorAll('[data-message-author-role="assistant"]').length,
  });
})()"""

EXTRACT_JS = r"""(() => {
  const arts = document.querySelectorAll('article[data-turn="assistant"]');
  const md = arts.length ? arts[arts.length - 1].querySelector('.markdown') : null;
  return md ? md.innerText : '';
})()"""


class ReferenceChatGPT:
    def __init__(self, relay: Any, tab_id: int) -> None:
        self.relay = relay
        self.tab = tab_id

    async def cdp(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return await self.relay.call(ExtCommand("cdp.send", {"tabId": self.tab, "method": method,
                                                             "params": params or {}}), timeout=30)

    async def eval(self, expr: str) -> Any:
        got = await self.cdp("Runtime.evaluate", {"expression": expr, "returnByValue": True})
        return got.get("result", {}).get("value")

    async def state(self) -> dict[str, Any]:
        return json.loads(await self.eval(STATE_JS))  # type: ignore[no-any-return]

    async def poll(self, pred: Any, interval: float, timeout: float) -> dict[str, Any]:
        with trio.fail_after(timeout):
            while True:
                st = await self.state()
                if pred(st):
                    return st
                await trio.sleep(interval)

    async def ask(self, question: str) -> float:
        """Returns the wall-clock ms at which completion was detected."""
        await self.eval("1")  # health check
        await self.poll(lambda s: s["ready"] == "complete", 0.2, 30)
        await trio.sleep(0.5)  # SPA rendering stabilization (fixed)
        await self.poll(lambda s: s["input"], 0.2, 30)
        prev = None
        while True:  # waitForStableCount: same value twice
            st = await self.state()
            count = st["user"] + st["assistant"]
            if count == prev:
                break
            prev = count
            await trio.sleep(0.2)
        initial_user, initial_assistant = st["user"], st["assistant"]
        await self.eval("(() => { const el = document.querySelector('#prompt-textarea'); el.focus();"
                        f" document.execCommand('insertText', false, {json.dumps(question)}); }})()")
        await trio.sleep(0.2)  # post-input wait (fixed)
        await self.poll(lambda s: s["send"] and s["sendEnabled"], 0.5, 60)
        await self.eval("document.querySelector('button[data-testid=\"send-button\"]').click()")
        await self.poll(lambda s: s["user"] > initial_user, 0.2, 15)
        await self.poll(lambda s: s["assistant"] > initial_assistant, 0.5, 30)
        saw_stop = False
        start = time.monotonic()
        while True:  # completion polling, 1 s (section 3.3)
            st = await self.state()
            saw_stop = saw_stop or st["stop"]
            new = st["assistant"] > initial_assistant
            elapsed = time.monotonic() - start
            if new and not st["stop"] and (
                (st["send"] and st["sendEnabled"]) or (saw_stop and st["inputEmpty"])
                or (elapsed >= 5 and st["inputEmpty"])
            ):
                break
            await trio.sleep(1.0)
        detected = time.time() * 1000
        await self.cdp("Page.bringToFront")
        await trio.sleep(0.5)  # React render wait after bringToFront (problem 4)
        with trio.fail_after(120):
            while not (await self.eval(EXTRACT_JS)):
                await trio.sleep(0.2)
        return detected
