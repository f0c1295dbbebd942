"""Feeds the hash-chained audit log from committed events.

Every session lifecycle event (Relay's state changes, each run's end) and every
handoff step goes into ``<data>/audit.jsonl`` after it is committed. The bus
listener only queues; one background task appends in a worker thread (an append
takes a file lock and fsyncs), so neither the event loop nor the writer waits on
the audit log. :meth:`AuditTrail.aclose` drains the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from relay.core.audit import AuditLog, recent_event_ids
from relay.core.errors import RelayError
from relay.core.events import EventRecord

if TYPE_CHECKING:
    from relay.core.store.sessions_repo import SessionsRepo

log = logging.getLogger(__name__)

#: the event kinds that tell the story of a session and its handoffs.
#: ``guard_decision``: every verdict of the guard (issue 21), the board's hook ones included
AUDITED_KINDS = frozenset({"state_changed", "session_ended", "handoff_step", "verify_result",
                           "guard_decision"})


def audit_entry(record: EventRecord, *, late: bool = False) -> tuple[str, dict[str, Any]]:
    """The audit event name and data for a stored record (``late``: written when Relay
    opened again, because the process that committed it died before its append)."""
    event = record.event
    data = event.model_dump(mode="json", exclude={"replay", "kind"})
    data.update({"session_id": record.session_id, "run_id": record.run_id,
                 "event_id": record.id})
    if late:
        data["late"] = True
    return f"session.{event.kind}", data


class AuditTrail:
    """Appends audited records to the log in the background."""

    def __init__(self, audit_log: AuditLog) -> None:
        self.log = audit_log
        self._pending: deque[EventRecord] = deque()
        self._wakeup = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="relay-audit-trail")

    def on_records(self, records: Sequence[EventRecord]) -> None:
        """Bus listener: queue what the audit log must record."""
        audited = [r for r in records if r.event.kind in AUDITED_KINDS]
        if audited:
            self._pending.extend(audited)
            self._wakeup.set()

    async def _run(self) -> None:
        """The only appender (so entries keep event order); ends once closing and drained."""
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            await self._drain()
            if self._closing and not self._pending:
                return

    async def _drain(self) -> None:
        while self._pending:
            batch = [self._pending.popleft() for _ in range(len(self._pending))]
            try:
                await asyncio.to_thread(self._append_all, batch)
            except RelayError as exc:  # the store keeps the events; say what went wrong
                log.error("audit log not written: %s", exc)  # noqa: TRY400 — the message says it all
            except Exception:  # a bug must not end auditing silently for the process
                log.exception("audit log not written")

    def _append_all(self, batch: list[EventRecord], late: bool = False) -> None:
        for record in batch:
            self.log.append(*audit_entry(record, late=late))

    async def catch_up_after_crash(self, sessions: SessionsRepo,
                                   owned_elsewhere: Callable[[int | None], bool]) -> None:
        """Audit what a killed process committed but never appended (it appends after the
        commit, in the background), at open before anything new is queued, so the log
        keeps their order: the events the log's tail lacks whose session no live Relay
        process owns (``owned_elsewhere(pid)``: a live one still has them queued), written
        late and marked so."""
        known, first = await asyncio.to_thread(recent_event_ids, self.log.path)
        if first is None:
            return  # the log's tail names no event: nothing to compare with
        anchor = self.log.anchor
        if first == 0 and anchor is not None and await asyncio.to_thread(anchor.read) is not None:
            return  # an anchored log is gone or emptied: audit verify says so; no new chain
        rows = await sessions.events_from(first, AUDITED_KINDS)
        missing = [r for r, owner in rows if r.id not in known and not owned_elsewhere(owner)]
        if missing:
            log.warning("writing %d audit entries a stopped Relay committed but never "
                        "appended", len(missing))
            await asyncio.to_thread(self._append_all, missing, True)

    async def aclose(self) -> None:
        """Write everything queued (including a batch in flight), then stop."""
        self._closing = True
        self._wakeup.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._drain()  # never started, or records queued after the task ended
