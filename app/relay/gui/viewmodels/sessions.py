"""SessionsViewModel: the sessions table (newest first), refreshed from the store.

The bridge says when the list is stale (a state change, a finished turn); the
model then re-reads it through one tracked task. Requests that arrive while a
read is in flight are coalesced into one more read. Rows keep a stable order
(creation time, newest first) so a selection survives refreshes.

A session waiting for a limit's reset reads "resumes in 4:59" (in the waiting
colour, "waiting for the limit's reset" in its tooltip); while
one waits, a one-second timer repaints only those State cells.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from PySide6.QtCore import (
    QModelIndex,
    QObject,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QColor

from relay.core.events import utcnow
from relay.core.models import SessionRow
from relay.core.present import SIMULATION_LABEL, end_state, fmt_cost, fmt_tokens
from relay.core.states import WORKING_STATES
from relay.gui import theme
from relay.gui.bridge import EngineBridge
from relay.gui.event_text import plain_tooltip
from relay.gui.handoff_text import resumes_in
from relay.gui.viewmodels.table import ColumnsModel, Index

COLUMNS = ("State", "Task", "Runtime", "Tokens in/out", "Cost", "Updated")


def runtime_label(row: SessionRow) -> str:
    """The runtime, with the SIMULATION label for the scripted demo."""
    return f"{row.runtime} · SIMULATION" if row.simulated else row.runtime


def tokens_label(row: SessionRow) -> str:
    return f"{fmt_tokens(row.usage.input_tokens)} / {fmt_tokens(row.usage.output_tokens)}"


def updated_label(row: SessionRow) -> str:
    local = row.updated_at.astimezone()
    return local.strftime("%H:%M:%S") if local.date() == local.now().date() \
        else local.strftime("%Y-%m-%d %H:%M")


def state_label(row: SessionRow, now: datetime | None = None) -> str:
    """The state; a session waiting for a limit's reset says when it resumes instead."""
    if row.state == "waiting" and row.wait_until is not None:
        return resumes_in(row.wait_until, now or utcnow())
    return end_state(row.state, row.refused_calls)


_CELLS = (
    state_label, lambda r: r.task.splitlines()[0] if r.task else "", runtime_label,
    tokens_label, lambda r: fmt_cost(r.usage.cost_usd), updated_label,
)


class SessionsViewModel(ColumnsModel):
    """Sessions as a table. ``runningChanged(int)`` carries the active-session count."""

    COLUMNS = COLUMNS

    SessionIdRole = Qt.ItemDataRole.UserRole + 1
    SimulatedRole = Qt.ItemDataRole.UserRole + 2
    StateRole = Qt.ItemDataRole.UserRole + 3

    runningChanged = Signal(int)
    refreshed = Signal()

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None,
                 limit: int = 200) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._limit = limit
        self._rows: list[SessionRow] = []
        self._dirty = False
        self._task: asyncio.Task[None] | None = None
        self._running = 0
        self._ticker = QTimer(self)
        self._ticker.setInterval(1000)
        self._ticker.timeout.connect(self._tick)
        bridge.sessionsChanged.connect(self.refresh)

    # -- reading ------------------------------------------------------------------------

    def rows(self) -> list[SessionRow]:
        return list(self._rows)

    def row_of(self, session_id: str) -> int | None:
        for i, row in enumerate(self._rows):
            if row.id == session_id:
                return i
        return None

    def session_at(self, row: int) -> SessionRow:
        return self._rows[row]

    @property
    def running_count(self) -> int:
        return self._running

    # -- refreshing ---------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-read the list soon (coalesced with a read already under way)."""
        self._dirty = True
        if self._task is None or self._task.done():
            self._task = self._bridge.tasks.start(self._reload(), context="sessions")

    async def _reload(self) -> None:
        while self._dirty:
            self._dirty = False
            self.set_rows(await self._bridge.source.list_sessions(self._limit))

    def set_rows(self, rows: list[SessionRow]) -> None:
        """Replace the rows, keeping the order stable and selections alive."""
        new = sorted(rows, key=lambda r: (r.created_at, r.id), reverse=True)
        old_ids = [r.id for r in self._rows]
        new_ids = [r.id for r in new]
        added = len(new_ids) - len(old_ids)
        if new_ids == old_ids:
            self._rows = new
            self._changed(0)
        elif added > 0 and new_ids[added:] == old_ids:
            self.beginInsertRows(QModelIndex(), 0, added - 1)
            self._rows = new
            self.endInsertRows()
            self._changed(added)
        else:
            self.beginResetModel()
            self._rows = new
            self.endResetModel()
        running = sum(1 for r in new if r.state in WORKING_STATES)
        if running != self._running:
            self._running = running
            self.runningChanged.emit(running)
        waiting = any(r.state == "waiting" and r.wait_until is not None for r in new)
        if waiting != self._ticker.isActive():
            (self._ticker.start if waiting else self._ticker.stop)()
        self.refreshed.emit()

    @property
    def ticking(self) -> bool:
        """Whether the countdown timer runs (some session waits for a reset)."""
        return self._ticker.isActive()

    def _tick(self) -> None:
        for i, row in enumerate(self._rows):
            if row.state == "waiting":
                index = self.index(i, 0)
                self.dataChanged.emit(index, index, [Qt.ItemDataRole.DisplayRole])

    def _changed(self, first: int) -> None:
        if first < len(self._rows):
            last = self.index(len(self._rows) - 1, len(COLUMNS) - 1)
            self.dataChanged.emit(self.index(first, 0), last)

    # -- QAbstractTableModel ------------------------------------------------------------

    def row_total(self) -> int:
        return len(self._rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        row = self._rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return _CELLS[col](row)
        if role == Qt.ItemDataRole.ToolTipRole:
            return _tooltip(row)
        if role == Qt.ItemDataRole.ForegroundRole:
            return _foreground(row, col)
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (3, 4):
            return Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        return {self.SessionIdRole: row.id, self.SimulatedRole: row.simulated,
                self.StateRole: row.state}.get(role)


def _foreground(row: SessionRow, col: int) -> QColor | None:
    if col == 0:
        return QColor(theme.STATE_COLOURS.get(row.state, theme.TEXT))
    if col == 2 and row.simulated:
        return QColor(theme.SIMULATION_TEXT)
    return None


def _tooltip(row: SessionRow) -> str:
    lines = [row.task, "", f"session {row.id} · {runtime_label(row)}", f"repository: {row.repo}"]
    if row.workdir:
        lines.append(f"worktree: {row.workdir}")
    if row.reason:
        lines.append(f"reason: {row.reason}")
    if row.state == "waiting" and row.wait_until is not None:
        lines.append(f"waiting for the limit's reset until {row.wait_until.astimezone():%H:%M:%S}")
    if row.simulated:
        lines.append(SIMULATION_LABEL)
    return plain_tooltip("\n".join(lines))  # the task may be an agent's or a transcript's
