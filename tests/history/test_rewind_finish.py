"""Rewind never moves or deletes a ref; finishing merges into the base or keeps the branch."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pygit2
import pytest

from relay.core.config import load_config
from relay.core.errors import RelayError
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from tests.conftest import make_repo


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


def refs(repo_path: Path) -> dict[str, str]:
    repo = pygit2.Repository(str(repo_path))
    return {name: str(repo.references[name].resolve().target) for name in repo.references
            if name.startswith("refs/")}


def tree_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.parts}


async def _session(engine: Engine, repo: Path) -> str:
    row = await engine.run_session(SessionSpec(
        repo=repo, task="add a greeting", runtime="demo",
        chain=["demo:primary", "demo:backup"], demo_limit_after=2))
    assert row.state == "completed", row.reason
    return row.id


async def test_rewind_creates_a_branch_and_moves_nothing(engine: Engine, git_repo: Path) -> None:
    session_id = await _session(engine, git_repo)
    row = await engine.get_session(session_id)
    assert row.workdir
    (Path(row.workdir) / "wip.txt").write_text("uncommitted work\n")
    before_refs = refs(git_repo)
    before_work, before_user = tree_files(Path(row.workdir)), tree_files(git_repo)
    first = (await engine.history.timeline(session_id)).commits[0]

    one = await engine.history.rewind(first.sha, session_id=session_id)
    two = await engine.history.rewind(first.sha)  # the same point again: a second name

    assert (one.branch, one.sha) == (f"relay/rewind-{first.sha[:10]}", first.sha)
    assert two.branch == f"{one.branch}-2"
    after = refs(git_repo)
    assert {k: v for k, v in after.items() if k in before_refs} == before_refs
    assert set(after) - set(before_refs) == {f"refs/heads/{one.branch}", f"refs/heads/{two.branch}"}
    assert after[f"refs/heads/{one.branch}"] == first.sha
    assert tree_files(Path(row.workdir)) == before_work  # current work untouched
    assert tree_files(git_repo) == before_user
    assert one.session_id is None


async def test_continue_from_here_starts_a_session_at_the_snapshot(engine: Engine,
                                                                   git_repo: Path) -> None:
    session_id = await _session(engine, git_repo)
    line = await engine.history.timeline(session_id)
    snap = next(c for c in line.commits if c.kind == "snapshot")

    result = await engine.history.rewind(snap.sha, continue_=True)

    assert result.session_id
    assert result.session_id != session_id
    row = await engine.wait_session(result.session_id)
    assert row.state == "completed", row.reason
    assert "add a greeting" in row.task
    assert snap.sha[:10] in row.task
    new_line = await engine.history.timeline(row.id)
    assert new_line.base_sha == snap.sha
    repo = pygit2.Repository(str(git_repo))
    assert repo.descendant_of(repo.branches.local[f"relay/{row.id}"].target, snap.sha)
    assert str(repo.branches.local[result.branch].target) == snap.sha


async def test_rewind_of_an_unknown_commit_is_a_clear_error(engine: Engine, git_repo: Path) -> None:
    await _session(engine, git_repo)
    with pytest.raises(RelayError, match="No commit 'deadbeef'"):
        await engine.history.rewind("deadbeef")


async def test_finish_merge_fast_forwards_the_checked_out_base(engine: Engine,
                                                                git_repo: Path) -> None:
    session_id = await _session(engine, git_repo)
    summary = await engine.history.summary(session_id)
    assert summary.can_merge
    assert summary.base_branch == "main"
    assert [f[0] for f in summary.files] == ["RELAY_DEMO_NOTES.md"]
    assert len(summary.stints) == 2
    assert summary.stints[0].startswith("demo:primary")

    result = await engine.history.finish(session_id, "merge")

    repo = pygit2.Repository(str(git_repo))
    assert str(repo.branches.local["main"].target) == result.sha == summary.tip_sha
    assert (git_repo / "RELAY_DEMO_NOTES.md").is_file()  # the user's checkout followed
    assert not [p for p, f in repo.status().items() if not f & pygit2.GIT_STATUS_IGNORED]


async def test_finish_merge_makes_a_merge_commit_when_the_base_moved(engine: Engine,
                                                                     git_repo: Path) -> None:
    session_id = await _session(engine, git_repo)
    (git_repo / "other.txt").write_text("the user kept working\n")
    repo = pygit2.Repository(str(git_repo))
    repo.index.add("other.txt")
    repo.index.write()
    sig = pygit2.Signature("U", "u@example.invalid")
    moved = repo.create_commit("HEAD", sig, sig, "user work", repo.index.write_tree(),
                               [repo.head.target])

    result = await engine.history.finish(session_id, "merge")

    assert result.sha is not None
    merge = repo[result.sha].peel(pygit2.Commit)
    assert next(str(p) for p in merge.parent_ids) == str(moved)
    assert len(merge.parents) == 2
    assert {"other.txt", "RELAY_DEMO_NOTES.md"} <= {e.name for e in merge.tree}


async def test_finish_merge_refuses_over_uncommitted_user_changes(engine: Engine,
                                                                   git_repo: Path) -> None:
    session_id = await _session(engine, git_repo)
    (git_repo / "README.md").write_text("the user's unsaved edit\n")
    before = refs(git_repo)

    summary = await engine.history.summary(session_id)
    with pytest.raises(RelayError, match="uncommitted changes"):
        await engine.history.finish(session_id, "merge")

    assert not summary.can_merge
    assert summary.why_not
    assert "README.md" in summary.why_not
    assert refs(git_repo) == before
    assert (git_repo / "README.md").read_text() == "the user's unsaved edit\n"
    kept = await engine.history.finish(session_id, "keep")
    assert kept.action == "keep"
    assert "Kept relay/" in kept.message
    assert refs(git_repo) == before


async def test_finish_merge_refuses_a_conflict_naming_the_file(engine: Engine,
                                                               tmp_path: Path) -> None:
    repo_path = make_repo(tmp_path / "r", {"RELAY_DEMO_NOTES.md": "the user's own notes\n"})
    session_id = await _session(engine, repo_path)
    repo = pygit2.Repository(str(repo_path))
    (repo_path / "RELAY_DEMO_NOTES.md").write_text("changed on main meanwhile\n")
    repo.index.add("RELAY_DEMO_NOTES.md")
    repo.index.write()
    sig = pygit2.Signature("U", "u@example.invalid")
    repo.create_commit("HEAD", sig, sig, "main moves", repo.index.write_tree(), [repo.head.target])
    before = refs(repo_path)

    with pytest.raises(RelayError, match=r"conflicts with main in RELAY_DEMO_NOTES\.md"):
        await engine.history.finish(session_id, "merge")
    assert refs(repo_path) == before
