"""Widgets several docks build the same way (no logic: construction only; :class:`PlainLabel`
for text Relay did not write)."""

from __future__ import annotations

from PySide6.QtCore import QAbstractItemModel, Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QStackedWidget,
    QTableView,
    QWidget,
)

from relay.core.termsafe import terminal_safe
from relay.gui import theme


class PlainLabel(QLabel):
    """A label for text from an agent, a transcript or a repository: shown as written, never
    as rich text (a QLabel guesses rich text from a leading tag), control characters shown as
    ``\x1b`` (:func:`relay.core.termsafe.terminal_safe`)."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setText(text)

    def setText(self, text: str) -> None:
        super().setText(terminal_safe(text))


def detail_view(name: str, placeholder: str) -> QPlainTextEdit:
    """A read-only, fixed-width pane that shows the selected row in full."""
    view = QPlainTextEdit()
    view.setObjectName(name)
    view.setReadOnly(True)
    view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    view.setPlaceholderText(placeholder)
    return view


def painted_rows(view: QTableView) -> None:
    """A table whose delegate paints every row: no headers, fixed row heights (set by the
    caller), no grid or wrapping, whole-row single selection, no editing, pixel scrolling —
    only the rows in sight are ever painted."""
    view.horizontalHeader().hide()
    rows = view.verticalHeader()
    rows.hide()
    rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    rows.setMinimumSectionSize(1)
    view.setShowGrid(False)
    view.setWordWrap(False)
    view.setCornerButtonEnabled(False)
    view.setTabKeyNavigation(False)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)


def empty_or_content(text: str, name: str, content: QWidget) -> tuple[QStackedWidget, QLabel]:
    """Pages: 0 a centred placeholder (``text``), 1 ``content``."""
    empty = QLabel(text)
    empty.setObjectName(name)
    empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
    empty.setWordWrap(True)  # a long placeholder must not make the window wider than 1024
    theme.style(empty, "$PLACEHOLDER_CSS")
    pages = QStackedWidget()
    pages.addWidget(empty)
    pages.addWidget(content)
    return pages, empty


def show_now(widget: QWidget) -> None:
    """Show ``widget``, just added to a layout, now rather than at Qt's queued "show later".

    A widget added to the layout of a parent already on screen is shown by a queued call
    (``QLayout::addChildWidget``): until the event loop gets to it the widget is hidden although
    its parent and the model it shows say otherwise, so whatever reads the dock right after the
    model changed (a test, an accessibility client, the next line of code) sees it missing —
    for longer under load. Like that queued call, a widget hidden on purpose stays hidden; a
    widget with no parent yet is left alone (showing it would open a window of its own).
    """
    explicitly_hidden = (widget.isHidden()
                         and widget.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide))
    if widget.parentWidget() is not None and not explicitly_hidden:
        widget.show()


def row_table(name: str, model: QAbstractItemModel, stretch: int, row_height: int = 26) -> QTableView:
    """A table of whole-row, single selection, no grid, columns sized to their contents
    except ``stretch``, which takes the rest."""
    table = QTableView()
    table.setObjectName(name)
    table.setModel(model)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setShowGrid(False)
    table.setWordWrap(False)
    table.verticalHeader().hide()
    table.verticalHeader().setDefaultSectionSize(row_height)
    header = table.horizontalHeader()
    header.setHighlightSections(False)
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    return table
