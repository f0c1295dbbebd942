"""The single writer: batches event rows and the state changes they imply.

Every write in a process goes through one :class:`EventWriter` task, so the
connection never interleaves two transactions. A batch is one ``BEGIN
IMMEDIATE … COMMIT``: the statements each op carries, the state updates its
event implies (:func:`derived_updates`) and the event rows, with ids allocated
under the write lock (monotonic across processes). Records are published to
the bus only after the commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from relay.core.bus import EventBus
from relay.core.errors import StoreError
from relay.core.events import AgentEvent, EventRecord
from relay.core.scrub_events import scrub_event
from relay.core.store.db import Store
from relay.core.store.faults import Fault, disk_full_error, fault_of
from relay.core.store.sessions_quick import USAGE_COLS
from relay.core.store.sessions_repo import SessionsRepo
from relay.core.store.sql import Statement, now_ms

__all__ = ["EventWriter", "Statement", "WriteOp", "derived_updates"]

log = logging.getLogger(__name__)
MAX_BATCH = 2000
#: pauses before writing again when the database is locked at once (about 5 s in all)
LOCKED_RETRIES = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8, 1.2, 2.0)


# One statement inserts a whole batch: SQLite unpacks the rows from a JSON array in C
# (with the GIL released) and numbers them after the current maximum id, under the
# statement's write lock — so ids stay monotonic across processes sharing the file.
_INSERT_FROM_JSON = (
    "WITH base(id) AS MATERIALIZED (SELECT coalesce(max(id), 0) FROM events)"
    " INSERT INTO events (id, session_id, run_id, ts_ms, kind, payload)"
    " SELECT base.id + json_each.key + 1, value->>0, value->>1, value->>2, value->>3, value->4"
    " FROM base, json_each(?)")


def _row_json(op: WriteOp) -> bytes:
    """One events row as a JSON array; the payload is embedded as JSON, not re-escaped."""
    assert op.event is not None
    event = op.event
    ts_ms = int(event.ts.timestamp() * 1000)
    payload = op.payload if op.payload is not None else event.__pydantic_serializer__.to_json(event)
    head = orjson.dumps([op.session_id, op.run_id, ts_ms, event.kind])
    return head[:-1] + b"," + payload + b"]"


@dataclass
class WriteOp:
    """Statements and/or one event to commit together."""

    session_id: str
    run_id: str | None = None
    event: AgentEvent | None = None
    statements: list[Statement] = field(default_factory=list)
    done: asyncio.Future[EventRecord | None] | None = None
    #: the event's JSON, already scrubbed (a parse worker's, from which ``event`` was
    #: validated): stored as is, neither scrubbed nor serialised again
    payload: bytes | None = None


def derived_updates(session_id: str, run_id: str | None, event: AgentEvent) -> list[Statement]:
    """The state-table changes an event implies, committed with its row."""
    out: list[Statement] = []
    if event.kind == "state_changed":
        until = int(event.until.timestamp() * 1000) if event.until else None
        out.append(SessionsRepo.state(session_id, event.state, event.reason, until))
    elif event.kind == "session_started" and event.agent_session_id:
        out.append(SessionsRepo.agent_session(session_id, event.agent_session_id))
        if run_id:
            out.append(SessionsRepo.run_agent_session(run_id, event.agent_session_id, event.model))
    elif event.kind == "turn_completed" and run_id and not event.usage.is_unknown:
        used = {c: getattr(event.usage, c) for c in USAGE_COLS}
        out.append(SessionsRepo.run_usage_added(
            run_id, {c: v for c, v in used.items() if v is not None}))
    elif event.kind == "quota_update" and run_id:
        resets = int(event.resets_at.timestamp() * 1000) if event.resets_at else None
        out.append(("INSERT INTO limit_snapshots (entry, window, observed_ms, used_percent,"
                    " resets_at_ms, window_minutes, status, origin)"
                    " SELECT coalesce(entry, runtime), ?, ?, ?, ?, ?, ?, ? FROM runs WHERE id=?",
                    (event.window, int(event.ts.timestamp() * 1000), event.used_percent, resets,
                     event.window_minutes, event.status, event.origin, run_id)))
    elif event.kind == "handoff_step":
        out.append(("UPDATE handoffs SET state=?, updated_ms=?,"
                    " error=CASE WHEN ?='failed' THEN ? ELSE error END WHERE id=?",
                    (event.state, now_ms(), event.state, event.detail, event.handoff_id)))
    elif event.kind == "permission_denied" and run_id:
        # a refused tool call: the session's end state says how many (never a silent success)
        out.append(SessionsRepo.run_refused(run_id))
    elif event.kind == "session_ended" and run_id:
        out.append(SessionsRepo.run_ended(run_id, event.outcome, event.exit_code))
    return out


class EventWriter:
    """Owns all writes of one process; start with :meth:`start`, end with :meth:`close`."""

    def __init__(self, store: Store, bus: EventBus, maxsize: int = 20_000) -> None:
        self.store = store
        self.bus = bus
        # A deque and two events instead of asyncio.Queue: the hot path (one op per
        # agent event) is a plain append, which matters at tens of thousands per second.
        self._ops: deque[WriteOp | None] = deque()
        self._maxsize = maxsize
        self._wakeup = asyncio.Event()
        self._space = asyncio.Event()
        self._space.set()
        self._task: asyncio.Task[None] | None = None
        self.failure: StoreError | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="relay-event-writer")

    async def close(self) -> None:
        if self._task is None:
            return
        self._ops.append(None)
        self._wakeup.set()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def submit(self, op: WriteOp) -> None:
        """Queue an op (back-pressure when the queue is full); don't wait for commit.

        Its event is scrubbed here (:func:`~relay.core.scrub_events.scrub_event`): the one
        point every stored and published event passes — unless it comes with its scrubbed
        ``payload`` (a parse worker scrubbed it); the statements' text is scrubbed by the
        connection (:mod:`relay.core.store.scrubbed`)."""
        await self.submit_many((op,))

    async def submit_many(self, ops: Sequence[WriteOp]) -> None:
        """:meth:`submit` for several ops in order, queued together."""
        if self.failure is not None:
            raise self.failure
        for op in ops:
            if op.event is not None and op.payload is None:
                op.event = scrub_event(op.event)
        while len(self._ops) >= self._maxsize:  # back-pressure (the fast path: no suspension)
            self._space.clear()
            await self._space.wait()
        self._ops.extend(ops)
        self._wakeup.set()

    async def write(self, op: WriteOp) -> EventRecord | None:
        """Queue an op and wait until it is committed."""
        op.done = asyncio.get_running_loop().create_future()
        await self.submit(op)
        return await op.done

    async def flush(self) -> None:
        """Wait until everything submitted so far is committed."""
        await self.write(WriteOp(session_id=""))

    async def _loop(self) -> None:
        while True:
            while not self._ops:
                self._wakeup.clear()
                await self._wakeup.wait()
            batch: list[WriteOp] = []
            closing = False
            while self._ops and len(batch) < MAX_BATCH:
                op = self._ops.popleft()
                if op is None:
                    closing = True
                    break
                batch.append(op)
            self._space.set()
            if batch:
                await self._finish(batch)
            if closing:
                return

    async def _finish(self, batch: list[WriteOp]) -> None:
        if self.failure is not None:  # never commit behind a failed batch: no gaps
            self._fail(batch, self.failure)
            return
        try:
            records = await self._commit_retrying(batch)
        except Exception as exc:  # any failure stops the writer cleanly: never a hang
            failure = exc if isinstance(exc, StoreError) else StoreError(
                f"Could not store events: {exc!r}.", "This is a bug in Relay; see the log.")
            self.failure = failure
            self._fail(batch, failure)
            if isinstance(exc, StoreError):  # raised to whoever waits or writes next: said there
                log.info("event batch not written: %s", exc)
            else:
                log.error("event batch not written: %s", exc, exc_info=True)
            return
        by_op = iter(records)
        for op in batch:
            record = next(by_op) if op.event is not None else None
            if op.done is not None and not op.done.done():
                op.done.set_result(record)
        self.bus.publish(records)

    @staticmethod
    def _fail(batch: list[WriteOp], exc: StoreError) -> None:
        for op in batch:
            if op.done is not None and not op.done.done():
                op.done.set_exception(exc)

    async def _commit_retrying(self, batch: list[WriteOp]) -> list[EventRecord]:
        """:meth:`_commit`, again after a moment when SQLite says the database is locked at
        once: a read on this connection still holds an older snapshot while another
        connection (another process, the pipeline ledger) committed, and SQLite refuses to
        upgrade a stale snapshot to a write without waiting for the busy timeout. Nothing
        was written; the read ends within milliseconds."""
        for delay in LOCKED_RETRIES:
            try:
                return await self._commit(batch)
            except StoreError as exc:
                if not isinstance(exc.__cause__, sqlite3.OperationalError) or \
                        "locked" not in str(exc.__cause__):
                    raise
                log.debug("database locked; writing again in %.3f s", delay)
                await asyncio.sleep(delay)
        return await self._commit(batch)

    async def _commit(self, batch: list[WriteOp]) -> list[EventRecord]:
        """Commit a batch; returns the records of its events, in op order.

        Every round trip to the database thread costs a GIL hand-over, so the common
        batch — agent events that imply no state change — is one statement (its own
        transaction). A batch with statements or state changes is one explicit
        transaction, so each state change commits together with its event row.
        """
        conn = self.store.conn
        updates = [[*op.statements, *(derived_updates(op.session_id, op.run_id, op.event)
                                     if op.event is not None else [])] for op in batch]
        events = [op for op in batch if op.event is not None]
        try:
            if not any(updates):
                return await self._insert(conn, events)
            await conn.execute("BEGIN IMMEDIATE")
            try:
                for statements in updates:
                    for sql, params in statements:
                        await conn.execute(sql, params)
                records = await self._insert(conn, events)
                await conn.executemany(*SessionsRepo.touched({op.session_id for op in events},
                                                             now_ms()))
                await conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # SQLITE_FULL etc. may already have rolled it back
                    await conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            if self.store.read_only or fault_of(exc, self.store.path) is Fault.FULL:
                raise disk_full_error(self.store.path, "the database cannot be written") from exc
            raise StoreError(f"Could not write to the database: {exc}.",
                             "Check the data folder (RELAY_HOME) and relay-cli doctor.") from exc
        return records

    @staticmethod
    async def _insert(conn: Any, events: list[WriteOp]) -> list[EventRecord]:
        if not events:
            return []
        # execute_insert also reads last_insert_rowid() in the same round trip. (RETURNING
        # would step once per row, releasing and re-taking the GIL each time: a convoy
        # that stalls this thread behind the event loop's.)
        row = await conn.execute_insert(
            _INSERT_FROM_JSON, (b"[" + b",".join(_row_json(op) for op in events) + b"]",))
        assert row is not None
        first = int(row[0]) - len(events) + 1
        return [EventRecord(first + i, op.session_id, op.run_id, op.event)  # type: ignore[arg-type]
                for i, op in enumerate(events)]
