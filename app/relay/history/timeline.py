"""Joining the trails into one timeline (pure): runs, the audited story, commits, comments.

A **stint** is one chain entry's uninterrupted turn: consecutive runs on the same entry
(retries and resumes of one account stay one stint; a handoff starts the next). A
commit belongs to the run its ``Relay-Run`` trailer names (snapshots, run ends) or else
to the run that was going when it was made (the agent's own commits). A stint's changes
are the diff from where it started (the previous stint's last commit, or the session's
base) to its own last commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from relay.core.events import HandoffStep, SessionEnded, StateChanged, VerifyResult
from relay.core.models import SessionRow
from relay.core.states import FINAL_STATES
from relay.history.model import (
    CommitInfo,
    EntryKind,
    ReviewComment,
    Stint,
    Timeline,
    TimelineEntry,
)
from relay.history.records import AuditView, RunInfo, StoryEvent

#: the state changes a timeline tells: a session's end, and a wait for a limit's reset
_STORY_STATES = (*FINAL_STATES, "waiting")
_CLOCK_SLACK = timedelta(seconds=1)  # git times have whole seconds


def stints_of(runs: Sequence[RunInfo]) -> list[list[RunInfo]]:
    groups: list[list[RunInfo]] = []
    for run in runs:
        if groups and groups[-1][-1].entry == run.entry:
            groups[-1].append(run)
        else:
            groups.append([run])
    return groups


def owner_run(commit: CommitInfo, runs: Sequence[RunInfo]) -> RunInfo | None:
    """The run a commit belongs to (its trailer, else the run going when it was made)."""
    if commit.run_id:
        named = next((r for r in runs if r.id == commit.run_id), None)
        if named is not None:
            return named
    going = [r for r in runs if r.started_at - _CLOCK_SLACK <= commit.at]
    return going[-1] if going else None


def build_stints(runs: Sequence[RunInfo], commits: Sequence[CommitInfo],
                 base_sha: str | None) -> tuple[list[Stint], dict[str, int]]:
    """The stints and, per commit sha, the index of the stint that made it."""
    groups = stints_of(runs)
    index_of_run = {r.id: i for i, group in enumerate(groups) for r in group}
    stint_of_commit: dict[str, int] = {}
    for commit in commits:
        run = owner_run(commit, runs)
        if run is not None:
            stint_of_commit[commit.sha] = index_of_run[run.id]
    stints: list[Stint] = []
    start = base_sha
    for i, group in enumerate(groups):
        own = [c.sha for c in commits if stint_of_commit.get(c.sha) == i]
        end = own[-1] if own else None
        stints.append(Stint(index=i, entry=group[0].entry, runtime=group[0].runtime,
                            run_ids=tuple(r.id for r in group), started_at=group[0].started_at,
                            ended_at=group[-1].ended_at, outcome=group[-1].outcome,
                            start_sha=start, end_sha=end))
        start = end or start
    return stints, stint_of_commit


def _story_entry(item: StoryEvent, entry_of_run: dict[str, str], stint_of_run: dict[str, int],
                 audit: AuditView) -> TimelineEntry | None:
    event = item.event
    at = item.at  # the store's clock, like the runs' (the audit log appends later)
    audited = item.id in audit.audited if audit.ok is not None else None
    run = item.run_id
    entry = entry_of_run.get(run or "")

    def made(kind: EntryKind, title: str, detail: str = "") -> TimelineEntry:
        return TimelineEntry(at=at, kind=kind, title=title, detail=detail, entry=entry,
                             run_id=run, stint=stint_of_run.get(run or ""), audited=audited)

    if isinstance(event, SessionEnded):
        return made("run", f"{entry or event.runtime or 'the agent'} ended: {event.outcome}",
                    event.reason or "")
    if isinstance(event, HandoffStep):
        route = f"{event.from_entry or '?'} → {event.to_entry or '?'}"
        return made("handoff", f"Handoff {route}: {event.state}", event.detail or event.reason or "")
    if isinstance(event, VerifyResult):
        mark = "passed" if event.passed else (
            f"failed ({event.problem or f'exit {event.exit_code}'})")
        return made("verify", f"Check {' '.join(event.command)} {mark}", event.output[-400:])
    if isinstance(event, StateChanged) and event.state in _STORY_STATES:
        return made("state", f"Session {event.state}", event.reason or "")
    return None


def _placed(commit: CommitInfo, runs: Sequence[RunInfo]) -> datetime:
    """Where a commit goes in the timeline: git keeps whole seconds, so a commit is placed
    inside its run (a run's end commit and a handoff snapshot right after the run ended)."""
    run = owner_run(commit, runs)
    if run is None:
        return commit.at
    at = max(commit.at, run.started_at)
    if commit.kind in ("run_end", "snapshot") and run.ended_at is not None:
        at = max(at, run.ended_at)
    return at


def build(row: SessionRow, base: tuple[str | None, str | None], runs: Sequence[RunInfo],
          story: Sequence[StoryEvent], audit: AuditView, commits: Sequence[CommitInfo],
          comments: Sequence[ReviewComment], uncommitted: int) -> Timeline:
    stints, stint_of_commit = build_stints(runs, commits, base[0])
    stint_of_run = {rid: s.index for s in stints for rid in s.run_ids}
    entry_of_run = {r.id: r.entry for r in runs}
    entries: list[TimelineEntry] = []
    for run in runs:
        again = "" if run.attempt == 1 else f" (run {run.attempt})"
        entries.append(TimelineEntry(at=run.started_at, kind="run",
                                     title=f"{run.entry} started{again}", entry=run.entry,
                                     run_id=run.id, stint=stint_of_run.get(run.id)))
    for item in story:
        made = _story_entry(item, entry_of_run, stint_of_run, audit)
        if made is not None:
            entries.append(made)
    for commit in commits:
        stint = stint_of_commit.get(commit.sha)
        entries.append(TimelineEntry(
            at=_placed(commit, runs), kind="commit", title=commit.subject, sha=commit.sha, stint=stint,
            entry=stints[stint].entry if stint is not None else None, run_id=commit.run_id,
            detail=f"{commit.kind.replace('_', ' ')} · {commit.author}"))
    for comment in comments:
        entries.append(TimelineEntry(
            at=comment.created_at, kind="review", sha=comment.sha,
            title=f"Comment on {comment.path}:{comment.line} ({comment.state})",
            detail=comment.body, stint=stint_of_commit.get(comment.sha)))
    order = {"run": 0, "commit": 1, "verify": 2, "handoff": 3, "review": 4, "state": 5}
    entries.sort(key=lambda e: (e.at, order.get(e.kind, 9)))
    return Timeline(session_id=row.id, task=row.task, state=row.state, branch=row.branch,
                    workdir=row.workdir, base_sha=base[0], base_branch=base[1], entries=entries,
                    stints=stints, commits=list(commits), audit_ok=audit.ok,
                    audit_problem=audit.problem, uncommitted=uncommitted)
