"""PipelineRunViewModel: one pipeline run shown live on the designer's canvas.

The designer shows at most one run: the one it started, the latest unfinished run of the
open pipeline (so a run a stopped Relay left, resumed when the window opened, shows up),
or one the user picks among the pipeline's recent runs. Its steps are read with
``status`` — cheap, async: over the host's API in a client window — after each change the
host makes when it is this process (the backend's listeners, coalesced to one read per turn
of the loop) and every :attr:`POLL_MS` while the run is unfinished. Clicking a node whose step has a session
asks the window to show that session's stream (:attr:`sessionRequested`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from relay.core.errors import RelayError
from relay.core.pipeline_model import Pipeline
from relay.gui.bridge import EngineBridge
from relay.gui.pipeline_backend import PipelineBackend
from relay.pipelines.ledger import RunInfo, StepInfo

CONTEXT = "pipelines"


def run_label(run: RunInfo, now_s: float | None = None) -> str:
    """``14:03 · running · 3f2a1c`` for the run picker (with the day when not today)."""
    created = time.localtime(run.created_ms / 1000)
    today = time.localtime(time.time() if now_s is None else now_s)
    same_day = created[:3] == today[:3]
    when = time.strftime("%H:%M" if same_day else "%b %d %H:%M", created)
    return f"{when} · {run.state} · {run.id[:6]}"


class PipelineRunViewModel(QObject):
    """The run shown on the canvas, its steps, and the open pipeline's recent runs.

    Signals:
        changed(): the shown run or one of its steps changed (or none is shown now).
        runsChanged(): the list of the open pipeline's runs was read again.
        sessionRequested(str): show this session's stream (a node was clicked).
    """

    changed = Signal()
    runsChanged = Signal()
    sessionRequested = Signal(str)

    #: how often an unfinished run is read again (the host may be another process)
    POLL_MS = 500

    def __init__(self, bridge: EngineBridge, backend: PipelineBackend,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._backend = backend
        self.run: RunInfo | None = None
        self.steps: dict[str, StepInfo] = {}
        self.runs: list[RunInfo] = []
        #: a run is being started (the button waits)
        self.starting = False
        self._scope: tuple[Path, str] | None = None
        #: the run to show (its read may be under way); None: none
        self._wanted: str | None = None
        #: reads of the shown run under way (a poll waits for the one before)
        self._reading = 0
        self._unsubscribe: Callable[[], None] | None = None
        self._poll = QTimer(self)
        self._poll.setInterval(self.POLL_MS)
        self._poll.timeout.connect(self.refresh)
        self._soon = QTimer(self)
        self._soon.setSingleShot(True)
        self._soon.setInterval(0)
        self._soon.timeout.connect(self.refresh)

    def start(self) -> None:
        if self._unsubscribe is None:
            self._unsubscribe = self._backend.subscribe(self._on_change)

    def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._poll.stop()
        self._soon.stop()

    # -- what is shown ----------------------------------------------------------------

    def set_scope(self, repo: Path | None, name: str) -> None:
        """The open pipeline: list its runs in ``repo``; show its latest unfinished one."""
        self._scope = (_resolved(repo), name) if repo is not None else None
        self._bridge.tasks.start(self._rescope(), context=CONTEXT)

    async def _rescope(self) -> None:
        await self._reload()
        if self.run is not None and any(r.id == self.run.id for r in self.runs):
            return
        live = next((r for r in self.runs if not r.finished), None)
        self.show(live.id if live is not None else None)

    def reload_runs(self) -> None:
        self._bridge.tasks.start(self._reload(), context=CONTEXT)

    async def _reload(self) -> None:
        scope = self._scope
        every: list[RunInfo] = []
        if scope is not None:
            try:
                every = await self._backend.runs()
            except RelayError as exc:
                self._bridge.tasks.report(CONTEXT, exc)
        if scope != self._scope:
            return  # another pipeline was opened meanwhile: its own read follows
        self.runs = ([] if scope is None else
                     [r for r in every if r.name == scope[1] and Path(r.repo) == scope[0]])
        self.runsChanged.emit()

    def show(self, run_id: str | None) -> None:
        """Show ``run_id``'s steps on the canvas (None: no run, just the drawing)."""
        self._wanted = run_id
        if run_id is None:
            self.run, self.steps = None, {}
            self._poll.stop()
            self.changed.emit()
            return
        self._bridge.tasks.start(self._read(run_id), context=CONTEXT)

    def refresh(self) -> None:
        """Read the shown run again (not while a read of it is under way)."""
        if self._wanted is not None and not self._reading:
            self._bridge.tasks.start(self._read(self._wanted), context=CONTEXT)

    async def _read(self, run_id: str) -> None:
        self._reading += 1
        try:
            run, steps = await self._backend.status(run_id)
        except RelayError as exc:
            if run_id == self._wanted:
                self._bridge.tasks.report(CONTEXT, exc)
                self.show(None)
            return
        finally:
            self._reading -= 1
        if run_id != self._wanted:
            return  # another run was picked meanwhile
        finished_now = run.finished and (self.run is None or not self.run.finished
                                         or self.run.id != run.id)
        self.run, self.steps = run, {s.node_id: s for s in steps}
        if run.finished:
            self._poll.stop()
        elif not self._poll.isActive():
            self._poll.start()
        if finished_now:
            self.reload_runs()  # its state in the picker
        self.changed.emit()

    def _on_change(self, run_id: str) -> None:
        if self.run is not None and run_id == self.run.id and not self._soon.isActive():
            self._soon.start()  # one read per burst of changes

    # -- intents ----------------------------------------------------------------------

    def start_run(self, pipeline: Pipeline, repo: Path, concurrency: int | None) -> None:
        """Validate and start ``pipeline`` in ``repo``; the run shows once recorded."""
        self.starting = True
        self.changed.emit()
        self._bridge.tasks.start(self._start(pipeline, repo, concurrency), context=CONTEXT,
                                 on_done=self._started)

    async def _start(self, pipeline: Pipeline, repo: Path, concurrency: int | None) -> str:
        try:
            return await self._backend.start(pipeline, repo, concurrency)
        finally:
            self.starting = False
            self.changed.emit()

    def _started(self, run_id: str) -> None:
        self.reload_runs()
        self.show(run_id)

    def cancel(self) -> None:
        """Cancel the shown run (its running steps stop, the rest never start)."""
        if self.run is not None and not self.run.finished:
            self._bridge.tasks.start(self._backend.cancel(self.run.id), context=CONTEXT,
                                     on_done=lambda _none: self.refresh())

    def activate(self, node_id: str) -> bool:
        """A node was clicked: show its step's session, if it has one."""
        step = self.steps.get(node_id)
        if step is None or not step.session_id:
            return False
        self.sessionRequested.emit(step.session_id)
        return True

    # -- reading ----------------------------------------------------------------------

    @property
    def can_cancel(self) -> bool:
        return self.run is not None and self.run.state == "running"

    def summary(self) -> str:
        """``Run 3f2a1c running · 1/3 steps done`` (empty when no run is shown)."""
        if self.starting:
            return "Starting the run…"
        run = self.run
        if run is None:
            return ""
        done = sum(1 for s in self.steps.values() if s.state == "succeeded")
        text = f"Run {run.id[:6]} {run.state} · {done}/{len(self.steps)} steps done"
        return f"{text} · {run.reason}" if run.reason and run.state != "succeeded" else text


def _resolved(repo: Path) -> Path:
    try:
        return repo.expanduser().resolve()
    except OSError:
        return repo
