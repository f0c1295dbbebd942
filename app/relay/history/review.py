"""Review: comments on lines of a session's diff, sent back to its agent as the next instruction.

A comment is stored (table ``review_comments``, scrubbed) with the commit, path, line and
side it is about, so its thread stays with that commit. It reaches the agent as one kind of
message in the session's inbox (:mod:`relay.sessions.inbox`, kind ``review``, the same id):
queued, delivered at the next turn boundary — never in the middle of a turn — or at once as
a follow-up when the session is finished (a new, billed run), unless it is *held*: then it
waits in the inbox (meta ``held``) and goes with the session's next run, whatever starts it.
A comment's state follows its message's.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal

import pygit2

from relay.core.errors import RelayError
from relay.core.numbers import MAX_COUNT
from relay.core.redact import scrub
from relay.core.store.db import Store, from_ms, now_ms
from relay.core.store.sql import id_text_problem, prefix_match
from relay.core.store.writer import EventWriter, WriteOp
from relay.history.git_history import commit_of
from relay.history.model import CommentState, ReviewComment
from relay.sessions.inbox import Inbox
from relay.sessions.worktree import git_boundary, open_repo

log = logging.getLogger(__name__)

Side = Literal["old", "new"]
#: delivers what a session has queued when its agent is free (``engine.talk.deliver``)
Deliver = Callable[[str], Awaitable[bool]]

_COLS = ("c.id, c.session_id, c.sha, c.path, c.line, c.side, c.body, c.state, c.created_ms,"
         " c.sent_ms, c.run_id, c.excerpt, m.state, m.delivered_ms, m.run_id")
#: a comment's state, from its message's
_STATE: dict[str, CommentState] = {"delivered": "sent", "failed": "failed",
                                   "cancelled": "failed"}


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


class Review:
    """The review queue of every session (``engine.review``)."""

    def __init__(self, store: Store, writer: EventWriter, inbox: Inbox,
                 deliver: Deliver) -> None:
        self.store, self.writer, self.inbox = store, writer, inbox
        self._deliver = deliver

    async def comment(self, session_id: str, sha: str, path: str, line: int, body: str,
                      side: Side = "new", *, hold: bool = False) -> ReviewComment:
        """Queue a comment on ``path:line`` of commit ``sha`` and send it when the agent is free
        (a finished session's: at once, as a new run — or, with ``hold``, with its next run)."""
        text = scrub(body.strip())
        if not text:
            raise RelayError("The comment is empty.", "Write what the agent should change.")
        if not 1 <= line <= MAX_COUNT:
            raise RelayError(f"Line {line if line < 10**12 else '…'} is not a line number.",
                             f"Lines count from 1 (to at most {MAX_COUNT:,}).")
        row = await self.store.sessions.get(session_id)
        full, excerpt = await asyncio.to_thread(_excerpt, Path(row.repo), sha, path, line, side)
        comment_id, excerpt = uuid.uuid4().hex[:12], scrub(excerpt)
        await self.writer.write(WriteOp(row.id, statements=[(
            "INSERT INTO review_comments (id, session_id, sha, path, line, side, body, excerpt,"
            " state, created_ms) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (comment_id, row.id, full, path, line, side, text, excerpt, "queued", now_ms()))]))
        await self.inbox.add(row.id, text, kind="review", source="review", message_id=comment_id,
                             meta={"comment_id": comment_id, "sha": full, "path": path,
                                   "line": line, "side": side, "excerpt": excerpt,
                                   **({"held": True} if hold else {})})
        if not hold:
            await self._deliver(row.id)
        found = [c for c in await self.comments(row.id) if c.id == comment_id]
        return found[0]

    async def comments(self, session_id: str, sha: str | None = None) -> list[ReviewComment]:
        row = await self.store.sessions.get(session_id)
        where, params = "c.session_id=?", list[object]([row.id])
        if sha:
            problem = id_text_problem(sha, "A commit")
            if problem:
                raise RelayError(f"No such commit: {problem}", "Pass a commit's hash (or its start).")
            match, match_params = prefix_match("c.sha", sha)
            where += f" AND {match}"
            params += match_params
        async with self.store.conn.execute(
                f"SELECT {_COLS} FROM review_comments c LEFT JOIN session_messages m"
                f" ON m.id = c.id WHERE {where} ORDER BY c.created_ms, c.id", params) as cur:
            rows = await cur.fetchall()
        return [ReviewComment(
            id=r[0], session_id=r[1], sha=r[2], path=r[3], line=r[4], side=r[5], body=r[6],
            state=_STATE.get(r[12], "queued") if r[12] else (
                r[7] if r[7] in ("queued", "sent", "failed") else "queued"),
            created_at=from_ms(r[8]), sent_at=from_ms(r[13] or r[9]) if r[13] or r[9] else None,
            run_id=r[14] or r[10], excerpt=r[11]) for r in rows]
