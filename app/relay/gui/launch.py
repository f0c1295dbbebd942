"""``relay``: start the desktop window — painted first, then the engine.

The window paints before the engine stack is imported. :func:`main` builds the QApplication
and the window's frame (:meth:`MainWindow.frame <relay.gui.main_window.MainWindow.frame>`:
menus, toolbar, status bar and every dock in its place, saying "Starting…") in the theme the
settings ask for, and lets Qt paint it. Up to then only Qt, Relay's theme and the frame's
light modules are loaded — no asyncio or qasync, no engine, pydantic, pygit2 or cryptography
(tests/gui/test_first_paint.py checks). Then qasync: :func:`amain` runs on an asyncio runner
whose loop factory is qasync's ``QEventLoop``, and imports the rest
(:mod:`relay.gui.window_run`: attach to the host or host here, the shell's docks into the
painted window, quit, close).

Where the vault is a file (no OS keyring) and ``RELAY_VAULT_PASSPHRASE`` is unset, its
passphrase is asked in a dialog (:mod:`relay.gui.passphrase`) before work that needs it
starts — never for ``relay --demo``, whose handoffs are signed with a throwaway demo key.

Crashes (exceptions nothing caught: in a Qt slot, a thread, an asyncio task or callback)
go to one :class:`~relay.core.crash.CrashHandler`, installed for the whole run: logged to
``<data folder>/logs/relay.log`` (scrubbed) and shown once each in a dialog
(:mod:`relay.gui.crash_dialog`). One that ends the window prints one line on stderr and
exits 70.

Imports go one way: launch → window_run → smoke → shell (the shell knows none of them).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import socket
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import shiboken6
from PySide6.QtWidgets import QApplication

from relay import __version__
from relay.core.crash import CRASH_EXIT, CrashHandler, log_path, report_line
from relay.core.home import default_home
from relay.core.hostfile import CONNECT_ENV, TOKEN_ENV
from relay.gui import theme
from relay.gui.crash_dialog import window_crash_handler
from relay.gui.main_window import MainWindow
from relay.gui.resources import app_icon

if TYPE_CHECKING:  # imported after the first paint
    import qasync


NO_DISPLAY_HINT = ("Relay's window needs a graphical display. For a headless demo run "
                   "`relay-cli demo`; `relay-cli --help` lists the other commands.")


def __getattr__(name: str) -> Any:
    """``RelayShell``, imported when first asked for — after the first paint (the engine
    stack comes with it); tests put a subclass in its place."""
    if name == "RelayShell":
        from relay.gui.shell import RelayShell

        globals()[name] = RelayShell
        return RelayShell
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="relay", description="Relay's desktop window.")
    parser.add_argument("--version", action="version", version=f"relay {__version__}")
    parser.add_argument("--demo", action="store_true", help=(
        "start a scripted demo session (a SIMULATION) in a temporary repository"))
    parser.add_argument("--demo-limit-after", type=int, metavar="N", help=(
        "with --demo: hit a simulated usage limit after N turns and hand off to a second "
        "simulated account"))
    parser.add_argument("--smoke-test", action="store_true", help=(
        "check this installation: open every dock, run a demo handoff in a throwaway data "
        "folder, exit 0 only if everything worked"))
    parser.add_argument("--home", type=Path, help=(
        "data folder (default: RELAY_HOME or the OS data dir)"))
    parser.add_argument("--connect", metavar="URL", help=(
        f"attach to the Relay host at URL (e.g. over an SSH tunnel) instead of hosting "
        f"here (default: {CONNECT_ENV})"))
    parser.add_argument("--token", help=(
        f"the host's API token, with --connect (default: {TOKEN_ENV}, or the data folder's "
        "api-token)"))
    parser.add_argument("--hidden", action="store_true", help=(
        "start in the tray without showing the window (Start Relay at login uses it)"))
    return parser


def display_problem(env: Mapping[str, str], platform: str = sys.platform) -> str | None:
    """Why no window can be opened here, or ``None`` when a display looks usable."""
    if not platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return None
    qpa = env.get("QT_QPA_PLATFORM", "")
    if qpa and not qpa.startswith(("xcb", "wayland")):
        return None  # offscreen, vnc, eglfs … need no desktop session
    if env.get("WAYLAND_DISPLAY"):
        return None
    display = env.get("DISPLAY")
    if not display:
        return "No display found (neither DISPLAY nor WAYLAND_DISPLAY is set)."
    local = re.fullmatch(r"(?:unix)?:(\d+)(?:\.\d+)?", display)
    if local and not _x_socket_answers(int(local.group(1))):
        return f"Cannot open the X display {display!r} (no X server answers there)."
    return None


def _x_socket_answers(number: int) -> bool:
    path = f"/tmp/.X11-unix/X{number}"
    for address in (path, "\0" + path):  # the file socket, then the abstract one
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(1.0)
            try:
                sock.connect(address)
            except OSError:
                continue
            return True
    return False


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry ``relay``; returns the process exit code."""
    parser = build_parser()
    args, qt_args = parser.parse_known_args(argv)
    unknown = [a for a in qt_args if a.startswith("--")]
    if unknown:  # Qt's own options take one dash (-platform, -style); ours take two
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    problem = display_problem(os.environ)
    if problem is not None:
        print(f"relay: {problem}\n  → {NO_DISPLAY_HINT}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.smoke_test:  # a throwaway data folder and vault: never the user's
        from relay.gui.smoke import smoke_environment

        smoke_home = Path(tempfile.mkdtemp(prefix="relay-smoke-"))
        os.environ.update(smoke_environment(smoke_home))
        args.home = smoke_home
    app = QApplication.instance() or QApplication(["relay", *qt_args])  # -platform, -style …
    assert isinstance(app, QApplication)
    app.setApplicationName("Relay")
    app.setApplicationDisplayName("Relay")
    app.setOrganizationName("Relay")
    app.setDesktopFileName("relay")
    app.setWindowIcon(app_icon())
    app.setQuitOnLastWindowClosed(False)  # quitting closes the engine first (amain)
    crashes, dialogs = window_crash_handler(log_path(args.home or default_home()))
    if args.smoke_test:  # nobody reads the dialogs: the smoke test's output says it too
        dialogs.shown.connect(lambda crash: print(report_line(crash, crashes.log_file),
                                                  file=sys.stderr))
    frame: MainWindow | None = None
    with crashes.installed():
        try:
            frame = paint_frame(app, args)
            import asyncio  # after the first paint, as everything the engine needs

            import qasync

            def loop_factory() -> qasync.QEventLoop:
                loop = qasync.QEventLoop(app)
                loop.set_exception_handler(crashes.loop_handler)  # for the loop's whole life
                return loop

            with asyncio.Runner(loop_factory=loop_factory) as runner:
                return runner.run(amain(app, args, crashes, frame))
        except KeyboardInterrupt:
            return 130
        except Exception as exc:  # noqa: BLE001 — the window cannot go on: one line, the details logged
            crash = crashes.handle(exc, "the window's main coroutine")
            print(report_line(crash, crashes.log_file), file=sys.stderr)
            return CRASH_EXIT
        finally:
            if frame is not None:  # closed by now (or never filled): gone with main's end
                shiboken6.delete(frame)


def frame_theme(home: Path, env: Mapping[str, str]) -> str:
    """The theme the first paint uses: the settings' ``gui_theme`` (``RELAY_THEME``, else
    ``home``'s relay.toml), read without the settings' model (pydantic loads after the
    paint); ``system`` when unset or not a theme — reading the settings in full after the
    paint says what is wrong."""
    choice: object = env.get("RELAY_THEME")
    path = home / "relay.toml"
    if not choice and path.is_file():
        import tomllib

        try:
            with path.open("rb") as fh:
                choice = tomllib.load(fh).get("gui_theme")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            choice = None
    return choice if isinstance(choice, str) and choice in theme.CHOICES else "system"


def paint_frame(app: QApplication, args: argparse.Namespace) -> MainWindow:
    """The window's frame in the settings' theme, shown and painted (unless ``--hidden``):
    what the user sees while the rest is imported and the engine opens."""
    theme.apply(app, frame_theme(args.home or default_home(), os.environ))
    frame = MainWindow.frame(app.windowIcon())
    if not args.hidden:
        frame.show()
        app.processEvents()  # Qt paints it now: the imports that follow take a while
    return frame


async def amain(app: QApplication, args: argparse.Namespace,
                crashes: CrashHandler | None = None, frame: MainWindow | None = None) -> int:
    """Host (or attach), fill the window, wait for quit, close everything
    (:func:`relay.gui.window_run.run`); ``crashes`` receives what the window's tasks raise
    that is not a RelayError. ``frame`` is the window :func:`main` painted first
    (:func:`paint_frame`); without one, the window is made there and first shown with its
    docks in place."""
    from relay.gui import window_run

    shell_class = globals().get("RelayShell") or __getattr__("RelayShell")  # or a test's
    return await window_run.run(app, args, crashes, frame, shell_class)
