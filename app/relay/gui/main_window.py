"""MainWindow: places the docks, owns the menus, toolbar and status bar, where it shows the
window's :class:`~relay.gui.messages.Messages` (errors and passing messages).

It holds no state and no logic: its actions are signals the shell wires up.

:meth:`MainWindow.frame` is the window as ``relay`` first paints it, before the engine stack is
imported (:mod:`relay.gui.launch`): menus, toolbar, status bar and every dock in its place,
each saying "Starting…"; the shell then puts its docks in their places
(:meth:`MainWindow.install_docks`). This module imports Qt and the few light pieces the frame
needs, nothing of the engine.
"""

from __future__ import annotations

from collections.abc import Sequence

import shiboken6
from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtGui import QAction, QCloseEvent, QIcon, QKeySequence, QShowEvent
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QMainWindow,
    QMenu,
    QSizePolicy,
    QWidget,
)

from relay.gui import theme
from relay.gui.fit import ElidedLabel, scrolled
from relay.gui.messages import Messages, StatusBarPresenter

#: the docks' titles and object names in the order :class:`MainWindow` takes them: sessions,
#: stream, handoff, the panels tabbed with the handoff, those tabbed behind the stream (the
#: frame's waiting docks carry them; a test checks they are the shell's docks')
DOCKS = (("Sessions", "sessionsDock"), ("Live stream", "streamDock"),
         ("Handoff", "handoffDock"), ("Wallet", "walletDock"), ("Detect", "detectDock"),
         ("Knowledge", "knowledgeDock"), ("Board", "boardDock"),
         ("Pipelines", "pipelinesDock"), ("History", "historyDock"))
#: how many of :data:`DOCKS`, after the first three, are tabbed with the handoff
LOWER_PANELS = 3
#: what the frame's docks say until the shell's docks take their places
WAITING_TEXT = "Starting…"


class MainWindow(QMainWindow):
    """Sessions on the left with the Handoff panel (and other panels) below, the stream right
    (tabbed with the panels that need room, e.g. the pipeline designer's canvas).

    Signals:
        newSessionRequested(), stopRequested(), handoffRequested(), quitRequested(),
        closeRequested() (the window's close button: the shell hides it or quits),
        integrationsRequested() (Tools → Integrations…), preferencesRequested() (Edit →
        Preferences…), welcomeRequested(), shortcutsRequested(), aboutRequested() (Help).
    """

    newSessionRequested = Signal()
    stopRequested = Signal()
    handoffRequested = Signal()
    quitRequested = Signal()
    closeRequested = Signal()
    integrationsRequested = Signal()
    preferencesRequested = Signal()
    welcomeRequested = Signal()
    shortcutsRequested = Signal()
    aboutRequested = Signal()

    def __init__(self, sessions: QDockWidget, stream: QDockWidget, handoff: QDockWidget,
                 placeholders: Sequence[QDockWidget], icon: QIcon | None = None,
                 parent: QWidget | None = None, *,
                 beside_stream: Sequence[QDockWidget] = (),
                 messages: Messages | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("relayMainWindow")
        self.setWindowTitle("Relay")
        if icon is not None:
            self.setWindowIcon(icon)
        self._fit_to_screen(1360, 860)
        self.setDockOptions(QMainWindow.DockOption.AnimatedDocks
                            | QMainWindow.DockOption.AllowTabbedDocks
                            | QMainWindow.DockOption.AllowNestedDocks)
        self.new_action = self._action("&New session…", QKeySequence.StandardKey.New,
                                       self.newSessionRequested)
        self.stop_action = self._action("&Stop session", QKeySequence("Ctrl+."), self.stopRequested)
        self.stop_action.setEnabled(False)
        self.handoff_action = self._action("&Hand off now", QKeySequence("Ctrl+Shift+H"),
                                           self.handoffRequested)
        self.handoff_action.setToolTip("Pause the shown session at a safe point and hand it to "
                                       "the next provider (or the one named in the Handoff panel)")
        self.handoff_action.setEnabled(False)
        self.quit_action = self._action("&Quit", QKeySequence.StandardKey.Quit, self.quitRequested)
        #: "Start Relay at login" (the shell writes or removes the login entry)
        self.login_action = QAction("Start Relay at &login", self)
        self.login_action.setObjectName("loginAction")
        self.login_action.setCheckable(True)
        self.login_action.setToolTip("Start Relay in the tray when you log in, so your "
                                     "sessions have a host")
        self._docks: list[QDockWidget] = []
        self._shown = False
        self._menus()
        #: the one way any part of the window shows an error or a passing message
        self.messages = messages if messages is not None else Messages(self)
        self.status = StatusBarPresenter(self.messages, self.statusBar())
        # a long message or data folder is cut (whole in the tooltip), never widening the window
        self.status.error_label.setSizePolicy(QSizePolicy.Policy.Ignored,
                                              QSizePolicy.Policy.Preferred)
        self.home_label = ElidedLabel()
        theme.style(self.home_label, "color: $MUTED;")
        self.statusBar().addPermanentWidget(self.home_label)
        self.install_docks(sessions, stream, handoff, placeholders, beside_stream=beside_stream)

    @classmethod
    def frame(cls, icon: QIcon | None = None, text: str = WAITING_TEXT) -> MainWindow:
        """The window before its docks exist: every dock (:data:`DOCKS`) in its place, each
        saying ``text``, until :meth:`install_docks` puts the real ones there."""
        docks = [_waiting_dock(title, name, text) for title, name in DOCKS]
        lower = 3 + LOWER_PANELS
        return cls(docks[0], docks[1], docks[2], docks[3:lower], icon,
                   beside_stream=docks[lower:])

    @property
    def waiting(self) -> bool:
        """Whether the docks are still the frame's (:meth:`frame`)."""
        return any(dock.property(_WAITING) for dock in self._docks)

    def install_docks(self, sessions: QDockWidget, stream: QDockWidget, handoff: QDockWidget,
                      placeholders: Sequence[QDockWidget], *,
                      beside_stream: Sequence[QDockWidget] = ()) -> None:
        """Place the docks: sessions top left, the handoff panel below them tabbed with
        ``placeholders``, the stream right with ``beside_stream`` tabbed behind it. Docks
        placed before (the frame's) give up their places: the new ones take them as they are
        now (tabs, sizes, what the user closed), matched by object name."""
        state = self.saveState() if self._docks else None
        for dock in self._docks:
            self.removeDockWidget(dock)
            shiboken6.delete(dock)  # at once: its place and its name are the new dock's
        lower = [handoff, *placeholders]
        self._place(sessions, stream, lower)
        for dock in (sessions, *lower, *beside_stream):
            _scroll_when_narrow(dock)
        for dock in beside_stream:  # tabbed behind the stream, which stays raised
            self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
            self.tabifyDockWidget(stream, dock)
        stream.raise_()
        self._docks = [sessions, stream, *lower, *beside_stream]
        self._fill_view_menu()
        if state is not None:
            self.restoreState(state)
        if state is None or not self._shown:
            #: the docks' places and sizes as built (as first shown, once it is): View →
            #: Reset layout goes back to them
            self.default_layout = self.saveState()

    def _fit_to_screen(self, width: int, height: int) -> None:
        """``width`` × ``height``; on a smaller screen the window opens maximized, so its
        frame fits too and the status bar (where the host is) is on screen."""
        screen = self.screen()
        if screen is not None:
            room = screen.availableGeometry()
            if room.width() < width or room.height() < height:
                self.setWindowState(self.windowState() | Qt.WindowState.WindowMaximized)
            width, height = min(width, room.width()), min(height, room.height())
        self.resize(width, height)

    def _action(self, text: str, shortcut: QKeySequence | QKeySequence.StandardKey | None,
                signal: SignalInstance, name: str = "") -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(shortcut)
        if name:
            action.setObjectName(name)
        action.triggered.connect(signal)
        return action

    def _place(self, sessions: QDockWidget, stream: QDockWidget,
               lower: Sequence[QDockWidget]) -> None:
        """Sessions top left; below them the Handoff panel (raised) tabbed with the rest."""
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, sessions)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, stream)
        for dock in lower:
            self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)
        self.splitDockWidget(sessions, lower[0], Qt.Orientation.Vertical)
        for dock in lower[1:]:
            self.tabifyDockWidget(lower[0], dock)
        lower[0].raise_()
        self.resizeDocks([sessions, stream], [600, 760], Qt.Orientation.Horizontal)
        self.resizeDocks([sessions, lower[0]], [300, 520], Qt.Orientation.Vertical)

    def _menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        file_menu.addAction(self.new_action)
        file_menu.addSeparator()
        file_menu.addAction(self.login_action)
        file_menu.addAction(self.quit_action)
        edit_menu = bar.addMenu("&Edit")
        self.preferences_action = self._action("&Preferences…", QKeySequence("Ctrl+,"),
                                               self.preferencesRequested, "preferencesAction")
        self.preferences_action.setMenuRole(QAction.MenuRole.PreferencesRole)
        edit_menu.addAction(self.preferences_action)
        session_menu = bar.addMenu("&Session")
        session_menu.addAction(self.stop_action)
        session_menu.addAction(self.handoff_action)
        self._view_menu: QMenu = bar.addMenu("&View")
        self.reset_layout_action = QAction("&Reset layout", self)
        self.reset_layout_action.setObjectName("resetLayoutAction")
        self.reset_layout_action.setToolTip("Every panel back to where it was and its size "
                                            "when Relay started")
        self.reset_layout_action.triggered.connect(self.reset_layout)
        tools_menu = bar.addMenu("&Tools")
        self.integrations_action = QAction("&Integrations…", self)
        self.integrations_action.setObjectName("integrationsAction")
        self.integrations_action.setToolTip("Relay's hooks and MCP server in Claude Code's "
                                            "settings, per configuration folder")
        self.integrations_action.triggered.connect(self.integrationsRequested)
        tools_menu.addAction(self.integrations_action)
        self._help_menu()
        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setMovable(False)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        toolbar.addAction(self.new_action)
        toolbar.addAction(self.stop_action)
        toolbar.addAction(self.handoff_action)

    def _fill_view_menu(self) -> None:
        """A switch per dock, then Reset layout."""
        self._view_menu.clear()
        for dock in self._docks:
            self._view_menu.addAction(dock.toggleViewAction())
        self._view_menu.addSeparator()
        self._view_menu.addAction(self.reset_layout_action)

    def _help_menu(self) -> None:
        help_menu = self.menuBar().addMenu("&Help")
        self.welcome_action = self._action("&Welcome…", None, self.welcomeRequested,
                                           "welcomeAction")
        self.shortcuts_action = self._action("&Keyboard shortcuts…", None,
                                             self.shortcutsRequested, "shortcutsAction")
        self.shortcuts_action.setShortcuts([QKeySequence("F1"), QKeySequence("Ctrl+/")])
        self.about_action = self._action("&About Relay", None, self.aboutRequested,
                                         "aboutAction")
        self.about_action.setMenuRole(QAction.MenuRole.AboutRole)
        for action in (self.welcome_action, self.shortcuts_action, self.about_action):
            help_menu.addAction(action)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._shown:  # laid out at its first size
            self._shown = True
            self.default_layout = self.saveState()

    def reset_layout(self) -> None:
        """Every dock back to its place, tab and size as the window was built (shown)."""
        self.restoreState(self.default_layout)

    # -- status -------------------------------------------------------------------------

    def set_home(self, text: str) -> None:
        self.home_label.setText(text)
        self.home_label.setMaximumWidth(self.home_label.sizeHint().width())

    def closeEvent(self, event: QCloseEvent) -> None:
        """The shell decides: hide to the tray, or quit (where there is no tray)."""
        event.ignore()
        self.closeRequested.emit()


_WAITING = "waitingDock"


def _waiting_dock(title: str, name: str, text: str) -> QDockWidget:
    """A dock of the frame: the real dock's title, saying ``text`` (its object name is the
    real one's, so that the real dock takes its place)."""
    dock = QDockWidget(title)
    dock.setObjectName(name)
    dock.setProperty(_WAITING, True)
    label = QLabel(text)
    label.setObjectName("waitingLabel")
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    theme.style(label, "color: $MUTED;")
    dock.setWidget(label)
    return dock


def _scroll_when_narrow(dock: QDockWidget) -> None:
    """``dock``'s content in a scroll area: a dock that needs more room than a small screen
    has (the designer's toolbar, the History dock's diff, a wallet card) scrolls there instead
    of making the window larger than the screen, its status bar out of sight. The stream is
    the one dock left out: its event list scrolls itself and its header is cut to fit."""
    dock.setWidget(scrolled(dock.widget(), f"{dock.objectName()}Scroll"))
