"""``/api/v1/history``: the time machine — a session's timeline, diffs (commit, stint,
session), rewind, the merge-or-keep summary and finish — and review comments on diffs.
The git and audit work runs in the history service's worker threads."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from relay.api.context import EngineDep
from relay.api.schemas import ERRORS, CommentBody, FinishBody, RewindBody
from relay.history.diffmodel import FileDiff
from relay.history.model import FinishResult, FinishSummary, ReviewComment, RewindResult, Timeline
from relay.history.runs import RunTimeline

router = APIRouter(prefix="/api/v1/history", tags=["history"], responses=ERRORS)


@router.get("/sessions/{session_id}", response_model=Timeline)
async def timeline(session_id: str, eng: EngineDep) -> Timeline:
    """The session's timeline: entries, stints, commits, the audit chain's state."""
    return await eng.history.timeline(session_id)


@router.get("/runs/{run_id}", response_model=RunTimeline)
async def run_timeline(run_id: str, eng: EngineDep) -> RunTimeline:
    """A pipeline run's timeline: its steps' sessions."""
    return await eng.history.run_timeline(run_id)


@router.get("/sessions/{session_id}/diff", response_model=list[FileDiff])
async def session_diff(session_id: str, eng: EngineDep) -> list[FileDiff]:
    """Everything the session changed against its base."""
    return await eng.history.session_diff(session_id)


@router.get("/sessions/{session_id}/stints/{stint}/diff", response_model=list[FileDiff])
async def stint_diff(session_id: str, stint: int, eng: EngineDep) -> list[FileDiff]:
    """What one stint (0-based: one account's turn) changed."""
    return await eng.history.stint_diff(session_id, stint)


@router.get("/commits/{sha}/diff", response_model=list[FileDiff])
async def commit_diff(sha: str, eng: EngineDep,
                      session: Annotated[str | None, Query()] = None) -> list[FileDiff]:
    """One commit's diff (in ``session``'s repository, else any session's)."""
    return await eng.history.commit_diff(sha, session)


@router.post("/rewind", status_code=201, response_model=RewindResult)
async def rewind(body: RewindBody, eng: EngineDep) -> RewindResult:
    """A new branch at ``sha`` (nothing existing moves); with ``continue`` a new session
    starts there and runs in the host."""
    return await eng.history.rewind(body.sha, session_id=body.session_id,
                                    continue_=body.continue_, prompt=body.prompt)


@router.get("/sessions/{session_id}/summary", response_model=FinishSummary)
async def summary(session_id: str, eng: EngineDep) -> FinishSummary:
    """What the session changed against its base, for the merge-or-keep choice."""
    return await eng.history.summary(session_id)


@router.post("/sessions/{session_id}/finish", response_model=FinishResult)
async def finish(session_id: str, body: FinishBody, eng: EngineDep) -> FinishResult:
    """Merge the session's branch into its base branch, or keep it as it is."""
    return await eng.history.finish(session_id, body.action)


@router.post("/sessions/{session_id}/comments", status_code=201, response_model=ReviewComment)
async def comment(session_id: str, body: CommentBody, eng: EngineDep) -> ReviewComment:
    """A review comment on a diff line; it reaches the session's agent when it is free
    (a finished session's starts a new run, unless ``hold`` keeps it for the next one)."""
    return await eng.review.comment(session_id, body.sha, body.path, body.line, body.body,
                                    body.side, hold=body.hold)


@router.get("/sessions/{session_id}/comments", response_model=list[ReviewComment])
async def comments(session_id: str, eng: EngineDep,
                   sha: Annotated[str | None, Query()] = None) -> list[ReviewComment]:
    """The session's review comments (on one commit, given ``sha``)."""
    return await eng.review.comments(session_id, sha)
