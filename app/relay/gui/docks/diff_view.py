"""DiffView: a list of file diffs, unified or side by side, with navigation and line comments.

A reusable widget (the History dock shows one): a tool row (mode, previous/next
file and hunk, Comment…), the file list (status, path, +/−; the totals in its
header) above the rows (:class:`~relay.gui.docks.diff_table.DiffTable`). Picking a file scrolls to
it; moving through the rows selects the file they belong to.

Shortcuts (while the view has focus): ``]`` / ``[`` next / previous file,
``N`` / ``P`` next / previous hunk, ``C`` comment on the current line, ``V``
switches between unified and side by side. "Comment…" only asks: it emits
:attr:`commentRequested` with the line, and whoever owns the view turns it into
a review comment (:meth:`set_comments` shows them on their lines).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QItemSelectionModel, QModelIndex, QPoint, Qt, Signal
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QMenu,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from relay.gui import theme
from relay.gui.diff_rows import CommentTarget, Mode
from relay.gui.docks.diff_table import DiffTable
from relay.gui.docks.parts import PlainLabel, empty_or_content, row_table
from relay.gui.fit import tool_row
from relay.gui.viewmodels.diff import DiffFilesModel, DiffRowsModel
from relay.history.diffmodel import FileDiff
from relay.history.model import ReviewComment


class DiffView(QWidget):
    """Shows ``list[FileDiff]``; see the module documentation.

    Signals:
        commentRequested(path, line, side, text): the user asked to comment on a line
            (``side`` is ``"old"`` or ``"new"``; ``line`` is that side's line number).
        currentFileChanged(int): the file the current row belongs to (-1: none).
    """

    commentRequested = Signal(str, int, str, str)
    currentFileChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("diffView")
        self.rows = DiffRowsModel(self)
        self.files = DiffFilesModel(self)
        self.table = DiffTable(self.rows)
        self.file_list = row_table("diffFiles", self.files, stretch=1, row_height=22)
        self._current_file = -1
        self._syncing = False
        self._build_actions()
        self._build()
        self.table.selectionModel().currentRowChanged.connect(self._on_current_row)
        self.file_list.selectionModel().currentRowChanged.connect(self._on_file_picked)
        self.rows.sideChanged.connect(self._update_actions)
        self.table.verticalScrollBar().valueChanged.connect(self._update_actions)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)
        self._update_actions()

    # -- building -----------------------------------------------------------------------

    def _action(self, text: str, keys: str, slot: object, tip: str) -> QAction:
        action = QAction(text, self)
        action.setShortcut(QKeySequence(keys))
        action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        action.setToolTip(f"{tip} ({keys})")
        action.triggered.connect(slot)
        self.addAction(action)
        return action

    def _build_actions(self) -> None:
        self.unified_action = self._action("Unified", "", lambda: self.set_mode("unified"),
                                           "One column: deletions above additions")
        self.split_action = self._action("Side by side", "", lambda: self.set_mode("split"),
                                         "Old on the left, new on the right")
        group = QActionGroup(self)
        for action in (self.unified_action, self.split_action):
            action.setCheckable(True)
            group.addAction(action)
        self.unified_action.setChecked(True)
        self.toggle_action = self._action("Switch mode", "V", self.toggle_mode,
                                          "Switch between unified and side by side")
        self.prev_file_action = self._action("Previous file", "[", self.previous_file,
                                             "Previous file")
        self.next_file_action = self._action("Next file", "]", self.next_file, "Next file")
        self.prev_hunk_action = self._action("Previous hunk", "P", self.previous_hunk,
                                             "Previous hunk")
        self.next_hunk_action = self._action("Next hunk", "N", self.next_hunk, "Next hunk")
        for action in (self.prev_file_action, self.prev_hunk_action):
            action.setIconText("◀")  # the tool row is narrow; menus keep the words
        for action in (self.next_file_action, self.next_hunk_action):
            action.setIconText("▶")
        self.comment_action = self._action("Comment…", "C", self.request_comment,
                                           "Comment on the current line")
        self.comment_action.setIconText("Comment…")  # Qt drops the "…" from button text

    def _build(self) -> None:
        tools = tool_row(name="diffTools")  # overflows into a menu (») when narrow
        for item in (self.unified_action, self.split_action, 12, self.prev_file_action, "File",
                     self.next_file_action, 6, self.prev_hunk_action, "Hunk",
                     self.next_hunk_action, 12, self.comment_action):
            if isinstance(item, int):
                tools.addSeparator()
            elif isinstance(item, str):
                label = PlainLabel(item)
                theme.style(label, "color: $MUTED;")
                tools.addWidget(label)
            else:
                tools.addAction(item)
                # as the buttons were before: reached by Tab (the table keeps its own focus)
                tools.widgetForAction(item).setFocusPolicy(Qt.FocusPolicy.TabFocus)
        self.split = QSplitter(Qt.Orientation.Vertical)
        self.split.setChildrenCollapsible(False)
        self.split.addWidget(self.file_list)
        self.split.addWidget(self.table)
        self.split.setStretchFactor(1, 1)
        self.pages, self.empty = empty_or_content("No changes", "diffEmpty", self.split)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(tools)
        box.addWidget(self.pages, 1)

    # -- showing ------------------------------------------------------------------------

    @property
    def mode(self) -> Mode:
        return self.rows.mode

    def set_files(self, files: Sequence[FileDiff], empty_text: str = "No changes") -> None:
        """Show ``files`` (from the top); with none, say ``empty_text``."""
        self.rows.set_files(files)
        self.files.set_files(files)
        self.empty.setText(empty_text)
        self.pages.setCurrentIndex(1 if files else 0)
        self._fit_file_list(len(files))
        self._current_file = -1
        self.table.scrollToTop()
        self._update_actions()

    def _fit_file_list(self, count: int) -> None:
        """The file list as tall as its files (up to six), the rows below take the rest."""
        rows = min(max(count, 1), 6)
        height = (self.file_list.horizontalHeader().sizeHint().height()
                  + rows * self.file_list.verticalHeader().defaultSectionSize()
                  + 2 * self.file_list.frameWidth())
        total = max(sum(self.split.sizes()), height + 200)
        self.split.setSizes([height, total - height])

    def show_message(self, text: str) -> None:
        """Show ``text`` (loading, an error) instead of a diff."""
        self.set_files([], empty_text=text)

    def set_comments(self, comments: Sequence[ReviewComment]) -> None:
        """Show ``comments`` on their lines (the current line stays current)."""
        self._keeping_place(lambda: self.rows.set_comments(comments))

    def set_mode(self, mode: Mode) -> None:
        """Unified or side by side; the current line stays current."""
        (self.unified_action if mode == "unified" else self.split_action).setChecked(True)
        if mode != self.rows.mode:
            self._keeping_place(lambda: self.rows.set_mode(mode))

    def toggle_mode(self) -> None:
        self.set_mode("split" if self.mode == "unified" else "unified")

    def _keeping_place(self, change: Callable[[], None]) -> None:
        row = self.table.current_row()
        anchor = None
        if row >= 0:
            item = self.rows.row(row)
            anchor = (item.file, item.old.old_no if item.old else None,
                      item.new.new_no if item.new else None, item.kind)
        change()
        if anchor is None:
            return
        file, old_no, new_no, kind = anchor
        layout = self.rows.layout
        found = layout.find_line(file, old_no, new_no) if kind in ("line", "comment") else None
        if found is None and 0 <= file < len(layout.file_rows):
            found = layout.file_rows[file]
        if found is not None:
            index = self.rows.index(found, 0)
            self.table.setCurrentIndex(index)
            self.table.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)

    # -- navigation ---------------------------------------------------------------------

    def _here(self) -> int:
        row = self.table.current_row()
        return row if row >= 0 else self.table.top_row() - 1

    def select_file(self, file: int) -> None:
        """Scroll to ``file``'s header and make it current."""
        if 0 <= file < len(self.rows.layout.file_rows):
            self.table.go_to(self.rows.layout.file_rows[file])

    def next_file(self) -> None:
        self._go(self.rows.layout.next_file(self._here()))

    def previous_file(self) -> None:
        self._go(self.rows.layout.previous_file(self._here()))

    def next_hunk(self) -> None:
        self._go(self.rows.layout.next_hunk(self._here()))

    def previous_hunk(self) -> None:
        self._go(self.rows.layout.previous_hunk(self._here()))

    def _go(self, row: int | None) -> None:
        if row is not None:
            self.table.go_to(row)
            self.table.setFocus()

    @property
    def current_file(self) -> int:
        return self._current_file

    # -- comments -----------------------------------------------------------------------

    def current_target(self) -> CommentTarget | None:
        """The line a comment would be about (the current line, on its side)."""
        row = self.table.current_row()
        return self.rows.target(row) if row >= 0 else None

    def request_comment(self) -> None:
        target = self.current_target()
        if target is not None:
            self.commentRequested.emit(target.path, target.line, target.side, target.text)

    # -- reactions ----------------------------------------------------------------------

    def _on_current_row(self, current: QModelIndex, _previous: QModelIndex) -> None:
        file = self.rows.layout.file_at(current.row()) if current.isValid() else None
        file = -1 if file is None else file
        if file != self._current_file:
            self._current_file = file
            self._syncing = True
            try:
                if file >= 0:
                    self.file_list.selectionModel().setCurrentIndex(
                        self.files.index(file, 0),
                        QItemSelectionModel.SelectionFlag.ClearAndSelect
                        | QItemSelectionModel.SelectionFlag.Rows)
                    self.file_list.scrollTo(self.files.index(file, 0))
            finally:
                self._syncing = False
            self.currentFileChanged.emit(file)
        self._update_actions()

    def _on_file_picked(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if not self._syncing and current.isValid():
            self.select_file(current.row())

    def _update_actions(self) -> None:
        layout = self.rows.layout
        here = self._here()
        self.comment_action.setEnabled(self.current_target() is not None)
        self.next_file_action.setEnabled(layout.next_file(here) is not None)
        self.prev_file_action.setEnabled(layout.previous_file(here) is not None)
        self.next_hunk_action.setEnabled(layout.next_hunk(here) is not None)
        self.prev_hunk_action.setEnabled(layout.previous_hunk(here) is not None)

    def _context_menu(self, point: QPoint) -> None:
        self.context_menu().popup(self.table.viewport().mapToGlobal(point))

    def context_menu(self) -> QMenu:
        """The rows' context menu: comment on the current line, navigation, mode."""
        menu = QMenu(self)
        menu.addAction(self.comment_action)
        menu.addSeparator()
        for action in (self.prev_hunk_action, self.next_hunk_action, self.prev_file_action,
                       self.next_file_action):
            menu.addAction(action)
        menu.addSeparator()
        menu.addAction(self.unified_action)
        menu.addAction(self.split_action)
        menu.aboutToHide.connect(menu.deleteLater)
        return menu
