"""Rebuildable SQLite index files (the wallet's usage index, the knowledge graph).

An index is a cache of what lives elsewhere (transcripts, repositories, the event store),
kept in its own file apart from the event store's single writer. Both open the same way:
autocommit, WAL (readers never wait for a refresh), ``synchronous=NORMAL``, a busy timeout
for another process's refresh — and a file that is damaged (``SQLITE_CORRUPT``,
``SQLITE_NOTADB``) is deleted (with its WAL and shared memory) and made again, since
everything in it can be read again. A transient error (a full disk, a lock, another I/O
error) never deletes it (:mod:`relay.core.store.faults`); on a full disk the process keeps
the index in memory, so a command that only reads still answers.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from relay.core.errors import SchemaTooNewError, StoreError
from relay.core.fsutil import private_dir, private_sqlite
from relay.core.store.faults import Fault, disk_full_error, fault_of

T = TypeVar("T")
log = logging.getLogger(__name__)


def connect(path: Path, busy_timeout_ms: int, *pragmas: str) -> sqlite3.Connection:
    """A connection with an index's pragmas (plus ``pragmas``, e.g. ``secure_delete=ON``)."""
    private_sqlite(path)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    for pragma in pragmas:
        conn.execute(f"PRAGMA {pragma}")
    return conn


def in_memory(conn: sqlite3.Connection) -> bool:
    """Whether ``conn``'s main database is kept in memory (an index on a full disk)."""
    row = conn.execute("PRAGMA database_list").fetchone()
    return row is None or not row[2]


def open_rebuildable(path: Path, make: Callable[[Path], T], what: str, rebuilt_from: str) -> T:
    """``make(path)``, after deleting a file that is not a usable database.

    Raises:
        SchemaTooNewError: a newer Relay wrote the file (it is left alone).
        StoreError: the folder cannot be created or the file cannot be opened; the message
            names ``what`` ("the usage index") and the hint says it is rebuilt from
            ``rebuilt_from`` when deleted.
    """
    try:
        private_dir(path.parent)
        try:
            return make(path)
        except SchemaTooNewError:
            raise
        except sqlite3.DatabaseError as exc:
            if not path.is_file() or fault_of(exc, path) is not Fault.DAMAGED:
                raise
            for stale in (path, path.with_name(path.name + "-wal"),
                          path.with_name(path.name + "-shm")):
                stale.unlink(missing_ok=True)
            return make(path)
    except (OSError, sqlite3.Error) as exc:
        if fault_of(exc, path) is Fault.FULL:
            # the file is left as it is; this process keeps its index in memory (rebuilt
            # from what it indexes), so a command that reads still answers
            log.warning("the disk holding %s is full: %s is kept in memory this time",
                        path, what)
            try:
                return make(Path(":memory:"))
            except (OSError, sqlite3.Error):
                raise disk_full_error(path, f"{what} cannot be written") from exc
        raise StoreError(f"{what[0].upper()}{what[1:]} {path} cannot be opened: {exc}.",
                         "Check that the data folder is writable; the index is rebuilt from "
                         f"{rebuilt_from} when it is deleted.") from exc
