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

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

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
from relay.gui.board_backend import IntegrationsBackend
from relay.gui.bridge import TaskRunner
from relay.gui.docks.parts import detail_view
from relay.gui.integrations_text import applied_text, check_text, plan_text, remove_text, status
from relay.gui.messages import ErrorBanner

if TYPE_CHECKING:
    from relay.board.claude_setup import Applied
    from relay.board.integrations import ClaudeIntegration

CONTEXT = "integrations"
INTRO = ("Relay's hooks tell the host what each Claude Code session does (exact live states "
         "on the board, in Detect and the tray), bring the owner's comments to the session "
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
        self.rows: list[ClaudeIntegration] = []
        #: the plan shown, waiting for Apply: (folder, remove)
        self.pending: tuple[Path, bool] | None = None
        intro = QLabel(INTRO)
        intro.setWordWrap(True)
        theme.style(intro, "QLabel { color: $MUTED; }")
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
        self.detail = detail_view("integrationsDetail", "Reading Claude Code's settings…")
        self.error = ErrorBanner("integrationsError")
        self.setup_button = self._button("Set up…", "integrationsSetup",
                                         lambda: self.show_plan(remove=False))
        self.remove_button = self._button("Remove…", "integrationsRemove",
                                          lambda: self.show_plan(remove=True))
        self.apply_button = self._button("Apply", "integrationsApply", self.apply)
        self.cancel_button = self._button("Cancel", "integrationsCancel", self._cancel_plan)
        self.check_button = self._button("Check again", "integrationsCheck", self.load)
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

    def _button(self, text: str, name: str, slot: Callable[[], None]) -> QPushButton:
        button = QPushButton(text)
        button.setObjectName(name)
        button.clicked.connect(slot)
        return button

    # -- reading --------------------------------------------------------------------------

    def load(self) -> None:
        """Read every folder's check and plan (read-only)."""
        self.error.hide()
        self.tasks.start(self.backend.claude(), context=CONTEXT, on_done=self._listed)

    def _listed(self, rows: list[ClaudeIntegration]) -> None:
        keep = self.current()
        self.pending = None
        self.rows = rows
        self.table.setRowCount(len(rows))
        for row, found in enumerate(rows):
            state = QTableWidgetItem(status(found.check))
            state.setForeground(theme.colour("OK" if found.ok else "WARNING"))
            for col, item in enumerate((QTableWidgetItem(str(found.target.config_dir)),
                                        QTableWidgetItem(found.target.label), state)):
                self.table.setItem(row, col, item)
        dirs = [r.target.config_dir for r in rows]
        at = dirs.index(keep.target.config_dir) if keep and keep.target.config_dir in dirs else 0
        if rows:
            self.table.selectRow(at)
        self._selected()

    def current(self) -> ClaudeIntegration | None:
        rows = self.table.selectionModel().selectedRows()
        return self.rows[rows[0].row()] if rows and rows[0].row() < len(self.rows) else None

    def _selected(self) -> None:
        self.pending = None
        found = self.current()
        if found is not None:
            self._show(f"What is in place in {found.target.label}", check_text(found.check))
        self._buttons()

    def _show(self, title: str, text: str) -> None:
        self.title.setText(title)
        self.detail.setPlainText(text)

    def _buttons(self) -> None:
        found = self.current()
        planning = self.pending is not None
        self.check_button.setEnabled(not planning)
        self.setup_button.setEnabled(found is not None and not planning)
        self.remove_button.setEnabled(found is not None and not planning)
        self.apply_button.setVisible(planning)
        self.cancel_button.setVisible(planning)

    # -- intents --------------------------------------------------------------------------

    def show_plan(self, remove: bool) -> None:
        """What Set up (or Remove) would change in the selected folder, read now; Apply
        does it."""
        found = self.current()
        if found is None:
            return
        self.error.hide()
        folder = found.target.config_dir

        def planned(fresh: list[ClaudeIntegration]) -> None:
            now = fresh[0] if fresh else found
            self.pending = (folder, remove)
            verb = "Remove" if remove else "Set up"
            self._show(f"{verb} in {now.target.label}: the plan (nothing has changed yet)",
                       remove_text(now.check) if remove else plan_text(now.plan))
            self.apply_button.setText(verb)
            self._buttons()

        self.tasks.start(self.backend.claude(folder), context=CONTEXT, on_done=planned)

    def _cancel_plan(self) -> None:
        self.pending = None
        self._selected()

    def apply(self) -> None:
        if self.pending is None:
            return
        folder, remove = self.pending
        self.apply_button.setEnabled(False)

        def applied(done: list[Applied]) -> None:
            self.apply_button.setEnabled(True)
            self.pending = None
            self._show("Done", applied_text(done))
            self._buttons()
            self.tasks.start(self.backend.claude(), context=CONTEXT, on_done=self._relisted)

        self.tasks.start(self.backend.apply(folder, remove), context=CONTEXT, on_done=applied)

    def _relisted(self, rows: list[ClaudeIntegration]) -> None:
        done = self.detail.toPlainText()
        self._listed(rows)
        self.detail.appendPlainText(f"\n{done}")  # what was just done stays in sight

    def show_error(self, message: str, hint: str = "") -> None:
        self.error.show_error(message, hint)
        self.apply_button.setEnabled(True)
