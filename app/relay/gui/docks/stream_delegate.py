"""Paints one stream row: fold mark, time, a coloured kind badge and the one-line summary.

Kinds read differently at a glance: assistant text plain, reasoning dimmed and
italic, tool calls with name and arguments, results green or red, limit hits
and fatal errors as full-width banners, simulated rows with a SIM mark. Nested
events (a call's result) are indented by their depth; a row with nested events
has a fold mark (▾ unfolded, ▸ folded) in :func:`disclosure_rect`. Every row
has the same height (:func:`row_height`), so views need not measure rows.
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

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        return QSize(200, row_height(option.font))  # the same for every row

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        style = str(index.data(Vm.StyleRole))
        badge_bg, fg = theme.ROW_STYLES.get(style, (theme.SUBTLE_BG, theme.TEXT))
        rect: QRect = option.rect
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        painter.save()
        if selected:
            painter.fillRect(rect, theme.colour("SELECTION_BG"))
        elif index.data(Vm.BannerRole):
            painter.fillRect(rect, QColor(theme.BANNER_BG.get(str(index.data(Vm.KindRole)),
                                                              theme.ERROR_BG)))
        font = QFont(option.font)
        metrics = QFontMetrics(font)
        # indentation and fold mark
        mark = disclosure_rect(rect, int(index.data(Vm.DepthRole) or 0))
        if index.data(Vm.ChildCountRole):
            _draw_mark(painter, mark, bool(index.data(Vm.ExpandedRole)))
        x = mark.right() + 1 + _PAD
        # time
        painter.setPen(QColor(theme.MUTED))
        time_text = str(index.data(Vm.TimeRole) or "")
        time_w = metrics.horizontalAdvance("00:00:00") + _PAD
        painter.drawText(QRect(x, rect.top(), time_w, rect.height()),
                         Qt.AlignmentFlag.AlignVCenter, time_text)
        x += time_w + _PAD
        # badge
        badge_rect = QRect(x, rect.top() + 3, _BADGE_W, rect.height() - 6)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(badge_bg))
        painter.drawRoundedRect(badge_rect, 4, 4)
        small = QFont(font)
        small.setPointSizeF(max(font.pointSizeF() - 1.5, 6.5))
        small.setBold(True)
        painter.setFont(small)
        painter.setPen(QColor(fg))
        painter.drawText(badge_rect, Qt.AlignmentFlag.AlignCenter, str(index.data(Vm.BadgeRole)))
        x = badge_rect.right() + _PAD + 2
        # simulated mark (right edge)
        right = rect.right() - _PAD
        if index.data(Vm.SimulatedRole):
            sim_w = QFontMetrics(small).horizontalAdvance("SIM") + 8
            sim_rect = QRect(right - sim_w, rect.top() + 4, sim_w, rect.height() - 8)
            painter.setPen(QColor(theme.SIMULATION_BORDER))
            painter.setBrush(QColor(theme.SIMULATION_BG))
            painter.drawRoundedRect(sim_rect, 3, 3)
            painter.setPen(QColor(theme.SIMULATION_TEXT))
            painter.drawText(sim_rect, Qt.AlignmentFlag.AlignCenter, "SIM")
            right = sim_rect.left() - _PAD
        # summary
        text_font = QFont(font)
        text_font.setItalic(style == "reasoning")
        text_font.setBold(bool(index.data(Vm.BannerRole)))
        painter.setFont(text_font)
        colour = theme.MUTED if style in theme.DIMMED_STYLES else (
            fg if style in theme.COLOURED_TEXT_STYLES else theme.TEXT)
        painter.setPen(QColor(colour))
        text_rect = QRect(x, rect.top(), max(right - x, 0), rect.height())
        text = QFontMetrics(text_font).elidedText(str(index.data(Vm.SummaryRole) or ""),
                                                  Qt.TextElideMode.ElideRight, text_rect.width())
        painter.drawText(text_rect, Qt.AlignmentFlag.AlignVCenter, text)
        painter.restore()
