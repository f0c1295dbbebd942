"""What the time machine reads from the event store and the audit log (no writes here)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from relay.core import audit
from relay.core.audit_trail import AUDITED_KINDS
from relay.core.errors import AuditError
from relay.core.events import AgentEvent, SessionEnded, TurnCompleted
from relay.core.models import ForkOrigin
from relay.core.store.db import Store, from_ms
from relay.core.store.sql import stored_event
from relay.history.model import ForkChild

#: the event kinds that tell a session's story: the ones the audit log records
STORY_KINDS = tuple(sorted(AUDITED_KINDS))


@dataclass(frozen=True)
class StoryEvent:
    id: int
    run_id: str | None
    at: datetime
    event: AgentEvent
    audited: bool = False


@dataclass(frozen=True)
class RunInfo:
    id: str
    attempt: int
    runtime: str
    entry: str
    started_at: datetime
    ended_at: datetime | None
    outcome: str | None


@dataclass(frozen=True)
class AuditView:
    ok: bool | None
    problem: str | None
    #: the ids of the session's events the audit log holds
    audited: frozenset[int]


async def story(store: Store, session_id: str) -> list[StoryEvent]:
    marks = ",".join("?" * len(STORY_KINDS))
    async with store.conn.execute(
            f"SELECT id, run_id, ts_ms, payload FROM events WHERE session_id=? AND kind IN ({marks})"
            " ORDER BY id", (session_id, *STORY_KINDS)) as cur:
        rows = await cur.fetchall()
    return [StoryEvent(r[0], r[1], from_ms(r[2]), stored_event(r[3])) for r in rows]


async def runs(store: Store, session_id: str) -> list[RunInfo]:
    return [RunInfo(r.id, r.attempt, r.runtime, r.entry or r.runtime, r.started_at, r.ended_at,
                    r.outcome) for r in await store.sessions.runs(session_id)]


async def forks(store: Store, session_id: str) -> list[ForkChild]:
    """The sessions whose spec says they were forked from ``session_id``, oldest first."""
    async with store.conn.execute(
            "SELECT id, state, task, json_extract(spec_json, '$.fork_of') FROM sessions"
            " WHERE json_extract(spec_json, '$.fork_of.session_id') = ? ORDER BY created_ms",
            (session_id,)) as cur:
        rows = await cur.fetchall()
    return [ForkChild(r[0], r[1], r[2], ForkOrigin.model_validate_json(r[3])) for r in rows]


@dataclass(frozen=True)
class TurnMark:
    """Where a run's work stood in the stream: a user turn's end, or the run's end."""

    id: int
    run_id: str | None
    #: ``turn``: a user turn of the agent conversation ended (a turn_completed carrying the
    #: turn's result text — the agent's inner steps carry none); ``end``: the run ended
    kind: str


async def turn_marks(store: Store, session_id: str) -> list[TurnMark]:
    """The session's user-turn ends and run ends, in stream order."""
    out = []
    for record in await store.events_after(0, session_id=session_id, limit=10_000_000,
                                           kinds=("turn_completed", "session_ended")):
        event = record.event
        if isinstance(event, TurnCompleted) and event.result_text is not None:
            out.append(TurnMark(record.id, record.run_id, "turn"))
        elif isinstance(event, SessionEnded):
            out.append(TurnMark(record.id, record.run_id, "end"))
    return out


async def last_event(store: Store, session_id: str, until_ms: int | None = None) -> int:
    """The id of the session's last stream row (made by ``until_ms``); 0 when none."""
    sql, params = "SELECT MAX(id) FROM events WHERE session_id=?", list[object]([session_id])
    if until_ms is not None:
        sql += " AND ts_ms <= ?"
        params.append(until_ms)
    async with store.conn.execute(sql, params) as cur:
        row = await cur.fetchone()
    return int(row[0]) if row and row[0] is not None else 0


@dataclass(frozen=True)
class _AuditScan:
    ok: bool
    problem: str | None
    #: session id → the ids of its events the log holds
    audited: dict[str, frozenset[int]]


#: the last scan of each audit file, keyed by (size, mtime): the log only changes when a
#: session's story moves, while a History view asks on every refresh
_SCANS: dict[Path, tuple[tuple[int, int], _AuditScan]] = {}
_SCANS_LOCK = threading.Lock()


def _scan(path: Path) -> _AuditScan:
    try:
        report = audit.verify(path)
    except AuditError as exc:
        return _AuditScan(False, exc.message, {})
    problem = None if report.ok else (f"line {report.broken_line}: "
                                      f"{report.detail or report.kind or 'the chain is broken'}")
    found: dict[str, set[int]] = {}
    try:
        for entry in audit.iter_entries(path):
            data: dict[str, Any] = entry.data
            sid, event_id = data.get("session_id"), data.get("event_id")
            if isinstance(sid, str) and isinstance(event_id, int):
                found.setdefault(sid, set()).add(event_id)
    except AuditError:
        pass  # a damaged line ends what can be read; verify already said where
    return _AuditScan(report.ok, problem, {k: frozenset(v) for k, v in found.items()})


def read_audit(path: Path, session_id: str) -> AuditView:
    """Whether the audit log's chain is intact and which of the session's events it holds
    (blocking; the whole file is read again only when it changed)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return AuditView(None, None, frozenset())
    except OSError as exc:
        return AuditView(False, f"the audit log cannot be read: {exc.strerror}", frozenset())
    key = (st.st_size, st.st_mtime_ns)
    with _SCANS_LOCK:
        cached = _SCANS.get(path)
    if cached is None or cached[0] != key:
        cached = (key, _scan(path))
        with _SCANS_LOCK:
            _SCANS[path] = cached
    scan = cached[1]
    return AuditView(scan.ok, scan.problem, scan.audited.get(session_id, frozenset()))
