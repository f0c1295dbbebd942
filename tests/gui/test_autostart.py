""""Start Relay at login": the freedesktop entry for real (a temporary XDG_CONFIG_HOME), the
macOS LaunchAgent and the Windows Run key by what they write, and the File menu's switch."""

from __future__ import annotations

import configparser
import os
import plistlib
import re
import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMenu

from relay.core.errors import ConfigError
from relay.engine.engine import Engine
from relay.gui.autostart import (
    AGENT_LABEL,
    APP_ID,
    Autostart,
    exec_line,
    launch_argv,
    run_value,
)
from relay.gui.shell import RelayShell

ARGV = ["/opt/My Apps/relay", "--hidden", "100%", 'say "$HOME"']


def _entry(path: Path) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(path.read_text(encoding="utf-8"))
    return parser["Desktop Entry"]


def test_the_install_starts_to_the_tray() -> None:
    assert launch_argv(frozen=False, executable="/v/bin/python") == [
        "/v/bin/python", "-m", "relay", "--hidden"]
    assert launch_argv(frozen=True, executable="/Apps/Relay") == ["/Apps/Relay", "--hidden"]
    assert launch_argv() == [sys.executable, "-m", "relay", "--hidden"]


def exec_argv(value: str) -> list[str]:
    """What a launcher runs for an Exec value (the desktop entry spec, read independently):
    the string escapes first, then the quoting, then ``%%``."""
    text = re.sub(r"\\(.)", lambda m: {"s": " ", "n": "\n", "t": "\t", "r": "\r"}.get(
        m.group(1), m.group(1)), value)
    args: list[str] = []
    for match in re.finditer(r'"((?:[^"\\]|\\.)*)"|(\S+)', text):
        quoted, bare = match.groups()
        arg = re.sub(r'\\([\\"`$])', r"\1", quoted) if quoted is not None else bare
        args.append(arg.replace("%%", "%"))
    return args


def test_exec_quoting_follows_the_desktop_entry_rules() -> None:
    line = exec_line(ARGV)
    assert line == r'"/opt/My Apps/relay" --hidden 100%% "say \\"\\$HOME\\""'
    assert exec_argv(line) == ARGV  # what a launcher runs is the argv, word for word
    assert exec_argv(exec_line(["a\\b c", "x\ny"])) == ["a\\b c", "x\ny"]


def test_linux_writes_and_removes_a_freedesktop_autostart_entry(tmp_path: Path) -> None:
    config = tmp_path / "xdg"
    autostart = Autostart("Linux", tmp_path / "home", {"XDG_CONFIG_HOME": str(config)},
                          argv=ARGV)
    assert autostart.path == config / "autostart" / f"{APP_ID}.desktop"
    assert not autostart.enabled()
    autostart.set_enabled(True)
    assert autostart.enabled()
    entry = _entry(config / "autostart" / "relay.desktop")
    assert entry["Type"] == "Application"
    assert entry["Name"] == "Relay"
    assert entry["Exec"] == exec_line(ARGV)
    assert entry["X-GNOME-Autostart-enabled"] == "true"
    assert os.stat(config / "autostart" / "relay.desktop").st_mode & 0o777 == 0o644
    autostart.set_enabled(False)
    assert not autostart.enabled()
    assert not (config / "autostart" / "relay.desktop").exists()
    autostart.set_enabled(False)  # twice: nothing to remove, no error


def test_linux_without_xdg_config_home_uses_dot_config(tmp_path: Path) -> None:
    autostart = Autostart("Linux", tmp_path, {})
    assert autostart.path == tmp_path / ".config" / "autostart" / "relay.desktop"


def test_macos_writes_a_launch_agent(tmp_path: Path) -> None:
    autostart = Autostart("Darwin", tmp_path, {}, argv=ARGV)
    autostart.set_enabled(True)
    path = tmp_path / "Library" / "LaunchAgents" / f"{AGENT_LABEL}.plist"
    assert autostart.path == path
    agent = plistlib.loads(path.read_bytes())
    assert agent == {"Label": AGENT_LABEL, "ProgramArguments": ARGV, "RunAtLoad": True,
                     "ProcessType": "Interactive"}
    assert autostart.enabled()
    autostart.set_enabled(False)
    assert not path.exists()


class FakeRunKey:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    def set(self, name: str, value: str) -> None:
        self.values[name] = value

    def delete(self, name: str) -> None:
        self.values.pop(name, None)


def test_windows_writes_the_run_key(tmp_path: Path) -> None:
    key = FakeRunKey()
    argv = [r"C:\Program Files\Relay\relay.exe", "--hidden"]
    autostart = Autostart("Windows", tmp_path, {}, run_key=key, argv=argv)
    assert autostart.path is None
    assert not autostart.enabled()
    autostart.set_enabled(True)
    assert key.values == {APP_ID: r'"C:\Program Files\Relay\relay.exe" --hidden'}
    assert key.values[APP_ID] == run_value(argv)
    assert autostart.enabled()
    autostart.set_enabled(False)
    assert key.values == {}
    assert list(tmp_path.iterdir()) == []  # nothing written to disk


def test_an_entry_that_cannot_be_written_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    autostart = Autostart("Linux", tmp_path, {"XDG_CONFIG_HOME": str(blocker)}, argv=ARGV)
    with pytest.raises(ConfigError) as caught:
        autostart.set_enabled(True)
    assert "login entry" in caught.value.message
    assert caught.value.hint


def test_the_file_menu_switch_writes_the_real_entry(
        shell: RelayShell, engine: Engine, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setattr(shell, "autostart", Autostart.here())
    action = shell.window.login_action
    assert action.isCheckable()
    file_menu = shell.window.menuBar().actions()[0].menu()
    assert isinstance(file_menu, QMenu)
    assert action in file_menu.actions()
    action.trigger()
    assert action.isChecked()
    written = exec_argv(_entry(config / "autostart" / "relay.desktop")["Exec"])
    assert written == [sys.executable, "-m", "relay", "--hidden"]
    assert os.access(written[0], os.X_OK)
    action.trigger()
    assert not action.isChecked()
    assert not (config / "autostart" / "relay.desktop").exists()


def test_the_switch_says_why_it_could_not(shell: RelayShell, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setattr(shell, "autostart",
                        Autostart("Linux", tmp_path, {"XDG_CONFIG_HOME": str(blocker)}))
    shell.window.login_action.trigger()
    assert not shell.window.login_action.isChecked()
    assert "login entry" in shell.window.status.error_label.text()
