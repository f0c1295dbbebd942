"""Finishing a session: merge its branch into the base branch, or keep it (blocking git).

The merge is the one place the time machine moves a user's branch, and only when the
user asks. It is refused — nothing written — when the branches conflict, when the base
branch is checked out with uncommitted changes, or when another worktree has it checked
out. A fast-forward is used when the base has not moved; otherwise a merge commit.
When the base branch is checked out in the repository, its files are updated with a
safe checkout (never overwriting a change) before the branch moves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pygit2

from relay.core.errors import WorktreeError
from relay.sessions.snapshot import AUTHOR
from relay.sessions.worktree import git_boundary, open_repo


@dataclass(frozen=True)
class MergePlan:
    """What merging ``branch`` into ``base`` would do, or why it cannot."""

    base: str
    branch: str
    ok: bool
    why_not: str | None = None
    already: bool = False
    fast_forward: bool = False
    checked_out: bool = False


def _checked_out_elsewhere(repo: pygit2.Repository, base: str) -> str | None:
    for name in repo.list_worktrees():
        try:
            other = pygit2.Repository(repo.lookup_worktree(name).path)
        except pygit2.GitError:
            continue
        if not other.head_is_detached and not other.head_is_unborn and other.head.shorthand == base:
            return str(other.workdir)
    return None


def _dirty(repo: pygit2.Repository) -> list[str]:
    wanted = (pygit2.GIT_STATUS_WT_MODIFIED | pygit2.GIT_STATUS_WT_DELETED
              | pygit2.GIT_STATUS_INDEX_MODIFIED | pygit2.GIT_STATUS_INDEX_NEW
              | pygit2.GIT_STATUS_INDEX_DELETED | pygit2.GIT_STATUS_WT_TYPECHANGE
              | pygit2.GIT_STATUS_CONFLICTED)
    return sorted(p for p, flags in repo.status().items() if flags & wanted)


@git_boundary
def merged(repo_path: Path, branch: str, base: str | None) -> bool:
    """Whether ``base`` holds ``branch``'s last commit (the session was merged into it)."""
    if not base:
        return False
    repo = open_repo(repo_path)
    base_ref, ref = repo.branches.local.get(base), repo.branches.local.get(branch)
    if base_ref is None or ref is None:
        return False
    base_tip, tip = base_ref.peel(pygit2.Commit).id, ref.peel(pygit2.Commit).id
    return bool(base_tip == tip or repo.descendant_of(base_tip, tip))


@git_boundary
def plan(repo_path: Path, branch: str, base: str | None) -> MergePlan:
    """Check, without writing anything, whether ``branch`` can be merged into ``base``."""
    if not base:
        return MergePlan("", branch, False, "the session did not start from a branch (a detached "
                                            "HEAD or a pipeline step), so there is no base to merge into")
    repo = open_repo(repo_path)
    base_ref, ref = repo.branches.local.get(base), repo.branches.local.get(branch)
    if base_ref is None:
        return MergePlan(base, branch, False, f"the base branch {base} no longer exists")
    if ref is None:
        return MergePlan(base, branch, False, f"the session branch {branch} no longer exists")
    base_tip, tip = base_ref.peel(pygit2.Commit), ref.peel(pygit2.Commit)
    if base_tip.id == tip.id or repo.descendant_of(base_tip.id, tip.id):
        return MergePlan(base, branch, True, already=True)
    elsewhere = _checked_out_elsewhere(repo, base)
    if elsewhere:
        return MergePlan(base, branch, False, f"{base} is checked out in another worktree "
                                              f"({elsewhere}); merge there with git")
    here = not repo.head_is_detached and not repo.head_is_unborn and repo.head.shorthand == base
    if here and (dirty := _dirty(repo)):
        shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        return MergePlan(base, branch, False, f"your checkout of {base} has uncommitted changes "
                                              f"({shown}); commit or stash them first",
                         checked_out=True)
    fast = repo.descendant_of(tip.id, base_tip.id)
    if not fast:
        index = repo.merge_commits(base_tip, tip)
        if index.conflicts is not None:
            paths = sorted({(ours or theirs or anc).path
                            for anc, ours, theirs in index.conflicts})
            return MergePlan(base, branch, False, f"{branch} conflicts with {base} in "
                                                  f"{', '.join(paths[:5])}; resolve with git",
                             checked_out=here)
    return MergePlan(base, branch, True, fast_forward=fast, checked_out=here)


@git_boundary
def merge_into_base(repo_path: Path, branch: str, base: str | None, message: str) -> str:
    """Merge ``branch`` into ``base`` (see :func:`plan`); returns the base's new tip."""
    checked = plan(repo_path, branch, base)
    if not checked.ok:
        raise WorktreeError(f"Cannot merge {branch} into {checked.base or 'its base'}: "
                            f"{checked.why_not}.", "Keep the branch and merge it yourself, or "
                                                   "fix what is named and finish again.")
    repo = open_repo(repo_path)
    base_ref = repo.branches.local[checked.base]
    tip = repo.branches.local[branch].peel(pygit2.Commit)
    base_tip = base_ref.peel(pygit2.Commit)
    if checked.already:
        return str(base_tip.id)
    try:
        if checked.fast_forward:
            target = tip
        else:
            tree = repo.merge_commits(base_tip, tip).write_tree(repo)
            target = repo[repo.create_commit(None, AUTHOR, AUTHOR, message, tree,
                                             [base_tip.id, tip.id])].peel(pygit2.Commit)
        if checked.checked_out:  # the user's files follow, and never lose a change
            repo.checkout_tree(target.tree,  # type: ignore[no-untyped-call]
                               strategy=pygit2.GIT_CHECKOUT_SAFE)
        base_ref.set_target(target.id, f"relay: merge {branch}")
        if checked.checked_out:
            repo.index.read_tree(target.tree)
            repo.index.write()
    except (pygit2.GitError, OSError) as exc:
        raise WorktreeError(f"The merge of {branch} into {checked.base} stopped: {exc}.",
                            f"{checked.base} was not moved unless `git log {checked.base}` shows "
                            "the merge; check `git status`.") from exc
    return str(target.id)
