"""DesignerDock ("Pipelines"): draw a pipeline, save it in the repository, run it, watch it.

Top, the tool rows (:mod:`designer_toolbar`); an error (message and hint) and the answer
to the last action in place. Below, left to right: the palette of runtimes (drag one onto
the canvas, or double-click it), the canvas (:mod:`designer_canvas`) over the list of
problems (click one to select its node), and the side panel (:mod:`designer_panel`).
Everything the widgets show comes from :class:`DesignerViewModel`; file dialogs and the
"drop unsaved changes?" question are opened without a nested event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QByteArray, QMimeData, QSize, Qt
from PySide6.QtGui import QAction, QColor, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListView,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from relay.gui import theme
from relay.gui.docks.designer_canvas import RUNTIME_MIME, DesignerScene, DesignerView
from relay.gui.docks.designer_panel import DesignerPanel
from relay.gui.docks.designer_toolbar import DesignerToolbar
from relay.gui.docks.parts import PlainLabel
from relay.gui.messages import ErrorBanner
from relay.gui.plan_dialog import PlanDialog
from relay.gui.runtime_choice import installed_first, missing
from relay.gui.viewmodels.designer import DesignerViewModel
from relay.pipelines import trust
from relay.runtimes.base import RuntimeInfo
from relay.runtimes.registry import available_runtimes

READY_TEXT = "No problems: ready to save and run."
#: commands listed under the canvas (the dialog before a run lists three times as many)
COMMANDS_SHOWN = 6
#: a palette chip's height (its style sheet's margins are inside it)
CHIP_HEIGHT = 26
PALETTE_CSS = ("QListWidget { background: transparent; }"
               " QListWidget::item { border: 1px solid $BORDER; border-radius: 10px;"
               " margin: 2px 3px; background: $SUBTLE_BG; color: $TEXT; }"
               " QListWidget::item:hover { border-color: $ACCENT; }"
               " QListWidget::item:selected { background: $ACCENT_BG; color: $TEXT; }")


class RuntimePalette(QListWidget):
    """The runtimes Relay drives; each drags onto the canvas as a new node.

    Every runtime shows: the chips wrap onto as many rows as the width needs, installed
    runtimes first; one the doctor found missing is greyed, its tooltip says why.
    """

    def __init__(self, runtimes: Sequence[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("designerPalette")
        self.setDragEnabled(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragOnly)
        self.setFlow(QListView.Flow.LeftToRight)
        self.setWrapping(True)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        policy = QSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.setFrameShape(QListWidget.Shape.NoFrame)
        self._infos = [RuntimeInfo(name, None, None) for name in runtimes]
        theme.style(self, PALETTE_CSS)
        self.set_runtimes(self._infos)
        theme.notifier().changed.connect(self._recolour)

    def _recolour(self, _palette: str) -> None:
        """The missing runtimes' grey is read when the chips are made: make them again."""
        self.set_runtimes(self._infos)

    def set_runtimes(self, infos: Sequence[RuntimeInfo]) -> None:
        """Show ``infos``' runtimes, installed first, the missing ones greyed."""
        self._infos = list(infos)
        gone = missing(infos)
        names = installed_first([i.runtime for i in infos], infos)
        problems = {i.runtime: i.problem for i in infos}
        metrics = self.fontMetrics()
        self.clear()
        for runtime in names:
            item = QListWidgetItem(runtime)
            item.setData(Qt.ItemDataRole.UserRole, runtime)
            tip = f"Drag onto the canvas (or double-click) for a step on {runtime}"
            if runtime in gone:
                item.setForeground(QColor(theme.MUTED))
                font = item.font()
                font.setItalic(True)
                item.setFont(font)
                tip += f".\nNot installed here: {problems[runtime]}"
            item.setToolTip(tip)
            item.setSizeHint(QSize(metrics.horizontalAdvance(runtime) + 34, CHIP_HEIGHT))
            item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
            self.addItem(item)
        widest = max((self.item(i).sizeHint().width() for i in range(self.count())), default=0)
        self.setMinimumWidth(widest + 2)
        self.updateGeometry()

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        """As tall as the rows the chips wrap onto at ``width`` (never a hidden one)."""
        rows, x = 1, 0
        for i in range(self.count()):
            chip = self.item(i).sizeHint().width()
            if x and x + chip > width:
                rows, x = rows + 1, 0
            x += chip
        return rows * CHIP_HEIGHT + 2

    def sizeHint(self) -> QSize:
        width = sum(self.item(i).sizeHint().width() for i in range(self.count()))
        return QSize(width, self.heightForWidth(width))

    def minimumSizeHint(self) -> QSize:
        return QSize(self.minimumWidth(), self.heightForWidth(self.minimumWidth()))

    def mimeTypes(self) -> list[str]:
        return [RUNTIME_MIME]

    def mimeData(self, items: Sequence[QListWidgetItem]) -> QMimeData:
        data = QMimeData()
        if items:
            runtime = str(items[0].data(Qt.ItemDataRole.UserRole))
            data.setData(RUNTIME_MIME, QByteArray(runtime.encode("utf-8")))
        return data


class DesignerDock(QDockWidget):
    """Binds a :class:`DesignerViewModel`: tool rows, palette, canvas, problems, panel."""

    def __init__(self, vm: DesignerViewModel, runtimes: Sequence[str] | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__("Pipelines", parent)
        self.setObjectName("pipelinesDock")
        self.vm = vm
        names = list(runtimes if runtimes is not None else available_runtimes())
        self.toolbar = DesignerToolbar(vm)
        self.error = ErrorBanner("designerError")
        self.note = PlainLabel()  # names and values from the repository's file
        self.note.setObjectName("designerNote")
        self.note.setWordWrap(True)
        self.note.hide()
        self.runtime_list = RuntimePalette(names)
        self.runtime_list.itemDoubleClicked.connect(self._add_from_palette)
        self.scene = DesignerScene(vm, self)
        self.view = DesignerView(self.scene)
        self.problems_title = QLabel()
        self.problems_title.setObjectName("designerProblemsTitle")
        self.problems = QListWidget()
        self.problems.setObjectName("designerProblems")
        theme.style(self.problems, "QListWidget { color: $ERROR; }")  # every line a problem
        self.problems.setTextElideMode(Qt.TextElideMode.ElideRight)  # whole in the tooltip
        self.problems.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.problems.itemClicked.connect(self._problem_clicked)
        self.commands = QLabel()
        self.commands.setObjectName("designerCommands")
        self.commands.setTextFormat(Qt.TextFormat.PlainText)  # a repository's text, as text
        self.commands.setWordWrap(True)
        theme.style(self.commands, "QLabel { color: $MUTED; }")
        self.panel = DesignerPanel(vm, names)
        self.dialog: QFileDialog | None = None
        self.question: QMessageBox | None = None
        self.planner: PlanDialog | None = None
        #: the runtimes the Plan… dialog offers (the shell gives its doctor's findings)
        self.runtimes: Callable[[], list[RuntimeInfo]] = lambda: [
            RuntimeInfo(name, None, None) for name in available_runtimes()]
        self._fit_pending = True
        self.setWidget(self._content())
        self._shortcuts()
        self._wire()
        self.refresh_problems()

    def _content(self) -> QWidget:
        palette = QHBoxLayout()
        palette.setContentsMargins(0, 0, 0, 0)
        add = QLabel("Add a step:")
        add.setToolTip("Drag a runtime onto the canvas, or double-click it")
        palette.addWidget(add, 0, Qt.AlignmentFlag.AlignTop)
        palette.addWidget(self.runtime_list, 1)
        center = QWidget()
        column = QVBoxLayout(center)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addLayout(palette)
        column.addWidget(self.view, 1)
        column.addWidget(self.problems_title)
        column.addWidget(self.problems)
        column.addWidget(self.commands)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("designerSplitter")
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(center)
        self.splitter.addWidget(self.panel)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 0)
        self.splitter.setSizes([800, 270])
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.setSpacing(4)
        layout.addWidget(self.toolbar)
        layout.addWidget(self.error)
        layout.addWidget(self.note)
        layout.addWidget(self.splitter, 1)
        return page

    def _shortcuts(self) -> None:
        self.save_action = QAction("Save pipeline", self)
        self.save_action.setShortcut(QKeySequence.StandardKey.Save)
        self.save_action.triggered.connect(lambda: self.vm.save())
        for action in (self.toolbar.undo_action, self.toolbar.redo_action, self.save_action):
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            self.addAction(action)

    def _wire(self) -> None:
        vm, bar = self.vm, self.toolbar
        bar.repoChosen.connect(self._set_repo)
        bar.browseRequested.connect(self.browse_repo)
        bar.pipelineChosen.connect(lambda name: self.confirm_discard(lambda: vm.open(name)))
        bar.newRequested.connect(lambda: self.confirm_discard(vm.new))
        bar.importRequested.connect(self.import_dialog)
        bar.planRequested.connect(self.plan_dialog)
        bar.exportRequested.connect(self.export_dialog)
        bar.fitRequested.connect(self.view.fit)
        self.scene.nodeActivated.connect(vm.activate)
        self.panel.streamRequested.connect(vm.activate)
        vm.notice.connect(self.show_note)
        vm.changed.connect(self.refresh_problems)
        vm.trustAsked.connect(self.ask_trust)
        vm.loaded.connect(self._loaded)
        self.visibilityChanged.connect(self._visible)

    # -- intents --------------------------------------------------------------------

    def _set_repo(self, path: str) -> None:
        self.error.hide()
        self.vm.set_repo(path)

    def set_runtime_infos(self, infos: Sequence[RuntimeInfo]) -> None:
        """What the doctor found: the palette puts the installed runtimes first."""
        self.runtime_list.set_runtimes(infos)

    def _add_from_palette(self, item: QListWidgetItem) -> None:
        node_id = self.vm.add_node(str(item.data(Qt.ItemDataRole.UserRole)))
        if node_id is not None and node_id in self.scene.nodes:
            self.view.ensureVisible(self.scene.nodes[node_id])

    def _problem_clicked(self, item: QListWidgetItem) -> None:
        node_id = item.data(Qt.ItemDataRole.UserRole)
        if isinstance(node_id, str):
            self.vm.select([node_id])
            if node_id in self.scene.nodes:
                self.view.ensureVisible(self.scene.nodes[node_id])

    def confirm_discard(self, then: Callable[[], None]) -> None:
        """Run ``then`` — after asking, when it would drop unsaved edits (non-modal)."""
        if not self.vm.unsaved_work:
            self.error.hide()
            then()
            return
        box = QMessageBox(QMessageBox.Icon.Question, "Unsaved pipeline",
                          f"{self.vm.pipeline.name!r} has changes that are not saved.",
                          QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
                          self)
        box.setInformativeText("Drop them?")

        def answered(button: object) -> None:
            if box.standardButton(box.clickedButton()) == QMessageBox.StandardButton.Discard:
                self.error.hide()
                then()

        box.buttonClicked.connect(answered)
        self.question = box
        box.open()

    def browse_repo(self) -> QFileDialog:
        dialog = self._dialog("Repository folder", QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly)
        dialog.fileSelected.connect(self._set_repo)
        dialog.open()
        return dialog

    def import_dialog(self) -> QFileDialog:
        dialog = self._dialog("Import a pipeline", QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(
            lambda path: self.confirm_discard(lambda: self.vm.import_file(path)))
        dialog.open()
        return dialog

    def plan_dialog(self) -> PlanDialog:
        """Plan…: a goal and a planner; the graph opens as an unsaved draft."""
        if self.planner is not None:
            self.planner.close()
        dialog = PlanDialog([(i.runtime, i.problem is None) for i in self.runtimes()], self)

        def plan(goal: str, runtime: str) -> None:
            def go() -> None:
                self.vm.plan(goal, runtime)
            self.confirm_discard(go)
        dialog.planRequested.connect(plan)
        self.planner = dialog
        dialog.open()
        return dialog

    def export_dialog(self) -> QFileDialog:
        dialog = self._dialog("Export the pipeline", QFileDialog.FileMode.AnyFile)
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setDefaultSuffix("json")
        dialog.selectFile(f"{self.vm.pipeline.name}.json")
        dialog.fileSelected.connect(self.vm.export_file)
        dialog.open()
        return dialog

    def _dialog(self, title: str, mode: QFileDialog.FileMode) -> QFileDialog:
        if self.dialog is not None:
            self.dialog.close()
        dialog = QFileDialog(self, title, str(self.vm.repo or ""))
        dialog.setFileMode(mode)
        if mode != QFileDialog.FileMode.Directory:
            dialog.setNameFilter("Pipelines (*.json)")
        self.dialog = dialog
        return dialog

    # -- showing --------------------------------------------------------------------

    def show_error(self, message: str, hint: str = "") -> None:
        """Show a pipelines error (message and hint) in place."""
        self.error.show_error(message, hint)

    def show_note(self, text: str, tone: str) -> None:
        self.note.setText(text)
        theme.style(self.note, f"$NOTE_CSS.{tone if tone in theme.NOTE_CSS else 'info'}")
        self.note.setVisible(bool(text))
        if text and tone != "warning":
            self.error.hide()

    def refresh_problems(self) -> None:
        # an empty drawing is a start, not an error: the canvas says what to do
        found = self.vm.problems() if self.vm.pipeline.nodes else []
        self.problems.clear()
        for problem in found:
            item = QListWidgetItem(str(problem))
            item.setToolTip(str(problem))
            item.setData(Qt.ItemDataRole.UserRole, problem.node)
            self.problems.addItem(item)
        self.problems.setVisible(bool(found))
        row = self.problems.sizeHintForRow(0) if found else 0
        self.problems.setFixedHeight(row * min(len(found), 4) + 2 * self.problems.frameWidth() + 2)
        if found:
            self.problems_title.setText(f"{len(found)} problem{'s' if len(found) != 1 else ''} "
                                        "to fix before saving or running:")
            theme.style(self.problems_title, "QLabel { color: $ERROR; }")
        else:
            self.problems_title.setText(READY_TEXT if self.vm.pipeline.nodes else "")
            theme.style(self.problems_title, "QLabel { color: $OK; }")

        ran = trust.commands([self.vm.pipeline])
        lines = [f"{c.node} · {c.field}: {c.line}" for c in ran[:COMMANDS_SHOWN]]
        if len(ran) > COMMANDS_SHOWN:
            lines.append(f"… and {len(ran) - COMMANDS_SHOWN} more")
        self.commands.setText(f"Runs {len(ran)} command{'s' if len(ran) != 1 else ''} (without "
                              "a shell, in each step's worktree):\n" + "\n".join(lines)
                              if ran else "")
        self.commands.setVisible(bool(ran))

    def ask_trust(self, path: str, commands: list[str]) -> QMessageBox:
        """Before the first run of a file whose commands nobody accepted: list them, ask."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Run these commands?",
                          f"{path} runs {len(commands)} command(s) you have not accepted yet "
                          "(the file is new or changed since).",
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setDefaultButton(QMessageBox.StandardButton.No)
        shown = commands[:COMMANDS_SHOWN * 3]
        more = len(commands) - len(shown)
        box.setInformativeText("\n".join(f"$ {c}" for c in shown)
                               + (f"\n… and {more} more" if more else "")
                               + "\n\nRelay remembers the answer for this version of the file.")

        def answered(button: object) -> None:
            self.vm.answer_trust(
                box.standardButton(box.clickedButton()) == QMessageBox.StandardButton.Yes)

        box.buttonClicked.connect(answered)
        box.rejected.connect(lambda: self.vm.answer_trust(False))
        self.question = box
        box.open()
        return box

    def _loaded(self) -> None:
        if self.view.isVisible() and self.view.viewport().width() > 50:
            self.view.fit()
        else:
            self._fit_pending = True

    def _visible(self, visible: bool) -> None:
        if visible and self._fit_pending:
            self._fit_pending = False
            self.view.fit()
