"""What the History dock needs from the engine, as one small interface (no Qt here).

:class:`HistoryBackend` is the seam between the dock's view-model and the core's time
machine (``engine.history``) and review queue (``engine.review``); the git and audit
work they do runs in their own worker threads. :class:`EngineHistoryBackend` is the
real one; tests may pass another.
"""

from __future__ import annotations

from typing import Literal, Protocol

from relay.engine.engine import Engine
from relay.history.diffmodel import FileDiff
from relay.history.model import (
    FinishResult,
    FinishSummary,
    ReviewComment,
    RewindResult,
    Timeline,
)

Side = Literal["old", "new"]
FinishAction = Literal["merge", "keep"]


class HistoryBackend(Protocol):
    """The time machine and the review queue as the History dock calls them."""

    async def timeline(self, session_id: str) -> Timeline: ...

    async def commit_diff(self, sha: str, session_id: str) -> list[FileDiff]: ...

    async def stint_diff(self, session_id: str, stint: int,
                         line: Timeline | None = None) -> list[FileDiff]: ...

    async def session_diff(self, session_id: str) -> list[FileDiff]: ...

    async def rewind(self, sha: str, session_id: str, continue_: bool) -> RewindResult:
        """A new branch at ``sha`` (and with ``continue_`` a new session from there)."""
        ...

    async def comment(self, session_id: str, sha: str, path: str, line: int, body: str,
                      side: Side) -> ReviewComment: ...

    async def comments(self, session_id: str, sha: str | None) -> list[ReviewComment]: ...

    async def summary(self, session_id: str) -> FinishSummary: ...

    async def finish(self, session_id: str, action: FinishAction) -> FinishResult: ...


class EngineHistoryBackend:
    """The real :class:`HistoryBackend`: ``engine.history`` and ``engine.review``."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    async def timeline(self, session_id: str) -> Timeline:
        return await self._engine.history.timeline(session_id)

    async def commit_diff(self, sha: str, session_id: str) -> list[FileDiff]:
        return await self._engine.history.commit_diff(sha, session_id)

    async def stint_diff(self, session_id: str, stint: int,
                         line: Timeline | None = None) -> list[FileDiff]:
        return await self._engine.history.stint_diff(session_id, stint, line)

    async def session_diff(self, session_id: str) -> list[FileDiff]:
        return await self._engine.history.session_diff(session_id)

    async def rewind(self, sha: str, session_id: str, continue_: bool) -> RewindResult:
        return await self._engine.history.rewind(sha, session_id=session_id, continue_=continue_)

    async def comment(self, session_id: str, sha: str, path: str, line: int, body: str,
                      side: Side) -> ReviewComment:
        return await self._engine.review.comment(session_id, sha, path, line, body, side)

    async def comments(self, session_id: str, sha: str | None) -> list[ReviewComment]:
        return await self._engine.review.comments(session_id, sha)

    async def summary(self, session_id: str) -> FinishSummary:
        return await self._engine.history.summary(session_id)

    async def finish(self, session_id: str, action: FinishAction) -> FinishResult:
        return await self._engine.history.finish(session_id, action)
