"""The sessions and runs tables' repository, and relay-cli's quick read of the same rows."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from relay.core.bus import EventBus
from relay.core.errors import SessionNotFoundError, TaskTooLargeError
from relay.core.events import PermissionDenied, SessionEnded, StateChanged, TurnCompleted, Usage
from relay.core.models import MAX_TASK_BYTES, SessionSpec
from relay.core.store.db import Store
from relay.core.store.sessions_quick import quick_sessions
from relay.core.store.sessions_repo import SessionsRepo
from relay.core.store.sql import MAX_ID_LENGTH
from relay.core.store.writer import EventWriter, WriteOp


@pytest.fixture
async def db(relay_home: Path) -> AsyncIterator[tuple[Store, EventWriter]]:
    store = await Store.open(relay_home / "relay.db")
    writer = EventWriter(store, EventBus())
    writer.start()
    yield store, writer
    await writer.close()
    await store.close()


async def add_session(writer: EventWriter, session_id: str, task: str, *,
                      runs: tuple[tuple[str, Usage], ...] = (), refused: int = 0,
                      final: bool = True) -> None:
    spec = SessionSpec(repo=Path("/tmp/project"), task=task)
    await writer.write(WriteOp(session_id, None, StateChanged(state="pending"), statements=[
        SessionsRepo.insert(session_id, spec, simulated=session_id == "sim",
                            owner_pid=os.getpid())]))
    for run_id, usage in runs:
        await writer.write(WriteOp(session_id, statements=[
            SessionsRepo.insert_run(run_id, session_id, "demo", "demo", None)]))
        await writer.write(WriteOp(session_id, run_id, TurnCompleted(usage=usage)))
        await writer.write(WriteOp(session_id, run_id, SessionEnded(outcome="completed")))
    for _ in range(refused):
        await writer.write(WriteOp(session_id, runs[0][0], PermissionDenied(tool="shell")))
    if final:
        await writer.write(WriteOp(session_id, None, StateChanged(state="completed")))
    await asyncio.sleep(0.003)  # the next session is changed later: the order is certain


async def test_the_quick_read_and_the_store_give_the_same_rows(
        db: tuple[Store, EventWriter], relay_home: Path) -> None:
    store, writer = db
    await add_session(writer, "two-runs", "a task", refused=2, runs=(
        ("r1", Usage(input_tokens=10, output_tokens=5, cost_usd=0.25)),
        ("r2", Usage(input_tokens=3, cache_read_tokens=7, reasoning_tokens=1))))
    await add_session(writer, "no-usage", "quiet", runs=(("r3", Usage()),))
    await add_session(writer, "no-runs", "never started", final=False)  # active, ours
    await add_session(writer, "sim", "a simulation", runs=(("r4", Usage(cost_usd=1.5)),))
    await writer.flush()

    quick = quick_sessions(relay_home / "relay.db", 3)
    stored = await store.sessions.recent(3)

    assert quick is not None
    assert [q.id for q in quick] == [s.id for s in stored] == ["sim", "no-runs", "no-usage"]
    everything = {s.id: s for s in await store.sessions.recent()}
    for q in quick_sessions(relay_home / "relay.db", 10) or []:
        s = everything.pop(q.id)
        assert (q.state, q.runtime, q.simulated, q.task, q.updated_at, q.refused_calls) == \
            (s.state, s.runtime, s.simulated, s.task, s.updated_at, s.refused_calls)
        assert vars(q.usage) == s.usage.model_dump()
        assert q.usage.is_unknown is s.usage.is_unknown
    assert everything == {}
    summed = await store.sessions.get("two")
    assert summed.usage == Usage(input_tokens=13, output_tokens=5, cache_read_tokens=7,
                                 reasoning_tokens=1, cost_usd=0.25)
    assert summed.refused_calls == 2 == await store.sessions.refused_calls("two-runs")


async def test_the_quick_read_leaves_an_orphaned_session_to_the_engine(
        db: tuple[Store, EventWriter], relay_home: Path) -> None:
    store, writer = db
    await add_session(writer, "orphan", "its Relay died", final=False)
    assert quick_sessions(relay_home / "relay.db", 10) is not None
    await writer.write(WriteOp("orphan", statements=[SessionsRepo.owned_by("orphan", 2**22 + 1)]))

    assert quick_sessions(relay_home / "relay.db", 10) is None  # the engine marks it first
    assert [a.id for a in await store.sessions.active()] == ["orphan"]
    assert (await store.sessions.active_one("orphan")) is not None
    assert quick_sessions(relay_home / "missing.db", 10) is None


async def test_a_session_prefix_is_matched_exactly_not_as_a_pattern(
        db: tuple[Store, EventWriter]) -> None:
    store, writer = db
    await add_session(writer, "abc123", "one")
    await add_session(writer, "abd_45", "two")
    await writer.flush()
    assert (await store.sessions.get("abc")).id == "abc123"
    assert (await store.sessions.get("abd_")).id == "abd_45"  # '_' is itself
    for pattern in ("%", "a%", "ab_", "_bc", "abc1%3"):  # LIKE wildcards match nothing
        with pytest.raises(SessionNotFoundError, match=r"^No (such )?session"):
            await store.sessions.get(pattern)
    with pytest.raises(SessionNotFoundError, match="ambiguous"):
        await store.sessions.get("ab")


async def test_an_id_longer_than_any_id_is_one_clear_error(
        db: tuple[Store, EventWriter]) -> None:
    store, writer = db
    await add_session(writer, "abc123", "one")
    await writer.flush()
    with pytest.raises(SessionNotFoundError) as info:
        await store.sessions.get("a" * 100_000)  # a LIKE pattern SQLite calls too complex
    assert info.value.message == (f"No such session: A session id is at most {MAX_ID_LENGTH}"
                                  " characters (this one has 100,000).")
    with pytest.raises(SessionNotFoundError, match="No session"):
        await store.sessions.get("a" * MAX_ID_LENGTH)  # the longest allowed is looked up


async def test_the_task_is_stored_once_and_older_rows_still_read(
        db: tuple[Store, EventWriter], relay_home: Path) -> None:
    store, writer = db
    task = "a long task " * 1000
    await add_session(writer, "new", task)
    await writer.flush()
    with sqlite3.connect(relay_home / "relay.db") as conn:
        stored_task, spec_json = conn.execute(
            "SELECT task, spec_json FROM sessions WHERE id='new'").fetchone()
        assert stored_task == task
        assert "a long task" not in spec_json  # one copy, in the task column
        old = SessionSpec(repo=Path("/tmp/project"), task="an older build's task")
        conn.execute("UPDATE sessions SET spec_json=? WHERE id='new'", (old.model_dump_json(),))
    assert (await store.sessions.spec("new")).task == "an older build's task"  # its own copy


async def test_a_stored_task_over_todays_limit_still_reads(
        db: tuple[Store, EventWriter], relay_home: Path) -> None:
    """The 1 MB limit is for new work: a row an older build stored with a larger task still
    opens (show, history, resume), it is not a damaged database."""
    store, writer = db
    await add_session(writer, "big", "small for now")
    await writer.flush()
    large = "x" * (MAX_TASK_BYTES + 10)
    with sqlite3.connect(relay_home / "relay.db") as conn:
        conn.execute("UPDATE sessions SET task=? WHERE id='big'", (large,))
    assert (await store.sessions.spec("big")).task == large
    with pytest.raises(TaskTooLargeError):  # while new input is still refused
        SessionSpec(repo=Path("/tmp/project"), task=large)
