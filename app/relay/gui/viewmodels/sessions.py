"""SessionsViewModel: the sessions (newest first) as a tree, refreshed from the store.

The bridge says when the list is stale (a state change, a finished turn); the model then
re-reads it through one tracked task. Requests that arrive while a read is in flight are
coalesced into one more read. Rows keep a stable order (creation time, newest first) so a
selection survives refreshes.

State comes first, in :mod:`relay.gui.state_look`'s words, colour and icon ("needs input",
"waiting · 3m 12s", "handed off → personal", "done"); while a session waits for a limit's
reset a one-second timer repaints only those State cells. A pipeline's steps are grouped
under a row of their run (the tree's only second level). Archived sessions are left out
unless :meth:`set_show_archived`; :class:`SessionsFilter` filters by state, repository and
text.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from PySide6.QtCore import (
    QAbstractItemModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QColor, QFont

from relay.core.models import SessionRow
from relay.core.present import SIMULATION_LABEL, fmt_cost, fmt_tokens, refused_note
from relay.core.states import WORKING_STATES
from relay.gui import theme
from relay.gui.bridge import EngineBridge
from relay.gui.event_text import plain_tooltip
from relay.gui.state_look import StateLook, chain_label, entry_label, look

Index = QModelIndex | QPersistentModelIndex

COLUMNS = ("State", "Task", "Account", "Cost", "Updated")

#: the state filter's choices: label → the states it keeps (empty: every state)
STATE_FILTERS: dict[str, frozenset[str]] = {
    "All states": frozenset(),
    "Needs you": frozenset({"needs_input", "waiting"}),
    "Running": frozenset({"pending", "starting", "running"}),
    "Done": frozenset({"completed"}),
    "Failed or stopped": frozenset({"failed", "cancelled", "interrupted"}),
}
#: the states the tray points at: a question waits, or a limit blocks the work
ATTENTION_STATES = frozenset({"needs_input", "waiting"})
#: a pipeline run's row takes the state of its most pressing step, in this order
_GROUP_ORDER = ("needs_input", "waiting", "running", "starting", "pending", "failed",
                "interrupted", "cancelled", "completed")


def state_look(row: SessionRow, now: datetime | None = None) -> StateLook:
    """The look of a session's state in the list (its handoff, wait or plain state)."""
    return look(row.state, resume_at=row.wait_until, handed_to=row.handing_to, now=now)


def state_label(row: SessionRow, now: datetime | None = None) -> str:
    """The State cell: the words, any refused tool calls, and "archived"."""
    parts = [state_look(row, now).word]
    note = refused_note(row.refused_calls)
    if note:
        parts.append(note)
    if row.archived_at is not None:
        parts.append("archived")
    return " · ".join(parts)


def account_label(row: SessionRow) -> str:
    """'work → personal → ollama': the entries its runs used (its runtime before any ran)."""
    return chain_label(row.entries) if row.entries else entry_label(row.runtime)


def task_label(row: SessionRow) -> str:
    first = row.task.splitlines()[0] if row.task.strip() else ""
    if row.pipeline_step:  # "<run>/<node>": the step's name first
        return f"{row.pipeline_step.partition('/')[2]} · {first}"
    return first


def updated_label(when: datetime) -> str:
    local = when.astimezone()
    return local.strftime("%H:%M") if local.date() == local.now().date() \
        else local.strftime("%Y-%m-%d")


@dataclass
class RunGroup:
    """A pipeline run's row: its steps' sessions, oldest first."""

    run_id: str
    name: str
    steps: list[SessionRow] = field(default_factory=list)

    @property
    def created_at(self) -> datetime:
        return min(s.created_at for s in self.steps)

    @property
    def state(self) -> str:
        states = {s.state for s in self.steps}
        return next((s for s in _GROUP_ORDER if s in states), self.steps[0].state)

    @property
    def label(self) -> str:
        n = len(self.steps)
        return f"pipeline {self.name} · {n} step{'s' if n != 1 else ''}"


Top = SessionRow | RunGroup


def _tops(rows: list[SessionRow]) -> list[Top]:
    """The tree's first level: sessions, and pipeline runs holding their steps."""
    groups: dict[str, RunGroup] = {}
    tops: list[Top] = []
    for row in sorted(rows, key=lambda r: (r.created_at, r.id)):
        if row.pipeline_step:
            run_id = row.pipeline_step.partition("/")[0]
            if run_id not in groups:
                groups[run_id] = RunGroup(run_id, row.pipeline_name or run_id)
                tops.append(groups[run_id])
            groups[run_id].steps.append(row)
        else:
            tops.append(row)
    return sorted(tops, key=lambda t: (t.created_at, _key(t)), reverse=True)


def _key(top: Top) -> str:
    return f"run:{top.run_id}" if isinstance(top, RunGroup) else top.id


def _shape(tops: list[Top]) -> list[tuple[str, tuple[str, ...]]]:
    return [(_key(t), tuple(s.id for s in t.steps) if isinstance(t, RunGroup) else ())
            for t in tops]


class SessionsViewModel(QAbstractItemModel):
    """Sessions as a tree. ``runningChanged(int)`` carries the active-session count."""

    COLUMNS = COLUMNS

    SessionIdRole = Qt.ItemDataRole.UserRole + 1
    SimulatedRole = Qt.ItemDataRole.UserRole + 2
    StateRole = Qt.ItemDataRole.UserRole + 3
    RepoRole = Qt.ItemDataRole.UserRole + 4
    #: the text the filter searches (lower case)
    SearchRole = Qt.ItemDataRole.UserRole + 5
    #: a pipeline run's row: its run id (None on a session's row)
    RunRole = Qt.ItemDataRole.UserRole + 6

    runningChanged = Signal(int)
    refreshed = Signal()

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None,
                 limit: int = 200) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._limit = limit
        self._rows: list[SessionRow] = []
        self._tops: list[Top] = []
        self._archived = False
        self._dirty = False
        self._task: asyncio.Task[None] | None = None
        self._running = 0
        self._ticker = QTimer(self)
        self._ticker.setInterval(1000)
        self._ticker.timeout.connect(self._tick)
        bridge.sessionsChanged.connect(self.refresh)

    # -- reading ------------------------------------------------------------------------

    def rows(self) -> list[SessionRow]:
        """Every listed session, newest first (a flat list: :meth:`row_of`'s rows)."""
        return list(self._rows)

    def row_of(self, session_id: str) -> int | None:
        for i, row in enumerate(self._rows):
            if row.id == session_id:
                return i
        return None

    def session_at(self, row: int) -> SessionRow:
        return self._rows[row]

    def session(self, session_id: str) -> SessionRow | None:
        row = self.row_of(session_id)
        return None if row is None else self._rows[row]

    def index_of(self, session_id: str, column: int = 0) -> QModelIndex:
        """The tree's index of ``session_id`` (invalid when it is not listed)."""
        for i, top in enumerate(self._tops):
            if isinstance(top, RunGroup):
                for j, step in enumerate(top.steps):
                    if step.id == session_id:
                        return self.createIndex(j, column, i + 1)
            elif top.id == session_id:
                return self.createIndex(i, column, 0)
        return QModelIndex()

    def attention(self) -> list[SessionRow]:
        """The sessions waiting for the user or blocked by a limit, newest first."""
        return [r for r in self._rows if r.state in ATTENTION_STATES]

    def repos(self) -> list[str]:
        """The listed sessions' repositories, sorted."""
        return sorted({r.repo for r in self._rows})

    @property
    def running_count(self) -> int:
        return self._running

    @property
    def show_archived(self) -> bool:
        return self._archived

    # -- refreshing and archiving ---------------------------------------------------------

    def set_show_archived(self, on: bool) -> None:
        """List archived sessions too (or not), read again."""
        if on != self._archived:
            self._archived = on
            self.refresh()

    def refresh(self) -> None:
        """Re-read the list soon (coalesced with a read already under way)."""
        self._dirty = True
        if self._task is None or self._task.done():
            self._task = self._bridge.tasks.start(self._reload(), context="sessions")

    async def _reload(self) -> None:
        while self._dirty:
            self._dirty = False
            self.set_rows(await self._bridge.source.list_sessions(self._limit, self._archived))

    def archive(self, session_id: str, archived: bool = True) -> asyncio.Task[None]:
        """Archive ``session_id`` (or bring it back); the list is read again after."""
        return self._bridge.tasks.start(self._archive(session_id, archived), context="sessions")

    async def _archive(self, session_id: str, archived: bool) -> None:
        sessions = self._bridge.source.sessions
        await (sessions.archive if archived else sessions.unarchive)(session_id)
        self.refresh()

    def set_rows(self, rows: list[SessionRow]) -> None:
        """Replace the rows, keeping the order stable and selections alive."""
        new_rows = sorted(rows, key=lambda r: (r.created_at, r.id), reverse=True)
        tops = _tops(new_rows)
        old, new = _shape(self._tops), _shape(tops)
        added = len(new) - len(old)
        if new == old:
            self._rows, self._tops = new_rows, tops
            self._changed()
        elif added > 0 and new[added:] == old:
            self.beginInsertRows(QModelIndex(), 0, added - 1)
            self._rows, self._tops = new_rows, tops
            self.endInsertRows()
            self._changed()
        else:
            self.beginResetModel()
            self._rows, self._tops = new_rows, tops
            self.endResetModel()
        running = sum(1 for r in new_rows if r.state in WORKING_STATES)
        if running != self._running:
            self._running = running
            self.runningChanged.emit(running)
        waiting = any(r.state == "waiting" and r.wait_until is not None for r in new_rows)
        if waiting != self._ticker.isActive():
            (self._ticker.start if waiting else self._ticker.stop)()
        self.refreshed.emit()

    @property
    def ticking(self) -> bool:
        """Whether the countdown timer runs (some session waits for a reset)."""
        return self._ticker.isActive()

    def _tick(self) -> None:
        for row in self._rows:
            if row.state == "waiting":
                index = self.index_of(row.id)
                self.dataChanged.emit(index, index, [Qt.ItemDataRole.DisplayRole])

    def _changed(self) -> None:
        last = len(COLUMNS) - 1
        for i, top in enumerate(self._tops):
            if isinstance(top, RunGroup):
                self.dataChanged.emit(self.createIndex(0, 0, i + 1),
                                      self.createIndex(len(top.steps) - 1, last, i + 1))
        if self._tops:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self._tops) - 1, last))

    # -- QAbstractItemModel ---------------------------------------------------------------

    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        if not 0 <= column < len(COLUMNS):
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, column, 0) if 0 <= row < len(self._tops) \
                else QModelIndex()
        top = self._top(parent)
        if parent.internalId() == 0 and isinstance(top, RunGroup) and 0 <= row < len(top.steps):
            return self.createIndex(row, column, parent.row() + 1)
        return QModelIndex()

    def parent(self, index: Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # noqa: B008
        if not index.isValid() or index.internalId() == 0:
            return QModelIndex()
        return self.createIndex(index.internalId() - 1, 0, 0)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        if not parent.isValid():
            return len(self._tops)
        top = self._top(parent)
        if parent.internalId() == 0 and parent.column() == 0 and isinstance(top, RunGroup):
            return len(top.steps)
        return 0

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section] if 0 <= section < len(COLUMNS) else None
        return None

    def _top(self, index: Index) -> Top | None:
        row = index.row() if index.internalId() == 0 else index.internalId() - 1
        return self._tops[row] if 0 <= row < len(self._tops) else None

    def item(self, index: Index) -> Top | None:
        """The session or pipeline run at ``index``."""
        if not index.isValid():
            return None
        top = self._top(index)
        if index.internalId() == 0 or not isinstance(top, RunGroup):
            return top
        return top.steps[index.row()] if 0 <= index.row() < len(top.steps) else None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        item = self.item(index)
        if item is None:
            return None
        if isinstance(item, RunGroup):
            return _group_data(item, index.column(), role, self.RunRole)
        return _session_data(self, item, index.column(), role)


def _session_data(vm: SessionsViewModel, row: SessionRow, col: int, role: int) -> Any:
    match role:
        case Qt.ItemDataRole.DisplayRole:
            return (state_label, task_label, account_label,
                    lambda r: fmt_cost(r.usage.cost_usd),
                    lambda r: updated_label(r.updated_at))[col](row)
        case Qt.ItemDataRole.DecorationRole if col == 0:
            return state_look(row).qicon()
        case Qt.ItemDataRole.ForegroundRole:
            if row.archived_at is not None:
                return QColor(theme.MUTED)
            return state_look(row).colour() if col == 0 else None
        case Qt.ItemDataRole.FontRole if col == 0:
            font = QFont()
            font.setBold(row.state in ATTENTION_STATES or row.handing_to is not None)
            return font
        case Qt.ItemDataRole.ToolTipRole:
            return _tooltip(row)
        case Qt.ItemDataRole.TextAlignmentRole if col == 3:
            return Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
    return {vm.SessionIdRole: row.id, vm.SimulatedRole: row.simulated,
            vm.StateRole: row.state, vm.RepoRole: row.repo, vm.SearchRole: _search_text(row),
            vm.RunRole: None}.get(role)


def _group_data(group: RunGroup, col: int, role: int, run_role: int) -> Any:
    state = look(group.state)
    match role:
        case Qt.ItemDataRole.DisplayRole:
            costs = [s.usage.cost_usd for s in group.steps if s.usage.cost_usd is not None]
            return (state.word, group.label, "", fmt_cost(sum(costs) if costs else None),
                    updated_label(max(s.updated_at for s in group.steps)))[col]
        case Qt.ItemDataRole.DecorationRole if col == 0:
            return state.qicon()
        case Qt.ItemDataRole.ForegroundRole if col == 0:
            return state.colour()
        case Qt.ItemDataRole.FontRole if col == 1:
            font = QFont()
            font.setBold(True)
            return font
        case Qt.ItemDataRole.ToolTipRole:
            return plain_tooltip(f"pipeline run {group.run_id} ({group.name})\n"
                                 f"{len(group.steps)} steps: " +
                                 ", ".join(task_label(s).partition(" · ")[0]
                                           for s in group.steps))
    return group.run_id if role == run_role else None


def _search_text(row: SessionRow) -> str:
    return " ".join((row.id, row.task, row.repo, row.runtime, " ".join(row.entries),
                     row.branch or "", row.pipeline_name or "", row.pipeline_step or "",
                     state_look(row).word)).lower()


def _tooltip(row: SessionRow) -> str:
    lines = [row.task, "", f"session {row.id} · {state_look(row).word}",
             f"repository: {row.repo}",
             f"created {row.created_at.astimezone():%Y-%m-%d %H:%M}, updated "
             f"{row.updated_at.astimezone():%Y-%m-%d %H:%M:%S} · cost "
             f"{fmt_cost(row.usage.cost_usd)}"]
    if row.entries:
        lines.append(f"ran on: {' → '.join(row.entries)}")
    else:
        lines.append(f"runtime: {row.runtime}")
    if row.workdir:
        lines.append(f"worktree: {row.workdir}")
    lines.append(f"tokens in/out: {fmt_tokens(row.usage.input_tokens)} / "
                 f"{fmt_tokens(row.usage.output_tokens)}")
    if row.reason:
        lines.append(f"reason: {row.reason}")
    if row.state == "waiting" and row.wait_until is not None:
        lines.append(f"quota-blocked: resumes at the limit's reset, "
                     f"{row.wait_until.astimezone():%H:%M:%S}")
    if row.archived_at is not None:
        lines.append(f"archived {row.archived_at.astimezone():%Y-%m-%d %H:%M}")
    if row.simulated:
        lines.append(SIMULATION_LABEL)
    return plain_tooltip("\n".join(lines))  # the task may be an agent's or a transcript's


class SessionsFilter(QSortFilterProxyModel):
    """The list as filtered by state (:data:`STATE_FILTERS`), repository and text; a
    pipeline run shows while one of its steps does."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setRecursiveFilteringEnabled(True)
        self._states: frozenset[str] = frozenset()
        self._repo = ""
        self._words: list[str] = []

    def set_state_filter(self, label: str) -> None:
        self.beginFilterChange()
        self._states = STATE_FILTERS.get(label, frozenset())
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def set_repo(self, repo: str) -> None:
        """Only the sessions of ``repo`` ("" : every repository)."""
        self.beginFilterChange()
        self._repo = repo
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def set_text(self, text: str) -> None:
        """Only the sessions whose task, id, repository, entries… hold every word."""
        self.beginFilterChange()
        self._words = text.lower().split()
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    @property
    def active(self) -> bool:
        return bool(self._states or self._repo or self._words)

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        model = self.sourceModel()
        assert isinstance(model, SessionsViewModel)
        item = model.item(model.index(source_row, 0, source_parent))
        if isinstance(item, RunGroup):
            return not self.active
        if item is None:
            return False
        if self._states and item.state not in self._states:
            return False
        if self._repo and item.repo != self._repo:
            return False
        text = _search_text(item)
        return all(w in text for w in self._words)
