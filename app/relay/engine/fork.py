"""Forks (``engine.talk.fork``): a new session from any point of another.

The point — a stream row of the parent (an event id), a commit on its branch, or by default
its latest state — resolves to two things:

* **the snapshot**: the last of Relay's commits on the parent's branch (a run's end, a
  handoff's snapshot: trailers ``Relay-Session``/``Relay-Run``) whose run's work was done
  at that row — a run's end commit holds everything it left, so it is the files as they
  were there; before any, the session's base. A commit given directly is that commit.
* **the turns**: the user turns of the parent's agent conversation completed by then (a
  user turn ends with a ``turn_completed`` carrying the turn's result text; an agent's
  inner steps carry none), counted over every run of that agent session.

The fork is a new session (new id, its own worktree and branch ``relay/<id>`` at the
snapshot through ``SessionSpec.base_commit``) whose spec is the parent's, copied the way
a rewind's continuation is (:meth:`relay.history.service.History.continuation_spec`), with
``fork_of`` saying where it branched and how it carries on: ``conversation`` when the
runtime can fork its own conversation (:attr:`Cap.FORK`) there — all of it, or cut by
:meth:`RuntimeAdapter.fork_anchor` — else ``brief`` (Relay's signed brief of the parent up
to that point). The first run does the rest (:mod:`relay.sessions.forking`). Nothing of the
parent changes: its branch, worktree and rows stay as they are.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from relay.core.capabilities import Cap
from relay.core.errors import RelayError, WorktreeError
from relay.core.models import ForkOrigin, ForkResult, RunRow, SessionRow, chain_of, entry_runtime
from relay.history import git_history as gh
from relay.history import records
from relay.history.model import CommitInfo
from relay.history.records import TurnMark
from relay.runtimes.registry import adapter_class

if TYPE_CHECKING:
    from relay.engine.engine import Engine


@dataclass(frozen=True)
class _Point:
    """A resolved fork point: the snapshot, its subject, and the last parent row it carries."""

    sha: str
    subject: str
    last_event: int


async def fork_session(engine: Engine, session_id: str, *, at_event: int | None = None,
                       at_commit: str | None = None, prompt: str | None = None) -> ForkResult:
    """Start a fork of ``session_id`` at ``at_event`` / ``at_commit`` (default: its latest
    snapshot); its task is ``prompt`` or the parent's. Raises a RelayError (with a hint)
    for a point that is not the parent's or a parent without a branch to fork."""
    if at_event is not None and at_commit is not None:
        raise RelayError("Fork at a stream row or at a commit, not both.",
                         "Pass --at-event N or --at-commit SHA.")
    row = await engine.store.sessions.get(session_id)
    if not row.branch:
        raise RelayError(f"Session {row.id} ran in place (--no-worktree): it has no snapshots "
                         "to fork from.", "Fork a session that ran in a worktree.")
    line = await engine.history.timeline(row.id)
    if line.base_sha is None:
        raise RelayError(f"Session {row.id} has no snapshot to fork from (its worktree was "
                         "never made).", "Fork a session that has run.")
    runs = await engine.store.sessions.runs(row.id)
    marks = await records.turn_marks(engine.store, row.id)
    done = _done_at(marks)
    if at_commit is not None:
        point = await _at_commit(engine, row, line.commits, line.base_sha, at_commit, done)
    else:
        if at_event is not None:
            await _check_row(engine, row, at_event)
        last = at_event if at_event is not None else await records.last_event(engine.store, row.id)
        point = _at_event(line.commits, line.base_sha, last, done)
    origin = await _origin(engine, row, runs, marks, point, at_event, at_commit)
    spec = await engine.history.continuation_spec(
        Path(row.repo), point.sha, row.id, prompt,
        f"Relay forked session {row.id} at commit {point.sha[:10]} ({point.subject}).")
    parent = await engine.store.sessions.spec(row.id)
    chain = chain_of(parent)
    entry = _entry_of(runs, origin)
    if entry is not None and entry in chain:  # the fork goes on with the agent of that point
        chain = chain[chain.index(entry):]
    spec = spec.model_copy(update={"fork_of": origin, "chain": chain,
                                   "runtime": entry_runtime(chain[0]),
                                   "model": parent.model if chain[0] == chain_of(parent)[0]
                                   else None})
    new_id = await engine.start_session(spec)
    return ForkResult(session_id=new_id, parent_id=row.id, branch=f"relay/{new_id}",
                      sha=point.sha, how=origin.how, turns=origin.turns)


async def _check_row(engine: Engine, row: SessionRow, event_id: int) -> None:
    found = await engine.store.events_after(event_id - 1, limit=1) if event_id > 0 else []
    if not found or found[0].id != event_id:
        raise RelayError(f"There is no stream row {event_id}.",
                         f"Pick a row of `relay-cli show {row.id}` (its event id).")
    if found[0].session_id != row.id:
        raise RelayError(f"Stream row {event_id} belongs to session {found[0].session_id}, "
                         f"not {row.id}.", f"Fork {found[0].session_id} there, or pick a row "
                                           f"of {row.id}.")


def _done_at(marks: list[TurnMark]) -> dict[str, int]:
    """Per run: the row where its work was done (its last user turn's end, else its end)."""
    turns: dict[str, int] = {}
    ends: dict[str, int] = {}
    for mark in marks:
        if mark.run_id is not None:
            (turns if mark.kind == "turn" else ends)[mark.run_id] = mark.id
    return {**ends, **turns}


def _relay_commit(commit: CommitInfo, done: dict[str, int]) -> int | None:
    """The row at which a Relay commit's run was done (None: not a run's commit)."""
    return done.get(commit.run_id) if commit.run_id and "Relay-Session" in commit.trailers \
        else None


def _at_event(commits: list[CommitInfo], base_sha: str, last: int,
              done: dict[str, int]) -> _Point:
    chosen: CommitInfo | None = None
    for commit in commits:
        at = _relay_commit(commit, done)
        if at is not None and at <= last:
            chosen = commit
    if chosen is None:
        return _Point(base_sha, "where the session started", last)
    return _Point(chosen.sha, chosen.subject, last)


async def _at_commit(engine: Engine, row: SessionRow, commits: list[CommitInfo], base_sha: str,
                     rev: str, done: dict[str, int]) -> _Point:
    try:
        info = await asyncio.to_thread(gh.commit_info, Path(row.repo), rev)
    except WorktreeError as exc:
        raise RelayError(f"No commit {rev!r} in session {row.id}'s repository.",
                         f"Pick a commit from `relay-cli history {row.id}`.") from exc
    if info.sha == base_sha:
        return _Point(info.sha, info.subject, 0)
    commit = next((c for c in commits if c.sha == info.sha), None)
    if commit is None:
        other = info.trailers.get("Relay-Session")
        raise RelayError(f"Commit {info.short} is not on session {row.id}'s branch"
                         + (f" (it is session {other}'s)." if other and other != row.id else "."),
                         f"Pick a commit from `relay-cli history {row.id}`.")
    at = _relay_commit(commit, done)
    if at is None:  # the agent's own commit: what the session had streamed by then
        at = await records.last_event(engine.store, row.id,
                                      int(commit.at.timestamp() * 1000) + 999)
    return _Point(commit.sha, commit.subject, at)


async def _origin(engine: Engine, row: SessionRow, runs: list[RunRow], marks: list[TurnMark],
                  point: _Point, at_event: int | None, at_commit: str | None) -> ForkOrigin:
    """Where the fork branched, the turns it carries, and whether the runtime can carry them."""
    agent_of = {r.id: r.agent_session_id for r in runs}
    kept = [m for m in marks if m.kind == "turn" and m.id <= point.last_event]
    run = next((r for r in runs if kept and r.id == kept[-1].run_id), None)
    agent_sid = run.agent_session_id if run else None
    turns = sum(1 for m in kept if agent_sid and agent_of.get(m.run_id or "") == agent_sid)
    total = sum(1 for m in marks if m.kind == "turn" and agent_sid
                and agent_of.get(m.run_id or "") == agent_sid)
    origin = ForkOrigin(session_id=row.id, at_event=point.last_event, at_commit=at_commit,
                        sha=point.sha, turns=turns, agent_session_id=agent_sid,
                        runtime=run.runtime if run else None)
    if run is None or agent_sid is None or turns == 0:
        return origin
    cls = adapter_class(run.runtime)
    if not cls(None).capabilities.supports(Cap.FORK):
        return origin
    if turns == total:
        return origin.model_copy(update={"how": "conversation"})
    account = await engine.accounts.for_entry(run.entry or run.runtime)
    env = {**os.environ, **(account.env() if account else {})}
    anchor = await asyncio.to_thread(cls.fork_anchor, agent_sid, turns,
                                     Path(row.workdir or row.repo), env)
    if anchor is None:
        return origin
    return origin.model_copy(update={"how": "conversation", "resume_at": anchor})


def _entry_of(runs: list[RunRow], origin: ForkOrigin) -> str | None:
    """The chain entry that held the conversation at the fork point."""
    for run in reversed(runs):
        if origin.agent_session_id and run.agent_session_id == origin.agent_session_id:
            return run.entry or run.runtime
    return None
