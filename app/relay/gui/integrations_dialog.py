"""The Integrations dialog (Tools → Integrations…): Relay's hooks and MCP server in Claude
Code's settings, per configuration folder.

It lists the Claude configuration folders Relay knows — the default one and each wallet
account's — with what ``check`` reports for each (read-only), and offers Set up and Remove:
either first shows the plan (what would change in that folder's settings.json), and only
Apply changes anything (a backup first; the user's own settings and hooks stay as they were).
The work is the host's (``engine.integrations`` or ``client.integrations``, through
:class:`~relay.gui.board_backend.IntegrationsBackend`); errors show in place.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from relay.gui import theme
from relay.gui.board_backend import ConfigFolder, IntegrationsBackend
from relay.gui.bridge import TaskRunner
from relay.gui.docks.parts import detail_view
from relay.gui.integrations_text import check_status, describe
from relay.gui.messages import ErrorBanner

CONTEXT = "integrations"
INTRO = ("Relay's hooks tell the host what each Claude Code session does — exact live states "
         "on the board, in Detect and the tray —, bring the owner's comments to the session "
         "and ask the guard before a tool runs. Set up shows what it would change first.")


class IntegrationsDialog(QDialog):
    """The folders, what is in place in the selected one, Set up / Remove with the plan first."""

    def __init__(self, backend: IntegrationsBackend, tasks: TaskRunner,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("integrationsDialog")
        self.setWindowTitle("Integrations")
        self.backend = backend
        self.tasks = tasks
        self.folders: list[ConfigFolder] = []
        #: the plan shown, waiting for Apply: (folder, remove)
        self.pending: tuple[ConfigFolder, bool] | None = None
        intro = QLabel(INTRO)
        intro.setWordWrap(True)
        intro.setStyleSheet(f"QLabel {{ color: {theme.MUTED}; }}")
        self.table = QTableWidget(0, 3)
        self.table.setObjectName("integrationsFolders")
        self.table.setHorizontalHeaderLabels(["Claude configuration folder", "For", "Relay"])
        self.table.verticalHeader().hide()
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col in (1, 2):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        self.table.itemSelectionChanged.connect(self._selected)
        self.title = QLabel()
        self.title.setObjectName("integrationsTitle")
        self.title.setStyleSheet("QLabel { font-weight: bold; }")
        self.detail = detail_view("integrationsDetail", "Select a folder to see what is set up.")
        self.error = ErrorBanner("integrationsError")
        self.setup_button = self._button("Set up…", "integrationsSetup",
                                         lambda: self.show_plan(remove=False))
        self.remove_button = self._button("Remove…", "integrationsRemove",
                                          lambda: self.show_plan(remove=True))
        self.apply_button = self._button("Apply", "integrationsApply", self.apply)
        self.cancel_button = self._button("Cancel", "integrationsCancel", self._cancel_plan)
        self.check_button = self._button("Check again", "integrationsCheck", self.check)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        actions = QHBoxLayout()
        for button in (self.check_button, self.setup_button, self.remove_button):
            actions.addWidget(button)
        actions.addStretch(1)
        actions.addWidget(self.apply_button)
        actions.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.table, 2)
        layout.addWidget(self.error)
        layout.addWidget(self.title)
        layout.addWidget(self.detail, 3)
        layout.addLayout(actions)
        layout.addWidget(close)
        self.resize(760, 560)
        self._buttons()

    def _button(self, text: str, name: str, slot: Any) -> QPushButton:
        button = QPushButton(text)
        button.setObjectName(name)
        button.clicked.connect(slot)
        return button

    # -- reading --------------------------------------------------------------------------

    def load(self) -> None:
        """List the folders, then check each (read-only)."""
        self.tasks.start(self.backend.folders(), context=CONTEXT, on_done=self._listed)

    def _listed(self, folders: list[ConfigFolder]) -> None:
        self.folders = folders
        self.table.setRowCount(len(folders))
        for row, folder in enumerate(folders):
            where = str(folder.path) if folder.path is not None else "the default folder"
            for col, text in enumerate((where, folder.label, "checking…")):
                self.table.setItem(row, col, QTableWidgetItem(text))
            self._check(row, folder)
        if folders:
            self.table.selectRow(0)

    def _checked(self, row: int, report: Any) -> None:
        if row >= len(self.folders):
            return
        status, ok = check_status(report)
        item = QTableWidgetItem(status)
        item.setForeground(Qt.GlobalColor.darkGreen if ok else Qt.GlobalColor.darkYellow)
        item.setData(Qt.ItemDataRole.UserRole, report)
        self.table.setItem(row, 2, item)
        if row == self.current_row() and self.pending is None:
            self._show(f"What is in place in {self._name(row)}", describe(report))

    def current_row(self) -> int:
        rows = self.table.selectionModel().selectedRows()
        return rows[0].row() if rows else -1

    def _name(self, row: int) -> str:
        folder = self.folders[row]
        return folder.label if folder.path is None else f"{folder.label} ({folder.path})"

    def _selected(self) -> None:
        self.pending = None
        row = self.current_row()
        if row >= 0:
            item = self.table.item(row, 2)
            report = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
            self._show(f"What is in place in {self._name(row)}",
                       describe(report) if report is not None else "Checking…")
        self._buttons()

    def _show(self, title: str, text: str) -> None:
        self.title.setText(title)
        self.detail.setPlainText(text)

    def _buttons(self) -> None:
        chosen = self.current_row() >= 0
        planning = self.pending is not None
        for button in (self.setup_button, self.remove_button, self.check_button):
            button.setEnabled(chosen and not planning)
        self.apply_button.setVisible(planning)
        self.cancel_button.setVisible(planning)

    # -- intents --------------------------------------------------------------------------

    def _check(self, row: int, folder: ConfigFolder) -> None:
        def done(report: Any) -> None:
            self._checked(row, report)
        self.tasks.start(self.backend.check(folder.path), context=CONTEXT, on_done=done)

    def check(self) -> None:
        row = self.current_row()
        if row >= 0:
            self.error.hide()
            self._check(row, self.folders[row])

    def show_plan(self, remove: bool) -> None:
        """What Set up (or Remove) would change there; Apply does it."""
        row = self.current_row()
        if row < 0:
            return
        folder = self.folders[row]
        self.error.hide()
        self.tasks.start(self.backend.plan(folder.path, remove), context=CONTEXT,
                         on_done=lambda plan: self._planned(folder, remove, plan))

    def _planned(self, folder: ConfigFolder, remove: bool, plan: Any) -> None:
        self.pending = (folder, remove)
        verb = "Remove" if remove else "Set up"
        self._show(f"{verb} in {folder.label}: the plan (nothing has changed yet)",
                   describe(plan))
        self.apply_button.setText("Remove" if remove else "Set up")
        self._buttons()

    def _cancel_plan(self) -> None:
        self.pending = None
        self._selected()

    def apply(self) -> None:
        if self.pending is None:
            return
        folder, remove = self.pending
        self.tasks.start(self.backend.apply(folder.path, remove), context=CONTEXT,
                         on_done=lambda result: self._applied(folder, result))

    def _applied(self, folder: ConfigFolder, result: Any) -> None:
        self.pending = None
        self._buttons()
        self._show(f"Done in {folder.label}", describe(result))
        if folder in self.folders:
            self._check(self.folders.index(folder), folder)

    def show_error(self, message: str, hint: str = "") -> None:
        self.error.show_error(message, hint)
