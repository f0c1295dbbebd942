"""Opening an account's login in a terminal: which terminal, which argv, and none at all."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Collection, Mapping
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from relay.gui.login_launch import LoginLaunch, Which, launch, terminal_argv

ARGV = ["claude", "/login"]
ENV = {"CLAUDE_CONFIG_DIR": "/home/me/.claude-work"}


def only(*names: str) -> Which:
    """A ``shutil.which`` that finds ``names`` in /usr/bin and nothing else."""
    return lambda name: f"/usr/bin/{name}" if name in names else None


@pytest.mark.parametrize(("found", "expected"), [
    (("x-terminal-emulator", "xterm"), ["/usr/bin/x-terminal-emulator", "-e"]),
    (("gnome-terminal", "konsole"), ["/usr/bin/gnome-terminal", "--"]),
    (("konsole",), ["/usr/bin/konsole", "-e"]),
    (("xterm",), ["/usr/bin/xterm", "-e"]),
])
def test_linux_terminals_in_order(found: tuple[str, ...], expected: list[str]) -> None:
    argv = terminal_argv(ARGV, ENV, system="Linux", which=only(*found))
    assert argv == [*expected, "env", "CLAUDE_CONFIG_DIR=/home/me/.claude-work", *ARGV]


def test_no_terminal_no_plan() -> None:
    assert terminal_argv(ARGV, ENV, system="Linux", which=only()) is None


def test_windows_and_macos(tmp_path: Path) -> None:
    assert terminal_argv(ARGV, ENV, system="Windows") == [
        "cmd", "/c", "start", "Relay login", "cmd", "/k", *ARGV]
    argv = terminal_argv(["claude", "/login"], {"CLAUDE_CONFIG_DIR": "/a b"},
                         ["ANTHROPIC_API_KEY"], system="Darwin", script_dir=tmp_path)
    script = tmp_path / "relay-login.command"
    assert argv == ["open", "-a", "Terminal", str(script)]
    assert script.read_text() == ("#!/bin/sh\nunset ANTHROPIC_API_KEY\n"
                                  "export CLAUDE_CONFIG_DIR='/a b'\nexec claude /login\n")
    assert script.stat().st_mode & stat.S_IXUSR


def test_credentials_set_here_are_removed_from_the_login(tmp_path: Path) -> None:
    started: list[tuple[list[str], dict[str, str], list[str]]] = []

    def start(argv: list[str], env: Mapping[str, str], unset: Collection[str]) -> bool:
        started.append((argv, dict(env), list(unset)))
        return True

    environ = {"DISPLAY": ":0", "ANTHROPIC_API_KEY": "sk-exported"}
    opened = launch(ARGV, ENV, ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"), system="Linux",
                    which=only("xterm"), start=start, environ=environ)
    assert opened == LoginLaunch("xterm", "env -u ANTHROPIC_API_KEY "
                                          "CLAUDE_CONFIG_DIR=/home/me/.claude-work claude /login")
    assert started == [(["/usr/bin/xterm", "-e", "env", "-u", "ANTHROPIC_API_KEY",
                         "CLAUDE_CONFIG_DIR=/home/me/.claude-work", *ARGV], ENV,
                        ["ANTHROPIC_API_KEY"])]
    assert "sk-exported" not in repr(started)


def test_without_a_terminal_the_command_is_shown() -> None:
    opened = launch(ARGV, ENV, system="Linux", which=only(), environ={"DISPLAY": ":0"})
    assert opened == LoginLaunch(None, "CLAUDE_CONFIG_DIR=/home/me/.claude-work claude /login")
    opened = launch(ARGV, ENV, system="Linux", which=only("xterm"), environ={})
    assert opened.terminal is None  # no display: a terminal cannot open


@pytest.mark.skipif(sys.platform != "linux", reason="a fake Linux terminal emulator")
def test_a_terminal_on_path_is_started_detached(tmp_path: Path, qtbot: QtBot, qapp: object,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    record = tmp_path / "args"
    fake = tmp_path / "bin" / "x-terminal-emulator"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}.tmp && mv {record}.tmp {record}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DISPLAY", ":99")
    opened = launch(ARGV, ENV, system="Linux")
    assert opened.terminal == "x-terminal-emulator"
    qtbot.waitUntil(record.exists, timeout=5000)
    assert record.read_text().splitlines() == [
        "-e", "env", "CLAUDE_CONFIG_DIR=/home/me/.claude-work", *ARGV]
