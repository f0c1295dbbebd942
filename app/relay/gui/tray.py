"""RelayTray: the system-tray icon (show window, new session, quit) and its notifications.

Where the platform has no tray (offscreen, some Linux desktops) the icon is
built but never shown; everything else keeps working, and notifications are
still kept in :attr:`RelayTray.notifications` (the window's status bar shows them).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal, SignalInstance
from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

log = logging.getLogger(__name__)


#: how long a notification balloon stays (where the platform honours it)
NOTIFY_MS = 10_000


@dataclass(frozen=True, slots=True)
class Notification:
    title: str
    message: str
    warning: bool = False


def tooltip_text(running: int) -> str:
    return f"Relay — {running} running session{'s' if running != 1 else ''}"


class RelayTray(QSystemTrayIcon):
    """Tray icon with a menu; its actions are signals the shell wires up.

    Signals:
        showRequested(), newSessionRequested(), quitRequested().
    """

    showRequested = Signal()
    newSessionRequested = Signal()
    quitRequested = Signal()

    def __init__(self, icon: QIcon, parent: QObject | None = None) -> None:
        super().__init__(icon, parent)
        self.setObjectName("relayTray")
        self.menu = QMenu()
        self.menu.setObjectName("trayMenu")
        self.show_action = self._add("Show window", self.showRequested)
        self.new_action = self._add("New session…", self.newSessionRequested)
        self.menu.addSeparator()
        self.quit_action = self._add("Quit", self.quitRequested)
        self.setContextMenu(self.menu)
        self.activated.connect(self._on_activated)
        self.notifications: list[Notification] = []
        self.set_running(0)

    def _add(self, text: str, signal: SignalInstance) -> QAction:
        action = self.menu.addAction(text)
        action.triggered.connect(signal)
        return action

    @property
    def available(self) -> bool:
        return QSystemTrayIcon.isSystemTrayAvailable()

    def install(self) -> bool:
        """Show the icon if this platform has a tray; returns whether it is shown."""
        if not self.available:
            log.info("no system tray on this platform; the tray icon is not shown")
            return False
        self.show()
        return True

    def set_running(self, running: int) -> None:
        self.setToolTip(tooltip_text(running))

    def notify(self, title: str, message: str, warning: bool = False) -> None:
        """Show a notification balloon (when the icon is shown) and keep it in the list."""
        self.notifications.append(Notification(title, message, warning))
        if self.isVisible():
            icon = (QSystemTrayIcon.MessageIcon.Warning if warning
                    else QSystemTrayIcon.MessageIcon.Information)
            self.showMessage(title, message, icon, NOTIFY_MS)

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.showRequested.emit()
