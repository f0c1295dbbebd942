"""The store: one aiosqlite connection in WAL mode per process.

Writes of events go through :class:`~relay.core.store.writer.EventWriter`, which
commits each event together with the state change it implies in one
transaction and publishes to the bus after commit. Several processes may share
the file; another process follows a session by tailing ``events`` by id. The
sessions and runs tables are :attr:`Store.sessions`'
(:class:`~relay.core.store.sessions_repo.SessionsRepo`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import aiosqlite

from relay.core.errors import SchemaTooNewError, StoreError
from relay.core.events import EventRecord, parse_event
from relay.core.fsutil import private_sqlite
from relay.core.store.migrations import LATEST, MIGRATIONS
from relay.core.store.sessions_repo import SessionsRepo
from relay.core.store.sql import from_ms, now_ms

__all__ = ["Store", "from_ms", "now_ms"]


class Store:
    """Async access to relay.db. Use :meth:`open`; close with :meth:`close`."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        #: the sessions and runs tables
        self.sessions = SessionsRepo(conn)

    @classmethod
    async def open(cls, path: Path) -> Store:
        try:
            private_sqlite(path)  # and its folder: the data folder is the user's alone
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

    async def last_event_id(self) -> int:
        async with self.conn.execute("SELECT coalesce(max(id), 0) FROM events") as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

