"""DiffTable: the diff's rows as one virtualised, fixed-row-height table.

Like the stream view: a one-column QTableView without headers whose rows all
have one height, so Qt keeps row positions in its C++ header and asks the
delegate to paint only the rows in sight — a 10,000-line diff lays out as fast
as a 10-line one. The column is the viewport's width plus how far the widest
line needs to scroll, so long lines scroll sideways instead of wrapping; the
delegate keeps the gutters, the headers and the two halves in place and moves
only the text.

In side-by-side mode the current line has a side: a click picks the half under
the pointer, ← and → move between the halves.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QModelIndex, Qt
from PySide6.QtGui import QFontDatabase, QKeyEvent, QMouseEvent, QResizeEvent
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

from relay.gui.docks.diff_delegate import DiffDelegate, row_height, side_at
from relay.gui.docks.parts import painted_rows
from relay.gui.viewmodels.diff import DiffRowsModel

_SIDE_KEYS = {Qt.Key.Key_Left: "old", Qt.Key.Key_Right: "new"}


class DiffTable(QTableView):
    """Shows a :class:`DiffRowsModel`; see the module documentation."""

    def __init__(self, model: DiffRowsModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows = model
        self.setObjectName("diffTable")
        self.setModel(model)
        self.delegate = DiffDelegate(self)
        self.setItemDelegate(self.delegate)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        painted_rows(self)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self._fit_row_height()
        self.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setMouseTracking(False)
        model.modelReset.connect(self.fit_width)
        model.sideChanged.connect(self.viewport().update)

    def column_width(self) -> int:
        """The viewport's width plus how far the widest line needs to scroll."""
        layout = self.rows.layout
        columns = self.delegate.columns(self.font(), layout.max_line_no)
        return columns.column_width(layout, self.viewport().width())

    def fit_width(self) -> None:
        if self.horizontalHeader().count():
            self.setColumnWidth(0, self.column_width())

    def top_row(self) -> int:
        """The first row in sight (-1 with no rows)."""
        return self.rowAt(0)

    def go_to(self, row: int) -> None:
        """Make ``row`` the current row, shown at the top."""
        index = self.rows.index(row, 0)
        self.setCurrentIndex(index)
        self.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtTop)

    # -- events -------------------------------------------------------------------------

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        """Scrolled sideways, every row is painted again: Qt would move the pixels already
        painted, gutters and the left half's start included, and paint only the strip that
        came into sight — the fixed parts of a row have to be painted where they stay."""
        super().scrollContentsBy(dx, dy)
        if dx:
            self.viewport().update()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.fit_width()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        point = event.position().toPoint()
        index = self.indexAt(point)
        if index.isValid() and self.rows.mode == "split":
            self.rows.set_side(side_at(self.viewport().width(), point.x()))
        super().mousePressEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = Qt.Key(event.key())
        if self.rows.mode == "split" and key in _SIDE_KEYS and not event.modifiers():
            self.rows.set_side("old" if _SIDE_KEYS[key] == "old" else "new")
            event.accept()
            return
        super().keyPressEvent(event)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit_row_height()
            self.fit_width()

    def _fit_row_height(self) -> None:
        self.verticalHeader().setDefaultSectionSize(row_height(self.font()))

    def current_row(self) -> int:
        index: QModelIndex = self.currentIndex()
        return index.row() if index.isValid() else -1
