"""What an SQLite error means for Relay's files: a full disk, real damage, a lock, or other.

One rule for the event store and the derived indexes: a full disk (``SQLITE_FULL``, or an I/O
error while the disk has no room left) and a lock are transient — nothing is deleted or
started afresh for them; only real damage (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``) may make a
derived index be rebuilt, and the event store is never rebuilt at all.
"""

from __future__ import annotations

import shutil
import sqlite3
import traceback
from enum import StrEnum
from pathlib import Path

from relay.core.errors import StoreError

#: below this many free bytes an I/O error of SQLite is taken for a full disk (SQLite cannot
#: size its shared-memory file or grow the journal)
NEARLY_FULL_BYTES = 1 << 20


class Fault(StrEnum):
    FULL = "full"  # transient: free disk space
    DAMAGED = "damaged"  # the file's bytes are not a (sound) SQLite database
    LOCKED = "locked"  # transient: another connection holds the lock
    OTHER = "other"


def free_bytes(path: Path) -> int | None:
    """Free space on the file system holding ``path`` (its nearest existing folder)."""
    for folder in (path, *path.parents):
        try:
            return shutil.disk_usage(folder).free
        except OSError:
            continue
    return None


def fault_of(exc: BaseException, path: Path | None = None) -> Fault:
    """The class of ``exc`` (an :class:`sqlite3.Error` or :class:`OSError`) for a file at
    ``path``; an I/O error counts as a full disk when ``path``'s disk is (nearly) full."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc).lower()
    if isinstance(exc, OSError):
        import errno

        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return Fault.FULL
        return Fault.OTHER
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return Fault.FULL
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text \
            or "not a database" in text:
        return Fault.DAMAGED
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
        return Fault.LOCKED
    if (name.startswith("SQLITE_IOERR") or "disk i/o error" in text) and path is not None:
        free = free_bytes(path)
        if free is not None and free < NEARLY_FULL_BYTES:
            return Fault.FULL
    return Fault.OTHER


def disk_full_error(path: Path, doing: str) -> StoreError:
    """The one message of a full disk: what could not be done, and that nothing was lost."""
    free = free_bytes(path)
    room = f" ({free:,} bytes free)" if free is not None else ""
    return StoreError(f"The disk holding {path} is full{room}: {doing}.",
                      "Free disk space, then run the command again; nothing already saved "
                      "was lost.")


def damaged_error(path: Path, detail: str) -> StoreError:
    """The one message of a damaged event store: which file, and how to get out of it."""
    return StoreError(
        f"The database {path} is damaged: {detail}.",
        f"Restore {path.name} from a backup (relay-cli doctor says what it finds), or move "
        "it aside to start with an empty one.")


def read_error(path: Path, exc: BaseException, doing: str = "read",
               damage: str | None = None) -> StoreError:
    """A failed read (or open: ``doing``) of the event store as one message, never a
    traceback: a full disk, a lock held elsewhere, or else damage (``damage`` says what)."""
    fault = fault_of(exc, path)
    if fault is Fault.FULL:
        return disk_full_error(path, f"the database cannot be {doing}")
    if fault is Fault.LOCKED:
        return StoreError(f"The database {path} is locked by another program: {exc}.",
                          "Wait for it to finish (or stop it), then run the command again.")
    return damaged_error(path, damage or str(exc).rstrip("."))


def is_store_damage(exc: BaseException) -> bool:
    """Whether an exception that escaped a command is SQLite failing on relay.db (a damaged
    page, a column that is not UTF-8, a missing table): an :class:`sqlite3.DatabaseError`
    raised through the event store's code (aiosqlite serves relay.db alone)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    return any(_STORE_CODE in frame.f_code.co_filename.replace("\\", "/")
               or "/aiosqlite/" in frame.f_code.co_filename.replace("\\", "/")
               for frame, _ in traceback.walk_tb(exc.__traceback__))


_STORE_CODE = "/relay/core/store/"


__all__ = ["Fault", "damaged_error", "disk_full_error", "fault_of", "free_bytes",
           "is_store_damage", "read_error"]

