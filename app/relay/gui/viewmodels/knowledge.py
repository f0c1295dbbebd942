"""KnowledgeViewModel: a search over the knowledge graph as a table, one hit previewed.

The search runs through the bridge's TaskRunner (context ``"knowledge"``); a newer search
supersedes an older one still running (its answer is dropped). Selecting a hit asks for
its preview: the lines of the file it points at, as the file is now.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal

from relay.gui import theme
from relay.gui.bridge import EngineBridge
from relay.gui.knowledge_backend import KnowledgeBackend, Preview, SearchAnswer
from relay.gui.viewmodels.table import ColumnsModel, Index
from relay.knowledge.model import Hit

CONTEXT = "knowledge"
#: a kind's colour role in the theme (read when shown)
KIND_COLOURS = {"decision": "ACCENT", "constraint": "WARNING", "do_not_redo": "ERROR",
                "activity": "OK"}
RELEVANCE_COLUMN = 3


class KnowledgeViewModel(ColumnsModel):
    """Signals: statusChanged(str), previewChanged(object: Preview | None), busyChanged(bool).

    The hits come best first: the Relevance column shows each one's rank ("#1") and, in
    :attr:`RelativeRole`, its score as a fraction of the best one's (the dock draws it as a
    bar) — bm25's raw figure ("2.75e-06") means nothing to a reader and only the tooltip
    keeps it. A session's activity hit says which session it is.
    """

    COLUMNS = ("Hit", "Where", "Kind", "Relevance")
    RelativeRole = int(Qt.ItemDataRole.UserRole) + 1
    statusChanged = Signal(str)
    previewChanged = Signal(object)
    busyChanged = Signal(bool)

    def __init__(self, bridge: EngineBridge, backend: KnowledgeBackend,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge, self.backend = bridge, backend
        self.hits: list[Hit] = []
        #: search only this repository (None: every indexed one)
        self.scope: Path | None = None
        #: the repository Rescan indexes (the shown session's)
        self.scan_repo: Path | None = None
        self._generation = 0

    def row_total(self) -> int:
        return len(self.hits)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, column = index.row(), index.column()
        hit = self.hits[row]
        if role == Qt.ItemDataRole.DisplayRole:
            where = f"session {hit.session_id}" if hit.kind == "activity" else hit.where
            return (hit.title, where, hit.kind.replace("_", " "), f"#{row + 1}")[column]
        if role == self.RelativeRole and column == RELEVANCE_COLUMN:
            return self.relative(row)
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == RELEVANCE_COLUMN:
                return (f"Rank {row + 1} of {len(self.hits)}: "
                        f"{self.relative(row):.0%} of the best match's score "
                        f"(bm25 {hit.score:.3g})")
            return hit.snippet
        if role == Qt.ItemDataRole.ForegroundRole and column == 2 and hit.kind in KIND_COLOURS:
            return theme.colour(KIND_COLOURS[hit.kind])
        return None

    def relative(self, row: int) -> float:
        """Hit ``row``'s score as a fraction of the best hit's (1.0: as good as the best)."""
        best = self.hits[0].score if self.hits else 0.0
        if best <= 0:
            return 1.0
        return max(0.0, min(1.0, self.hits[row].score / best))

    def search(self, text: str, limit: int = 50) -> None:
        if not text.strip():
            self.statusChanged.emit("Type words to search the code and what the agents decided.")
            return
        self._generation += 1
        generation = self._generation
        self.busyChanged.emit(True)
        self.bridge.tasks.start(self.backend.search(text, limit, self.scope), context=CONTEXT,
                                on_done=lambda answer: self._answered(generation, answer))

    def _answered(self, generation: int, answer: SearchAnswer) -> None:
        if generation != self._generation:
            return  # a newer search is on its way
        self.busyChanged.emit(False)
        self.beginResetModel()
        self.hits = answer.hits
        self.endResetModel()
        where = f" in {self.scope}" if self.scope else ""
        self.statusChanged.emit(f"{len(answer.hits)} hit{'s' * (len(answer.hits) != 1)} for "
                                f"“{answer.query}”{where} ({answer.took_ms:.0f} ms)")
        self.previewChanged.emit(None)

    def failed(self) -> None:
        """The search failed (the dock shows the error): stop looking busy."""
        self.busyChanged.emit(False)

    def select(self, row: int) -> None:
        if not 0 <= row < len(self.hits):
            self.previewChanged.emit(None)
            return
        self.bridge.tasks.start(self.backend.preview(self.hits[row]), context=CONTEXT,
                                on_done=self._previewed)

    def _previewed(self, preview: Preview) -> None:
        self.previewChanged.emit(preview)

    def scan(self) -> None:
        if self.scan_repo is None:
            self.statusChanged.emit("Select a session first: its repository is scanned.")
            return
        self.busyChanged.emit(True)
        self.statusChanged.emit(f"Scanning {self.scan_repo}…")
        self.bridge.tasks.start(self.backend.scan(self.scan_repo), context=CONTEXT,
                                on_done=self._scanned)

    def _scanned(self, summary: str) -> None:
        self.busyChanged.emit(False)
        self.statusChanged.emit(summary)
