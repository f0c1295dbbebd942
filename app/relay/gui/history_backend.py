"""What the History dock needs from the host, as one small interface (no Qt here).

:class:`HistoryBackend` is the seam between the dock's view-model and the core's time
machine (``history``) and review queue (``review``); the git and audit work they do runs
in their own worker threads. :class:`HostHistoryBackend` is the real one — the engine's
services or the host's API's of the same names (:mod:`relay.gui.host_calls`); tests may
pass another.
"""

from __future__ import annotations

from typing import Literal, Protocol

from relay.gui.host_calls import Services
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
                      side: Side, hold: bool = False) -> ReviewComment:
        """A review comment; ``hold``: a finished session's waits for its next run."""
        ...

    async def comments(self, session_id: str, sha: str | None) -> list[ReviewComment]: ...

    async def summary(self, session_id: str) -> FinishSummary: ...

    async def finish(self, session_id: str, action: FinishAction) -> FinishResult: ...


class HostHistoryBackend:
    """The real :class:`HistoryBackend`: the host's ``history`` and ``review``."""

    def __init__(self, services: Services) -> None:
        self.rebind(services)

    def rebind(self, services: Services) -> None:
        """Go on over ``services`` (the window's host stopped and the window hosts now)."""
        self._services = services

    async def timeline(self, session_id: str) -> Timeline:
        return await self._services.history.timeline(session_id)

    async def commit_diff(self, sha: str, session_id: str) -> list[FileDiff]:
        return await self._services.history.commit_diff(sha, session_id)

    async def stint_diff(self, session_id: str, stint: int,
                         line: Timeline | None = None) -> list[FileDiff]:
        return await self._services.history.stint_diff(session_id, stint, line)

    async def session_diff(self, session_id: str) -> list[FileDiff]:
        return await self._services.history.session_diff(session_id)

    async def rewind(self, sha: str, session_id: str, continue_: bool) -> RewindResult:
        return await self._services.history.rewind(sha, session_id=session_id, continue_=continue_)

    async def comment(self, session_id: str, sha: str, path: str, line: int, body: str,
                      side: Side, hold: bool = False) -> ReviewComment:
        return await self._services.review.comment(session_id, sha, path, line, body, side,
                                                   hold=hold)

    async def comments(self, session_id: str, sha: str | None) -> list[ReviewComment]:
        return await self._services.review.comments(session_id, sha)

    async def summary(self, session_id: str) -> FinishSummary:
        return await self._services.history.summary(session_id)

    async def finish(self, session_id: str, action: FinishAction) -> FinishResult:
        return await self._services.history.finish(session_id, action)
