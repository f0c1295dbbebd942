"""Forks with the demo runtime (no FORK capability: the signed brief carries the work):
the point resolves to the right snapshot and turns, the fork has its own branch, the
original is untouched, bad points are refused."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from relay.core.errors import RelayError
from relay.core.events import EventRecord
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.history.present import timeline_lines


async def four_turns(engine: Engine, repo: Path) -> str:
    """A demo session of four user turns (a run and three follow-ups), one commit each."""
    row = await engine.run_session(SessionSpec(repo=repo, task="write the notes", runtime="demo"))
    for n in (2, 3, 4):
        await engine.continue_session(row.id, f"follow-up {n}")
        row = await engine.wait_session(row.id)
        assert row.state == "completed", row.reason
    return row.id


async def turn_ends(engine: Engine, session_id: str) -> list[EventRecord]:
    return [r for r in await engine.session_events(session_id)
            if r.event.kind == "turn_completed" and r.event.result_text is not None]


def branch_tip(repo: Path, branch: str) -> str:
    return str(pygit2.Repository(str(repo)).branches.local[branch].target)


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.parts}


async def test_a_fork_at_turn_two_of_four_starts_at_that_snapshot(engine: Engine, git_repo: Path,
                                                                  relay_home: Path) -> None:
    parent = await four_turns(engine, git_repo)
    ends = await turn_ends(engine, parent)
    runs = await engine.runs(parent)
    line = await engine.history.timeline(parent)
    assert len(ends) == 4
    assert len(runs) == 4
    commit_of = {c.run_id: c.sha for c in line.commits}
    row = await engine.get_session(parent)
    assert row.workdir
    assert row.branch
    before = (branch_tip(git_repo, row.branch), files(Path(row.workdir)),
              len(await engine.session_events(parent)), await engine.runs(parent), row.state)

    result = await engine.talk.fork(parent, at_event=ends[1].id)

    assert (result.parent_id, result.how, result.turns) == (parent, "brief", 2)
    assert result.sha == commit_of[runs[1].id]
    assert result.branch == f"relay/{result.session_id}"
    fork = await engine.wait_session(result.session_id)
    assert fork.state == "completed", fork.reason
    assert fork.branch == result.branch
    assert fork.workdir != row.workdir
    base_sha, _ = await engine.store.sessions.base_of(fork.id)
    assert base_sha == result.sha  # its own branch, from the turn-2 snapshot
    spec = await engine.session_spec(fork.id)
    assert spec.fork_of is not None
    assert (spec.fork_of.session_id, spec.fork_of.at_event, spec.fork_of.turns,
            spec.fork_of.how) == (parent, ends[1].id, 2, "brief")
    assert "write the notes" in spec.task
    assert result.sha[:10] in spec.task
    # the first run was told Relay's signed brief of the parent up to there
    briefs = list((relay_home / "forks" / fork.id).glob("*/brief.md"))
    assert len(briefs) == 1
    brief = briefs[0].read_text()
    assert result.sha in brief
    assert "fork of the earlier session" in brief
    # the original is untouched
    row_after = await engine.get_session(parent)
    assert (branch_tip(git_repo, row.branch), files(Path(row.workdir)),
            len(await engine.session_events(parent)), await engine.runs(parent),
            row_after.state) == before


async def test_a_row_inside_a_turn_forks_after_the_turns_done_before_it(
        engine: Engine, git_repo: Path) -> None:
    parent = await four_turns(engine, git_repo)
    runs = await engine.runs(parent)
    commit_of = {c.run_id: c.sha for c in (await engine.history.timeline(parent)).commits}
    mid = next(r for r in await engine.session_events(parent)
               if r.run_id == runs[2].id and r.event.kind == "assistant_text")

    result = await engine.talk.fork(parent, at_event=mid.id, prompt="try another way")

    assert (result.turns, result.sha) == (2, commit_of[runs[1].id])
    spec = await engine.session_spec(result.session_id)
    assert spec.task.startswith("try another way")
    assert (await engine.wait_session(result.session_id)).state == "completed"


async def test_a_fork_at_a_commit_and_by_default(engine: Engine, git_repo: Path) -> None:
    parent = await four_turns(engine, git_repo)
    runs = await engine.runs(parent)
    commits = (await engine.history.timeline(parent)).commits
    third = next(c for c in commits if c.run_id == runs[2].id)

    at_commit = await engine.talk.fork(parent, at_commit=third.sha[:10])
    latest = await engine.talk.fork(parent)

    assert (at_commit.sha, at_commit.turns) == (third.sha, 3)
    assert (latest.sha, latest.turns) == (commits[-1].sha, 4)
    origin = (await engine.session_spec(at_commit.session_id)).fork_of
    assert origin is not None
    assert origin.at_commit == third.sha[:10]
    for forked in (at_commit, latest):
        assert (await engine.wait_session(forked.session_id)).state == "completed"
    children = await engine.history.forks(parent)
    assert [c.session_id for c in children] == [at_commit.session_id, latest.session_id]
    text = "\n".join(timeline_lines(await engine.history.timeline(parent)))
    assert f"forked as {at_commit.session_id} at {third.sha[:10]} (turn 3, brief)" in text
    text = "\n".join(timeline_lines(await engine.history.timeline(latest.session_id)))
    assert f"forked from {parent} at {commits[-1].sha[:10]} (turn 4, brief)" in text


async def test_bad_points_are_refused(engine: Engine, git_repo: Path, tmp_path: Path) -> None:
    parent = await engine.run_session(SessionSpec(repo=git_repo, task="one", runtime="demo"))
    other = await engine.run_session(SessionSpec(repo=git_repo, task="two", runtime="demo"))
    in_place = await engine.run_session(SessionSpec(repo=git_repo, task="three", runtime="demo",
                                                    worktree=False))
    other_row = (await engine.session_events(other.id))[-1]
    other_commit = (await engine.history.timeline(other.id)).commits[-1].sha
    sessions_before = len(await engine.list_sessions())

    cases = [
        ({"at_event": other_row.id}, f"belongs to session {other.id}"),
        ({"at_event": 10**9}, "no stream row"),
        ({"at_commit": "0123456789abcdef"}, "No commit"),
        ({"at_commit": other_commit}, f"it is session {other.id}'s"),
        ({"at_event": 1, "at_commit": other_commit}, "not both"),
    ]
    for point, words in cases:
        with pytest.raises(RelayError) as caught:
            await engine.talk.fork(parent.id, **point)  # type: ignore[arg-type]
        assert words in caught.value.message, (point, caught.value.message)
        assert caught.value.hint
    with pytest.raises(RelayError, match="ran in place") as caught:
        await engine.talk.fork(in_place.id)
    assert caught.value.hint
    assert len(await engine.list_sessions()) == sessions_before  # nothing was started
