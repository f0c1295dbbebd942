"""StreamViewModel: one session's events as a flat, virtualised Qt list model.

Each row is a shown event, in display order: a tool call's result (and
anything a subagent did under it) follow the call as its children, one level
deeper (:data:`DepthRole`), so a view can indent them and fold them. Folding is
an intent here (:meth:`set_expanded`, :meth:`toggle`): it removes or inserts
the call's child rows; the event tree behind the rows is
:class:`~relay.gui.viewmodels.stream_tree.StreamTree`. Everything is shown
unfolded at first.

Rows arrive in batches (one ``beginInsertRows`` per contiguous block, usually
one per chunk; a result whose call is shown further up goes right after the
call's other children). Under a burst the model coalesces: a sparse record is
shown at once, but records arriving within ``FLUSH_MS`` of the last flush wait
for the next one, and one flush inserts chunks of ``FLUSH_CHUNK`` records only
while its time budget (``FLUSH_BUDGET_MS``) lasts — sized by time, not by count,
so on a loaded machine a flush shows fewer records rather than holding the loop
longer — and the event loop never stalls behind the view. Selecting a session loads its
history from the store and then follows live records from the bridge; records
that arrive while the history loads are buffered and merged by id, so nothing
is shown twice or out of order.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)

from relay.core.events import EventRecord, Usage
from relay.core.models import SessionRow
from relay.core.states import ACTIVE_STATES
from relay.gui.bridge import EngineBridge
from relay.gui.viewmodels import stream_roles as roles
from relay.gui.viewmodels.stream_tree import Insertion, Removal, StreamNode, StreamTree

Index = QModelIndex | QPersistentModelIndex



class StreamViewModel(QAbstractListModel):
    """The live, structured event stream of the selected session.

    Signals:
        headerChanged(): session, state, model or usage totals changed.
        loaded(str): the history of that session is in the model.
    """

    KindRole = roles.KIND
    StyleRole = roles.STYLE
    BadgeRole = roles.BADGE
    SummaryRole = roles.SUMMARY
    TextRole = roles.TEXT
    IsErrorRole = roles.IS_ERROR
    SimulatedRole = roles.SIMULATED
    RecordIdRole = roles.RECORD_ID
    TimeRole = roles.TIME
    BannerRole = roles.BANNER
    #: 0 for top-level events, 1 for a call's result, 2 below a subagent's call …
    DepthRole = roles.DEPTH
    #: how many events are nested right under this one (folded or not).
    ChildCountRole = roles.CHILD_COUNT
    #: the row has children and they are shown.
    ExpandedRole = roles.EXPANDED
    #: a handoff's block: its lines as (label, text) (None for any other row)
    BlockRole = roles.BLOCK

    headerChanged = Signal()
    loaded = Signal(str)

    #: the pause between two flushes of a burst (the loop's own work runs then)
    FLUSH_MS = 30
    #: how long one flush may hold the loop (it ends after the chunk that passes it)
    FLUSH_BUDGET_MS = 8.0
    #: records inserted between two looks at the clock
    FLUSH_CHUNK = 64

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._tree = StreamTree()
        self._session_id: str | None = None
        self._row: SessionRow | None = None
        self._loading = False
        self._buffer: list[EventRecord] = []
        self._usage = Usage()
        self._model: str | None = None
        self._simulated = False
        self._pending: deque[EventRecord] = deque()
        self._cooldown = QTimer(self)
        self._cooldown.setSingleShot(True)
        self._cooldown.setInterval(self.FLUSH_MS)
        self._cooldown.timeout.connect(self._flush)
        bridge.records.connect(self.on_records)

    # -- what the header shows ---------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self._session_id

    @property
    def session(self) -> SessionRow | None:
        return self._row

    @property
    def usage(self) -> Usage:
        """Totals of this session's turns; unknown fields stay ``None``."""
        return self._usage

    @property
    def model_name(self) -> str | None:
        """The model the agent reported (falls back to the one asked for)."""
        return self._model or (self._row.model if self._row else None)

    @property
    def simulated(self) -> bool:
        return self._simulated or bool(self._row and self._row.simulated)

    @property
    def loading(self) -> bool:
        return self._loading

    @property
    def can_stop(self) -> bool:
        """The session is active and this process runs it."""
        return (self._row is not None and self._row.state in ACTIVE_STATES
                and self._bridge.is_running_here(self._row.id))

    def event_count(self) -> int:
        """How many events the model holds (shown as rows or folded away)."""
        return self._tree.count

    def records(self) -> list[EventRecord]:
        return self._tree.records()

    def parent_row(self, row: int) -> int | None:
        """The row of the event ``row`` is nested under (``None`` at top level)."""
        up = self._tree.rows[row].parent
        return None if up is None or up.record is None else self._tree.row_of(up)

    # -- intents ------------------------------------------------------------------------

    def load(self, session_id: str) -> None:
        """Show ``session_id``: its stored history, then its live records."""
        if session_id == self._session_id and (self._loading or self._row is not None):
            return  # already shown (a failed load may be retried)
        self._reset(session_id)
        self._bridge.tasks.start(self._load_history(session_id), context="stream")

    def clear(self) -> None:
        self._reset(None)

    def stop(self) -> None:
        """Ask the engine to stop the shown session."""
        if self._session_id is not None:
            self._bridge.cancel_session(self._session_id, context="stream")

    def set_expanded(self, row: int, expanded: bool) -> bool:
        """Fold (hide the events nested under ``row``) or unfold it; whether anything changed."""
        if not 0 <= row < len(self._tree.rows):
            return False
        if expanded:
            opening = self._tree.unfold(row)
            if opening is None:
                return False
            self.beginInsertRows(QModelIndex(), opening.first, opening.last)
            self._tree.apply(opening)
            self.endInsertRows()
        else:
            closing = self._tree.fold(row)
            if closing is None:
                return False
            self.beginRemoveRows(QModelIndex(), closing.first, closing.last)
            self._tree.apply(closing)
            self.endRemoveRows()
        self._row_changed(row)
        return True

    def toggle(self, row: int) -> bool:
        """Fold ``row`` if it is unfolded, else unfold it; whether anything changed."""
        if not 0 <= row < len(self._tree.rows):
            return False
        return self.set_expanded(row, not self._tree.rows[row].expanded)

    def _reset(self, session_id: str | None) -> None:
        self.beginResetModel()
        shown, self._tree = self._tree, StreamTree()
        self._session_id, self._row, self._loading = session_id, None, session_id is not None
        self._buffer, self._usage, self._model, self._simulated = [], Usage(), None, False
        self._pending.clear()
        self.endResetModel()
        shown.release()
        self.headerChanged.emit()

    async def _load_history(self, session_id: str) -> None:
        source = self._bridge.source
        try:
            row = await source.get_session(session_id)
            history = await source.session_events(session_id)
        finally:
            if session_id == self._session_id:
                self._loading = False
        if session_id != self._session_id:  # the user moved on meanwhile
            return
        self._row = row
        buffered, self._buffer = self._buffer, []
        self._pending.extend(history)
        self._pending.extend(buffered)
        self._flush()
        while self._pending and session_id == self._session_id:
            await asyncio.sleep(self.FLUSH_MS / 1000)  # a long history: let the loop breathe
            self._flush()
        self.headerChanged.emit()
        self.loaded.emit(session_id)

    # -- live records ------------------------------------------------------------------

    def on_records(self, batch: Sequence[EventRecord]) -> None:
        """Take a batch from the bridge (any session; others are ignored)."""
        if self._session_id is None:
            return
        mine = [r for r in batch if r.session_id == self._session_id]
        if not mine:
            return
        if self._loading:
            self._buffer.extend(mine)
            return
        self._pending.extend(mine)
        if not self._cooldown.isActive():
            self._flush()

    def _flush(self) -> None:
        """Insert pending records, a chunk at a time, while FLUSH_BUDGET_MS lasts (one
        chunk at least); the rest wait for the next flush."""
        if not self._pending:
            return
        deadline = time.perf_counter() + self.FLUSH_BUDGET_MS / 1000
        pending = self._pending
        while pending:
            count = min(len(pending), self.FLUSH_CHUNK)
            self._append([pending.popleft() for _ in range(count)])
            if time.perf_counter() >= deadline:
                break
        self.headerChanged.emit()
        self._cooldown.start()

    def _append(self, records: Sequence[EventRecord]) -> None:
        if self._session_id is None:
            return
        added: list[StreamNode] = []
        for change in self._tree.add(records, self._session_id, added):
            if isinstance(change, Insertion):
                self.beginInsertRows(QModelIndex(), change.first, change.last)
                self._tree.apply(change)
                self.endInsertRows()
            elif isinstance(change, Removal):  # rows a handoff's block takes in
                self.beginRemoveRows(QModelIndex(), change.first, change.last)
                self._tree.apply(change)
                self.endRemoveRows()
            elif (row := self._tree.row_of(change.node)) is not None:
                index = self.index(row, 0)  # a fold mark appears, a handoff moves on
                self.dataChanged.emit(index, index)
        for node in added:
            self._account(node)

    def _account(self, node: StreamNode) -> None:
        event = node.event
        self._simulated = self._simulated or event.simulated
        if event.kind == "turn_completed":
            self._usage = self._usage + event.usage
            self._model = event.model or self._model
        elif event.kind == "session_started" and event.model:
            self._model = event.model
        elif event.kind == "state_changed" and self._row is not None:
            update: dict[str, object] = {
                "state": event.state, "reason": event.reason,
                "wait_until": event.until if event.state == "waiting" else None}
            if event.refused_calls is not None:  # a final state carries the stored count
                update["refused_calls"] = event.refused_calls
            self._row = self._row.model_copy(update=update)

    def _row_changed(self, row: int) -> None:
        index = self.index(row, 0)
        self.dataChanged.emit(index, index, [self.ChildCountRole, self.ExpandedRole])

    # -- QAbstractListModel (index() and flags() stay in C++: views call them per row) --

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._tree.rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        rows = self._tree.rows
        row = index.row()
        if not index.isValid() or not 0 <= row < len(rows):
            return None
        return roles.role_value(rows[row], role)
