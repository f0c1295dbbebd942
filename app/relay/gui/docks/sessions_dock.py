"""SessionsDock: the sessions, state first; selecting one shows it in the stream.

A tree (a pipeline's steps under their run) filtered by state, repository and text, with
"Show archived". Its context menu works on any session, a finished one too: open its
stream, its History, continue or fork it, stop or hand off a running one, archive it, copy
its id, open its worktree folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import (
    QItemSelection,
    QModelIndex,
    QPoint,
    Qt,
    QTimer,
    QUrl,
    Signal,
    SignalInstance,
)
from PySide6.QtGui import QGuiApplication, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QSizePolicy,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from relay.core.models import SessionRow
from relay.core.states import ACTIVE_STATES
from relay.gui import theme
from relay.gui.messages import ErrorBanner
from relay.gui.viewmodels.detect import open_url
from relay.gui.viewmodels.sessions import (
    COLUMNS,
    STATE_FILTERS,
    SessionsFilter,
    SessionsViewModel,
)

ALL_REPOS = "All repositories"
#: below this width the tree leaves out Cost and Updated (the tooltip has them): the
#: Task column gets the room
NARROW_PX = 620


class SessionsTree(QTreeView):
    """The sessions' tree: State first, Task takes the room, columns fitted to its width."""

    def __init__(self) -> None:
        super().__init__()
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setWordWrap(False)
        self.setIndentation(14)
        header = self.header()
        header.setStretchLastSection(False)
        header.setHighlightSections(False)
        header.setMinimumSectionSize(40)

    def fit(self) -> None:
        """Task takes the room; narrow, State and Account shrink, Cost and Updated are left
        out. (Call it once the model is set: the header has its sections then.)"""
        narrow = self.width() < NARROW_PX
        header = self.header()
        for column, name in enumerate(COLUMNS):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch if name == "Task"
                                        else QHeaderView.ResizeMode.ResizeToContents
                                        if name in ("Cost", "Updated")
                                        else QHeaderView.ResizeMode.Interactive)
        header.resizeSection(COLUMNS.index("State"), 172 if narrow else 190)
        header.resizeSection(COLUMNS.index("Account"), 90 if narrow else 170)
        for name in ("Cost", "Updated"):
            self.setColumnHidden(COLUMNS.index(name), narrow)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self.isColumnHidden(COLUMNS.index("Cost")) != (self.width() < NARROW_PX):
            QTimer.singleShot(0, self.fit)  # once the header has its new width


class SessionsDock(QDockWidget):
    """Binds a :class:`SessionsViewModel` to a filtered tree.

    Signals (each carries the session's id):
        sessionSelected: the user selected a session.
        newSessionRequested(): the "New session…" button was pressed.
        openRequested: "Open stream".
        historyRequested: "View diff / History".
        continueRequested: "Continue…" (the composer, focused).
        forkRequested: "Fork…".
        stopRequested: "Stop".
        handoffRequested: "Hand off now" (to the next entry of its chain).
        handoffToRequested: "Hand off to…" (the Handoff panel's target field).
    """

    sessionSelected = Signal(str)
    newSessionRequested = Signal()
    openRequested = Signal(str)
    historyRequested = Signal(str)
    continueRequested = Signal(str)
    forkRequested = Signal(str)
    stopRequested = Signal(str)
    handoffRequested = Signal(str)
    handoffToRequested = Signal(str)

    #: states in which the context menu offers stop and handoff
    HANDOFF_STATES = ACTIVE_STATES

    def __init__(self, vm: SessionsViewModel, parent: QWidget | None = None) -> None:
        super().__init__("Sessions", parent)
        self.setObjectName("sessionsDock")
        self.vm = vm
        self._wanted: str | None = None
        self._shown: str | None = None  # the id last announced (a re-selection is silent)
        self._collapsed: set[str] = set()
        #: opens a folder (the desktop's file manager; a test replaces it)
        self.open_folder: Callable[[str], bool] = lambda path: open_url(QUrl.fromLocalFile(path))
        self.proxy = SessionsFilter(self)
        self.proxy.setSourceModel(vm)
        self.table = self._make_tree()
        self.count = QLabel()
        self.count.setObjectName("sessionsCount")
        theme.style(self.count, "color: $MUTED;")
        self.count.setMinimumWidth(60)  # the text may be cut short: its tooltip has it all
        self.count.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.archived = QCheckBox("Show archived")
        self.archived.setObjectName("showArchived")
        self.archived.setToolTip("List the archived sessions too (greyed)")
        self.archived.toggled.connect(vm.set_show_archived)
        self.new_button = QPushButton("New session…")
        self.new_button.setObjectName("newSessionButton")
        self.new_button.clicked.connect(self.newSessionRequested)
        self.error = ErrorBanner("sessionsError")
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.setSpacing(4)
        top = QHBoxLayout()
        top.addWidget(self.count, 1)
        top.addWidget(self.archived)
        top.addWidget(self.new_button)
        layout.addLayout(top)
        layout.addLayout(self._filters())
        layout.addWidget(self.error)
        layout.addWidget(self.table, 1)
        self.setWidget(body)
        vm.refreshed.connect(self._on_refreshed)
        vm.modelReset.connect(self._restore)
        vm.rowsInserted.connect(lambda *_: self._expand())
        self._on_refreshed()

    def _filters(self) -> QHBoxLayout:
        self.search = QLineEdit()
        self.search.setObjectName("sessionsSearch")
        self.search.setPlaceholderText("Filter: task, id, account, branch…")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._set_text)
        self.state_filter = QComboBox()
        self.state_filter.setObjectName("sessionsStateFilter")
        self.state_filter.addItems(list(STATE_FILTERS))
        self.state_filter.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.state_filter.setMinimumContentsLength(9)
        self.state_filter.setToolTip("Show the sessions in these states")
        self.state_filter.currentTextChanged.connect(self._set_state)
        self.repo_filter = QComboBox()
        self.repo_filter.setObjectName("sessionsRepoFilter")
        self.repo_filter.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.repo_filter.setMinimumContentsLength(10)
        self.repo_filter.addItem(ALL_REPOS, "")
        self.repo_filter.setToolTip("Show one repository's sessions")
        self.repo_filter.currentIndexChanged.connect(self._set_repo)
        row = QHBoxLayout()
        row.addWidget(self.search, 1)
        row.addWidget(self.state_filter)
        row.addWidget(self.repo_filter)
        return row

    def _make_tree(self) -> QTreeView:
        tree = SessionsTree()
        tree.setObjectName("sessionsTable")
        tree.setModel(self.proxy)
        tree.fit()
        tree.selectionModel().selectionChanged.connect(self._on_selection)
        tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        tree.customContextMenuRequested.connect(self._on_context_menu)
        tree.collapsed.connect(lambda i: self._fold(i, True))
        tree.expanded.connect(lambda i: self._fold(i, False))
        return tree

    # -- the context menu ---------------------------------------------------------------

    def context_menu(self, row: int) -> QMenu:
        """The context menu of the session at ``row`` of :meth:`SessionsViewModel.rows`
        (built, not shown)."""
        return self.menu_for(self.vm.session_at(row))

    def menu_for(self, session: SessionRow) -> QMenu:
        """The context menu of ``session`` (built, not shown)."""
        menu = QMenu(self.table)
        menu.setObjectName("sessionContextMenu")
        sid, active = session.id, session.state in self.HANDOFF_STATES

        def add(text: str, signal: SignalInstance | None, enabled: bool = True, tip: str = "",
                name: str = "") -> None:
            action = menu.addAction(text)
            action.setObjectName(name)
            action.setEnabled(enabled)
            action.setToolTip(tip)
            if signal is not None:
                action.triggered.connect(lambda: signal.emit(sid))

        add("Open stream", self.openRequested, name="openStream")
        add("View diff / History", self.historyRequested, bool(session.workdir),
            name="viewHistory")
        add("Continue…", self.continueRequested, tip="Write to its agent in the composer",
            name="continueSession")
        add("Fork…", self.forkRequested, bool(session.workdir),
            "A new session from its latest point, in a new worktree", name="forkSession")
        menu.addSeparator()
        add("Stop", self.stopRequested, active, name="stopSession")
        add("Hand off now", self.handoffRequested, active,
            "Pause at a safe point and hand off to the next entry of the chain",
            name="handoffNow")
        add("Hand off to…", self.handoffToRequested, active, name="handoffTo")
        menu.addSeparator()
        archived = session.archived_at is not None
        archive = menu.addAction("Unarchive" if archived else "Archive")
        archive.setObjectName("archiveSession")
        archive.setEnabled(archived or session.finished)
        archive.setToolTip("Back into the list" if archived else
                           "Out of the list (nothing is deleted; Show archived lists it)")
        archive.triggered.connect(lambda: self.vm.archive(sid, not archived))
        copy = menu.addAction("Copy session id")
        copy.setObjectName("copySessionId")
        copy.triggered.connect(lambda: QGuiApplication.clipboard().setText(sid))
        folder = menu.addAction("Open worktree folder")
        folder.setObjectName("openWorktree")
        folder.setEnabled(bool(session.workdir) and Path(session.workdir or "").is_dir())
        folder.triggered.connect(lambda: self.open_folder(session.workdir or ""))
        return menu

    def _on_context_menu(self, pos: QPoint) -> None:
        session = self.vm.item(self.proxy.mapToSource(self.table.indexAt(pos)))
        if isinstance(session, SessionRow):
            menu = self.menu_for(session)
            menu.aboutToHide.connect(menu.deleteLater)
            menu.popup(self.table.viewport().mapToGlobal(pos))

    # -- selection ----------------------------------------------------------------------

    def select(self, session_id: str) -> None:
        """Select ``session_id`` now, or as soon as it appears in the list."""
        self._wanted = session_id
        self._select_wanted()

    def selected_id(self) -> str | None:
        rows = self.table.selectionModel().selectedRows()
        sid = rows[0].data(SessionsViewModel.SessionIdRole) if rows else None
        return str(sid) if sid else None

    def show_error(self, message: str, hint: str = "") -> None:
        self.error.show_error(message, hint)

    def _select_wanted(self) -> None:
        if self._wanted is None:
            return
        index = self.proxy.mapFromSource(self.vm.index_of(self._wanted))
        if not index.isValid():
            return
        self._wanted = None
        self.table.setCurrentIndex(index)
        self.table.scrollTo(index)

    def _restore(self) -> None:
        """After the model was reset: the same selection (silently), runs expanded."""
        self._expand()
        if self._shown is not None and self._wanted is None:
            self._wanted = self._shown
        self._select_wanted()

    def _expand(self) -> None:
        for row in range(self.proxy.rowCount()):
            index = self.proxy.index(row, 0)
            run = index.data(SessionsViewModel.RunRole)
            if run is not None:
                self.table.setExpanded(index, run not in self._collapsed)

    def _fold(self, index: QModelIndex, collapsed: bool) -> None:
        run = index.data(SessionsViewModel.RunRole)
        if run is not None:
            (self._collapsed.add if collapsed else self._collapsed.discard)(run)

    def _on_refreshed(self) -> None:
        n, running = len(self.vm.rows()), self.vm.running_count
        waiting = len(self.vm.attention())
        text = f"{n} session{'s' if n != 1 else ''} · {running} running"
        self.count.setText(text + (f" · {waiting} need{'s' if waiting == 1 else ''} you"
                                   if waiting else ""))
        self.count.setToolTip(self.count.text())
        self._fill_repos()
        self.error.hide()
        self._select_wanted()

    def _fill_repos(self) -> None:
        current = self.repo_filter.currentData() or ""
        repos = self.vm.repos()
        if [self.repo_filter.itemData(i) for i in range(1, self.repo_filter.count())] == repos:
            return
        self.repo_filter.blockSignals(True)
        self.repo_filter.clear()
        self.repo_filter.addItem(ALL_REPOS, "")
        for repo in repos:
            self.repo_filter.addItem(Path(repo).name or repo, repo)
            self.repo_filter.setItemData(self.repo_filter.count() - 1, repo,
                                         Qt.ItemDataRole.ToolTipRole)
        self.repo_filter.setCurrentIndex(max(self.repo_filter.findData(current), 0))
        self.repo_filter.blockSignals(False)

    def _set_text(self, text: str) -> None:
        self.proxy.set_text(text)
        self._expand()

    def _set_state(self, label: str) -> None:
        self.proxy.set_state_filter(label)
        self._expand()

    def _set_repo(self, _index: int) -> None:
        self.proxy.set_repo(self.repo_filter.currentData() or "")
        self._expand()

    def _on_selection(self, selected: QItemSelection, _deselected: QItemSelection) -> None:
        if not selected.indexes():
            return
        sid = self.selected_id()
        if sid is not None and sid != self._shown:
            self._shown = sid
            self.sessionSelected.emit(sid)
