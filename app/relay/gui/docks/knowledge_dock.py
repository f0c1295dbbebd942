"""KnowledgeDock: search what Relay knows about the project — code symbols and what the agents
decided, ruled out and did — ranked by FTS5, each hit with its file and lines.

Top: the search field, "This repository only" (the repository of the session shown) and
Rescan (the code scanner over that repository). Then the hits (title, path:lines, kind,
relevance: the rank and a bar as long as the score relative to the best hit's — see
:class:`RelevanceDelegate`) over a preview of the selected hit's lines as the file is now.
Errors show in place. The words and the work come from the view-model; the widgets only
show.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QItemSelection, QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPainter
from PySide6.QtWidgets import (
    QCheckBox,
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from relay.gui import theme
from relay.gui.docks.parts import PlainLabel, empty_or_content, row_table
from relay.gui.knowledge_backend import Preview
from relay.gui.messages import ErrorBanner
from relay.gui.viewmodels.knowledge import RELEVANCE_COLUMN, KnowledgeViewModel

EMPTY_TEXT = ("Search the project's code and what the agents decided.\n"
              "Sessions index their repository when they start.")


#: the relevance bar's widest, and its opacity over the row
BAR_WIDTH = 64
BAR_ALPHA = 110


class RelevanceDelegate(QStyledItemDelegate):
    """The Relevance cell: the rank ("#1") beside a bar of the hit's relative score."""

    def sizeHint(self, option: QStyleOptionViewItem,
                 index: QModelIndex | QPersistentModelIndex) -> QSize:
        size = super().sizeHint(option, index)
        return QSize(size.width() + BAR_WIDTH + 8, size.height())

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        super().paint(painter, option, index)  # the selection and the rank
        fraction = index.data(KnowledgeViewModel.RelativeRole)
        if not isinstance(fraction, float):
            return
        rect: QRect = option.rect
        left = rect.right() - BAR_WIDTH - 4
        height = max(rect.height() // 3, 4)
        top = rect.top() + (rect.height() - height) // 2
        colour = QColor(theme.ACCENT)
        painter.save()
        painter.setPen(Qt.PenStyle.NoPen)
        track = QColor(theme.MUTED)
        track.setAlpha(50)
        painter.setBrush(track)
        painter.drawRoundedRect(QRect(left, top, BAR_WIDTH, height), 2, 2)
        colour.setAlpha(BAR_ALPHA + int((255 - BAR_ALPHA) * fraction))
        painter.setBrush(colour)
        painter.drawRoundedRect(QRect(left, top, max(2, round(BAR_WIDTH * fraction)), height),
                                2, 2)
        painter.restore()


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
        self.relevance = RelevanceDelegate(self.table)
        self.table.setItemDelegateForColumn(RELEVANCE_COLUMN, self.relevance)
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
