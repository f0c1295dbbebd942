"""BoardViewModel: the board's cards, one list model per stage, kept live from events.

The cards come from the host's board (:class:`~relay.gui.board_backend.BoardBackend`), all
projects or one. Afterwards only what an event names is read again: a ``board_changed`` on a
task re-reads that card (and moves it when its stage changed), one on a project re-reads the
project list, a ``live_state`` re-reads the cards linked to that agent session — never the
whole board. Records come from the bridge (the engine's bus, or a client window's stream of
its host), so a change made anywhere — an agent's MCP call, the web board, relay-cli, another
window — shows here.

Moving a card (a drop on another column) moves it at once and asks the host to set the stage;
a refusal puts the card back and the error goes to the window's messages (context
``"board"``). Opening a card asks for its session: the Relay session's stream
(``sessionRequested``) or, for a Claude session Relay did not start, the Detect dock
(``detectedRequested``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QAbstractListModel,
    QByteArray,
    QMimeData,
    QModelIndex,
    QObject,
    Qt,
    Signal,
)

from relay.board.model import STAGES
from relay.core.events import EventRecord
from relay.gui.board_backend import BoardBackend
from relay.gui.bridge import EngineBridge
from relay.gui.viewmodels.table import Index

if TYPE_CHECKING:
    from relay.board.model import Card, Project, Task
    from relay.core.live import HookedSession

CONTEXT = "board"
#: what a dragged card carries: its key and the stage it left (utf-8, "KEY\nstage")
CARD_MIME = "application/x-relay-board-card"
#: the live state of a session (hooks), and of a Relay session without hooks, in words
LIVE_LABELS = {"working": "working", "needs_input": "needs input", "idle": "idle",
               "quota_blocked": "quota-blocked", "ended": "ended"}


def encode_card(key: str, stage: str) -> QMimeData:
    data = QMimeData()
    data.setData(CARD_MIME, QByteArray(f"{key}\n{stage}".encode()))
    return data


def decode_card(data: QMimeData) -> tuple[str, str] | None:
    """(key, the stage it was dragged from), or None when ``data`` is not a card."""
    if not data.hasFormat(CARD_MIME):
        return None
    key, _, stage = bytes(data.data(CARD_MIME).data()).decode(errors="replace").partition("\n")
    return (key, stage) if key and stage in STAGES else None


class StageColumn(QAbstractListModel):
    """One stage's cards, top to bottom; a drag source and a drop target of cards."""

    CardRole = Qt.ItemDataRole.UserRole + 1
    KeyRole = Qt.ItemDataRole.UserRole + 2

    def __init__(self, board: BoardViewModel, stage: str) -> None:
        super().__init__(board)
        self.board = board
        self.stage = stage
        self.keys: list[str] = []

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.keys)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self.keys):
            return None
        key = self.keys[index.row()]
        card = self.board.card(key)
        if role == self.KeyRole:
            return key
        if role == self.CardRole:
            return card
        if role == Qt.ItemDataRole.DisplayRole and card is not None:
            return f"{key} {card.task.title}"
        if role in (Qt.ItemDataRole.AccessibleTextRole, Qt.ItemDataRole.ToolTipRole) \
                and card is not None:
            return card_summary(card)
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.ItemIsDropEnabled
        return (Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
                | Qt.ItemFlag.ItemIsDragEnabled)

    def supportedDragActions(self) -> Qt.DropAction:
        return Qt.DropAction.MoveAction

    def supportedDropActions(self) -> Qt.DropAction:
        return Qt.DropAction.MoveAction

    def mimeTypes(self) -> list[str]:
        return [CARD_MIME]

    def mimeData(self, indexes: Sequence[QModelIndex]) -> QMimeData:
        rows = [i.row() for i in indexes if i.isValid()]
        return encode_card(self.keys[rows[0]], self.stage) if rows else QMimeData()

    def canDropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int,
                        parent: Index) -> bool:
        card = decode_card(data)
        return card is not None and card[1] != self.stage

    def dropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int,
                     parent: Index) -> bool:
        """A card dropped here: set its stage (the board moves it; the source view removes
        nothing — :meth:`removeRows` is the default no-op)."""
        card = decode_card(data)
        if card is None or card[1] == self.stage:
            return False
        return self.board.set_stage(card[0], self.stage)

    # -- the board's changes --------------------------------------------------------------

    def put(self, key: str, row: int | None = None) -> None:
        """Insert ``key`` at ``row`` (default: where its order puts it)."""
        at = len(self.keys) if row is None else max(0, min(row, len(self.keys)))
        self.beginInsertRows(QModelIndex(), at, at)
        self.keys.insert(at, key)
        self.endInsertRows()

    def take(self, key: str) -> int | None:
        """Remove ``key``; the row it was on (None: not here)."""
        if key not in self.keys:
            return None
        row = self.keys.index(key)
        self.beginRemoveRows(QModelIndex(), row, row)
        del self.keys[row]
        self.endRemoveRows()
        return row

    def touch(self, key: str) -> None:
        if key in self.keys:
            index = self.index(self.keys.index(key))
            self.dataChanged.emit(index, index)

    def reset(self, keys: list[str]) -> None:
        self.beginResetModel()
        self.keys = keys
        self.endResetModel()


class BoardViewModel(QObject):
    """The board: projects, the chosen one, and a :class:`StageColumn` per stage.

    Signals:
        changed(): the projects, the chosen project or the loading state changed.
        sessionRequested(str): open this Relay session's stream.
        detectedRequested(str): select this detected session (``runtime:id``) in Detect.
        linkReady(str): a web board link to open.
        unlinkedChanged(): the sessions without a task were read again.
    """

    changed = Signal()
    unlinkedChanged = Signal()
    sessionRequested = Signal(str)
    detectedRequested = Signal(str)
    linkReady = Signal(str)

    def __init__(self, bridge: EngineBridge, backend: BoardBackend,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._backend = backend
        self._cards: dict[str, Card] = {}
        self._projects: list[Project] = []
        self._project: str | None = None
        self.loaded = False
        self.columns: dict[str, StageColumn] = {stage: StageColumn(self, stage) for stage in STAGES}
        #: keys whose card is being re-read, and whether another read must follow
        self._reading: dict[str, bool] = {}
        self._load: asyncio.Task[None] | None = None
        #: the hooked sessions no task names (of the project shown), newest first
        self.unlinked: list[HookedSession] = []
        self._unlinked_read: asyncio.Task[None] | None = None
        self._unlinked_again = False
        bridge.records.connect(self.on_records)

    # -- reading --------------------------------------------------------------------------

    @property
    def projects(self) -> list[Project]:
        return list(self._projects)

    @property
    def project(self) -> str | None:
        """The project shown (its slug), or None: all projects."""
        return self._project

    def card(self, key: str) -> Card | None:
        return self._cards.get(key)

    def stage_of(self, key: str) -> str | None:
        for stage, column in self.columns.items():
            if key in column.keys:
                return stage
        return None

    def keys(self, stage: str) -> list[str]:
        return list(self.columns[stage].keys)

    # -- loading --------------------------------------------------------------------------

    def set_project(self, slug: str | None) -> None:
        if slug != self._project:
            self._project = slug
            self.refresh()

    def refresh(self) -> None:
        """Read the projects and every card of the chosen project(s) again."""
        if self._load is not None and not self._load.done():
            self._load.cancel()
        self._load = self._bridge.tasks.start(self._read_all(), context=CONTEXT)

    async def _read_all(self) -> None:
        self._projects = await self._backend.projects()
        cards = await self._backend.cards(self._project)
        self._cards = {c.task.key: c for c in cards}
        for stage, column in self.columns.items():
            column.reset([c.task.key for c in cards if c.task.stage == stage])
        self.unlinked = await self._backend.unlinked(self._project)
        self.loaded = True
        self.changed.emit()
        self.unlinkedChanged.emit()

    def on_records(self, batch: Sequence[EventRecord]) -> None:
        """What the records name is read again: a task's card, a project list, the cards
        linked to a session whose live state changed."""
        keys: set[str] = set()
        projects = unlinked = False
        for record in batch:
            event: Any = record.event
            if event.kind == "board_changed":
                if event.entity == "project":
                    projects = True
                if event.task and self._shows(event.project):
                    keys.add(event.task)
                # a link made or ended moves a session in or out of "without a task"
                unlinked |= event.entity == "link" or "session" in event.fields
            elif event.kind == "live_state":
                keys |= self._linked_to(event.agent_session_id, event.relay_session_id)
                unlinked = True
        if projects:
            self._bridge.tasks.start(self._read_projects(), context=CONTEXT)
        if unlinked and self.loaded:
            self._reread_unlinked()
        for key in keys:
            self._reread(key)

    def _shows(self, project: str) -> bool:
        return self._project is None or project == self._project

    def _linked_to(self, agent_session_id: str, relay_session_id: str | None) -> set[str]:
        refs = {agent_session_id, relay_session_id} - {None}
        return {key for key, card in self._cards.items()
                if any(s.session_ref in refs for s in card.sessions)}

    async def _read_projects(self) -> None:
        self._projects = await self._backend.projects()
        self.changed.emit()

    def _reread_unlinked(self) -> None:
        """Read the sessions without a task again (once more after a read under way)."""
        if self._unlinked_read is not None and not self._unlinked_read.done():
            self._unlinked_again = True
            return
        self._unlinked_read = self._bridge.tasks.start(self._read_unlinked(), context=CONTEXT)

    async def _read_unlinked(self) -> None:
        while True:
            self._unlinked_again = False
            self.unlinked = await self._backend.unlinked(self._project)
            self.unlinkedChanged.emit()
            if not self._unlinked_again:
                return

    def _reread(self, key: str) -> None:
        """Read ``key``'s card again (once more after the read under way, when one is)."""
        if key in self._reading:
            self._reading[key] = True
            return
        self._reading[key] = False
        self._bridge.tasks.start(self._read_card(key), context=CONTEXT)

    async def _read_card(self, key: str) -> None:
        try:
            while True:
                self._reading[key] = False
                try:
                    card = await self._backend.card(key)
                except Exception as exc:
                    if getattr(exc, "code", "") != "task_not_found":
                        raise
                    card = None
                self._place(key, card)
                if not self._reading[key]:
                    return
        finally:
            self._reading.pop(key, None)

    def _place(self, key: str, card: Card | None) -> None:
        """Show ``card`` in its stage's column (``None``, or a project not shown: nowhere)."""
        was = self.stage_of(key)
        if card is None or not self._shows(card.task.project):
            self._cards.pop(key, None)
            if was is not None:
                self.columns[was].take(key)
            return
        self._cards[key] = card
        stage = card.task.stage
        if was == stage:
            self.columns[stage].touch(key)
            return
        if was is not None:
            self.columns[was].take(key)
        self.columns[stage].put(key, 0)  # moved or new: on top

    # -- intents --------------------------------------------------------------------------

    def set_stage(self, key: str, stage: str) -> bool:
        """Move ``key`` to ``stage`` now and ask the host; a refusal puts it back."""
        card, was = self._cards.get(key), self.stage_of(key)
        if card is None or was is None or was == stage or stage not in STAGES:
            return False
        row = self.columns[was].take(key)
        self.columns[stage].put(key, 0)
        # the version the user saw: a card someone moved meanwhile is a refusal, not a race
        moving = self._moving(key, was, row, stage, card.task.version)
        self._bridge.tasks.start(moving, context=CONTEXT,
                                 on_done=lambda task: self._moved(key, task))
        return True

    async def _moving(self, key: str, was: str, row: int | None, stage: str,
                      version: int) -> Task:
        try:
            return await self._backend.set_stage(key, stage, expected_version=version)
        except BaseException:
            if self.stage_of(key) == stage:  # nothing moved it since: back where it was
                self.columns[stage].take(key)
                self.columns[was].put(key, row)
            raise

    def _moved(self, key: str, task: Task) -> None:
        card = self._cards.get(key)
        if card is not None:
            self._cards[key] = replace(card, task=task)
            self.columns[task.stage].touch(key)

    def comment(self, key: str, body: str) -> None:
        """Write the owner's comment on ``key`` (delivered to its linked session)."""
        if body.strip():
            self._bridge.tasks.start(self._backend.comment(key, body.strip()), context=CONTEXT)

    def open_web(self, key: str | None = None) -> None:
        """A one-time sign-in link to the web board (at ``key``'s page); :attr:`linkReady`
        has it."""
        self._bridge.tasks.start(self._backend.web_link(key), context=CONTEXT,
                                 on_done=self.linkReady.emit)

    def open(self, key: str) -> bool:
        """Open ``key``'s session: a Relay session's stream first, else the hooked session in
        the Detect dock. False when no session is linked."""
        card = self._cards.get(key)
        if card is None:
            return False
        sessions = sorted(card.sessions, key=lambda s: s.live is None or s.live.state == "ended")
        for link in sessions:
            relay_id = link.session_ref if link.kind == "relay" else (
                link.live.relay_session_id if link.live is not None else None)
            if relay_id:
                self.sessionRequested.emit(relay_id)
                return True
        for link in sessions:
            runtime = link.live.runtime if link.live is not None else "claude"
            self.detectedRequested.emit(f"{runtime}:{link.session_ref}")
            return True
        return False


def session_state(link: Any) -> str:
    """A linked session's state: its hooks' live state, else its Relay session's."""
    if link.live is not None:
        return str(link.live.state)
    return str(link.relay_state or "")


def plan_progress(plan: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """(steps completed, steps) of the linked session's todo list."""
    return sum(1 for step in plan if step.get("status") == "completed"), len(plan)


def card_summary(card: Card) -> str:
    """A card in one paragraph (its accessible text and tooltip)."""
    task = card.task
    parts = [f"{task.key}: {task.title}", f"stage {task.stage}"]
    if task.next_step:
        parts.append(f"next: {task.next_step}")
    if card.needs_input:
        parts.append("needs input")
    for link in card.sessions:
        state = session_state(link)
        parts.append(f"session {link.session_ref[:8]} {LIVE_LABELS.get(state, state)}")
    if card.last_report is not None:
        parts.append(f"last report: {card.last_report.summary}")
    done, total = plan_progress(card.plan)
    if total:
        parts.append(f"plan {done}/{total}")
    return " · ".join(parts)


def unlinked_text(sessions: Sequence[HookedSession]) -> str:
    """The sessions without a task in one line ("" when there are none)."""
    if not sessions:
        return ""
    n = len(sessions)
    items = " · ".join(f"{LIVE_LABELS.get(s.state, s.state)} {s.agent_session_id[:8]}"
                       for s in sessions)
    return f"{n} session{'s' if n != 1 else ''} without a task: {items}"
