"""Paints one stream row: time, a coloured kind badge and the one-line summary.

Kinds read differently at a glance: assistant text plain, reasoning dimmed and
italic, tool calls with name and arguments, results green or red, limit hits
and fatal errors as full-width banners, simulated rows with a SIM mark.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from relay.gui import theme
from relay.gui.viewmodels.stream import StreamViewModel as Vm

Index = QModelIndex | QPersistentModelIndex

_PAD = 6
_BADGE_W = 64


class StreamDelegate(QStyledItemDelegate):
    """Row painter for :class:`~relay.gui.viewmodels.stream.StreamViewModel`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        height = QFontMetrics(option.font).height() + 2 * _PAD
        return QSize(200, height)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        style = str(index.data(Vm.StyleRole))
        badge_bg, fg = theme.ROW_STYLES.get(style, ("#f6f8fa", theme.TEXT))
        rect: QRect = option.rect
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        painter.save()
        if selected:
            painter.fillRect(rect, QColor("#cfe3ff"))
        elif index.data(Vm.BannerRole):
            painter.fillRect(rect, QColor(theme.BANNER_BG.get(str(index.data(Vm.KindRole)),
                                                              "#ffebe9")))
        font = QFont(option.font)
        metrics = QFontMetrics(font)
        x = rect.left() + _PAD
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
