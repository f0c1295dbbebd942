"""The GUI's composition root: builds the bridge, view-models, docks, window and tray.

All wiring between them lives here, so each piece stays small and testable.
"""

from __future__ import annotations

import asyncio

from PySide6.QtCore import QObject, Signal

from relay.core.engine import Engine
from relay.core.models import SessionSpec
from relay.gui.bridge import EngineBridge
from relay.gui.docks.placeholders import placeholder_docks
from relay.gui.docks.sessions_dock import SessionsDock
from relay.gui.docks.stream_dock import StreamDock
from relay.gui.main_window import MainWindow
from relay.gui.new_session_dialog import NewSessionDialog
from relay.gui.resources import app_icon
from relay.gui.tray import RelayTray
from relay.gui.viewmodels.sessions import SessionsViewModel
from relay.gui.viewmodels.stream import StreamViewModel
from relay.runtimes.base import RuntimeInfo
from relay.runtimes.registry import available_runtimes


class RelayShell(QObject):
    """Everything one Relay window needs, wired together.

    Signals:
        quitRequested(): the user asked to quit (menu, tray or closing the window).
    """

    quitRequested = Signal()

    def __init__(self, engine: Engine, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.engine = engine
        icon = app_icon()
        self.bridge = EngineBridge(engine, self)
        self.sessions_vm = SessionsViewModel(self.bridge, self)
        self.stream_vm = StreamViewModel(self.bridge, self)
        self.sessions_dock = SessionsDock(self.sessions_vm)
        self.stream_dock = StreamDock(self.stream_vm)
        self.placeholders = placeholder_docks()
        self.window = MainWindow(self.sessions_dock, self.stream_dock, self.placeholders, icon)
        self.window.set_home(f"Data folder: {engine.config.home}")
        self.tray = RelayTray(icon, self)
        self.runtime_infos: list[RuntimeInfo] = [
            RuntimeInfo(name, None, None) for name in available_runtimes()]
        self.dialog: NewSessionDialog | None = None
        self.last_repo = ""
        self._wire()

    def _wire(self) -> None:
        b, w, t = self.bridge, self.window, self.tray
        b.tasks.failed.connect(self._on_failed)
        b.sessionStarted.connect(self._on_started)
        self.sessions_dock.sessionSelected.connect(self.stream_vm.load)
        self.sessions_dock.newSessionRequested.connect(self.open_new_session_dialog)
        self.stream_dock.stopRequested.connect(self.stream_vm.stop)
        self.stream_vm.headerChanged.connect(
            lambda: w.stop_action.setEnabled(self.stream_vm.can_stop))
        self.sessions_vm.runningChanged.connect(t.set_running)
        w.newSessionRequested.connect(self.open_new_session_dialog)
        w.stopRequested.connect(self.stream_vm.stop)
        w.quitRequested.connect(self.quitRequested)
        t.showRequested.connect(self.show)
        t.newSessionRequested.connect(self.open_new_session_dialog)
        t.quitRequested.connect(self.quitRequested)

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Show the window and tray, read the sessions and probe the runtimes."""
        self.show()
        self.tray.install()
        self.sessions_vm.refresh()
        self.bridge.follow_other_processes()
        self.bridge.tasks.start(asyncio.to_thread(self.engine.runtime_infos),
                                context="runtimes", on_done=self._set_infos)

    def show(self) -> None:
        self.window.show()
        self.window.raise_()
        self.window.activateWindow()

    async def aclose(self) -> None:
        """Stop listening and cancel GUI tasks (the engine is closed by its owner)."""
        await self.bridge.aclose()
        self.tray.hide()
        self.window.hide()
        if self.dialog is not None:
            self.dialog.close()

    # -- intents ------------------------------------------------------------------------

    def open_new_session_dialog(self) -> NewSessionDialog:
        """Open (non-blocking) the new-session dialog; a valid form starts the session."""
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.raise_()
            return self.dialog
        dialog = NewSessionDialog(self.runtime_infos, self.window, repo=self.last_repo)
        dialog.specAccepted.connect(self.start_session)
        self.dialog = dialog
        dialog.open()
        return dialog

    def start_session(self, spec: SessionSpec) -> None:
        self.last_repo = str(spec.repo)
        self.bridge.start_session(spec, context="sessions")

    # -- reactions ----------------------------------------------------------------------

    def _set_infos(self, infos: list[RuntimeInfo]) -> None:
        self.runtime_infos = infos

    def _on_started(self, session_id: str) -> None:
        self.sessions_dock.select(session_id)
        self.stream_vm.load(session_id)
        self.sessions_vm.refresh()

    def _on_failed(self, context: str, message: str, hint: str) -> None:
        self.window.show_error(context, message, hint)
        if context == "stream":
            self.stream_dock.show_error(message, hint)
        elif context == "sessions":
            self.sessions_dock.show_error(message, hint)
