"""The time machine (``engine.history``): timelines, diffs, rewind, finishing a session.

Every session leaves two trails — the hash-chained audit log (who ran, handoffs,
verifier results) and commits on its branch ``relay/<session-id>`` (the agent's own,
one when each run ends, one per handoff snapshot). :meth:`History.timeline` joins
them; the diff of a commit, of one agent's stint and of the whole session come from
git. Rewind is non-destructive: a *new* branch at the snapshot (the current work and
every existing ref stay as they are), and optionally a new session that goes on from
there. Blocking git work runs in worker threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal

import pygit2

from relay.core.config import Config
from relay.core.errors import RelayError, SessionNotFoundError, WorktreeError
from relay.core.models import SessionRow, SessionSpec
from relay.core.store.db import Store
from relay.history import git_history as gh
from relay.history import merge, records
from relay.history.diffmodel import FileDiff, totals
from relay.history.model import FinishResult, FinishSummary, ForkChild, RewindResult, Timeline
from relay.history.review import Review
from relay.history.runs import RunSource, RunTimeline, run_timeline
from relay.history.timeline import build
from relay.sessions.briefing import session_base
from relay.sessions.snapshot import snapshot_run_end

StartSession = Callable[[SessionSpec], Awaitable[str]]


class History:
    def __init__(self, config: Config, store: Store, review: Review,
                 start_session: StartSession, pipelines: Callable[[], RunSource]) -> None:
        self.config, self.store, self.review = config, store, review
        self._start, self._pipelines = start_session, pipelines

    async def _base(self, row: SessionRow) -> tuple[str | None, str | None]:
        base_sha, base_branch = await self.store.sessions.base_of(row.id)
        if base_sha is None and row.branch and row.workdir and Path(row.workdir).is_dir():
            base_sha = await asyncio.to_thread(_reflog_base, Path(row.workdir))
        return base_sha, base_branch

    async def timeline(self, session_id: str) -> Timeline:
        row = await self.store.sessions.get(session_id)
        spec = await self.store.sessions.spec(row.id)
        base = await self._base(row)
        runs = await records.runs(self.store, row.id)
        story = await records.story(self.store, row.id)
        audit_view = await asyncio.to_thread(records.read_audit, self.config.audit_path, row.id)
        commits = (await asyncio.to_thread(gh.branch_commits, Path(row.repo), row.branch, base[0])
                   if row.branch else [])
        dirty = (await asyncio.to_thread(gh.uncommitted, Path(row.workdir))
                 if row.branch and row.workdir else 0)
        comments = await self.review.comments(row.id)
        merged = bool(commits and row.branch and not dirty and await asyncio.to_thread(
            merge.merged, Path(row.repo), row.branch, base[1]))
        return dataclasses.replace(
            build(row, base, runs, story, audit_view, commits, comments, dirty),
            fork_of=spec.fork_of, forks=await self.forks(row.id), merged=merged)

    async def forks(self, session_id: str) -> list[ForkChild]:
        """The sessions forked from this one (relay.engine.fork), oldest first."""
        return await records.forks(self.store, (await self.store.sessions.get(session_id)).id)

    async def run_timeline(self, run_id: str) -> RunTimeline:
        """A pipeline run's lease log joined with the timelines of its steps' sessions."""
        return await run_timeline(self._pipelines(), run_id, self.timeline)

    async def commit_diff(self, sha: str, session_id: str | None = None) -> list[FileDiff]:
        repo = await self._repo_of(sha, session_id)
        return await asyncio.to_thread(gh.diff_commit, repo, sha)

    async def stint_diff(self, session_id: str, stint: int,
                         line: Timeline | None = None) -> list[FileDiff]:
        """What one agent changed in its stint (to the worktree when it is the last one and
        left work uncommitted); ``line``: the session's timeline when the caller has it."""
        line = line or await self.timeline(session_id)
        if not 0 <= stint < len(line.stints):
            raise RelayError(f"Session {line.session_id} has no stint {stint + 1}.",
                             f"It has {len(line.stints)}; see `relay-cli history {session_id}`.")
        row = await self.store.sessions.get(session_id)
        return await asyncio.to_thread(_stint_files, line, Path(row.repo), stint)

    async def session_diff(self, session_id: str) -> list[FileDiff]:
        """Everything the session changed: its base to its branch, uncommitted work included."""
        row = await self.store.sessions.get(session_id)
        base_sha, _ = await self._base(row)
        if not row.branch or base_sha is None:
            raise RelayError(f"Session {row.id} has no branch to compare.",
                             "It ran in place (--no-worktree); use `git diff` in the repository.")
        if row.workdir and Path(row.workdir).is_dir():
            return await asyncio.to_thread(gh.diff_to_worktree, Path(row.workdir), base_sha)
        return await asyncio.to_thread(gh.diff_range, Path(row.repo), base_sha, row.branch)

    async def _repo_of(self, sha: str, session_id: str | None) -> Path:
        """The repository holding commit ``sha`` (the session's, else the first that has it)."""
        if session_id is not None:
            return Path((await self.store.sessions.get(session_id)).repo)
        seen: set[str] = set()
        for _, repo, _branch in await self.store.sessions.with_branches():
            if repo in seen:
                continue
            seen.add(repo)
            try:
                await asyncio.to_thread(gh.commit_info, Path(repo), sha)
                return Path(repo)
            except WorktreeError:
                continue
        raise WorktreeError(f"No commit {sha!r} in the repositories of Relay's sessions.",
                            "Pick a commit from `relay-cli history SESSION`, or pass --session.")

    async def rewind(self, sha: str, *, session_id: str | None = None, continue_: bool = False,
                     prompt: str | None = None) -> RewindResult:
        """A new branch ``relay/rewind-<sha>`` at ``sha``; nothing existing moves. With
        ``continue_`` a new session starts there (the original's task and chain)."""
        repo = await self._repo_of(sha, session_id)
        info = await asyncio.to_thread(gh.commit_info, repo, sha)
        origin = session_id or info.trailers.get("Relay-Session")
        name, full = await asyncio.to_thread(gh.create_branch, repo, info.sha,
                                             f"relay/rewind-{info.sha[:10]}")
        if not continue_:
            return RewindResult(branch=name, sha=full, session_id=None)
        note = f"Relay rewound the repository to commit {full[:10]} ({info.subject})."
        spec = await self.continuation_spec(repo, full, origin, prompt, note)
        new_id = await self._start(spec)
        return RewindResult(branch=name, sha=full, session_id=new_id)

    async def continuation_spec(self, repo: Path, sha: str, origin: str | None,
                                prompt: str | None, note: str) -> SessionSpec:
        """A new session's spec that goes on from commit ``sha``: the ``origin`` session's
        (its task and chain; a rewind, a fork) with ``note`` saying where it starts, and
        ``prompt`` when given."""
        if origin is None:
            if not prompt:
                raise RelayError(f"Commit {sha[:10]} is not a Relay snapshot, so there is no "
                                 "task to continue.", "Pass the task to continue with (--prompt).")
            return SessionSpec(repo=repo, task=f"{prompt}\n\n{note}", base_commit=sha)
        spec = await self.store.sessions.spec(
            (await self.store.sessions.get(origin)).id)
        task = (f"{prompt}\n\n{note} The original task was:\n{spec.task}" if prompt else
                f"{spec.task}\n\n{note} Continue the task from this state; work done after "
                "it was set aside.")
        return spec.model_copy(update={"task": task, "base_commit": sha, "repo": repo,
                                       "adopted_from": None, "carry_uncommitted": False,
                                       "pipeline_step": None, "demo_limit_after": None,
                                       "demo_quota": []})

    async def summary(self, session_id: str) -> FinishSummary:
        row = await self.store.sessions.get(session_id)
        line = await self.timeline(row.id)
        if not row.branch:
            raise RelayError(f"Session {row.id} ran in place: its changes are already in "
                             f"{row.repo}.", "Nothing to merge or keep.")
        files = await self.session_diff(row.id)
        checked = await asyncio.to_thread(merge.plan, Path(row.repo), row.branch, line.base_branch)
        why_not = checked.why_not
        if not row.finished:
            why_not = f"the session is still {row.state}"
        stints = []
        for s in line.stints:
            stint_files = await asyncio.to_thread(_stint_files, line, Path(row.repo), s.index)
            changed = len({f.path for f in stint_files})
            stints.append(f"{s.entry} — {len(s.run_ids)} run{'s' * (len(s.run_ids) != 1)}, "
                          f"{changed} file{'s' * (changed != 1)} changed, {s.outcome or 'running'}")
        return FinishSummary(
            session_id=row.id, branch=row.branch, base_branch=line.base_branch,
            base_sha=line.base_sha, tip_sha=line.commits[-1].sha if line.commits else "",
            commits=len(line.commits),
            files=[(f.path, f.status, f.additions, f.deletions) for f in files],
            stints=stints, can_merge=why_not is None and checked.ok, why_not=why_not)

    async def finish(self, session_id: str, action: Literal["merge", "keep"]) -> FinishResult:
        """Merge the session's branch into its base branch, or keep it as it is."""
        row = await self.store.sessions.get(session_id)
        if not row.finished:
            raise SessionNotFoundError(f"Session {row.id} is still {row.state}.",
                                       "Wait for it to finish (or stop it) first.")
        if not row.branch:
            raise RelayError(f"Session {row.id} ran in place; there is no branch to finish.")
        if row.workdir and Path(row.workdir).is_dir():  # nothing left behind uncommitted
            await asyncio.to_thread(_commit_leftovers, Path(row.workdir), row.id)
        added, deleted = totals(await self.session_diff(row.id))
        if action == "keep":
            return FinishResult("keep", row.branch, None, None,
                                f"Kept {row.branch} (+{added} −{deleted}); merge it with git "
                                "when you are ready.")
        _, base_branch = await self._base(row)
        message = f"Merge {row.branch}: {row.task.splitlines()[0][:72]}\n\nRelay-Session: {row.id}\n"
        sha = await asyncio.to_thread(merge.merge_into_base, Path(row.repo), row.branch,
                                      base_branch, message)
        return FinishResult("merge", row.branch, base_branch, sha,
                            f"Merged {row.branch} into {base_branch} (+{added} −{deleted}) "
                            f"at {sha[:10]}.")


def _stint_files(line: Timeline, repo: Path, index: int) -> list[FileDiff]:
    """What stint ``index`` changed (to the worktree for the last one with uncommitted work)."""
    s = line.stints[index]
    if s.start_sha is None:
        return []
    last = index == len(line.stints) - 1
    if last and line.uncommitted and line.workdir and Path(line.workdir).is_dir():
        return gh.diff_to_worktree(Path(line.workdir), s.start_sha)
    return [] if s.end_sha is None else gh.diff_range(repo, s.start_sha, s.end_sha)


def _reflog_base(worktree: Path) -> str | None:
    try:
        repo = pygit2.Repository(str(worktree))
        return str(session_base(repo, repo.head.peel(pygit2.Commit)).id)
    except (pygit2.GitError, KeyError):
        return None


def _commit_leftovers(worktree: Path, session_id: str) -> None:
    # not the session's branch any more: nothing of Relay's to commit
    with contextlib.suppress(WorktreeError):
        snapshot_run_end(worktree, session_id, "finish", "finish", "finished")
