"""The talk tools: say something to a session's agent, read its queue, interrupt its turn,
fork it (``engine.talk``).

A message to a finished session is a follow-up (a new run of the same session, in the
host); to a running one it is queued for the next turn boundary — never killing the turn —
unless ``mode`` steers it in now (runtimes that can) or interrupts the turn first. The texts
below are what agents read: docs/mcp.md lists them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from relay.core.events import MessageChanged
from relay.core.models import MAX_TASK_BYTES, ForkResult, SessionMessage
from relay.core.present import message_line
from relay.engine.engine import Engine
from relay.mcp.approval import READS, RUNS_AGENTS, STOPS
from relay.mcp.results import find_session, guarded, ok
from relay.mcp.session_tools import SessionId

#: what an MCP client is recorded as having sent
SOURCE = "mcp"


class Said(BaseModel):
    message: SessionMessage


class Messages(BaseModel):
    session_id: str
    messages: list[SessionMessage]


class Interrupted(BaseModel):
    session_id: str
    message: str


class Forked(BaseModel):
    fork: ForkResult


def message_text(m: SessionMessage) -> str:
    """``<id> you (queued): text`` — the stream's own line for a message."""
    line = message_line(MessageChanged(message_id=m.id, state=m.state, mode=m.mode,
                                       message_kind=m.kind, how=m.how, text=m.text,
                                       source=m.source, error=m.error))
    return f"{m.id} {line}"


class TalkTools:
    """``engine.talk`` over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def register(self, server: MCPServer) -> None:
        tools = (
            (self.say, "say_to_session", "Send a message to a session's agent", RUNS_AGENTS),
            (self.messages, "session_messages", "A session's queued messages", READS),
            (self.interrupt, "interrupt_session", "Interrupt a session's turn", STOPS),
            (self.fork, "fork_session", "Fork a session", RUNS_AGENTS),
        )
        for fn, name, title, hints in tools:
            server.add_tool(fn, name=name, title=title, annotations=hints)

    @guarded
    async def say(
        self,
        session_id: SessionId,
        text: Annotated[str, Field(min_length=1, max_length=MAX_TASK_BYTES, description=(
            "The message to the agent."))],
        mode: Annotated[Literal["queue", "now", "interrupt"], Field(description=(
            "queue (default): delivered when the running turn ends, never interrupting it; "
            "now: steered into the running turn (only runtimes that can; else an "
            "unsupported_capability error and nothing is sent); interrupt: stop the "
            "running turn, then send it. A finished session takes it as a follow-up "
            "whatever the mode."))] = "queue",
        attachments: Annotated[list[str] | None, Field(max_length=50, description=(
            "Paths of files or images the agent should read (inside the session's worktree, "
            "or absolute)."))] = None,
    ) -> Annotated[CallToolResult, Said]:
        """Send a message to a Relay session's agent. A finished session continues with it
        (a new run of the same session, in the same worktree, continuing the agent's own
        conversation); a running one gets it at the end of its current turn (mode queue),
        mid-turn (now) or after its turn is interrupted (interrupt). Queued messages can be
        read with session_messages."""
        row = await find_session(self.engine, session_id)
        sent = await self.engine.talk.say(row.id, text, mode=mode, source=SOURCE,
                                          attachments=attachments or ())
        return ok(Said(message=sent), message_text(sent))

    @guarded
    async def messages(
        self,
        session_id: SessionId,
        all_messages: Annotated[bool, Field(description=(
            "Every message, delivered and cancelled ones too (default: only those not "
            "delivered yet)."))] = False,
    ) -> Annotated[CallToolResult, Messages]:
        """The messages sent to a session's agent, oldest first: by default those still
        queued (they go when its current turn ends), each with its state, mode, source and
        text."""
        row = await find_session(self.engine, session_id)
        found = await self.engine.talk.messages(row.id, pending=not all_messages)
        text = "\n".join(message_text(m) for m in found) or (
            f"Session {row.id} has no {'' if all_messages else 'queued '}messages.")
        return ok(Messages(session_id=row.id, messages=found), text)

    @guarded
    async def interrupt(self, session_id: SessionId) -> Annotated[CallToolResult, Interrupted]:
        """Stop a session's running turn without ending the session: its queued messages go
        next; with none it waits (state interrupted) until say_to_session continues it.
        The worktree and the conversation stay."""
        row = await find_session(self.engine, session_id)
        said = await self.engine.talk.interrupt(row.id)
        return ok(Interrupted(session_id=row.id, message=said), said)

    @guarded
    async def fork(
        self,
        session_id: SessionId,
        at_event: Annotated[int | None, Field(ge=0, description=(
            "Fork at this event of the session (an id from relay_session_events)."))] = None,
        at_commit: Annotated[str | None, Field(min_length=4, max_length=64, description=(
            "Or at this snapshot commit (from relay_session_history). Default: the "
            "session's last snapshot."))] = None,
        prompt: Annotated[str | None, Field(min_length=1, max_length=MAX_TASK_BYTES,
                                            description=(
            "The fork's task (default: the session's own)."))] = None,
    ) -> Annotated[CallToolResult, Forked]:
        """Start a new session from a point of an existing one, in its own new worktree and
        branch at that snapshot, carrying the agent's conversation up to there where the
        runtime can (else Relay's signed brief). The original session is untouched."""
        row = await find_session(self.engine, session_id)
        forked = await self.engine.talk.fork(row.id, at_event=at_event, at_commit=at_commit,
                                             prompt=prompt)
        carried = "the conversation" if forked.how == "conversation" else "the signed brief"
        text = (f"Forked {forked.parent_id} as session {forked.session_id}"
                + (f" at {forked.sha[:12]}" if forked.sha else "")
                + (f" on branch {forked.branch}" if forked.branch else "")
                + f", carrying {carried}" + (f" (turn {forked.turns})" if forked.turns else "")
                + ". It runs in the host: follow it with relay_session_events.")
        return ok(Forked(fork=forked), text)
