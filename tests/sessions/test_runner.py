"""The engine and session runner, end to end with the demo runtime (real git, real SQLite)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pygit2
import pytest

from relay.core.config import load_config
from relay.core.errors import (
    SessionNotFoundError,
    StoreError,
    TaskTooLargeError,
    UnknownRuntimeError,
    WorktreeError,
)
from relay.core.events import EventRecord
from relay.core.models import MAX_TASK_BYTES, SessionSpec
from relay.engine.engine import Engine
from relay.runtimes.demo import NOTES_FILE


@pytest.fixture
async def engine(relay_home: Path) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


async def test_demo_session_runs_in_its_own_worktree(engine: Engine, git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="write notes"))
    assert row.state == "completed"
    assert row.simulated
    assert row.branch == f"relay/{row.id}"
    workdir = Path(row.workdir or "")
    assert workdir.parent == engine.config.worktrees_dir
    assert "write notes" in (workdir / NOTES_FILE).read_text()
    assert not (git_repo / NOTES_FILE).exists(), "the user's checkout must stay untouched"
    repo = pygit2.Repository(str(git_repo))
    assert f"relay/{row.id}" in repo.branches.local


async def test_every_event_of_a_demo_session_is_labelled_simulated(engine: Engine,
                                                                    git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    records = await engine.session_events(row.id)
    assert records
    assert all(r.event.simulated for r in records)
    assert all(r.event.replay for r in records)


async def test_usage_is_summed_per_run_and_session(engine: Engine, git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    records = await engine.session_events(row.id)
    turns = [r.event for r in records if r.event.kind == "turn_completed"]
    expected_in = sum(t.usage.input_tokens or 0 for t in turns)
    expected_cost = sum(t.usage.cost_usd or 0 for t in turns)
    assert row.usage.input_tokens == expected_in
    assert row.usage.cost_usd == pytest.approx(expected_cost)
    assert row.usage.reasoning_tokens is None  # the demo never reports it: unknown, not 0
    runs = await engine.runs(row.id)
    assert [r.attempt for r in runs] == [1]
    assert runs[0].outcome == "completed"


async def test_event_ids_are_monotonic_and_states_in_order(engine: Engine, git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    records = await engine.session_events(row.id)
    ids = [r.id for r in records]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    states = [r.event.state for r in records if r.event.kind == "state_changed"]
    assert states == ["pending", "starting", "running", "completed"]
    ended = [r for r in records if r.event.kind == "session_ended"]
    assert len(ended) == 1


async def test_simulated_usage_limit_fails_with_reason(engine: Engine, git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t", demo_limit_after=1))
    assert row.state == "failed"
    assert row.reason is not None
    assert row.reason.startswith("simulated usage limit — usage limit reached; it resets at ")
    kinds = [r.event.kind for r in await engine.session_events(row.id)]
    assert "limit_hit" in kinds


async def test_bus_delivers_live_records_after_commit(engine: Engine, git_repo: Path) -> None:
    seen: list[EventRecord] = []
    engine.bus.add_listener(seen.extend)
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    stored = await engine.session_events(row.id)
    assert [r.id for r in seen] == [r.id for r in stored]
    assert not any(r.event.replay for r in seen)


async def test_cancel_stops_a_running_session(relay_home: Path, git_repo: Path) -> None:
    eng = await Engine.open(load_config(demo_step_delay=30))
    try:
        sub = eng.bus.subscribe()
        session_id = await eng.start_session(SessionSpec(repo=git_repo, task="t"))
        async for record in sub:
            if record.event.kind == "assistant_text":
                break
        await eng.cancel_session(session_id)
        row = await eng.wait_session(session_id)
        assert row.state == "cancelled"
        runs = await eng.runs(session_id)
        assert runs[0].outcome == "cancelled"
    finally:
        await eng.close()


async def test_closing_the_engine_interrupts_and_history_survives(relay_home: Path,
                                                                  git_repo: Path) -> None:
    eng = await Engine.open(load_config(demo_step_delay=30))
    sub = eng.bus.subscribe()
    session_id = await eng.start_session(SessionSpec(repo=git_repo, task="t"))
    async for record in sub:
        if record.event.kind == "assistant_text":
            break
    await eng.close()
    again = await Engine.open(load_config())
    try:
        row = await again.get_session(session_id)
        assert row.state == "interrupted"
        kinds = [r.event.kind for r in await again.session_events(session_id)]
        assert "assistant_text" in kinds
        assert kinds[-1] == "state_changed"
    finally:
        await again.close()


async def test_orphaned_session_of_a_dead_process_is_marked_interrupted(relay_home: Path,
                                                                        git_repo: Path) -> None:
    eng = await Engine.open(load_config(demo_step_delay=0))
    row = await eng.run_session(SessionSpec(repo=git_repo, task="t"))
    # Pretend the session was left running by a process that no longer exists.
    await eng.store.conn.execute("UPDATE sessions SET state='running', owner_pid=? WHERE id=?",
                                 (2**22 + 12345, row.id))
    await eng.close()
    again = await Engine.open(load_config())
    try:
        recovered = await again.get_session(row.id)
        assert recovered.state == "interrupted"
        assert "stopped" in (recovered.reason or "")
    finally:
        await again.close()


async def test_no_worktree_runs_in_place(engine: Engine, git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t", worktree=False))
    assert row.state == "completed"
    assert Path(row.workdir or "") == git_repo.resolve()
    assert row.branch is None
    assert (git_repo / NOTES_FILE).exists()


async def test_not_a_repository_is_refused_before_a_session_exists(engine: Engine,
                                                                   tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorktreeError, match="not a git repository") as info:
        await engine.start_session(SessionSpec(repo=plain, task="t"))
    assert "--no-worktree" in (info.value.hint or "")
    assert await engine.list_sessions() == []


async def test_a_task_over_the_size_limit_is_refused_before_a_session_exists(
        engine: Engine, git_repo: Path) -> None:
    with pytest.raises(TaskTooLargeError) as info:
        await engine.start_session(SessionSpec(repo=git_repo, task="x" * (MAX_TASK_BYTES + 1)))
    assert info.value.message == (f"The task is {MAX_TASK_BYTES + 1:,} bytes; a task is at most"
                                  f" {MAX_TASK_BYTES:,} (1 MB).")
    assert "file in the repository" in (info.value.hint or "")
    with pytest.raises(TaskTooLargeError):  # bytes, not characters
        SessionSpec(repo=git_repo, task="é" * (MAX_TASK_BYTES // 2 + 1))
    assert await engine.list_sessions() == []
    assert len(SessionSpec(repo=git_repo, task="x" * MAX_TASK_BYTES).task) == MAX_TASK_BYTES
    done = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    with pytest.raises(TaskTooLargeError, match=r"^The prompt is"):  # a follow-up prompt too
        await engine.continue_session(done.id, "y" * (MAX_TASK_BYTES + 1))


async def test_setup_command_runs_in_the_new_worktree(engine: Engine, git_repo: Path) -> None:
    spec = SessionSpec(repo=git_repo, task="t", setup_command=["git", "status", "--short"])
    row = await engine.run_session(spec)
    assert row.state == "completed"
    failing = SessionSpec(repo=git_repo, task="t", setup_command=["false"])
    row = await engine.run_session(failing)
    assert row.state == "failed"
    assert "Setup command failed" in (row.reason or "")


async def test_bad_requests_are_refused_before_a_session_exists(engine: Engine,
                                                                tmp_path: Path) -> None:
    with pytest.raises(UnknownRuntimeError):
        await engine.start_session(SessionSpec(repo=tmp_path, task="t", runtime="nope"))
    with pytest.raises(WorktreeError):
        await engine.start_session(SessionSpec(repo=tmp_path / "missing", task="t"))
    assert await engine.list_sessions() == []


async def test_two_sessions_run_concurrently(engine: Engine, git_repo: Path) -> None:
    a, b = await asyncio.gather(engine.run_session(SessionSpec(repo=git_repo, task="a")),
                                engine.run_session(SessionSpec(repo=git_repo, task="b")))
    assert a.state == b.state == "completed"
    assert a.workdir != b.workdir


async def test_continue_session_resumes_in_the_same_worktree(engine: Engine, git_repo: Path) -> None:
    first = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    again = await engine.wait_session(await engine.continue_session(first.id, "and now the tests"))
    assert again.id == first.id
    assert again.state == "completed"
    assert again.workdir == first.workdir
    runs = await engine.runs(first.id)
    assert [r.attempt for r in runs] == [1, 2]
    assert runs[1].agent_session_id == runs[0].agent_session_id
    assert again.usage.input_tokens == sum(r.usage.input_tokens or 0 for r in runs)


async def test_continue_without_a_conversation_starts_from_relays_brief(
        engine: Engine, git_repo: Path, tmp_path: Path) -> None:
    failed = await engine.run_session(SessionSpec(repo=git_repo, task="t",  # never got an agent
                                                  setup_command=["false"]))
    assert failed.state == "failed"
    assert failed.agent_session_id is None
    await engine.continue_session(failed.id, "more")  # nothing to resume: a run with the brief
    with pytest.raises(SessionNotFoundError, match="still"):
        await engine.continue_session(failed.id, "again")  # it runs now
    row = await engine.wait_session(failed.id)
    assert row.state == "completed", row.reason
    assert len(await engine.runs(failed.id)) == 1


async def test_stop_before_the_agent_started_really_stops(engine: Engine, git_repo: Path) -> None:
    session_id = await engine.start_session(SessionSpec(repo=git_repo, task="t"))
    await engine.cancel_session(session_id)  # the runner has not created its adapter yet
    row = await engine.wait_session(session_id)
    assert row.state == "cancelled"
    kinds = [r.event.kind for r in await engine.session_events(session_id)]
    assert "assistant_text" not in kinds
    assert not (Path(row.workdir or "/nonexistent") / NOTES_FILE).exists()


async def test_a_full_disk_stops_the_session_with_a_clear_error(
        relay_home: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills up mid-session: the writer's next commit fails with the full-disk
    error (how SQLite's SQLITE_FULL becomes that error: tests/core/test_store.py, and on a
    real full tmpfs: benchmarks/faults/disk_full), and the session stops with it."""
    from relay.core.store.faults import disk_full_error
    from relay.core.store.writer import EventWriter

    full = asyncio.Event()
    commit = EventWriter._commit

    async def commit_unless_full(self: EventWriter, batch: list[Any]) -> list[Any]:
        if full.is_set():
            raise disk_full_error(self.store.path, "the database cannot be written")
        return await commit(self, batch)

    monkeypatch.setattr(EventWriter, "_commit", commit_unless_full)
    eng = await Engine.open(load_config(demo_step_delay=0.05))
    try:
        sub = eng.bus.subscribe()
        session_id = await eng.start_session(SessionSpec(repo=git_repo, task="t"))
        async for record in sub:
            if record.event.kind == "session_started":
                break
        full.set()
        with pytest.raises(StoreError, match="is full") as info:
            await eng.wait_session(session_id)
        assert info.value.hint is not None
        assert "Free disk space" in info.value.hint
        assert not eng.is_running_here(session_id)
    finally:
        full.clear()
        await eng.close()
