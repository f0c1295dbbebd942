""""Start Relay at login": the entry each desktop reads at login, written and removed (no Qt).

Linux and the BSDs: a freedesktop autostart entry, ``$XDG_CONFIG_HOME/autostart/relay.desktop``
(``~/.config`` by default). macOS: a LaunchAgent, ``~/Library/LaunchAgents/<label>.plist``
with ``RunAtLoad``. Windows: a value under the user's ``Run`` key (through :class:`RunKey`,
which tests replace). Each starts the installed Relay — the frozen bundle's executable, or
this Python with ``-m relay`` — with ``--hidden``: the window starts in the tray and hosts.
"""

from __future__ import annotations

import os
import platform
import plistlib
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from relay.core.errors import ConfigError
from relay.core.fsutil import write_atomic

#: the file name (Linux) and value name (Windows) of the entry
APP_ID = "relay"
#: the macOS LaunchAgent's label (and file name)
AGENT_LABEL = "org.relay.Relay"
RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"
#: what the entry adds to the command line: start in the tray
HIDDEN = "--hidden"


def launch_argv(frozen: bool | None = None, executable: str | None = None) -> list[str]:
    """How this install of Relay is started, to the tray."""
    frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
    executable = executable or sys.executable
    return [executable, HIDDEN] if frozen else [executable, "-m", "relay", HIDDEN]


def exec_line(argv: Sequence[str]) -> str:
    """``argv`` as a desktop entry's ``Exec`` value: each argument quoted by the Exec rules
    (``%`` doubled; reserved characters in double quotes, ``\\ " ` $`` escaped there), then
    the string rule over the whole value (every backslash doubled)."""
    def quoted(arg: str) -> str:
        arg = arg.replace("%", "%%")
        if arg and not any(c in arg for c in ' \t\n"\'\\><~|&;$*?#()`='):
            return arg
        for c in '\\"`$':
            arg = arg.replace(c, "\\" + c)
        return f'"{arg}"'
    value = " ".join(quoted(a) for a in argv).replace("\\", "\\\\")
    return value.replace("\n", "\\n").replace("\t", "\\t")


def desktop_entry(argv: Sequence[str]) -> str:
    return ("[Desktop Entry]\n"
            "Type=Application\n"
            "Name=Relay\n"
            "Comment=Start Relay in the tray: it hosts your agent sessions\n"
            f"Exec={exec_line(argv)}\n"
            "Icon=relay\n"
            "Terminal=false\n"
            "X-GNOME-Autostart-enabled=true\n")


def launch_agent(argv: Sequence[str]) -> bytes:
    return plistlib.dumps({"Label": AGENT_LABEL, "ProgramArguments": list(argv),
                           "RunAtLoad": True, "ProcessType": "Interactive"})


def run_value(argv: Sequence[str]) -> str:
    """``argv`` as a Windows command line (the Run key's value)."""
    return subprocess.list2cmdline(list(argv))


class RunKey(Protocol):
    """The user's ``Run`` registry key: one string value per name."""

    def get(self, name: str) -> str | None: ...
    def set(self, name: str, value: str) -> None: ...
    def delete(self, name: str) -> None: ...


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import winreg

    class WinRegRunKey:
        """:class:`RunKey` over ``winreg`` (HKEY_CURRENT_USER)."""

        def get(self, name: str) -> str | None:
            try:
                with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
                    value, _kind = winreg.QueryValueEx(key, name)
            except FileNotFoundError:
                return None
            return str(value)

        def set(self, name: str, value: str) -> None:
            with winreg.CreateKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
                winreg.SetValueEx(key, name, 0, winreg.REG_SZ, value)

        def delete(self, name: str) -> None:
            try:
                with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY, 0,
                                    winreg.KEY_SET_VALUE) as key:
                    winreg.DeleteValue(key, name)
            except FileNotFoundError:
                pass

    def _run_key() -> RunKey:
        return WinRegRunKey()
else:
    def _run_key() -> RunKey:
        raise ConfigError("The Windows Run key exists only on Windows.",
                          "Pass a RunKey to Autostart elsewhere.")


@dataclass
class Autostart:
    """Whether Relay starts at login on this desktop, and the switch."""

    system: str
    home: Path
    env: Mapping[str, str]
    run_key: RunKey | None = None
    argv: Sequence[str] = ()

    @classmethod
    def here(cls) -> Autostart:
        return cls(platform.system(), Path.home(), os.environ)

    @property
    def path(self) -> Path | None:
        """The file the entry is (``None`` on Windows: a registry value)."""
        if self.system == "Windows":
            return None
        if self.system == "Darwin":
            return self.home / "Library" / "LaunchAgents" / f"{AGENT_LABEL}.plist"
        config = self.env.get("XDG_CONFIG_HOME") or str(self.home / ".config")
        return Path(config) / "autostart" / f"{APP_ID}.desktop"

    def _key(self) -> RunKey:
        if self.run_key is None:
            self.run_key = _run_key()
        return self.run_key

    def enabled(self) -> bool:
        if self.system == "Windows":
            return self._key().get(APP_ID) is not None
        path = self.path
        return path is not None and path.is_file()

    def set_enabled(self, on: bool) -> None:
        """Write (``on``) or remove the entry; a clear error when it cannot be."""
        argv = list(self.argv) or launch_argv()
        where = str(self.path) if self.path else f"HKCU\\{RUN_KEY}\\{APP_ID}"
        try:
            if self.system == "Windows":
                if on:
                    self._key().set(APP_ID, run_value(argv))
                else:
                    self._key().delete(APP_ID)
                return
            path = self.path
            assert path is not None
            if not on:
                path.unlink(missing_ok=True)
                return
            content = (launch_agent(argv) if self.system == "Darwin"
                       else desktop_entry(argv).encode())
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, content, 0o644)
        except OSError as exc:
            raise ConfigError(f"Could not {'add' if on else 'remove'} Relay's login entry "
                              f"{where}: {exc.strerror or exc}.",
                              "Check that folder's permissions, or add Relay to your "
                              "desktop's startup applications by hand.") from exc
