"""SessionsDock: the sessions table; selecting one shows it in the stream.

Its context menu hands an active session off now (to the next entry of its
chain) or opens the Handoff panel's target field ("Hand off to…").
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelection, QModelIndex, QPoint, Qt, Signal
from PySide6.QtWidgets import (
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from relay.core.states import ACTIVE_STATES
from relay.gui import theme
from relay.gui.docks.parts import row_table
from relay.gui.messages import ErrorBanner
from relay.gui.viewmodels.sessions import SessionsViewModel


class SessionsDock(QDockWidget):
    """Binds a :class:`SessionsViewModel` to a table.

    Signals:
        sessionSelected(str): the user selected a session (its id).
        newSessionRequested(): the "New session…" button was pressed.
        handoffRequested(str): "Hand off now" from the context menu (the session's id).
        handoffToRequested(str): "Hand off to…" from the context menu (the session's id).
    """

    sessionSelected = Signal(str)
    newSessionRequested = Signal()
    handoffRequested = Signal(str)
    handoffToRequested = Signal(str)

    #: states in which the context menu offers a handoff
    HANDOFF_STATES = ACTIVE_STATES

    def __init__(self, vm: SessionsViewModel, parent: QWidget | None = None) -> None:
        super().__init__("Sessions", parent)
        self.setObjectName("sessionsDock")
        self.vm = vm
        self._wanted: str | None = None
        self.table = self._make_table()
        self.count = QLabel()
        self.count.setObjectName("sessionsCount")
        theme.style(self.count, "color: $MUTED;")
        self.new_button = QPushButton("New session…")
        self.new_button.setObjectName("newSessionButton")
        self.new_button.clicked.connect(self.newSessionRequested)
        self.error = ErrorBanner("sessionsError")
        top = QHBoxLayout()
        top.addWidget(self.count, 1)
        top.addWidget(self.new_button)
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(top)
        layout.addWidget(self.error)
        layout.addWidget(self.table, 1)
        self.setWidget(body)
        vm.refreshed.connect(self._on_refreshed)
        self._on_refreshed()

    def _make_table(self) -> QTableView:
        table = row_table("sessionsTable", self.vm, stretch=1)
        table.setAlternatingRowColors(True)
        table.selectionModel().selectionChanged.connect(self._on_selection)
        table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        table.customContextMenuRequested.connect(self._on_context_menu)
        return table

    def context_menu(self, row: int) -> QMenu:
        """The context menu of ``row`` (built, not shown)."""
        session = self.vm.session_at(row)
        menu = QMenu(self.table)
        menu.setObjectName("sessionContextMenu")
        can = session.state in self.HANDOFF_STATES
        now = menu.addAction("Hand off now")
        now.setToolTip("Pause at a safe point and hand off to the next entry of the chain")
        now.setEnabled(can)
        now.triggered.connect(lambda: self.handoffRequested.emit(session.id))
        to = menu.addAction("Hand off to…")
        to.setEnabled(can)
        to.triggered.connect(lambda: self.handoffToRequested.emit(session.id))
        return menu

    def _on_context_menu(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        if index.isValid():
            menu = self.context_menu(index.row())
            menu.aboutToHide.connect(menu.deleteLater)
            menu.popup(self.table.viewport().mapToGlobal(pos))

    def select(self, session_id: str) -> None:
        """Select ``session_id`` now, or as soon as it appears in the list."""
        self._wanted = session_id
        self._select_wanted()

    def selected_id(self) -> str | None:
        rows = self.table.selectionModel().selectedRows()
        return str(rows[0].data(SessionsViewModel.SessionIdRole)) if rows else None

    def show_error(self, message: str, hint: str = "") -> None:
        self.error.show_error(message, hint)

    def _select_wanted(self) -> None:
        if self._wanted is None:
            return
        row = self.vm.row_of(self._wanted)
        if row is None:
            return
        self._wanted = None
        self.table.selectRow(row)
        self.table.scrollTo(self.vm.index(row, 0))

    def _on_refreshed(self) -> None:
        n, running = self.vm.rowCount(), self.vm.running_count
        self.count.setText(f"{n} session{'s' if n != 1 else ''} · {running} running")
        self.error.hide()
        self._select_wanted()

    def _on_selection(self, selected: QItemSelection, _deselected: QItemSelection) -> None:
        rows = {i.row() for i in selected.indexes()}
        if len(rows) == 1:
            index: QModelIndex = self.vm.index(rows.pop(), 0)
            self.sessionSelected.emit(str(index.data(SessionsViewModel.SessionIdRole)))
