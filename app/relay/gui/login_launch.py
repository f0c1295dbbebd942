"""Open an account's login command in a terminal emulator, or say what to type.

The CLIs log in interactively (a browser, a code to paste), so Relay opens the
command in the user's terminal: ``x-terminal-emulator``, ``gnome-terminal``,
``konsole`` or ``xterm`` on Linux, Terminal.app (``open -a Terminal`` on a small
script) on macOS, ``cmd /c start`` on Windows. Commands are argument lists,
never a shell string. When no terminal is found, :attr:`LoginLaunch.terminal` is
None and the view shows :attr:`LoginLaunch.command` to copy.
"""

from __future__ import annotations

import os
import platform
import shlex
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QProcess, QProcessEnvironment

from relay.gui.wallet_text import shown_command

Which = Callable[[str], str | None]
#: starts ``argv`` detached with ``env`` added to Relay's environment; whether it started
Starter = Callable[[list[str], Mapping[str, str]], bool]

#: Linux terminal emulators, in the order tried, with the flag before the command
LINUX_TERMINALS: tuple[tuple[str, str], ...] = (
    ("x-terminal-emulator", "-e"), ("gnome-terminal", "--"), ("konsole", "-e"), ("xterm", "-e"))

#: what opens the command where it is not a Linux (or other X11/Wayland) terminal
_OPENED_BY = {"Darwin": "Terminal", "Windows": "cmd"}


@dataclass(frozen=True, slots=True)
class LoginLaunch:
    """What happened: the terminal that opened the login (None: none), and the command."""

    terminal: str | None
    command: str


def terminal_argv(argv: Sequence[str], env: Mapping[str, str], *, system: str,
                  which: Which = shutil.which, script_dir: Path | None = None) -> list[str] | None:
    """The argv that opens ``argv`` (with ``env``) in a terminal, or None when there is none."""
    if system == "Darwin":
        return ["open", "-a", "Terminal", str(_mac_script(argv, env, script_dir))]
    if system == "Windows":
        return ["cmd", "/c", "start", "Relay login", "cmd", "/k", *argv]
    inner = ["env", *(f"{k}={v}" for k, v in env.items()), *argv] if env else list(argv)
    for name, flag in LINUX_TERMINALS:
        found = which(name)
        if found:
            return [found, flag, *inner]
    return None


def _mac_script(argv: Sequence[str], env: Mapping[str, str], script_dir: Path | None) -> Path:
    """A ``.command`` file Terminal.app runs: the variables exported, then the command."""
    folder = script_dir or Path(tempfile.mkdtemp(prefix="relay-login-"))
    script = folder / "relay-login.command"
    lines = ["#!/bin/sh", *(f"export {k}={shlex.quote(v)}" for k, v in env.items()),
             f"exec {shlex.join(argv)}", ""]
    script.write_text("\n".join(lines), encoding="utf-8")
    script.chmod(0o700)
    return script


def start_detached(argv: list[str], env: Mapping[str, str]) -> bool:
    """Start ``argv`` outside Relay's process group (it outlives the window)."""
    process = QProcess()
    process.setProgram(argv[0])
    process.setArguments(argv[1:])
    environment = QProcessEnvironment.systemEnvironment()
    for name, value in env.items():
        environment.insert(name, value)
    process.setProcessEnvironment(environment)
    process.setStandardOutputFile(QProcess.nullDevice())
    process.setStandardErrorFile(QProcess.nullDevice())
    # PySide6's stub says (bool, pid); 6.11 returns a bare bool: accept both
    started: object = process.startDetached()
    return bool(started[0] if isinstance(started, tuple) else started)


def launch(argv: Sequence[str], env: Mapping[str, str], *, system: str | None = None,
           which: Which = shutil.which, start: Starter = start_detached) -> LoginLaunch:
    """Open the login command in a terminal; the command to copy is always returned too."""
    command = shown_command(argv, env)
    system = system or platform.system()
    if system not in _OPENED_BY and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return LoginLaunch(None, command)  # a terminal emulator needs a display
    plan = terminal_argv(argv, env, system=system, which=which)
    if plan is None or not start(plan, env):
        return LoginLaunch(None, command)
    return LoginLaunch(_OPENED_BY.get(system, Path(plan[0]).name), command)
