"""Snapshot commits: everything in a session's worktree, committed on its branch.

A snapshot is taken before a handoff (and whenever the history feature asks). It
stages every change in the session's worktree — new, modified and deleted files,
respecting .gitignore — and commits on the session branch ``relay/<session-id>``
with a structured message whose trailers name the session, run, handoff and the
two chain entries. When nothing changed it still commits (an empty marker commit),
so every handoff has a commit to point at.

Safety rules:

* it only ever commits on ``refs/heads/relay/<session-id>`` checked out in that
  worktree — never on the user's own branch (an in-place session is refused);
* it is idempotent per handoff: if the branch tip already is the snapshot of the
  same handoff (``Relay-Handoff`` trailer), that commit is returned instead of a
  second one — a restarted engine never snapshots twice.

Git work is blocking: call :func:`take_snapshot` through ``asyncio.to_thread``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

import pygit2

from relay.core.errors import WorktreeError

AUTHOR = pygit2.Signature("Relay", "relay@localhost.invalid")


@dataclass(frozen=True)
class SnapshotInfo:
    """Where a snapshot is and what it recorded."""

    sha: str
    branch: str
    changed: bool
    reused: bool = False


@dataclass(frozen=True)
class SnapshotRequest:
    """What to snapshot and how to label it."""

    worktree: Path
    session_id: str
    handoff_id: str
    run_id: str | None = None
    from_entry: str | None = None
    to_entry: str | None = None
    reason: str | None = None


def _trailers(req: SnapshotRequest) -> dict[str, str]:
    pairs = {"Relay-Session": req.session_id, "Relay-Handoff": req.handoff_id,
             "Relay-Run": req.run_id, "Relay-From": req.from_entry, "Relay-To": req.to_entry,
             "Relay-Reason": req.reason}
    return {k: " ".join(v.split()) for k, v in pairs.items() if v}


def message(req: SnapshotRequest) -> str:
    """The commit message: a subject line, then one trailer per line."""
    why = f" ({req.reason})" if req.reason else ""
    subject = f"relay: snapshot of session {req.session_id} before handoff{why}"
    body = "\n".join(f"{k}: {v}" for k, v in _trailers(req).items())
    return f"{subject}\n\n{body}\n"


def trailers_of(commit: pygit2.Commit) -> dict[str, str]:
    """The ``Key: value`` trailers of a commit message (last paragraph)."""
    last = commit.message.strip().split("\n\n")[-1]
    out = {}
    for line in last.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key.startswith("Relay-"):
            out[key] = value.strip()
    return out


def open_session_worktree(worktree: Path, session_id: str) -> tuple[pygit2.Repository, str]:
    """The worktree's repository and its branch ref — refused unless it is the session's own."""
    try:
        repo = pygit2.Repository(str(worktree))
    except pygit2.GitError as exc:
        raise WorktreeError(f"{worktree} is not a git worktree: {exc}.",
                            "Snapshots need the session's own worktree.") from exc
    branch = f"refs/heads/relay/{session_id}"
    if repo.head_is_detached or repo.head.name != branch:
        where = "a detached HEAD" if repo.head_is_detached else repo.head.shorthand
        raise WorktreeError(
            f"Refusing to snapshot: {worktree} is on {where}, not relay/{session_id}.",
            "Relay only commits on a session's own branch; in-place sessions "
            "(--no-worktree) cannot be handed off with a snapshot.")
    return repo, branch


def stage_everything(repo: pygit2.Repository) -> bool:
    """Stage new, modified and deleted files; returns whether anything changed."""
    index = repo.index
    index.read()
    changed = False
    for path, flags in repo.status().items():
        if flags & pygit2.GIT_STATUS_IGNORED:
            continue
        changed = True
        if flags & (pygit2.GIT_STATUS_WT_DELETED | pygit2.GIT_STATUS_INDEX_DELETED):
            if path in index:
                index.remove(path)
        else:
            index.add(path)
    index.write()
    return changed


@overload
def commit_everything(worktree: Path, session_id: str, message: str, what: str,
                      allow_empty: Literal[True] = ...) -> tuple[str, bool]: ...
@overload
def commit_everything(worktree: Path, session_id: str, message: str, what: str,
                      allow_empty: Literal[False]) -> tuple[str | None, bool]: ...
def commit_everything(worktree: Path, session_id: str, message: str, what: str,
                      allow_empty: bool = True) -> tuple[str | None, bool]:
    """Stage everything in the session's worktree and commit it on its branch.

    Returns (the commit's sha, whether anything changed); without ``allow_empty`` nothing
    is committed (sha None) when the tree would be the tip's. ``what`` names the commit
    in the error ("the snapshot", "the end of run …").
    """
    repo, branch = open_session_worktree(worktree, session_id)
    tip = repo.head.peel(pygit2.Commit)
    try:
        changed = stage_everything(repo)
        tree = repo.index.write_tree()
        if not allow_empty and (not changed or tree == tip.tree.id):
            return None, False
        return str(repo.create_commit(branch, AUTHOR, AUTHOR, message, tree, [tip.id])), changed
    except (pygit2.GitError, OSError) as exc:
        raise WorktreeError(f"Could not commit {what} in {worktree}: {exc}.",
                            "Check the worktree with `git status`; free disk space if it is "
                            "full.") from exc


def _tip_trailers(worktree: Path, session_id: str) -> tuple[str, dict[str, str]]:
    repo, _ = open_session_worktree(worktree, session_id)
    tip = repo.head.peel(pygit2.Commit)
    return str(tip.id), trailers_of(tip)


def take_snapshot(req: SnapshotRequest) -> SnapshotInfo:
    """Commit the worktree's state on the session branch (idempotent per handoff)."""
    branch = f"refs/heads/relay/{req.session_id}"
    tip, seen = _tip_trailers(req.worktree, req.session_id)
    if seen.get("Relay-Handoff") == req.handoff_id:
        return SnapshotInfo(sha=tip, branch=branch, changed=False, reused=True)
    sha, changed = commit_everything(req.worktree, req.session_id, message(req), "the snapshot")
    return SnapshotInfo(sha=sha, branch=branch, changed=changed)


def snapshot_run_end(worktree: Path, session_id: str, run_id: str, entry: str,
                     outcome: str) -> str | None:
    """Commit what one agent run left in the worktree (the time machine's trail).

    Returns the new commit's sha, or None when the run changed nothing (no marker
    commit: a stint with no changes needs no point to rewind to). Idempotent per run.
    """
    tip, seen = _tip_trailers(worktree, session_id)
    if seen.get("Relay-Kind") == "run-end" and seen.get("Relay-Run") == run_id:
        return tip
    message = (f"relay: {entry}'s run ended ({outcome})\n\nRelay-Session: {session_id}\n"
               f"Relay-Run: {run_id}\nRelay-Entry: {entry}\nRelay-Kind: run-end\n")
    return commit_everything(worktree, session_id, message, f"the end of run {run_id}",
                             allow_empty=False)[0]
