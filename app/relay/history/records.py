"""What the time machine reads from the event store and the audit log (no writes here)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from relay.core import audit
from relay.core.errors import AuditError
from relay.core.events import AgentEvent, parse_event
from relay.core.store.db import Store, from_ms

#: the event kinds that tell a session's story (the audit log has the same ones)
STORY_KINDS = ("state_changed", "session_ended", "handoff_step", "verify_result")


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
    #: event id → the time the audit log recorded for it
    times: dict[int, datetime]


async def base_of(store: Store, session_id: str) -> tuple[str | None, str | None]:
    async with store.conn.execute("SELECT base_sha, base_branch FROM sessions WHERE id=?",
                                  (session_id,)) as cur:
        row = await cur.fetchone()
    return (row[0], row[1]) if row else (None, None)


async def story(store: Store, session_id: str) -> list[StoryEvent]:
    marks = ",".join("?" * len(STORY_KINDS))
    async with store.conn.execute(
            f"SELECT id, run_id, ts_ms, payload FROM events WHERE session_id=? AND kind IN ({marks})"
            " ORDER BY id", (session_id, *STORY_KINDS)) as cur:
        rows = await cur.fetchall()
    return [StoryEvent(r[0], r[1], from_ms(r[2]), parse_event(r[3])) for r in rows]


async def runs(store: Store, session_id: str) -> list[RunInfo]:
    async with store.conn.execute(
            "SELECT id, attempt, runtime, coalesce(entry, runtime), started_ms, ended_ms, outcome"
            " FROM runs WHERE session_id=? ORDER BY attempt", (session_id,)) as cur:
        rows = await cur.fetchall()
    return [RunInfo(r[0], r[1], r[2], r[3], from_ms(r[4]), from_ms(r[5]) if r[5] else None, r[6])
            for r in rows]


async def sessions_with_branches(store: Store, limit: int = 500) -> list[tuple[str, str, str]]:
    """(session id, repository, branch) of recent sessions that have a branch."""
    async with store.conn.execute(
            "SELECT id, repo, branch FROM sessions WHERE branch IS NOT NULL"
            " ORDER BY updated_ms DESC LIMIT ?", (limit,)) as cur:
        return [(r[0], r[1], r[2]) for r in await cur.fetchall()]


def read_audit(path: Path, session_id: str) -> AuditView:
    """The session's entries in the audit log and whether the chain is intact (blocking)."""
    if not path.exists():
        return AuditView(None, None, {})
    try:
        report = audit.verify(path)
    except AuditError as exc:
        return AuditView(False, exc.message, {})
    problem = None if report.ok else (f"line {report.broken_line}: "
                                      f"{report.detail or report.kind or 'the chain is broken'}")
    times: dict[int, datetime] = {}
    try:
        for entry in audit.iter_entries(path):
            data: dict[str, Any] = entry.data
            if data.get("session_id") == session_id and isinstance(data.get("event_id"), int):
                times[data["event_id"]] = datetime.fromisoformat(entry.ts.replace("Z", "+00:00"))
    except (AuditError, ValueError):
        pass  # a damaged line ends what can be read; verify already said where
    return AuditView(report.ok, problem, times)
