"""The board tools: an agent keeps its task on Relay's board (``engine.board``).

The owner watches every task of every repository on one board (the Relay window, the web
board, ``relay-cli board``). An agent creates its task (or finds it), links its session to
it — the SessionStart hook hands a Claude Code session its own session id — moves it
through the stages plan → dev → review → test → live → done, reports what it did, records
the decisions taken, and reads the owner's comments and acknowledges them. The texts below
are what agents read: docs/mcp.md lists them.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from relay.board.model import STAGES, Card, Comment, Decision, Project, Report, SessionLink, Task
from relay.core.errors import RelayError
from relay.core.present import clip
from relay.engine.engine import Engine
from relay.mcp.approval import READS
from relay.mcp.results import guarded, ok

#: a board write: changes Relay's board only (nothing in a repository, no command run)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                         open_world_hint=False)

Key = Annotated[str, Field(min_length=1, max_length=100, description=(
    "The task's key, e.g. RELAY-3 (board_tasks lists them; board_task_create returns it)."))]
SessionId = Annotated[str | None, Field(max_length=200, description=(
    "Your own session id: the Claude session id the SessionStart hook gave you (\"Relay "
    "board: your session id is …\"), or your Relay session id. Says who did it."))]
StageArg = Annotated[str, Field(description=(
    "One of plan, dev, review, test, live, done."), json_schema_extra={"enum": list(STAGES)})]
Line = Annotated[str | None, Field(max_length=500)]


class ProjectsResult(BaseModel):
    projects: list[Project]


class CardsResult(BaseModel):
    cards: list[Card]


class TaskResult(BaseModel):
    task: Task


class ReportResult(BaseModel):
    report: Report


class DecisionResult(BaseModel):
    decision: Decision


class CommentsResult(BaseModel):
    task: str
    comments: list[Comment]


class AckResult(BaseModel):
    task: str
    acked: int


class LinkResult(BaseModel):
    task: str
    link: SessionLink


def actor(session_id: str | None) -> str:
    """Who an agent's write is recorded as: ``agent:<its session>``."""
    return f"agent:{session_id.strip()}" if session_id and session_id.strip() else "agent"


def task_line(task: Task) -> str:
    line = f"{task.key} [{task.stage}] {clip(task.title, 120)} (version {task.version})"
    if task.next_step:
        line += f" · next: {clip(task.next_step, 120)}"
    if task.waiting_on:
        line += f" · waiting on: {clip(task.waiting_on, 120)}"
    return line


def card_line(card: Card) -> str:
    states = ", ".join(f"{s.session_ref[:12]} {s.live.state if s.live else s.relay_state or '?'}"
                       for s in card.sessions)
    line = task_line(card.task)
    if states:
        line += f" · sessions: {states}"
    if card.needs_input:
        line += " · NEEDS INPUT"
    if card.open_comments:
        line += f" · {card.open_comments} open comment(s)"
    if card.last_report:
        line += f"\n    last report: {clip(card.last_report.summary, 200)}"
    return line


def comment_line(c: Comment) -> str:
    state = "acknowledged" if c.acked_ms else "delivered" if c.delivered_ms else "new"
    return f"#{c.id} {c.author_kind} {c.author} ({state}): {clip(c.body, 2000)}"


class BoardTools:
    """The board over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def register(self, server: MCPServer) -> None:
        tools = (
            (self.projects, "board_projects", "The board's projects", READS),
            (self.tasks, "board_tasks", "The board's tasks", READS),
            (self.task_create, "board_task_create", "Create a task on the board", WRITES),
            (self.task_update, "board_task_update", "Update a board task", WRITES),
            (self.set_stage, "board_set_stage", "Move a task to a stage", WRITES),
            (self.report, "board_report", "Report on a task", WRITES),
            (self.decision, "board_decision", "Record a decision on a task", WRITES),
            (self.comments, "board_comments", "The owner's comments on a task", READS),
            (self.ack_comments, "board_ack_comments", "Acknowledge comments", WRITES),
            (self.link, "board_link", "Link your session to a task", WRITES),
        )
        for fn, name, title, hints in tools:
            server.add_tool(fn, name=name, title=title, annotations=hints)

    @guarded
    async def projects(self) -> Annotated[CallToolResult, ProjectsResult]:
        """The projects on Relay's board: one per git repository, with the slug its task
        keys start with (project FOO has tasks FOO-1, FOO-2, …)."""
        found = await self.engine.board.projects()
        text = "\n".join(f"{p.slug} · {p.name} · {p.repo}" for p in found) or "No projects yet."
        return ok(ProjectsResult(projects=found), text)

    @guarded
    async def tasks(
        self,
        project: Annotated[str | None, Field(description=(
            "A project's slug (board_projects); default: every project."))] = None,
        done: Annotated[bool, Field(description="Include tasks in stage done.")] = False,
    ) -> Annotated[CallToolResult, CardsResult]:
        """The tasks on the board with their stage, next step, what they wait on, the live
        state of the sessions working on them, whether one needs input, open comments and
        the last report. Look here for your task before creating one."""
        found = await self.engine.board.cards(project, done=done)
        text = "\n".join(card_line(c) for c in found) or "No tasks."
        return ok(CardsResult(cards=found), text)

    @guarded
    async def task_create(
        self,
        title: Annotated[str, Field(min_length=1, max_length=500, description=(
            "What the task is, in one line."))],
        repo: Annotated[str | None, Field(description=(
            "The repository you work in (an absolute path; its git root is the project). "
            "Give this or project."))] = None,
        project: Annotated[str | None, Field(description=(
            "A project's slug instead of repo."))] = None,
        stage: StageArg = "plan",
        next_step: Line = None,
        session_id: SessionId = None,
    ) -> Annotated[CallToolResult, TaskResult]:
        """Create a task on the board for the work you are doing and get its key. With
        session_id, your session is linked to it at once (the owner sees your live state on
        the card and their comments reach you). Create one task per piece of work; check
        board_tasks first so as not to create it twice."""
        where = repo or project
        if not where or (repo and project):
            raise RelayError("Give the repository (repo) or the project's slug (project), "
                             "one of them.", "board_projects lists the projects.")
        task = await self.engine.board.create_task(where, title, stage=stage,
                                                   next_step=next_step, session=session_id,
                                                   actor=actor(session_id))
        return ok(TaskResult(task=task), f"Created {task_line(task)}")

    @guarded
    async def task_update(
        self,
        key: Key,
        title: Line = None,
        next_step: Annotated[str | None, Field(max_length=500, description=(
            "What happens next, in one line."))] = None,
        waiting_on: Annotated[str | None, Field(max_length=500, description=(
            "What or whom the task waits for (empty string: nothing)."))] = None,
        branch: Line = None,
        description: Annotated[str | None, Field(max_length=64_000)] = None,
        expected_version: Annotated[int | None, Field(description=(
            "The task's version you read; the update is refused if it changed since."))] = None,
        session_id: SessionId = None,
    ) -> Annotated[CallToolResult, TaskResult]:
        """Update your task's title, next step, what it waits on, its branch or its
        description (only the fields given change). Keep next_step current: it is what the
        owner reads on the card."""
        given = {"title": title, "next_step": next_step, "waiting_on": waiting_on,
                 "branch": branch, "description": description}
        fields = {k: v for k, v in given.items() if v is not None}
        if not fields:
            raise RelayError("Nothing to update.", "Give title, next_step, waiting_on, branch "
                             "or description.")
        task = await self.engine.board.update_task(key, expected_version=expected_version,
                                                   actor=actor(session_id), **fields)
        return ok(TaskResult(task=task), f"Updated {task_line(task)}")

    @guarded
    async def set_stage(
        self, key: Key, stage: StageArg,
        note: Annotated[str | None, Field(max_length=2000, description=(
            "Why, in a sentence (shown with the move)."))] = None,
        session_id: SessionId = None,
    ) -> Annotated[CallToolResult, TaskResult]:
        """Move your task to a stage: plan (deciding what to do), dev (building it), review
        (waiting for review), test (being tested), live (deployed), done. Move it as the
        work moves: the owner follows the board."""
        task = await self.engine.board.set_stage(key, stage, actor=actor(session_id), note=note)
        return ok(TaskResult(task=task), f"Moved {task_line(task)}")

    @guarded
    async def report(
        self, key: Key,
        summary: Annotated[str, Field(min_length=1, max_length=500, description=(
            "What you did or found, in one line (shown on the card)."))],
        body: Annotated[str, Field(max_length=64_000, description=(
            "The details (plain text or Markdown)."))] = "",
        session_id: SessionId = None,
    ) -> Annotated[CallToolResult, ReportResult]:
        """Add a report to your task: what you did, what you found, what is left. Report at
        each milestone and when you stop, so the owner knows where things stand."""
        report = await self.engine.board.add_report(key, summary, body,
                                                    author=actor(session_id),
                                                    session=session_id)
        return ok(ReportResult(report=report), f"Report #{report.id} added to {key}.")

    @guarded
    async def decision(
        self, key: Key,
        text: Annotated[str, Field(min_length=1, max_length=64_000, description=(
            "The decision and why, e.g. 'Use SQLite, not Postgres: one user, one machine'."))],
        session_id: SessionId = None,
    ) -> Annotated[CallToolResult, DecisionResult]:
        """Record a decision taken on your task (a choice of design, library, scope) so the
        owner and the agents after you know it and why."""
        decision = await self.engine.board.add_decision(key, text,
                                                        decided_by=actor(session_id))
        return ok(DecisionResult(decision=decision), f"Decision #{decision.id} on {key}.")

    @guarded
    async def comments(
        self, key: Key,
        unread: Annotated[bool, Field(description=(
            "Only the comments not acknowledged yet."))] = False,
    ) -> Annotated[CallToolResult, CommentsResult]:
        """The comments on your task — the owner's instructions and questions first of all.
        Read them when Relay tells you there are new ones, act on them, then acknowledge
        them with board_ack_comments."""
        found = await self.engine.board.comments(key, unread=unread)
        text = "\n".join(comment_line(c) for c in found) or f"No {'unread ' if unread else ''}" \
                                                            f"comments on {key}."
        return ok(CommentsResult(task=key, comments=found), text)

    @guarded
    async def ack_comments(
        self, key: Key,
        ids: Annotated[list[int] | None, Field(description=(
            "The comments' ids (#N in board_comments); default: every comment delivered to "
            "you so far."))] = None,
        session_id: SessionId = None,
    ) -> Annotated[CallToolResult, AckResult]:
        """Acknowledge the owner's comments once you have read them and acted on them (or
        said why not). Until you do, Relay reminds you of them when you stop."""
        acked = await self.engine.board.ack_comments(key, ids, session=session_id)
        return ok(AckResult(task=key, acked=acked), f"Acknowledged {acked} comment(s) on {key}.")

    @guarded
    async def link(
        self, key: Key,
        session_id: Annotated[str, Field(min_length=1, max_length=200, description=(
            "Your session id: the Claude session id the SessionStart hook gave you, or your "
            "Relay session id."))],
    ) -> Annotated[CallToolResult, LinkResult]:
        """Link your session to a task: the card shows your live state (working, needs
        input, idle…) and your plan, and the owner's comments on the task reach you as
        context on your next prompt or tool call."""
        found = await self.engine.board.link(key, session_id, actor=actor(session_id))
        return ok(LinkResult(task=key, link=found), f"Linked {session_id} to {key}.")
