"""The designer's two tool rows: where and what (repository, pipeline, files) and what to
do with it (undo, redo, layout, fit, run, the run shown).

It shows the view-model's state — Save and Run disabled with the reason as a tooltip
while the draft has problems — and emits what the user asked; the dock carries it out
(some intents ask first, e.g. before dropping unsaved edits).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSizePolicy,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from relay.gui import theme
from relay.gui.fit import tool_row
from relay.gui.viewmodels.designer import DesignerViewModel
from relay.gui.viewmodels.pipeline_run import run_label

NO_RUN = "no run shown"
#: a run's colour role (relay.gui.theme) per state
RUN_COLOURS = {"running": "ACCENT", "cancelling": "WARNING", "succeeded": "OK",
               "failed": "ERROR", "cancelled": "MUTED"}


def _button(text: str, name: str, tip: str) -> QToolButton:
    button = QToolButton()
    button.setText(text)
    button.setObjectName(name)
    button.setToolTip(tip)
    button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
    return button


class DesignerToolbar(QWidget):
    """Repository, pipeline, New/Save/Import/Export; Undo/Redo, Auto-layout, Fit, Run.

    Signals:
        repoChosen(str), browseRequested(), pipelineChosen(str), newRequested(),
        importRequested(), planRequested(), exportRequested(), fitRequested().
    """

    repoChosen = Signal(str)
    browseRequested = Signal()
    pipelineChosen = Signal(str)
    newRequested = Signal()
    importRequested = Signal()
    planRequested = Signal()
    exportRequested = Signal()
    fitRequested = Signal()

    def __init__(self, vm: DesignerViewModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.vm = vm
        self.repo = QLineEdit()
        self.repo.setObjectName("designerRepo")
        self.repo.setPlaceholderText("repository folder")
        self.repo.editingFinished.connect(self._repo_typed)
        self.browse = _button("Browse…", "designerBrowse", "Choose the repository folder")
        self.browse.clicked.connect(self.browseRequested)
        self.pipelines = QComboBox()
        self.pipelines.setObjectName("designerPipelines")
        self.pipelines.setMinimumContentsLength(12)
        self.pipelines.activated.connect(self._pipeline_picked)
        self.new = _button("New", "designerNew", "Start an empty pipeline")
        self.new.clicked.connect(self.newRequested)
        self.save = _button("Save", "designerSave", "")
        self.save.clicked.connect(lambda: vm.save())
        self.unsaved = QLabel()
        self.unsaved.setObjectName("designerUnsaved")
        theme.style(self.unsaved, "QLabel { color: $WARNING; }")
        self.plan = _button("Plan…", "designerPlan",
                            "Describe a goal; an agent drafts the pipeline for you to review")
        self.plan.clicked.connect(self.planRequested)
        self.import_ = _button("Import…", "designerImport", "Open a pipeline from a JSON file")
        self.import_.clicked.connect(self.importRequested)
        self.export = _button("Export…", "designerExport", "Write this pipeline to a JSON file")
        self.export.clicked.connect(self.exportRequested)
        self.undo_action = vm.undo_stack.createUndoAction(self, "Undo")
        self.undo_action.setShortcut(QKeySequence.StandardKey.Undo)
        self.redo_action = vm.undo_stack.createRedoAction(self, "Redo")
        self.redo_action.setShortcut(QKeySequence.StandardKey.Redo)
        stack = vm.undo_stack
        self.undo = _button("Undo", "designerUndo", "")
        self.undo.clicked.connect(stack.undo)
        stack.canUndoChanged.connect(self.undo.setEnabled)
        stack.undoTextChanged.connect(self._undo_text)
        self.redo = _button("Redo", "designerRedo", "")
        self.redo.clicked.connect(stack.redo)
        stack.canRedoChanged.connect(self.redo.setEnabled)
        stack.redoTextChanged.connect(self._redo_text)
        self.undo.setEnabled(stack.canUndo())
        self.redo.setEnabled(stack.canRedo())
        self.layout_button = _button("Auto-layout", "designerLayout",
                                     "Arrange the nodes in columns by dependency depth")
        self.layout_button.clicked.connect(lambda: vm.layout())
        self.fit = _button("Fit", "designerFit", "Show every node")
        self.fit.clicked.connect(self.fitRequested)
        self.concurrency = QSpinBox()
        self.concurrency.setObjectName("designerConcurrency")
        self.concurrency.setRange(1, 64)
        self.concurrency.setToolTip("Steps running at once in this run")
        self.concurrency.setValue(vm.pipeline.concurrency)
        self.run_button = _button("Run", "designerRun", "")
        self.run_button.clicked.connect(lambda: vm.run_pipeline(self.concurrency.value()))
        self.cancel = _button("Cancel run", "designerCancelRun", "Cancel the shown run")
        self.cancel.clicked.connect(vm.run.cancel)
        self.runs = QComboBox()
        self.runs.setObjectName("designerRuns")
        self.runs.setToolTip("Show a recent run of this pipeline on the canvas")
        self.runs.setMinimumContentsLength(20)
        self.runs.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.runs.activated.connect(self._run_picked)
        self.status = QLabel()
        self.status.setObjectName("designerRunStatus")
        # a long reason must not widen the dock: it is cut, and whole in the tooltip
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._layout()
        vm.changed.connect(self.refresh)
        vm.pipelinesChanged.connect(self.refresh)
        vm.run.changed.connect(self.refresh_run)
        vm.run.runsChanged.connect(self._fill_runs)
        vm.loaded.connect(lambda: self.concurrency.setValue(vm.pipeline.concurrency))
        self.refresh()
        self._fill_runs()

    def _undo_text(self, text: str) -> None:
        self.undo.setToolTip(f"Undo {text}" if text else "Nothing to undo")

    def _redo_text(self, text: str) -> None:
        self.redo.setToolTip(f"Redo {text}" if text else "Nothing to redo")

    def _layout(self) -> None:
        # rows that overflow into a menu (») on a narrow screen rather than widening the dock
        self.repo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.rows = [
            tool_row(QLabel("Repository"), self.repo, self.browse, name="designerWhere"),
            tool_row(QLabel("Pipeline"), self.pipelines, self.new, self.plan, self.save,
                     self.unsaved, None, self.undo, self.redo, self.layout_button, self.fit,
                     None, self.import_, self.export, name="designerWhat"),
            tool_row(self.run_button, QLabel("steps at once"), self.concurrency, self.cancel,
                     None, QLabel("Show"), self.runs, name="designerRunRow")]
        run = QHBoxLayout()
        run.setContentsMargins(0, 0, 0, 0)
        run.addWidget(self.rows[2], 3)
        run.addWidget(self.status, 2)
        rows = QVBoxLayout(self)
        rows.setContentsMargins(0, 0, 0, 0)
        rows.setSpacing(3)
        rows.addWidget(self.rows[0])
        rows.addWidget(self.rows[1])
        rows.addLayout(run)

    # -- intents --------------------------------------------------------------------

    def _repo_typed(self) -> None:
        text = self.repo.text().strip()
        self.repo.setModified(False)
        if text and text != str(self.vm.repo or ""):
            self.repoChosen.emit(text)

    def _pipeline_picked(self, index: int) -> None:
        name = self.pipelines.itemData(index)
        if isinstance(name, str) and name != self.vm.source_name:
            self.pipelineChosen.emit(name)
        self.refresh()  # back to the open one until it is really opened

    def _run_picked(self, index: int) -> None:
        run_id = self.runs.itemData(index)
        self.vm.run.show(run_id if isinstance(run_id, str) else None)

    # -- reading --------------------------------------------------------------------

    def refresh(self) -> None:
        vm = self.vm
        if not (self.repo.hasFocus() and self.repo.isModified()):  # never under the user's typing
            self.repo.setText(str(vm.repo) if vm.repo is not None else "")
        self._fill_pipelines()
        reason = vm.save_problem()
        self.save.setEnabled(reason is None and vm.dirty)
        self.save.setToolTip(reason or ("Store it in the repository's .relay/pipelines.json"
                                        if vm.dirty else "Saved"))
        self.unsaved.setText("● unsaved" if vm.dirty and vm.pipeline.nodes else "")
        self.export.setEnabled(not vm.problems())
        self.plan.setEnabled(not vm.planning and vm.repo is not None)
        self.plan.setText("Planning…" if vm.planning else "Plan…")
        self.refresh_run()

    def _fill_pipelines(self) -> None:
        vm = self.vm
        items: list[tuple[str, str | None]] = [(p.name, p.name) for p in vm.saved]
        if vm.source_name is None or all(p.name != vm.source_name for p in vm.saved):
            items.insert(0, (f"{vm.pipeline.name} (not saved)", None))
        current = [(self.pipelines.itemText(i), self.pipelines.itemData(i))
                   for i in range(self.pipelines.count())]
        if current != items:
            self.pipelines.blockSignals(True)
            self.pipelines.clear()
            for text, data in items:
                self.pipelines.addItem(text, data)
            self.pipelines.blockSignals(False)
        index = self.pipelines.findData(vm.source_name) if vm.source_name in {
            p.name for p in vm.saved} else 0
        self.pipelines.setCurrentIndex(max(index, 0))

    def _fill_runs(self) -> None:
        self.runs.blockSignals(True)
        self.runs.clear()
        self.runs.addItem(NO_RUN, None)
        for run in self.vm.run.runs:
            self.runs.addItem(run_label(run), run.id)
        self.runs.blockSignals(False)
        self.refresh_run()

    def refresh_run(self) -> None:
        vm, run = self.vm, self.vm.run
        shown = run.run
        index = self.runs.findData(shown.id) if shown is not None else 0
        if index >= 0 and index != self.runs.currentIndex():
            self.runs.blockSignals(True)
            self.runs.setCurrentIndex(index)
            self.runs.blockSignals(False)
        self.runs.setEnabled(bool(run.runs))
        self.status.setText(run.summary())
        role = RUN_COLOURS.get(shown.state, "TEXT") if shown is not None else "MUTED"
        theme.style(self.status, f"QLabel {{ color: ${role}; }}")
        self.status.setToolTip(run.summary())
        reason = vm.run_problem() or (
            "This pipeline's run is still going: cancel it or wait for it to finish."
            if shown is not None and not shown.finished else None)
        self.run_button.setEnabled(reason is None and not run.starting)
        self.run_button.setToolTip(reason or ("Save the pipeline if it changed, then run it; "
                                              "each node's state shows on the canvas"))
        self.cancel.setEnabled(run.can_cancel)
