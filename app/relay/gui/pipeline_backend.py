"""What the pipeline designer needs from the host, as one small interface.

:class:`PipelineBackend` is the seam between the designer's view-model and the Qt-free
core: the repository's ``.relay/pipelines.json`` (:mod:`relay.pipelines.files`, read,
laid out, validated and written in a worker thread: a repository's file never holds up the
window — the repository is on this machine), and the host's ``pipelines`` (trust, start,
cancel, status, runs, and its listeners where the host is this process).
:class:`HostPipelineBackend` is the real one — over the engine this window hosts or the
host's API alike (:mod:`relay.gui.host_calls`). No Qt here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from relay.core.pipeline_model import Pipeline
from relay.gui.designer_draft import Checked, checked
from relay.gui.host_calls import OverHost
from relay.pipelines import files, planner, trust
from relay.pipelines.ledger import RunInfo, StepInfo


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

    async def status(self, run_id: str) -> tuple[RunInfo, list[StepInfo]]:
        """The run and its steps as last committed (cheap: the window polls it)."""
        ...

    async def runs(self) -> list[RunInfo]:
        """The latest runs, newest first."""
        ...

    def subscribe(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """``listener(run_id)`` after each change the host makes, when the host is this
        process (else the view polls a live run); returns unsubscribe."""
        ...

    async def default_repo(self) -> Path | None:
        """The repository the user most obviously works in (the latest run's or session's)."""
        ...

    async def plan(self, goal: str, repo: Path, runtime: str) -> planner.Plan:
        """A graph for ``goal`` from the ``runtime`` planner (validated, not saved or run)."""
        ...


class HostPipelineBackend(OverHost):
    """The real :class:`PipelineBackend`: the repository's file and the host's ``pipelines``."""

    async def pipelines_in(self, repo: Path) -> list[Checked]:
        return await asyncio.to_thread(lambda: [checked(p) for p in files.list_pipelines(repo)])

    async def save(self, repo: Path, pipeline: Pipeline, replace: str | None) -> Path:
        return await asyncio.to_thread(files.save, repo, pipeline, replace)

    async def read(self, path: Path) -> list[Checked]:
        return await asyncio.to_thread(lambda: [checked(p) for p in files.read_file(path)])

    async def export(self, pipeline: Pipeline, path: Path) -> None:
        await asyncio.to_thread(files.export, pipeline, path)

    async def untrusted(self, repo: Path) -> trust.Source | None:
        return await self._host.untrusted(repo)

    async def trust(self, source: trust.Source) -> None:
        await self._services.pipelines.trust(source)

    async def start(self, pipeline: Pipeline, repo: Path, concurrency: int | None) -> str:
        return await self._services.pipelines.start(pipeline, repo, concurrency)

    async def cancel(self, run_id: str) -> None:
        await self._services.pipelines.cancel(run_id)

    async def status(self, run_id: str) -> tuple[RunInfo, list[StepInfo]]:
        return await self._host.run_status(run_id)

    async def runs(self) -> list[RunInfo]:
        return await self._host.runs()

    def subscribe(self, listener: Callable[[str], None]) -> Callable[[], None]:
        return self._host.subscribe(listener)

    async def default_repo(self) -> Path | None:
        runs = await self._host.runs(limit=1)
        if runs:
            return Path(runs[0].repo)
        sessions = await self._services.list_sessions(limit=1)
        return Path(sessions[0].repo) if sessions else None

    async def plan(self, goal: str, repo: Path, runtime: str) -> planner.Plan:
        return await self._host.plan(goal, repo, runtime)
