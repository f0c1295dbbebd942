"""The store: one aiosqlite connection in WAL mode per process.

Writes of events go through :class:`~relay.core.store.writer.EventWriter`, which
commits each event together with the state change it implies in one
transaction and publishes to the bus after commit. Several processes may share
the file; another process follows a session by tailing ``events`` by id.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite

from relay.core.errors import SchemaTooNewError, SessionNotFoundError, StoreError
from relay.core.events import EventRecord, Usage, parse_event
from relay.core.models import RunRow, SessionRow, SessionSpec
from relay.core.store.migrations import LATEST, MIGRATIONS

_USAGE_COLS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
               "reasoning_tokens", "cost_usd")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


class Store:
    """Async access to relay.db. Use :meth:`open`; close with :meth:`close`."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    @classmethod
    async def open(cls, path: Path) -> Store:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = await aiosqlite.connect(str(path), isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"Cannot open the database at {path}: {exc}.",
                             "Check that the data folder is writable (RELAY_HOME).") from exc
        store = cls(conn, path)
        try:
            await store._configure()
            await store._migrate()
        except sqlite3.Error as exc:
            await conn.close()
            raise StoreError(f"{path} is not a usable Relay database: {exc}.",
                             "Move it aside; Relay will create a new one.") from exc
        except BaseException:
            await conn.close()
            raise
        return store

    async def close(self) -> None:
        await self.conn.close()

    async def _configure(self) -> None:
        try:
            for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON",
                           "busy_timeout=10000"):
                await self.conn.execute(f"PRAGMA {pragma}")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a usable Relay database: {exc}.",
                             "Move it aside; Relay will create a new one.") from exc

    async def _migrate(self) -> None:
        await self.conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version"
            " (version INTEGER NOT NULL, applied_ms INTEGER NOT NULL)")
        current = await self.schema_version()
        if current > LATEST:
            raise SchemaTooNewError(
                f"The database at {self.path} was written by a newer Relay "
                f"(schema {current}; this build knows up to {LATEST}).",
                "Update Relay, or point RELAY_HOME at another data folder.")
        for version in range(current + 1, LATEST + 1):
            await self.conn.execute("BEGIN IMMEDIATE")
            try:
                # Another process may have migrated while we waited for the write lock.
                if await self.schema_version() < version:
                    await self._run_script(MIGRATIONS[version])
                    await self.conn.execute("INSERT INTO schema_version VALUES (?, ?)",
                                            (version, now_ms()))
                await self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    await self.conn.execute("ROLLBACK")
                raise

    async def _run_script(self, script: str) -> None:
        for statement in (s.strip() for s in script.split(";")):
            if statement:
                await self.conn.execute(statement)

    async def schema_version(self) -> int:
        async with self.conn.execute("SELECT max(version) FROM schema_version") as cur:
            row = await cur.fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    # -- sessions and runs ------------------------------------------------------------

    async def get_session(self, session_id: str) -> SessionRow:
        rows = await self._sessions("WHERE s.id = ? OR s.id LIKE ?", (session_id, f"{session_id}%"))
        if len(rows) != 1:
            raise SessionNotFoundError(
                f"No session {session_id!r}." if not rows else f"{session_id!r} is ambiguous.",
                "List sessions with `relay-cli sessions`.")
        return rows[0]

    async def list_sessions(self, limit: int = 200) -> list[SessionRow]:
        return await self._sessions("ORDER BY s.updated_ms DESC LIMIT ?", (limit,))

    async def session_spec(self, session_id: str) -> SessionSpec:
        async with self.conn.execute("SELECT spec_json FROM sessions WHERE id=?",
                                     (session_id,)) as cur:
            row = await cur.fetchone()
        if row is None:
            raise SessionNotFoundError(f"No session {session_id!r}.")
        return SessionSpec.model_validate_json(row[0])

    async def _sessions(self, tail: str, params: Sequence[Any]) -> list[SessionRow]:
        sums = ", ".join(f"(SELECT sum(r.{c}) FROM runs r WHERE r.session_id = s.id)"
                         for c in _USAGE_COLS)
        sql = (f"SELECT s.id, s.repo, s.task, s.runtime, s.model, s.state, s.permission, s.workdir,"
               f" s.branch, s.agent_session_id, s.reason, s.simulated, s.created_ms, s.updated_ms,"
               f" {sums}, s.wait_until_ms,"
               f" (SELECT coalesce(sum(r.refused_calls), 0) FROM runs r WHERE r.session_id = s.id)"
               f" FROM sessions s {tail}")
        async with self.conn.execute(sql, params) as cur:
            rows = await cur.fetchall()
        return [_session_row(r) for r in rows]

    async def refused_calls(self, session_id: str) -> int:
        """The tool calls refused over all of a session's runs."""
        async with self.conn.execute(
                "SELECT coalesce(sum(refused_calls), 0) FROM runs WHERE session_id=?",
                (session_id,)) as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def runs(self, session_id: str) -> list[RunRow]:
        cols = ", ".join(_USAGE_COLS)
        async with self.conn.execute(
                f"SELECT id, session_id, attempt, runtime, model, started_ms, ended_ms, outcome,"
                f" exit_code, {cols}, agent_session_id, refused_calls FROM runs"
                f" WHERE session_id=? ORDER BY attempt",
                (session_id,)) as cur:
            rows = await cur.fetchall()
        return [RunRow(id=r[0], session_id=r[1], attempt=r[2], runtime=r[3], model=r[4],
                       started_at=from_ms(r[5]), ended_at=from_ms(r[6]) if r[6] else None,
                       outcome=r[7], exit_code=r[8], usage=_usage(r[9:15]),
                       agent_session_id=r[15], refused_calls=r[16]) for r in rows]

    # -- events ---------------------------------------------------------------------

    async def events_after(self, after_id: int = 0, session_id: str | None = None,
                           limit: int = 5000, replay: bool = True,
                           kinds: Sequence[str] = ()) -> list[EventRecord]:
        """Stored events with id > ``after_id`` (tailing protocol for other processes),
        of the given ``kinds`` only when some are named."""
        where, params = "id > ?", list[object]([after_id])
        if session_id is not None:
            where += " AND session_id = ?"
            params.append(session_id)
        if kinds:
            where += f" AND kind IN ({','.join('?' * len(kinds))})"
            params.extend(kinds)
        async with self.conn.execute(
                f"SELECT id, session_id, run_id, payload FROM events WHERE {where}"
                f" ORDER BY id LIMIT ?", (*params, limit)) as cur:
            rows = await cur.fetchall()
        out = []
        for r in rows:
            event = parse_event(r[3])
            if replay:
                event = event.model_copy(update={"replay": True})
            out.append(EventRecord(id=r[0], session_id=r[1], run_id=r[2], event=event))
        return out

    async def events_of_others(self, after_id: int, pid: int,
                               limit: int = 5000) -> tuple[list[EventRecord], int]:
        """Events after ``after_id`` of sessions that process ``pid`` does not own.

        Returns them and the cursor to pass next time (the last id scanned, own
        events included, so a burst of this process's events is skipped once).
        Rows of own sessions are not decoded.
        """
        async with self.conn.execute(
                "SELECT e.id, e.session_id, e.run_id, e.payload, s.owner_pid FROM events e"
                " LEFT JOIN sessions s ON s.id = e.session_id WHERE e.id > ? ORDER BY e.id LIMIT ?",
                (after_id, limit)) as cur:
            rows = list(await cur.fetchall())
        records = [EventRecord(r[0], r[1], r[2], parse_event(r[3])) for r in rows if r[4] != pid]
        return records, (rows[-1][0] if rows else after_id)

    async def last_event_id(self) -> int:
        async with self.conn.execute("SELECT coalesce(max(id), 0) FROM events") as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0


def _usage(values: Sequence[Any]) -> Usage:
    return Usage(**dict(zip(_USAGE_COLS, values, strict=True)))


def _session_row(r: Sequence[Any]) -> SessionRow:
    return SessionRow(
        id=r[0], repo=r[1], task=r[2], runtime=r[3], model=r[4], state=r[5], permission=r[6],
        workdir=r[7], branch=r[8], agent_session_id=r[9], reason=r[10], simulated=bool(r[11]),
        created_at=from_ms(r[12]), updated_at=from_ms(r[13]), usage=_usage(r[14:20]),
        wait_until=from_ms(r[20]) if r[20] is not None else None, refused_calls=r[21])
