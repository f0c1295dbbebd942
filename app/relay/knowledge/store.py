"""The knowledge graph's SQLite file, ``<data>/knowledge.sqlite``.

Seed 000's tables, with the columns incremental work needs added:

``nodes``   id, node_type, payload (JSON), session_id, weight, created_at, updated_at
            (unix milliseconds) + repo, path, origin (``code`` | ``activity``).
``edges``   from_id, to_id, edge_type, weight; one row per (from, to, type).
``chunks``  id, path, lang, startLine, endLine, body, sha, embedding, dim (reserved for
            vector ranking, always NULL) + repo, kind, title, node_id, session_id, origin.
``chunks_fts``  FTS5 over chunks' body and path (external content), kept in step by
            triggers: an insert adds the row, a delete issues FTS5's ``'delete'`` command
            with the old values, an update does both. Rows are only ever inserted and
            deleted (never ``INSERT OR REPLACE``, whose implicit delete fires no trigger),
            and the file is never VACUUMed (that may renumber the rowids FTS5 points at).
``files``   (repo, path) → blob sha, language, symbol count: what the scanner has read.
``repos``   each scanned repository: its id key, when it was last scanned, file count.
``meta``    the schema version and the ingest cursor (the last event id read).

Decision: like the wallet's usage index, this is a **rebuildable index kept apart from the
event store's single writer** — code comes from the repositories, activity from relay.db's
events — so it has its own file, its own connections (WAL, a busy timeout; the scanner
commits in batches) and no migrations: a file of an older schema version is rebuilt; one
of a newer version is refused. Several repositories share it (``repo`` columns; ids carry
a short hash of the repository path).

**Secrets.** Every chunk body and title and every node payload passes through the scrubber
(:mod:`relay.core.redact`) here, at the only place rows are written, so no caller can skip
it; ``secure_delete`` overwrites what is deleted.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from relay.core.errors import SchemaTooNewError
from relay.core.redact import scrub, scrub_obj
from relay.core.store import index_file
from relay.core.store.db import now_ms
from relay.knowledge.model import Fact, Graph, Hit, Node, RepoStats, Stats

#: 2: the tree-sitter scanner (members of types, more imports): an index the hand-written
#: scanner filled is rebuilt, since its files' blob shas would otherwise look unchanged; and
#: ``chunks_node``, without which replacing a file's rows scanned the whole chunks table
SCHEMA_VERSION = 2
BUSY_TIMEOUT_MS = 30_000
SNIPPET_TOKENS = 16
SNIPPET_MARKS = ("«", "»")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY, node_type TEXT NOT NULL, payload JSON, session_id TEXT, weight REAL,
    created_at TIMESTAMP, updated_at TIMESTAMP, repo TEXT, path TEXT, origin TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS nodes_file ON nodes (repo, path, origin);
CREATE INDEX IF NOT EXISTS nodes_session ON nodes (session_id, node_type);
CREATE TABLE IF NOT EXISTS edges (
    from_id TEXT NOT NULL, to_id TEXT NOT NULL, edge_type TEXT NOT NULL, weight REAL,
    UNIQUE (from_id, to_id, edge_type));
CREATE INDEX IF NOT EXISTS edges_to ON edges (to_id);
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY, path TEXT, lang TEXT, startLine INT, endLine INT, body TEXT, sha TEXT,
    embedding BLOB, dim INT, repo TEXT, kind TEXT, title TEXT, node_id TEXT, session_id TEXT,
    origin TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks (repo, path, origin);
CREATE INDEX IF NOT EXISTS chunks_session ON chunks (session_id);
CREATE INDEX IF NOT EXISTS chunks_node ON chunks (node_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    body, path, content='chunks', content_rowid='rowid');
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts (rowid, body, path) VALUES (new.rowid, new.body, new.path);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, body, path)
        VALUES ('delete', old.rowid, old.body, old.path);
END;
CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, body, path)
        VALUES ('delete', old.rowid, old.body, old.path);
    INSERT INTO chunks_fts (rowid, body, path) VALUES (new.rowid, new.body, new.path);
END;
CREATE TABLE IF NOT EXISTS files (
    repo TEXT NOT NULL, path TEXT NOT NULL, sha TEXT NOT NULL, lang TEXT NOT NULL,
    symbols INTEGER NOT NULL, scanned_at INTEGER NOT NULL, PRIMARY KEY (repo, path));
CREATE TABLE IF NOT EXISTS repos (
    repo TEXT PRIMARY KEY, key TEXT NOT NULL, scanned_at INTEGER, files INTEGER);
"""
_TABLES = ("chunks_fts", "chunks", "edges", "nodes", "files", "repos", "meta")


def connect(path: Path) -> sqlite3.Connection:
    return index_file.connect(path, BUSY_TIMEOUT_MS, "secure_delete=ON")


def open_store(path: Path) -> KnowledgeStore:
    """The store at ``path``; a file that is not a usable index is rebuilt.

    Raises:
        SchemaTooNewError: a newer Relay wrote the file.
        StoreError: the folder or the file cannot be used.
    """
    return index_file.open_rebuildable(path, KnowledgeStore, "the knowledge index",
                                       "the repositories and the session history")


class KnowledgeStore:
    """One connection to the index. Not thread-safe: its owner serialises the calls."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = connect(path)
        try:
            self._migrate()
        except BaseException:
            self.conn.close()
            raise

    def _migrate(self) -> None:
        version = self._version()
        if version == SCHEMA_VERSION:
            return
        if version is not None and version > SCHEMA_VERSION:
            raise SchemaTooNewError(
                f"The knowledge index {self.path} was written by a newer Relay "
                f"(schema {version}; this build knows up to {SCHEMA_VERSION}).",
                "Update Relay, or delete the file: it is rebuilt.")
        with self.transaction():
            if self._version() == SCHEMA_VERSION:  # another process got here first
                return
            for table in _TABLES:  # an older index is rebuilt from scratch
                self.conn.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in _statements(_SCHEMA):
                self.conn.execute(statement)
            self.conn.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))

    def _version(self) -> int | None:
        if self.conn.execute("SELECT 1 FROM sqlite_master WHERE name='meta'").fetchone() is None:
            return None
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        return int(row[0]) if row else None

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on any exception)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- writing (inside a transaction) ------------------------------------------------------

    def put(self, graph: Graph, origin: str) -> None:
        """Insert a graph's rows (nodes upserted, keeping ``created_at``)."""
        ms = now_ms()
        self.conn.executemany(
            "INSERT INTO nodes (id, node_type, payload, session_id, weight, created_at, updated_at,"
            " repo, path, origin) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET"
            " node_type=excluded.node_type, payload=excluded.payload, session_id=excluded.session_id,"
            " weight=excluded.weight, updated_at=excluded.updated_at, repo=excluded.repo,"
            " path=excluded.path, origin=excluded.origin",
            [(n.id, n.node_type, _payload(n), n.session_id, n.weight, n.created_at or ms, ms,
              n.repo, n.path, origin) for n in graph.nodes])
        self.conn.executemany(
            "INSERT INTO edges VALUES (?,?,?,?) ON CONFLICT(from_id, to_id, edge_type)"
            " DO UPDATE SET weight=excluded.weight",
            [(e.from_id, e.to_id, e.edge_type, e.weight) for e in graph.edges])
        self.conn.executemany(
            "INSERT INTO chunks (id, path, lang, startLine, endLine, body, sha, repo, kind, title,"
            " node_id, session_id, origin) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(c.id, scrub(c.path), c.lang, c.start, c.end, scrub(c.body), c.sha, c.repo, c.kind,
              scrub(c.title), c.node_id, c.session_id, origin) for c in graph.chunks])

    def _drop(self, where: str, params: Sequence[object]) -> None:
        """Delete the nodes matching ``where``, their outgoing edges and their chunks."""
        ids = f"SELECT id FROM nodes WHERE {where}"
        self.conn.execute(f"DELETE FROM edges WHERE from_id IN ({ids})", params)
        self.conn.execute(f"DELETE FROM chunks WHERE node_id IN ({ids})", params)
        self.conn.execute(f"DELETE FROM nodes WHERE {where}", params)

    def replace_file(self, repo: str, path: str, sha: str, lang: str, graph: Graph,
                     symbols: int) -> None:
        """A scanned file's nodes, edges and chunks, in place of what it had."""
        self.drop_file(repo, path)
        self.put(graph, "code")
        self.conn.execute("INSERT INTO files VALUES (?,?,?,?,?,?)",
                          (repo, path, sha, lang, symbols, now_ms()))

    def drop_file(self, repo: str, path: str) -> None:
        self._drop("repo=? AND path=? AND origin='code'", (repo, path))
        self.conn.execute("DELETE FROM files WHERE repo=? AND path=?", (repo, path))

    def replace_session(self, session_id: str, graph: Graph) -> None:
        """A session's activity, in place of what an earlier ingest recorded."""
        self._drop("session_id=? AND origin='activity'", (session_id,))
        self.put(graph, "activity")

    def mark_scanned(self, repo: str, key: str) -> None:
        self.conn.execute(
            "INSERT INTO repos VALUES (?,?,?,(SELECT count(*) FROM files WHERE repo=?))"
            " ON CONFLICT(repo) DO UPDATE SET scanned_at=excluded.scanned_at, files=excluded.files",
            (repo, key, now_ms(), repo))

    def set_cursor(self, value: int) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('cursor', ?)", (str(value),))

    # -- reading -----------------------------------------------------------------------------

    def file_shas(self, repo: str) -> dict[str, str]:
        rows = self.conn.execute("SELECT path, sha FROM files WHERE repo=?", (repo,))
        return dict(rows.fetchall())

    def cursor(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key='cursor'").fetchone()
        return int(row[0]) if row else 0

    def known_repo(self, repo: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM repos WHERE repo=? UNION ALL SELECT 1 FROM chunks WHERE repo=? LIMIT 1",
            (repo, repo)).fetchone()
        return row is not None

    def search(self, match: str, limit: int, repo: str | None = None) -> list[Hit]:
        """Chunks matching an FTS5 ``match`` expression, best first (``bm25``), each once:
        chunks with the same text at the same place (one decision or constraint in every
        session that made it, a symbol indexed twice) are one hit, the best-ranked one's."""
        left, right = SNIPPET_MARKS
        where = " AND c.repo = ?" if repo is not None else ""
        sql = ("WITH found AS (SELECT c.path, c.startLine, c.endLine, c.lang, c.kind, c.title,"
               " bm25(chunks_fts) AS rank,"
               f" snippet(chunks_fts, 0, '{left}', '{right}', '…', {SNIPPET_TOKENS}) AS snip,"
               " c.repo, c.session_id, c.node_id, c.sha"
               " FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid"
               f" WHERE chunks_fts MATCH ?{where}),"
               " ranked AS (SELECT *, row_number() OVER (PARTITION BY kind, sha, path, repo,"
               " startLine, endLine ORDER BY rank, session_id DESC) AS nth FROM found)"
               " SELECT path, startLine, endLine, lang, kind, title, rank, snip, repo,"
               " session_id, node_id FROM ranked WHERE nth = 1"
               " ORDER BY rank, path, startLine LIMIT ?")
        params: list[object] = [match, *([repo] if repo is not None else []), limit]
        return [Hit(path=r[0], start=r[1], end=r[2], lang=r[3], kind=r[4], title=r[5] or "",
                    score=-float(r[6]), snippet=" ".join(str(r[7]).split()), repo=r[8],
                    session_id=r[9], node_id=r[10])
                for r in self.conn.execute(sql, params)]

    def facts(self, session_id: str, kinds: Iterable[str]) -> list[Fact]:
        wanted = list(kinds)
        if not wanted:
            return []
        rows = self.conn.execute(
            f"SELECT id, node_type, payload FROM nodes WHERE session_id=? AND origin='activity'"
            f" AND node_type IN ({','.join('?' * len(wanted))}) ORDER BY created_at, rowid",
            (session_id, *wanted))
        out = []
        for node_id, kind, payload in rows:
            data = json.loads(payload or "{}")
            out.append(Fact(kind=kind, text=str(data.get("text", "")), session_id=session_id,
                            node_id=node_id, files=tuple(data.get("files", ()))))
        return out

    def stats(self) -> Stats:
        def counts(sql: str) -> dict[str, int]:
            return {str(k): int(n) for k, n in self.conn.execute(sql)}

        repos = [RepoStats(r[0], int(r[1] or 0), int(r[2] or 0), r[3]) for r in self.conn.execute(
            "SELECT r.repo, r.files, (SELECT sum(symbols) FROM files f WHERE f.repo = r.repo),"
            " r.scanned_at FROM repos r ORDER BY r.repo")]
        sessions = self.conn.execute(
            "SELECT count(*) FROM nodes WHERE node_type='task' AND origin='activity'").fetchone()[0]
        return Stats(path=str(self.path),
                     nodes=counts("SELECT node_type, count(*) FROM nodes GROUP BY 1 ORDER BY 1"),
                     edges=counts("SELECT edge_type, count(*) FROM edges GROUP BY 1 ORDER BY 1"),
                     chunks=counts("SELECT kind, count(*) FROM chunks GROUP BY 1 ORDER BY 1"),
                     repos=repos, cursor=self.cursor(), sessions=int(sessions))


def _statements(script: str) -> Iterator[str]:
    """The statements of ``script`` one by one (a trigger's body keeps its ``;``)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending.strip()
            pending = ""


def _payload(node: Node) -> str:
    return json.dumps(scrub_obj(node.payload), ensure_ascii=False, sort_keys=True)
