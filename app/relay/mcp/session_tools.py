"""The session tools: start, list, read events, wait, hand off, stop.

Sessions started here run inside the ``relay-cli mcp`` process, like the window's: they end
as ``interrupted`` when the client closes the server. Sessions other Relay processes run
(the window, ``relay-cli run``) can be listed, read, waited for and handed off (through the
database request the owning process answers), but only their own process can stop them.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from relay.core.errors import RelayError
from relay.core.events import EventRecord
from relay.core.models import PermissionPolicy, SessionRow, SessionSpec
from relay.core.present import clip, summary
from relay.engine.engine import Engine
from relay.mcp.approval import READS, RUNS_AGENTS, STOPS, require_approval
from relay.mcp.results import (
    SessionInfo,
    find_session,
    guarded,
    iso,
    ok,
    session_info,
    session_line,
)
from relay.runtimes.registry import available_runtimes

#: how often a wait looks at a session another process runs (its rows are all there is)
#: the longest a tool waits: MCP clients give up on long requests
MAX_WAIT_S = 600.0

CHAIN_HELP = (
    "Who runs the task, in order: 'runtime' or 'runtime:account' entries, e.g. ['claude'] or "
    "['claude:work', 'codex']. The first entry starts; when it hits a usage limit the task is "
    "handed (with a signed brief) to the next. Runtimes: "
    f"{', '.join(available_runtimes())} ('demo' is a scripted SIMULATION, no real agent). "
    "Accounts are the ones relay_wallet_summary lists.")
SESSION_HELP = "A Relay session id (a unique prefix is enough), as relay_list_sessions shows."

SessionId = Annotated[str, Field(min_length=1, description=SESSION_HELP)]


class StartedSession(BaseModel):
    session: SessionInfo
    chain: list[str]
    verify: list[list[str]]


class EventLine(BaseModel):
    """One stored event, rendered as the CLI renders it."""

    id: int
    run_id: str | None
    kind: str
    at: str | None
    simulated: bool
    text: str


class EventsPage(BaseModel):
    session_id: str
    state: str
    finished: bool
    events: list[EventLine]
    #: pass as after_id to get only newer events
    next_after_id: int
    #: more events after these (ask again with next_after_id)
    more: bool


class SessionList(BaseModel):
    sessions: list[SessionInfo]


class WaitResult(BaseModel):
    session: SessionInfo
    finished: bool
    timed_out: bool
    waited_s: float
    #: the last few events, newest last
    last_events: list[EventLine]


class HandoffResult(BaseModel):
    session_id: str
    to: str | None
    message: str


def event_line(record: EventRecord) -> EventLine:
    event = record.event
    text = summary(event)
    return EventLine(id=record.id, run_id=record.run_id, kind=event.kind, at=iso(event.ts),
                     simulated=event.simulated,
                     text=clip(text, 2000 if event.kind == "assistant_text" else 600))


def event_text(line: EventLine) -> str:
    sim = "[sim] " if line.simulated else ""
    return f"#{line.id} {line.kind}: {sim}{line.text}"


def split_verify(commands: list[str]) -> list[list[str]]:
    """Each command split like a shell would (quotes respected), never run through one."""
    out = []
    for command in commands:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise RelayError(f"Cannot read the verify command {command!r}: {exc}.",
                             "Quote it as you would in a shell, e.g. \"pytest -q 'tests/a b.py'\".") from exc
        if not argv:
            raise RelayError("A verify command is empty.", "Give a command such as 'pytest -q'.")
        out.append(argv)
    return out


def check_entry(entry: str) -> str:
    runtime, colon, account = entry.partition(":")
    if not runtime or (colon and not account):
        raise RelayError(f"{entry!r} is not a runtime[:account] entry.",
                         f"Use e.g. 'claude' or 'claude:work'; runtimes: {', '.join(available_runtimes())}.")
    return entry


class SessionTools:
    """The session tools over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def register(self, server: MCPServer) -> None:
        reads = READS
        server.add_tool(self.start_session, name="relay_start_session",
                        title="Start a Relay session", annotations=RUNS_AGENTS)
        server.add_tool(self.list_sessions, name="relay_list_sessions",
                        title="List Relay sessions", annotations=reads)
        server.add_tool(self.session_events, name="relay_session_events",
                        title="Read a session's events", annotations=reads)
        server.add_tool(self.wait_session, name="relay_wait_session",
                        title="Wait for a session to finish", annotations=reads)
        server.add_tool(self.handoff, name="relay_handoff", title="Hand a running session off now",
                        annotations=RUNS_AGENTS)
        server.add_tool(self.stop_session, name="relay_stop_session", title="Stop a session",
                        annotations=STOPS)

    async def _info(self, row: SessionRow) -> SessionInfo:
        return session_info(row, self.engine.is_running_here(row.id))

    @guarded
    async def start_session(
        self,
        task: Annotated[str, Field(min_length=1, description=(
            "What the agent should do, in plain words (it becomes the agent's prompt).")),
        ],
        repo: Annotated[str, Field(min_length=1, description=(
            "Absolute path of the git repository. The agent works in a new worktree on branch "
            "relay/<session>; the repository's own files are only read."))],
        chain: Annotated[list[str], Field(min_length=1, description=CHAIN_HELP)],
        model: Annotated[str | None, Field(description=(
            "Model name passed to the first entry's agent (default: its own default).")),
        ] = None,
        verify: Annotated[list[str] | None, Field(description=(
            "Acceptance commands run in the worktree after the agent finishes (and after each "
            "handoff), e.g. ['pytest -q']. Each is split like a shell line but never run "
            "through a shell. The session only completes when every one exits 0. Refused "
            "unless the user lets MCP clients run commands (mcp_require_approval = false).")),
        ] = None,
        permission: Annotated[Literal["read_only", "workspace", "full"], Field(description=(
            "read_only: read and run read-only commands; workspace (default): edit files and run "
            "commands in its worktree; full: no restrictions."))] = "workspace",
        on_limit: Annotated[Literal["auto", "handoff", "wait"], Field(description=(
            "On a usage limit: auto (wait when the reset is near, else hand off), handoff, or "
            "wait."))] = "auto",
        approvals: Annotated[Literal["ask", "read_only", "deny"], Field(description=(
            "When the agent asks permission for a tool call: deny (default: nobody has to "
            "answer), read_only (approve read-only actions, ask about the rest) or ask (the "
            "session waits; see relay_open_questions and relay_answer)."))] = "deny",
    ) -> Annotated[CallToolResult, StartedSession]:
        """Start a coding agent on a task in its own git worktree; returns at once with the
        session id. The session runs inside this MCP server's process (the Relay window shows
        it live); follow it with relay_session_events or relay_wait_session. It is
        interrupted if this server is closed before it finishes."""
        entries = [check_entry(e.strip()) for e in chain]
        if not Path(repo).expanduser().is_absolute():
            raise RelayError(f"{repo!r} is not an absolute path.",
                             "Give the repository's full path, e.g. /home/me/src/app.")
        argvs = split_verify(verify or [])
        require_approval(self.engine.config, argvs, "This session")
        spec = SessionSpec(repo=Path(repo), task=task, runtime=entries[0].partition(":")[0],
                           chain=entries if len(entries) > 1 or ":" in entries[0] else [],
                           model=model, permission=PermissionPolicy(permission),
                           verify=argvs, on_limit=on_limit, approvals=approvals)
        session_id = await self.engine.start_session(spec)
        info = await self._info(await self.engine.get_session(session_id))
        result = StartedSession(session=info, chain=entries, verify=argvs)
        sim = " (a SIMULATION: the scripted demo runtime)" if info.simulated else ""
        return ok(result, f"Started session {session_id} on {' → '.join(entries)}{sim}: "
                          f"{info.state}.\nFollow it with relay_session_events(session_id="
                          f"{session_id!r}) or relay_wait_session.")

    @guarded
    async def list_sessions(
        self,
        limit: Annotated[int, Field(ge=1, le=200, description="How many, newest first.")] = 20,
    ) -> Annotated[CallToolResult, SessionList]:
        """List Relay sessions, most recently updated first: id, task, state, runtime,
        branch, last update and token usage/cost (— where the agent did not report it)."""
        rows = await self.engine.list_sessions(limit)
        infos = [await self._info(r) for r in rows]
        text = "\n".join(session_line(i) for i in infos) if infos else (
            "No sessions yet. Start one with relay_start_session.")
        return ok(SessionList(sessions=infos), text)

    @guarded
    async def session_events(
        self,
        session_id: SessionId,
        after_id: Annotated[int, Field(ge=0, description=(
            "Only events with a larger id. 0 (default): the latest `limit` events.")),
        ] = 0,
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many events.")] = 50,
    ) -> Annotated[CallToolResult, EventsPage]:
        """Read a session's events (agent text, tool calls and results, turns with usage,
        limits, handoffs, verify results, state changes) as text lines with their ids. To
        poll, pass the returned next_after_id as after_id."""
        row = await find_session(self.engine, session_id)
        if after_id == 0:
            records = (await self.engine.session_events(row.id))[-limit:]
            more = False
        else:
            records = await self.engine.session_events(row.id, after_id, limit + 1)
            more = len(records) > limit
            records = records[:limit]
        lines = [event_line(r) for r in records]
        page = EventsPage(session_id=row.id, state=row.state, finished=row.finished, events=lines,
                          next_after_id=lines[-1].id if lines else after_id, more=more)
        head = f"Session {row.id} · {row.state} · {len(lines)} event(s)"
        tail = f"\n(more: ask again with after_id={page.next_after_id})" if more else ""
        return ok(page, "\n".join([head, *(event_text(e) for e in lines)]) + tail)

    @guarded
    async def wait_session(
        self,
        session_id: SessionId,
        timeout_s: Annotated[float, Field(gt=0, le=MAX_WAIT_S, description=(
            "Give up waiting after this many seconds (the session goes on).")),
        ] = 30.0,
    ) -> Annotated[CallToolResult, WaitResult]:
        """Wait until a session finishes (completed, failed, cancelled or interrupted) or
        the timeout passes; returns its state and its last events."""
        started = time.monotonic()
        row = await find_session(self.engine, session_id)
        row = await self.engine.wait_finished(row.id, timeout_s)
        info = await self._info(row)
        last = [event_line(r) for r in (await self.engine.session_events(row.id))[-5:]]
        result = WaitResult(session=info, finished=row.finished, timed_out=not row.finished,
                            waited_s=round(time.monotonic() - started, 2), last_events=last)
        head = (f"Session {row.id} finished: {row.state}." if row.finished else
                f"Session {row.id} is still {row.state} after {timeout_s:g} s.")
        return ok(result, "\n".join([head, session_line(info), *(event_text(e) for e in last)]))

    @guarded
    async def handoff(
        self,
        session_id: SessionId,
        to: Annotated[str | None, Field(description=(
            "Where the work goes: a runtime[:account] entry (default: the next entry of the "
            "session's chain). An entry not in the chain is inserted after the current one.")),
        ] = None,
    ) -> Annotated[CallToolResult, HandoffResult]:
        """Hand a running session to another agent or account now: Relay pauses the agent
        at a safe point, snapshots the worktree, and the next agent continues from a signed
        brief. Works for sessions any Relay process runs."""
        row = await find_session(self.engine, session_id)
        target = check_entry(to.strip()) if to else None
        message = await self.engine.request_handoff(row.id, target)
        return ok(HandoffResult(session_id=row.id, to=target, message=message),
                  f"Session {row.id}: {message}")

    @guarded
    async def stop_session(
        self,
        session_id: SessionId,
        timeout_s: Annotated[float, Field(gt=0, le=120, description=(
            "How long to wait for the agent to stop.")),
        ] = 30.0,
    ) -> Annotated[CallToolResult, SessionInfo]:
        """Stop a session, whichever Relay process runs it (its agent is stopped; the
        session ends cancelled, its worktree and branch stay). A finished session is left
        as it is."""
        row = await find_session(self.engine, session_id)
        if not row.finished:
            await self.engine.cancel_session(row.id)
            row = await self.engine.wait_finished(row.id, timeout_s)
        info = await self._info(row)
        return ok(info, session_line(info))
