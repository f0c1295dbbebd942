"""What the time machine hands to front ends: timelines, stints, commits, comments (Qt-free)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from relay.core.models import ForkOrigin

EntryKind = Literal["run", "handoff", "verify", "state", "commit", "review", "pipeline"]
CommitKind = Literal["snapshot", "run_end", "agent", "base"]
CommentState = Literal["queued", "sent", "failed"]


@dataclass(frozen=True)
class CommitInfo:
    """One commit on a session branch (newest last in a timeline)."""

    sha: str
    subject: str
    author: str
    at: datetime
    kind: CommitKind
    run_id: str | None = None
    #: the chain entry whose stint made it (``claude:work``), when known
    entry: str | None = None
    trailers: dict[str, str] = field(default_factory=dict)

    @property
    def short(self) -> str:
        return self.sha[:10]


@dataclass(frozen=True)
class Stint:
    """One agent's uninterrupted turn at a session: consecutive runs on one chain entry."""

    index: int
    entry: str
    runtime: str
    run_ids: tuple[str, ...]
    started_at: datetime
    ended_at: datetime | None
    outcome: str | None
    #: the commit the stint started from and the last commit it left (None: nothing recorded)
    start_sha: str | None
    end_sha: str | None


@dataclass(frozen=True)
class TimelineEntry:
    at: datetime
    kind: EntryKind
    title: str
    detail: str = ""
    entry: str | None = None
    run_id: str | None = None
    sha: str | None = None
    stint: int | None = None
    #: for the handoff story's entries: whether the audit log holds them (None: not an
    #: audited kind)
    audited: bool | None = None


@dataclass(frozen=True)
class ForkChild:
    """A session forked from another: its id, state and task, and where it branched."""

    session_id: str
    state: str
    task: str
    origin: ForkOrigin


@dataclass(frozen=True)
class Timeline:
    session_id: str
    task: str
    state: str
    branch: str | None
    workdir: str | None
    base_sha: str | None
    base_branch: str | None
    entries: list[TimelineEntry]
    stints: list[Stint]
    commits: list[CommitInfo]
    #: whether the audit log's hash chain is intact (None: no audit log yet)
    audit_ok: bool | None
    audit_problem: str | None = None
    #: files changed in the worktree and not committed yet
    uncommitted: int = 0
    #: the session this one was forked from, and where (None: not a fork)
    fork_of: ForkOrigin | None = None
    #: the sessions forked from this one, oldest first
    forks: list[ForkChild] = field(default_factory=list)
    #: the base branch holds every commit of the session's branch (it was merged)
    merged: bool = False


@dataclass(frozen=True)
class RewindResult:
    branch: str
    sha: str
    session_id: str | None


@dataclass(frozen=True)
class ReviewComment:
    id: str
    session_id: str
    sha: str
    path: str
    line: int
    side: Literal["old", "new"]
    body: str
    state: CommentState
    created_at: datetime
    sent_at: datetime | None = None
    #: the run that received it
    run_id: str | None = None
    #: the excerpt of the line commented on
    excerpt: str = ""


@dataclass(frozen=True)
class FinishSummary:
    """What a session changed against its base, for the merge-or-keep choice."""

    session_id: str
    branch: str
    base_branch: str | None
    base_sha: str | None
    tip_sha: str
    commits: int
    files: list[tuple[str, str, int, int]]  # (path, status, added, deleted)
    stints: list[str]  # "claude:work — 2 runs, 5 files"
    can_merge: bool
    why_not: str | None = None


@dataclass(frozen=True)
class FinishResult:
    action: Literal["merge", "keep"]
    branch: str
    base_branch: str | None
    sha: str | None
    message: str
