"""How the window fits a small screen (issue 23: 1024×700, or ×2 scaling on a laptop): the
pieces every dock uses so that none asks for more room than such a screen has.

* :func:`scrolled` — a dock's content in a scroll area: a panel smaller than what it holds
  scrolls instead of widening (or heightening) the window.
* :func:`tool_row` — a row of buttons and fields as a :class:`QToolBar`: what does not fit
  goes behind its extension button (»), a menu of the rest, instead of widening the dock.
* :class:`ElidedLabel` — a label of at most N lines, cut with "…", the whole text in its
  tooltip; it asks for a few characters' width, not its text's.

No logic: construction and painting only.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFontMetrics, QMouseEvent, QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QToolBar,
    QWidget,
    QWidgetAction,
)

from relay.core.termsafe import terminal_safe

#: the width, in average characters, an elided label asks for at least
ELIDED_MIN_CHARS = 12
#: the lines an expandable label shows when expanded (its dock scrolls past them)
EXPANDED_LINES = 40
#: the most of a label's text its tooltip shows (a tooltip taller than the screen is no use)
TOOLTIP_CHARS = 2000


def scrolled(content: QWidget, name: str = "") -> QScrollArea:
    """``content`` in a frameless scroll area that resizes it: it fills the area while the
    area is at least its minimum size, and scrolls (either way) when the area is smaller."""
    area = QScrollArea()
    if name:
        area.setObjectName(name)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidgetResizable(True)
    area.setWidget(content)
    return area


def tool_row(*widgets: QWidget | None, name: str = "") -> QToolBar:
    """``widgets`` in a row that overflows into a menu: a toolbar (not movable, text only);
    ``None`` is a separator between groups. A widget whose horizontal size policy expands
    (a line edit, a stretching label) takes the room left."""
    bar = QToolBar()
    if name:
        bar.setObjectName(name)
    bar.setMovable(False)
    bar.setFloatable(False)
    bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
    bar.setStyleSheet("QToolBar { border: none; padding: 0px; spacing: 4px; }")
    for widget in widgets:
        if widget is None:
            bar.addSeparator()
        else:
            bar.addWidget(widget)
    return bar


def set_shown(widget: QWidget, shown: bool) -> None:
    """Show or hide ``widget``, also in a :func:`tool_row`, where its action's visibility is
    what counts (the toolbar's layout shows or hides the widget, or puts it behind »); the
    widget itself follows at once, not at the toolbar's next layout."""
    bar = widget.parentWidget()
    if isinstance(bar, QToolBar):
        for action in bar.actions():
            if isinstance(action, QWidgetAction) and bar.widgetForAction(action) is widget:
                action.setVisible(shown)
    widget.setVisible(shown)


class ElidedLabel(QLabel):
    """Plain text in at most ``lines`` lines (word-wrapped, the last one cut with "…"); the
    whole text is the tooltip and what :meth:`text` returns. Its minimum width is a few characters,
    so a long task or path never widens the dock; its height follows the lines shown."""

    def __init__(self, text: str = "", lines: int = 1, parent: QWidget | None = None, *,
                 expandable: bool = False) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(False)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self._lines = self._few = max(lines, 1)
        self._full = ""
        self.expandable = expandable
        if expandable:
            self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setText(text)

    @property
    def expanded(self) -> bool:
        return self._lines > self._few

    def toggle(self) -> None:
        """An expandable label's click: up to :data:`EXPANDED_LINES` lines, or few again."""
        self.set_lines(self._few if self.expanded else EXPANDED_LINES)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self.expandable and event.button() == Qt.MouseButton.LeftButton:
            self.toggle()
        super().mouseReleaseEvent(event)

    def text(self) -> str:
        """The whole text (what is painted may be cut: Qt paints its own copy)."""
        return self._full

    def set_lines(self, lines: int) -> None:
        """Show at most ``lines`` lines."""
        self._lines = max(lines, 1)
        self._elide()
        self.updateGeometry()

    def setText(self, text: str) -> None:
        self._full = terminal_safe(text)
        hint = "\n\n(click to show more or less)" if self.expandable and self._full else ""
        tip = self._full if len(self._full) <= TOOLTIP_CHARS else (
            self._full[:TOOLTIP_CHARS] + " …")
        self.setToolTip(tip + hint)
        self._elide()
        self.updateGeometry()

    def _shown_lines(self, width: int) -> list[str]:
        """The lines at ``width`` pixels: wrapped at spaces, at most the label's number, the
        last one cut with "…" when text is left over."""
        metrics = QFontMetrics(self.font())
        width = max(width, metrics.averageCharWidth() * 4)
        wrapped: list[str] = []
        for paragraph in self._full.splitlines() or [""]:
            rest = paragraph
            while metrics.horizontalAdvance(rest) > width and len(wrapped) <= self._lines:
                cut = _break_at(metrics, rest, width)
                wrapped.append(rest[:cut].rstrip())
                rest = rest[cut:].lstrip()
            wrapped.append(rest)
            if len(wrapped) > self._lines:
                break
        if len(wrapped) <= self._lines:
            return wrapped
        shown = wrapped[:self._lines]
        last, following = shown[-1], wrapped[self._lines]
        joined = f"{last} {following}"
        ending = metrics.elidedText(joined, Qt.TextElideMode.ElideRight, width)
        if ending == joined:  # the rest starts a new paragraph and happens to fit
            ending = metrics.elidedText(f"{last} …", Qt.TextElideMode.ElideRight, width)
        shown[-1] = ending
        return shown

    def _elide(self) -> None:
        super().setText("\n".join(self._shown_lines(self.contentsRect().width())))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        margins = self.contentsMargins()
        inner = width - margins.left() - margins.right()
        lines = len(self._shown_lines(inner)) if self._full else 1
        return self.fontMetrics().lineSpacing() * lines + margins.top() + margins.bottom()

    def minimumSizeHint(self) -> QSize:
        margins = self.contentsMargins()
        return QSize(self.fontMetrics().averageCharWidth() * ELIDED_MIN_CHARS
                     + margins.left() + margins.right(),
                     self.fontMetrics().lineSpacing() + margins.top() + margins.bottom())

    def sizeHint(self) -> QSize:
        margins = self.contentsMargins()
        widest = max((self.fontMetrics().horizontalAdvance(line)
                      for line in self._full.splitlines()), default=0)
        width = max(min(widest + margins.left() + margins.right() + 2, 640),
                    self.minimumSizeHint().width())
        return QSize(width, self.heightForWidth(width))


def _break_at(metrics: QFontMetrics, text: str, width: int) -> int:
    """Where to end a line of ``text`` that is wider than ``width``: after the last space
    that fits, else after the last character that fits."""
    fits = 1
    for i in range(1, len(text) + 1):
        if metrics.horizontalAdvance(text[:i]) > width:
            break
        fits = i
    space = text.rfind(" ", 0, fits + 1)
    return space + 1 if space > 0 else fits
