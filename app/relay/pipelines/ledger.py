"""The durable record of pipeline runs: steps, leases, heartbeats and fenced writes.

Seed 001's rules, in SQL (migration 5: ``pipeline_runs``, ``pipeline_steps``,
``pipeline_log``):

* A worker owns a step through a **lease**: ``owner``, ``epoch`` and ``lease_until_ms``.
  Claiming is one conditional ``UPDATE`` — a waiting step, or a running one whose lease
  has expired (a takeover) — that increments the epoch, so two engines can never both
  win it.
* The owner's **heartbeat** pushes ``lease_until_ms`` forward, only while the epoch is
  still its own; a heartbeat that changes no row means the lease was lost.
* Every write of a result is **fenced** by the epoch: ``... WHERE epoch = ? AND state =
  'running'``. A worker that lost its lease changes nothing, and the refusal is logged.
  A saved successful step is never run again (``state = 'succeeded'`` is never claimed).
* Each change stamps the step with the run's next ``seq``, so an engine refreshes its
  view by reading only what changed since it last looked (a save or claim returns the
  ``seq``s it stamped, so an engine need not read its own changes back).
* :meth:`Ledger.save` takes a batch (the scheduler's group commit): each save fenced on its
  own, all in one transaction, and the leases it hands on in the same one.
* A transaction's log lines are written in one statement just before it commits.

Decision: the ledger has its own small ``sqlite3`` connection instead of the event
writer's queue — a lease operation must know at once whether its conditional write
took, and each is one short ``BEGIN IMMEDIATE … COMMIT``. It runs on the caller's
loop when the database is free (a few tens of microseconds) and moves to a worker
thread with the usual 10 s busy timeout when another process holds the write lock, so
the window never waits on a lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from relay.core.errors import PipelineError, StoreError
from relay.core.pipeline_model import Pipeline
from relay.core.store.db import Store, now_ms
from relay.core.store.scrubbed import ScrubbingConnection
from relay.core.store.sql import id_text_problem, prefix_match
from relay.pipelines.templates import StepOutputs

T = TypeVar("T")
RunState = Literal["running", "cancelling", "succeeded", "failed", "cancelled"]
StepState = Literal["waiting", "running", "succeeded", "failed", "skipped", "cancelled"]
TERMINAL_RUN = ("succeeded", "failed", "cancelled")
TERMINAL_STEP = ("succeeded", "failed", "skipped", "cancelled")
BUSY_TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class RunInfo:
    id: str
    name: str
    repo: str
    pipeline: Pipeline
    state: RunState
    reason: str | None
    concurrency: int
    budget_usd: float | None
    base_commit: str | None
    result_commit: str | None
    seq: int
    created_ms: int
    updated_ms: int
    ended_ms: int | None

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL_RUN


@dataclass(frozen=True)
class StepInfo:
    node_id: str
    state: StepState
    attempt: int
    epoch: int
    owner: str | None
    lease_until_ms: int | None
    not_before_ms: int
    session_id: str | None
    outputs: StepOutputs
    error: str | None
    cost_usd: float | None
    saves: int
    started_ms: int | None
    ended_ms: int | None
    seq: int


@dataclass(frozen=True)
class Claim:
    """A lease this worker now holds."""

    node_id: str
    epoch: int
    attempt: int
    takeover: bool
    #: the ``seq`` the claim stamped on the step (0: not known)
    seq: int = 0


@dataclass(frozen=True)
class Save:
    """A successful attempt's result, to be saved (fenced by its claim)."""

    claim: Claim
    outputs: StepOutputs
    cost_usd: float | None


@dataclass(frozen=True)
class Saved:
    """What one :meth:`Ledger.save` transaction did."""

    #: the results committed, and those refused because their lease moved on
    saved: list[Save]
    refused: list[Save]
    #: the leases taken in the same transaction
    claims: list[Claim]
    #: every ``seq`` this transaction stamped, in order (consecutive: no other engine's
    #: change can fall between them)
    seqs: list[int]


@dataclass(frozen=True)
class LogEntry:
    id: int
    node_id: str | None
    ts_ms: int
    kind: str
    owner: str | None
    epoch: int | None
    detail: str | None


_STEP_COLS = ("node_id, state, attempt, epoch, owner, lease_until_ms, not_before_ms, session_id,"
              " output, files_json, commit_sha, branch, error, cost_usd, saves, started_ms,"
              " ended_ms, seq")
_RUN_COLS = ("id, name, repo, state, reason, concurrency, budget_usd, base_commit,"
             " result_commit, seq, created_ms, updated_ms, ended_ms")


def _step(row: Sequence[Any]) -> StepInfo:
    files = tuple(json.loads(row[9])) if row[9] else ()
    return StepInfo(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7],
                    StepOutputs(row[8] or "", files, row[10], row[11], row[7]),
                    row[12], row[13], row[14], row[15], row[16], row[17])


def _run(row: Sequence[Any], pipeline: Pipeline) -> RunInfo:
    return RunInfo(row[0], row[1], row[2], pipeline, row[3], row[4], row[5], row[6], row[7],
                   row[8], row[9], row[10], row[11], row[12])


#: a changed step's ``seq``: one more than the run's highest (under the write lock, so
#: increasing across engines); an engine reads only the steps above what it last saw
_NEXT = "(SELECT max(s.seq) + 1 FROM pipeline_steps AS s WHERE s.run_id = pipeline_steps.run_id)"


class _Busy(Exception):
    """Another process holds the write lock (a transaction tried without waiting)."""


class _Tx:
    """One write transaction: its connection, and its log lines, written in one statement
    just before the commit."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.lines: list[tuple[Any, ...]] = []

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def log(self, run_id: str, node_id: str | None, kind: str, ms: int,
            owner: str | None = None, epoch: int | None = None,
            detail: str | None = None) -> None:
        self.lines.append((run_id, node_id, ms, kind, owner, epoch, detail))

    def write_log(self) -> None:
        if self.lines:
            self.conn.executemany("INSERT INTO pipeline_log (run_id, node_id, ts_ms, kind, owner,"
                                  " epoch, detail) VALUES (?,?,?,?,?,?,?)", self.lines)


class Ledger:
    """Run and step rows of one database file. Open with :meth:`open`; :meth:`close` it."""

    def __init__(self, conn: sqlite3.Connection, reader: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self._reader = reader
        self.path = path
        self._lock = asyncio.Lock()
        self._thread_lock = threading.Lock()
        self._busy_ms = 0
        #: each run's graph, parsed once (it never changes after the run is created)
        self._graphs: dict[str, Pipeline] = {}

    @classmethod
    def open(cls, path: Path) -> Ledger:
        """A connection to ``path`` (the engine's database, already migrated)."""
        try:
            conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False,
                                   timeout=0, factory=ScrubbingConnection)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=0")
            # reads get their own connection: a busy timeout for the rare WAL recovery
            reader = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False,
                                     timeout=BUSY_TIMEOUT_MS / 1000)
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot open {path} for pipelines: {exc}.",
                             "Check the data folder (RELAY_HOME).") from exc
        return cls(conn, reader, path)

    def close(self) -> None:
        with self._thread_lock:
            self._conn.close()
        self._reader.close()

    # -- transactions --------------------------------------------------------------

    def _in_tx(self, fn: Callable[[_Tx], T], busy_ms: int) -> T:
        with self._thread_lock:
            conn = self._conn
            if busy_ms != self._busy_ms:
                conn.execute(f"PRAGMA busy_timeout={busy_ms}")
                self._busy_ms = busy_ms
            conn.execute("BEGIN IMMEDIATE")
            try:
                tx = _Tx(conn)
                result = fn(tx)
                tx.write_log()
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return result

    def _attempt(self, fn: Callable[[_Tx], T], busy_ms: int) -> T:
        try:
            return self._in_tx(fn, busy_ms)
        except sqlite3.OperationalError as exc:
            if busy_ms == 0 and ("locked" in str(exc) or "busy" in str(exc)):
                raise _Busy from exc
            raise _store_error(exc) from exc
        except sqlite3.Error as exc:
            raise _store_error(exc) from exc

    async def tx(self, fn: Callable[[_Tx], T]) -> T:
        """Run ``fn`` in one write transaction: on this loop when the database is free,
        else in a worker thread that waits for the lock."""
        if not self._lock.locked():  # no transaction waits in a thread: commit right here
            with contextlib.suppress(_Busy):
                return self._attempt(fn, 0)
        async with self._lock:
            with contextlib.suppress(_Busy):
                return self._attempt(fn, 0)
            return await asyncio.to_thread(self._attempt, fn, BUSY_TIMEOUT_MS)

    def _read(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """A read on the reading connection (the caller's thread): in WAL mode it never
        waits for a writer, and never for this ledger's own transaction in a thread."""
        try:
            return self._reader.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise _store_error(exc) from exc

    # -- runs ------------------------------------------------------------------------

    async def create_run(self, run_id: str, pipeline: Pipeline, repo: Path, concurrency: int,
                         budget_usd: float | None, base_commit: str | None) -> None:
        ms = now_ms()

        def fn(tx: _Tx) -> None:
            tx.execute(f"INSERT INTO pipeline_runs ({_RUN_COLS}) VALUES"
                       " (?,?,?,'running',NULL,?,?,?,NULL,1,?,?,NULL)",
                       (run_id, pipeline.name, str(repo), concurrency, budget_usd,
                        base_commit, ms, ms))
            tx.execute("INSERT INTO pipeline_graphs (run_id, graph_json) VALUES (?, ?)",
                       (run_id, pipeline.model_dump_json()))
            tx.conn.executemany("INSERT INTO pipeline_steps (run_id, node_id, state, seq)"
                             " VALUES (?, ?, 'waiting', 1)",
                             [(run_id, n.id) for n in pipeline.nodes])
            tx.log(run_id, None, "created", ms, detail=f"{len(pipeline.nodes)} steps")
        await self.tx(fn)

    def run(self, run_id: str) -> RunInfo:
        """A run by id (or a unique prefix of one)."""
        problem = id_text_problem(run_id, "A run id")
        if problem:
            raise PipelineError(f"No such pipeline run: {problem}",
                                "List runs with `relay-cli pipeline status`.")
        rows = self._read(f"SELECT {_RUN_COLS} FROM pipeline_runs WHERE id = ?", (run_id,))
        if not rows:
            where, params = prefix_match("id", run_id)
            rows = self._read(f"SELECT {_RUN_COLS} FROM pipeline_runs WHERE {where}"
                              " ORDER BY created_ms DESC LIMIT 2", params)
            if len(rows) != 1:
                raise PipelineError(f"No pipeline run {run_id}." if not rows else
                                    f"{run_id} matches more than one run.",
                                    "List runs with `relay-cli pipeline status`.")
        return _run(rows[0], self._graph(rows[0][0]))

    def _graph(self, run_id: str) -> Pipeline:
        graph = self._graphs.get(run_id)
        if graph is None:
            rows = self._read("SELECT graph_json FROM pipeline_graphs WHERE run_id = ?", (run_id,))
            if not rows:
                raise PipelineError(f"The graph of run {run_id} is missing.",
                                    "The database was changed by hand; start the run again.")
            graph = self._graphs[run_id] = Pipeline.model_validate_json(rows[0][0])
        return graph

    def runs(self, limit: int = 50) -> list[RunInfo]:
        return [_run(r, self._graph(r[0])) for r in self._read(
            f"SELECT {_RUN_COLS} FROM pipeline_runs ORDER BY created_ms DESC LIMIT ?", (limit,))]

    def unfinished(self) -> list[str]:
        return [r[0] for r in self._read(
            "SELECT id FROM pipeline_runs WHERE state IN ('running', 'cancelling')"
            " ORDER BY created_ms", ())]

    def steps(self, run_id: str, after_seq: int = 0) -> list[StepInfo]:
        """Steps changed after ``after_seq`` (all of them with 0)."""
        return [_step(r) for r in self._read(
            f"SELECT {_STEP_COLS} FROM pipeline_steps WHERE run_id = ? AND seq > ?",
            (run_id, after_seq))]

    def log(self, run_id: str, after_id: int = 0) -> list[LogEntry]:
        return [LogEntry(*r) for r in self._read(
            "SELECT id, node_id, ts_ms, kind, owner, epoch, detail FROM pipeline_log"
            " WHERE run_id = ? AND id > ? ORDER BY id", (run_id, after_id))]

    async def set_run_state(self, run_id: str, state: RunState, reason: str | None = None,
                            only_from: Iterable[str] = ("running", "cancelling"),
                            result_commit: str | None = None) -> bool:
        """Move the run to ``state`` if it is in one of ``only_from``; returns whether it moved."""
        allowed = tuple(only_from)
        ms = now_ms()

        def fn(tx: _Tx) -> bool:
            cur = tx.execute(
                f"UPDATE pipeline_runs SET state=?, reason=coalesce(?, reason),"
                f" result_commit=coalesce(?, result_commit), updated_ms=?, seq=seq+1,"
                f" ended_ms=CASE WHEN ? IN ('succeeded','failed','cancelled') THEN ? END"
                f" WHERE id=? AND state IN ({','.join('?' * len(allowed))})",
                (state, reason, result_commit, ms, state, ms, run_id, *allowed))
            if cur.rowcount:
                tx.log(run_id, None, f"run_{state}", ms, detail=reason)
            return cur.rowcount > 0
        return await self.tx(fn)

    # -- trust -----------------------------------------------------------------------

    def trusted(self, digest: str) -> bool:
        """Whether the user accepted the commands of the pipeline file with this SHA-256."""
        return bool(digest) and bool(self._read(
            "SELECT 1 FROM pipeline_trust WHERE digest = ?", (digest,)))

    async def trust(self, digest: str, path: Path, commands: int) -> None:
        """Remember that the user accepted the commands of this file (by its SHA-256)."""
        ms = now_ms()

        def fn(tx: _Tx) -> None:
            tx.execute("INSERT INTO pipeline_trust (digest, path, commands, trusted_ms)"
                       " VALUES (?, ?, ?, ?) ON CONFLICT (digest) DO UPDATE SET"
                       " path = excluded.path, trusted_ms = excluded.trusted_ms",
                       (digest, str(path), commands, ms))
        await self.tx(fn)

    # -- leases ----------------------------------------------------------------------

    async def claim(self, run_id: str, owner: str, node_ids: Sequence[str],
                    lease_ms: int) -> list[Claim]:
        """Take the lease of each step that is waiting (and due) or whose lease expired."""
        if not node_ids:
            return []

        def fn(tx: _Tx) -> list[Claim]:
            return _claim(tx, run_id, owner, node_ids, lease_ms, now_ms())
        return await self.tx(fn)

    async def heartbeat(self, run_id: str, owner: str, held: Sequence[tuple[str, int]],
                        lease_ms: int) -> list[str]:
        """Renew the leases in ``held`` (node, epoch); returns the nodes whose lease is lost."""
        if not held:
            return []

        def fn(tx: _Tx) -> list[str]:
            ms = now_ms()
            lost = []
            for node_id, epoch in held:
                cur = tx.execute(
                    "UPDATE pipeline_steps SET lease_until_ms=? WHERE run_id=? AND node_id=?"
                    " AND epoch=? AND owner=? AND state='running'",
                    (ms + lease_ms, run_id, node_id, epoch, owner))
                if cur.rowcount == 0:
                    lost.append(node_id)
                    tx.log(run_id, node_id, "lease_lost", ms, owner, epoch,
                           "the heartbeat found another owner: this worker stops the step")
            return lost
        return await self.tx(fn)

    async def attach_session(self, run_id: str, claim: Claim, owner: str, session_id: str) -> bool:
        """Record the session a step runs in (fenced)."""
        def fn(tx: _Tx) -> bool:
            ms = now_ms()
            cur = tx.execute(
                f"UPDATE pipeline_steps SET session_id=?, seq={_NEXT} WHERE run_id=? AND node_id=?"
                " AND epoch=? AND state='running'", (session_id, run_id, claim.node_id,
                                                     claim.epoch))
            tx.log(run_id, claim.node_id, "session" if cur.rowcount else "fence_refused",
                   ms, owner, claim.epoch, session_id if cur.rowcount else
                   f"session {session_id} not recorded: the lease moved on")
            return cur.rowcount > 0
        return await self.tx(fn)

    async def save(self, run_id: str, owner: str, saves: Sequence[Save],
                   then_claim: Sequence[str] = (), lease_ms: int = 0) -> Saved:
        """Save successful results, each fenced by its claim's epoch, in one transaction (the
        group commit of the steps that settled together); when every one of them took, take
        the leases of ``then_claim`` in the same transaction (the dependents they make ready,
        the slots they free).

        A refused save (its lease was lost) changes nothing except its ``fence_refused`` line
        in the log, and then nothing is claimed.
        """
        def fn(tx: _Tx) -> Saved:
            ms = now_ms()
            saved: list[Save] = []
            refused: list[Save] = []
            seqs: list[int] = []
            for save in saves:
                claim, outputs, cost = save.claim, save.outputs, save.cost_usd
                files = json.dumps(list(outputs.files)) if outputs.files else "[]"
                row = tx.execute(_SAVE, (
                    outputs.output, files, outputs.commit, outputs.branch, outputs.session,
                    cost, cost, ms, run_id, claim.node_id, claim.epoch)).fetchone()
                if row is None:
                    tx.log(run_id, claim.node_id, "fence_refused", ms, owner, claim.epoch,
                           "result not saved: this worker's lease (epoch "
                           f"{claim.epoch}) is no longer the step's")
                    refused.append(save)
                    continue
                seqs.append(row[0])
                tx.log(run_id, claim.node_id, "saved", ms, owner, claim.epoch,
                       f"attempt {claim.attempt}")
                saved.append(save)
            claims = [] if refused else _claim(tx, run_id, owner, then_claim, lease_ms, ms)
            return Saved(saved, refused, claims, seqs + [c.seq for c in claims])
        return await self.tx(fn)

    async def fail(self, run_id: str, claim: Claim, owner: str, error: str,
                   retry_at_ms: int | None, skip: Sequence[str] = (),
                   state: StepState = "failed", cost_usd: float | None = None) -> bool:
        """Record a failed attempt (fenced): back to ``waiting`` until ``retry_at_ms`` when a
        retry is left, else ``state`` and its dependents ``skipped``."""
        def fn(tx: _Tx) -> bool:
            ms = now_ms()
            final = retry_at_ms is None
            cur = tx.execute(
                "UPDATE pipeline_steps SET state=?, error=?, not_before_ms=?, owner=NULL,"
                f" lease_until_ms=NULL, ended_ms=?, seq={_NEXT},"
                " cost_usd=CASE WHEN ? IS NULL THEN cost_usd ELSE coalesce(cost_usd, 0) + ? END"
                " WHERE run_id=? AND node_id=? AND epoch=? AND state='running'",
                (state if final else "waiting", error, retry_at_ms or 0,
                 ms if final else None, cost_usd, cost_usd, run_id, claim.node_id,
                 claim.epoch))
            if cur.rowcount == 0:
                tx.log(run_id, claim.node_id, "fence_refused", ms, owner, claim.epoch,
                       f"failure not recorded: the lease moved on ({error})")
                return False
            tx.log(run_id, claim.node_id, state if final else "retry", ms, owner,
                   claim.epoch, error)
            if final:
                _skip(tx, run_id, skip, f"{claim.node_id} {state}", ms,
                      "cancelled" if state == "cancelled" else "skipped")
            return True
        return await self.tx(fn)

    async def settle_waiting(self, run_id: str, node_ids: Sequence[str], state: StepState,
                             reason: str) -> None:
        """Mark steps that never started (cancelled run, spent budget) with ``state``."""
        if not node_ids:
            return

        def fn(tx: _Tx) -> None:
            ms = now_ms()
            for node_id in node_ids:
                cur = tx.execute(
                    f"UPDATE pipeline_steps SET state=?, error=?, ended_ms=?, seq={_NEXT}"
                    " WHERE run_id=? AND node_id=? AND state='waiting'",
                    (state, reason, ms, run_id, node_id))
                if cur.rowcount:
                    tx.log(run_id, node_id, state, ms, detail=reason)
        await self.tx(fn)

    async def release(self, run_id: str, gone: Callable[[str], str | None]) -> list[str]:
        """End the leases of running steps whose owner ``gone`` says has stopped (it returns
        why, or None): a restarted Relay takes them over at once instead of after expiry."""
        def fn(tx: _Tx) -> list[str]:
            ms = now_ms()
            out = []
            for node_id, owner, epoch in tx.execute(
                    "SELECT node_id, owner, epoch FROM pipeline_steps WHERE run_id=?"
                    " AND state='running' AND lease_until_ms >= ?", (run_id, ms)).fetchall():
                why = gone(owner or "")
                if why is None:
                    continue
                tx.execute("UPDATE pipeline_steps SET lease_until_ms=? WHERE run_id=?"
                           " AND node_id=? AND epoch=?", (ms - 1, run_id, node_id, epoch))
                tx.log(run_id, node_id, "lease_released", ms, owner, epoch, why)
                out.append(node_id)
            return out
        return await self.tx(fn)


_SAVE = ("UPDATE pipeline_steps SET state='succeeded', output=?, files_json=?,"
         " commit_sha=?, branch=?, session_id=coalesce(?, session_id),"
         " cost_usd=CASE WHEN ? IS NULL THEN cost_usd ELSE coalesce(cost_usd, 0) + ? END,"
         " error=NULL, saves=saves+1, ended_ms=?, owner=NULL, lease_until_ms=NULL,"
         f" seq={_NEXT}"
         " WHERE run_id=? AND node_id=? AND epoch=? AND state='running' RETURNING seq")

_CLAIM = ("UPDATE pipeline_steps SET state='running', owner=?, epoch=epoch+1,"
          f" attempt=attempt+1, lease_until_ms=?, started_ms=?, ended_ms=NULL, seq={_NEXT}"
          " WHERE run_id=? AND node_id=? AND {} RETURNING epoch, attempt, seq")
_CLAIM_WAITING = _CLAIM.format("state='waiting' AND not_before_ms<=?")
_CLAIM_EXPIRED = _CLAIM.format("state='running' AND lease_until_ms<?")


def _claim(tx: _Tx, run_id: str, owner: str, node_ids: Iterable[str],
           lease_ms: int, ms: int) -> list[Claim]:
    """Inside a write transaction: one conditional UPDATE per step — a waiting step that is
    due, else (a takeover) a running one whose lease has expired."""
    out: list[Claim] = []
    for node_id in node_ids:
        args = (owner, ms + lease_ms, ms, run_id, node_id, ms)
        takeover = False
        row = tx.execute(_CLAIM_WAITING, args).fetchone()
        if row is None:
            takeover = True
            row = tx.execute(_CLAIM_EXPIRED, args).fetchone()
            if row is None:
                continue
        claim = Claim(node_id, int(row[0]), int(row[1]), takeover, int(row[2]))
        tx.log(run_id, node_id, "takeover" if takeover else "claimed", ms, owner, claim.epoch,
               f"attempt {claim.attempt}" + (f" (the lease of epoch {claim.epoch - 1} expired)"
                                             if takeover else ""))
        out.append(claim)
    return out


def _skip(tx: _Tx, run_id: str, node_ids: Iterable[str], why: str, ms: int,
          state: str = "skipped") -> None:
    for node_id in node_ids:
        cur = tx.execute(f"UPDATE pipeline_steps SET state=?, error=?, ended_ms=?, seq={_NEXT}"
                         " WHERE run_id=? AND node_id=? AND state='waiting'",
                         (state, f"{state}: {why}", ms, run_id, node_id))
        if cur.rowcount:
            tx.log(run_id, node_id, state, ms, detail=why)


def _store_error(exc: sqlite3.Error) -> StoreError:
    hint = ("Free disk space, then retry." if "full" in str(exc)
            else "Check the data folder (RELAY_HOME) and relay-cli doctor.")
    return StoreError(f"Could not update the pipeline records: {exc}.", hint)


async def unfinished_runs_exist(store: Store) -> bool:
    """Whether any pipeline run is still running or cancelling, read through the engine's own
    store connection (cheap enough for the engine to ask before it builds a Ledger)."""
    async with store.conn.execute(
            "SELECT 1 FROM pipeline_runs WHERE state IN ('running', 'cancelling') LIMIT 1") as cur:
        return await cur.fetchone() is not None
