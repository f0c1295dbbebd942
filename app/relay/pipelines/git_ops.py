"""Git for pipeline steps (pygit2, blocking: call through ``asyncio.to_thread``).

* A step starts from its dependencies' results: no dependency → the run's base commit;
  one → that step's result commit; several → a merge of their results (a commit no
  branch points at until the step's own branch does).
* Conflicting changes from two dependencies are kept with conflict markers, the way
  ``git merge`` leaves them, and the step is told which files to resolve (decision: an
  agent can integrate two branches the way a person does; failing the step would throw
  both results away).
* A finished step's worktree is committed on its session branch; the files it changed
  are the diff from its starting point to that commit.
* A run that succeeds gets a branch ``relay/pipeline-<run-id>`` at the merge of its
  final steps' results. The user's own branches are never touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pygit2

from relay.core.errors import WorktreeError
from relay.sessions.snapshot import AUTHOR, commit_everything
from relay.sessions.worktree import git_boundary, open_repo


@dataclass(frozen=True)
class Base:
    """Where a step starts, and the files whose merge left conflict markers."""

    commit: str
    conflicts: tuple[str, ...] = ()


@git_boundary
def head_commit(repo_path: Path) -> str:
    repo = open_repo(repo_path)
    if repo.head_is_unborn:
        raise WorktreeError(f"{repo_path} has no commits yet.",
                            "Make a first commit: every pipeline step starts from one.")
    return str(repo.head.peel(pygit2.Commit).id)


@git_boundary
def base_for(repo_path: Path, run_base: str, results: list[tuple[str, str]]) -> Base:
    """The starting commit for a step whose dependencies left ``results`` (node, commit)."""
    if not results:
        return Base(run_base)
    repo = open_repo(repo_path)
    current = _commit(repo, *results[0])
    merged = [results[0][0]]
    conflicts: list[str] = []
    for node, sha in results[1:]:
        other = _commit(repo, node, sha)
        if other.id == current.id or repo.descendant_of(current.id, other.id):
            merged.append(node)
            continue
        if repo.descendant_of(other.id, current.id):
            current = other
            merged.append(node)
            continue
        index = repo.merge_commits(current.id, other.id)
        conflicts.extend(_keep_markers(repo, index))
        tree = index.write_tree(repo)
        merged.append(node)
        oid = repo.create_commit(None, AUTHOR, AUTHOR,
                                 f"relay: merge the results of {', '.join(merged)}\n",
                                 tree, [current.id, other.id])
        current = _commit(repo, "merge", str(oid))
    return Base(str(current.id), tuple(dict.fromkeys(conflicts)))


def _commit(repo: pygit2.Repository, node: str, sha: str) -> pygit2.Commit:
    try:
        return repo.revparse_single(sha).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
        raise WorktreeError(f"The result commit of step {node} ({sha[:12]}) is missing.",
                            "Was its branch deleted? Start the run again.") from exc


def _keep_markers(repo: pygit2.Repository, index: pygit2.Index) -> list[str]:
    """Resolve each conflict in ``index`` by writing the file with conflict markers."""
    if index.conflicts is None:
        return []
    out = []
    for ancestor, ours, theirs in list(index.conflicts):
        entry = ours or theirs
        assert entry is not None
        path = entry.path
        if ours is not None and theirs is not None:
            merged = repo.merge_file_from_index(ancestor, ours, theirs)
            text = merged if isinstance(merged, str) else merged.contents
            blob = repo.create_blob(text.encode("utf-8"))
            mode = ours.mode
        else:  # deleted on one side, changed on the other: keep the changed file
            blob, mode = entry.id, entry.mode
        del index.conflicts[path]
        index.add(pygit2.IndexEntry(path, blob, mode))
        out.append(path)
    return out


def commit_result(worktree: Path, session_id: str, run_id: str, node_id: str) -> str:
    """Commit everything in the step's worktree on its session branch; returns the sha."""
    message = (f"relay: result of pipeline step {node_id}\n\nRelay-Session: {session_id}\n"
               f"Relay-Pipeline-Run: {run_id}\nRelay-Step: {node_id}\n")
    return commit_everything(worktree, session_id, message, f"the result of step {node_id}")[0]


@git_boundary
def changed_files(repo_path: Path, base: str, head: str) -> tuple[str, ...]:
    repo = open_repo(repo_path)
    diff = repo.diff(_commit(repo, "base", base), _commit(repo, "result", head))
    return tuple(sorted({d.new_file.path for d in diff.deltas}))


@git_boundary
def result_branch(repo_path: Path, run_id: str, run_base: str,
                  results: list[tuple[str, str]]) -> str:
    """Point ``relay/pipeline-<run-id>`` at the merge of the final steps' results."""
    base = base_for(repo_path, run_base, results)
    repo = open_repo(repo_path)
    name = f"relay/pipeline-{run_id}"
    target = _commit(repo, "result", base.commit)
    existing = repo.branches.local.get(name)
    if existing is None:
        repo.branches.local.create(name, target)
    elif str(existing.target) != base.commit:
        existing.set_target(target.id)
    return base.commit
