"""The Help menu's dialogs: the keyboard shortcut sheet and About Relay.

:class:`HelpDialogs` opens them and Edit → Preferences… (:mod:`relay.gui.preferences`),
one of each at a time. The shortcut sheet is read from the window itself — every QAction under it that has a
shortcut, with the menu it is in — so it cannot drift from what the keys do. Both dialogs
are non-modal (opened with ``show()``, never a nested ``exec()``).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import QObject, QUrl, qVersion
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QHeaderView,
    QLabel,
    QMenu,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from relay import __version__
from relay.core.config import env_overrides
from relay.gui import theme
from relay.gui.messages import Messages
from relay.gui.preferences import LIVE, PreferencesDialog

LICENCE = "Proprietary (LicenseRef-Proprietary); all rights reserved."


def action_name(action: QAction) -> str:
    """An action's text as a person reads it: no mnemonic ampersands, no trailing dots."""
    return action.text().replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("…. ")


def _where(action: QAction) -> str:
    """The menu an action is in, else the panel (dock) it belongs to."""
    for owner in action.associatedObjects():
        if isinstance(owner, QMenu) and owner.title():
            return action_name(owner.menuAction())
    holder = action.parent()
    while holder is not None and not isinstance(holder, QDockWidget):
        holder = holder.parent()
    return holder.windowTitle() if isinstance(holder, QDockWidget) else ""


def shortcut_rows(root: QWidget) -> list[tuple[str, str, str]]:
    """(where, action, keys) for every action under ``root`` with a shortcut, by where
    (its menu, else its panel)."""
    seen: set[int] = set()
    rows: list[tuple[str, str, str]] = []
    for action in [*root.actions(), *root.findChildren(QAction)]:
        keys = [k for k in action.shortcuts() if not k.isEmpty()]
        if not keys or id(action) in seen:
            continue
        seen.add(id(action))
        text = " or ".join(k.toString(QKeySequence.SequenceFormat.NativeText) for k in keys)
        rows.append((_where(action), action_name(action), text))
    return sorted(rows, key=lambda row: (row[0] == "", row[0], row[1]))


class ShortcutSheet(QDialog):
    """A table of the window's keyboard shortcuts (read from its actions when opened)."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.setObjectName("shortcutSheet")
        self.setWindowTitle("Keyboard shortcuts")
        rows = shortcut_rows(window)
        self.table = QTableWidget(len(rows), 3)
        self.table.setObjectName("shortcutTable")
        self.table.setHorizontalHeaderLabels(["Where", "Action", "Keys"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for line, row in enumerate(rows):
            for column, text in enumerate(row):
                self.table.setItem(line, column, QTableWidgetItem(text))
        self.table.resizeRowsToContents()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        for column in (0, 2):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addWidget(buttons)
        self.resize(520, min(480, 80 + 30 * len(rows)))

    def rows(self) -> list[tuple[str, str, str]]:
        """What the table shows, row by row."""
        def text(row: int, column: int) -> str:
            item = self.table.item(row, column)
            return item.text() if item is not None else ""

        return [(text(r, 0), text(r, 1), text(r, 2)) for r in range(self.table.rowCount())]


def about_html(home: Path | None) -> str:
    """About Relay: version, data folder, licence, links."""
    lines = [f"<h3>Relay {html.escape(__version__)}</h3>",
             "<p>Runs your AI coding agents in their own git worktrees, shows them live, and "
             "hands a task to the next account or provider when one runs out.</p>"]
    if home is not None:
        folder = QUrl.fromLocalFile(str(home)).toString()
        logs = QUrl.fromLocalFile(str(home / "logs")).toString()
        lines.append(f"<p><b>Data folder:</b> <a href='{folder}'>{html.escape(str(home))}</a>"
                     f" · <a href='{logs}'>logs</a><br>"
                     f"<span style='color:{theme.MUTED}'>set RELAY_HOME to move it; "
                     "<code>relay-cli doctor</code> checks the installation</span></p>")
    lines.append(f"<p><b>Licence:</b> {html.escape(LICENCE)}<br>"
                 f"Built with Qt {html.escape(qVersion())} through PySide6 "
                 f"{html.escape(pyside_version)} (LGPLv3): "
                 "<a href='https://www.qt.io/licensing/open-source-lgpl-obligations'>Qt "
                 "licensing</a> · <a href='https://doc.qt.io/qtforpython-6/'>Qt for "
                 "Python</a></p>")
    return "".join(lines)


class AboutDialog(QDialog):
    """About Relay (the links open in the desktop's browser / file manager)."""

    def __init__(self, home: Path | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("aboutDialog")
        self.setWindowTitle("About Relay")
        self.home = home
        self.text = QLabel()
        self.text.setObjectName("aboutText")
        self.text.setWordWrap(True)
        self.text.setOpenExternalLinks(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.text)
        layout.addWidget(buttons)
        self.setMinimumWidth(440)
        self._restyle()
        theme.notifier().changed.connect(self._restyle)

    def _restyle(self) -> None:
        """The text in the theme's colours of now (again on a theme change)."""
        self.text.setText(about_html(self.home))


class HelpDialogs(QObject):
    """Opens the Help menu's dialogs and Preferences for a window, one of each (non-modal):
    raised if open, else made and shown. ``home()`` is the data folder whose relay.toml
    Preferences writes (None in a window that is the client of a remote host)."""

    def __init__(self, window: QWidget, messages: Messages, home: Callable[[], Path | None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.window = window
        self.messages = messages
        self.home = home
        #: the dialogs made, by kind
        self.dialogs: dict[str, QDialog] = {}

    def _open(self, key: str, make: Callable[[], QDialog]) -> QDialog:
        dialog = self.dialogs.get(key)
        if dialog is None or not dialog.isVisible():
            dialog = self.dialogs[key] = make()
            dialog.show()
        dialog.raise_()
        return dialog

    def open_shortcuts(self) -> QDialog:
        """Help → Keyboard shortcuts: read from the window's actions now."""
        return self._open("shortcuts", lambda: ShortcutSheet(self.window))

    def open_about(self) -> QDialog:
        return self._open("about", lambda: AboutDialog(self.home(), self.window))

    def open_preferences(self) -> QDialog | None:
        """Edit → Preferences…: the data folder's relay.toml."""
        home = self.home()
        if home is None:
            self.messages.error("settings", "This window is connected to a host on another "
                                "machine: its settings are in that host's data folder.",
                                "Change them there (Preferences in its window, or relay.toml).")
            return None

        def make() -> QDialog:
            dialog = PreferencesDialog(home, self.window)
            dialog.saved.connect(self._saved)
            return dialog

        return self._open("preferences", make)

    def _saved(self, changes: dict[str, object]) -> None:
        later = [name for name in changes if name not in LIVE]
        app = QApplication.instance()
        # RELAY_THEME, when set, wins over relay.toml here as at start
        if "gui_theme" in changes and "gui_theme" not in env_overrides() \
                and isinstance(app, QApplication):
            theme.apply(app, str(changes["gui_theme"] or "system"))
        self.messages.notice("Preferences saved" + (
            f"; {', '.join(later)} take effect when Relay next starts." if later else "."))

    def close(self) -> None:
        for dialog in self.dialogs.values():
            dialog.close()
