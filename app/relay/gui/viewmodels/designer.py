"""DesignerViewModel: the pipeline being drawn, its undo history, its repository's file.

The truth is the Qt-free :class:`~relay.gui.designer_draft.Draft`; every user edit —
adding, deleting, moving, connecting, a field in the side panel, auto-layout — is planned
there as an :class:`~relay.gui.designer_draft.Edit` and pushed here on a ``QUndoStack`` as
a :class:`DraftCommand`, whose redo/undo set the draft to the edit's after/before. A
refused edit (a dependency that would close a cycle, a taken id) changes nothing and
says why (:attr:`DesignerViewModel.notice`).

Files go through the :class:`~relay.gui.pipeline_backend.PipelineBackend` on the bridge's
TaskRunner (context ``"pipelines"``: failures show in the dock as message + hint). The
shown run lives in :class:`~relay.gui.viewmodels.pipeline_run.PipelineRunViewModel`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from relay.core.pipeline_model import Pipeline
from relay.gui.bridge import EngineBridge
from relay.gui.designer_draft import Checked, Draft, Edit, EditRefused, new_pipeline, placed
from relay.gui.pipeline_backend import PipelineBackend
from relay.gui.viewmodels.pipeline_run import CONTEXT, PipelineRunViewModel
from relay.pipelines.planner import Plan
from relay.pipelines.trust import Source
from relay.pipelines.validate import Problem

#: QUndoCommand.id() of edits that may merge (their Edit.merge keys must also match)
MERGE_ID = 1


class DraftCommand(QUndoCommand):
    """One :class:`Edit` on the undo stack."""

    def __init__(self, apply: Callable[[Pipeline, tuple[str, ...] | None, bool], None],
                 edit: Edit) -> None:
        super().__init__(edit.label)
        self._apply = apply
        self.edit = edit

    def id(self) -> int:
        return MERGE_ID if self.edit.merge else -1

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, DraftCommand) or other.edit.merge != self.edit.merge:
            return False
        self.edit = replace(self.edit, after=other.edit.after)
        self.setObsolete(self.edit.after == self.edit.before)  # dragged back where it was
        return True

    def redo(self) -> None:
        self._apply(self.edit.after, self.edit.select_after, self.edit.moves_only)

    def undo(self) -> None:
        self._apply(self.edit.before, self.edit.select_before, self.edit.moves_only)


class DesignerViewModel(QObject):
    """The draft, the selection, the undo stack, the repository and its pipelines.

    Signals:
        changed(): the draft changed (nodes, arrows, fields, problems) or its saved state.
        selectionChanged(): other nodes are selected.
        pipelinesChanged(): the repository or the pipelines in its file changed.
        loaded(): another pipeline was opened (or a new one started).
        notice(str, str): a message and its tone (``warning``: an edit was refused;
            ``ok``, ``info``); an empty message clears it.
        trustAsked(str, list): before a run, the repository's file (its path) runs these
            commands nobody accepted yet; :meth:`answer_trust` says yes or no.
    """

    changed = Signal()
    selectionChanged = Signal()
    pipelinesChanged = Signal()
    loaded = Signal()
    notice = Signal(str, str)
    trustAsked = Signal(str, list)

    def __init__(self, bridge: EngineBridge, backend: PipelineBackend,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._backend = backend
        self.undo_stack = QUndoStack(self)
        self.undo_stack.cleanChanged.connect(self.changed)
        self.draft = Draft(new_pipeline("pipeline"))
        self.run = PipelineRunViewModel(bridge, backend, self)
        self.repo: Path | None = None
        #: the pipelines in the repository's file, as last read (laid out)
        self.saved: list[Pipeline] = []
        #: their problems, found in the worker thread that read them (by name)
        self._saved_problems: dict[str, list[Problem]] = {}
        #: the name the draft has in the file (None: never saved there)
        self.source_name: str | None = None
        #: an imported or planned draft that will replace the saved pipeline of its name
        self._replacing = False
        #: a planner session is working on a graph
        self.planning = False
        self.selected: tuple[str, ...] = ()
        self._gestures = itertools.count(1)
        #: a run waiting for the user to accept the file's commands: the file, and the run
        self._asking: tuple[Source, Callable[[], None]] | None = None

    def start(self) -> None:
        """Follow runs, and open the repository the user most obviously works in."""
        self.run.start()
        self._bridge.tasks.start(self._backend.default_repo(), context=CONTEXT,
                                 on_done=self._default_repo)

    def stop(self) -> None:
        self.run.stop()

    def _default_repo(self, repo: Path | None) -> None:
        if repo is not None and self.repo is None:
            self.set_repo(repo)

    # -- reading ----------------------------------------------------------------------

    @property
    def pipeline(self) -> Pipeline:
        return self.draft.pipeline

    def problems(self) -> list[Problem]:
        return self.draft.problems()

    @property
    def dirty(self) -> bool:
        """The draft differs from the repository's file (or was never saved there)."""
        return self.source_name is None or not self.undo_stack.isClean() or self._replacing

    def save_problem(self) -> str | None:
        """Why the draft cannot be saved now, or None."""
        if self.repo is None:
            return "Choose the repository first: its .relay/pipelines.json holds the pipelines."
        found = self.problems()
        if found:
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            return f"Fix the problems first: {found[0]}{more}."
        name = self.pipeline.name
        if name != self.source_name and any(p.name == name for p in self.saved):
            return f"The repository already has a pipeline called {name!r}: rename this one."
        return None

    def run_problem(self) -> str | None:
        """Why the draft cannot be run now (it is saved first when it changed), or None."""
        if self.repo is None or self.problems() or self.dirty:
            return self.save_problem()
        return None

    @property
    def unsaved_work(self) -> bool:
        """Opening another pipeline would drop something the user did."""
        return self.dirty and (bool(self.pipeline.nodes) or self.undo_stack.count() > 0)

    # -- the repository and its file ----------------------------------------------------

    def set_repo(self, repo: Path | str) -> None:
        """Work in ``repo``: read its pipelines and open the first — unless the drawing has
        unsaved edits: it stays, as a pipeline new to this repository."""
        path = Path(repo).expanduser()
        if path != self.repo and self.repo is not None:
            if self.unsaved_work:
                self.source_name = None  # saving adds it here (never over a namesake)
            else:
                self._load(new_pipeline("pipeline"), None)
        self.repo = path
        self.saved = []
        self.pipelinesChanged.emit()
        self.reload(open_first=True)

    def reload(self, open_first: bool = False) -> None:
        if self.repo is None:
            return
        repo = self.repo
        self._bridge.tasks.start(self._backend.pipelines_in(repo), context=CONTEXT,
                                 on_done=lambda found: self._listed(repo, found, open_first))

    def _listed(self, repo: Path, found: list[Checked], open_first: bool) -> None:
        if repo != self.repo:
            return  # another repository was chosen meanwhile
        self.saved = [c.pipeline for c in found]
        self._saved_problems = {c.pipeline.name: c.problems for c in found}
        self.pipelinesChanged.emit()
        pristine = not self.pipeline.nodes and self.undo_stack.count() == 0
        if open_first and pristine and found:
            self._load(found[0].pipeline, found[0].pipeline.name, found[0].problems)
        else:
            self.run.set_scope(self.repo, self.pipeline.name)

    def open(self, name: str) -> None:
        """Open the repository's pipeline ``name`` (unsaved edits are dropped)."""
        for pipeline in self.saved:
            if pipeline.name == name:
                self._load(pipeline, name, self._saved_problems.get(name))
                return

    def new(self) -> None:
        """Start an empty pipeline with a name no saved one has."""
        taken = {p.name for p in self.saved}
        names = itertools.chain(["pipeline"], (f"pipeline-{i}" for i in itertools.count(2)))
        name = next(n for n in names if n not in taken)
        self._load(new_pipeline(name), None)

    def _load(self, pipeline: Pipeline, source: str | None,
              problems: list[Problem] | None = None) -> None:
        """Open ``pipeline``; with its ``problems`` when a worker thread found them (then it
        is laid out already), else they are found here (a small drawing's)."""
        if problems is None:
            pipeline = placed(pipeline)  # nodes without a position are laid out
        self.draft.set(pipeline, problems=problems)
        self.source_name = source
        self._replacing = False
        self.selected = ()
        self.undo_stack.clear()
        self.notice.emit("", "info")
        self.changed.emit()
        self.selectionChanged.emit()
        self.loaded.emit()
        self.run.set_scope(self.repo, self.pipeline.name)

    def save(self, then: Callable[[], None] | None = None) -> bool:
        """Store the draft in the repository's file; refused (with why) while it has problems."""
        reason = self.save_problem()
        if reason is not None or self.repo is None:
            self.notice.emit(reason or "", "warning")
            return False
        pipeline, repo = self.pipeline, self.repo
        self._bridge.tasks.start(self._backend.save(repo, pipeline, self.source_name),
                                 context=CONTEXT,
                                 on_done=lambda path: self._saved(pipeline, path, then))
        return True

    def _saved(self, pipeline: Pipeline, path: Path, then: Callable[[], None] | None) -> None:
        self.source_name = pipeline.name
        if pipeline == self.pipeline:
            self.undo_stack.setClean()
            self._replacing = False
        self.notice.emit(f"Saved {pipeline.name!r} in {path}.", "ok")
        self.changed.emit()
        self.reload()
        if then is not None:
            then()

    def import_file(self, path: Path | str) -> None:
        """Open the (first) pipeline of a JSON file as an unsaved draft."""
        self._bridge.tasks.start(self._backend.read(Path(path)), context=CONTEXT,
                                 on_done=lambda found: self._imported(Path(path), found))

    def _imported(self, path: Path, found: list[Checked]) -> None:
        if not found:
            self.notice.emit(f"{path} holds no pipelines.", "warning")
            return
        first = found[0].pipeline
        self._open_draft(first, found[0].problems)
        others = f" (the file holds {len(found)}: the first is open)" if len(found) > 1 else ""
        self.notice.emit(f"Imported {first.name!r} from {path}{others}; Save stores it in the "
                         "repository.", "info")

    def _open_draft(self, pipeline: Pipeline, problems: list[Problem] | None = None) -> None:
        """Open a pipeline that is not in the repository's file yet (imported, planned); one
        with a saved pipeline's name replaces that one when saved."""
        self._load(pipeline, None, problems)
        if any(p.name == pipeline.name for p in self.saved):
            self.source_name = pipeline.name
            self._replacing = True
            self.changed.emit()

    def plan(self, goal: str, runtime: str) -> bool:
        """Ask ``runtime`` for a graph reaching ``goal``; it opens as an unsaved draft to review."""
        repo = self.repo
        if repo is None or not goal.strip():
            self.notice.emit("Choose the repository and say what the pipeline should achieve.",
                             "warning")
            return False
        self.planning = True
        self.notice.emit(f"Planning with {runtime}… (a read-only session; it shows in Sessions)",
                         "info")
        self.changed.emit()

        async def planned() -> Plan:
            try:
                return await self._backend.plan(goal, repo, runtime)
            finally:  # a failure is the bridge's to show (with its hint)
                self.planning = False
                self.changed.emit()
        self._bridge.tasks.start(planned(), context=CONTEXT,
                                 on_done=lambda result: self._planned(result, runtime))
        return True

    def _planned(self, result: Plan, runtime: str) -> None:
        if result.pipeline is None:
            first = result.problems[0] if result.problems else "no answer"
            self.notice.emit(f"{runtime}'s plan is not a valid pipeline ({first}); see session "
                             f"{result.session_id}.", "warning")
            self.changed.emit()
            return
        planned = result.pipeline
        self._open_draft(planned)
        self.notice.emit(f"Planned by {runtime} (session {result.session_id}): review the "
                         f"{len(planned.nodes)} steps, then Save and Run.", "ok")

    def export_file(self, path: Path | str) -> bool:
        found = self.problems()
        if found:
            self.notice.emit(f"Fix the problems before exporting: {found[0]}.", "warning")
            return False
        target = Path(path)
        self._bridge.tasks.start(self._backend.export(self.pipeline, target), context=CONTEXT,
                                 on_done=lambda _none: self.notice.emit(
                                     f"Exported to {target}.", "ok"))
        return True

    def run_pipeline(self, concurrency: int | None = None) -> bool:
        """Save the draft if it changed, then start a run of it (shown on the canvas)."""
        repo, reason = self.repo, self.run_problem()
        if repo is None or reason is not None:
            self.notice.emit(reason or "", "warning")
            return False
        pipeline = self.pipeline

        def start() -> None:
            self.run.start_run(pipeline, repo, concurrency)

        def go() -> None:  # the file as saved: are its commands accepted?
            self._bridge.tasks.start(self._backend.untrusted(repo), context=CONTEXT,
                                     on_done=lambda source: self._trusted(source, start))
        if self.dirty:
            return self.save(then=go)
        go()
        return True

    def _trusted(self, source: Source | None, start: Callable[[], None]) -> None:
        if source is None:
            start()
            return
        self._asking = (source, start)
        self.trustAsked.emit(str(source.path), [str(c) for c in source.commands])

    def answer_trust(self, accepted: bool) -> None:
        """The user's answer to :attr:`trustAsked`: run (and remember it) or not."""
        asking, self._asking = self._asking, None
        if asking is None:
            return
        source, start = asking
        if not accepted:
            self.notice.emit("Not run: the pipeline's commands were not accepted.", "warning")
            return
        self._bridge.tasks.start(self._backend.trust(source), context=CONTEXT,
                                 on_done=lambda _none: start())

    # -- edits ------------------------------------------------------------------------

    def add_node(self, runtime: str, x: float | None = None, y: float | None = None) -> str | None:
        """A node on ``runtime`` at (x, y) — a free spot when not given; its id."""
        if x is None or y is None:
            x, y = self.draft.free_spot()
        edit = self._push(lambda: self.draft.add_node(runtime, x, y))
        return self.selected[0] if edit and self.selected else None

    def remove(self, node_ids: Iterable[str], edges: Iterable[tuple[str, str]] = ()) -> bool:
        return self._push(lambda: self.draft.remove(node_ids, edges))

    def remove_selected(self) -> bool:
        return self.remove(self.selected)

    def connect_nodes(self, source: str, target: str) -> bool:
        """``target`` depends on ``source``; refused (with why) when it would close a cycle."""
        return self._push(lambda: self.draft.connect(source, target))

    def disconnect_nodes(self, source: str, target: str) -> bool:
        return self._push(lambda: self.draft.disconnect(source, target))

    def begin_gesture(self) -> str:
        """A key for the moves of one drag: they merge into one undo step."""
        return f"drag-{next(self._gestures)}"

    def move(self, positions: Mapping[str, tuple[float, float]],
             gesture: str | None = None) -> bool:
        return self._push(lambda: self.draft.move(positions, gesture))

    def edit_node(self, node_id: str, field: str, value: Any) -> bool:
        return self._push(lambda: self.draft.edit(node_id, field, value))

    def rename(self, old: str, new: str) -> bool:
        return self._push(lambda: self.draft.rename(old, new))

    def edit_pipeline(self, field: str, value: Any) -> bool:
        return self._push(lambda: self.draft.edit_pipeline(field, value))

    def layout(self) -> bool:
        return self._push(self.draft.layout)

    def select(self, node_ids: Iterable[str]) -> None:
        wanted = tuple(n for n in node_ids if self.draft.has(n))
        if wanted != self.selected:
            self.selected = wanted
            self.selectionChanged.emit()

    def activate(self, node_id: str) -> None:
        """A double-click on a node (or "Open stream"): its step's session stream, when a
        run is shown."""
        self.run.activate(node_id)

    def _push(self, plan: Callable[[], Edit | None]) -> bool:
        try:
            edit = plan()
        except EditRefused as exc:
            self.notice.emit(exc.reason, "warning")
            return False
        if edit is None:
            return False
        shown = self.run.run
        if shown is not None and shown.finished and not edit.moves_only:
            self.run.show(None)  # its colours were of the drawing before this edit
        self.undo_stack.push(DraftCommand(self._apply, edit))
        return True

    def _apply(self, pipeline: Pipeline, select: tuple[str, ...] | None,
               moves_only: bool) -> None:
        self.draft.set(pipeline, moves_only=moves_only)
        before = self.selected
        wanted = self.selected if select is None else select
        self.selected = tuple(n for n in wanted if self.draft.has(n))
        if not moves_only:
            self.notice.emit("", "info")
        self.changed.emit()  # views read the draft and the selection, both up to date
        if self.selected != before:
            self.selectionChanged.emit()
