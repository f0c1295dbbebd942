"""The pipeline tools: list a repository's pipelines, start a run, read (or wait for) a run.

A run started here is driven by this ``relay-cli mcp`` process. If the client closes the
server first, the run stays unfinished with its finished steps saved: the window (or
``relay-cli recover`` / ``relay-cli pipeline resume RUN``) takes it up.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from relay.core.errors import RelayError
from relay.core.models import Usd
from relay.core.present import clip
from relay.engine.engine import Engine
from relay.mcp.approval import READS, RUNS_AGENTS, require_approval
from relay.mcp.results import guarded, ms_iso, ok
from relay.pipelines import files, trust
from relay.pipelines.ledger import RunInfo, StepInfo
from relay.pipelines.present import run_summary
from relay.pipelines.validate import problems
from relay.runtimes.registry import adapter_class

RepoPath = Annotated[str, Field(min_length=1, description=(
    "Absolute path of the git repository (its pipelines are in .relay/pipelines.json)."))]


class PipelineInfo(BaseModel):
    name: str
    description: str
    steps: list[str]
    problems: list[str]
    #: every command the pipeline runs (``node · verify[i]: line``)
    commands: list[str]


class PipelineList(BaseModel):
    repo: str
    pipelines: list[PipelineInfo]


class PipelineStep(BaseModel):
    id: str
    state: str
    attempt: int
    session_id: str | None
    cost_usd: float | None
    error: str | None
    commit: str | None
    files: list[str]
    output: str


class PipelineRun(BaseModel):
    id: str
    name: str
    repo: str
    state: str
    finished: bool
    reason: str | None
    summary: str
    concurrency: int
    budget_usd: float | None
    base_commit: str | None
    result_commit: str | None
    #: the branch holding the run's result (once it succeeded)
    result_branch: str | None
    created: str | None
    ended: str | None
    #: steps on the scripted demo runtime (a SIMULATION)
    simulated_steps: list[str]
    steps: list[PipelineStep]


def run_model(run: RunInfo, steps: list[StepInfo]) -> PipelineRun:
    simulated = [n.id for n in run.pipeline.nodes
                 if any(adapter_class(e.partition(":")[0]).simulated for e in n.chain)]
    return PipelineRun(
        id=run.id, name=run.name, repo=run.repo, state=run.state, finished=run.finished,
        reason=run.reason, summary=run_summary(run, steps), concurrency=run.concurrency,
        budget_usd=run.budget_usd, base_commit=run.base_commit, result_commit=run.result_commit,
        result_branch=f"relay/pipeline-{run.id}" if run.result_commit else None,
        created=ms_iso(run.created_ms), ended=ms_iso(run.ended_ms), simulated_steps=simulated,
        steps=[PipelineStep(id=s.node_id, state=s.state, attempt=s.attempt, session_id=s.session_id,
                            cost_usd=s.cost_usd, error=s.error, commit=s.outputs.commit,
                            files=list(s.outputs.files), output=clip(s.outputs.output, 2000))
               for s in steps])


def run_text(run: PipelineRun) -> str:
    lines = [f"Pipeline {run.name} · run {run.id} · {run.summary}"]
    lines += [f"- {s.id}: {s.state}" + (f" (session {s.session_id})" if s.session_id else "")
              + (f" — {s.error or ''}" if s.error else "") for s in run.steps]
    if run.result_branch:
        lines.append(f"Result on branch {run.result_branch} ({(run.result_commit or '')[:12]}).")
    if run.simulated_steps:
        lines.append(f"SIMULATION: steps {', '.join(run.simulated_steps)} run on the scripted "
                     "demo runtime.")
    return "\n".join(lines)


def _repo(repo: str) -> Path:
    path = Path(repo).expanduser()
    if not path.is_absolute():
        raise RelayError(f"{repo!r} is not an absolute path.",
                         "Give the repository's full path, e.g. /home/me/src/app.")
    return path.resolve()


class PipelineTools:
    """Pipeline runs over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def register(self, server: MCPServer) -> None:
        reads = READS
        server.add_tool(self.list_pipelines, name="relay_list_pipelines",
                        title="A repository's pipelines", annotations=reads)
        server.add_tool(self.run_pipeline, name="relay_run_pipeline", title="Run a pipeline",
                        annotations=RUNS_AGENTS)
        server.add_tool(self.pipeline_status, name="relay_pipeline_status",
                        title="A pipeline run's steps", annotations=reads)

    @guarded
    async def list_pipelines(self, repo: RepoPath) -> Annotated[CallToolResult, PipelineList]:
        """List the pipelines saved in a repository (.relay/pipelines.json): name, steps, the
        commands it runs and any problem that would stop it from running."""
        path = _repo(repo)
        def listed() -> list[PipelineInfo]:  # read and validated off the server's loop
            return [PipelineInfo(name=p.name, description=p.description,
                                 steps=[n.id for n in p.nodes],
                                 problems=[str(x) for x in problems(p)],
                                 commands=[f"{c.node} · {c.field}: {c.line}"
                                           for c in trust.commands([p])])
                    for p in files.list_pipelines(path)]
        found = await asyncio.to_thread(listed)
        text = "\n".join(f"{p.name}: {len(p.steps)} steps ({', '.join(p.steps)})"
                         + (f" — {len(p.problems)} problem(s)" if p.problems else "")
                         + "".join(f"\n  runs {c}" for c in p.commands)
                         for p in found) or f"No pipelines in {files.pipelines_path(path)}."
        return ok(PipelineList(repo=str(path), pipelines=found), text)

    @guarded
    async def run_pipeline(
        self,
        name_or_file: Annotated[str, Field(min_length=1, description=(
            "A pipeline's name in the repository's .relay/pipelines.json, or a pipeline JSON "
            "file inside the repository (absolute, or relative to it)."))],
        repo: RepoPath,
        concurrency: Annotated[int | None, Field(ge=1, le=64, description=(
            "Steps at once (default: the pipeline's own)."))] = None,
        budget_usd: Annotated[Usd | None, Field(description=(
            "Stop starting steps once the run has cost this much."))] = None,
    ) -> Annotated[CallToolResult, PipelineRun]:
        """Start a pipeline run (a graph of Relay sessions, each step in its own worktree,
        from the repository's HEAD) and return its run id at once. Follow it with
        relay_pipeline_status. The run is driven by this MCP server's process. A file whose
        commands the user has not accepted is refused (they accept it with relay-cli)."""
        path = _repo(repo)
        # a client names files inside the repository only (symlinks and '..' resolved)
        pipeline, source = await asyncio.to_thread(
            functools.partial(trust.load, name_or_file, path, confine=True))
        require_approval(self.engine.config, [argv for node in pipeline.nodes
                                              for argv in node.verify_argv()], "This pipeline")
        self.engine.pipelines.require_trust(source, (
            f"Nobody can answer here: the user checks them and accepts this version of the "
            f"file with `relay-cli pipeline trust {name_or_file} --repo {path}`, then asks again."))
        run_id = await self.engine.pipelines.start(pipeline, path, concurrency, budget_usd)
        run = run_model(*self.engine.pipelines.status(run_id))
        return ok(run, f"Started {run_text(run)}\nFollow it with relay_pipeline_status("
                       f"run_id={run.id!r}, wait_s=…).")

    @guarded
    async def pipeline_status(
        self,
        run_id: Annotated[str, Field(min_length=1, description=(
            "A pipeline run id (a unique prefix is enough)."))],
        wait_s: Annotated[float, Field(ge=0, le=600, description=(
            "Wait up to this many seconds for the run to finish first (default 0: answer "
            "now)."))] = 0.0,
    ) -> Annotated[CallToolResult, PipelineRun]:
        """A pipeline run's state and each step's state, session, cost, files and result;
        optionally waits for the run to finish."""
        run_info = self.engine.pipelines.ledger.run(run_id)
        if wait_s > 0 and not run_info.finished:
            with contextlib.suppress(TimeoutError):  # then answer with where it is now
                await asyncio.wait_for(self.engine.pipelines.wait(run_info.id), wait_s)
        run = run_model(*self.engine.pipelines.status(run_info.id))
        return ok(run, run_text(run))
