"""``engine.pipelines``: start, drive, resume, cancel and read pipeline runs.

One :class:`Pipelines` per engine. Runs live in the database, so any engine — the
window, ``relay-cli pipeline run``, a later ``relay-cli pipeline resume`` — can drive
any unfinished run; the ledger's leases decide which engine runs which step.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from relay.core.errors import PipelineError, PipelineUntrustedError
from relay.core.pipeline_model import Pipeline
from relay.pipelines import git_ops
from relay.pipelines.executor import SessionExecutor
from relay.pipelines.ledger import Ledger, LogEntry, RunInfo, StepInfo
from relay.pipelines.scheduler import Executor, Scheduler, Settings
from relay.pipelines.trust import Source
from relay.pipelines.validate import check
from relay.sessions.repo_check import check_repository

if TYPE_CHECKING:
    from relay.sessions.port import SessionControl


def owner_id() -> str:
    """``host:pid:start:nonce`` — who holds a lease, and whether that process still lives."""
    pid = os.getpid()
    started = int(psutil.Process(pid).create_time())
    return f"{socket.gethostname()}:{pid}:{started}:{secrets.token_hex(3)}"


def gone(owner: str) -> str | None:
    """Why the process that holds a lease has stopped, or None if it may still run."""
    host, _, rest = owner.partition(":")
    pid_text, _, rest = rest.partition(":")
    started_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return None  # another machine's worker: only the lease's expiry can tell
    pid = int(pid_text)
    try:
        alive = int(psutil.Process(pid).create_time()) == int(started_text or 0)
    except (psutil.NoSuchProcess, ValueError):
        alive = False
    return None if alive else f"its worker (pid {pid}) is no longer running"


class Pipelines:
    """Pipeline runs of one engine."""

    def __init__(self, engine: SessionControl, executor: Executor | None = None) -> None:
        self.engine = engine
        self.ledger = Ledger.open(engine.config.db_path)
        self.owner = owner_id()
        self.settings = Settings(lease_s=engine.config.pipeline_lease,
                                 heartbeat_s=engine.config.pipeline_heartbeat,
                                 poll_s=engine.config.pipeline_poll)
        self.executor = executor or SessionExecutor(engine)
        self._drivers: dict[str, asyncio.Task[RunInfo]] = {}
        #: called with a run id after each change this engine makes to it
        self.listeners: list[Callable[[str], None]] = []

    async def close(self) -> None:
        if isinstance(self.executor, SessionExecutor):
            self.executor.closing = True  # its sessions end interrupted, not cancelled
        for task in self._drivers.values():
            task.cancel()
        await asyncio.gather(*self._drivers.values(), return_exceptions=True)
        self._drivers.clear()
        self.ledger.close()

    # -- runs ------------------------------------------------------------------------

    async def start(self, pipeline: Pipeline, repo: Path, concurrency: int | None = None,
                    budget_usd: float | None = None) -> str:
        """Validate ``pipeline`` (in a worker thread: the window's loop runs this), record a
        run from the repository's HEAD, and drive it."""
        await asyncio.to_thread(check, pipeline)
        # where no session may start (its git needs are head_commit's, in a pipeline's words)
        repo = await asyncio.to_thread(check_repository, Path(repo), self.engine.config.home,
                                       worktree=False)
        base = await asyncio.to_thread(git_ops.head_commit, repo)
        run_id = uuid.uuid4().hex[:12]
        await self.ledger.create_run(run_id, pipeline, repo, concurrency or pipeline.concurrency,
                                     budget_usd if budget_usd is not None else pipeline.budget_usd,
                                     base)
        self.drive(run_id)
        return run_id

    def drive(self, run_id: str) -> asyncio.Task[RunInfo]:
        """Drive ``run_id`` from this engine (once; calling again returns the same task)."""
        task = self._drivers.get(run_id)
        if task is None or task.done():
            scheduler = Scheduler(self.ledger, self.executor, self.owner, self.settings,
                                  on_change=self._changed)
            task = asyncio.create_task(scheduler.drive(run_id), name=f"relay-pipeline-{run_id}")
            self._drivers[run_id] = task
        return task

    async def resume(self, run_id: str) -> str:
        """Take up an unfinished run: the steps of workers that stopped start again now."""
        run = self.ledger.run(run_id)
        if run.finished:
            raise PipelineError(f"Run {run.id} has already {run.state}.",
                                "Start the pipeline again for a new run.")
        released = await self.ledger.release(run.id, gone)
        if released:
            self._changed(run.id)
        self.drive(run.id)
        return run.id

    async def resume_all(self) -> list[str]:
        """Take up every unfinished run (a window or ``relay-cli recover`` opening)."""
        return [await self.resume(run_id) for run_id in self.ledger.unfinished()]

    def abandoned(self, run_id: str) -> bool:
        """Whether nobody seems to drive ``run_id``: a running step's worker is gone or its
        lease expired, or nothing has run for a lease's length while steps wait."""
        now = int(time.time() * 1000)
        steps = self.ledger.steps(run_id)
        running = [s for s in steps if s.state == "running"]
        if any((s.lease_until_ms or 0) < now or gone(s.owner or "") for s in running):
            return True
        last = max((max(s.started_ms or 0, s.ended_ms or 0) for s in steps), default=0)
        return not running and now - last > self.settings.lease_ms

    async def adopt_abandoned(self) -> list[str]:
        """Take up the unfinished runs nobody drives (a long-lived engine asks now and then)."""
        adopted = []
        for run_id in self.ledger.unfinished():
            if not self.is_driving(run_id) and self.abandoned(run_id):
                adopted.append(await self.resume(run_id))
        return adopted

    async def cancel(self, run_id: str) -> RunInfo:
        run = self.ledger.run(run_id)
        if run.finished:
            raise PipelineError(f"Run {run.id} has already {run.state}.", None)
        await self.ledger.set_run_state(run.id, "cancelling", "cancelled by the user",
                                        only_from=("running",))
        if run.id not in self._drivers:  # no engine may be driving it: settle it here
            self.drive(run.id)
        return self.ledger.run(run.id)

    async def wait(self, run_id: str, poll_s: float = 0.5) -> RunInfo:
        """Until the run is finished — driven here, or by another process."""
        task = self._drivers.get(run_id)
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                return await asyncio.shield(task)
        while True:  # another process drives it: its rows are all we can watch
            run = self.ledger.run(run_id)
            if run.finished:
                return run
            await asyncio.sleep(poll_s)

    def is_driving(self, run_id: str) -> bool:
        task = self._drivers.get(run_id)
        return task is not None and not task.done()

    # -- trust (pipelines/trust.py) --------------------------------------------------

    def needs_trust(self, source: Source) -> bool:
        """Whether ``source`` runs commands its user has not accepted (in this version)."""
        return bool(source.commands) and not self.ledger.trusted(source.digest)

    async def trust(self, source: Source) -> None:
        """Remember that the user accepted ``source``'s commands (until the file changes)."""
        if source.commands and source.digest:
            await self.ledger.trust(source.digest, source.path, len(source.commands))

    def require_trust(self, source: Source, hint: str) -> None:
        """:class:`PipelineUntrustedError` (listing the commands) unless ``source`` may run."""
        if self.needs_trust(source):
            raise untrusted(source, hint)

    # -- reading ---------------------------------------------------------------------

    def status(self, run_id: str) -> tuple[RunInfo, list[StepInfo]]:
        run = self.ledger.run(run_id)
        order = {n.id: i for i, n in enumerate(run.pipeline.nodes)}
        steps = sorted(self.ledger.steps(run.id), key=lambda s: order.get(s.node_id, 0))
        return run, steps

    def runs(self, limit: int = 50) -> list[RunInfo]:
        return self.ledger.runs(limit)

    def log(self, run_id: str, after_id: int = 0) -> list[LogEntry]:
        return self.ledger.log(self.ledger.run(run_id).id, after_id)

    def _changed(self, run_id: str) -> None:
        for listener in list(self.listeners):
            listener(run_id)


def untrusted(source: Source, hint: str) -> PipelineUntrustedError:
    """The refusal of a run whose file's commands nobody has accepted (listing them)."""
    found = source.commands
    return PipelineUntrustedError(
        f"{source.path} runs {len(found)} command{'s' if len(found) != 1 else ''} "
        "nobody has accepted yet (the file is new or changed):", [str(c) for c in found], hint)
