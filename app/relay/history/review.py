"""Review: comments on lines of a session's diff, sent back to its agent as the next instruction.

A comment is stored ``queued`` (table ``review_comments``, scrubbed) with the commit,
path, line and side it is about, so its thread stays with that commit. It is sent when
the session's agent is not busy: at once when the session is finished, otherwise when
the run in progress ends (the engine that runs it delivers after its runner returns) —
never in the middle of a turn. Sending claims the queued comments with one conditional
UPDATE (two engines never send the same comment), renders them into one prompt and
continues the session's own agent conversation with it (``Engine.continue_session``).
A claim left by an engine that died is taken over after a minute.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Literal

import pygit2

from relay.core.errors import RelayError, SessionNotFoundError
from relay.core.events import Notice
from relay.core.numbers import MAX_COUNT
from relay.core.redact import scrub
from relay.core.store.db import Store, from_ms, now_ms
from relay.core.store.sql import id_text_problem, prefix_match
from relay.core.store.writer import EventWriter, WriteOp
from relay.history.git_history import commit_of
from relay.history.model import ReviewComment
from relay.sessions.worktree import git_boundary, open_repo

log = logging.getLogger(__name__)

Side = Literal["old", "new"]
Continue = Callable[[str, str], Awaitable[str]]
RunningHere = Callable[[str], bool]

_STALE_CLAIM_MS = 60_000
_COLS = ("id, session_id, sha, path, line, side, body, state, created_ms, sent_ms, run_id,"
         " excerpt")


@git_boundary
def _excerpt(repo_path: Path, sha: str, path: str, line: int, side: Side) -> tuple[str, str]:
    """The commit's full sha and the text of the line commented on (blocking)."""
    repo = open_repo(repo_path)
    commit = commit_of(repo, sha)
    where = commit.parents[0] if side == "old" and commit.parents else commit
    try:
        blob = where.tree[path]
    except (KeyError, pygit2.GitError):
        return str(commit.id), ""
    if not isinstance(blob, pygit2.Blob) or blob.is_binary:
        return str(commit.id), ""
    text = blob.data.decode("utf-8", "replace").splitlines()
    return str(commit.id), text[line - 1].strip()[:200] if 0 < line <= len(text) else ""


def render_prompt(comments: Sequence[ReviewComment]) -> str:
    """The instruction the agent receives: every comment with where it points."""
    lines = ["The user reviewed your changes and left these comments. Address each one in "
             "the code, then say briefly what you changed for each.", ""]
    for c in comments:
        where = f"{c.path} line {c.line}" + (" (the old version)" if c.side == "old" else "")
        lines.append(f"- {where}, commit {c.sha[:10]}:")
        if c.excerpt:
            lines.append(f"    `{c.excerpt}`")
        lines.extend(f"    {part}" for part in c.body.splitlines() or [""])
    return "\n".join(lines)


class Review:
    """The review queue of every session (``engine.review``)."""

    def __init__(self, store: Store, writer: EventWriter, continue_session: Continue,
                 running_here: RunningHere) -> None:
        self.store, self.writer = store, writer
        self._continue, self._running_here = continue_session, running_here
        self._lock = asyncio.Lock()

    async def comment(self, session_id: str, sha: str, path: str, line: int, body: str,
                      side: Side = "new") -> ReviewComment:
        """Queue a comment on ``path:line`` of commit ``sha`` and send it when the agent is free."""
        text = scrub(body.strip())
        if not text:
            raise RelayError("The comment is empty.", "Write what the agent should change.")
        if not 1 <= line <= MAX_COUNT:
            raise RelayError(f"Line {line if line < 10**12 else '…'} is not a line number.",
                             f"Lines count from 1 (to at most {MAX_COUNT:,}).")
        row = await self.store.sessions.get(session_id)
        full, excerpt = await asyncio.to_thread(_excerpt, Path(row.repo), sha, path, line, side)
        comment_id = uuid.uuid4().hex[:12]
        await self.writer.write(WriteOp(row.id, None, Notice(
            message=f"Review comment on {path}:{line} queued for the agent."), statements=[(
                "INSERT INTO review_comments (id, session_id, sha, path, line, side, body, excerpt,"
                " state, created_ms) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (comment_id, row.id, full, path, line, side, text, scrub(excerpt), "queued",
                 now_ms()))]))
        await self.deliver(row.id)
        found = [c for c in await self.comments(row.id) if c.id == comment_id]
        return found[0]

    async def comments(self, session_id: str, sha: str | None = None) -> list[ReviewComment]:
        row = await self.store.sessions.get(session_id)
        where, params = "session_id=?", list[object]([row.id])
        if sha:
            problem = id_text_problem(sha, "A commit")
            if problem:
                raise RelayError(f"No such commit: {problem}", "Pass a commit's hash (or its start).")
            match, match_params = prefix_match("sha", sha)
            where += f" AND {match}"
            params += match_params
        async with self.store.conn.execute(
                f"SELECT {_COLS} FROM review_comments WHERE {where} ORDER BY created_ms, id",
                params) as cur:
            rows = await cur.fetchall()
        return [ReviewComment(
            id=r[0], session_id=r[1], sha=r[2], path=r[3], line=r[4], side=r[5], body=r[6],
            state=r[7] if r[7] in ("queued", "sent", "failed") else "queued",
            created_at=from_ms(r[8]), sent_at=from_ms(r[9]) if r[9] else None, run_id=r[10],
            excerpt=r[11]) for r in rows]

    async def pending_sessions(self) -> list[str]:
        async with self.store.conn.execute(
                "SELECT DISTINCT session_id FROM review_comments WHERE state IN ('queued',"
                " 'sending')") as cur:
            return [r[0] for r in await cur.fetchall()]

    async def deliver(self, session_id: str) -> bool:
        """Send the session's queued comments if its agent is free; whether it was sent."""
        async with self._lock:
            row = await self.store.sessions.get(session_id)
            if not row.finished or self._running_here(row.id):
                return False
            claim, now = uuid.uuid4().hex, now_ms()
            await self.writer.write(WriteOp(row.id, statements=[(
                "UPDATE review_comments SET state='sending', claim=?, claimed_ms=? WHERE"
                " session_id=? AND (state='queued' OR (state='sending' AND claimed_ms<?))",
                (claim, now, row.id, now - _STALE_CLAIM_MS))]))
            async with self.store.conn.execute(
                    "SELECT id FROM review_comments WHERE claim=? AND state='sending'",
                    (claim,)) as cur:
                ids = [r[0] for r in await cur.fetchall()]
            if not ids:
                return False
            claimed = [c for c in await self.comments(row.id) if c.id in ids]
            marks = ",".join("?" * len(ids))
            try:
                await self._continue(row.id, render_prompt(claimed))
            except (RelayError, SessionNotFoundError) as exc:
                await self.writer.write(WriteOp(row.id, None, Notice(
                    category="warning", message=f"Review comments not sent: {exc.message}"),
                    statements=[(f"UPDATE review_comments SET state='failed', error=? WHERE id IN"
                                 f" ({marks})", (exc.message, *ids))]))
                return False
            await self.writer.write(WriteOp(row.id, None, Notice(
                message=f"Sent {len(ids)} review comment{'s' if len(ids) != 1 else ''} to the "
                        "agent as its next instruction."), statements=[(
                    f"UPDATE review_comments SET state='sent', sent_ms=? WHERE id IN ({marks})",
                    (now_ms(), *ids))]))
            return True

    async def deliver_all(self) -> None:
        """Send what is queued for every finished session (an engine opening)."""
        for session_id in await self.pending_sessions():
            try:
                await self.deliver(session_id)
            except RelayError as exc:
                log.warning("review comments of %s not sent: %s", session_id, exc.message)
