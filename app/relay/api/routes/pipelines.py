"""``/api/v1/pipelines``: a repository's pipeline file and its trust, validate, plan (a goal
turned into a pipeline by an agent), and runs — start, status, log, cancel, resume. Runs and
the planner's session are driven by the host."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query

from relay.api.context import EngineDep
from relay.api.schemas import (
    ERRORS,
    Done,
    PipelineBody,
    PipelineStart,
    PlanBody,
    RepoPipelines,
    Started,
    TrustBody,
)
from relay.core.errors import PipelineUntrustedError
from relay.pipelines import trust
from relay.pipelines.ledger import LogEntry, RunInfo, StepInfo
from relay.pipelines.planner import Plan
from relay.pipelines.validate import Problem, problems

router = APIRouter(prefix="/api/v1/pipelines", tags=["pipelines"], responses=ERRORS)


@router.get("/source", response_model=RepoPipelines)
async def repo_source(repo: Path, eng: EngineDep) -> RepoPipelines:
    """The repository's ``.relay/pipelines.json`` as read now, and whether it runs commands
    nobody has accepted (in this version of the file)."""
    source = await asyncio.to_thread(trust.repo_source, repo)
    return RepoPipelines(source=source, needs_trust=source is not None
                         and eng.pipelines.needs_trust(source))


@router.post("/trust", response_model=Done)
async def trust_source(body: TrustBody, eng: EngineDep) -> Done:
    """Accept the commands of the file at ``path`` — the version whose SHA-256 is
    ``digest``, the one the user was shown; a file changed since is refused."""
    source = await asyncio.to_thread(trust.read_source, body.path)
    if source.digest != body.digest:
        raise PipelineUntrustedError(f"{body.path} changed since it was read; its commands "
                                     "were not accepted.", [], "Read it again and check them.")
    await eng.pipelines.trust(source)
    return Done(message=f"accepted {len(source.commands)} command(s)")


@router.get("/trusted/{digest}", response_model=bool)
async def trusted(digest: str, eng: EngineDep) -> bool:
    """Whether the user accepted the commands of the pipeline file whose SHA-256 is
    ``digest`` (that version of it)."""
    return eng.pipelines.ledger.trusted(digest)


@router.post("/validate", response_model=list[Problem])
async def validate(body: PipelineBody) -> list[Problem]:
    """Everything wrong with the pipeline (empty: it may run)."""
    return await asyncio.to_thread(problems, body.pipeline)


@router.post("/plan", response_model=Plan)
async def plan(body: PlanBody, eng: EngineDep) -> Plan:
    """Ask ``runtime`` for a pipeline that reaches ``goal`` (a read-only session in the
    host, waited for); the answer is validated, never run: a pipeline, or its problems."""
    from relay.pipelines import planner

    return await planner.plan(eng, body.goal, body.repo, body.runtime, body.model,
                              runtimes=body.runtimes)


@router.post("/runs", status_code=201, response_model=Started)
async def start(body: PipelineStart, eng: EngineDep) -> Started:
    """Validate the pipeline and start a run from the repository's HEAD; the host drives
    it whatever happens to the client."""
    return Started(id=await eng.pipelines.start(body.pipeline, body.repo, body.concurrency,
                                                body.budget_usd))


@router.get("/runs", response_model=list[RunInfo])
async def runs(eng: EngineDep,
               limit: Annotated[int, Query(ge=1, le=10_000)] = 50) -> list[RunInfo]:
    """The latest runs, newest first."""
    return eng.pipelines.runs(limit)


@router.get("/runs/{run_id}", response_model=tuple[RunInfo, list[StepInfo]])
async def status(run_id: str, eng: EngineDep) -> tuple[RunInfo, list[StepInfo]]:
    """A run (by id or unique prefix) and its steps as last committed."""
    return eng.pipelines.status(run_id)


@router.get("/runs/{run_id}/log", response_model=list[LogEntry])
async def log(run_id: str, eng: EngineDep,
              after: Annotated[int, Query(ge=0)] = 0) -> list[LogEntry]:
    """The run's log after the entry id ``after``."""
    return eng.pipelines.log(run_id, after)


@router.post("/runs/{run_id}/cancel", response_model=RunInfo)
async def cancel(run_id: str, eng: EngineDep) -> RunInfo:
    """Cancel a run: its running steps stop, the rest do not start."""
    return await eng.pipelines.cancel(run_id)


@router.post("/runs/{run_id}/resume", response_model=Started)
async def resume(run_id: str, eng: EngineDep) -> Started:
    """Take up an unfinished run; the host drives it from now on."""
    return Started(id=await eng.pipelines.resume(run_id))


@router.get("/runs/{run_id}/wait", response_model=RunInfo)
async def wait(run_id: str, eng: EngineDep,
               timeout_s: Annotated[float, Query(gt=0, le=50)] = 25.0) -> RunInfo:
    """The run once it is finished, or as it is when ``timeout_s`` passes (a long poll:
    ask again until ``finished``)."""
    run = eng.pipelines.status(run_id)[0]
    try:
        return await asyncio.wait_for(asyncio.shield(eng.pipelines.wait(run.id)), timeout_s)
    except TimeoutError:
        return eng.pipelines.status(run.id)[0]
