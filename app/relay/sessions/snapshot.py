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
  second one — a restarted engine never snapshots twice;
* a commit survives a crash of the one before it: git records no owner in
  ``index.lock``, so Relay does — before committing it creates ``relay-commit.owner``
  in the worktree's git dir (its pid and start time, created exclusively) and removes
  it after. A lock whose recorded owner is dead, and that no live process holds open,
  is Relay's own leftover and is cleared; a live owner is waited for
  (:data:`LOCK_WAIT_S`), then named in a clear error. A lock Relay did not record (the
  user's git) is never deleted.

Git work is blocking: call :func:`take_snapshot` through ``asyncio.to_thread``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

import psutil
import pygit2

from relay.core.errors import WorktreeError

AUTHOR = pygit2.Signature("Relay", "relay@localhost.invalid")
#: how long a commit waits for a live process that holds the worktree's git locks
LOCK_WAIT_S = 30.0
_LOCK_POLL_S = 0.2
#: in the worktree's git dir while Relay commits: who (pid, start time)
OWNER_FILE = "relay-commit.owner"


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


def _git_locks(repo: pygit2.Repository, branch: str) -> list[Path]:
    """The lock files a commit on ``branch`` takes: the worktree's index, the branch ref."""
    gitdir = Path(repo.path)
    common = gitdir
    with contextlib.suppress(OSError):
        common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    return [gitdir / "index.lock", common / f"{branch}.lock"]


def _process_started(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def _owner_alive(record: dict[str, object]) -> bool:
    pid, started = record.get("pid"), record.get("started")
    if not isinstance(pid, int) or not isinstance(started, int | float):
        return False  # a record Relay could not have written: nobody to wait for
    now = _process_started(pid)
    return now is not None and abs(now - started) < 0.05


def _read_owner(owner: Path) -> dict[str, object] | None:
    try:
        record = json.loads(owner.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # unreadable: no live owner it could name
    return record if isinstance(record, dict) else {}


def lock_holders(paths: list[Path]) -> list[int]:
    """Live processes (of those this user may see) that have one of ``paths`` open."""
    proc = Path("/proc")
    if not sys.platform.startswith("linux") or not proc.is_dir():
        return []
    wanted = {str(p) for p in paths}
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in wanted:
                        found.append(int(entry.name))
                        break
    return found


def _claim(owner: Path) -> bool:
    """Create the owner record exclusively, complete from its first byte (link(2))."""
    me = os.getpid()
    record = {"pid": me, "started": _process_started(me)}
    draft = owner.with_name(f"{owner.name}.{me}.{secrets.token_hex(4)}")
    draft.write_text(json.dumps(record), encoding="utf-8")
    try:
        os.link(draft, owner)
    except FileExistsError:
        return False
    finally:
        draft.unlink(missing_ok=True)
    return True


@contextlib.contextmanager
def git_locks_held(repo: pygit2.Repository, branch: str, worktree: Path, *,
                   within: float = LOCK_WAIT_S,
                   waiting: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold Relay's owner record for a commit on ``branch``: clear the locks a dead Relay
    left, wait (``within`` seconds) for a live holder, raise :class:`WorktreeError` naming
    it if it stays. ``waiting`` hears once what is waited for."""
    owner = Path(repo.path) / OWNER_FILE
    locks = _git_locks(repo, branch)
    deadline = time.monotonic() + within
    told = False
    while True:
        blocker = None
        if _claim(owner):
            held = [lock for lock in locks if lock.exists()]
            if not held:
                break
            owner.unlink(missing_ok=True)
            holders = lock_holders(held)
            names = ", ".join(str(p) for p in held)
            if not holders:
                raise WorktreeError(
                    f"{names} is left in {worktree}'s git folder by a git that is not running "
                    "and not by Relay.",
                    "If no git command is running in that worktree, delete the lock file and "
                    "try again.")
            blocker = f"process {holders[0]} holding {names}"
        else:
            record = _read_owner(owner)
            if record is None:
                continue  # released just now
            if not _owner_alive(record):
                holders = lock_holders([*locks, owner])
                if not holders:
                    for lock in locks:  # Relay's own dead process left them mid-commit
                        lock.unlink(missing_ok=True)
                    owner.unlink(missing_ok=True)
                    continue
                blocker = f"process {holders[0]} holding its git locks"
            else:
                blocker = f"Relay process {record.get('pid')} committing there"
        if time.monotonic() >= deadline:
            raise WorktreeError(
                f"{worktree} is still locked by {blocker} after {within:g} s.",
                "Wait for it to finish, or stop it and try again.")
        if not told and waiting is not None:
            waiting(blocker)
            told = True
        time.sleep(_LOCK_POLL_S)
    try:
        yield
    finally:
        owner.unlink(missing_ok=True)


@overload
def commit_everything(worktree: Path, session_id: str, message: str, what: str,
                      allow_empty: Literal[True] = ..., *,
                      lock_wait: float = ...) -> tuple[str, bool]: ...
@overload
def commit_everything(worktree: Path, session_id: str, message: str, what: str,
                      allow_empty: Literal[False], *,
                      lock_wait: float = ...) -> tuple[str | None, bool]: ...
def commit_everything(worktree: Path, session_id: str, message: str, what: str,
                      allow_empty: bool = True, *,
                      lock_wait: float = LOCK_WAIT_S) -> tuple[str | None, bool]:
    """Stage everything in the session's worktree and commit it on its branch.

    Returns (the commit's sha, whether anything changed); without ``allow_empty`` nothing
    is committed (sha None) when the tree would be the tip's. ``what`` names the commit
    in the error ("the snapshot", "the end of run …"). Locks a crashed Relay left are
    cleared first; a live holder is waited for up to ``lock_wait`` seconds.
    """
    repo, branch = open_session_worktree(worktree, session_id)
    try:
        with git_locks_held(repo, branch, worktree, within=lock_wait):
            tip = repo.head.peel(pygit2.Commit)  # read under the lock: another may have moved it
            changed = stage_everything(repo)
            tree = repo.index.write_tree()
            if not allow_empty and (not changed or tree == tip.tree.id):
                return None, False
            sha = repo.create_commit(branch, AUTHOR, AUTHOR, message, tree, [tip.id])
            return str(sha), changed
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
