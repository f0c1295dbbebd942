"""The session list as the store reads it, with the standard library alone.

``relay-cli sessions`` answers without the engine (which costs most of a second: the
store's models, aiosqlite, the runtimes…): :func:`quick_sessions` opens relay.db read-only
with :mod:`sqlite3` and runs the very statements the store's
:class:`~relay.core.store.sessions_repo.SessionsRepo` runs — :data:`SESSIONS_SELECT` and
:data:`ACTIVE_SESSIONS` are defined here, once, so the two cannot drift. It answers only
when the answer is the engine's: the database is at this build's schema, and no active
session lost its Relay process (an engine marks those interrupted, and stops their agents,
when it opens). Nothing here imports pydantic or aiosqlite.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from relay.core.states import ACTIVE_STATES

#: a run's usage columns, in :class:`~relay.core.events.Usage`'s field order
USAGE_COLS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
              "reasoning_tokens", "cost_usd")

#: the pipeline step a session runs, from its spec (none when the spec does not parse)
_STEP = ("(CASE WHEN json_valid(s.spec_json) THEN json_extract(s.spec_json, '$.pipeline_step')"
         " END)")
# One session row with its runs' usage and refused calls summed; a caller appends the WHERE,
# ORDER and LIMIT. Column positions are the ones :func:`quick_row` and the repository read.
SESSIONS_SELECT = (
    "SELECT s.id, s.repo, s.task, s.runtime, s.model, s.state, s.permission, s.workdir,"
    " s.branch, s.agent_session_id, s.reason, s.simulated, s.created_ms, s.updated_ms, "
    + ", ".join(f"(SELECT sum(r.{c}) FROM runs r WHERE r.session_id = s.id)" for c in USAGE_COLS)
    + ", s.wait_until_ms,"
    " (SELECT coalesce(sum(r.refused_calls), 0) FROM runs r WHERE r.session_id = s.id),"
    " s.archived_at,"
    # the chain entries its runs used, in order (unit-separated)
    " (SELECT group_concat(e, char(31)) FROM (SELECT coalesce(r.entry, r.runtime) AS e"
    " FROM runs r WHERE r.session_id = s.id ORDER BY r.attempt)),"
    # where an unfinished handoff takes it
    " (SELECT h.to_entry FROM handoffs h WHERE h.session_id = s.id"
    " AND h.state NOT IN ('done', 'failed') ORDER BY h.created_ms DESC LIMIT 1),"
    # the pipeline step it runs (<run-id>/<node-id>) and that run's name; a spec that does
    # not parse names none (the list still shows the session; reading the spec says why)
    f" {_STEP},"
    f" (SELECT p.name FROM pipeline_runs p"
    f" WHERE p.id = substr({_STEP}, 1, instr({_STEP}, '/') - 1))"
    " FROM sessions s")
#: the newest sessions first, archived ones left out (one parameter: how many)
RECENT_SESSIONS = (f"{SESSIONS_SELECT} WHERE s.archived_at IS NULL"
                   " ORDER BY s.updated_ms DESC LIMIT ?")
#: the newest sessions first, archived ones too (one parameter: how many)
RECENT_WITH_ARCHIVED = f"{SESSIONS_SELECT} ORDER BY s.updated_ms DESC LIMIT ?"
#: (id, owner_pid, state) of the sessions some Relay process is (or was) running
ACTIVE_SESSIONS = (f"SELECT id, owner_pid, state FROM sessions WHERE state IN"
                   f" ({','.join('?' * len(ACTIVE_STATES))})")


@dataclass(frozen=True)
class QuickUsage:
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    reasoning_tokens: int | None
    cost_usd: float | None

    @property
    def is_unknown(self) -> bool:
        return all(v is None for v in (self.input_tokens, self.output_tokens,
                                       self.cache_read_tokens, self.cache_write_tokens,
                                       self.reasoning_tokens, self.cost_usd))


@dataclass(frozen=True)
class QuickRow:
    """A session as :func:`quick_sessions` reads it: what the sessions table shows."""

    id: str
    state: str
    runtime: str
    simulated: bool
    task: str
    updated_at: datetime
    refused_calls: int
    usage: QuickUsage
    archived_at: datetime | None = None


def quick_row(r: Sequence[Any]) -> QuickRow:
    """A :data:`SESSIONS_SELECT` row, as the table shows it."""
    return QuickRow(id=r[0], state=r[5], runtime=r[3], simulated=bool(r[11]), task=r[2],
                    updated_at=datetime.fromtimestamp(r[13] / 1000, UTC),
                    usage=QuickUsage(*r[14:20]), refused_calls=int(r[21]),
                    archived_at=None if r[22] is None else datetime.fromtimestamp(r[22], UTC))


def quick_sessions(db: Path, limit: int, archived: bool = False) -> list[QuickRow] | None:
    """The newest ``limit`` sessions (``archived`` ones too), or None when only the engine
    can answer (no database yet, another schema, an active session whose Relay process is
    gone, anything unusual)."""
    from relay.core.store.migrations import LATEST

    if not db.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=2.0)
    except sqlite3.Error:
        return None
    try:
        (version,) = conn.execute("SELECT max(version) FROM schema_version").fetchone()
        if version != LATEST:
            return None
        owners = [pid for _, pid, _ in conn.execute(ACTIVE_SESSIONS, ACTIVE_STATES)]
        if owners and not all(_alive(pid) for pid in owners):
            return None
        sql = RECENT_WITH_ARCHIVED if archived else RECENT_SESSIONS
        return [quick_row(r) for r in conn.execute(sql, (limit,))]
    except (sqlite3.Error, TypeError, ValueError):
        return None
    finally:
        conn.close()


def _alive(pid: int | None) -> bool:
    """Whether the Relay process ``pid`` still runs (as the engine decides it)."""
    if pid is None:
        return False
    if pid == os.getpid():
        return True
    import psutil

    return bool(psutil.pid_exists(pid))
