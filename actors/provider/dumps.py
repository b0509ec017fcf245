"""Seed 9.4's debug dumps: a failing or unusual ask's page state, kept in <state-dir>/debug/ for later diagnosis (the
newest `keep` of them, both providers together)."""

from __future__ import annotations

import contextlib
import json
import logging
import time
from pathlib import Path

import attrs
import trio

from supervisor.errors import BridgeError

from .tab import TabSession


@attrs.frozen
class Dumps:
    folder: Path | None  # None: dumps are off (no state dir, or debug_dumps_keep = 0)
    keep: int
    private_text: bool  # keep the sizes of the question, answer and page text, not the text
    script_s: float
    log: logging.Logger

    async def write(self, page: TabSession, provider: str, why: str, question: str, answer: str = "") -> str:
        """The page's state and facts as JSON; returns where it went (or why it went nowhere)."""
        if self.folder is None:
            return "(debug dumps are off: no state dir, or debug_dumps_keep = 0)"
        now = time.time()
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now)) + f"{now % 1:.3f}"[1:]
        path = self.folder / f"{provider}-{stamp}-{why}.json"
        state = page.state.as_json() if page.state else None
        record: dict[str, object] = {"why": why, "provider": provider, "at": stamp, "question": question,
                                     "answer": answer, "state": state}
        try:
            # Seed 9.5's debug fields: enough to tell a login page, an error banner or a changed layout apart.
            with trio.move_on_after(self.script_s):
                facts = await page.facts(2000)
                record.update({"pageUrl": facts.get("url"), "pageTitle": facts.get("title"),
                               "bodyLen": facts.get("textLength"), "bodySnippet": facts.get("text"),
                               "loaded": facts.get("loaded")})
        except BridgeError as exc:
            record["dumpError"] = str(exc)
        if self.private_text:
            for key in ("question", "answer", "bodySnippet"):
                value = record.get(key)
                if isinstance(value, str):
                    record[key] = f"[{len(value)} characters, not kept]"
            if state is not None:
                state.update(lastHead="[not kept]", lastUser="[not kept]")
        keep = self.keep

        def write() -> None:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.write_text(json.dumps(record, indent=2, ensure_ascii=False), encoding="utf-8")
            prune_dumps(path.parent, keep)

        await trio.to_thread.run_sync(write)
        self.log.warning("debug dump (%s) written to %s", why, path)
        return str(path)


def prune_dumps(folder: Path, keep: int) -> None:
    """Keep the newest `keep` dumps: anomalies repeat (a changed layout fails every ask) and must not fill the
    disk."""
    dumps = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for old in dumps[keep:]:
        with contextlib.suppress(FileNotFoundError):
            old.unlink()
