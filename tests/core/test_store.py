"""The SQLite store: migrations, the batched event writer, queries, publish-after-commit."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from relay.core.bus import EventBus
from relay.core.errors import SchemaTooNewError, SessionNotFoundError, StoreError
from relay.core.events import (
    AgentEvent,
    AssistantText,
    EventRecord,
    Notice,
    PermissionDenied,
    SessionEnded,
    SessionStarted,
    StateChanged,
    TurnCompleted,
    Usage,
    parse_event,
)
from relay.core.models import SessionSpec
from relay.core.store.db import Store, now_ms
from relay.core.store.migrations import LATEST, MIGRATIONS
from relay.core.store.writer import EventWriter, Statement, WriteOp

# -- helpers -------------------------------------------------------------------------


def insert_session(session_id: str, state: str = "pending", ms: int | None = None) -> Statement:
    ms = now_ms() if ms is None else ms
    spec = SessionSpec(repo=Path("/tmp/project"), task=f"task of {session_id}")
    return ("INSERT INTO sessions (id, repo, task, runtime, model, state, permission, simulated,"
            " owner_pid, spec_json, created_ms, updated_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (session_id, "/tmp/project", spec.task, "demo", None, state, "workspace", 0, None,
             spec.model_dump_json(), ms, ms))


def insert_run(run_id: str, session_id: str, attempt: int = 1) -> Statement:
    return ("INSERT INTO runs (id, session_id, attempt, runtime, model, started_ms)"
            " VALUES (?,?,?,?,?,?)", (run_id, session_id, attempt, "demo", None, now_ms()))


def query(path: Path, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Read through a separate, plain sqlite3 connection (another 'process')."""
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql, params).fetchall()


@pytest.fixture
def db_path(relay_home: Path) -> Path:
    return relay_home / "relay.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(db_path)
    yield s
    await s.close()


@pytest.fixture
def bus() -> EventBus:
    return EventBus()


@pytest.fixture
async def writer(store: Store, bus: EventBus) -> AsyncIterator[EventWriter]:
    w = EventWriter(store, bus)
    w.start()
    yield w
    await w.close()


async def new_session(writer: EventWriter, session_id: str, run_id: str | None = None,
                      ms: int | None = None) -> None:
    statements = [insert_session(session_id, ms=ms)]
    if run_id:
        statements.append(insert_run(run_id, session_id))
    await writer.write(WriteOp(session_id, statements=statements))


# -- opening and migrations -------------------------------------------------------------


async def test_new_database_uses_wal_and_records_every_migration(store: Store,
                                                                 db_path: Path) -> None:
    assert db_path.is_file()
    async with store.conn.execute("PRAGMA journal_mode") as cur:
        assert (await cur.fetchone()) == ("wal",)
    assert query(db_path, "PRAGMA journal_mode") == [("wal",)]  # persistent, not per-connection
    versions = [v for (v,) in query(db_path, "SELECT version FROM schema_version ORDER BY version")]
    assert versions == sorted(MIGRATIONS) == list(range(1, LATEST + 1))
    assert await store.schema_version() == LATEST
    tables = {name for (name,) in query(db_path, "SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"sessions", "runs", "events", "schema_version"} <= tables
    async with store.conn.execute("PRAGMA foreign_keys") as cur:
        assert (await cur.fetchone()) == (1,)


async def test_reopening_does_not_rerun_migrations(db_path: Path) -> None:
    first = await Store.open(db_path)
    await first.conn.execute(*insert_session("kept"))
    await first.close()
    rows_before = query(db_path, "SELECT version, applied_ms FROM schema_version ORDER BY version")

    second = await Store.open(db_path)
    try:
        assert await second.schema_version() == LATEST
        assert (await second.sessions.get("kept")).id == "kept"  # data survived
    finally:
        await second.close()
    assert query(db_path, "SELECT version, applied_ms FROM schema_version ORDER BY version") \
        == rows_before
    assert len(rows_before) == LATEST


async def test_database_from_a_newer_build_is_refused(db_path: Path) -> None:
    s = await Store.open(db_path)
    await s.close()
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute("INSERT INTO schema_version VALUES (?, ?)", (LATEST + 1, now_ms()))
        conn.commit()

    with pytest.raises(SchemaTooNewError) as info:
        await Store.open(db_path)
    err = info.value
    assert isinstance(err, StoreError)
    assert "newer" in err.message
    assert f"schema {LATEST + 1}" in err.message
    assert f"up to {LATEST}" in err.message
    assert str(db_path) in err.message
    assert err.hint is not None
    assert "Update Relay" in err.hint
    assert "RELAY_HOME" in err.hint
    # Nothing was touched: no migration ran, the version is still the newer one.
    assert query(db_path, "SELECT max(version) FROM schema_version") == [(LATEST + 1,)]


@pytest.mark.parametrize("content", [b"hello, I am not a database", b"\x00\x01garbage" * 500],
                         ids=["short-text", "binary"])
async def test_non_database_file_is_a_store_error(db_path: Path, content: bytes) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    db_path.write_bytes(content)
    with pytest.raises(StoreError) as info:
        await Store.open(db_path)
    assert str(db_path) in info.value.message
    assert "not a usable Relay database" in info.value.message
    assert info.value.hint is not None
    assert "move it aside" in info.value.hint.lower()
    assert "restore" in info.value.hint.lower()
    assert db_path.read_bytes() == content  # left alone


async def test_path_that_cannot_be_created_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError) as info:
        await Store.open(blocker / "relay.db")
    assert "Cannot open the database" in info.value.message
    assert info.value.hint is not None
    assert "RELAY_HOME" in info.value.hint


async def test_foreign_sqlite_database_is_a_store_error(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute("CREATE TABLE sessions (something_else TEXT)")
        conn.commit()
    with pytest.raises(StoreError):
        await Store.open(db_path)


async def test_two_processes_migrating_a_new_database_at_once(db_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process finishes migrating between our version check and our BEGIN."""
    original = Store.schema_version
    raced = False

    async def racing(self: Store) -> int:
        nonlocal raced
        version = await original(self)
        if not raced:
            raced = True
            other = await Store.open(db_path)  # the other process wins the race
            await other.close()
        return version

    monkeypatch.setattr(Store, "schema_version", racing)
    s = await Store.open(db_path)
    try:
        assert await original(s) == LATEST
    finally:
        await s.close()
    assert len(query(db_path, "SELECT version FROM schema_version")) == LATEST


# -- the writer: ids ---------------------------------------------------------------------


async def test_event_ids_are_monotonic_across_batches(store: Store, bus: EventBus,
                                                      db_path: Path) -> None:
    w = EventWriter(store, bus)
    batches: list[list[int]] = []
    bus.add_listener(lambda records: batches.append([r.id for r in records]))
    # First batch: queued before the writer runs, so they commit together.
    for i in range(5):
        await w.submit(WriteOp("s", None, Notice(message=f"a{i}")))
    w.start()
    await w.flush()
    # Then one commit per write.
    singles = [await w.write(WriteOp("s", None, Notice(message=f"b{i}"))) for i in range(3)]
    await w.close()

    assert batches[0] == [1, 2, 3, 4, 5]
    assert [r.id for r in singles if r] == [6, 7, 8]
    assert batches[1:] == [[6], [7], [8]]
    rows = query(db_path, "SELECT id, payload FROM events ORDER BY id")
    assert [r[0] for r in rows] == list(range(1, 9))
    assert [parse_event(r[1]).message for r in rows] == [  # type: ignore[union-attr]
        "a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2"]
    assert await store.last_event_id() == 8


async def test_two_store_connections_allocate_unique_increasing_ids(db_path: Path) -> None:
    stores = [await Store.open(db_path), await Store.open(db_path)]
    buses = [EventBus(), EventBus()]
    commits: list[tuple[int, list[int]]] = []  # (writer, ids of one commit)

    def recorder(n: int) -> Callable[[Sequence[EventRecord]], None]:
        return lambda records: commits.append((n, [r.id for r in records]))

    for n, b in enumerate(buses):
        b.add_listener(recorder(n))
    writers = [EventWriter(s, b) for s, b in zip(stores, buses, strict=True)]
    for w in writers:
        w.start()

    returned: dict[int, list[EventRecord]] = {0: [], 1: []}

    async def produce(n: int) -> None:
        for i in range(40):
            if i % 4 == 3:  # a mix of single commits and small batches
                for j in range(3):
                    await writers[n].submit(WriteOp(f"s{n}", None, Notice(message=f"{n}:{i}:{j}")))
                await writers[n].flush()
            else:
                rec = await writers[n].write(WriteOp(f"s{n}", None, Notice(message=f"{n}:{i}")))
                assert rec is not None
                returned[n].append(rec)

    try:
        # Lock-step first: commits alternate between the two connections, deterministically.
        for i in range(6):
            for n in (0, 1):
                rec = await writers[n].write(WriteOp(f"s{n}", None, Notice(message=f"{n}:step{i}")))
                assert rec is not None
                returned[n].append(rec)
        # Then both at once, contending for the write lock.
        await asyncio.gather(produce(0), produce(1))
    finally:
        for w in writers:
            await w.close()
        for s in stores:
            await s.close()

    rows = query(db_path, "SELECT id, session_id, payload FROM events ORDER BY id")
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)) == 2 * (6 + 30 + 10 * 3)
    assert ids == list(range(1, len(ids) + 1))
    # The lock-step phase: ids 1..12 alternate between the two connections.
    owners = [int(r[1][1]) for r in rows]
    assert owners[:12] == [0, 1] * 6
    assert {n for n, _ in commits} == {0, 1}
    # Each commit got a contiguous range above everything committed before it.
    seen = sorted(commits, key=lambda c: c[1][0])
    flat = [i for _, c in seen for i in c]
    assert flat == ids
    for _, c in seen:
        assert c == list(range(c[0], c[0] + len(c)))
    # The id a writer returned is the row that holds its event.
    payload_by_id = {r[0]: parse_event(r[2]) for r in rows}
    for n in (0, 1):
        got = [r.id for r in returned[n]]
        assert got == sorted(got)
        for rec in returned[n]:
            assert payload_by_id[rec.id] == rec.event
            assert rec.session_id == f"s{n}"


# -- the writer: derived state, atomicity ------------------------------------------------


async def test_state_changed_updates_the_session_row(writer: EventWriter, store: Store,
                                                     db_path: Path) -> None:
    await new_session(writer, "s1", ms=1)
    await new_session(writer, "s2", ms=1)
    rec = await writer.write(WriteOp("s1", None, StateChanged(state="running", reason="go")))
    assert rec is not None
    assert rec.id >= 1
    rows = dict((r[0], r[1:]) for r in
                 query(db_path, "SELECT id, state, reason, updated_ms FROM sessions"))
    assert rows["s1"][:2] == ("running", "go")
    assert rows["s1"][2] > 1          # updated_ms touched by the event
    assert rows["s2"] == ("pending", None, 1)  # other sessions untouched
    assert (await store.sessions.get("s1")).state == "running"


async def test_session_started_and_ended_update_session_and_run(writer: EventWriter,
                                                                store: Store) -> None:
    await new_session(writer, "s1", "r1")
    await writer.write(WriteOp("s1", "r1", SessionStarted(agent_session_id="agent-7",
                                                          model="m-1")))
    await writer.write(WriteOp("s1", "r1", SessionEnded(outcome="failed", exit_code=4)))
    session = await store.sessions.get("s1")
    assert session.agent_session_id == "agent-7"
    [run] = await store.sessions.runs("s1")
    assert run.model == "m-1"
    assert run.outcome == "failed"
    assert run.exit_code == 4
    assert run.ended_at is not None
    assert run.ended_at >= run.started_at


async def test_failed_batch_commits_nothing_and_reports_failure(store: Store, bus: EventBus,
                                                                db_path: Path) -> None:
    setup = EventWriter(store, bus)
    setup.start()
    await new_session(setup, "s1")
    await setup.write(WriteOp("s1", None, StateChanged(state="running")))
    await setup.close()
    before_events = query(db_path, "SELECT id, kind FROM events ORDER BY id")
    before_session = query(db_path, "SELECT state, reason, updated_ms FROM sessions")

    published: list[Sequence[EventRecord]] = []
    bus.add_listener(published.append)
    w = EventWriter(store, bus)
    loop = asyncio.get_running_loop()
    ops = [
        WriteOp("s1", None, StateChanged(state="failed", reason="boom"), done=loop.create_future()),
        WriteOp("s1", None, Notice(message="before the bad statement"), done=loop.create_future()),
        WriteOp("s1", statements=[("INSERT INTO no_such_table VALUES (?)", (1,))],
                done=loop.create_future()),
        WriteOp("s1", None, Notice(message="after the bad statement"), done=loop.create_future()),
    ]
    for op in ops:  # queued before the writer runs: one batch, one transaction
        await w.submit(op)
    w.start()
    for op in ops:
        assert op.done is not None
        with pytest.raises(StoreError) as info:
            await op.done
        assert "no_such_table" in info.value.message
    assert isinstance(w.failure, StoreError)
    with pytest.raises(StoreError):
        await w.submit(WriteOp("s1", None, Notice(message="later")))
    await w.close()

    assert query(db_path, "SELECT id, kind FROM events ORDER BY id") == before_events
    assert query(db_path, "SELECT state, reason, updated_ms FROM sessions") == before_session
    assert query(db_path, "SELECT state FROM sessions") == [("running",)]
    assert published == []
    # The connection is usable again (the transaction was rolled back, not left open).
    assert not store.conn.in_transaction
    await store.conn.execute(*insert_session("s2"))
    assert (await store.sessions.get("s2")).state == "pending"


async def test_disk_full_maps_to_store_error_with_free_space_hint(writer: EventWriter,
                                                                  store: Store,
                                                                  db_path: Path) -> None:
    await writer.write(WriteOp("s1", None, Notice(message="small")))
    async with store.conn.execute("PRAGMA page_count") as cur:
        row = await cur.fetchone()
    assert row is not None
    await store.conn.execute(f"PRAGMA max_page_count={row[0]}")
    with pytest.raises(StoreError) as info:
        await writer.write(WriteOp("s1", None, Notice(message="x" * 200_000)))
    assert "full" in info.value.message
    assert info.value.hint is not None
    assert "Free disk space" in info.value.hint
    assert writer.failure is info.value
    assert not store.conn.in_transaction
    assert [k for (k,) in query(db_path, "SELECT kind FROM events")] == ["notice"]


# -- usage -------------------------------------------------------------------------------


async def test_turn_usage_accumulates_and_unknown_stays_null(writer: EventWriter,
                                                             store: Store,
                                                             db_path: Path) -> None:
    await new_session(writer, "s1", "r1")
    await writer.write(WriteOp("s1", None, statements=[insert_run("r2", "s1", attempt=2)]))
    await new_session(writer, "quiet", "r3")

    await writer.write(WriteOp("s1", "r1", TurnCompleted(
        usage=Usage(input_tokens=10, output_tokens=5, cost_usd=0.25))))
    await writer.write(WriteOp("s1", "r1", TurnCompleted(
        usage=Usage(input_tokens=3, cache_read_tokens=7, output_tokens=0))))
    await writer.write(WriteOp("s1", "r1", TurnCompleted(usage=Usage())))  # unknown: no change
    await writer.write(WriteOp("s1", "r2", TurnCompleted(usage=Usage(input_tokens=100))))
    await writer.write(WriteOp("quiet", "r3", TurnCompleted()))

    r1, r2 = await store.sessions.runs("s1")
    assert (r1.attempt, r2.attempt) == (1, 2)
    assert r1.usage == Usage(input_tokens=13, output_tokens=5, cache_read_tokens=7,
                             cache_write_tokens=None, reasoning_tokens=None, cost_usd=0.25)
    assert r2.usage == Usage(input_tokens=100)
    raw = query(db_path, "SELECT cache_write_tokens, reasoning_tokens, output_tokens, cost_usd"
                         " FROM runs WHERE id='r2'")
    assert raw == [(None, None, None, None)]  # NULL in the table, not 0

    session = await store.sessions.get("s1")
    assert session.usage == Usage(input_tokens=113, output_tokens=5, cache_read_tokens=7,
                                  cost_usd=0.25)
    [quiet_run] = await store.sessions.runs("quiet")
    assert quiet_run.usage == Usage()
    assert quiet_run.usage.is_unknown
    listed = {s.id: s for s in await store.sessions.recent()}
    assert listed["quiet"].usage == Usage()
    assert listed["s1"].usage == session.usage


async def test_refused_tool_calls_are_counted_per_run_and_summed_per_session(
        writer: EventWriter, store: Store) -> None:
    await new_session(writer, "s1", "r1")
    await writer.write(WriteOp("s1", None, statements=[insert_run("r2", "s1", attempt=2)]))
    await new_session(writer, "clean", "r3")
    for run_id in ("r1", "r2", "r2"):
        await writer.write(WriteOp("s1", run_id, PermissionDenied(tool="run_shell_command")))
    await writer.write(WriteOp("s1", None, PermissionDenied(tool="x")))  # no run: not counted
    r1, r2 = await store.sessions.runs("s1")
    assert (r1.refused_calls, r2.refused_calls) == (1, 2)
    assert (await store.sessions.get("s1")).refused_calls == 3
    assert await store.sessions.refused_calls("s1") == 3
    listed = {s.id: s.refused_calls for s in await store.sessions.recent()}
    assert listed == {"s1": 3, "clean": 0}


async def test_session_without_runs_has_unknown_usage(writer: EventWriter, store: Store) -> None:
    await new_session(writer, "empty")
    [row] = await store.sessions.recent()
    assert row.usage == Usage()
    assert await store.sessions.runs("empty") == []


# -- publish after commit ---------------------------------------------------------------


async def test_bus_is_told_only_after_commit(writer: EventWriter, bus: EventBus,
                                             db_path: Path) -> None:
    await new_session(writer, "s1")
    seen: list[tuple[list[int], list[tuple[Any, ...]]]] = []

    def listener(records: Sequence[EventRecord]) -> None:
        ids = [r.id for r in records]
        marks = ",".join("?" * len(ids))
        # A second connection must already see the rows and the state change.
        rows = query(db_path, f"SELECT id, kind FROM events WHERE id IN ({marks}) ORDER BY id", ids)
        state = query(db_path, "SELECT state FROM sessions WHERE id='s1'")
        seen.append((ids, rows + state))

    bus.add_listener(listener)
    sub = bus.subscribe("s1")
    rec = await writer.write(WriteOp("s1", None, StateChanged(state="running")))
    assert rec is not None
    assert seen == [([rec.id], [(rec.id, "state_changed"), ("running",)])]
    got = await asyncio.wait_for(anext(aiter(sub)), 5)
    assert got == rec
    sub.close()


async def test_statement_only_ops_publish_nothing(writer: EventWriter, bus: EventBus) -> None:
    calls: list[Sequence[EventRecord]] = []
    bus.add_listener(calls.append)
    assert await writer.write(WriteOp("s1", statements=[insert_session("s1")])) is None
    await writer.flush()
    assert calls == []
    await writer.write(WriteOp("s1", None, Notice(message="now")))
    assert len(calls) == 1


# -- tailing -------------------------------------------------------------------------------


async def test_events_after_tails_by_id_and_marks_replay(writer: EventWriter,
                                                         store: Store) -> None:
    originals: list[tuple[str, AgentEvent]] = [
        ("a", AssistantText(text="one", runtime="demo")),
        ("b", Notice(message="two")),
        ("a", TurnCompleted(usage=Usage(input_tokens=1))),
        ("b", StateChanged(state="running")),
        ("a", Notice(message="five", category="retry")),
    ]
    records = [await writer.write(WriteOp(sid, "run-" + sid, ev)) for sid, ev in originals]
    ids = [r.id for r in records if r]
    assert len(ids) == 5

    everything = await store.events_after(0)
    assert [r.id for r in everything] == ids
    assert all(r.event.replay for r in everything)
    for rec, (sid, ev) in zip(everything, originals, strict=True):
        assert rec.session_id == sid
        assert rec.run_id == "run-" + sid
        assert rec.event == ev.model_copy(update={"replay": True})

    assert [r.id for r in await store.events_after(ids[1])] == ids[2:]
    assert [r.id for r in await store.events_after(ids[1], session_id="a")] == [ids[2], ids[4]]
    assert [r.id for r in await store.events_after(0, limit=2)] == ids[:2]
    assert await store.events_after(ids[-1]) == []
    live = await store.events_after(0, replay=False)
    assert not any(r.event.replay for r in live)
    assert [r.event for r in live] == [ev for _, ev in originals]


async def test_replayed_records_are_never_published(writer: EventWriter, store: Store,
                                                    bus: EventBus) -> None:
    await writer.write(WriteOp("s1", None, Notice(message="stored")))
    calls: list[Sequence[EventRecord]] = []
    bus.add_listener(calls.append)
    sub = bus.subscribe()
    replayed = await store.events_after(0)
    assert replayed
    assert all(r.event.replay for r in replayed)
    bus.publish(replayed)
    assert calls == []
    # Written with replay=True (e.g. copied from history): stored, not announced.
    await writer.write(WriteOp("s1", None, Notice(message="old", replay=True)))
    assert calls == []
    live = await writer.write(WriteOp("s1", None, Notice(message="live")))
    assert calls == [[live]]
    first = await asyncio.wait_for(anext(aiter(sub)), 5)
    assert first == live  # nothing replayed was queued before it
    sub.close()


# -- queries ---------------------------------------------------------------------------


async def test_get_session_by_prefix_and_errors(writer: EventWriter, store: Store) -> None:
    await new_session(writer, "abc123")
    await new_session(writer, "abd456")
    assert (await store.sessions.get("abc")).id == "abc123"
    assert (await store.sessions.get("abd456")).id == "abd456"
    with pytest.raises(SessionNotFoundError, match="ambiguous"):
        await store.sessions.get("ab")
    with pytest.raises(SessionNotFoundError, match="No session"):
        await store.sessions.get("zzz")
    spec = await store.sessions.spec("abc123")
    assert spec.task == "task of abc123"
    with pytest.raises(SessionNotFoundError):
        await store.sessions.spec("zzz")
