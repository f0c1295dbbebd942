"""What the TUI knows of the host, kept live from its event stream (no polling).

:class:`Feed` reads the sessions once, then follows the host's stream of every session
(:meth:`RelayClient.follow`, which reconnects from its cursor by itself) and keeps each
session's row up to date: a ``state_changed`` moves its state, an event of a session it
has not seen yet fetches that session's row. Screens listen for the records of one session
(:meth:`Feed.listen`) or for row changes (``on_row``). :class:`Conversation` is what one
session's screen shows besides its stream: the queued messages and the open questions,
rebuilt from the same records whether they are replayed from the store or arrive live.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from relay.api.client import RelayClient
from relay.core.errors import RelayError
from relay.core.events import (
    EventRecord,
    InputWithdrawn,
    MessageChanged,
    NeedsInput,
    SessionEnded,
    StateChanged,
    is_board_record,
)
from relay.core.models import SessionRow
from relay.core.states import FINAL_STATES

#: a listener of one session's records
Listener = Callable[[EventRecord], None]
#: sessions the list shows at most (newest first)
LIMIT = 200


class Feed:
    """The host's sessions, live. ``on_row(row)`` is called for every new or changed row;
    ``on_link(up)`` when the stream breaks (False) and is back (True)."""

    def __init__(self, client: RelayClient) -> None:
        self.client = client
        self.rows: dict[str, SessionRow] = {}
        self.on_row: Callable[[SessionRow], None] | None = None
        self.on_link: Callable[[bool], None] | None = None
        #: the id of the last record seen on the stream
        self.cursor = 0
        self._listeners: dict[str, list[Listener]] = {}
        self._fetching: dict[str, asyncio.Task[None]] = {}  # held: a task is not collected
        self._again: set[str] = set()  # sessions whose records came while their row was read

    async def load(self) -> list[SessionRow]:
        """The sessions now (newest first); the stream is followed from this point."""
        self.cursor = await self.client.last_event_id()
        rows = await self.client.list_sessions(LIMIT)
        self.rows = {row.id: row for row in rows}
        return rows

    async def follow(self) -> None:
        """Follow every session's events until cancelled (or the host is gone: raised)."""
        async for record in self.client.follow(None, self.cursor, on_link=self._link):
            self.cursor = record.id
            self._apply(record)
            for listener in list(self._listeners.get(record.session_id, ())):
                listener(record)

    def listen(self, session_id: str, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with the session's records from now on; returns the undo."""
        self._listeners.setdefault(session_id, []).append(listener)

        def undo() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.get(session_id, []).remove(listener)
        return undo

    def _link(self, up: bool) -> None:
        if self.on_link is not None:
            self.on_link(up)

    def _apply(self, record: EventRecord) -> None:
        sid = record.session_id
        row = self.rows.get(sid)
        if row is None:
            # a session started since (not the board's records): fetch its row
            if sid and not is_board_record(record):
                if sid in self._fetching:  # came while its row is read: read it once more
                    self._again.add(sid)
                else:
                    task = self._fetching[sid] = asyncio.create_task(self._fetch(sid))
                    task.add_done_callback(lambda _t: self._fetching.pop(sid, None))
            return
        event = record.event
        if isinstance(event, StateChanged) and event.state != row.state:
            update: dict[str, object] = {"state": event.state, "reason": event.reason}
            if event.refused_calls is not None:
                update["refused_calls"] = event.refused_calls
            self._changed(row.model_copy(update=update))

    async def _fetch(self, session_id: str) -> None:
        """Read a new session's row; again while its records arrive meanwhile (a state
        change committed after the read would otherwise never show)."""
        with contextlib.suppress(RelayError):  # gone meanwhile: nothing to show
            for _ in range(5):  # a busy session's records keep coming: its rows show anyway
                self._again.discard(session_id)
                self._changed(await self.client.get_session(session_id))
                if session_id not in self._again:
                    return

    def _changed(self, row: SessionRow) -> None:
        self.rows[row.id] = row
        if self.on_row is not None:
            self.on_row(row)


@dataclass
class Conversation:
    """One session's queued messages and open questions, from its records in order."""

    #: message id → its latest change, while it is queued or being sent
    pending: dict[str, MessageChanged] = field(default_factory=dict)
    #: request id → the question, while it is open
    questions: dict[str, NeedsInput] = field(default_factory=dict)
    #: the id of the last record applied
    last: int = 0

    def apply(self, record: EventRecord) -> bool:
        """Take one record in; whether the queued list or the questions changed. A record
        already applied (a replayed page overlapping the live stream) changes nothing."""
        if record.id <= self.last:
            return False
        self.last = record.id
        event = record.event
        if isinstance(event, MessageChanged):
            if event.state in ("queued", "sending"):
                self.pending[event.message_id] = event
            else:
                self.pending.pop(event.message_id, None)
            return True
        if isinstance(event, NeedsInput):
            self.questions[event.request_id] = event
            return True
        if isinstance(event, InputWithdrawn):
            return self.questions.pop(event.request_id, None) is not None
        if self.questions and (isinstance(event, SessionEnded) or (
                isinstance(event, StateChanged) and event.state in FINAL_STATES)):
            self.questions.clear()  # a run that ended asks nothing any more
            return True
        return False
