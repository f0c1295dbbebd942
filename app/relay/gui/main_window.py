"""MainWindow: places the docks, owns the menus, toolbar and status bar, where it shows the
window's :class:`~relay.gui.messages.Messages` (errors and passing messages).

It holds no state and no logic: its actions are signals the shell wires up.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtGui import QAction, QCloseEvent, QIcon, QKeySequence, QShowEvent
from PySide6.QtWidgets import (
    QDockWidget,
    QMainWindow,
    QSizePolicy,
    QWidget,
)

from relay.gui import theme
from relay.gui.fit import ElidedLabel, scrolled
from relay.gui.messages import Messages, StatusBarPresenter


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
        lower = [handoff, *placeholders]
        self._place(sessions, stream, lower)
        for dock in (sessions, *lower, *beside_stream):
            _scroll_when_narrow(dock)
        for dock in beside_stream:  # tabbed behind the stream, which stays raised
            self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
            self.tabifyDockWidget(stream, dock)
        stream.raise_()
        #: the docks' places and sizes as built (as first shown, once it is): View → Reset
        #: layout goes back to them
        self.default_layout = self.saveState()
        self._shown = False
        self._menus(sessions, stream, [*lower, *beside_stream])
        #: the one way any part of the window shows an error or a passing message
        self.messages = messages if messages is not None else Messages(self)
        self.status = StatusBarPresenter(self.messages, self.statusBar())
        # a long message or data folder is cut (whole in the tooltip), never widening the window
        self.status.error_label.setSizePolicy(QSizePolicy.Policy.Ignored,
                                              QSizePolicy.Policy.Preferred)
        self.home_label = ElidedLabel()
        theme.style(self.home_label, "color: $MUTED;")
        self.statusBar().addPermanentWidget(self.home_label)

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

    def _menus(self, sessions: QDockWidget, stream: QDockWidget,
               lower: Sequence[QDockWidget]) -> None:
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
        view_menu = bar.addMenu("&View")
        for dock in (sessions, stream, *lower):
            view_menu.addAction(dock.toggleViewAction())
        view_menu.addSeparator()
        self.reset_layout_action = QAction("&Reset layout", self)
        self.reset_layout_action.setObjectName("resetLayoutAction")
        self.reset_layout_action.setToolTip("Every panel back to where it was and its size "
                                            "when Relay started")
        self.reset_layout_action.triggered.connect(self.reset_layout)
        view_menu.addAction(self.reset_layout_action)
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


def _scroll_when_narrow(dock: QDockWidget) -> None:
    """``dock``'s content in a scroll area: a dock that needs more room than a small screen
    has (the designer's toolbar, the History dock's diff, a wallet card) scrolls there instead
    of making the window larger than the screen, its status bar out of sight. The stream is
    the one dock left out: its event list scrolls itself and its header is cut to fit."""
    dock.setWidget(scrolled(dock.widget(), f"{dock.objectName()}Scroll"))
