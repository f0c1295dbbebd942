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
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QModelIndex, Qt, Signal
from PySide6.QtGui import QKeyEvent, QMouseEvent
from PySide6.QtWidgets import QTableView, QWidget

from relay.gui.docks.parts import painted_rows
from relay.gui.docks.stream_delegate import StreamDelegate, disclosure_rect, row_height
from relay.gui.viewmodels.stream import StreamViewModel

_FOLD_KEYS = {Qt.Key.Key_Left: False, Qt.Key.Key_Right: True}
_TOGGLE_KEYS = frozenset({Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter})


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
        self.setItemDelegate(StreamDelegate(self))
        painted_rows(self)
        self.horizontalHeader().setStretchLastSection(True)
        self._fit_row_height()
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._follow = True
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(self._on_scrolled)
        bar.rangeChanged.connect(self._on_range)
        vm.modelReset.connect(self._on_reset)

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

    # -- row height ---------------------------------------------------------------------

    def _fit_row_height(self) -> None:
        self.verticalHeader().setDefaultSectionSize(row_height(self.font()))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit_row_height()
