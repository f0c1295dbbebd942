"""Docks for panels that are not built yet: a "coming soon" label, nothing more."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QLabel, QWidget

from relay.gui import theme

#: (object name, title) of every placeholder panel.
PLACEHOLDERS = (
    ("historyDock", "History"),
)


class PlaceholderDock(QDockWidget):
    """A dock whose only content says the panel is coming soon."""

    def __init__(self, object_name: str, title: str, parent: QWidget | None = None) -> None:
        super().__init__(title, parent)
        self.setObjectName(object_name)
        self.label = QLabel(f"{title} — coming soon")
        self.label.setObjectName("placeholderLabel")
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.label.setStyleSheet(theme.PLACEHOLDER_CSS)
        self.setWidget(self.label)


def placeholder_docks(parent: QWidget | None = None) -> list[PlaceholderDock]:
    return [PlaceholderDock(name, title, parent) for name, title in PLACEHOLDERS]
