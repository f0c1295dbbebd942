"""The durable handoff journal: each step committed before the next begins.

A handoff moves a session from one chain entry (``provider[:account]``) to the
next through the states of the brief::

    (running) → pausing → snapshotted → envelope_built → dispatched → resuming → done
                   └──────────┴──────────────┴───────────────┴────────────┴──→ failed

Every transition is one transaction: the ``handoffs`` row's new state (with what
the step produced — snapshot commit, contract folder, the receiving run) and a
:class:`~relay.core.events.HandoffStep` event row. An engine killed at any point
finds the handoff with :meth:`HandoffJournal.unfinished` and continues from the
last committed state; each step's own work is idempotent (the snapshot is keyed
by the handoff id), so nothing is done twice.

This module is the journal only; the coordinator that performs the steps builds
on it (issue 3).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from relay.core.errors import HandoffTransitionError
from relay.core.events import HandoffState, HandoffStep
from relay.core.store.db import Store, from_ms, now_ms
from relay.core.store.writer import EventWriter, Statement, WriteOp

#: the states a handoff may move to from each state (``None``: not begun).
TRANSITIONS: dict[HandoffState | None, frozenset[HandoffState]] = {
    None: frozenset({"pausing"}),
    "pausing": frozenset({"snapshotted", "failed"}),
    "snapshotted": frozenset({"envelope_built", "failed"}),
    "envelope_built": frozenset({"dispatched", "failed"}),
    # dispatched again: a crash cut the first receiver off before it worked
    "dispatched": frozenset({"dispatched", "resuming", "failed"}),
    "resuming": frozenset({"done", "failed"}),
    "done": frozenset(),
    "failed": frozenset(),
}
FINISHED: frozenset[HandoffState] = frozenset({"done", "failed"})
_COLUMNS = ("id", "session_id", "from_run_id", "from_entry", "to_entry", "reason", "state",
            "snapshot_sha", "contract_dir", "to_run_id", "error", "created_ms", "updated_ms")



class HandoffRecord(BaseModel):
    """A handoff as last committed."""

    model_config = ConfigDict(frozen=True)

    id: str
    session_id: str
    from_run_id: str | None
    from_entry: str | None
    to_entry: str | None
    reason: str | None
    state: HandoffState
    snapshot_sha: str | None = None
    contract_dir: str | None = None
    to_run_id: str | None = None
    error: str | None = None
    created_at: datetime
    updated_at: datetime

    @property
    def finished(self) -> bool:
        return self.state in FINISHED


def _record(row: tuple[Any, ...]) -> HandoffRecord:
    values = dict(zip(_COLUMNS, row, strict=True))
    values["created_at"] = from_ms(values.pop("created_ms"))
    values["updated_at"] = from_ms(values.pop("updated_ms"))
    return HandoffRecord(**values)


class HandoffJournal:
    """Reads and advances handoffs; every write goes through the engine's writer."""

    def __init__(self, store: Store, writer: EventWriter) -> None:
        self.store = store
        self.writer = writer

    async def begin(self, session_id: str, *, from_run_id: str | None, from_entry: str | None,
                    to_entry: str | None, reason: str | None,
                    simulated: bool = False) -> HandoffRecord:
        """Record a new handoff in state ``pausing`` (row and event in one transaction)."""
        handoff_id = f"h-{uuid.uuid4().hex[:12]}"
        ms = now_ms()
        insert = ("INSERT INTO handoffs (id, session_id, from_run_id, from_entry, to_entry, reason,"
                  " state, created_ms, updated_ms) VALUES (?,?,?,?,?,?,?,?,?)",
                  (handoff_id, session_id, from_run_id, from_entry, to_entry, reason, "pausing",
                   ms, ms))
        step = HandoffStep(handoff_id=handoff_id, state="pausing", from_entry=from_entry,
                           to_entry=to_entry, reason=reason, simulated=simulated)
        await self.writer.write(WriteOp(session_id, from_run_id, step, statements=[insert]))
        return await self.get(handoff_id)

    async def advance(self, record: HandoffRecord, state: HandoffState, *,
                      detail: str | None = None, simulated: bool = False,
                      **produced: str) -> HandoffRecord:
        """Commit the move to ``state`` with what the step produced.

        ``produced`` may set ``snapshot_sha``, ``contract_dir`` and ``to_run_id``;
        ``simulated`` labels the step of a demo session.

        Raises:
            HandoffTransitionError: ``state`` does not follow the last committed one.
        """
        current = await self.get(record.id)
        if state not in TRANSITIONS[current.state]:
            raise HandoffTransitionError(
                f"Handoff {record.id} cannot go from {current.state} to {state}.",
                "This is a bug in Relay; the handoff was left as it was.")
        unknown = set(produced) - {"snapshot_sha", "contract_dir", "to_run_id"}
        if unknown:
            raise ValueError(f"unknown handoff fields: {sorted(unknown)}")
        statements: list[Statement] = [
            (f"UPDATE handoffs SET {name}=? WHERE id=?", (value, record.id))
            for name, value in produced.items()]
        step = HandoffStep(
            handoff_id=record.id, state=state, from_entry=current.from_entry,
            to_entry=current.to_entry, reason=current.reason, detail=detail, simulated=simulated)
        await self.writer.write(WriteOp(current.session_id, current.from_run_id, step,
                                        statements=statements))
        return await self.get(record.id)

    async def get(self, handoff_id: str) -> HandoffRecord:
        rows = await self._select("WHERE id = ?", (handoff_id,))
        if not rows:
            raise HandoffTransitionError(f"No handoff {handoff_id!r}.")
        return rows[0]

    async def for_session(self, session_id: str) -> list[HandoffRecord]:
        return await self._select("WHERE session_id = ? ORDER BY created_ms", (session_id,))

    async def unfinished(self) -> list[HandoffRecord]:
        """Handoffs a crashed engine left between two states (oldest first)."""
        return await self._select("WHERE state NOT IN ('done', 'failed') ORDER BY created_ms", ())

    async def _select(self, tail: str, params: tuple[Any, ...]) -> list[HandoffRecord]:
        await self.writer.flush()
        async with self.store.conn.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM handoffs {tail}", params) as cur:
            rows = await cur.fetchall()
        return [_record(tuple(r)) for r in rows]
