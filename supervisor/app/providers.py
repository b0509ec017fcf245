"""The provider tables the actors run with: the shipped ones (actors/provider/sites/) with the user's
`providers.toml` prepended (actors/provider/overrides.py). Read and validated at start-up; a bad file stops the
start with one line per problem."""

from __future__ import annotations

import os
import re
from pathlib import Path

from actors.provider import overrides
from actors.provider.sites import TABLES
from actors.provider.table import ProviderTable

from ..config import Config, read_config_file
from ..errors import ConfigError

SHIPPED: tuple[ProviderTable, ...] = TABLES


def default_providers_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ai-bridge" / "providers.toml"


def provider_tables(config: Config) -> tuple[ProviderTable, ...]:
    """The tables with the override file applied (none: the shipped tables themselves). Raises `ConfigError` whose
    message has one line per problem."""
    path = config.providers_file
    if path is None:
        path = default_providers_file()
        if not path.exists():
            return SHIPPED
    try:
        text = read_config_file(path, "providers file")  # a regular file under 1 MiB (not a FIFO, not /dev/zero)
    except FileNotFoundError:
        raise ConfigError(f"providers file {path} does not exist") from None
    try:
        patch = overrides.parse(text, {t.name: t for t in SHIPPED}, source=str(path))
    except overrides.OverrideErrors as exc:
        raise ConfigError("\n".join(exc.lines)) from None
    return tuple(overrides.apply(t, patch) for t in SHIPPED)


def chat_bases(config: Config, tables: tuple[ProviderTable, ...]) -> dict[str, str]:
    """`--chat-base-url` (issue 38) per site: each URL must be where one site starts new chats of a Project or Gem,
    and a site gets at most one. Raises `ConfigError`."""
    out: dict[str, str] = {}
    for url in config.chat_base_urls:
        sites = [t for t in tables if t.chat_base_re and re.match(t.chat_base_re, url)]
        if not sites:
            raise ConfigError(f"chat_base_url {url!r} is not a ChatGPT Project (https://chatgpt.com/g/g-p-…/project) "
                              "or Gemini Gem (https://gemini.google.com/gem/…) page")
        site = sites[0]
        if site.name in out:
            raise ConfigError(f"chat_base_url: two URLs for {site.title} ({out[site.name]!r}, {url!r}); give one")
        out[site.name] = url
    return out
