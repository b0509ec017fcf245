"""ai-bridge's runtime: OTP-style supervision of trio actors, process entry, config and CLI."""

__version__ = "0.5.0"
