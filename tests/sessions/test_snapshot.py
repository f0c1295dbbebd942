"""Snapshot commits in a session's worktree (real git through pygit2)."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from relay.core.errors import WorktreeError
from relay.sessions.snapshot import SnapshotRequest, take_snapshot, trailers_of
from relay.sessions.worktree import _create


@pytest.fixture
def worktree(git_repo: Path, tmp_path: Path) -> Path:
    (git_repo / ".gitignore").write_text(".env\n")
    repo = pygit2.Repository(str(git_repo))
    repo.index.add(".gitignore")
    repo.index.write()
    sig = pygit2.Signature("T", "t@example.invalid")
    repo.create_commit("HEAD", sig, sig, "ignore", repo.index.write_tree(), [repo.head.target])
    return _create(git_repo, tmp_path / "worktrees", "s1").path


def req(worktree: Path, handoff: str = "h1") -> SnapshotRequest:
    return SnapshotRequest(worktree=worktree, session_id="s1", handoff_id=handoff, run_id="r1",
                           from_entry="claude:work", to_entry="codex", reason="usage_limit")


def test_snapshot_commits_new_modified_and_deleted_files(worktree: Path, git_repo: Path) -> None:
    (worktree / "new.txt").write_text("new\n")
    (worktree / "README.md").write_text("# changed\n")
    (worktree / ".gitignore").unlink()
    info = take_snapshot(req(worktree))
    assert info.changed
    repo = pygit2.Repository(str(worktree))
    commit = repo.revparse_single(info.sha).peel(pygit2.Commit)
    tree = commit.tree
    assert "new.txt" in tree
    assert tree["README.md"].read_raw() == b"# changed\n"
    assert ".gitignore" not in tree
    assert repo.head.shorthand == "relay/s1"
    assert str(repo.head.target) == info.sha
    assert repo.status() == {}


def test_ignored_files_are_not_committed(worktree: Path) -> None:
    (worktree / ".env").write_text("SECRET=1\n")
    (worktree / "a.txt").write_text("a\n")
    info = take_snapshot(req(worktree))
    commit = pygit2.Repository(str(worktree)).revparse_single(info.sha).peel(pygit2.Commit)
    assert ".env" not in commit.tree
    assert "a.txt" in commit.tree


def test_the_users_branch_is_never_touched(worktree: Path, git_repo: Path) -> None:
    user = pygit2.Repository(str(git_repo))
    before = user.head.target
    (worktree / "x.txt").write_text("x\n")
    take_snapshot(req(worktree))
    assert user.head.target == before
    assert user.head.shorthand == "main"
    assert not (git_repo / "x.txt").exists()


def test_nothing_changed_still_makes_a_marker_commit(worktree: Path) -> None:
    repo = pygit2.Repository(str(worktree))
    parent = repo.head.peel(pygit2.Commit)
    info = take_snapshot(req(worktree))
    assert not info.changed
    commit = repo.revparse_single(info.sha).peel(pygit2.Commit)
    assert commit.tree.id == parent.tree.id
    assert commit.parents[0].id == parent.id


def test_trailers_name_session_run_handoff_and_entries(worktree: Path) -> None:
    info = take_snapshot(req(worktree))
    commit = pygit2.Repository(str(worktree)).revparse_single(info.sha).peel(pygit2.Commit)
    assert trailers_of(commit) == {
        "Relay-Session": "s1", "Relay-Handoff": "h1", "Relay-Run": "r1",
        "Relay-From": "claude:work", "Relay-To": "codex", "Relay-Reason": "usage_limit"}
    assert commit.message.startswith("relay: snapshot of session s1 before handoff")


def test_the_same_handoff_is_snapshotted_once(worktree: Path) -> None:
    (worktree / "a.txt").write_text("a\n")
    first = take_snapshot(req(worktree))
    again = take_snapshot(req(worktree))  # e.g. a restarted engine repeating the step
    assert again.sha == first.sha
    assert again.reused
    other = take_snapshot(req(worktree, handoff="h2"))
    assert other.sha != first.sha


def test_an_in_place_checkout_is_refused(git_repo: Path) -> None:
    with pytest.raises(WorktreeError, match="Refusing to snapshot") as info:
        take_snapshot(SnapshotRequest(worktree=git_repo, session_id="s1", handoff_id="h1"))
    assert info.value.hint is not None
    assert "--no-worktree" in info.value.hint
