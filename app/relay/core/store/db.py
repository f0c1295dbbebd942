"""The store: one aiosqlite connection in WAL mode per process.

Writes of events go through :class:`~relay.core.store.writer.EventWriter`, which
commits each event together with the state change it implies in one
transaction and publishes to the bus after commit. Several processes may share
the file; another process follows a session by tailing ``events`` by id. The
sessions and runs tables are :attr:`Store.sessions`'
(:class:`~relay.core.store.sessions_repo.SessionsRepo`).
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import aiosqlite

from relay.core.errors import SchemaTooNewError, StoreError
from relay.core.events import EventRecord, parse_event
from relay.core.fsutil import private_sqlite
from relay.core.store.faults import Fault, damaged_error, disk_full_error, fault_of, read_error
from relay.core.store.migrations import LATEST, MIGRATIONS
from relay.core.store.scrubbed import ScrubbingConnection
from relay.core.store.sessions_repo import SessionsRepo
from relay.core.store.sql import damaged_row, from_ms, now_ms

__all__ = ["Store", "from_ms", "now_ms"]

#: the tables the migrations create and keep: a database at the latest schema lacking one
#: is damaged
REQUIRED_TABLES = frozenset(
    {"schema_version"} | {m for script in MIGRATIONS.values()
                          for m in re.findall(r"CREATE TABLE (\w+)", script)}
) - {m for script in MIGRATIONS.values() for m in re.findall(r"DROP TABLE (?:IF EXISTS )?(\w+)",
                                                             script)}


def _wal_is_empty(path: Path) -> bool:
    """Whether relay.db's write-ahead log holds nothing (absent or empty): the file alone is
    then the whole database, which an immutable read-only open reads exactly."""
    wal = path.with_name(path.name + "-wal")
    try:
        return wal.stat().st_size == 0
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _has_entries(audit_path: Path) -> bool:
    try:
        return audit_path.stat().st_size > 0
    except OSError:
        return False


def _has_bytes(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def _emptied_error(path: Path, audit_path: Path) -> StoreError:
    return StoreError(
        f"The database {path} is empty (or missing), but the audit log {audit_path} lists "
        f"earlier sessions: {path.name} was emptied or replaced.",
        f"Restore {path.name} from a backup; to start anew, move {path.name} and "
        f"{audit_path.name} aside.")


def _open_error(path: Path, exc: sqlite3.Error) -> StoreError:
    return read_error(path, exc, "opened", f"it is not a usable Relay database ({exc})")


class Store:
    """Async access to relay.db. Use :meth:`open`; close with :meth:`close`."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        #: why the file was opened read-only (a full disk), or None: it can be written
        self.read_only: str | None = None
        #: the sessions and runs tables
        self.sessions = SessionsRepo(conn)

    @classmethod
    async def open(cls, path: Path, audit_path: Path | None = None) -> Store:
        """Open relay.db, migrating it when it is older; nothing is written otherwise.

        A read needs no write: the pragmas that persist are set only when they differ, and
        the schema is touched only when a migration is due. On a disk so full that SQLite
        cannot even make its shared-memory file, a database with nothing left in its WAL is
        opened read-only (:attr:`read_only` says why) and every write is one clear error.
        Whatever fails, the connection and its worker thread are closed before raising.

        Args:
            audit_path: The audit log kept beside the database. A database with no tables
                (emptied, truncated, replaced) while the log lists entries is refused: it
                is never silently started afresh.

        Raises:
            StoreError: the file is a folder, damaged, emptied while the audit log lists
                entries, or the disk is full where a write was needed.
            SchemaTooNewError: a newer Relay wrote it.
        """
        if path.exists() and not path.is_file():
            raise StoreError(f"The database {path} is not a file (a folder or a device is in "
                             "its place).", f"Move {path} aside, then run the command again.")
        if audit_path is not None and _has_entries(audit_path) and not _has_bytes(path):
            raise _emptied_error(path, audit_path)  # before SQLite writes a header into it
        try:
            store = await cls._connect(path, read_only=False)
            try:
                await store._configure()
            except BaseException:
                await store.close()
                raise
        except sqlite3.Error as exc:
            if fault_of(exc, path) is not Fault.FULL or not _wal_is_empty(path):
                raise _open_error(path, exc) from exc
            store = await cls._connect(path, read_only=True)  # a full disk: read what is there
            store.read_only = "the disk is full"
        try:
            await store._migrate(audit_path)
        except sqlite3.Error as exc:
            await store.close()
            if fault_of(exc, path) is Fault.FULL or store.read_only:
                raise disk_full_error(path, "the database needs a schema update") from exc
            raise _open_error(path, exc) from exc
        except BaseException:
            await store.close()
            raise
        return store

    @classmethod
    async def _connect(cls, path: Path, read_only: bool) -> Store:
        try:
            private_sqlite(path)  # and its folder: the data folder is the user's alone
        except OSError as exc:
            if fault_of(exc) is Fault.FULL:
                raise disk_full_error(path, "the data folder cannot be created") from exc
            raise StoreError(f"Cannot open the database at {path}: {exc.strerror or exc}.",
                             "Check that the data folder is writable (RELAY_HOME).") from exc
        target = f"{path.resolve().as_uri()}?mode=ro&immutable=1" if read_only else str(path)
        conn = aiosqlite.connect(target, isolation_level=None, uri=read_only,
                                  factory=ScrubbingConnection)  # relay.db's scrubbing point
        try:
            await conn
        except BaseException as exc:
            # aiosqlite stops its worker thread without waiting; wait here, or the thread
            # answers on a loop that has closed ("Event loop is closed")
            thread = getattr(conn, "_thread", None)
            if thread is not None and thread.is_alive():
                await asyncio.to_thread(thread.join, 5.0)
            if isinstance(exc, sqlite3.Error):
                if fault_of(exc, path) is Fault.FULL:
                    raise
                raise StoreError(f"Cannot open the database at {path}: {exc}.",
                                 "Check that the data folder is writable (RELAY_HOME).") from exc
            raise
        store = cls(conn, path)
        store.read_only = None
        return store

    async def close(self) -> None:
        await self.conn.close()

    async def _configure(self) -> None:
        await self.conn.execute("PRAGMA busy_timeout=10000")  # first: another may be migrating
        # journal_mode persists in the file: setting it is a write, so only when it differs
        async with self.conn.execute("PRAGMA journal_mode") as cur:
            row = await cur.fetchone()
        if row is None or str(row[0]).lower() != "wal":
            await self.conn.execute("PRAGMA journal_mode=WAL")
        for pragma in ("synchronous=NORMAL", "foreign_keys=ON"):
            await self.conn.execute(f"PRAGMA {pragma}")  # this connection's only: no write

    async def _tables(self) -> set[str]:
        async with self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'") as cur:
            return {str(r[0]) for r in await cur.fetchall()}

    async def _migrate(self, audit_path: Path | None) -> None:
        tables = await self._tables()
        if not tables and audit_path is not None and _has_entries(audit_path):
            raise _emptied_error(self.path, audit_path)
        current = await self.schema_version() if "schema_version" in tables else 0
        if current > LATEST:
            raise SchemaTooNewError(
                f"The database at {self.path} was written by a newer Relay "
                f"(schema {current}; this build knows up to {LATEST}).",
                "Update Relay, or point RELAY_HOME at another data folder.")
        if current == LATEST:  # the common open: nothing to write
            missing = sorted(REQUIRED_TABLES - tables)
            if missing:
                raise damaged_error(self.path, f"its table {missing[0]} is missing")
            return
        if self.read_only:
            raise disk_full_error(self.path, "the database needs a schema update")
        await self.conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version"
            " (version INTEGER NOT NULL, applied_ms INTEGER NOT NULL)")
        current = await self.schema_version()
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
        try:
            for r in rows:
                event = parse_event(r[3])
                if replay:
                    event = event.model_copy(update={"replay": True})
                out.append(EventRecord(id=r[0], session_id=r[1], run_id=r[2], event=event))
        except ValueError as exc:  # pydantic's ValidationError is one
            raise damaged_row("events", exc) from exc
        return out

    async def last_event_id(self) -> int:
        async with self.conn.execute("SELECT coalesce(max(id), 0) FROM events") as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

