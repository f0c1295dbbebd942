"""StreamViewModel: one session's events as a virtualised Qt tree model.

Top-level rows are events in id order; a tool call's result (and anything a
subagent did under it) are its children, so a view can fold them. Rows arrive
in batches (one ``beginInsertRows`` per parent per batch). Selecting a session
loads its history from the store and then follows live records from the
bridge; records that arrive while the history loads are buffered and merged
by id, so nothing is shown twice or out of order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, overload

from PySide6.QtCore import (
    QAbstractItemModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
)

from relay.core.events import EventRecord, Usage
from relay.core.models import SessionRow
from relay.gui import event_text
from relay.gui.bridge import EngineBridge
from relay.gui.viewmodels.stream_tree import StreamNode, StreamTree

Index = QModelIndex | QPersistentModelIndex

_ACTIVE = ("pending", "starting", "running")


class StreamViewModel(QAbstractItemModel):
    """The live, structured event stream of the selected session.

    Signals:
        headerChanged(): session, state, model or usage totals changed.
        loaded(str): the history of that session is in the model.
    """

    KindRole = Qt.ItemDataRole.UserRole + 1
    StyleRole = Qt.ItemDataRole.UserRole + 2
    BadgeRole = Qt.ItemDataRole.UserRole + 3
    SummaryRole = Qt.ItemDataRole.UserRole + 4
    TextRole = Qt.ItemDataRole.UserRole + 5
    IsErrorRole = Qt.ItemDataRole.UserRole + 6
    SimulatedRole = Qt.ItemDataRole.UserRole + 7
    RecordIdRole = Qt.ItemDataRole.UserRole + 8
    TimeRole = Qt.ItemDataRole.UserRole + 9
    BannerRole = Qt.ItemDataRole.UserRole + 10

    headerChanged = Signal()
    loaded = Signal(str)

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
        return (self._row is not None and self._row.state in _ACTIVE
                and self._bridge.is_running_here(self._row.id))

    def event_count(self) -> int:
        """How many events the model holds (rows at every level)."""
        return self._tree.count

    def records(self) -> list[EventRecord]:
        return self._tree.records()

    # -- intents ------------------------------------------------------------------------

    def load(self, session_id: str) -> None:
        """Show ``session_id``: its stored history, then its live records."""
        if session_id == self._session_id and (self._loading or self._row is not None):
            return  # already shown (a failed load may be retried)
        self.beginResetModel()
        self._tree = StreamTree()
        self._session_id, self._row, self._loading = session_id, None, True
        self._buffer, self._usage, self._model, self._simulated = [], Usage(), None, False
        self.endResetModel()
        self.headerChanged.emit()
        self._bridge.tasks.start(self._load_history(session_id), context="stream")

    def clear(self) -> None:
        self.beginResetModel()
        self._tree = StreamTree()
        self._session_id, self._row, self._loading, self._buffer = None, None, False, []
        self._usage, self._model, self._simulated = Usage(), None, False
        self.endResetModel()
        self.headerChanged.emit()

    def stop(self) -> None:
        """Ask the engine to stop the shown session."""
        if self._session_id is not None:
            self._bridge.cancel_session(self._session_id, context="stream")

    async def _load_history(self, session_id: str) -> None:
        engine = self._bridge.engine
        try:
            row = await engine.get_session(session_id)
            history = await engine.session_events(session_id)
        finally:
            if session_id == self._session_id:
                self._loading = False
        if session_id != self._session_id:  # the user moved on meanwhile
            return
        self._row = row
        buffered, self._buffer = self._buffer, []
        self._append(history)
        self._append(buffered)
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
        self._append(mine)
        self.headerChanged.emit()

    def _append(self, records: Sequence[EventRecord]) -> None:
        if self._session_id is None:
            return
        for group in self._tree.plan(records, self._session_id):
            parent_index = self._index_of(group.parent)
            first = group.first
            self.beginInsertRows(parent_index, first, first + len(group.nodes) - 1)
            self._tree.attach(group)
            self.endInsertRows()
            for node in group.nodes:
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
            self._row = self._row.model_copy(update={"state": event.state, "reason": event.reason})

    # -- QAbstractItemModel -------------------------------------------------------------

    def _node(self, index: Index) -> StreamNode:
        if not index.isValid():
            return self._tree.root
        node = index.internalPointer()
        assert isinstance(node, StreamNode)
        return node

    def _index_of(self, node: StreamNode) -> QModelIndex:
        if node is self._tree.root:
            return QModelIndex()
        return self.createIndex(node.row, 0, node)

    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        node = self._node(parent)
        if column != 0 or not 0 <= row < len(node.children):
            return QModelIndex()
        return self.createIndex(row, 0, node.children[row])

    @overload
    def parent(self) -> QObject | None: ...
    @overload
    def parent(self, child: Index) -> QModelIndex: ...
    def parent(self, child: Index | None = None) -> QObject | QModelIndex | None:
        if child is None:
            return super().parent()
        if not child.isValid():
            return QModelIndex()
        up = self._node(child).parent
        return QModelIndex() if up is None else self._index_of(up)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        if parent.isValid() and parent.column() != 0:
            return 0
        return len(self._node(parent).children)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 1

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        node = self._node(index)
        assert node.record is not None
        return _role_value(node.record, role)


_Vm = StreamViewModel
_ROLES: dict[int, Callable[[EventRecord], Any]] = {
    Qt.ItemDataRole.DisplayRole: lambda r: event_text.one_line(r.event),
    Qt.ItemDataRole.ToolTipRole: lambda r: event_text.detail(r.event)[:1500],
    _Vm.SummaryRole: lambda r: event_text.one_line(r.event),
    _Vm.TextRole: lambda r: event_text.detail(r.event),
    _Vm.KindRole: lambda r: r.event.kind,
    _Vm.StyleRole: lambda r: event_text.style_key(r.event),
    _Vm.BadgeRole: lambda r: event_text.badge(r.event),
    _Vm.IsErrorRole: lambda r: event_text.is_error(r.event),
    _Vm.SimulatedRole: lambda r: r.event.simulated,
    _Vm.RecordIdRole: lambda r: r.id,
    _Vm.BannerRole: lambda r: event_text.is_banner(r.event),
    _Vm.TimeRole: lambda r: r.event.ts.astimezone().strftime("%H:%M:%S"),
}


def _role_value(record: EventRecord, role: int) -> Any:
    getter = _ROLES.get(role)
    return None if getter is None else getter(record)
