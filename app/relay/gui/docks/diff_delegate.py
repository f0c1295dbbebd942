"""Paints one diff row: gutters, the line with its highlighting, headers and comments.

Every row has the same height (:func:`row_height`), so the view never measures
rows; the painter is asked only for the rows in sight. Highlighting is computed
here, on first paint of a line, through a :class:`~relay.gui.syntax.TokenCache`
(Pygments, a hunk side at a time; ``painted`` and ``tokens.computed`` say how much
work painting did, for the laziness test); a token's colour is its theme role's,
read when it is painted.

Unified row: ``[mark][old no][new no][±][text]``. Side-by-side row: the same per
half, ``[mark][old no][−][text] │ [mark][new no][+][text]``; an empty half is
grey. ``mark`` is a dot on a line that has review comments. Rows are painted
over the viewport, not the (wider) cell: scrolled sideways, the gutters and
headers stay and only the text moves, so both halves of a side-by-side row stay
in sight however long their lines are.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from relay.gui import theme
from relay.gui.diff_rows import DiffLayout, DiffRow, Side, shown
from relay.gui.syntax import Side as LexSide
from relay.gui.syntax import Token, TokenCache
from relay.gui.viewmodels.diff import STATUS_MARKS, DiffRowsModel
from relay.history.diffmodel import DiffLine

Index = QModelIndex | QPersistentModelIndex

PAD = 6
MARK_W = 12

# Colours are theme roles, looked up when a row is painted (light or dark).
#: (text background, gutter background) roles per line kind
LINE_BG = {"add": ("DIFF_ADD_BG", "DIFF_ADD_GUTTER"), "del": ("DIFF_DEL_BG", "DIFF_DEL_GUTTER"),
           "context": ("BASE", "BASE")}
COMMENT_STATE = {"queued": "WARNING", "sent": "OK", "failed": "ERROR"}
SIGN = {"add": "+", "del": "−", "context": " "}


def row_height(font: QFont) -> int:
    return QFontMetrics(font).height() + 4


@dataclass(frozen=True)
class Columns:
    """Widths in pixels of one half's parts (the whole row in unified mode)."""

    number: int
    sign: int
    char: int

    @classmethod
    def of(cls, font: QFont, max_line_no: int) -> Columns:
        metrics = QFontMetrics(font)
        char = max(metrics.horizontalAdvance("0"), 1)
        return cls(len(str(max(max_line_no, 99))) * char + 2 * PAD, char + PAD, char)

    def gutter(self, mode: str) -> int:
        """From a half's left edge to its text."""
        return MARK_W + self.number * (2 if mode == "unified" else 1) + self.sign

    def column_width(self, layout: DiffLayout, viewport: int) -> int:
        """The row width that lets the widest line scroll into a ``viewport``-wide view.

        Gutters and headers stay put (they are painted where the viewport is); only
        the text moves sideways, in both halves at once in side-by-side mode.
        """
        room = viewport // (2 if layout.mode == "split" else 1) - self.gutter(layout.mode) - PAD
        return viewport + max(0, layout.max_chars * self.char + PAD - room)


class DiffDelegate(QStyledItemDelegate):
    """Row painter for :class:`~relay.gui.viewmodels.diff.DiffRowsModel`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tokens = TokenCache()
        #: how many rows were painted (the laziness check reads it)
        self.painted = 0
        self._columns: tuple[QFont, int, Columns] | None = None

    def columns(self, font: QFont, max_line_no: int) -> Columns:
        cached = self._columns
        if cached is None or cached[0] != font or cached[1] != max_line_no:
            cached = (QFont(font), max_line_no, Columns.of(font, max_line_no))
            self._columns = cached
        return cached[2]

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        return QSize(200, row_height(option.font))

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        model = index.model()
        if not isinstance(model, DiffRowsModel):
            return
        self.painted += 1
        row = model.row(index.row())
        layout = model.layout
        cell: QRect = option.rect
        view = option.widget
        width = view.viewport().width() if isinstance(view, QAbstractScrollArea) else cell.width()
        # paint where the viewport is; a view scrolled sideways moves only the text
        rect = QRect(0, cell.top(), width, cell.height())
        scroll = max(0, -cell.left())
        font = QFont(option.font)
        cols = self.columns(font, layout.max_line_no)
        painter.save()
        painter.setFont(font)
        if row.kind == "line":
            self._paint_line(painter, rect, row, model, cols, scroll)
        elif row.kind == "comment":
            self._paint_comment(painter, rect, row, layout.mode, cols)
        else:
            self._paint_banner(painter, rect, row, layout, cols)
        if option.state & QStyle.StateFlag.State_Selected:
            self._paint_current(painter, rect, model, row)
        painter.restore()

    # -- lines --------------------------------------------------------------------------

    def _paint_line(self, painter: QPainter, rect: QRect, row: DiffRow, model: DiffRowsModel,
                    cols: Columns, scroll: int) -> None:
        layout = model.layout
        diff = layout.files[row.file]
        if layout.mode == "unified":
            line = row.new or row.old
            assert line is not None
            side: LexSide = "new" if row.new is not None else "old"
            tokens = self.tokens.tokens(diff, row.hunk, side,
                                        line.new_no if side == "new" else line.old_no)
            self._paint_half(painter, rect, line, (row.old, row.new), line.kind, tokens, cols,
                             bool(row.marks), "unified", scroll)
            return
        left, right = _halves(rect)
        for half, line, side in ((left, row.old, "old"), (right, row.new, "new")):
            if line is None:
                painter.fillRect(half, theme.colour("SUBTLE_BG"))
                continue
            numbers = (line, None) if side == "old" else (None, line)
            tokens = self.tokens.tokens(diff, row.hunk, "old" if side == "old" else "new",
                                        line.old_no if side == "old" else line.new_no)
            self._paint_half(painter, half, line, numbers, line.kind, tokens, cols,
                             side in row.marks, "split", scroll)
        painter.setPen(theme.colour("BORDER"))
        painter.drawLine(right.left(), rect.top(), right.left(), rect.bottom())

    def _paint_half(self, painter: QPainter, rect: QRect, line: DiffLine,
                    numbers: tuple[DiffLine | None, DiffLine | None], kind: str,
                    tokens: tuple[Token, ...], cols: Columns, marked: bool, mode: str,
                    scroll: int) -> None:
        text_bg, gutter_bg = LINE_BG.get(kind, LINE_BG["context"])
        gutter = cols.gutter(mode)
        painter.fillRect(QRect(rect.left(), rect.top(), gutter, rect.height()), theme.colour(gutter_bg))
        painter.fillRect(QRect(rect.left() + gutter, rect.top(), rect.width() - gutter,
                               rect.height()), theme.colour(text_bg))
        metrics = painter.fontMetrics()
        baseline = rect.top() + (rect.height() - metrics.height()) // 2 + metrics.ascent()
        if marked:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(theme.ACCENT))
            d = min(MARK_W - 4, rect.height() - 6)
            painter.drawEllipse(rect.left() + 3, rect.center().y() - d // 2, d, d)
        painter.setPen(QColor(theme.MUTED))
        x = rect.left() + MARK_W
        old, new = numbers
        for number in ((old.old_no if old else None), (new.new_no if new else None)):
            if mode == "split" and number is None and (old is None) != (new is None):
                continue  # a split half has one number column
            if number is not None:
                painter.drawText(QRect(x, rect.top(), cols.number - PAD, rect.height()),
                                 Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                                 str(number))
            x += cols.number
        painter.setPen(QColor(theme.TEXT))
        painter.drawText(x + PAD // 2, baseline, SIGN.get(kind, " "))
        text = shown(line.text)
        area = QRect(rect.left() + gutter, rect.top(), rect.width() - gutter, rect.height())
        self._paint_code(painter, area, baseline, text, tokens, scroll)

    def _paint_code(self, painter: QPainter, area: QRect, baseline: int, text: str,
                    tokens: tuple[Token, ...], scroll: int) -> None:
        painter.setClipRect(area)
        metrics = painter.fontMetrics()
        x, at = area.left() + PAD // 2 - scroll, 0
        plain = QColor(theme.TEXT)
        for start, end, role in tokens:
            if start > at:
                painter.setPen(plain)
                painter.drawText(x, baseline, text[at:start])
                x += metrics.horizontalAdvance(text[at:start])
            painter.setPen(theme.colour(role))
            painter.drawText(x, baseline, text[start:end])
            x += metrics.horizontalAdvance(text[start:end])
            at = end
        if at < len(text):
            painter.setPen(plain)
            painter.drawText(x, baseline, text[at:])
        painter.setClipping(False)

    # -- other rows ---------------------------------------------------------------------

    def _paint_banner(self, painter: QPainter, rect: QRect, row: DiffRow, layout: DiffLayout,
                      cols: Columns) -> None:
        if row.kind == "file":
            self._paint_file(painter, rect, row, layout)
            return
        if row.kind == "hunk":
            painter.fillRect(rect, theme.colour("ACCENT_BG"))
            painter.setPen(theme.colour("HUNK_TEXT"))
        else:  # binary, empty, note
            painter.fillRect(rect, theme.colour("SUBTLE_BG"))
            painter.setPen(QColor(theme.MUTED))
            font = painter.font()
            font.setItalic(True)
            painter.setFont(font)
        x = rect.left() + (MARK_W if row.kind == "hunk" else cols.gutter(layout.mode))
        painter.drawText(QRect(x, rect.top(), max(rect.width() - x + rect.left(), 0),
                               rect.height()), Qt.AlignmentFlag.AlignVCenter, row.text)

    def _paint_file(self, painter: QPainter, rect: QRect, row: DiffRow,
                    layout: DiffLayout) -> None:
        diff = layout.files[row.file]
        painter.fillRect(rect, theme.colour("NEUTRAL_BG"))
        painter.setPen(theme.colour("BORDER"))
        painter.drawLine(rect.left(), rect.top(), rect.right(), rect.top())
        mark, colour = STATUS_MARKS.get(diff.status, ("?", "MUTED"))
        font = painter.font()
        font.setBold(True)
        painter.setFont(font)
        metrics = QFontMetrics(font)
        x = rect.left() + PAD
        for text, pen in ((mark, colour), (diff.label, "TEXT"),
                          (f"+{diff.additions}", "OK"), (f"−{diff.deletions}", "ERROR")):
            painter.setPen(theme.colour(pen))
            painter.drawText(QRect(x, rect.top(), metrics.horizontalAdvance(text) + 1,
                                   rect.height()), Qt.AlignmentFlag.AlignVCenter, text)
            x += metrics.horizontalAdvance(text) + 2 * PAD

    def _paint_comment(self, painter: QPainter, rect: QRect, row: DiffRow, mode: str,
                       cols: Columns) -> None:
        comment = row.comment
        assert comment is not None
        painter.fillRect(rect, theme.colour("WARNING_BG"))
        left = rect
        if mode == "split":
            left = _halves(rect)[0 if comment.side == "old" else 1]
        x = left.left() + cols.gutter(mode)
        state = f"{comment.state}"
        font = painter.font()
        bold = QFont(font)
        bold.setBold(True)
        painter.setFont(bold)
        painter.setPen(theme.colour(COMMENT_STATE.get(comment.state, "MUTED")))
        width = QFontMetrics(bold).horizontalAdvance(state)
        painter.drawText(QRect(x, rect.top(), width + 1, rect.height()),
                         Qt.AlignmentFlag.AlignVCenter, state)
        painter.setFont(font)
        painter.setPen(QColor(theme.TEXT))
        body = comment.body.splitlines()[0] if comment.body.strip() else ""
        x += width + 2 * PAD
        room = max(left.right() - x, 0)
        painter.drawText(QRect(x, rect.top(), room, rect.height()), Qt.AlignmentFlag.AlignVCenter,
                         QFontMetrics(font).elidedText(body, Qt.TextElideMode.ElideRight, room))

    def _paint_current(self, painter: QPainter, rect: QRect, model: DiffRowsModel,
                       row: DiffRow) -> None:
        area = rect
        if model.mode == "split" and row.kind == "line":
            area = _halves(rect)[0 if model.side == "old" else 1]
        painter.setClipping(False)
        painter.fillRect(area, theme.colour("DIFF_CURRENT_BG"))
        painter.setPen(theme.colour("ACCENT"))
        painter.drawRect(area.adjusted(0, 0, -1, -1))


def _halves(rect: QRect) -> tuple[QRect, QRect]:
    half = rect.width() // 2
    return (QRect(rect.left(), rect.top(), half, rect.height()),
            QRect(rect.left() + half, rect.top(), rect.width() - half, rect.height()))


def side_at(viewport_width: int, x: int) -> Side:
    """The half of a side-by-side row under ``x`` (viewport coordinates)."""
    return "old" if x < viewport_width // 2 else "new"
