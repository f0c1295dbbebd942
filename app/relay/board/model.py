"""The board's records: projects (a repository), tasks moving through stages, agents'
reports and decisions, the owner's comments and the sessions linked to a task.

Plain frozen dataclasses, as :class:`~relay.board.service.BoardService` returns them; times
are Unix milliseconds. The guard's :class:`~relay.core.guard.Environment` is a project's
environment as stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Literal

from relay.core.guard import Environment, GuardPolicy
from relay.core.live import HookedSession

__all__ = ["STAGES", "TOOL_NAMES", "Card", "Comment", "Decision", "Environment", "GuardPolicy", "Project",
           "Report", "SessionLink", "Stage", "Task", "TaskDetail", "project_of"]

Stage = Literal["plan", "dev", "review", "test", "live", "done"]
STAGES: tuple[Stage, ...] = ("plan", "dev", "review", "test", "live", "done")
#: the fields :meth:`BoardService.update_task` changes
TASK_FIELDS = ("title", "next_step", "waiting_on", "branch", "description")
#: the board's MCP tools (:mod:`relay.mcp.board_tools` registers them; ``relay-cli setup
#: claude`` allows exactly these in Claude Code)
TOOL_NAMES: tuple[str, ...] = (
    "board_projects", "board_tasks", "board_task_create", "board_task_update", "board_set_stage",
    "board_report", "board_decision", "board_comments", "board_ack_comments", "board_link")
LinkKind = Literal["relay", "claude"]
AuthorKind = Literal["owner", "agent"]


@dataclass(frozen=True, slots=True)
class Project:
    #: short and unique, upper-cased it is the tasks' key prefix ("relay" → "RELAY-3")
    slug: str
    name: str
    #: the repository's git root (absolute)
    repo: str


@dataclass(frozen=True, slots=True)
class Task:
    key: str
    #: the project's slug
    project: str
    title: str
    stage: Stage
    next_step: str | None
    waiting_on: str | None
    branch: str | None
    description: str | None
    #: starts at 1, +1 on every change (compare-and-set: ``expected_version``)
    version: int
    created_ms: int
    updated_ms: int
    #: when the task entered its stage
    stage_ms: int


@dataclass(frozen=True, slots=True)
class Report:
    id: int
    task: str
    author: str
    session_ref: str | None
    summary: str
    body: str
    created_ms: int


@dataclass(frozen=True, slots=True)
class Decision:
    id: int
    task: str
    text: str
    decided_by: str
    created_ms: int


@dataclass(frozen=True, slots=True)
class Comment:
    id: int
    task: str
    author_kind: AuthorKind
    author: str
    body: str
    created_ms: int
    #: when it reached an agent session (a hook's additionalContext or a Stop block)
    delivered_ms: int | None = None
    #: the session it reached (a Claude or Relay session id)
    delivered_to: str | None = None
    #: when the agent acknowledged it (board_ack_comments)
    acked_ms: int | None = None

    @property
    def open(self) -> bool:
        """An owner's comment not acknowledged yet."""
        return self.author_kind == "owner" and self.acked_ms is None


@dataclass(frozen=True, slots=True)
class SessionLink:
    """A session working on a task: a Relay session or a hooked Claude session."""

    session_ref: str
    kind: LinkKind
    #: what the session's hooks last said (None: no hook reported it)
    live: HookedSession | None = None
    #: a Relay session's state (None: not a Relay session, or not found)
    relay_state: str | None = None


@dataclass(frozen=True, slots=True)
class Card:
    """A task as a board column shows it."""

    task: Task
    sessions: list[SessionLink] = field(default_factory=list)
    #: a linked session waits for a permission or an answer
    needs_input: bool = False
    last_report: Report | None = None
    #: the linked session's todos ({content, status, activeForm})
    plan: list[dict[str, Any]] = field(default_factory=list)
    #: the owner's comments not acknowledged yet
    open_comments: int = 0


@dataclass(frozen=True, slots=True)
class TaskDetail:
    card: Card
    reports: list[Report] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)


def project_of(cwd: str, projects: Iterable[Project]) -> Project | None:
    """The project whose repository holds the folder ``cwd`` (the innermost one), if any."""
    if not cwd:
        return None
    folder = PurePath(cwd)
    holding = [p for p in projects if folder.is_relative_to(p.repo)]
    return max(holding, key=lambda p: len(PurePath(p.repo).parts), default=None)
