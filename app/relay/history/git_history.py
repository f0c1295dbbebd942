"""The git side of the time machine: a session branch's commits, diffs, rewind branches.

Blocking pygit2 work: callers run these through ``asyncio.to_thread``. Nothing here
moves or deletes an existing ref: rewind only ever *creates* a branch, under a name
nobody uses yet, and :func:`merge_into_base` refuses unless the base branch can be
moved without touching a file the user changed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pygit2
from pygit2.enums import DiffOption

from relay.core.errors import WorktreeError
from relay.history.diffmodel import FileDiff, from_pygit2
from relay.history.model import CommitInfo, CommitKind
from relay.sessions.snapshot import trailers_of
from relay.sessions.worktree import git_boundary, open_repo

_UNTRACKED = (DiffOption.INCLUDE_UNTRACKED | DiffOption.RECURSE_UNTRACKED_DIRS
              | DiffOption.SHOW_UNTRACKED_CONTENT)


def commit_of(repo: pygit2.Repository, rev: str) -> pygit2.Commit:
    """``rev`` (a sha, a unique prefix or a ref) as a commit; a clear error otherwise."""
    try:
        return repo.revparse_single(rev).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
        raise WorktreeError(f"No commit {rev!r} in {repo.workdir}.",
                            "Pick a commit from `relay-cli history SESSION`.") from exc


def _kind(trailers: dict[str, str]) -> CommitKind:
    if "Relay-Handoff" in trailers:
        return "snapshot"
    if trailers.get("Relay-Kind") == "run-end" or "Relay-Step" in trailers:
        return "run_end"
    return "agent"


def _info(commit: pygit2.Commit, kind: CommitKind | None = None) -> CommitInfo:
    trailers = trailers_of(commit)
    return CommitInfo(
        sha=str(commit.id), subject=commit.message.split("\n", 1)[0].strip(),
        author=commit.author.name, kind=kind or _kind(trailers),
        at=datetime.fromtimestamp(commit.commit_time, UTC),
        run_id=trailers.get("Relay-Run"),
        entry=trailers.get("Relay-Entry") or trailers.get("Relay-From"), trailers=trailers)


@git_boundary
def branch_commits(repo_path: Path, branch: str, base_sha: str | None,
                   limit: int = 2000) -> list[CommitInfo]:
    """The commits on ``branch`` after ``base_sha``, oldest first (first-parent history)."""
    repo = open_repo(repo_path)
    ref = repo.branches.local.get(branch)
    if ref is None:
        return []
    out: list[CommitInfo] = []
    commit = ref.peel(pygit2.Commit)
    while len(out) < limit:
        if base_sha is not None and str(commit.id) == base_sha:
            break
        out.append(_info(commit))
        if not commit.parents or (base_sha is None and "Relay-Session" not in out[-1].trailers):
            break
        commit = commit.parents[0]
    out.reverse()
    return out


@git_boundary
def commit_info(repo_path: Path, rev: str) -> CommitInfo:
    return _info(commit_of(open_repo(repo_path), rev))


@git_boundary
def diff_commit(repo_path: Path, rev: str) -> list[FileDiff]:
    """What one commit changed against its first parent (a root commit: everything)."""
    repo = open_repo(repo_path)
    commit = commit_of(repo, rev)
    if commit.parents:
        return from_pygit2(repo.diff(commit.parents[0], commit))
    return from_pygit2(commit.tree.diff_to_tree(swap=True))


@git_boundary
def diff_range(repo_path: Path, old: str, new: str) -> list[FileDiff]:
    repo = open_repo(repo_path)
    return from_pygit2(repo.diff(commit_of(repo, old), commit_of(repo, new)))


@git_boundary
def diff_to_worktree(worktree: Path, old: str) -> list[FileDiff]:
    """From ``old`` to the files in ``worktree`` now, untracked (not ignored) ones included."""
    repo = open_repo(worktree)
    tree = commit_of(repo, old).tree
    return from_pygit2(tree.diff_to_workdir(flags=_UNTRACKED))


@git_boundary
def uncommitted(worktree: Path) -> int:
    """How many files in ``worktree`` differ from its HEAD (0 when it is gone)."""
    try:
        repo = pygit2.Repository(str(worktree))
    except pygit2.GitError:
        return 0
    return sum(1 for flags in repo.status().values() if not flags & pygit2.GIT_STATUS_IGNORED)


def free_branch_name(repo: pygit2.Repository, wanted: str) -> str:
    name, n = wanted, 1
    while repo.branches.local.get(name) is not None or repo.references.get(
            f"refs/heads/{name}") is not None:
        n += 1
        name = f"{wanted}-{n}"
    return name


@git_boundary
def create_branch(repo_path: Path, rev: str, wanted: str) -> tuple[str, str]:
    """A **new** branch at ``rev`` (``wanted``, or ``wanted-2``… when taken); (name, sha)."""
    repo = open_repo(repo_path)
    commit = commit_of(repo, rev)
    name = free_branch_name(repo, wanted)
    try:
        repo.branches.local.create(name, commit, force=False)
    except (pygit2.GitError, ValueError) as exc:
        raise WorktreeError(f"Could not create branch {name}: {exc}.",
                            "Check the repository with `git branch`.") from exc
    return name, str(commit.id)
