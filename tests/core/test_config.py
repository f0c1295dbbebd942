"""Settings: defaults → relay.toml → RELAY_* environment → flags."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from relay.core.config import Config, default_home, load_config
from relay.core.errors import ConfigError


def write_toml(home: Path, text: str | bytes) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "relay.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_relay_home_override(relay_home: Path) -> None:
    config = load_config()
    assert config.home == relay_home
    assert config.db_path == relay_home / "relay.db"
    assert config.worktrees_dir == relay_home / "worktrees"
    assert config.logs_dir == relay_home / "logs"


def test_relay_home_from_an_explicit_env_mapping(tmp_path: Path) -> None:
    assert default_home({"RELAY_HOME": str(tmp_path / "x")}) == tmp_path / "x"
    assert load_config(env={"RELAY_HOME": str(tmp_path / "y")}).home == tmp_path / "y"


def test_relay_home_expands_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_home({"RELAY_HOME": "~/relay-data"}) == tmp_path / "relay-data"


def test_without_relay_home_platformdirs_decides() -> None:
    expected = Path(platformdirs.user_data_dir("relay", "relay"))
    assert default_home({}) == expected
    assert default_home({"RELAY_HOME": ""}) == expected  # empty means unset


def test_defaults_without_toml(relay_home: Path) -> None:
    config = load_config(env={"RELAY_HOME": str(relay_home)})
    assert config == Config(home=relay_home)
    assert config.inactivity_timeout == Config.model_fields["inactivity_timeout"].default


def test_toml_values(relay_home: Path) -> None:
    write_toml(relay_home, "inactivity_timeout = 42.5\nstop_grace = 2\n")
    config = load_config(env={"RELAY_HOME": str(relay_home)})
    assert config.inactivity_timeout == 42.5
    assert config.stop_grace == 2.0
    assert config.demo_step_delay == Config.model_fields["demo_step_delay"].default


def test_env_overrides_toml(relay_home: Path) -> None:
    write_toml(relay_home, "inactivity_timeout = 42.5\nstop_grace = 2\n")
    env = {"RELAY_HOME": str(relay_home), "RELAY_INACTIVITY_TIMEOUT": "7",
           "RELAY_DEMO_STEP_DELAY": "0.01"}
    config = load_config(env=env)
    assert config.inactivity_timeout == 7.0
    assert config.stop_grace == 2.0       # only in toml: kept
    assert config.demo_step_delay == 0.01  # only in env


def test_empty_env_value_does_not_override(relay_home: Path) -> None:
    write_toml(relay_home, "stop_grace = 3\n")
    config = load_config(env={"RELAY_HOME": str(relay_home), "RELAY_STOP_GRACE": ""})
    assert config.stop_grace == 3.0


def test_flag_overrides_env(relay_home: Path) -> None:
    write_toml(relay_home, "inactivity_timeout = 42.5\n")
    env = {"RELAY_HOME": str(relay_home), "RELAY_INACTIVITY_TIMEOUT": "7",
           "RELAY_STOP_GRACE": "9"}
    config = load_config(env=env, inactivity_timeout=1.5, stop_grace=None)
    assert config.inactivity_timeout == 1.5
    assert config.stop_grace == 9.0  # a None flag means "not given"


def test_home_flag_overrides_env_and_reads_that_homes_toml(tmp_path: Path,
                                                          relay_home: Path) -> None:
    write_toml(relay_home, "stop_grace = 3\n")
    other = tmp_path / "other-home"
    write_toml(other, "stop_grace = 4\n")
    config = load_config(env={"RELAY_HOME": str(relay_home)}, home=other)
    assert config.home == other
    assert config.stop_grace == 4.0


def test_process_environment_is_the_default(relay_home: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_STOP_GRACE", "11")
    assert load_config().stop_grace == 11.0


@pytest.mark.parametrize(("source", "setting"), [
    ("env", "inactivity_timeout"),
    ("toml", "stop_grace"),
    ("flag", "demo_step_delay"),
])
def test_bad_value_names_the_setting(relay_home: Path, source: str, setting: str) -> None:
    env = {"RELAY_HOME": str(relay_home)}
    flags: dict[str, object] = {}
    if source == "env":
        env[f"RELAY_{setting.upper()}"] = "soon"
    elif source == "toml":
        write_toml(relay_home, f'{setting} = "soon"\n')
    else:
        flags[setting] = "soon"
    with pytest.raises(ConfigError) as info:
        load_config(env=env, **flags)
    assert repr(setting) in info.value.message
    assert info.value.hint is not None
    assert str(relay_home / "relay.toml") in info.value.hint


def test_unknown_toml_key_is_named(relay_home: Path) -> None:
    write_toml(relay_home, "inactivity_timout = 5\n")  # typo
    with pytest.raises(ConfigError, match="inactivity_timout"):
        load_config(env={"RELAY_HOME": str(relay_home)})


@pytest.mark.parametrize("content", [
    "inactivity_timeout = \n",
    "[unclosed\n",
    "stop_grace = 1\nstop_grace = 2\n",
], ids=["missing-value", "bad-table", "duplicate-key"])
def test_unparseable_toml_is_a_config_error(relay_home: Path, content: str) -> None:
    path = write_toml(relay_home, content)
    with pytest.raises(ConfigError) as info:
        load_config(env={"RELAY_HOME": str(relay_home)})
    assert str(path) in info.value.message
    assert info.value.hint is not None


def test_toml_that_is_a_directory_is_a_config_error(relay_home: Path) -> None:
    (relay_home / "relay.toml").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"relay\.toml"):
        load_config(env={"RELAY_HOME": str(relay_home)})


def test_toml_that_is_not_utf8_is_a_config_error(relay_home: Path) -> None:
    write_toml(relay_home, b"stop_grace = 1\n# caf\xe9\n")  # Latin-1, not UTF-8
    with pytest.raises(ConfigError, match=r"relay\.toml"):
        load_config(env={"RELAY_HOME": str(relay_home)})


def test_config_is_frozen(relay_home: Path) -> None:
    config = load_config()
    with pytest.raises(ValueError, match="frozen"):
        config.stop_grace = 1.0  # type: ignore[misc]
