"""The sessions and runs tables: every statement on them, in one place.

Reads run on the store's connection and return rows. Writes are :data:`Statement` tuples
that the :class:`~relay.core.store.writer.EventWriter` commits — an op's ``statements``,
and the changes :func:`~relay.core.store.writer.derived_updates` derives from an event —
so a change commits together with the event it belongs to; the builders are static and
need no connection. The session list's text is :mod:`relay.core.store.sessions_quick`'s,
which ``relay-cli sessions`` runs with sqlite3 alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

import aiosqlite

from relay.core.errors import SessionNotFoundError
from relay.core.events import EventRecord, Usage, parse_event
from relay.core.models import STORED, RunRow, SessionRow, SessionSpec
from relay.core.states import ACTIVE_STATES, SessionState
from relay.core.store.sessions_quick import (
    ACTIVE_SESSIONS,
    RECENT_SESSIONS,
    RECENT_WITH_ARCHIVED,
    SESSIONS_SELECT,
    USAGE_COLS,
)
from relay.core.store.sql import Statement, damaged_row, from_ms, id_text_problem, now_ms, prefix_match

_RUNS_SELECT = (f"SELECT id, session_id, attempt, runtime, model, started_ms, ended_ms, outcome,"
                f" exit_code, {', '.join(USAGE_COLS)}, agent_session_id, refused_calls, entry"
                f" FROM runs")
_RUN_USAGE_SELECT = ("SELECT r.id, r.session_id, r.runtime, coalesce(r.entry, r.runtime), r.model,"
                     " r.started_ms, r.input_tokens, r.output_tokens, r.cache_read_tokens,"
                     " r.cache_write_tokens, r.reasoning_tokens, r.cost_usd FROM runs r")
# a turn's tokens, as the wallet counts an account's calls (reasoning is in the output)
_TURN_TOKENS = ("SELECT e.ts_ms, coalesce(json_extract(e.payload, '$.usage.input_tokens'), 0)"
                " + coalesce(json_extract(e.payload, '$.usage.output_tokens'), 0)"
                " + coalesce(json_extract(e.payload, '$.usage.cache_read_tokens'), 0)"
                " + coalesce(json_extract(e.payload, '$.usage.cache_write_tokens'), 0)"
                " FROM events e JOIN runs r ON r.id = e.run_id"
                " WHERE e.kind='turn_completed' AND e.ts_ms>=?")


class ActiveSession(NamedTuple):
    """A session some Relay process is (or was, if it died) running."""

    id: str
    owner_pid: int | None
    state: SessionState


class RunUsage(NamedTuple):
    """A run's usage as it was recorded, and what it is charged to (the wallet prices it)."""

    id: str
    session_id: str
    runtime: str
    #: the chain entry (``provider[:account]``); the runtime for runs before entries
    entry: str
    model: str | None
    started_ms: int
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    reasoning_tokens: int | None
    cost_usd: float | None


def _spec(spec_json: str, task: str) -> SessionSpec:
    """A stored spec: its JSON holds everything but the task (the ``task`` column holds
    that, once; rows written before kept a copy in the JSON, which is used then)."""
    try:
        data = json.loads(spec_json)
        if isinstance(data, dict):
            data.setdefault("task", task)
        return SessionSpec.model_validate(data, context={STORED: True})  # not an object: a ValidationError
    except ValueError as exc:  # not JSON, not an object, not a spec
        raise damaged_row("sessions", exc) from exc


class SessionsRepo:
    """The sessions and runs tables over the store's connection (``store.sessions``)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    # -- sessions ---------------------------------------------------------------------

    async def get(self, session_id: str) -> SessionRow:
        """The session ``session_id`` names (a unique prefix will do)."""
        problem = id_text_problem(session_id, "A session id")
        if problem:
            raise SessionNotFoundError(f"No such session: {problem}",
                                       "List sessions with `relay-cli sessions`.")
        rows = await self._sessions(f"{SESSIONS_SELECT} WHERE s.id = ?", (session_id,))
        if not rows:
            where, params = prefix_match("s.id", session_id)
            rows = await self._sessions(f"{SESSIONS_SELECT} WHERE {where} LIMIT 2", params)
        if len(rows) != 1:
            raise SessionNotFoundError(
                f"No session {session_id!r}." if not rows else f"{session_id!r} is ambiguous.",
                "List sessions with `relay-cli sessions`.")
        return rows[0]

    async def recent(self, limit: int = 200, archived: bool = False) -> list[SessionRow]:
        """The newest ``limit`` sessions, most recently changed first; archived ones only
        with ``archived``."""
        return await self._sessions(RECENT_WITH_ARCHIVED if archived else RECENT_SESSIONS,
                                    (limit,))

    async def spec(self, session_id: str) -> SessionSpec:
        """What the user asked for when the session was created (as amended since)."""
        row = await self._one("SELECT spec_json, task FROM sessions WHERE id=?", (session_id,))
        if row is None:
            raise SessionNotFoundError(f"No session {session_id!r}.")
        return _spec(row[0], row[1])

    async def active(self) -> list[ActiveSession]:
        return [ActiveSession(*r) for r in await self._all(ACTIVE_SESSIONS, ACTIVE_STATES)]

    async def active_one(self, session_id: str) -> ActiveSession | None:
        """``session_id``'s row when it is active."""
        row = await self._one(f"{ACTIVE_SESSIONS} AND id=?", (*ACTIVE_STATES, session_id))
        return ActiveSession(*row) if row is not None else None

    async def base_of(self, session_id: str) -> tuple[str | None, str | None]:
        """(commit, branch) the session's worktree started from; (None, None) if unknown."""
        row = await self._one("SELECT base_sha, base_branch FROM sessions WHERE id=?",
                              (session_id,))
        return (row[0], row[1]) if row else (None, None)

    async def with_branches(self, limit: int = 500) -> list[tuple[str, str, str]]:
        """(session id, repository, branch) of recent sessions that have a branch."""
        return [(r[0], r[1], r[2]) for r in await self._all(
            "SELECT id, repo, branch FROM sessions WHERE branch IS NOT NULL"
            " ORDER BY updated_ms DESC LIMIT ?", (limit,))]

    async def to_carry_on(self) -> list[tuple[str, SessionState, SessionSpec]]:
        """Real (not simulated) sessions a recovering engine carries on, oldest first: those
        waiting for a reset, and those with an unfinished handoff."""
        rows = await self._all(
            "SELECT s.id, s.state, s.spec_json, s.task FROM sessions s WHERE s.simulated=0 AND"
            " (s.state='waiting' OR EXISTS (SELECT 1 FROM handoffs h WHERE"
            " h.session_id=s.id AND h.state NOT IN ('done', 'failed')))"
            " ORDER BY s.created_ms", ())
        return [(r[0], r[1], _spec(r[2], r[3])) for r in rows]

    async def events_of_others(self, after_id: int, pid: int,
                               limit: int = 5000) -> tuple[list[EventRecord], int]:
        """Events after ``after_id`` of sessions that process ``pid`` does not own.

        Returns them and the cursor to pass next time (the last id scanned, own
        events included, so a burst of this process's events is skipped once).
        Rows of own sessions are not decoded.
        """
        rows = list(await self._all(
            "SELECT e.id, e.session_id, e.run_id, e.payload, s.owner_pid FROM events e"
            " LEFT JOIN sessions s ON s.id = e.session_id WHERE e.id > ? ORDER BY e.id LIMIT ?",
            (after_id, limit)))
        try:
            records = [EventRecord(r[0], r[1], r[2], parse_event(r[3]))
                       for r in rows if r[4] != pid]
        except ValueError as exc:
            raise damaged_row("events", exc) from exc
        return records, (rows[-1][0] if rows else after_id)

    async def events_from(self, first_id: int, kinds: Iterable[str]
                          ) -> list[tuple[EventRecord, int | None]]:
        """Events of ``kinds`` from id ``first_id`` on, oldest first, each with the pid of
        the process that owns its session (the audit log's catch-up reads these)."""
        wanted = sorted(set(kinds))
        marks = ",".join("?" * len(wanted))
        rows = await self._all(
            "SELECT e.id, e.session_id, e.run_id, e.payload, s.owner_pid FROM events e"
            f" LEFT JOIN sessions s ON s.id = e.session_id WHERE e.id >= ? AND e.kind IN ({marks})"
            " ORDER BY e.id", (first_id, *wanted))
        try:
            return [(EventRecord(r[0], r[1], r[2], parse_event(r[3])), r[4]) for r in rows]
        except ValueError as exc:
            raise damaged_row("events", exc) from exc

    async def _sessions(self, sql: str, params: Sequence[Any]) -> list[SessionRow]:
        return [_session_row(r) for r in await self._all(sql, params)]

    # -- runs -------------------------------------------------------------------------

    async def runs(self, session_id: str) -> list[RunRow]:
        """The session's runs, first attempt first."""
        rows = await self._all(f"{_RUNS_SELECT} WHERE session_id=? ORDER BY attempt",
                               (session_id,))
        return [RunRow(id=r[0], session_id=r[1], attempt=r[2], runtime=r[3], model=r[4],
                       started_at=from_ms(r[5]), ended_at=from_ms(r[6]) if r[6] else None,
                       outcome=r[7], exit_code=r[8], usage=_usage(r[9:15]),
                       agent_session_id=r[15], refused_calls=r[16], entry=r[17]) for r in rows]

    async def refused_calls(self, session_id: str) -> int:
        """The tool calls refused over all of a session's runs."""
        row = await self._one(
            "SELECT coalesce(sum(refused_calls), 0) FROM runs WHERE session_id=?", (session_id,))
        return int(row[0]) if row else 0

    async def last_entry(self, session_id: str) -> tuple[str, str | None] | None:
        """(entry, agent session id) of the session's last run on a chain entry."""
        row = await self._one(
            "SELECT entry, agent_session_id FROM runs WHERE session_id=? AND entry IS NOT NULL"
            " ORDER BY attempt DESC LIMIT 1", (session_id,))
        return (row[0], row[1]) if row else None

    async def unfinished_agents(self, session_id: str) -> list[tuple[int, float | None]]:
        """(pid, its start time) of the agents of the session's runs that never ended."""
        return [(int(r[0]), r[1]) for r in await self._all(
            "SELECT pid, pid_started FROM runs WHERE session_id=? AND ended_ms IS NULL"
            " AND pid IS NOT NULL", (session_id,))]

    async def run_usage(self, *, run_id: str | None = None, session_id: str | None = None,
                        start_ms: int | None = None, end_ms: int | None = None,
                        entry: str | None = None) -> list[RunUsage]:
        """Runs (one, a session's, those started in [start_ms, end_ms), of an entry) with
        their recorded usage, in the order they started."""
        where, params = ["1=1"], list[Any]()
        for clause, value in (("r.id = ?", run_id), ("r.session_id = ?", session_id),
                              ("r.started_ms >= ?", start_ms), ("r.started_ms < ?", end_ms),
                              ("coalesce(r.entry, r.runtime) = ?", entry)):
            if value is not None:
                where.append(clause)
                params.append(value)
        rows = await self._all(f"{_RUN_USAGE_SELECT} WHERE {' AND '.join(where)}"
                               " ORDER BY r.started_ms", params)
        return [RunUsage(*r) for r in rows]

    async def entries(self) -> list[str]:
        """Every chain entry (or bare runtime) some run used."""
        return [r[0] for r in await self._all("SELECT DISTINCT coalesce(entry, runtime) FROM runs", ())]

    async def turn_tokens(self, entry: str, since_ms: int, *, bare_runtime: str | None = None,
                          session_id: str | None = None) -> list[tuple[int, int]]:
        """(time, tokens) of the turns of runs on ``entry`` since ``since_ms`` — also of runs
        of ``bare_runtime`` recorded without an entry — or of one session's only."""
        match, args = ("r.entry=?", [entry]) if bare_runtime is None else (
            "(r.entry=? OR (r.entry IS NULL AND r.runtime=?))", [entry, bare_runtime])
        if session_id is not None:
            match += " AND r.session_id=?"
            args.append(session_id)
        rows = await self._all(f"{_TURN_TOKENS} AND {match} ORDER BY e.ts_ms", (since_ms, *args))
        return [(int(ts), int(n)) for ts, n in rows]

    async def event_payloads(self, session_id: str, entry: str, kind: str) -> list[str]:
        """The payloads of the session's ``kind`` events from its runs on ``entry``, in order."""
        return [r[0] for r in await self._all(
            "SELECT e.payload FROM events e JOIN runs r ON r.id = e.run_id"
            " WHERE e.session_id=? AND e.kind=? AND coalesce(r.entry, r.runtime)=? ORDER BY e.id",
            (session_id, kind, entry))]

    async def _one(self, sql: str, params: Sequence[Any]) -> Any:
        async with self.conn.execute(sql, params) as cur:
            return await cur.fetchone()

    async def _all(self, sql: str, params: Sequence[Any]) -> Iterable[Any]:
        async with self.conn.execute(sql, params) as cur:
            return await cur.fetchall()

    # -- writes (statements for the event writer) ---------------------------------------

    @staticmethod
    def insert(session_id: str, spec: SessionSpec, *, simulated: bool, owner_pid: int) -> Statement:
        """A new ``pending`` session over ``spec`` (its repository resolved)."""
        ms = now_ms()
        return ("INSERT INTO sessions (id, repo, task, runtime, model, state, permission, simulated,"
                " owner_pid, spec_json, created_ms, updated_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (session_id, str(spec.repo), spec.task, spec.runtime, spec.model, "pending",
                 spec.permission.value, int(simulated), owner_pid,
                 spec.model_dump_json(exclude={"task"}), ms, ms))  # the task once: its column

    @staticmethod
    def owned_by(session_id: str, pid: int) -> Statement:
        """The Relay process ``pid`` runs the session now."""
        return "UPDATE sessions SET owner_pid=? WHERE id=?", (pid, session_id)

    @staticmethod
    def workspace(session_id: str, path: str, branch: str | None, base_sha: str | None,
                  base_branch: str | None) -> Statement:
        return ("UPDATE sessions SET workdir=?, branch=?, base_sha=?, base_branch=? WHERE id=?",
                (path, branch, base_sha, base_branch, session_id))

    @staticmethod
    def spec_field(session_id: str, field: Literal["budget_usd", "task_budget_usd"],
                   value: float | None) -> Statement:
        """One field of the stored spec changed (a budget set or cleared)."""
        return (f"UPDATE sessions SET spec_json=json_set(spec_json, '$.{field}', ?) WHERE id=?",
                (value, session_id))

    @staticmethod
    def state(session_id: str, state: SessionState, reason: str | None,
              wait_until_ms: int | None) -> Statement:
        return ("UPDATE sessions SET state=?, reason=?, wait_until_ms=? WHERE id=?",
                (state, reason, wait_until_ms, session_id))

    @staticmethod
    def archived(session_id: str, at: float | None) -> Statement:
        """The session archived at ``at`` (seconds since the epoch), or back (None)."""
        return "UPDATE sessions SET archived_at=? WHERE id=?", (at, session_id)

    @staticmethod
    def agent_session(session_id: str, agent_session_id: str) -> Statement:
        return "UPDATE sessions SET agent_session_id=? WHERE id=?", (agent_session_id, session_id)

    @staticmethod
    def touched(session_ids: Iterable[str], ms: int) -> tuple[str, list[tuple[int, str]]]:
        """The sessions' ``updated_ms`` set to ``ms``: a statement and its rows (executemany)."""
        return "UPDATE sessions SET updated_ms=? WHERE id=?", [(ms, sid) for sid in session_ids]

    @staticmethod
    def insert_run(run_id: str, session_id: str, runtime: str, entry: str,
                   model: str | None) -> Statement:
        """A run starting now, the session's next attempt."""
        return ("INSERT INTO runs (id, session_id, attempt, runtime, entry, model, started_ms)"
                " VALUES (?, ?, (SELECT coalesce(max(attempt), 0) + 1 FROM runs"
                " WHERE session_id=?), ?, ?, ?, ?)",
                (run_id, session_id, session_id, runtime, entry, model, now_ms()))

    @staticmethod
    def run_pid(run_id: str, pid: int, started: float | None) -> Statement:
        """The run's agent process (and when it started: a pid alone may be reused)."""
        return "UPDATE runs SET pid=?, pid_started=? WHERE id=?", (pid, started, run_id)

    @staticmethod
    def run_agent_session(run_id: str, agent_session_id: str, model: str | None) -> Statement:
        return ("UPDATE runs SET agent_session_id=?, model=coalesce(?, model) WHERE id=?",
                (agent_session_id, model, run_id))

    @staticmethod
    def run_usage_added(run_id: str, known: Mapping[str, int | float]) -> Statement:
        """A turn's known usage (``USAGE_COLS`` names) added to the run's; unknown stays NULL."""
        sets = ", ".join(f"{k}=coalesce({k}, 0) + ?" for k in known)
        return f"UPDATE runs SET {sets} WHERE id=?", (*known.values(), run_id)

    @staticmethod
    def run_refused(run_id: str) -> Statement:
        """One more tool call refused during the run."""
        return "UPDATE runs SET refused_calls = refused_calls + 1 WHERE id=?", (run_id,)

    @staticmethod
    def run_ended(run_id: str, outcome: str, exit_code: int | None) -> Statement:
        return ("UPDATE runs SET ended_ms=?, outcome=?, exit_code=? WHERE id=?",
                (now_ms(), outcome, exit_code, run_id))


def _usage(values: Sequence[Any]) -> Usage:
    return Usage(**dict(zip(USAGE_COLS, values, strict=True)))


def _session_row(r: Sequence[Any]) -> SessionRow:
    """A :data:`~relay.core.store.sessions_quick.SESSIONS_SELECT` row."""
    return SessionRow(
        id=r[0], repo=r[1], task=r[2], runtime=r[3], model=r[4], state=r[5], permission=r[6],
        workdir=r[7], branch=r[8], agent_session_id=r[9], reason=r[10], simulated=bool(r[11]),
        created_at=from_ms(r[12]), updated_at=from_ms(r[13]), usage=_usage(r[14:20]),
        wait_until=from_ms(r[20]) if r[20] is not None else None, refused_calls=r[21],
        archived_at=from_ms(int(r[22] * 1000)) if r[22] is not None else None,
        entries=_folded(r[23].split("\x1f") if r[23] else []), handing_to=r[24],
        pipeline_step=r[25], pipeline_name=r[26])


def _folded(entries: list[str]) -> list[str]:
    """``entries`` with each run of repeats folded into one (a-a-b-a: a-b-a)."""
    return [e for i, e in enumerate(entries) if i == 0 or entries[i - 1] != e]
