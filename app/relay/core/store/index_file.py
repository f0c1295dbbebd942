"""Rebuildable SQLite index files (the wallet's usage index, the knowledge graph).

An index is a cache of what lives elsewhere (transcripts, repositories, the event store),
kept in its own file apart from the event store's single writer. Both open the same way:
autocommit, WAL (readers never wait for a refresh), ``synchronous=NORMAL``, a busy timeout
for another process's refresh — and a file that is not a usable database is deleted (with
its WAL and shared memory) and made again, since everything in it can be read again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from relay.core.errors import SchemaTooNewError, StoreError
from relay.core.fsutil import private_dir, private_sqlite

T = TypeVar("T")


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
        except sqlite3.DatabaseError:
            if not path.exists():
                raise
            for stale in (path, path.with_name(path.name + "-wal"),
                          path.with_name(path.name + "-shm")):
                stale.unlink(missing_ok=True)
            return make(path)
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"{what[0].upper()}{what[1:]} {path} cannot be opened: {exc}.",
                         "Check that the data folder is writable; the index is rebuilt from "
                         f"{rebuilt_from} when it is deleted.") from exc
