"""The relay's pinned port (--relay-port, docs/remote.md): the one number an SSH forward needs besides discovery's."""

from __future__ import annotations

from pathlib import Path

import pytest

from supervisor import config as cfg
from supervisor.errors import ConfigError


def test_a_relay_port_is_pinned_from_the_flag_the_environment_or_the_file(tmp_path: Path) -> None:
    none = tmp_path / "none.toml"
    assert cfg.load({}, env={}, config_file=none).relay_port is None  # any free port
    assert cfg.load({"relay_port": 8790}, env={}, config_file=none).relay_port == 8790
    assert cfg.load({}, env={"AI_BRIDGE_RELAY_PORT": "8791"}, config_file=none).relay_port == 8791
    (tmp_path / "c.toml").write_text("relay_port = 8792\n")
    assert cfg.load({}, env={}, config_file=tmp_path / "c.toml").relay_port == 8792


@pytest.mark.parametrize(("value", "why"), [
    ("80", "from 1024 to 65535"), ("70000", "from 1024 to 65535"), ("x", "from 1024 to 65535"),
    (True, "from 1024 to 65535"), ("8770", "one of the discovery ports"),
])
def test_a_bad_relay_port_is_one_line_naming_the_option(tmp_path: Path, value: object, why: str) -> None:
    with pytest.raises(ConfigError, match=f"option --relay-port: .*{why}"):
        cfg.load({"relay_port": value}, env={}, config_file=tmp_path / "none.toml")
