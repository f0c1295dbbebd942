"""The window's part of the crash path: one non-modal dialog per distinct crash.

:class:`relay.core.crash.CrashHandler` logs a crash and decides whether it is new;
:class:`CrashDialogs` shows it. Crashes happen on any thread: they reach the GUI thread
through a queued signal. The same crash again updates its dialog's count and never opens
another (closed, it stays closed); past :data:`MAX_DIALOGS` distinct crashes the newest
dialog says how many more there were — the log has them all.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QMessageBox

from relay.core.crash import Crash, CrashHandler, CrashKey

#: at most this many crash dialogs are ever opened in one window's life
MAX_DIALOGS = 3


class CrashDialogs(QObject):
    """Shows crashes; its :meth:`show` and :meth:`again` may be called from any thread.

    Signals:
        shown(object): a crash (:class:`~relay.core.crash.Crash`) reached the GUI thread.
    """

    shown = Signal(object)
    _arrived = Signal(object, bool)

    def __init__(self, log_file: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.log_file = log_file
        self.dialogs: dict[CrashKey, QMessageBox] = {}
        self._where: dict[CrashKey, str] = {}
        self.more = 0
        self._arrived.connect(self._on_arrived, Qt.ConnectionType.QueuedConnection)

    def show(self, crash: Crash) -> None:
        self._arrived.emit(crash, True)

    def again(self, crash: Crash) -> None:
        self._arrived.emit(crash, False)

    def _on_arrived(self, crash: Crash, new: bool) -> None:
        box = self.dialogs.get(crash.key)
        if box is not None:  # a repeat: the count changed
            box.setText(self._headline(crash))
        elif new and len(self.dialogs) < MAX_DIALOGS:
            self._open(crash)
        elif new:  # no more dialogs: the newest one says how many more there were
            self.more += 1
            last = next(reversed(self.dialogs))
            self.dialogs[last].setInformativeText(self._informative(self._where[last]))
        if new:
            self.shown.emit(crash)

    def _open(self, crash: Crash) -> QMessageBox:
        box = QMessageBox(QMessageBox.Icon.Critical, "Relay crashed", self._headline(crash),
                          QMessageBox.StandardButton.Close)
        box.setObjectName("crashDialog")
        self._where[crash.key] = crash.where
        box.setInformativeText(self._informative(crash.where))
        box.setDetailedText(crash.details)
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)  # kept to count repeats
        self.dialogs[crash.key] = box
        box.show()
        return box

    @staticmethod
    def _headline(crash: Crash) -> str:
        times = f" (it happened {crash.count} times)" if crash.count > 1 else ""
        return f"Relay hit an internal error: {crash.what}{times}"

    def _informative(self, where: str) -> str:
        more = (f"\n\n{self.more} more internal error{'s' if self.more > 1 else ''} "
                "happened since; the log has them.") if self.more else ""
        return (f"Where: {where}.\nThe details are in {self.log_file} — please report it. "
                "Relay keeps running, but what it was doing may not have finished." + more)

    def close_all(self) -> None:
        """Close and forget every crash dialog."""
        for box in self.dialogs.values():
            box.close()
            box.deleteLater()
        self.dialogs.clear()
        self._where.clear()


def window_crash_handler(log_file: Path, parent: QObject | None = None
                         ) -> tuple[CrashHandler, CrashDialogs]:
    """A crash handler whose crashes show in :class:`CrashDialogs` (install it with
    ``handler.installed()`` and ``handler.watching(loop)``)."""
    dialogs = CrashDialogs(log_file, parent)
    handler = CrashHandler(log_file, dialogs.show, dialogs.again, context={"front end": "relay"})
    return handler, dialogs
