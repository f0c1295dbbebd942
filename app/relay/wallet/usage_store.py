"""The usage index's SQLite file: pointers and numbers, never transcript text.

Tables:

``files``          one row per transcript file: path, runtime, account entry, reader, size,
                   mtime_ns, inode/device, ``consumed`` (the offset read so far), the hash of
                   its first bytes (``head_len``, ``head_hash``) and the reader's state.
``entries``        one row per counted model call: tokens, cost, ts, model, dedupe key,
                   session, project and the pointer (``file_id``, ``pos`` = byte offset).
                   ``dedupe_key`` is UNIQUE across all files.
``shadow``         copies of a counted call found in *other* files (a forked Claude session
                   copies its parent's lines). When the file that owns a key loses its rows
                   (deleted, truncated, replaced), a copy is promoted, so totals never depend
                   on which file was read first or removed last.
``limits``         the latest official limit reading per account entry and window.
``file_warnings``  counted problems of a file's content (reset when it is re-read).
``source_warnings`` counted access problems of the last refresh, per account entry.
``usage_agg``      the sums every usage report reads, kept in each refresh's transaction
                   (:mod:`relay.wallet.usage_agg`).

The index is a cache of the transcripts: a file of another schema version is rebuilt.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from relay.core.store import index_file
from relay.wallet import usage_agg
from relay.wallet.usage_scan import LimitRow, Row

SCHEMA_VERSION = 2
#: staged rows are merged into ``entries`` in batches of about this many (small: the merge
#: overlaps the workers' parsing, and little is left to merge once they are done)
STAGE_ROWS = 10_000
COLUMNS = ("file_id, pos, ts_ms, model, input, output, cache_read, cache_write, reasoning, "
           "cost_usd, dedupe_key, session_id, project")
_ROW_SQL = """
    file_id INTEGER NOT NULL, pos INTEGER NOT NULL, ts_ms INTEGER NOT NULL, model TEXT,
    input INTEGER NOT NULL, output INTEGER NOT NULL, cache_read INTEGER NOT NULL,
    cache_write INTEGER NOT NULL, reasoning INTEGER NOT NULL, cost_usd REAL,
    dedupe_key TEXT {unique}, session_id TEXT, project TEXT"""
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, entry TEXT NOT NULL,
    runtime TEXT NOT NULL, reader TEXT NOT NULL, size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, inode INTEGER NOT NULL, device INTEGER NOT NULL,
    consumed INTEGER NOT NULL, head_len INTEGER NOT NULL, head_hash TEXT NOT NULL,
    state BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS entries ({_ROW_SQL.format(unique="UNIQUE")});
CREATE INDEX IF NOT EXISTS entries_file ON entries (file_id, pos);
CREATE INDEX IF NOT EXISTS entries_ts ON entries (ts_ms);
CREATE TABLE IF NOT EXISTS shadow ({_ROW_SQL.format(unique="NOT NULL")},
    UNIQUE (dedupe_key, file_id));
CREATE INDEX IF NOT EXISTS shadow_file ON shadow (file_id);
CREATE TABLE IF NOT EXISTS limits (
    entry TEXT NOT NULL, kind TEXT NOT NULL, observed_ms INTEGER NOT NULL,
    used_percent REAL, resets_at_ms INTEGER, window_minutes INTEGER, status TEXT,
    origin TEXT NOT NULL, PRIMARY KEY (entry, kind));
CREATE TABLE IF NOT EXISTS file_warnings (
    file_id INTEGER NOT NULL, kind TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (file_id, kind));
CREATE TABLE IF NOT EXISTS source_warnings (
    entry TEXT NOT NULL, kind TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (entry, kind));
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
""" + usage_agg.SCHEMA
_TABLES = ("files", "entries", "shadow", "limits", "file_warnings", "source_warnings", "meta",
           "usage_agg")
# copies of one call in the same file keep the largest of each count (transcripts.EntrySink)
_KEEP_MAX = """input=max({t}.input, excluded.input), output=max({t}.output, excluded.output),
    cache_read=max({t}.cache_read, excluded.cache_read),
    cache_write=max({t}.cache_write, excluded.cache_write),
    reasoning=max({t}.reasoning, excluded.reasoning),
    cost_usd=coalesce(max({t}.cost_usd, excluded.cost_usd), {t}.cost_usd, excluded.cost_usd)"""


class FileRow(NamedTuple):
    """A ``files`` row (a tuple: thousands are read per refresh)."""

    id: int
    path: str
    entry: str
    runtime: str
    reader: str
    size: int
    mtime_ns: int
    inode: int
    device: int
    consumed: int
    head_len: int
    head_hash: str
    #: the reader's state, as JSON (decoded only for the files read again)
    state: bytes


#: how long a refresh waits for another process's refresh of the same index
BUSY_TIMEOUT_MS = 60_000


def connect(path: Path) -> sqlite3.Connection:
    """A connection with the index's pragmas (WAL: readers never wait for a refresh)."""
    return index_file.connect(path, BUSY_TIMEOUT_MS)


def open_store(path: Path) -> UsageStore:
    """The store at ``path``; a file that is not a usable index is rebuilt (it is a cache).

    Raises:
        StoreError: the folder cannot be created or the file cannot be opened.
    """
    return index_file.open_rebuildable(path, UsageStore, "the usage index", "the transcripts")


class UsageStore:
    """The write side of the index (one per index; its caller serialises the calls)."""

    def __init__(self, path: Path) -> None:
        self.conn = connect(path)
        self.conn.execute("PRAGMA temp_store=MEMORY")
        self.conn.execute("PRAGMA cache_size=-65536")
        self._migrate()
        self.conn.execute(f"CREATE TEMP TABLE stage ({_ROW_SQL.format(unique='')})")
        self.conn.execute("CREATE TEMP TABLE gone (k TEXT PRIMARY KEY)")
        self.conn.execute(usage_agg.TEMP)
        self._staged = 0
        #: the refresh started from an empty index: the aggregate is summed once at the end
        self._cold = False
        #: into an empty index: the file that owns each key stored so far
        self._owner: dict[str, int] = {}

    def _migrate(self) -> None:
        self.conn.executescript(_SCHEMA)
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is not None and row[0] == str(SCHEMA_VERSION):
            return
        for table in _TABLES:
            self.conn.execute(f"DROP TABLE IF EXISTS {table}")
        self.conn.executescript(_SCHEMA)
        self.conn.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))

    def close(self) -> None:
        self.conn.close()

    def begin(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self._cold = not self.conn.execute("SELECT EXISTS (SELECT 1 FROM entries)").fetchone()[0]
        self._owner.clear()

    def commit(self) -> None:
        """Merge what is staged, bring the aggregate up to date and commit."""
        self.flush()
        self._owner.clear()
        if self._cold:
            usage_agg.rebuild(self.conn)
        else:
            usage_agg.update(self.conn)
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        self._staged = 0
        self._owner.clear()
        self.conn.execute("DELETE FROM stage")
        self.conn.execute("DELETE FROM touched")
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    def files(self) -> dict[str, FileRow]:
        rows = self.conn.execute("SELECT id, path, entry, runtime, reader, size, mtime_ns, inode,"
                                 " device, consumed, head_len, head_hash, state FROM files")
        return {r[1]: FileRow(*r) for r in rows}

    def count_entries(self) -> int:
        self.flush()
        return int(self.conn.execute("SELECT count(*) FROM entries").fetchone()[0])

    def save_file(self, row: FileRow) -> int:
        """Insert or update a ``files`` row by path; its id."""
        values = (row.path, row.entry, row.runtime, row.reader, row.size, row.mtime_ns, row.inode,
                  row.device, row.consumed, row.head_len, row.head_hash, row.state)
        cur = self.conn.execute(
            "INSERT INTO files (path, entry, runtime, reader, size, mtime_ns, inode, device,"
            " consumed, head_len, head_hash, state) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(path) DO UPDATE SET entry=excluded.entry, runtime=excluded.runtime,"
            " reader=excluded.reader, size=excluded.size, mtime_ns=excluded.mtime_ns,"
            " inode=excluded.inode, device=excluded.device, consumed=excluded.consumed,"
            " head_len=excluded.head_len, head_hash=excluded.head_hash, state=excluded.state"
            " RETURNING id", values)
        return int(cur.fetchone()[0])

    def set_entry(self, file_id: int, entry: str) -> None:
        self.flush()
        self._mark_file(file_id)
        self.conn.execute("UPDATE files SET entry=? WHERE id=?", (entry, file_id))
        self._mark_file(file_id)

    def _mark_file(self, file_id: int) -> None:
        if not self._cold:
            usage_agg.mark_file(self.conn, file_id)

    def add_rows(self, file_id: int, rows: Sequence[Row]) -> None:
        """Stage a file's new rows; they are merged in batches (:meth:`flush`) — or, into an
        empty index, stored at once (:meth:`_add_cold`)."""
        if not rows:
            return
        if self._cold:
            self._add_cold(file_id, rows)
            return
        self.conn.executemany(f"INSERT INTO stage ({COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                              [(file_id, *row) for row in rows])
        self._staged += len(rows)
        if self._staged >= STAGE_ROWS:
            self.flush()

    def _add_cold(self, file_id: int, rows: Sequence[Row]) -> None:
        """:meth:`flush`'s rules without the staging table: which file owns a key is known
        here (the first one stored), so a copy from another file goes straight to ``shadow``
        and every other row to ``entries`` (copies in the same file merged by the conflict
        clause)."""
        owner = self._owner
        mine: list[tuple[object, ...]] = []
        theirs: list[tuple[object, ...]] = []
        for row in rows:
            key = row[9]
            if key is not None and owner.setdefault(key, file_id) != file_id:
                theirs.append((file_id, *row))
            else:
                mine.append((file_id, *row))
        self.conn.executemany(
            f"INSERT INTO entries ({COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
            f" ON CONFLICT(dedupe_key) DO UPDATE SET {_KEEP_MAX.format(t='entries')}", mine)
        if theirs:
            self.conn.executemany(
                f"INSERT INTO shadow ({COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
                f" ON CONFLICT(dedupe_key, file_id) DO UPDATE SET {_KEEP_MAX.format(t='shadow')}",
                theirs)

    def flush(self) -> None:
        """Merge the staged rows: new keys counted, same-file copies merged, others' shadowed.

        Rows of many files are merged at once (a statement per file costs more than its rows);
        two staged files with the same key are ordered by staging, and the second is shadowed.
        """
        if not self._staged:
            return
        conn = self.conn
        if not self._cold:
            usage_agg.mark_staged(conn)
        conn.execute(f"INSERT INTO entries ({COLUMNS}) SELECT {COLUMNS} FROM stage WHERE true"
                     f" ON CONFLICT(dedupe_key) DO UPDATE SET {_KEEP_MAX.format(t='entries')}"
                     " WHERE entries.file_id = excluded.file_id")
        conn.execute(f"INSERT INTO shadow ({COLUMNS}) SELECT {_prefixed('s')} FROM stage s"
                     " JOIN entries e ON e.dedupe_key = s.dedupe_key WHERE e.file_id != s.file_id"
                     f" ON CONFLICT(dedupe_key, file_id) DO UPDATE SET {_KEEP_MAX.format(t='shadow')}")
        conn.execute("DELETE FROM stage")
        self._staged = 0

    def drop_entries(self, file_id: int) -> int:
        """Remove a file's rows, promoting other files' copies of its keys; rows removed net."""
        self.flush()
        conn = self.conn
        conn.execute("DELETE FROM shadow WHERE file_id=?", (file_id,))
        conn.execute("DELETE FROM file_warnings WHERE file_id=?", (file_id,))
        conn.execute("INSERT OR IGNORE INTO gone SELECT dedupe_key FROM entries"
                     " WHERE file_id=? AND dedupe_key IS NOT NULL", (file_id,))
        self._mark_file(file_id)
        removed = conn.execute("DELETE FROM entries WHERE file_id=?", (file_id,)).rowcount
        promoted = conn.execute(
            f"INSERT OR IGNORE INTO entries ({COLUMNS}) SELECT {COLUMNS} FROM shadow"
            " WHERE dedupe_key IN (SELECT k FROM gone) ORDER BY rowid").rowcount
        if promoted:
            if not self._cold:
                usage_agg.mark_keys(conn)
            conn.execute("DELETE FROM shadow WHERE dedupe_key IN (SELECT k FROM gone) AND EXISTS"
                         " (SELECT 1 FROM entries e WHERE e.dedupe_key = shadow.dedupe_key"
                         " AND e.file_id = shadow.file_id)")
        conn.execute("DELETE FROM gone")
        return removed - promoted

    def remove_file(self, file_id: int) -> int:
        """Forget a file that is gone; rows removed net."""
        removed = self.drop_entries(file_id)
        self.conn.execute("DELETE FROM files WHERE id=?", (file_id,))
        return removed

    def add_limits(self, entry: str, rows: Sequence[LimitRow]) -> None:
        """Keep the newest reading per (entry, window)."""
        if not rows:
            return
        self.conn.executemany(
            "INSERT INTO limits VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(entry, kind) DO UPDATE SET"
            " observed_ms=excluded.observed_ms, used_percent=excluded.used_percent,"
            " resets_at_ms=excluded.resets_at_ms, window_minutes=excluded.window_minutes,"
            " status=excluded.status, origin=excluded.origin"
            " WHERE excluded.observed_ms >= limits.observed_ms",
            ((entry, *row) for row in rows))

    def add_file_warnings(self, file_id: int, counts: Mapping[str, int]) -> None:
        if not counts:
            return
        self.conn.executemany(
            "INSERT INTO file_warnings VALUES (?,?,?) ON CONFLICT(file_id, kind)"
            " DO UPDATE SET n = n + excluded.n", ((file_id, k, n) for k, n in counts.items() if n))

    def set_source_warnings(self, counts: Mapping[str, Counter[str]]) -> None:
        """Replace the access warnings (they describe the last refresh, not the files)."""
        self.conn.execute("DELETE FROM source_warnings")
        self.conn.executemany("INSERT INTO source_warnings VALUES (?,?,?)",
                              ((e, k, n) for e, c in counts.items() for k, n in c.items() if n))


def _prefixed(alias: str) -> str:
    return ", ".join(f"{alias}.{c.strip()}" for c in COLUMNS.split(","))
