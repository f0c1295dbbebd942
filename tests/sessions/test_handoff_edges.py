"""Handoff edge cases: stop, a receiver that cannot start, resume after, symlinks (found in review)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.sessions import coordinator as coordinator_mod
from relay.sessions.handoff import HandoffJournal


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


def _blocking_snapshot(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """take_snapshot waits for `release`; `entered` tells the test the handoff is under way."""
    entered, release = threading.Event(), threading.Event()
    from relay.sessions import snapshot

    real = snapshot.take_snapshot

    def slow(req: object) -> object:
        entered.set()
        release.wait(10)
        return real(req)  # type: ignore[arg-type]

    monkeypatch.setattr(coordinator_mod, "take_snapshot", slow)
    return entered, release


async def test_stop_during_a_handoff_fails_the_handoff(
        engine: Engine, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user presses Stop while the snapshot/contract is being built."""
    entered, release = _blocking_snapshot(monkeypatch)
    spec = SessionSpec(repo=git_repo, task="Write the notes", chain=["demo", "demo:second"],
                       demo_limit_after=1)
    sid = await engine.start_session(spec)
    await asyncio.to_thread(entered.wait, 10)
    await engine.cancel_session(sid)
    release.set()
    row = await engine.wait_session(sid)
    assert row.state == "cancelled"
    handoffs = await HandoffJournal(engine.store, engine.writer).for_session(sid)
    # a cancelled session must not keep a handoff that claims to be in progress
    assert [h.state for h in handoffs] == ["failed"]


async def test_a_receiver_that_cannot_start_fails_the_handoff_and_its_run_ends(
        engine: Engine, git_repo: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Chain demo → codex where codex is not installed: preflight raises CliNotFoundError."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("RELAY_CODEX_BIN", raising=False)
    spec = SessionSpec(repo=git_repo, task="Write the notes", chain=["demo", "codex"],
                       demo_limit_after=1)
    row = await engine.run_session(spec)
    assert row.state == "failed"
    handoffs = await HandoffJournal(engine.store, engine.writer).for_session(row.id)
    runs = await engine.runs(row.id)
    problems = []
    if [h.state for h in handoffs] != ["failed"]:
        problems.append(f"handoff left in {[h.state for h in handoffs]}")
    if any(r.outcome is None for r in runs):
        problems.append(f"run without an end: {[(r.runtime, r.outcome) for r in runs]}")
    assert not problems, problems


async def test_resuming_after_a_handoff_does_not_pass_the_first_entrys_model(
        engine: Engine, git_repo: Path, fakes_on_path: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`--model` applies to the first chain entry only; a resume of the codex run gets it."""
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_SCENARIO", "f_usage_limit/run1_subscriber_five_hour")
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "a_text")
    spec = SessionSpec(repo=git_repo, task="Add a greeting", model="claude-opus-4-1",
                       chain=["claude", "codex"])
    row = await engine.run_session(spec)
    assert row.state == "completed", row.reason
    await engine.continue_session(row.id, "and a farewell")
    await engine.wait_session(row.id)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    codex_argvs = [c["argv"] for c in calls if Path(c["argv"][0]).name == "codex"]
    assert len(codex_argvs) == 2
    assert "claude-opus-4-1" not in codex_argvs[1], codex_argvs[1]


async def test_a_symlink_the_agent_made_does_not_fail_the_handoff(
        engine: Engine, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A committed symlink pointing outside the worktree makes file_manifest refuse the contract."""
    from relay.sessions import snapshot

    real = snapshot.take_snapshot

    def with_symlink(req: object) -> object:
        (req.worktree / "hosts-link").symlink_to("/etc/hostname")  # type: ignore[attr-defined]
        return real(req)  # type: ignore[arg-type]

    monkeypatch.setattr(coordinator_mod, "take_snapshot", with_symlink)
    spec = SessionSpec(repo=git_repo, task="Write the notes", chain=["demo", "demo:second"],
                       demo_limit_after=1)
    row = await engine.run_session(spec)
    assert row.state == "completed", row.reason


def test_the_manifest_includes_files_from_the_agents_own_commits(git_repo: Path,
                                                                 tmp_path: Path) -> None:
    import pygit2

    from relay.sessions.briefing import changed_paths
    from relay.sessions.snapshot import SnapshotRequest, take_snapshot
    from relay.sessions.worktree import _create

    ws = _create(git_repo, tmp_path / "worktrees", "s9").path
    repo = pygit2.Repository(str(ws))
    (ws / "early.txt").write_text("committed by the agent\n")
    repo.index.add("early.txt")
    repo.index.write()
    sig = pygit2.Signature("Agent", "agent@example.invalid")
    repo.create_commit("HEAD", sig, sig, "agent's own commit", repo.index.write_tree(),
                       [repo.head.target])
    (ws / "late.txt").write_text("left uncommitted\n")
    snap = take_snapshot(SnapshotRequest(worktree=ws, session_id="s9", handoff_id="h"))
    assert changed_paths(ws, snap.sha) == ["early.txt", "late.txt"]
