"""The relay room: `wire` is the I/O-free protocol core, `actor` the thin actor that moves frames."""

from .actor import run

__all__ = ["run"]
