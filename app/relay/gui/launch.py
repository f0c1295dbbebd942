"""``relay``: start the desktop window.

Startup follows qasync: build the QApplication, then run the main coroutine on
an asyncio runner whose loop factory is qasync's ``QEventLoop``. The coroutine
attaches (:func:`relay.api.attach.attach`): with no host for the data folder the window
*hosts* — it takes the host lock, opens the engine and serves the local API on the qasync
loop, so ``relay-cli`` and other windows are its clients; with a host already up (another
window, ``relay-cli serve``, ``--connect URL``) the window is a client of it and opens no
engine. It shows the window and waits until the user quits (menu, tray, closing the window
where there is no tray, or the application's ``aboutToQuit``). Quit with sessions running
asks; "keep them running" lets go of the window and tray and hosts on headless until they
end. Then it closes the GUI tasks, the API, the engine and the lock, in that order.

Where the vault is a file (no OS keyring) and ``RELAY_VAULT_PASSPHRASE`` is unset, its
passphrase is asked in a dialog (:mod:`relay.gui.passphrase`) before work that needs it
starts — never for ``relay --demo``, whose handoffs are signed with a throwaway demo key.

Crashes (exceptions nothing caught: in a Qt slot, a thread, an asyncio task or callback)
go to one :class:`~relay.core.crash.CrashHandler`, installed for the whole run: logged to
``<data folder>/logs/relay.log`` (scrubbed) and shown once each in a dialog
(:mod:`relay.gui.crash_dialog`). One that ends the window prints one line on stderr and
exits 70.

Imports go one way: launch → smoke → shell (the shell knows neither).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import re
import signal
import socket
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import qasync
from PySide6.QtWidgets import QApplication, QMessageBox

from relay import __version__
from relay.api.attach import Attached, attach
from relay.api.host import Host
from relay.core.config import Config, load_config
from relay.core.crash import CRASH_EXIT, CrashHandler, log_path, report_line
from relay.core.errors import RelayError
from relay.core.home import default_home
from relay.core.hostfile import CONNECT_ENV, TOKEN_ENV, write_host
from relay.gui import theme
from relay.gui.closing import until_idle
from relay.gui.crash_dialog import window_crash_handler
from relay.gui.main_thread_gc import MainThreadCollector
from relay.gui.passphrase import PassphrasePrompter
from relay.gui.resources import app_icon
from relay.gui.sessions_source import ClientSource
from relay.gui.shell import RelayShell
from relay.gui.smoke import SmokeReport, run_smoke, smoke_environment

log = logging.getLogger(__name__)

NO_DISPLAY_HINT = ("Relay's window needs a graphical display. For a headless demo run "
                   "`relay-cli demo`; `relay-cli --help` lists the other commands.")


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

    def loop_factory() -> qasync.QEventLoop:
        loop = qasync.QEventLoop(app)
        loop.set_exception_handler(crashes.loop_handler)  # for the loop's whole life
        return loop

    with crashes.installed(), asyncio.Runner(loop_factory=loop_factory) as runner:
        try:
            return runner.run(amain(app, args, crashes))
        except KeyboardInterrupt:
            return 130
        except Exception as exc:  # noqa: BLE001 — the window cannot go on: one line, the details logged
            crash = crashes.handle(exc, "the window's main coroutine")
            print(report_line(crash, crashes.log_file), file=sys.stderr)
            return CRASH_EXIT


async def amain(app: QApplication, args: argparse.Namespace,
                crashes: CrashHandler | None = None) -> int:
    """Host (or attach), show the window, wait for quit, close everything; ``crashes``
    receives what the window's tasks raise that is not a RelayError."""
    quit_requested = asyncio.Event()
    app.aboutToQuit.connect(quit_requested.set)
    handled = _quit_on_signals(quit_requested)
    collector = MainThreadCollector()  # no Qt object is ever collected on a worker thread
    collector.start()
    try:
        async with contextlib.AsyncExitStack() as stack:
            prompter: PassphrasePrompter | None = None
            try:
                config = load_config(home=args.home)
                theme.apply(app, config.gui_theme)
                first_run = not config.db_path.exists()
                prompter = PassphrasePrompter(config)
                stack.callback(prompter.close)
                attached = await stack.enter_async_context(attach(
                    config, connect=args.connect, token=args.token, kind="window",
                    passphrase_provider=prompter.provider))
            except RelayError as exc:
                if args.smoke_test:  # nobody is there to close a dialog
                    print(f"smoke: FAIL Relay cannot start: {exc}", file=sys.stderr)
                else:
                    await show_startup_error(exc)
                return 2
            return await _run_window(args, config, attached, prompter, quit_requested,
                                     crashes, first_run, stack)
    finally:
        collector.stop()
        app.aboutToQuit.disconnect(quit_requested.set)
        for sig in handled:
            asyncio.get_running_loop().remove_signal_handler(sig)


async def _run_window(args: argparse.Namespace, config: Config, attached: Attached,
                      prompter: PassphrasePrompter, quit_requested: asyncio.Event,
                      crashes: CrashHandler | None, first_run: bool,
                      stack: contextlib.AsyncExitStack) -> int:
    """The window over the engine it hosts, or over the host it attached to; 0 once quit.
    A client of the data folder's host whose host stops hosts it (:func:`take_over`)."""
    host = attached.host
    if host is not None:
        shell = RelayShell(host.engine, prompter=prompter, crashes=crashes)
        _say_hosting(shell, config, host)
    else:
        prompter.close()  # the host has the vault
        shell = RelayShell(ClientSource(attached.client), crashes=crashes, config=config)
    shell.quitRequested.connect(quit_requested.set)
    host_gone = asyncio.Event()
    shell.hostGone.connect(host_gone.set)
    try:
        shell.start(unlock_vault=not args.demo, show=not args.hidden)
        if args.smoke_test:
            report = SmokeReport()
            await run_smoke(shell, report)
            return 1 if report.failures else 0
        if args.demo:
            await shell.start_demo(args.demo_limit_after)
        elif first_run and host is not None:
            shell.show_welcome()
        while await _first_of(quit_requested, host_gone) is host_gone:
            host_gone.clear()
            if not attached.hosting and attached.client.home is not None \
                    and await asyncio.to_thread(attached.client.gone):  # not a late echo
                attached = await take_over(stack, config, shell) or attached
    finally:
        await shell.aclose()
    host = attached.host
    if shell.keep_running and host is not None:
        quit_requested.clear()
        await host_headless(host, quit_requested)
    return 0


async def take_over(stack: contextlib.AsyncExitStack, config: Config,
                    shell: RelayShell) -> Attached | None:
    """The host this client window attached to (through the data folder's ``host.json``)
    stopped, and nobody hosts the data folder: attach again — this window claims the lock,
    opens the engine recovering (what the old host left is taken up) and serves the API; or,
    when another process was first, it is that one's client. The window, its docks and its
    selection stay (:meth:`RelayShell.rebind`). A window attached with ``--connect`` never
    gets here: it does not host a data folder elsewhere. ``None``: attaching failed (the
    window says why; the next sign of the stop tries again)."""
    prompter = PassphrasePrompter(config)
    stack.callback(prompter.close)
    try:
        attached = await stack.enter_async_context(attach(
            config, kind="window", passphrase_provider=prompter.provider))
    except RelayError as exc:
        shell.messages.error("sessions", exc.message, exc.hint or "")
        return None
    if attached.host is not None:
        shell.rebind(attached.host.engine, prompter)
        _say_hosting(shell, config, attached.host)
        shell.messages.notice("The host stopped; this window hosts now")
        log.info("the host of %s stopped; this window hosts it now", config.home)
    else:
        prompter.close()
        shell.rebind(ClientSource(attached.client))
        shell.messages.notice(f"The host stopped; this window is a client of the host at "
                              f"{attached.client.url} now")
    return attached


def _say_hosting(shell: RelayShell, config: Config, host: Host) -> None:
    shell.window.set_home(f"Hosting {config.home} at {host.url}")  # relay-cli's way in


async def _first_of(*events: asyncio.Event) -> asyncio.Event:
    """The first of ``events`` to be set."""
    waits = {asyncio.ensure_future(event.wait()): event for event in events}
    try:
        done, _pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
    return next(event for task, event in waits.items() if task in done)


async def host_headless(host: Host, quit_requested: asyncio.Event) -> None:
    """Quit said "keep them running": with no window and no tray, host on until the
    sessions end (a window opened meanwhile attaches) or a signal asks to stop."""
    running = len(host.engine.running_sessions())
    log.warning("the window is closed; hosting %s until %s", host.home,
                "its running session ends" if running == 1
                else f"its {running} running sessions end")
    host.ctx.kind = "serve"  # `relay-cli status`: a headless host now, not the window
    await asyncio.to_thread(write_host, host.home, host.url, __version__, "serve")
    idle = asyncio.ensure_future(until_idle(host.engine))
    stop = asyncio.ensure_future(quit_requested.wait())
    try:
        await asyncio.wait({idle, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (idle, stop):
            task.cancel()
        await asyncio.gather(idle, stop, return_exceptions=True)


def _quit_on_signals(quit_requested: asyncio.Event) -> list[signal.Signals]:
    """Ctrl-C and SIGTERM quit cleanly (the engine is closed) where the loop supports it."""
    loop = asyncio.get_running_loop()
    handled = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, quit_requested.set)
        except (NotImplementedError, RuntimeError, ValueError):  # Windows / not main thread
            log.debug("cannot handle %s on this loop", sig)
        else:
            handled.append(sig)
    return handled


async def show_startup_error(exc: RelayError) -> None:
    """Print the error and show it in a dialog (opened without a nested event loop)."""
    print(f"relay: {exc}", file=sys.stderr)
    box = QMessageBox(QMessageBox.Icon.Critical, "Relay cannot start", exc.message)
    box.setInformativeText(exc.hint or "")
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    def _finished(_result: int) -> None:
        if not done.done():
            done.set_result(None)

    box.finished.connect(_finished)
    box.open()
    await done
