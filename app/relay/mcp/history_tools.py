"""The time machine tools: a session's history, diffs, rewind, review comments.

They read ``engine.history`` and ``engine.review`` (relay.history). A rewind never moves or
deletes a ref: it makes a new branch. A review comment is sent to the session's agent as its
next instruction when the agent is free; for a finished session that starts a new run in
this server's process.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from relay.core.errors import RelayError, SessionNotFoundError
from relay.core.numbers import MAX_COUNT
from relay.engine.engine import Engine
from relay.history import present
from relay.history.diffmodel import FileDiff, FileStatus, totals
from relay.history.model import ReviewComment, Timeline
from relay.mcp.approval import READS, RUNS_AGENTS
from relay.mcp.results import find_session, guarded, ok
from relay.mcp.session_tools import SessionId

#: diffs can be huge; a client asks for more lines when it wants them
DEFAULT_DIFF_LINES = 400
MAX_DIFF_LINES = 20_000

Sha = Annotated[str, Field(min_length=4, description=(
    "A commit id (a unique prefix of at least 4 characters), e.g. from relay_session_history."))]


class HistoryResult(BaseModel):
    timeline: Timeline


class DiffFile(BaseModel):
    path: str
    old_path: str | None
    status: FileStatus
    binary: bool
    additions: int
    deletions: int


class DiffResult(BaseModel):
    #: what was compared: a whole session, one agent's stint of it, or one commit
    kind: Literal["session", "stint", "commit"]
    target: str
    files: list[DiffFile]
    additions: int
    deletions: int
    #: the unified diff, cut after max_lines lines when ``truncated``
    diff: str
    total_lines: int
    truncated: bool


class RewindAnswer(BaseModel):
    branch: str
    sha: str
    #: the new session that goes on from the commit (continue_session=true)
    session_id: str | None


class CommentAnswer(BaseModel):
    comment: ReviewComment


def diff_result(kind: Literal["session", "stint", "commit"], target: str, files: list[FileDiff],
                max_lines: int) -> DiffResult:
    lines = list(present.diff_text(files))
    added, deleted = totals(files)
    return DiffResult(kind=kind, target=target, additions=added, deletions=deleted,
                      files=[DiffFile(path=f.path, old_path=f.old_path, status=f.status,
                                      binary=f.binary, additions=f.additions,
                                      deletions=f.deletions) for f in files],
                      diff="\n".join(lines[:max_lines]), total_lines=len(lines),
                      truncated=len(lines) > max_lines)


class HistoryTools:
    """History, diffs, rewind and review over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def register(self, server: MCPServer) -> None:
        # a rewind that continues the session, and a comment, set an agent working again
        reads, writes = READS, RUNS_AGENTS
        server.add_tool(self.session_history, name="relay_session_history",
                        title="A session's history", annotations=reads)
        server.add_tool(self.diff, name="relay_diff", title="What a session, agent or commit changed",
                        annotations=reads)
        server.add_tool(self.rewind, name="relay_rewind", title="Rewind to a snapshot (new branch)",
                        annotations=writes)
        server.add_tool(self.review_comment, name="relay_review_comment",
                        title="Comment on a line for the agent", annotations=writes)

    @guarded
    async def session_history(self, session_id: SessionId) -> Annotated[CallToolResult, HistoryResult]:
        """A session's timeline: each agent's stint (runs on one provider/account, from which
        commit to which), handoffs, verifier results, state changes, review comments and the
        snapshot commits on its branch, in time order; and whether the audit log's hash chain
        is intact."""
        row = await find_session(self.engine, session_id)
        timeline = await self.engine.history.timeline(row.id)
        return ok(HistoryResult(timeline=timeline), "\n".join(present.timeline_lines(timeline)))

    @guarded
    async def diff(
        self,
        sha_or_session: Annotated[str, Field(min_length=1, description=(
            "A session id (everything it changed, uncommitted work included) or a commit id "
            "(what that commit changed)."))],
        stint: Annotated[int | None, Field(ge=1, description=(
            "With a session: only what its Nth agent stint changed (1 = the first; see "
            "relay_session_history)."))] = None,
        session_id: Annotated[str | None, Field(description=(
            "With a commit id: the session whose repository holds it (default: searched)."))] = None,
        max_lines: Annotated[int, Field(ge=10, le=MAX_DIFF_LINES, description=(
            "Cut the unified diff after this many lines (the file list is always "
            "complete)."))] = DEFAULT_DIFF_LINES,
    ) -> Annotated[CallToolResult, DiffResult]:
        """What changed, per file, as a unified diff: a whole session, one agent's stint of
        it, or one commit."""
        target = sha_or_session.strip()
        row = None
        if session_id is None:
            try:
                row = await self.engine.get_session(target)
            except SessionNotFoundError:
                row = None  # then it is a commit
        if row is not None:
            kind: Literal["session", "stint", "commit"] = "stint" if stint else "session"
            files = (await self.engine.history.stint_diff(row.id, stint - 1) if stint
                     else await self.engine.history.session_diff(row.id))
            target = row.id
        elif stint:
            raise RelayError("stint needs a session id, not a commit.",
                             "Pass the session's id as sha_or_session.")
        else:
            scope = (await find_session(self.engine, session_id)).id if session_id else None
            kind, files = "commit", await self.engine.history.commit_diff(target, scope)
        result = diff_result(kind, target, files, max_lines)
        head = "\n".join(present.diff_stat(files))
        more = (f"\n… {result.total_lines - max_lines} more lines (raise max_lines)"
                if result.truncated else "")
        return ok(result, f"{kind} {target}\n{head}\n\n{result.diff}{more}")

    @guarded
    async def rewind(
        self,
        sha: Sha,
        continue_session: Annotated[bool, Field(description=(
            "Also start a new session from that commit, with the original session's task and "
            "providers (it runs in this server's process)."))] = False,
        session_id: Annotated[str | None, Field(description=(
            "The session the commit belongs to (default: found from the commit)."))] = None,
        prompt: Annotated[str | None, Field(description=(
            "With continue_session: what the new session should do (default: the original "
            "task)."))] = None,
    ) -> Annotated[CallToolResult, RewindAnswer]:
        """Rewind without losing anything: create a new branch relay/rewind-<sha> at a
        snapshot commit. No existing branch moves and no file changes; optionally a new
        session continues the work from there."""
        scope = (await find_session(self.engine, session_id)).id if session_id else None
        result = await self.engine.history.rewind(sha.strip(), session_id=scope,
                                                  continue_=continue_session, prompt=prompt)
        text = (f"Created branch {result.branch} at {result.sha[:10]}; every existing branch "
                "is as it was.")
        if result.session_id:
            text += (f"\nSession {result.session_id} continues from there; follow it with "
                     "relay_session_events or relay_wait_session.")
        return ok(RewindAnswer(branch=result.branch, sha=result.sha, session_id=result.session_id),
                  text)

    @guarded
    async def review_comment(
        self,
        session_id: SessionId,
        sha: Sha,
        path: Annotated[str, Field(min_length=1, description=(
            "The file's path in the repository, as the diff shows it."))],
        line: Annotated[int, Field(ge=1, le=MAX_COUNT, description=(
            "The line number the comment is about."))],
        body: Annotated[str, Field(min_length=1, description=(
            "What the agent should change or consider."))],
        side: Annotated[Literal["old", "new"], Field(description=(
            "new (default): the line in the commit; old: the line before it."))] = "new",
    ) -> Annotated[CallToolResult, CommentAnswer]:
        """Comment on a line of a session's commit. The comment goes to the session's agent
        as its next instruction — at once when the agent is free (a finished session
        continues), otherwise after its current turn, never interrupting it."""
        row = await find_session(self.engine, session_id)
        comment = await self.engine.review.comment(row.id, sha.strip(), path, line, body, side)
        where = f"{comment.path}:{comment.line} ({comment.side}) of {comment.sha[:10]}"
        state = {"sent": "sent to the agent", "queued": "queued until the agent is free",
                 "failed": "could not be sent"}[comment.state]
        return ok(CommentAnswer(comment=comment),
                  f"Comment {comment.id} on {where}: {state}.\n> {comment.excerpt}")
