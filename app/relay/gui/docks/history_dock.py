"""HistoryDock: the shown session's timeline on the left, the diff picked in it on the right.

The timeline is a tree (:class:`~relay.gui.viewmodels.history.HistoryViewModel`'s
model): "Whole session", then each agent's stint with its runs, commits, checks and
handoffs. Picking a node shows its diff in a :class:`DiffView`. "Rewind here" and
"Continue from here" work on the picked commit (a stint's last commit, the
session's tip); "Comment…" on a diff line asks for the comment
(:class:`CommentDialog`); "Finish…" shows what the session changed
(:class:`FinishDialog`). A commit's context menu offers "Fork session at this commit…"
(:attr:`HistoryDock.forkRequested`). The widgets only show and forward: the view-model acts.
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelection, QModelIndex, QPoint, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QHBoxLayout,
    QMenu,
    QPushButton,
    QSplitter,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from relay.gui import theme
from relay.gui.docks.diff_view import DiffView
from relay.gui.docks.parts import PlainLabel, empty_or_content
from relay.gui.fit import ElidedLabel
from relay.gui.history_dialogs import CommentDialog, FinishDialog
from relay.gui.history_text import audit_text, header_text, short
from relay.gui.messages import ErrorBanner
from relay.gui.viewmodels.history import TONE_COLOURS, HistoryViewModel
from relay.history.model import FinishSummary
from relay.history.present import fork_lines

EMPTY_TEXT = "Select a session to see what each agent did."


class HistoryDock(QDockWidget):
    """See the module documentation.

    Signals:
        forkRequested(str, str): "Fork session at this commit…" — the session and the sha.
    """

    forkRequested = Signal(str, str)

    def __init__(self, vm: HistoryViewModel, parent: QWidget | None = None) -> None:
        super().__init__("History", parent)
        self.setObjectName("historyDock")
        self.vm = vm
        self.comment_dialog: CommentDialog | None = None
        self.finish_dialog: FinishDialog | None = None
        self._syncing = False
        self._build()
        vm.timelineChanged.connect(self._on_timeline)
        vm.diffChanged.connect(lambda: self.diff.set_files(vm.files, "No changes here"))
        vm.commentsChanged.connect(lambda: self.diff.set_comments(vm.comments))
        vm.changed.connect(self.refresh)
        vm.summaryReady.connect(self.open_finish_dialog)
        self.diff.commentRequested.connect(self.open_comment_dialog)
        self.tree.selectionModel().selectionChanged.connect(self._on_picked)
        self.visibilityChanged.connect(vm.set_active)

    # -- building -----------------------------------------------------------------------

    def _build(self) -> None:
        self.title = ElidedLabel(lines=2, expandable=True)  # a task can be a whole contract
        self.title.setObjectName("historyTitle")
        self.title.setStyleSheet("font-weight: bold;")
        self.audit = PlainLabel()
        self.audit.setObjectName("historyAudit")
        self.lineage = PlainLabel()
        self.lineage.setObjectName("historyLineage")
        theme.style(self.lineage, "color: $ACCENT;")
        self.lineage.setWordWrap(True)
        self.lineage.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.rewind_button = self._button("Rewind here", "historyRewind",
                                          lambda: self.vm.rewind(False))
        self.continue_button = self._button("Continue from here", "historyContinue",
                                            lambda: self.vm.rewind(True))
        self.finish_button = self._button("Finish…", "historyFinish", self.vm.ask_finish)
        self.refresh_button = self._button("Refresh", "historyRefresh", self.vm.refresh)
        self.message = PlainLabel()
        self.message.setObjectName("historyMessage")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error = ErrorBanner("historyError")
        self.tree = QTreeView()
        self.tree.setObjectName("historyTimeline")
        self.tree.setModel(self.vm.model)
        self.tree.setHeaderHidden(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setMinimumWidth(220)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(
            lambda pos: self.node_menu(pos).popup(self.tree.viewport().mapToGlobal(pos)))
        self.detail = PlainLabel()
        self.detail.setObjectName("historyDetail")
        self.detail.setWordWrap(True)
        theme.style(self.detail, "color: $MUTED;")
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.diff_title = PlainLabel()
        self.diff_title.setObjectName("historyDiffTitle")
        self.diff = DiffView()
        self.setWidget(self._content())

    def _button(self, text: str, name: str, slot: object) -> QPushButton:
        button = QPushButton(text)
        button.setObjectName(name)
        button.clicked.connect(slot)
        return button

    def _content(self) -> QWidget:
        left = QWidget()
        left_box = QVBoxLayout(left)
        left_box.setContentsMargins(0, 0, 0, 0)
        left_box.addWidget(self.tree, 1)
        left_box.addWidget(self.detail)
        right = QWidget()
        right_box = QVBoxLayout(right)
        right_box.setContentsMargins(0, 0, 0, 0)
        right_box.addWidget(self.diff_title)
        right_box.addWidget(self.diff, 1)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.setChildrenCollapsible(False)
        split.addWidget(left)
        split.addWidget(right)
        split.setStretchFactor(1, 1)
        split.setSizes([340, 660])
        actions = QHBoxLayout()
        for button in (self.rewind_button, self.continue_button, self.finish_button):
            actions.addWidget(button)
        actions.addStretch(1)
        actions.addWidget(self.audit)
        actions.addWidget(self.refresh_button)
        body = QWidget()
        box = QVBoxLayout(body)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(self.title)
        box.addWidget(self.lineage)
        box.addLayout(actions)
        box.addWidget(self.message)
        box.addWidget(self.error)
        box.addWidget(split, 1)
        self.pages, self.empty = empty_or_content(EMPTY_TEXT, "historyEmpty", body)
        outer = QWidget()
        layout = QVBoxLayout(outer)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.pages)
        return outer

    # -- showing ------------------------------------------------------------------------

    def refresh(self) -> None:
        """Header, message and what the buttons may do, from the view-model."""
        vm, line = self.vm, self.vm.timeline
        self.pages.setCurrentIndex(1 if vm.session_id else 0)
        self.title.setText(header_text(line) if line else
                           f"Reading session {vm.session_id}…" if vm.session_id else "")
        lineage = "\n".join(fork_lines(line)) if line else ""
        self.lineage.setText(lineage[:1].upper() + lineage[1:])
        self.lineage.setVisible(bool(lineage))
        text, tone = audit_text(line) if line else ("", "")
        self.audit.setText(text)
        theme.style(self.audit, f"color: ${TONE_COLOURS.get(tone, 'MUTED')};")
        sha = vm.rewind_sha
        for button, what in ((self.rewind_button, "Make a new branch at"),
                             (self.continue_button, "Start a new session from")):
            button.setEnabled(sha is not None)
            button.setToolTip(f"{what} commit {short(sha)}; nothing existing moves" if sha
                              else "Pick a commit (or a stint) in the timeline first")
        why_not = vm.why_not_finish
        self.finish_button.setEnabled(why_not is None)
        self.finish_button.setToolTip(why_not or
                                      "Merge the session's branch into its base, or keep it")
        message, tone = vm.message
        self.message.setText(message)
        theme.style(self.message, f"color: ${TONE_COLOURS.get(tone, 'TEXT')};")
        self.message.setVisible(bool(message))
        self.diff_title.setText(vm.diff_title)
        node = vm.node(vm.selected_key)
        self.detail.setText(node.detail if node else "")

    def show_error(self, message: str, hint: str = "") -> None:
        """Show an error about this panel's session in place."""
        self.error.show_error(message, hint)

    def select_key(self, key: str) -> bool:
        """Pick the timeline node ``key``; whether it exists."""
        found = self._index_of(key)
        if found is None:
            return False
        self.tree.setCurrentIndex(found)
        self.tree.scrollTo(found)
        return True

    def _index_of(self, key: str) -> QModelIndex | None:
        model = self.vm.model
        hits = model.match(model.index(0, 0), HistoryViewModel.KeyRole, key, 1,
                           Qt.MatchFlag.MatchExactly | Qt.MatchFlag.MatchRecursive)
        return hits[0] if hits else None

    def node_menu(self, pos: QPoint) -> QMenu:
        """The context menu of the timeline node at ``pos`` (the tree's viewport)."""
        menu = QMenu(self)
        menu.setObjectName("historyNodeMenu")
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        index = self.tree.indexAt(pos)
        node = self.vm.node(str(index.data(HistoryViewModel.KeyRole))) if index.isValid() \
            else None
        sha, session_id = (node.rewind_sha if node else None), self.vm.session_id
        fork = menu.addAction("Fork session at this commit…")
        fork.setObjectName("forkAtCommit")
        fork.setToolTip(f"A new session in a new worktree at {short(sha)}; this one stays "
                        "as it is" if sha else "Pick a commit (or a stint)")
        fork.setEnabled(sha is not None and session_id is not None)
        if sha is not None and session_id is not None:
            fork.triggered.connect(lambda: self.forkRequested.emit(session_id, sha))
        return menu

    def _on_timeline(self) -> None:
        self.error.hide()
        self.tree.expandAll()
        found = self._index_of(self.vm.selected_key)
        if found is not None:  # the pick stays picked (the view-model knows it already)
            self._syncing = True
            try:
                self.tree.setCurrentIndex(found)
            finally:
                self._syncing = False
        self.refresh()

    def _on_picked(self, selected: QItemSelection, _deselected: QItemSelection) -> None:
        indexes = selected.indexes()
        if indexes and not self._syncing:
            self.error.hide()
            self.vm.select(str(indexes[0].data(HistoryViewModel.KeyRole)))

    # -- dialogs ------------------------------------------------------------------------

    def open_comment_dialog(self, path: str, line: int, side: str, text: str) -> CommentDialog:
        if self.comment_dialog is not None:
            self.comment_dialog.close()
        dialog = CommentDialog(path, line, side, text, self, finished_on=self.vm.finished_on)
        dialog.commentAccepted.connect(
            lambda p, n, s, body, hold: self.vm.comment(p, n, "old" if s == "old" else "new",
                                                        body, hold=hold))
        self.comment_dialog = dialog
        dialog.open()
        return dialog

    def open_finish_dialog(self, summary: FinishSummary) -> FinishDialog:
        if self.finish_dialog is not None:
            self.finish_dialog.close()
        dialog = FinishDialog(summary, self)
        dialog.actionChosen.connect(
            lambda action: self.vm.finish("merge" if action == "merge" else "keep"))
        self.finish_dialog = dialog
        dialog.open()
        return dialog
