"""The window's life after its first paint (:mod:`relay.gui.launch` paints it, then runs
:func:`run`): attach, the shell in the painted window, quit, close.

:func:`run` attaches (:func:`relay.api.attach.attach`): with no host for the data folder the
window *hosts* — it takes the host lock, opens the engine and serves the local API on the
qasync loop, so ``relay-cli`` and other windows are its clients; with a host already up
(another window, ``relay-cli serve``, ``--connect URL``) the window is a client of it and
opens no engine. The shell's docks take the painted frame's docks' places, and it waits
until the user quits (menu, tray, closing the window where there is no tray, or the
application's ``aboutToQuit``; Quit said while the frame still waited is asked once the
shell is there). Quit with sessions running asks; "keep them running" lets go of the window
and tray and hosts on headless until they end. Then it closes the GUI tasks, the API, the
engine and the lock, in that order. A client window whose host stops hosts the data folder
itself (:func:`take_over`).

Everything the engine stack needs is imported here, so that importing it is what follows
the first paint.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QApplication, QMessageBox

from relay import __version__
from relay.api.attach import Attached, attach
from relay.api.host import Host
from relay.core.config import Config, load_config
from relay.core.crash import CrashHandler
from relay.core.errors import RelayError
from relay.core.hostfile import write_host
from relay.gui import theme
from relay.gui.closing import until_idle
from relay.gui.main_thread_gc import MainThreadCollector
from relay.gui.main_window import MainWindow
from relay.gui.passphrase import PassphrasePrompter
from relay.gui.sessions_source import ClientSource
from relay.gui.shell import RelayShell
from relay.gui.smoke import SmokeReport, run_smoke

log = logging.getLogger(__name__)


async def run(app: QApplication, args: argparse.Namespace, crashes: CrashHandler | None,
              frame: MainWindow | None, shell_class: type[RelayShell]) -> int:
    """:func:`relay.gui.launch.amain`: host (or attach), fill the window (a ``shell_class``),
    wait for quit, close everything."""
    quit_requested = asyncio.Event()
    app.aboutToQuit.connect(quit_requested.set)
    handled = _quit_on_signals(quit_requested)
    collector = MainThreadCollector()  # no Qt object is ever collected on a worker thread
    collector.start()
    if frame is None:
        frame = MainWindow.frame(app.windowIcon())
    # closing the frame or Quit before the shell takes the window over: Quit once it has
    quit_early = asyncio.Event()
    early: list[SignalInstance] = [frame.closeRequested, frame.quitRequested]
    for signal_ in early:
        signal_.connect(quit_early.set)
    try:
        async with contextlib.AsyncExitStack() as stack:
            prompter: PassphrasePrompter | None = None
            try:
                config = load_config(home=args.home)
                theme.apply(app, config.gui_theme)
                first_run = not config.db_path.exists()
                prompter = PassphrasePrompter(config)
                prompter.set_parent_widget(frame)
                stack.callback(prompter.close)
                attached = await stack.enter_async_context(attach(
                    config, connect=args.connect, token=args.token, kind="window",
                    passphrase_provider=prompter.provider))
            except RelayError as exc:
                frame.hide()
                if args.smoke_test:  # nobody is there to close a dialog
                    print(f"smoke: FAIL Relay cannot start: {exc}", file=sys.stderr)
                else:
                    await show_startup_error(exc)
                return 2
            for signal_ in early:
                signal_.disconnect(quit_early.set)
            early.clear()
            return await _run_window(args, config, attached, prompter,
                                     (quit_requested, quit_early), crashes, first_run, stack,
                                     frame, shell_class)
    finally:
        for signal_ in early:
            signal_.disconnect(quit_early.set)
        collector.stop()
        app.aboutToQuit.disconnect(quit_requested.set)
        for sig in handled:
            asyncio.get_running_loop().remove_signal_handler(sig)


async def _run_window(args: argparse.Namespace, config: Config, attached: Attached,
                      prompter: PassphrasePrompter,
                      quits: tuple[asyncio.Event, asyncio.Event],
                      crashes: CrashHandler | None, first_run: bool,
                      stack: contextlib.AsyncExitStack, frame: MainWindow,
                      shell_class: type[RelayShell]) -> int:
    """The window over the engine it hosts, or over the host it attached to, in ``frame``;
    0 once quit (``quits``: quit now, and Quit asked before the shell was there). A client of
    the data folder's host whose host stops hosts it (:func:`take_over`)."""
    quit_requested, quit_early = quits
    host = attached.host
    if host is not None:
        shell = shell_class(host.engine, prompter=prompter, crashes=crashes, window=frame)
        _say_hosting(shell, config, host)
    else:
        prompter.close()  # the host has the vault
        shell = shell_class(ClientSource(attached.client), crashes=crashes, config=config,
                            window=frame)
    shell.quitRequested.connect(quit_requested.set)
    host_gone = asyncio.Event()
    shell.hostGone.connect(host_gone.set)
    try:
        shell.start(unlock_vault=not args.demo, show=not args.hidden)
        if quit_early.is_set():  # asked while it started: as Quit asks now
            shell.request_quit()
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
