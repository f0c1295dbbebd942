"""Widgets several docks build the same way (no logic: construction only)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QStackedWidget, QWidget

from relay.gui import theme


def detail_view(name: str, placeholder: str) -> QPlainTextEdit:
    """A read-only, fixed-width pane that shows the selected row in full."""
    view = QPlainTextEdit()
    view.setObjectName(name)
    view.setReadOnly(True)
    view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    view.setPlaceholderText(placeholder)
    return view


def empty_or_content(text: str, name: str, content: QWidget) -> tuple[QStackedWidget, QLabel]:
    """Pages: 0 a centred placeholder (``text``), 1 ``content``."""
    empty = QLabel(text)
    empty.setObjectName(name)
    empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
    empty.setStyleSheet(theme.PLACEHOLDER_CSS)
    pages = QStackedWidget()
    pages.addWidget(empty)
    pages.addWidget(content)
    return pages, empty
