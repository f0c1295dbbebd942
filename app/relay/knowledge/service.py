"""``Knowledge``: the one object front ends use for the knowledge graph.

The engine holds one (``Engine.knowledge``, built on first use); ``relay-cli retrieve`` and
``relay-cli knowledge`` build their own. Everything runs on worker threads, so the event
loop never waits for SQLite or a file:

- quick calls (retrieve, facts, stats, ingest) share one connection, one at a time;
- a scan opens a connection of its own for its duration, so a long scan never holds up a
  search (WAL: readers do not wait for the writer; the scanner commits in batches).

``scan_soon`` and ``ingest_soon`` start background work that never raises: a failure is
logged and the next call tries again. ``close`` stops running scans at the next file
(what they did is kept) and waits for pending ingests.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from relay.core.config import Config
from relay.core.errors import RelayError, SessionNotFoundError, WorktreeError
from relay.core.events import EventRecord, is_board_record
from relay.core.models import SessionRow
from relay.core.store.db import Store
from relay.core.store.faults import Fault, disk_full_error, fault_of
from relay.knowledge.activity import SessionInfo, session_graph
from relay.knowledge.model import FACT_KINDS, Fact, Hit, Stats
from relay.knowledge.retrieve import check_limit, match_expression
from relay.knowledge.scanner import ScanReport, repo_key, scan_repo
from relay.knowledge.store import KnowledgeStore, open_store
from relay.sessions.briefing import KnownFacts
from relay.sessions.worktree import repo_root

log = logging.getLogger(__name__)

INDEX_FILE = "knowledge.sqlite"
#: events read per query (while looking for sessions with new events, and a session's): the
#: records are built on the engine's loop — in the window, the GUI's — so a page is kept to
#: ~10 ms of it and the loop runs between pages (issue 24: the window under a burst)
EVENT_PAGE = 500
#: how many of a session's latest decisions / constraints a contract takes
CONTRACT_FACTS = 15

T = TypeVar("T")


def index_path(config: Config) -> Path:
    return config.home / INDEX_FILE


@dataclass(frozen=True, slots=True)
class IngestReport:
    sessions: int
    cursor: int


class Knowledge:
    """Scan, ingest, retrieve; see the module docstring."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.path = index_path(config)
        self._store: KnowledgeStore | None = None
        self._lock = threading.Lock()
        self._ingesting = asyncio.Lock()
        self._cancel = threading.Event()
        self._scans: dict[str, asyncio.Task[None]] = {}
        self._ingest_task: asyncio.Task[None] | None = None
        self._ingest_again = False

    # -- the shared connection -------------------------------------------------------------

    def _locked(self, fn: Callable[[KnowledgeStore], T]) -> T:
        with self._lock:
            if self._store is None:
                self._store = open_store(self.path)
            return fn(self._store)

    async def _call(self, fn: Callable[[KnowledgeStore], T]) -> T:
        return await asyncio.to_thread(self._locked, fn)

    async def close(self) -> None:
        self._cancel.set()
        pending = [*self._scans.values(), *([self._ingest_task] if self._ingest_task else [])]
        await asyncio.gather(*pending, return_exceptions=True)
        await asyncio.to_thread(self._close_store)

    def _close_store(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    # -- code ------------------------------------------------------------------------------

    async def scan(self, repo: Path) -> ScanReport:
        """Scan a repository now (incremental); Relay's data folder is never read."""
        return await asyncio.to_thread(self._scan, repo)

    def _scan(self, repo: Path) -> ScanReport:
        store = open_store(self.path)
        try:
            return scan_repo(store, repo, exclude=[self.config.home], cancel=self._cancel)
        finally:
            store.close()

    def scan_soon(self, repo: Path) -> None:
        """Scan ``repo`` in the background (once at a time per repository); never raises."""
        key = str(repo)
        if key in self._scans or self._cancel.is_set():
            return
        task = asyncio.create_task(self._scan_quietly(repo), name="relay-knowledge-scan")
        self._scans[key] = task
        task.add_done_callback(lambda _: self._scans.pop(key, None))

    async def _scan_quietly(self, repo: Path) -> None:
        try:
            report = await self.scan(repo)
            log.info("knowledge: scanned %s (%d files read, %d unchanged, %d removed)",
                     report.repo, report.scanned, report.unchanged, report.removed)
        except RelayError as exc:
            log.warning("knowledge: %s not scanned: %s", repo, exc.message)
        except (sqlite3.Error, OSError) as exc:  # a full disk, a lock: one line, no traceback
            log.warning("knowledge: %s not scanned: %s", repo, _why(exc, self.path))
        except Exception:  # the index is a convenience: it never takes a session down
            log.exception("knowledge: scanning %s failed", repo)

    # -- activity --------------------------------------------------------------------------

    async def ingest(self, store: Store) -> IngestReport:
        """Read the events stored since the last ingest; rebuild the activity of each
        session that has new ones. Idempotent; the cursor is kept in the index."""
        async with self._ingesting:
            cursor = await self._call(lambda s: s.cursor())
            if await store.last_event_id() < cursor:  # relay.db was replaced: start over
                cursor = 0
            sessions: dict[str, None] = {}
            scanned = cursor
            while batch := await store.events_after(scanned, limit=EVENT_PAGE, replay=False):
                sessions.update(dict.fromkeys(r.session_id for r in batch
                                              if not is_board_record(r)))
                scanned = batch[-1].id
            for session_id in sessions:
                await self._ingest_one(store, session_id)
            await self._call(lambda s: s.set_cursor(scanned))
            return IngestReport(sessions=len(sessions), cursor=scanned)

    async def ingest_file(self, db_path: Path) -> IngestReport:
        """:meth:`ingest` from the event store at ``db_path`` (nothing when there is none
        yet): for a command that runs without an engine."""
        if not db_path.exists():
            return IngestReport(sessions=0, cursor=0)
        store = await Store.open(db_path)
        try:
            return await self.ingest(store)
        finally:
            await store.close()

    async def ingest_session(self, store: Store, session_id: str) -> None:
        """Rebuild one session's activity now (the cursor is left alone)."""
        async with self._ingesting:
            await self._ingest_one(store, session_id)

    async def _ingest_one(self, store: Store, session_id: str) -> None:
        try:
            row = await store.sessions.get(session_id)
        except SessionNotFoundError:
            return  # events of a session whose row is gone: nothing to attach them to
        records: list[EventRecord] = []
        while page := await store.events_after(records[-1].id if records else 0,
                                                session_id=row.id, limit=EVENT_PAGE,
                                                replay=False):
            records += page
        await self._call(lambda s: _write_session(s, row, records))

    def ingest_soon(self, store: Store) -> None:
        """Ingest in the background; calls while one runs make it run once more. Never raises."""
        if self._cancel.is_set():  # closing
            return
        if self._ingest_task is not None and not self._ingest_task.done():
            self._ingest_again = True
            return
        self._ingest_task = asyncio.create_task(self._ingest_quietly(store),
                                                name="relay-knowledge-ingest")

    async def _ingest_quietly(self, store: Store) -> None:
        self._ingest_again = True
        while self._ingest_again:
            self._ingest_again = False
            try:
                await self.ingest(store)
            except RelayError as exc:
                log.warning("knowledge: session activity not indexed: %s", exc.message)
            except (sqlite3.Error, OSError) as exc:
                log.warning("knowledge: session activity not indexed: %s", _why(exc, self.path))
            except Exception:
                log.exception("knowledge: indexing session activity failed")

    async def wait_idle(self) -> None:
        """Wait until no background scan or ingest runs (a re-run they owe included)."""
        while pending := [t for t in (*self._scans.values(), self._ingest_task)
                          if t is not None and not t.done()]:
            await asyncio.gather(*pending, return_exceptions=True)

    # -- reading ---------------------------------------------------------------------------

    async def retrieve(self, query: str, limit: int = 20, repo: Path | None = None) -> list[Hit]:
        """Chunks matching ``query``, best first (see :mod:`relay.knowledge.retrieve`).

        Raises:
            RelayError: a query without words, a bad limit, or a repository never scanned.
        """
        match, limit = match_expression(query), check_limit(limit)
        where = await asyncio.to_thread(_repo_id, repo) if repo is not None else None

        def search(store: KnowledgeStore) -> list[Hit]:
            if where is not None and not store.known_repo(where):
                raise RelayError(f"The knowledge index has nothing for {where} yet.",
                                 f"Scan it first: relay-cli knowledge scan --repo {where}")
            return store.search(match, limit, where)

        return await self._call(search)

    async def facts(self, session_id: str, kinds: Iterable[str] = FACT_KINDS) -> list[Fact]:
        """A session's decisions, constraints and do-not-redo items, oldest first."""
        wanted = tuple(kinds)
        return await self._call(lambda s: s.facts(session_id, wanted))

    async def contract_facts(self, store: Store, session_id: str) -> KnownFacts:
        """The session's latest decisions and constraints, for its continuation contract
        (its events are indexed first, so what the agent just wrote is in)."""
        await self.ingest_session(store, session_id)
        found = await self.facts(session_id, ("decision", "constraint"))
        return KnownFacts(decisions=_latest(found, "decision"),
                          constraints=_latest(found, "constraint"))

    async def stats(self) -> Stats:
        return await self._call(lambda s: s.stats())


def _latest(found: Sequence[Fact], kind: str) -> tuple[str, ...]:
    texts = [f.text for f in found if f.kind == kind]
    return tuple(dict.fromkeys(texts))[-CONTRACT_FACTS:]


def _repo_id(path: Path) -> str:
    """How the index names the repository at ``path`` (its working tree root)."""
    try:
        return str(repo_root(path.expanduser()))
    except WorktreeError:
        return str(path.expanduser().resolve())


def _write_session(store: KnowledgeStore, row: SessionRow, records: Sequence[EventRecord]) -> None:
    repo = _repo_id(Path(row.repo))
    info = SessionInfo(session_id=row.id, repo=repo, repo_key=repo_key(Path(repo)),
                       workdir=row.workdir, task=row.task, runtime=row.runtime, state=row.state,
                       branch=row.branch)
    graph = session_graph(info, records)
    with store.transaction():
        store.replace_session(row.id, graph)


def _why(exc: sqlite3.Error | OSError, path: Path) -> str:
    """One line for a failed scan or ingest (the index is left as it is)."""
    if fault_of(exc, path) is Fault.FULL:
        return disk_full_error(path, "the knowledge index cannot be written").message
    return f"{type(exc).__name__}: {exc}"
