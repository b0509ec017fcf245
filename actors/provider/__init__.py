"""Provider tab actors: one generic actor (actor.py) run once per provider table (sites/: one module per site);
its rooms are the tab session (tab.py), the ask flow (flow.py) and inspection (inspect.py)."""

from .actor import run
from .tab import ProviderMemory

__all__ = ["ProviderMemory", "run"]
