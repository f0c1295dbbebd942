"""``/api/v1/board``: the board over the host — projects, their tasks moving through stages,
reports, decisions, the owner's comments, session links, the live states of hooked agent
sessions and each project's guard environments.

Every route is a thin call of ``engine.board`` (:class:`relay.board.service.BoardService`)
answering its own dataclasses; refusals are its :class:`~relay.core.errors.RelayError`\\ s as
JSON ``{"error": {"code", "message", "hint"}}`` (relay.api.errors). The client's
``client.board`` carries the service's method names (relay.api.client_board).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import Field

from relay.api.context import EngineDep
from relay.api.schemas import ERRORS, Done, Strict
from relay.board.model import (
    STAGES,
    Card,
    Comment,
    Decision,
    Project,
    Report,
    SessionLink,
    Task,
    TaskDetail,
)
from relay.core.guard import Environment, EnvKind, EnvRefs, GuardPolicy, Level
from relay.core.live import HookedSession

router = APIRouter(prefix="/api/v1/board", tags=["board"], responses=ERRORS)

#: a task's title, a report's summary… one line; a body or a description a page
LINE, PAGE = 500, 64_000
Stage = Annotated[str, Field(description=f"one of {', '.join(STAGES)}")]


class ProjectBody(Strict):
    repo: Path


class TaskCreate(Strict):
    #: a repository path (its git root becomes the project) or a project's slug
    repo_or_project: str = Field(min_length=1, max_length=4096)
    title: str = Field(min_length=1, max_length=LINE)
    stage: Stage = "plan"
    next_step: str | None = Field(None, max_length=LINE)
    waiting_on: str | None = Field(None, max_length=LINE)
    branch: str | None = Field(None, max_length=LINE)
    description: str | None = Field(None, max_length=PAGE)
    #: a session to link the new task to (a Relay session id or a Claude session id)
    session: str | None = Field(None, max_length=200)
    actor: str = Field("owner", max_length=200)


class TaskPatch(Strict):
    title: str | None = Field(None, min_length=1, max_length=LINE)
    next_step: str | None = Field(None, max_length=LINE)
    waiting_on: str | None = Field(None, max_length=LINE)
    branch: str | None = Field(None, max_length=LINE)
    description: str | None = Field(None, max_length=PAGE)
    #: refuse the change (version_conflict) when the task changed since this version
    expected_version: int | None = None
    actor: str = Field("owner", max_length=200)


class StageBody(Strict):
    stage: Stage
    note: str | None = Field(None, max_length=PAGE)
    actor: str = Field("owner", max_length=200)
    #: refuse the move (version_conflict) when the task changed since this version
    expected_version: int | None = None


class ReportBody(Strict):
    summary: str = Field(min_length=1, max_length=LINE)
    body: str = Field("", max_length=PAGE)
    author: str = Field(min_length=1, max_length=200)
    session: str | None = Field(None, max_length=200)


class DecisionBody(Strict):
    text: str = Field(min_length=1, max_length=PAGE)
    decided_by: str = Field(min_length=1, max_length=200)


class CommentBody(Strict):
    body: str = Field(min_length=1, max_length=PAGE)
    author: str = Field("owner", max_length=200)
    author_kind: str = Field("owner", pattern="^(owner|agent)$")


class AckBody(Strict):
    #: the comments acknowledged (None: every one delivered so far)
    ids: list[int] | None = None
    session: str | None = Field(None, max_length=200)


class Acked(Strict):
    acked: int


class LinkBody(Strict):
    session_ref: str = Field(min_length=1, max_length=200)
    actor: str = Field("owner", max_length=200)


class EnvironmentBody(Strict):
    """An environment as ``PUT …/environments/{name}`` takes it (references only, never a
    secret: the board refuses a value that looks like one)."""

    kind: EnvKind
    level: Level
    refs: dict[str, list[str]] = Field(default_factory=dict)
    notes: str = Field("", max_length=LINE)

    def environment(self, name: str) -> Environment:
        unknown = sorted(set(self.refs) - set(EnvRefs.__dataclass_fields__))
        if unknown:
            from relay.core.errors import ApiError

            raise ApiError(f"Unknown reference kind(s): {', '.join(unknown)}.",
                           f"Use {', '.join(EnvRefs.__dataclass_fields__)}.")
        refs = EnvRefs(**{k: tuple(v) for k, v in self.refs.items()})
        return Environment(name=name, kind=self.kind, level=self.level, refs=refs,
                           notes=self.notes)


# -- projects and cards --------------------------------------------------------------------

@router.get("/projects", response_model=list[Project])
async def projects(eng: EngineDep) -> list[Project]:
    """Every project (a repository) on the board."""
    return await eng.board.projects()


@router.post("/projects", response_model=Project)
async def project_for(body: ProjectBody, eng: EngineDep) -> Project:
    """The project of the repository at ``repo`` (its git root), made on first use."""
    return await eng.board.project_for(body.repo)


@router.get("/cards", response_model=list[Card])
async def cards(eng: EngineDep, project: str | None = None, done: bool = True) -> list[Card]:
    """The cards of one project (its slug) or of all: each task with its sessions' live
    states, whether one needs input, its last report and its plan (``done``: with the tasks
    in stage done)."""
    return await eng.board.cards(project, done=done)


@router.get("/live", response_model=list[HookedSession])
async def live(eng: EngineDep) -> list[HookedSession]:
    """The live state of every agent session whose hooks reached this host."""
    return eng.board.live_states().all()


@router.get("/unlinked", response_model=list[HookedSession])
async def unlinked(eng: EngineDep, project: str | None = None) -> list[HookedSession]:
    """Sessions without a task: the hooked sessions no open link names (not ended, a hook
    in the last 24 hours), newest first; ``project``: those in its repository."""
    return await eng.board.unlinked(project or None)


@router.get("/guard-policy", response_model=GuardPolicy)
async def guard_policy(repo: Path, eng: EngineDep, worktree: Path | None = None) -> GuardPolicy:
    """What the guard checks a tool call in ``worktree`` of ``repo`` against."""
    return await eng.board.guard_policy(repo, worktree)


# -- tasks ---------------------------------------------------------------------------------

@router.post("/tasks", status_code=201, response_model=Task)
async def create_task(body: TaskCreate, eng: EngineDep) -> Task:
    """A new task of the project (a repository path or a slug)."""
    fields = body.model_dump(exclude={"repo_or_project", "title"})
    return await eng.board.create_task(body.repo_or_project, body.title, **fields)


@router.get("/tasks/{key}", response_model=TaskDetail)
async def task(key: str, eng: EngineDep) -> TaskDetail:
    """The task's card, reports, decisions and comments."""
    return await eng.board.task(key)


@router.patch("/tasks/{key}", response_model=Task)
async def update_task(key: str, body: TaskPatch, eng: EngineDep) -> Task:
    """Change the fields given (title, next step, waiting on, branch, description)."""
    fields: dict[str, Any] = body.model_dump(exclude_unset=True,
                                             exclude={"expected_version", "actor"})
    return await eng.board.update_task(key, expected_version=body.expected_version,
                                       actor=body.actor, **fields)


@router.post("/tasks/{key}/stage", response_model=Task)
async def set_stage(key: str, body: StageBody, eng: EngineDep) -> Task:
    """Move the task to ``stage`` (with an optional note)."""
    return await eng.board.set_stage(key, body.stage, actor=body.actor, note=body.note,
                                     expected_version=body.expected_version)


@router.post("/tasks/{key}/reports", status_code=201, response_model=Report)
async def add_report(key: str, body: ReportBody, eng: EngineDep) -> Report:
    """An agent's (or anyone's) report on the task."""
    return await eng.board.add_report(key, body.summary, body.body, author=body.author,
                                      session=body.session)


@router.post("/tasks/{key}/decisions", status_code=201, response_model=Decision)
async def add_decision(key: str, body: DecisionBody, eng: EngineDep) -> Decision:
    """A decision taken on the task."""
    return await eng.board.add_decision(key, body.text, decided_by=body.decided_by)


@router.post("/tasks/{key}/comments", status_code=201, response_model=Comment)
async def comment(key: str, body: CommentBody, eng: EngineDep) -> Comment:
    """A comment on the task; the owner's reach the linked session at its next hook."""
    return await eng.board.comment(key, body.body, author=body.author,
                                   author_kind=body.author_kind)


@router.get("/tasks/{key}/comments", response_model=list[Comment])
async def comments(key: str, eng: EngineDep, unread: bool = False) -> list[Comment]:
    """The task's comments (``unread``: those not acknowledged yet)."""
    return await eng.board.comments(key, unread=unread)


@router.post("/tasks/{key}/comments/ack", response_model=Acked)
async def ack_comments(key: str, body: AckBody, eng: EngineDep) -> Acked:
    """Acknowledge the comments ``ids`` (all delivered ones when none are named)."""
    return Acked(acked=await eng.board.ack_comments(key, body.ids, session=body.session))


@router.post("/tasks/{key}/links", status_code=201, response_model=SessionLink)
async def link(key: str, body: LinkBody, eng: EngineDep) -> SessionLink:
    """Link a session (a Relay session id or a Claude session id) to the task."""
    return await eng.board.link(key, body.session_ref, actor=body.actor)


@router.delete("/tasks/{key}/links/{ref}", response_model=Done)
async def unlink(key: str, ref: str, eng: EngineDep,
                 actor: Annotated[str, Query(max_length=200)] = "owner") -> Done:
    """The session no longer works on the task."""
    await eng.board.unlink(key, ref, actor=actor)
    return Done(message=f"unlinked {ref} from {key}")


# -- the guard's environments ----------------------------------------------------------------

@router.get("/projects/{slug}/environments", response_model=list[Environment])
async def environments(slug: str, eng: EngineDep) -> list[Environment]:
    """The project's environments: kind, access level, how each is reached."""
    return await eng.board.environments(slug)


@router.put("/projects/{slug}/environments/{name}", response_model=Environment)
async def set_environment(slug: str, name: str, body: EnvironmentBody, eng: EngineDep,
                          actor: Annotated[str, Query(max_length=200)] = "owner") -> Environment:
    """Add the environment ``name`` or replace it."""
    return await eng.board.set_environment(slug, body.environment(name), actor=actor)


@router.delete("/projects/{slug}/environments/{name}", response_model=Done)
async def remove_environment(slug: str, name: str, eng: EngineDep,
                             actor: Annotated[str, Query(max_length=200)] = "owner") -> Done:
    """Remove the environment ``name`` from the project."""
    await eng.board.remove_environment(slug, name, actor=actor)
    return Done(message=f"removed {name} from {slug}")
