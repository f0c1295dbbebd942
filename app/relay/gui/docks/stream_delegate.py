"""Paints one stream row: fold mark, time, a coloured kind badge and the one-line summary.

Kinds read differently at a glance: assistant text plain, reasoning dimmed and
italic, tool calls with name and arguments, results green or red, limit hits
and fatal errors as full-width banners. (A simulation says so once, in the dock's
banner, not on every row.) Nested events (a call's result) are indented by their depth;
a row with nested events has a fold mark (▾ unfolded, ▸ folded) in :func:`disclosure_rect`.
Every row has the same height (:func:`row_height`), so views need not measure rows — but
a handoff's block, a neutral box of a few labelled lines (:func:`block_height`), which the
view sizes when it is inserted. Rows that hold the search text (:attr:`StreamDelegate.needle`)
are highlighted.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPolygon
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from relay.gui import theme
from relay.gui.viewmodels.stream import StreamViewModel as Vm

Index = QModelIndex | QPersistentModelIndex

_PAD = 6
_BADGE_W = 64
_INDENT = 18  # per nesting level
_MARK_W = 14  # the fold mark


def row_height(font: QFont) -> int:
    """The height of every stream row in ``font``."""
    return QFontMetrics(font).height() + 2 * _PAD


def block_height(font: QFont, lines: int) -> int:
    """The height of a handoff's block of ``lines`` lines (its first line a row's)."""
    return row_height(font) + max(lines - 1, 0) * QFontMetrics(font).lineSpacing() + _PAD


def disclosure_rect(row_rect: QRect, depth: int) -> QRect:
    """Where a row's fold mark is drawn (and where a click folds or unfolds it)."""
    left = row_rect.left() + depth * _INDENT
    return QRect(left, row_rect.top(), _PAD + _MARK_W, row_rect.height())


def _draw_mark(painter: QPainter, area: QRect, expanded: bool) -> None:
    cx, cy, r = area.left() + _PAD + _MARK_W // 2 - 1, area.center().y(), 4
    if expanded:  # ▾
        points = [QPoint(cx - r, cy - r // 2), QPoint(cx + r, cy - r // 2), QPoint(cx, cy + r)]
    else:  # ▸
        points = [QPoint(cx - r // 2, cy - r), QPoint(cx - r // 2, cy + r), QPoint(cx + r, cy)]
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor(theme.MUTED))
    painter.drawPolygon(QPolygon(points))


class StreamDelegate(QStyledItemDelegate):
    """Row painter for :class:`~relay.gui.viewmodels.stream.StreamViewModel`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        #: the search text (lower case); rows that hold it are highlighted
        self.needle = ""

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        block = index.data(Vm.BlockRole)
        return QSize(200, block_height(option.font, len(block)) if block
                     else row_height(option.font))

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        style = str(index.data(Vm.StyleRole))
        badge_bg, fg = theme.ROW_STYLES.get(style, theme.ROW_STYLES["state_changed"])
        rect: QRect = option.rect
        block = index.data(Vm.BlockRole)
        painter.save()
        if option.state & QStyle.StateFlag.State_Selected:
            painter.fillRect(rect, QColor(theme.STREAM_SELECTED_BG))
        elif self.needle and holds(index, self.needle):
            painter.fillRect(rect, QColor(theme.STREAM_SEARCH_HIT_BG))
        elif block:
            painter.setPen(QColor(theme.HANDOFF_BORDER))
            painter.setBrush(QColor(theme.HANDOFF_BG))
            painter.drawRoundedRect(rect.adjusted(1, 2, -2, -2), 5, 5)
        elif index.data(Vm.BannerRole):
            painter.fillRect(rect, QColor(theme.BANNER_BG.get(str(index.data(Vm.KindRole)),
                                                              theme.BANNER_BG["error"])))
        line = QRect(rect.left(), rect.top(), rect.width(), row_height(option.font))
        x = self._head(painter, option, index, line, badge_bg, fg)
        # summary (a block: its first line, then its labelled lines)
        text_font = QFont(option.font)
        text_font.setItalic(style == "reasoning")
        text_font.setBold(bool(index.data(Vm.BannerRole)) or bool(block))
        painter.setFont(text_font)
        colour = theme.MUTED if style in theme.DIMMED_STYLES else (
            fg if style in theme.COLOURED_TEXT_STYLES else theme.TEXT)
        painter.setPen(QColor(colour))
        right = rect.right() - _PAD
        summary = block[0][1] if block else str(index.data(Vm.SummaryRole) or "")
        _draw_elided(painter, QRect(x, line.top(), max(right - x, 0), line.height()), summary)
        if block:
            self._block_lines(painter, option.font, block[1:], QRect(
                x, line.bottom() + 1 - _PAD, max(right - x, 0), rect.bottom() - line.bottom()))
        painter.restore()

    def _head(self, painter: QPainter, option: QStyleOptionViewItem, index: Index, line: QRect,
              badge_bg: str, fg: str) -> int:
        """Fold mark, time and badge on the row's first line; where the summary starts."""
        metrics = QFontMetrics(option.font)
        mark = disclosure_rect(line, int(index.data(Vm.DepthRole) or 0))
        if index.data(Vm.ChildCountRole):
            _draw_mark(painter, mark, bool(index.data(Vm.ExpandedRole)))
        x = mark.right() + 1 + _PAD
        painter.setPen(QColor(theme.MUTED))
        time_w = metrics.horizontalAdvance("00:00:00") + _PAD
        painter.drawText(QRect(x, line.top(), time_w, line.height()),
                         Qt.AlignmentFlag.AlignVCenter, str(index.data(Vm.TimeRole) or ""))
        x += time_w + _PAD
        badge_rect = QRect(x, line.top() + 3, _BADGE_W, line.height() - 6)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(badge_bg))
        painter.drawRoundedRect(badge_rect, 4, 4)
        small = QFont(option.font)
        small.setPointSizeF(max(option.font.pointSizeF() - 1.5, 6.5))
        small.setBold(True)
        painter.setFont(small)
        painter.setPen(QColor(fg))
        painter.drawText(badge_rect, Qt.AlignmentFlag.AlignCenter, str(index.data(Vm.BadgeRole)))
        return badge_rect.right() + _PAD + 2

    @staticmethod
    def _block_lines(painter: QPainter, font: QFont, lines: list[tuple[str, str]],
                     area: QRect) -> None:
        """A handoff block's labelled lines (Why, Paused at, Contract, Receiver…)."""
        bold = QFont(font)
        bold.setBold(True)
        label_w = max((QFontMetrics(bold).horizontalAdvance(f"{label}:") for label, _ in lines),
                      default=0) + _PAD
        step = QFontMetrics(font).lineSpacing()
        for i, (label, text) in enumerate(lines):
            row = QRect(area.left(), area.top() + i * step, area.width(), step)
            painter.setFont(bold)
            painter.setPen(QColor(theme.MUTED))
            painter.drawText(row, Qt.AlignmentFlag.AlignVCenter, f"{label}:")
            painter.setFont(font)
            painter.setPen(QColor(theme.TEXT))
            _draw_elided(painter, row.adjusted(label_w, 0, 0, 0), text)


def _draw_elided(painter: QPainter, area: QRect, text: str) -> None:
    elided = painter.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight, area.width())
    painter.drawText(area, Qt.AlignmentFlag.AlignVCenter, elided)


def holds(index: Index, needle: str) -> bool:
    """Whether the row's summary or detail holds ``needle`` (lower case)."""
    return any(needle in str(index.data(role) or "").lower()
               for role in (Vm.SummaryRole, Vm.TextRole))
