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
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QProcess, QProcessEnvironment

from relay.wallet.present import shown_command

Which = Callable[[str], str | None]
#: starts ``argv`` detached with ``env`` added to Relay's environment and ``unset`` removed
Starter = Callable[[list[str], Mapping[str, str], Collection[str]], bool]

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


def terminal_argv(argv: Sequence[str], env: Mapping[str, str], unset: Collection[str] = (), *,
                  system: str, which: Which = shutil.which,
                  script_dir: Path | None = None) -> list[str] | None:
    """The argv that opens ``argv`` in a terminal — with ``env`` set and ``unset`` removed —
    or None when there is no terminal to open."""
    if system == "Darwin":
        return ["open", "-a", "Terminal", str(_mac_script(argv, env, unset, script_dir))]
    if system == "Windows":  # the environment is the started process's own (start_detached)
        return ["cmd", "/c", "start", "Relay login", "cmd", "/k", *argv]
    inner = env_argv(argv, env, unset)
    for name, flag in LINUX_TERMINALS:
        found = which(name)
        if found:
            return [found, flag, *inner]
    return None


def env_argv(argv: Sequence[str], env: Mapping[str, str], unset: Collection[str] = ()) -> list[str]:
    """``env -u X K=V argv…`` — the same environment whatever the terminal passes on."""
    if not env and not unset:
        return list(argv)
    return ["env", *(a for name in sorted(unset) for a in ("-u", name)),
            *(f"{k}={v}" for k, v in env.items()), *argv]


def _mac_script(argv: Sequence[str], env: Mapping[str, str], unset: Collection[str],
                script_dir: Path | None) -> Path:
    """A ``.command`` file Terminal.app runs: the variables set and unset, then the command."""
    folder = script_dir or Path(tempfile.mkdtemp(prefix="relay-login-"))
    script = folder / "relay-login.command"
    lines = ["#!/bin/sh", *(f"unset {name}" for name in sorted(unset)),
             *(f"export {k}={shlex.quote(v)}" for k, v in env.items()),
             f"exec {shlex.join(argv)}", ""]
    script.write_text("\n".join(lines), encoding="utf-8")
    script.chmod(0o700)
    return script


def start_detached(argv: list[str], env: Mapping[str, str], unset: Collection[str]) -> bool:
    """Start ``argv`` outside Relay's process group (it outlives the window)."""
    process = QProcess()
    process.setProgram(argv[0])
    process.setArguments(argv[1:])
    environment = QProcessEnvironment.systemEnvironment()
    for name in unset:
        environment.remove(name)
    for name, value in env.items():
        environment.insert(name, value)
    process.setProcessEnvironment(environment)
    process.setStandardOutputFile(QProcess.nullDevice())
    process.setStandardErrorFile(QProcess.nullDevice())
    # PySide6's stub says (bool, pid); 6.11 returns a bare bool: accept both
    started: object = process.startDetached()
    return bool(started[0] if isinstance(started, tuple) else started)


def launch(argv: Sequence[str], env: Mapping[str, str], unset: Collection[str] = (), *,
           system: str | None = None, which: Which = shutil.which,
           start: Starter = start_detached,
           environ: Mapping[str, str] | None = None) -> LoginLaunch:
    """Open the login command in a terminal; the command to copy is always returned too.

    Only the variables of ``unset`` that are set here (``environ``, default Relay's own)
    are removed, so the command to copy stays short when none is.
    """
    environ = os.environ if environ is None else environ
    unset = sorted(name for name in unset if name in environ)
    command = shown_command(argv, env, unset)
    system = system or platform.system()
    if system not in _OPENED_BY and not (environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY")):
        return LoginLaunch(None, command)  # a terminal emulator needs a display
    plan = terminal_argv(argv, env, unset, system=system, which=which)
    if plan is None or not start(plan, env, unset):
        return LoginLaunch(None, command)
    return LoginLaunch(_OPENED_BY.get(system, Path(plan[0]).name), command)
