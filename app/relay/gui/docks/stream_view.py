"""StreamView: the stream's rows as one virtualised list with foldable tool calls.

A QTableView with one column, no headers and a fixed row height: it keeps row
positions in its (C++) header and paints only the rows in sight, so inserting
rows costs the same with 20 or 20,000 of them. (A QTreeView relays out every
expanded item after each insert, and a QListView every row, asking the Python
model about each one — the stream's bottleneck under a burst.)

Folding is the view-model's intent: a click on a row's fold mark or a
double-click toggles it; ← folds (or goes from a result to its call), →
unfolds, Space or Enter toggles. While scrolled to the bottom the view follows
new rows; scrolled up, it stays put. Esc asks to interrupt the session's turn
(:attr:`StreamView.interruptRequested`; the shell's composer does it).

A handoff's block is taller than a row (the view sizes it when it is inserted or grows).
The view shows all rows or only some (:meth:`StreamView.set_filter`: messages, tools or
errors — a nested error brings its call along); :meth:`StreamView.find_text` moves to the next
(or previous) shown row that holds a text, which the delegate highlights.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QModelIndex, Qt, Signal
from PySide6.QtGui import QKeyEvent, QMouseEvent
from PySide6.QtWidgets import QTableView, QWidget

from relay.gui.docks.parts import painted_rows
from relay.gui.docks.stream_delegate import (
    StreamDelegate,
    block_height,
    disclosure_rect,
    holds,
    row_height,
)
from relay.gui.viewmodels.stream import StreamViewModel

_FOLD_KEYS = {Qt.Key.Key_Left: False, Qt.Key.Key_Right: True}
_TOGGLE_KEYS = frozenset({Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter})

#: what the filter can show, and the row kinds each takes (tools: and all nested under one)
FILTERS: dict[str, frozenset[str]] = {
    "all": frozenset(),
    "messages": frozenset({"message", "assistant_text", "needs_input"}),
    "tools": frozenset({"tool_call", "tool_result", "permission_denied", "guard_decision"}),
    "errors": frozenset(),  # the rows that report a failure (IsErrorRole)
}


class StreamView(QTableView):
    """Shows a :class:`StreamViewModel`; see the module documentation.

    Signals:
        interruptRequested(): Esc — stop the shown session's current turn.
    """

    interruptRequested = Signal()

    def __init__(self, vm: StreamViewModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.vm = vm
        self.setObjectName("streamView")
        self.setModel(vm)
        self.delegate = StreamDelegate(self)
        self.setItemDelegate(self.delegate)
        self._filter = "all"
        painted_rows(self)
        self.horizontalHeader().setStretchLastSection(True)
        self._fit_row_height()
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._follow = True
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(self._on_scrolled)
        bar.rangeChanged.connect(self._on_range)
        vm.modelReset.connect(self._on_reset)
        vm.rowsInserted.connect(self._on_inserted)
        vm.dataChanged.connect(lambda top, bottom, _roles=(): self._size_block(top.row())
                               if top.row() == bottom.row() else None)

    def is_following(self) -> bool:
        """Whether new rows scroll into view (the view was at the bottom)."""
        return self._follow

    # -- folding ------------------------------------------------------------------------

    def set_expanded(self, row: int, expanded: bool) -> bool:
        """Fold or unfold ``row``; a current row folded away hands over to ``row``."""
        current = self.currentIndex()
        if not expanded and current.isValid() and self._nested_in(current.row(), row):
            self.setCurrentIndex(self.vm.index(row, 0))
        return self.vm.set_expanded(row, expanded)

    def _nested_in(self, row: int, ancestor: int) -> bool:
        up = self.vm.parent_row(row)
        while up is not None and up >= ancestor:
            if up == ancestor:
                return True
            up = self.vm.parent_row(up)
        return False

    def _expandable(self, index: QModelIndex) -> bool:
        return index.isValid() and bool(index.data(StreamViewModel.ChildCountRole))

    def _on_mark(self, index: QModelIndex, event: QMouseEvent) -> bool:
        if not self._expandable(index):
            return False
        depth = int(index.data(StreamViewModel.DepthRole) or 0)
        return disclosure_rect(self.visualRect(index), depth).contains(event.position().toPoint())

    def mousePressEvent(self, event: QMouseEvent) -> None:
        index = self.indexAt(event.position().toPoint())
        if event.button() == Qt.MouseButton.LeftButton and self._on_mark(index, event):
            self.set_expanded(index.row(), not index.data(StreamViewModel.ExpandedRole))
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        index = self.indexAt(event.position().toPoint())
        if event.button() == Qt.MouseButton.LeftButton and self._expandable(index):
            self.set_expanded(index.row(), not index.data(StreamViewModel.ExpandedRole))
            event.accept()
            return
        super().mouseDoubleClickEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = Qt.Key(event.key())
        if key == Qt.Key.Key_Escape and not event.modifiers():
            self.interruptRequested.emit()
            event.accept()
            return
        current = self.currentIndex()
        if current.isValid() and (key in _FOLD_KEYS or key in _TOGGLE_KEYS):
            row = current.row()
            expanded = bool(current.data(StreamViewModel.ExpandedRole))
            if key in _TOGGLE_KEYS:
                if self._expandable(current):
                    self.set_expanded(row, not expanded)
            elif _FOLD_KEYS[key] and self._expandable(current):
                if expanded:  # already unfolded: go to the first nested row
                    self.setCurrentIndex(self.vm.index(row + 1, 0))
                else:
                    self.set_expanded(row, True)
            elif not _FOLD_KEYS[key]:
                if expanded:
                    self.set_expanded(row, False)
                elif (up := self.vm.parent_row(row)) is not None:
                    self.setCurrentIndex(self.vm.index(up, 0))
            event.accept()
            return
        super().keyPressEvent(event)

    # -- following the bottom -----------------------------------------------------------

    def _on_scrolled(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self._follow = value >= bar.maximum() - 2 * self.verticalHeader().defaultSectionSize()

    def _on_range(self, _minimum: int, maximum: int) -> None:
        # new rows (laid out by the view when it gets to it): stay at the bottom
        if self._follow:
            self.verticalScrollBar().setValue(maximum)

    def _on_reset(self) -> None:
        self._follow = True

    # -- filter and search --------------------------------------------------------------

    @property
    def filter(self) -> str:
        return self._filter

    def set_filter(self, name: str) -> None:
        """Show all rows, or only messages, tools or errors (:data:`FILTERS`)."""
        if name not in FILTERS:
            raise ValueError(f"unknown stream filter {name!r}")
        self._filter = name
        self._apply_filter(0, self.vm.rowCount() - 1)

    def _wanted(self, row: int) -> bool:
        index = self.vm.index(row, 0)
        if self._filter == "errors":
            return bool(index.data(StreamViewModel.IsErrorRole))
        kind = str(index.data(StreamViewModel.KindRole))
        return kind in FILTERS[self._filter] or (
            self._filter == "tools" and bool(index.data(StreamViewModel.DepthRole)))

    def _apply_filter(self, first: int, last: int) -> None:
        for row in range(first, last + 1):
            wanted = self._filter == "all" or self._wanted(row)
            self.setRowHidden(row, not wanted)
            up = self.vm.parent_row(row) if wanted and self._filter != "all" else None
            while up is not None:  # a nested row's call comes along
                self.setRowHidden(up, False)
                up = self.vm.parent_row(up)

    def find_text(self, needle: str, forward: bool = True) -> bool:
        """Go to the next (or previous) shown row holding ``needle``, from the current one
        round; whether there is one. The delegate highlights every row that holds it."""
        self.delegate.needle = needle.strip().lower()
        self.viewport().update()
        count = self.vm.rowCount()
        if not self.delegate.needle or not count:
            return False
        start = self.currentIndex().row()
        step = 1 if forward else -1
        start = (-1 if forward else count) if start < 0 else start
        for offset in range(1, count + 1):
            row = (start + step * offset) % count
            index = self.vm.index(row, 0)
            if not self.isRowHidden(row) and holds(index, self.delegate.needle):
                self.setCurrentIndex(index)
                self.scrollTo(index)
                return True
        return False

    def matches(self) -> int:
        """How many shown rows hold the search text."""
        needle = self.delegate.needle
        return sum(1 for row in range(self.vm.rowCount()) if needle and not self.isRowHidden(
            row) and holds(self.vm.index(row, 0), needle)) if needle else 0

    # -- row height ---------------------------------------------------------------------

    def _on_inserted(self, _parent: QModelIndex, first: int, last: int) -> None:
        if first == last:  # a handoff's block comes alone
            self._size_block(first)
        if self._filter != "all":
            self._apply_filter(first, last)

    def _size_block(self, row: int) -> None:
        block = self.vm.index(row, 0).data(StreamViewModel.BlockRole)
        if block:
            self.verticalHeader().resizeSection(row, block_height(self.font(), len(block)))

    def _fit_row_height(self) -> None:
        self.verticalHeader().setDefaultSectionSize(row_height(self.font()))
        for row in range(self.vm.rowCount()):
            self._size_block(row)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit_row_height()
