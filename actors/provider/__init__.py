"""Provider tab actors: one generic actor (actor.py) run once per provider table (chatgpt.py, gemini.py)."""

from .actor import run

__all__ = ["run"]
