"""Writing settings back to relay.toml: validated first, the user's comments and keys kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.core.config import load_config, read_settings, write_settings
from relay.core.errors import ConfigError

USER_FILE = """\
# my Relay settings — tuned for the slow laptop
inactivity_timeout = 1200.0  # the agents think slowly here

# wallet
wallet_watermark = 0.9
"""


def test_a_change_keeps_the_users_comments_and_other_keys(tmp_path: Path) -> None:
    (tmp_path / "relay.toml").write_text(USER_FILE)
    config = write_settings(tmp_path, {"wallet_watermark": "0.8", "pause_timeout": 45})
    text = (tmp_path / "relay.toml").read_text()
    assert "# my Relay settings — tuned for the slow laptop" in text
    assert "inactivity_timeout = 1200.0  # the agents think slowly here" in text
    assert "# wallet" in text
    assert "wallet_watermark = 0.8\n" in text  # written as the model reads it, not "0.8"
    assert "pause_timeout = 45.0" in text
    assert config.wallet_watermark == 0.8
    loaded = load_config(env={}, home=tmp_path)
    assert (loaded.inactivity_timeout, loaded.wallet_watermark, loaded.pause_timeout) \
        == (1200.0, 0.8, 45.0)


def test_an_invalid_value_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "relay.toml").write_text(USER_FILE)
    with pytest.raises(ConfigError) as caught:
        write_settings(tmp_path, {"pause_timeout": 30, "wallet_watermark": 1.5})
    assert "wallet_watermark" in caught.value.message
    assert "Nothing was saved" in (caught.value.hint or "")
    assert (tmp_path / "relay.toml").read_text() == USER_FILE
    with pytest.raises(ConfigError, match="gui_theme"):
        write_settings(tmp_path, {"gui_theme": "purple"})
    with pytest.raises(ConfigError, match="no_such_setting"):
        write_settings(tmp_path, {"no_such_setting": 1})
    assert (tmp_path / "relay.toml").read_text() == USER_FILE


def test_none_removes_a_key_and_a_new_file_is_made(tmp_path: Path) -> None:
    home = tmp_path / "fresh"
    write_settings(home, {"gui_theme": "dark", "max_retries": "5"})
    assert read_settings(home) == {"gui_theme": "dark", "max_retries": 5}
    write_settings(home, {"gui_theme": None})
    assert read_settings(home) == {"max_retries": 5}
    assert load_config(env={}, home=home).gui_theme == "system"


def test_an_unreadable_file_is_named_and_left_alone(tmp_path: Path) -> None:
    (tmp_path / "relay.toml").write_text("this is = = not toml\n")
    with pytest.raises(ConfigError, match="Cannot read"):
        write_settings(tmp_path, {"max_retries": 2})
    assert (tmp_path / "relay.toml").read_text() == "this is = = not toml\n"
