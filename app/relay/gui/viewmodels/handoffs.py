"""HandoffsViewModel: the handoff state machine of the shown session, live.

One row per handoff, one column per state (the time it was reached). The
rows come from the same history the stream shows (the stream view-model's
records once it has loaded a session — read once, not twice), then from live
``handoff_step`` records; the journal (:meth:`Engine.handoffs`) is re-read
after each step for what a step produced (the contract folder, the error).

"Hand off now" is an intent here: :meth:`request_handoff` calls
``Engine.request_handoff`` through the bridge; the engine's answer is
:attr:`answer`, a refusal reaches the panel through ``TaskRunner.failed``
(context ``"handoff"``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import (
    QModelIndex,
    QObject,
    Qt,
    Signal,
)
from PySide6.QtGui import QFont

from relay.core.events import EventRecord
from relay.core.states import ACTIVE_STATES
from relay.gui import theme
from relay.gui.bridge import EngineBridge
from relay.gui.handoff_text import STEP_TITLES, STEPS, clock
from relay.gui.viewmodels.handoff_timeline import HandoffLine, HandoffTimeline
from relay.gui.viewmodels.stream import StreamViewModel
from relay.gui.viewmodels.table import ColumnsModel, Index

COLUMNS = ("Handoff", *(STEP_TITLES[s] for s in STEPS))
CONTEXT = "handoff"
#: sessions a "hand off now" may be asked for (the engine answers the rest with a refusal)


class HandoffsViewModel(ColumnsModel):
    """The shown session's handoffs as a table of states and times.

    Signals:
        changed(): the session, whether it can be handed off, or the last answer changed.
        handoffChanged(str): a handoff's steps or journal row changed (its id).
    """

    COLUMNS = COLUMNS

    HandoffIdRole = Qt.ItemDataRole.UserRole + 1
    #: per cell: "current", "reached", "failed" or "" (not reached)
    CellStateRole = Qt.ItemDataRole.UserRole + 2

    changed = Signal()
    handoffChanged = Signal(str)

    def __init__(self, bridge: EngineBridge, stream: StreamViewModel,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._stream = stream
        self._timeline = HandoffTimeline()
        self._session_id: str | None = None
        self._loaded = False
        self._answer = ""
        self._journal_task: asyncio.Task[None] | None = None
        self._journal_dirty = False
        stream.modelReset.connect(self._on_switched)
        stream.loaded.connect(self._on_loaded)
        stream.headerChanged.connect(self.changed)
        bridge.records.connect(self.on_records)

    # -- reading ------------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self._session_id

    @property
    def can_hand_off(self) -> bool:
        row = self._stream.session
        return row is not None and row.id == self._session_id and row.state in ACTIVE_STATES

    @property
    def answer(self) -> str:
        """What the engine said it will do for the last "hand off now" of this session."""
        return self._answer

    def lines(self) -> list[HandoffLine]:
        return list(self._timeline.lines)

    def line(self, row: int) -> HandoffLine:
        return self._timeline.lines[row]

    def row_of(self, handoff_id: str) -> int | None:
        return self._timeline.row_of(handoff_id)

    # -- intents ------------------------------------------------------------------------

    def request_handoff(self, target: str | None, session_id: str | None = None) -> None:
        """Hand the session (default: the shown one) off now, to ``target`` or the next entry."""
        sid = session_id or self._session_id
        if sid is None:
            return
        self._answer = ""
        self.changed.emit()
        self._bridge.request_handoff(sid, target, context=CONTEXT,
                                     on_done=lambda text: self._answered(sid, text))

    def _answered(self, session_id: str, text: str) -> None:
        if session_id == self._session_id:
            self._answer = text
            self.changed.emit()

    # -- following the shown session ------------------------------------------------------

    def _on_switched(self) -> None:
        if self._stream.session_id == self._session_id:
            return
        self.beginResetModel()
        self._timeline = HandoffTimeline()
        self._session_id, self._loaded, self._answer = self._stream.session_id, False, ""
        self.endResetModel()
        self.changed.emit()

    def _on_loaded(self, session_id: str) -> None:
        if session_id != self._session_id:
            return
        self._loaded = True
        self._apply(self._stream.records())
        self._refresh_journal()

    def on_records(self, batch: Sequence[EventRecord]) -> None:
        """Live records (any session): the shown session's handoff steps are applied."""
        if not self._loaded:
            return  # the history the stream is loading holds them
        steps = [r for r in batch if r.session_id == self._session_id
                 and r.event.kind == "handoff_step"]
        if steps:
            self._apply(steps)
            self._refresh_journal()

    def _apply(self, records: list[EventRecord]) -> None:
        self._insert(self._timeline.unknown_in(records))
        self._rows_changed(self._timeline.add_records(records))

    def _insert(self, handoff_ids: list[str]) -> None:
        if handoff_ids:
            first = len(self._timeline.lines)
            self.beginInsertRows(QModelIndex(), first, first + len(handoff_ids) - 1)
            self._timeline.create(handoff_ids)
            self.endInsertRows()
            for handoff_id in handoff_ids:
                self.handoffChanged.emit(handoff_id)

    def _rows_changed(self, rows: list[int]) -> None:
        for row in rows:
            self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))
            self.handoffChanged.emit(self._timeline.lines[row].id)

    def _refresh_journal(self) -> None:
        """Re-read the journal soon (coalesced with a read under way)."""
        self._journal_dirty = True
        if self._journal_task is None or self._journal_task.done():
            self._journal_task = self._bridge.tasks.start(self._read_journal(), context=CONTEXT)

    async def _read_journal(self) -> None:
        while self._journal_dirty and self._session_id is not None:
            self._journal_dirty = False
            session_id = self._session_id
            records = await self._bridge.source.handoffs(session_id)
            if session_id != self._session_id:
                continue  # the user moved on meanwhile
            records.sort(key=lambda r: r.created_at)
            self._insert(self._timeline.unknown_in(records))
            self._rows_changed(self._timeline.merge_journal(records))

    # -- QAbstractTableModel ------------------------------------------------------------

    def row_total(self) -> int:
        return len(self._timeline.lines)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        lines = self._timeline.lines
        if not index.isValid() or not 0 <= index.row() < len(lines):
            return None
        line, col = lines[index.row()], index.column()
        if role == self.HandoffIdRole:
            return line.id
        cell = cell_state(line, col)
        if role == self.CellStateRole:
            return cell
        if role == Qt.ItemDataRole.DisplayRole:
            return line.title if col == 0 else _cell_text(line, col, cell)
        if role == Qt.ItemDataRole.ToolTipRole:
            return line.describe()
        if role == Qt.ItemDataRole.BackgroundRole:
            colour = _CELL_BACKGROUNDS.get((cell, line.state == "done"))
            return theme.colour(colour) if colour else None
        if role == Qt.ItemDataRole.ForegroundRole:
            return theme.colour("ERROR" if cell == "failed" else
                                "MUTED" if col > 0 and not cell else "TEXT")
        if role == Qt.ItemDataRole.FontRole and cell in ("current", "failed"):
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.TextAlignmentRole and col > 0:
            return Qt.AlignmentFlag.AlignCenter
        return None


#: a cell's background role (relay.gui.theme)
_CELL_BACKGROUNDS = {("current", False): "ACCENT_BG", ("current", True): "OK_BG",
                     ("failed", False): "ERROR_BG"}


def cell_state(line: HandoffLine, col: int) -> str:
    """How the cell of column ``col`` reads: current, reached, failed or not reached."""
    if col == 0:
        return "failed" if line.state == "failed" else ""
    step = STEPS[col - 1]
    if line.failed_column == col - 1:
        return "failed"
    if step not in line.reached:
        return ""
    return "current" if step == line.state else "reached"


def _cell_text(line: HandoffLine, col: int, cell: str) -> str:
    if cell == "failed":
        failed_at = line.reached.get("failed")
        return f"✗ failed {clock(failed_at)}" if failed_at else "✗ failed"
    reached = line.reached.get(STEPS[col - 1])
    return clock(reached) if reached else "·"
