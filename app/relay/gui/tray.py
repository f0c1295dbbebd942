"""RelayTray: the system-tray icon (show window, new session, quit) and its notifications.

While any session needs the user (a question waits) or a limit blocks it, the icon wears a
badge (a dot with their count) and the menu lists those sessions first; a click shows that
session's stream.

Where the platform has no tray (offscreen, some Linux desktops) the icon is
built but never shown; everything else keeps working, and notifications are
still kept in :attr:`RelayTray.notifications` (the window's status bar shows them).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from PySide6.QtCore import QObject, QRectF, Qt, Signal, SignalInstance
from PySide6.QtGui import QAction, QColor, QFont, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from relay.core.models import SessionRow
from relay.core.present import clip
from relay.gui import theme
from relay.gui.viewmodels.sessions import state_look

log = logging.getLogger(__name__)


#: how long a notification balloon stays (where the platform honours it)
NOTIFY_MS = 10_000


@dataclass(frozen=True, slots=True)
class Notification:
    title: str
    message: str
    warning: bool = False


def tooltip_text(running: int, attention: int = 0) -> str:
    text = f"Relay — {running} running session{'s' if running != 1 else ''}"
    return text + (f" · {attention} need{'s' if attention == 1 else ''} you" if attention
                   else "")


def _item_text(session: SessionRow) -> str:
    """'needs input — Add the notes', 'waiting · 3m 12s — …' (the countdown as of now)."""
    first = session.task.splitlines()[0] if session.task.strip() else session.id
    return f"{state_look(session).word} — {clip(first, 48)}"


def badged(icon: QIcon, count: int, asks: bool, size: int = 64) -> QIcon:
    """``icon`` with a badge at its lower right: a dot (the needs-input colour when a
    question waits, else the warning colour) holding ``count``."""
    pixmap = icon.pixmap(size, size)
    if pixmap.isNull():
        pixmap = QPixmap(size, size)
        pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    dot = QRectF(size * 0.42, size * 0.42, size * 0.58, size * 0.58)
    painter.setPen(QColor("white"))
    painter.setBrush(QColor(theme.NEEDS_INPUT if asks else theme.WARNING))
    painter.drawEllipse(dot)
    font = QFont()
    font.setPixelSize(int(size * 0.4))
    font.setBold(True)
    painter.setFont(font)
    painter.drawText(dot, Qt.AlignmentFlag.AlignCenter, str(count) if count < 10 else "9+")
    painter.end()
    return QIcon(pixmap)


class RelayTray(QSystemTrayIcon):
    """Tray icon with a menu; its actions are signals the shell wires up.

    Signals:
        showRequested(), newSessionRequested(), quitRequested().
        sessionRequested(str): a session the menu lists as needing the user was clicked.
    """

    showRequested = Signal()
    newSessionRequested = Signal()
    quitRequested = Signal()
    sessionRequested = Signal(str)

    def __init__(self, icon: QIcon, parent: QObject | None = None) -> None:
        super().__init__(icon, parent)
        self.setObjectName("relayTray")
        self._icon = icon
        #: the sessions that need the user, as the menu lists them
        self.attention: list[SessionRow] = []
        self._attention_actions: list[QAction] = []
        self.menu = QMenu()
        self.menu.setObjectName("trayMenu")
        self.menu.aboutToShow.connect(self._retitle)  # a countdown reads as of now
        self._attention_end = self.menu.addSeparator()
        self._attention_end.setVisible(False)
        self.show_action = self._add("Show window", self.showRequested)
        self.new_action = self._add("New session…", self.newSessionRequested)
        self.menu.addSeparator()
        self.quit_action = self._add("Quit", self.quitRequested)
        self.setContextMenu(self.menu)
        self.activated.connect(self._on_activated)
        self.notifications: list[Notification] = []
        self._running = 0
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
        self._running = running
        self.setToolTip(tooltip_text(running, len(self.attention)))

    def set_attention(self, sessions: list[SessionRow]) -> None:
        """The sessions that need the user now: the badge, and the menu's first items."""
        if [(s.id, s.state) for s in sessions] == [(s.id, s.state) for s in self.attention]:
            return
        self.attention = list(sessions)
        for action in self._attention_actions:
            self.menu.removeAction(action)
        self._attention_actions = []
        for session in sessions:
            # no parent: the list below owns it, and dropping it deletes it
            action = QAction(_item_text(session))
            action.setIcon(state_look(session).qicon())
            action.setToolTip(session.task)
            action.triggered.connect(lambda _=False, sid=session.id: self.sessionRequested.emit(sid))
            self.menu.insertAction(self._attention_end, action)
            self._attention_actions.append(action)
        self._attention_end.setVisible(bool(sessions))
        self.setIcon(badged(self._icon, len(sessions), any(
            s.state == "needs_input" for s in sessions)) if sessions else self._icon)
        self.set_running(self._running)

    def _retitle(self) -> None:
        for action, session in zip(self._attention_actions, self.attention, strict=True):
            action.setText(_item_text(session))

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
