"""A damaged repository (a corrupt HEAD, missing objects) is one WorktreeError naming it
at every git boundary — creating a worktree, carrying files, a pipeline's base, history,
diffs, merges — never a pygit2 error escaping as a crash."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from relay.core.errors import WorktreeError
from relay.history import git_history, merge
from relay.pipelines import git_ops
from relay.sessions import briefing, worktree
from tests.conftest import make_repo


def _damaged(tmp_path: Path, how: str) -> Path:
    repo_path = make_repo(tmp_path / how, {"a.txt": "one\n"})
    repo = pygit2.Repository(str(repo_path))
    (repo_path / "a.txt").write_text("two\n")
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("t", "t@relay.invalid")
    repo.create_commit("HEAD", sig, sig, "two", repo.index.write_tree(), [repo.head.target])
    git_dir = Path(repo.path)
    if how == "corrupt-head":
        (git_dir / "HEAD").write_text("garbage that is no ref\n")
    else:  # every object gone: the refs point at nothing
        for folder in (git_dir / "objects").iterdir():
            if len(folder.name) == 2:
                shutil.rmtree(folder)
    return repo_path


CALLS: dict[str, Callable[[Path, Path], object]] = {
    "create_worktree": lambda r, t: asyncio.run(worktree.create_worktree(r, t / "wts", "s1")),
    "carry_uncommitted": lambda r, t: asyncio.run(worktree.carry_uncommitted(r, r)),
    "head_commit": lambda r, t: git_ops.head_commit(r),
    "branch_commits": lambda r, t: git_history.branch_commits(r, "main", None),
    "uncommitted": lambda r, t: git_history.uncommitted(r),
    "create_branch": lambda r, t: git_history.create_branch(r, "HEAD", "x"),
    "merge_plan": lambda r, t: merge.plan(r, "main", None),
    "changed_paths": lambda r, t: briefing.changed_paths(r, "0" * 40),
}


#: calls that may answer a damaged repository: the branch's commits are read without HEAD,
#: a merge plan reports what it cannot do as the plan's problems, and the status of a
#: worktree without objects is still its files
ANSWERS = {("branch_commits", "corrupt-head"), ("merge_plan", "corrupt-head"),
           ("merge_plan", "missing-objects"), ("uncommitted", "missing-objects")}


@pytest.mark.parametrize("how", ["corrupt-head", "missing-objects"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_damaged_repository_is_one_clear_error(call: str, how: str, tmp_path: Path) -> None:
    repo = _damaged(tmp_path, how)
    error = _error_of(lambda: CALLS[call](repo, tmp_path))
    # anything but a WorktreeError escapes and fails the test
    if (call, how) in ANSWERS:  # an answer without an error is fine (see ANSWERS)
        return
    assert error is not None
    assert str(repo) in error.message
    assert error.hint


def _error_of(call: Callable[[], object]) -> WorktreeError | None:
    try:
        call()
    except WorktreeError as exc:
        return exc
    return None
