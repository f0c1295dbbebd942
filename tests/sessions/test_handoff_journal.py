"""The handoff journal: durable, ordered steps that survive an engine restart."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from relay.core.bus import EventBus
from relay.core.config import load_config
from relay.core.errors import HandoffTransitionError
from relay.core.models import SessionSpec
from relay.core.store.db import Store
from relay.core.store.writer import EventWriter
from relay.engine.engine import Engine
from relay.sessions.handoff import HandoffJournal


@pytest.fixture
async def engine(relay_home: Path) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


async def a_session(engine: Engine, repo: Path) -> str:
    return (await engine.run_session(SessionSpec(repo=repo, task="t"))).id


async def test_steps_are_committed_in_order_with_their_events(engine: Engine,
                                                              git_repo: Path) -> None:
    session = await a_session(engine, git_repo)
    journal = HandoffJournal(engine.store, engine.writer)
    h = await journal.begin(session, from_run_id=None, from_entry="claude:work",
                            to_entry="codex", reason="usage_limit")
    assert h.state == "pausing"
    h = await journal.advance(h, "snapshotted", snapshot_sha="a" * 40)
    h = await journal.advance(h, "envelope_built", contract_dir="/tmp/c")
    h = await journal.advance(h, "dispatched", to_run_id="r2")
    h = await journal.advance(h, "resuming")
    h = await journal.advance(h, "done")
    assert (h.snapshot_sha, h.contract_dir, h.to_run_id) == ("a" * 40, "/tmp/c", "r2")
    assert h.finished
    steps = [r.event for r in await engine.session_events(session)
             if r.event.kind == "handoff_step"]
    assert [s.state for s in steps] == ["pausing", "snapshotted", "envelope_built",
                                        "dispatched", "resuming", "done"]
    assert all(s.handoff_id == h.id for s in steps)


async def test_a_step_cannot_be_skipped_or_repeated(engine: Engine, git_repo: Path) -> None:
    session = await a_session(engine, git_repo)
    journal = HandoffJournal(engine.store, engine.writer)
    h = await journal.begin(session, from_run_id=None, from_entry="a", to_entry="b", reason=None)
    with pytest.raises(HandoffTransitionError):
        await journal.advance(h, "dispatched")
    h = await journal.advance(h, "snapshotted")
    with pytest.raises(HandoffTransitionError):
        await journal.advance(h, "snapshotted")
    failed = await journal.advance(h, "failed", detail="snapshot could not be signed")
    assert failed.error == "snapshot could not be signed"
    with pytest.raises(HandoffTransitionError):
        await journal.advance(failed, "envelope_built")


async def test_an_unfinished_handoff_survives_a_restart(relay_home: Path, git_repo: Path) -> None:
    first = await Engine.open(load_config(demo_step_delay=0))
    session = await a_session(first, git_repo)
    journal = HandoffJournal(first.store, first.writer)
    h = await journal.begin(session, from_run_id=None, from_entry="claude:work",
                            to_entry="claude:personal", reason="usage_limit")
    await journal.advance(h, "snapshotted", snapshot_sha="b" * 40)
    await first.close()  # the engine stops between two steps

    # the journal alone (no engine recovery yet) finds it where it stopped
    store = await Store.open(load_config().db_path)
    writer = EventWriter(store, EventBus())
    writer.start()
    try:
        left = await HandoffJournal(store, writer).unfinished()
        assert [(x.id, x.state, x.snapshot_sha) for x in left] == [(h.id, "snapshotted", "b" * 40)]
    finally:
        await writer.close()
        await store.close()


async def test_a_handoff_left_behind_waits_for_a_recovering_engine(
        relay_home: Path, git_repo: Path, vault_env: None) -> None:
    first = await Engine.open(load_config(demo_step_delay=0))
    row = await first.run_session(SessionSpec(repo=git_repo, task="t", chain=["demo", "demo:b"]))
    h = await HandoffJournal(first.store, first.writer).begin(
        row.id, from_run_id=None, from_entry="demo", to_entry="demo:b", reason="usage_limit")
    await first.close()  # Relay stops right after the handoff began

    plain = await Engine.open(load_config(demo_step_delay=0))  # e.g. `relay-cli sessions`
    try:
        assert (await HandoffJournal(plain.store, plain.writer).get(h.id)).state == "pausing"
        assert plain.recovered == []
    finally:
        await plain.close()
    recovering = await Engine.open(load_config(demo_step_delay=0), recover=True)
    try:
        assert recovering.recovered == [row.id]
        final = await recovering.wait_session(row.id)
        assert final.state == "completed"
        done = await HandoffJournal(recovering.store, recovering.writer).get(h.id)
        assert done.state == "done"
    finally:
        await recovering.close()


async def test_a_crash_leaves_the_session_interrupted_and_the_handoff_as_committed(relay_home: Path,
                                                                   git_repo: Path) -> None:
    first = await Engine.open(load_config(demo_step_delay=0))
    session = await a_session(first, git_repo)
    journal = HandoffJournal(first.store, first.writer)
    h = await journal.begin(session, from_run_id=None, from_entry="a", to_entry="b", reason=None)
    await journal.advance(h, "snapshotted", snapshot_sha="c" * 40)
    # the process "dies" with the session still running
    await first.store.conn.execute("UPDATE sessions SET state='running', owner_pid=? WHERE id=?",
                                   (2**22 + 54321, session))
    await first.close()
    again = await Engine.open(load_config())
    try:
        record = await HandoffJournal(again.store, again.writer).get(h.id)
        assert record.state == "snapshotted"  # waits, as committed, for `relay-cli recover`
        assert record.snapshot_sha == "c" * 40
        assert (await again.get_session(session)).state == "interrupted"
    finally:
        await again.close()
