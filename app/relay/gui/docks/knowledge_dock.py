"""KnowledgeDock: search what Relay knows about the project — code symbols and what the agents
decided, ruled out and did — ranked by FTS5, each hit with its file and lines.

Top: the search field, "This repository only" (the repository of the session shown) and
Rescan (the code scanner over that repository). Then the hits (title, path:lines, kind,
score) over a preview of the selected hit's lines as the file is now. Errors show in
place. The words and the work come from the view-model; the widgets only show.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QItemSelection, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QCheckBox,
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from relay.gui import theme
from relay.gui.docks.parts import PlainLabel, empty_or_content, row_table
from relay.gui.knowledge_backend import Preview
from relay.gui.messages import ErrorBanner
from relay.gui.viewmodels.knowledge import KnowledgeViewModel

EMPTY_TEXT = ("Search the project's code and what the agents decided.\n"
              "Sessions index their repository when they start.")


class KnowledgeDock(QDockWidget):
    def __init__(self, vm: KnowledgeViewModel, parent: QWidget | None = None) -> None:
        super().__init__("Knowledge", parent)
        self.setObjectName("knowledgeDock")
        self.vm = vm
        self._session_repo: Path | None = None
        self.query = QLineEdit()
        self.query.setObjectName("knowledgeQuery")
        self.query.setPlaceholderText("Search symbols, files, decisions… (Enter)")
        self.query.setClearButtonEnabled(True)
        self.query.returnPressed.connect(lambda: self.vm.search(self.query.text()))
        self.only_repo = QCheckBox("This repository only")
        self.only_repo.setObjectName("knowledgeOnlyRepo")
        self.only_repo.setEnabled(False)
        self.only_repo.toggled.connect(self._scope)
        self.rescan = QPushButton("Rescan")
        self.rescan.setObjectName("knowledgeRescan")
        self.rescan.setToolTip("Index the code of the shown session's repository again")
        self.rescan.setEnabled(False)
        self.rescan.clicked.connect(self.vm.scan)
        bar = QHBoxLayout()
        bar.addWidget(self.query, 1)
        bar.addWidget(self.only_repo)
        bar.addWidget(self.rescan)
        self.status = QLabel()
        self.status.setObjectName("knowledgeStatus")
        theme.style(self.status, "color: $MUTED;")
        self.error = ErrorBanner("knowledgeError")
        self.table = row_table("knowledgeHits", vm, stretch=0)
        self.table.selectionModel().selectionChanged.connect(self._selected)
        self.preview = QPlainTextEdit()
        self.preview.setObjectName("knowledgePreview")
        self.preview.setReadOnly(True)
        self.preview.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.preview.setFont(QFont("monospace"))
        self.preview_title = PlainLabel()
        self.preview_title.setObjectName("knowledgePreviewTitle")
        lower = QWidget()
        lower_layout = QVBoxLayout(lower)
        lower_layout.setContentsMargins(0, 0, 0, 0)
        lower_layout.addWidget(self.preview_title)
        lower_layout.addWidget(self.preview, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(lower)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        self.pages, self.empty = empty_or_content(EMPTY_TEXT, "knowledgeEmpty", split)
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.addLayout(bar)
        layout.addWidget(self.status)
        layout.addWidget(self.error)
        layout.addWidget(self.pages, 1)
        self.setWidget(body)
        vm.statusChanged.connect(self._status)
        vm.previewChanged.connect(self._preview)
        vm.busyChanged.connect(lambda busy: self.rescan.setEnabled(
            not busy and self._session_repo is not None))
        vm.modelReset.connect(self._results)

    def follow_repo(self, repo: Path | None) -> None:
        """The repository of the session the window shows (scope and Rescan)."""
        self._session_repo = repo
        self.only_repo.setEnabled(repo is not None)
        self.only_repo.setToolTip(str(repo) if repo else "")
        self.rescan.setEnabled(repo is not None)
        self._scope(self.only_repo.isChecked())

    def show_error(self, message: str, hint: str = "") -> None:
        self.vm.failed()
        self.error.show_error(message, hint)

    def _scope(self, only: bool) -> None:
        self.vm.scope = self._session_repo if only else None
        self.vm.scan_repo = self._session_repo

    def _status(self, text: str) -> None:
        self.error.hide()
        self.status.setText(text)

    def _results(self) -> None:
        self.pages.setCurrentIndex(1 if self.vm.hits else 0)
        if not self.vm.hits:
            self.empty.setText("Nothing found. Try other words, or Rescan the repository.")

    def _selected(self, selected: QItemSelection, _: QItemSelection) -> None:
        rows = selected.indexes()
        self.vm.select(rows[0].row() if rows else -1)

    def _preview(self, preview: Preview | None) -> None:
        if preview is None:
            self.preview_title.clear()
            self.preview.clear()
            return
        note = f" — {preview.note}" if preview.note else ""
        self.preview_title.setText(f"{preview.title}{note}")
        self.preview.setPlainText(preview.text)
