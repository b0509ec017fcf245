"""The sites ai-bridge asks: one module per site, each holding that site's one `ProviderTable` (`TABLE`): its
selectors, labels, completion rule, timeouts, typing and extraction rules, and the behaviour of its own that the
generic actor, flow and page scripts read from it (table.py says what each field means).

Adding a site adds a module here (and its imitation under tests/fakesites/, and its tests): the actor, the flow and
the watcher never name a site.
"""

from __future__ import annotations

from ..table import ProviderTable
from . import chatgpt, claude, gemini, grok, perplexity

# In the order the sites are listed everywhere (ProviderName's order).
TABLES: tuple[ProviderTable, ...] = (chatgpt.TABLE, gemini.TABLE, claude.TABLE, grok.TABLE, perplexity.TABLE)
BY_NAME: dict[str, ProviderTable] = {t.name: t for t in TABLES}
