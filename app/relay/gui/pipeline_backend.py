"""What the pipeline designer needs from the engine, as one small interface.

:class:`PipelineBackend` is the seam between the designer's view-model and the Qt-free
core: the repository's ``.relay/pipelines.json`` (:mod:`relay.pipelines.files`, read,
laid out, validated and written in a worker thread: a repository's file never holds up the
window), and ``engine.pipelines`` (start, cancel, status, runs, and
its listeners). :class:`EnginePipelineBackend` is the real one. No Qt here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from relay.core.pipeline_model import Pipeline
from relay.engine.engine import Engine
from relay.gui.designer_draft import Checked, checked
from relay.pipelines import files, planner, trust
from relay.pipelines.ledger import RunInfo, StepInfo
from relay.runtimes.registry import adapter_class


class PipelineBackend(Protocol):
    """Pipeline files and runs as the designer calls them."""

    async def pipelines_in(self, repo: Path) -> list[Checked]:
        """The pipelines in ``repo``'s ``.relay/pipelines.json`` (none without the file),
        laid out and validated."""
        ...

    async def save(self, repo: Path, pipeline: Pipeline, replace: str | None) -> Path:
        """Store ``pipeline`` in the repository's file (in place of ``replace``)."""
        ...

    async def read(self, path: Path) -> list[Checked]:
        """Every pipeline in a file to import, laid out and validated."""
        ...

    async def export(self, pipeline: Pipeline, path: Path) -> None:
        ...

    async def untrusted(self, repo: Path) -> trust.Source | None:
        """The repository's file when it runs commands the user has not accepted, else None."""
        ...

    async def trust(self, source: trust.Source) -> None:
        """Remember that the user accepted ``source``'s commands (this version of the file)."""
        ...

    async def start(self, pipeline: Pipeline, repo: Path, concurrency: int | None) -> str:
        """Validate and start a run; its id."""
        ...

    async def cancel(self, run_id: str) -> None:
        ...

    def status(self, run_id: str) -> tuple[RunInfo, list[StepInfo]]:
        """The run and its steps as last committed (cheap: the window polls it)."""
        ...

    def runs(self) -> list[RunInfo]:
        """The latest runs, newest first."""
        ...

    def subscribe(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """``listener(run_id)`` after each change this engine makes; returns unsubscribe."""
        ...

    async def default_repo(self) -> Path | None:
        """The repository the user most obviously works in (the latest run's or session's)."""
        ...

    async def plan(self, goal: str, repo: Path, runtime: str) -> planner.Plan:
        """A graph for ``goal`` from the ``runtime`` planner (validated, not saved or run)."""
        ...


class EnginePipelineBackend:
    """The real :class:`PipelineBackend`: the repository's file and ``engine.pipelines``."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    async def pipelines_in(self, repo: Path) -> list[Checked]:
        return await asyncio.to_thread(lambda: [checked(p) for p in files.list_pipelines(repo)])

    async def save(self, repo: Path, pipeline: Pipeline, replace: str | None) -> Path:
        return await asyncio.to_thread(files.save, repo, pipeline, replace)

    async def read(self, path: Path) -> list[Checked]:
        return await asyncio.to_thread(lambda: [checked(p) for p in files.read_file(path)])

    async def export(self, pipeline: Pipeline, path: Path) -> None:
        await asyncio.to_thread(files.export, pipeline, path)

    async def untrusted(self, repo: Path) -> trust.Source | None:
        source = await asyncio.to_thread(trust.repo_source, repo)
        return source if source is not None and self._engine.pipelines.needs_trust(source) else None

    async def trust(self, source: trust.Source) -> None:
        await self._engine.pipelines.trust(source)

    async def start(self, pipeline: Pipeline, repo: Path, concurrency: int | None) -> str:
        return await self._engine.pipelines.start(pipeline, repo, concurrency)

    async def cancel(self, run_id: str) -> None:
        await self._engine.pipelines.cancel(run_id)

    def status(self, run_id: str) -> tuple[RunInfo, list[StepInfo]]:
        return self._engine.pipelines.status(run_id)

    def runs(self) -> list[RunInfo]:
        return self._engine.pipelines.runs()

    def subscribe(self, listener: Callable[[str], None]) -> Callable[[], None]:
        listeners = self._engine.pipelines.listeners
        listeners.append(listener)

        def unsubscribe() -> None:
            if listener in listeners:
                listeners.remove(listener)
        return unsubscribe

    async def default_repo(self) -> Path | None:
        runs = self._engine.pipelines.runs(limit=1)
        if runs:
            return Path(runs[0].repo)
        sessions = await self._engine.list_sessions(limit=1)
        return Path(sessions[0].repo) if sessions else None

    async def plan(self, goal: str, repo: Path, runtime: str) -> planner.Plan:
        usable = await asyncio.to_thread(usable_runtimes, self._engine, runtime)  # runs --version
        return await planner.plan(self._engine, goal, repo, runtime, runtimes=usable)


def usable_runtimes(engine: Engine, planner_runtime: str) -> list[str]:
    """What a planned graph may use: the installed runtimes (the simulated demo only when it
    is the demo that plans), the planner's own first."""
    simulated = adapter_class(planner_runtime).simulated
    found = [i.runtime for i in engine.runtime_infos()
             if i.problem is None and adapter_class(i.runtime).simulated == simulated]
    return [planner_runtime, *(r for r in found if r != planner_runtime)]
