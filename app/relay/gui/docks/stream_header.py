"""The stream dock's header: the task as a title of at most two lines, the session's
runtime, model, permissions and state, its usage and cost, and Stop.

A task can be long (a pipeline step's preamble, an adopted session's whole contract in
markdown): the title is plain text from its first meaningful lines
(:func:`~relay.gui.event_text.task_title`), wrapped to at most two lines and elided
(:class:`ElidedTitle`); the whole task is its tooltip, and "Full task" unfolds it in a
small scrolling box. However long the task, the header asks for no more room than a
short one.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QPainter, QPaintEvent, QResizeEvent, QTextLayout
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QWidget,
)

from relay.gui import theme
from relay.gui.event_text import plain_tooltip, task_title

#: how much of a task its tooltip shows
TOOLTIP_CHARS = 2000


class ElidedTitle(QWidget):
    """Plain text word-wrapped to at most :attr:`max_lines` lines, the last one elided.

    Its height follows its width (one line or :attr:`max_lines`); it asks for no width.
    """

    def __init__(self, max_lines: int = 2, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.max_lines = max_lines
        self._text = ""
        self._lines: list[str] = []
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:
        self._text = " ".join(text.split())
        self._relayout()

    def set_line(self, text: str) -> None:
        """Show ``text``, with all of it as the tooltip when it does not fit."""
        self.setText(text)
        self.setToolTip(plain_tooltip(text) if text else "")

    def shown_lines(self) -> list[str]:
        """The lines drawn now (the last one elided when the text goes on)."""
        return list(self._lines)

    def is_elided(self) -> bool:
        return bool(self._lines) and " ".join(self._lines) != self._text

    def lines_at(self, width: int) -> list[str]:
        """The text wrapped at ``width``: at most :attr:`max_lines` lines, the last elided."""
        text, width = self._text, max(width, 1)
        if not text:
            return []
        layout = QTextLayout(text, self.font())
        layout.beginLayout()
        lines: list[str] = []
        while len(lines) < self.max_lines:
            line = layout.createLine()
            if not line.isValid():
                break
            line.setLineWidth(width)
            start = line.textStart()
            if len(lines) == self.max_lines - 1:  # the last: the rest of the text, elided
                lines.append(QFontMetrics(self.font()).elidedText(
                    text[start:], Qt.TextElideMode.ElideRight, width))
            else:
                lines.append(text[start:start + line.textLength()].rstrip())
        layout.endLayout()
        return lines

    def _relayout(self) -> None:
        self._lines = self.lines_at(self.width())
        height = max(len(self._lines), 1) * QFontMetrics(self.font()).lineSpacing()
        if self.height() != height or self.minimumHeight() != height:
            self.setFixedHeight(height)
        self.update()

    def sizeHint(self) -> QSize:
        metrics = QFontMetrics(self.font())
        return QSize(min(metrics.horizontalAdvance(self._text), 480), self.height())

    def minimumSizeHint(self) -> QSize:
        return QSize(60, QFontMetrics(self.font()).lineSpacing())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._relayout()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # rewrap
            self._relayout()

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setPen(self.palette().windowText().color())
        step = QFontMetrics(self.font()).lineSpacing()
        for i, line in enumerate(self._lines):
            painter.drawText(0, i * step, self.width(), step,
                             int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), line)


class StreamHeader(QFrame):
    """The title (with its "Full task" toggle and box), meta, usage and Stop."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("streamHeader")
        self.title = ElidedTitle(2)
        self.title.setObjectName("streamTitle")
        font = QFont(self.title.font())
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.title.setFont(font)
        self.expand = QToolButton()
        self.expand.setObjectName("streamTitleExpand")
        self.expand.setCheckable(True)
        self.expand.setAutoRaise(True)
        self.expand.toggled.connect(self._on_expand)
        self.full = QPlainTextEdit()
        self.full.setObjectName("streamTask")
        self.full.setReadOnly(True)
        self.full.setFrameShape(QFrame.Shape.StyledPanel)
        lines = self.full.fontMetrics().lineSpacing()
        self.full.setMinimumHeight(2 * lines + 10)
        self.full.setMaximumHeight(10 * lines + 10)
        self.full.hide()
        self.meta = ElidedTitle(1)
        self.meta.setObjectName("streamMeta")
        self.usage = ElidedTitle(1)
        self.usage.setObjectName("streamUsage")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("stopButton")
        self.stop_button.setToolTip("Stop this session (the agent process tree is ended)")
        grid = QGridLayout(self)
        grid.setContentsMargins(8, 5, 8, 5)
        grid.setVerticalSpacing(2)
        grid.addWidget(self.title, 0, 0)
        grid.addWidget(self.expand, 0, 1, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(self.stop_button, 0, 2, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(self.full, 1, 0, 1, 3)
        grid.addWidget(self.meta, 2, 0, 1, 3)
        grid.addWidget(self.usage, 3, 0, 1, 3)
        grid.setColumnStretch(0, 1)
        self._task = ""
        theme.style(self, "$HEADER_CSS")
        self._on_expand(False)

    def set_task(self, task: str) -> None:
        """Show ``task``: its title, its tooltip and (unfolded) all of it."""
        if task == self._task:
            return
        self._task = task
        self.title.setText(task_title(task))
        self.title.setToolTip(plain_tooltip(task[:TOOLTIP_CHARS] + (
            "…" if len(task) > TOOLTIP_CHARS else "")) if task else "")
        self.full.setPlainText(task)
        self.expand.setChecked(False)
        self._update_expand()

    def _update_expand(self) -> None:
        more = self.title.is_elided() or " ".join(self._task.split()) != self.title.text()
        self.expand.setVisible(more or self.expand.isChecked())

    def _on_expand(self, on: bool) -> None:
        self.full.setVisible(on)
        self.expand.setText("Less" if on else "Full task")
        self.expand.setArrowType(Qt.ArrowType.UpArrow if on else Qt.ArrowType.DownArrow)
        self.expand.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.expand.setToolTip("Hide the whole task" if on else "Show the whole task as written")

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._update_expand()  # elided or not depends on the width
