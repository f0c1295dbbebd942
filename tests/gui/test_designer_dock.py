"""The pipeline designer dock over a real engine: draw, connect, edit, undo, save, reload."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QMessageBox, QWidget
from pytestqt.qtbot import QtBot

from relay.core.models import PermissionPolicy
from relay.engine.engine import Engine
from relay.gui import theme
from relay.gui.bridge import EngineBridge
from relay.gui.designer_draft import COLUMN_STEP, NODE_HEIGHT, NODE_WIDTH, layout_positions
from relay.gui.docks.designer_dock import DesignerDock
from relay.gui.pipeline_backend import HostPipelineBackend
from relay.gui.viewmodels.designer import DesignerViewModel
from relay.pipelines import files
from relay.runtimes.base import RuntimeInfo
from relay.runtimes.registry import available_runtimes
from tests.conftest import make_repo
from tests.gui.conftest import Runner
from tests.gui.designer_helpers import (
    drag_arrow,
    drop_runtime,
    idle,
    mouse_drag,
    palette_item,
    three_steps,
    write_pipelines,
)

RUNTIMES = ["claude", "codex", "demo"]


@pytest.fixture
def engine(open_engine: Callable[..., Engine]) -> Engine:
    return open_engine(demo_step_delay=0, pipeline_poll=0.05)


@pytest.fixture
def make_dock(engine: Engine, arun: Runner, qtbot: QtBot
              ) -> Iterator[Callable[[], DesignerDock]]:
    """Designer docks over ``engine``, wired as the shell wires one; closed at teardown."""
    made: list[tuple[DesignerDock, EngineBridge]] = []

    def factory() -> DesignerDock:
        bridge = EngineBridge(engine)
        vm = DesignerViewModel(bridge, HostPipelineBackend(engine))
        dock = DesignerDock(vm, RUNTIMES)
        bridge.tasks.failed.connect(lambda _c, m, h: dock.show_error(m, h))  # as the shell does
        qtbot.addWidget(dock)
        dock.resize(1000, 760)
        dock.show()
        qtbot.waitExposed(dock)
        vm.start()
        qtbot.waitUntil(lambda: idle(dock))
        made.append((dock, bridge))
        return dock

    yield factory
    for dock, bridge in made:
        dock.vm.stop()
        arun(bridge.aclose())


@pytest.fixture
def dock(make_dock: Callable[[], DesignerDock]) -> DesignerDock:
    return make_dock()


def open_repo(dock: DesignerDock, repo: Path, qtbot: QtBot) -> None:
    dock.toolbar.repo.setText(str(repo))
    dock.toolbar.repo.editingFinished.emit()
    qtbot.waitUntil(lambda: idle(dock) and dock.vm.repo == repo)


def xy(dock: DesignerDock, node_id: str) -> tuple[float, float]:
    pos = dock.vm.draft.node(node_id).position
    assert pos is not None
    return pos.x, pos.y


def test_nodes_come_from_the_palette_and_arrows_from_port_drags(dock: DesignerDock,
                                                                 git_repo: Path,
                                                                 qtbot: QtBot) -> None:
    vm, scene = dock.vm, dock.scene
    open_repo(dock, git_repo, qtbot)
    assert [dock.runtime_list.item(i).text() for i in range(3)] == RUNTIMES
    dropped = dock.view.mapToScene(QPoint(150, 200))  # (the problems then show under it)
    drop_runtime(dock, "claude", QPoint(150, 200))
    assert list(scene.nodes) == ["claude"]
    assert xy(dock, "claude") == (round(dropped.x() - NODE_WIDTH / 2),
                                  round(dropped.y() - NODE_HEIGHT / 2))
    assert vm.selected == ("claude",)
    assert dock.panel.currentIndex() == 1  # the new node is open in the side panel
    dock.runtime_list.itemDoubleClicked.emit(palette_item(dock, "codex"))
    assert list(scene.nodes) == ["claude", "codex"]
    assert xy(dock, "codex") == (xy(dock, "claude")[0] + COLUMN_STEP, xy(dock, "claude")[1])

    drag_arrow(dock, "claude", "codex")
    assert vm.draft.node("codex").depends_on == ["claude"]
    assert set(scene.edges) == {("claude", "codex")}
    edge = scene.edges[("claude", "codex")]
    assert edge.path().pointAtPercent(1.0).y() == pytest.approx(
        scene.nodes["codex"].in_port.scenePos().y())
    assert not scene.rubber.isVisible()

    drag_arrow(dock, "codex", "claude")  # would close a cycle: refused, and why
    assert vm.draft.node("claude").depends_on == []
    assert set(scene.edges) == {("claude", "codex")}
    assert dock.note.isVisible()
    assert dock.note.text().startswith("'claude' cannot depend on 'codex': 'codex' already "
                                       "depends on 'claude' (codex → claude)")
    assert vm.undo_stack.count() == 3

    dock.toolbar.undo.click()
    assert set(scene.edges) == set()
    dock.toolbar.undo.click()
    assert list(scene.nodes) == ["claude"]
    assert dock.toolbar.undo.toolTip() == "Undo add claude"
    dock.toolbar.redo.click()
    dock.toolbar.redo.click()
    assert list(scene.nodes) == ["claude", "codex"]
    assert set(scene.edges) == {("claude", "codex")}
    assert not dock.toolbar.redo.isEnabled()


def test_a_drag_moves_the_nodes_and_their_arrows_in_one_undo_step(
        dock: DesignerDock, git_repo: Path, qtbot: QtBot) -> None:
    write_pipelines(git_repo, {"name": "two", "nodes": [
        {"id": "a", "provider": "demo", "task": "a", "position": {"x": 0, "y": 0}},
        {"id": "b", "provider": "demo", "task": "b", "dependsOn": ["a"],
         "position": {"x": 300, "y": 0}}]})
    open_repo(dock, git_repo, qtbot)
    vm, scene = dock.vm, dock.scene
    assert vm.pipeline.name == "two"
    start = scene.nodes["a"].sceneBoundingRect().center()
    mouse_drag(dock, start, start + QPointF(60 / dock.view.zoom(), 90 / dock.view.zoom()), steps=5)
    x, y = xy(dock, "a")
    assert x == pytest.approx(60 / dock.view.zoom(), abs=2)
    assert y == pytest.approx(90 / dock.view.zoom(), abs=2)
    assert scene.nodes["a"].pos() == QPointF(x, y)
    edge = scene.edges[("a", "b")]
    assert edge.path().pointAtPercent(0.0) == scene.nodes["a"].out_port.scenePos()
    assert vm.undo_stack.count() == 1  # five moves, one step
    assert vm.undo_stack.undoText() == "move a"
    vm.undo_stack.undo()
    assert xy(dock, "a") == (0, 0)
    assert edge.path().pointAtPercent(0.0) == scene.nodes["a"].out_port.scenePos()
    assert vm.selected == ("a",)


def test_the_side_panel_edits_the_selected_node(dock: DesignerDock, git_repo: Path,
                                                qtbot: QtBot) -> None:
    vm, panel = dock.vm, dock.panel
    open_repo(dock, git_repo, qtbot)
    plan = vm.add_node("claude", 0, 0)
    review = vm.add_node("codex", 300, 0)
    assert (plan, review) == ("claude", "codex")
    vm.select(["codex"])
    assert panel.currentIndex() == 1
    assert panel.node_id_edit.text() == "codex"
    deps = panel.depends
    assert [deps.item(i).text() for i in range(deps.count())] == ["claude"]
    deps.item(0).setCheckState(Qt.CheckState.Checked)  # the checkable list adds an arrow too
    assert vm.draft.node("codex").depends_on == ["claude"]
    assert ("claude", "codex") in dock.scene.edges
    panel.task.setFocus()
    QTest.keyClicks(panel.task, "Review {{claude.files}}")
    assert vm.draft.node("codex").task == "Review {{claude.files}}"
    assert vm.undo_stack.undoText() == "edit codex task"  # typing is one step

    vm.select(["claude"])
    assert panel.depends.item(0).text() == "codex"
    assert not panel.depends.item(0).flags() & Qt.ItemFlag.ItemIsEnabled  # it would be a cycle
    assert panel.depends.item(0).toolTip() == "codex already depends on claude (codex → claude)"
    assert panel.task.toPlainText() == ""
    assert "task: is empty" in panel.node_problems.text()
    panel.task.setPlainText("Plan it")
    panel.node_id_edit.setText("plan")
    panel.node_id_edit.editingFinished.emit()
    assert vm.draft.ids() == ["plan", "codex"]
    assert vm.draft.node("codex").depends_on == ["plan"]
    assert vm.draft.node("codex").task == "Review {{plan.files}}"
    assert vm.selected == ("plan",)
    assert set(dock.scene.nodes) == {"plan", "codex"}
    panel.node_id_edit.setText("codex")
    panel.node_id_edit.editingFinished.emit()
    assert panel.node_id_edit.text() == "plan"  # refused: put back, the reason shown
    assert dock.note.text() == "There is already a node called 'codex'."

    panel.provider.setCurrentText("claude")
    panel.account.setText("work")
    panel.account.editingFinished.emit()
    panel.fallback.setText("codex,  claude:backup ,")
    panel.fallback.editingFinished.emit()
    panel.verify.setPlainText("pytest -q\n\nruff check .")
    panel.retries.setValue(2)
    panel.timeout.setValue(600)
    panel.permission.setCurrentIndex(panel.permission.findData("read_only"))
    node = vm.draft.node("plan")
    assert node.chain == ["claude:work", "codex", "claude:backup"]
    assert node.verify == ["pytest -q", "ruff check ."]
    assert (node.retries, node.timeout, node.permission) == (2, 600, PermissionPolicy.READ_ONLY)
    assert dock.scene.nodes["plan"].lines() == ["claude:work", "then codex, claude:backup",
                                                "✓ 2 checks · 2 retries"]
    assert panel.fallback.text() == "codex, claude:backup"  # shown as the draft holds it
    vm.undo_stack.undo()
    assert vm.draft.node("plan").permission == PermissionPolicy.WORKSPACE
    assert panel.permission.currentData() == "workspace"

    vm.select([])
    assert panel.currentIndex() == 0  # nothing selected: the pipeline's own fields
    panel.name.setText("review-flow")
    panel.name.editingFinished.emit()
    assert vm.pipeline.name == "review-flow"


def test_save_then_reload_from_the_repository_gives_the_same_pipeline(
        make_dock: Callable[[], DesignerDock], git_repo: Path, qtbot: QtBot) -> None:
    dock = make_dock()
    vm = dock.vm
    open_repo(dock, git_repo, qtbot)
    assert not dock.toolbar.save.isEnabled()  # nothing drawn: the pipeline has no nodes
    assert "no nodes" in dock.toolbar.save.toolTip()
    vm.add_node("claude", 0, 0)
    vm.add_node("codex", 250, 40)
    vm.connect_nodes("claude", "codex")
    vm.edit_node("claude", "task", "Plan the change")
    vm.edit_node("codex", "task", "Implement {{claude.output}}")
    vm.edit_node("codex", "verify", ["pytest -q"])
    assert dock.toolbar.save.isEnabled()
    assert dock.toolbar.unsaved.text() == "● unsaved"
    dock.toolbar.save.click()
    qtbot.waitUntil(lambda: idle(dock) and not vm.dirty)
    assert files.list_pipelines(git_repo) == [vm.pipeline]
    assert dock.note.text() == f"Saved 'pipeline' in {files.pipelines_path(git_repo)}."
    assert not dock.toolbar.save.isEnabled()
    assert dock.toolbar.unsaved.text() == ""

    again = make_dock()
    open_repo(again, git_repo, qtbot)
    assert again.vm.pipeline == vm.pipeline
    assert again.toolbar.pipelines.currentText() == "pipeline"
    assert {n: i.pos() for n, i in again.scene.nodes.items()} == {
        "claude": QPointF(0, 0), "codex": QPointF(250, 40)}
    assert set(again.scene.edges) == {("claude", "codex")}

    vm.edit_pipeline("name", "renamed")  # saving under a new name replaces the old entry
    vm.save()
    qtbot.waitUntil(lambda: idle(dock) and not vm.dirty)
    assert [p.name for p in files.list_pipelines(git_repo)] == ["renamed"]


def test_a_cycle_in_a_loaded_file_is_highlighted_and_blocks_saving(
        dock: DesignerDock, git_repo: Path, qtbot: QtBot) -> None:
    write_pipelines(git_repo, {"name": "loop", "nodes": [
        {"id": "start", "provider": "demo", "task": "start"},
        {"id": "a", "provider": "demo", "task": "a", "dependsOn": ["start", "b"]},
        {"id": "b", "provider": "demo", "task": "b", "dependsOn": ["a"]}]})
    open_repo(dock, git_repo, qtbot)
    scene, bar = dock.scene, dock.toolbar
    assert set(scene.edges) == {("start", "a"), ("b", "a"), ("a", "b")}
    assert scene.edges[("a", "b")].on_cycle
    assert scene.edges[("b", "a")].colour() == QColor(theme.ERROR)
    assert not scene.edges[("start", "a")].on_cycle
    assert scene.nodes["a"].problems
    assert scene.nodes["b"].problems  # every node of the cycle is outlined
    assert "cycle: a → b → a" in scene.nodes["a"].toolTip()
    back = scene.edges[("b", "a")].path()  # b is right of a: the arrow loops under them
    assert back.boundingRect().bottom() > scene.nodes["a"].sceneBoundingRect().bottom()
    assert not scene.nodes["start"].problems
    assert dock.problems.isVisible()
    assert dock.problems.count() == 1
    assert dock.problems.item(0).text().startswith("node 'a' field dependsOn: cycle: a → b → a")
    assert dock.problems_title.text() == "1 problem to fix before saving or running:"
    assert not bar.save.isEnabled()
    assert bar.save.toolTip().startswith("Fix the problems first: node 'a' field dependsOn")
    assert not bar.run_button.isEnabled()
    assert not dock.vm.save()
    assert dock.note.text().startswith("Fix the problems first")

    dock.problems.itemClicked.emit(dock.problems.item(0))  # a click shows the node
    assert dock.vm.selected == ("a",)
    dock.vm.select([])
    scene.edges[("b", "a")].setSelected(True)  # pick one arrow of the cycle, press Delete
    dock.view.setFocus()
    QTest.keyClick(dock.view, Qt.Key.Key_Delete)
    assert set(scene.edges) == {("start", "a"), ("a", "b")}
    assert not dock.problems.isVisible()
    assert dock.problems_title.text() == "No problems: ready to save and run."
    assert bar.save.isEnabled()
    assert bar.run_button.isEnabled()


def test_delete_removes_the_selected_nodes_with_their_arrows(dock: DesignerDock, git_repo: Path,
                                                            qtbot: QtBot) -> None:
    write_pipelines(git_repo, {"name": "abc", "nodes": [
        {"id": "a", "provider": "demo", "task": "a"},
        {"id": "b", "provider": "demo", "task": "b", "dependsOn": ["a"]},
        {"id": "c", "provider": "demo", "task": "c", "dependsOn": ["b"]}]})
    open_repo(dock, git_repo, qtbot)
    vm = dock.vm
    assert not vm.dirty  # laid out on load (no positions in the file): not an edit
    vm.select(["b"])
    assert dock.scene.nodes["b"].isSelected()
    dock.view.setFocus()
    QTest.keyClick(dock.view, Qt.Key.Key_Delete)
    assert vm.draft.ids() == ["a", "c"]
    assert vm.draft.node("c").depends_on == []
    assert dock.scene.edges == {}
    vm.undo_stack.undo()
    assert vm.draft.ids() == ["a", "b", "c"]
    assert set(dock.scene.edges) == {("a", "b"), ("b", "c")}
    assert vm.selected == ("b",)


def test_auto_layout_is_one_undoable_step(dock: DesignerDock, git_repo: Path,
                                          qtbot: QtBot) -> None:
    write_pipelines(git_repo, {"name": "messy", "nodes": [
        {"id": "a", "provider": "demo", "task": "a", "position": {"x": 700, "y": 300}},
        {"id": "b", "provider": "demo", "task": "b", "dependsOn": ["a"],
         "position": {"x": -50, "y": 10}},
        {"id": "c", "provider": "demo", "task": "c", "dependsOn": ["a"],
         "position": {"x": 20, "y": 500}}]})
    open_repo(dock, git_repo, qtbot)
    vm = dock.vm
    before = {n: xy(dock, n) for n in vm.draft.ids()}
    dock.toolbar.layout_button.click()
    assert {n: xy(dock, n) for n in vm.draft.ids()} == layout_positions(vm.pipeline)
    assert xy(dock, "b")[0] == xy(dock, "c")[0] > xy(dock, "a")[0]
    assert vm.undo_stack.count() == 1
    vm.undo_stack.undo()
    assert {n: xy(dock, n) for n in vm.draft.ids()} == before


def test_zoom_is_clamped_and_fit_shows_every_node(dock: DesignerDock, git_repo: Path,
                                                  qtbot: QtBot) -> None:
    write_pipelines(git_repo, {"name": "wide", "nodes": [
        {"id": f"n{i}", "provider": "demo", "task": "x", "position": {"x": i * 400, "y": 0}}
        for i in range(4)]})
    open_repo(dock, git_repo, qtbot)
    view = dock.view
    for _ in range(40):
        view.zoom_by(1.5)
    assert view.zoom() == pytest.approx(2.5)
    for _ in range(40):
        view.zoom_by(0.5)
    assert view.zoom() == pytest.approx(0.25)
    dock.toolbar.fit.click()
    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    assert seen.contains(dock.scene.nodes_rect())
    assert 0.4 <= view.zoom() <= 1.0


def test_import_errors_show_in_the_dock_with_their_hint(dock: DesignerDock, tmp_path: Path,
                                                        qtbot: QtBot) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"pipelines": [', encoding="utf-8")
    dock.vm.import_file(bad)
    qtbot.waitUntil(lambda: dock.error.isVisible())
    assert dock.error.text().startswith(f"{bad} is not valid JSON")
    assert "→ Fix the file" in dock.error.text()
    assert "Traceback" not in dock.error.text()

    good = tmp_path / "good.json"
    good.write_text('{"name": "imported", "nodes": [{"id": "x", "provider": "demo", '
                    '"task": "t"}]}', encoding="utf-8")
    dock.vm.import_file(good)
    qtbot.waitUntil(lambda: dock.vm.pipeline.name == "imported")
    assert dock.vm.dirty
    assert dock.toolbar.pipelines.currentText() == "imported (not saved)"
    assert dock.note.text().startswith(f"Imported 'imported' from {good}")


def test_a_failed_start_shows_in_the_dock(dock: DesignerDock, tmp_path: Path,
                                          qtbot: QtBot) -> None:
    empty = tmp_path / "unborn"
    empty.mkdir()
    import pygit2

    pygit2.init_repository(str(empty))
    write_pipelines(empty, {"name": "p", "nodes": [{"id": "x", "provider": "demo",
                                                    "task": "t"}]})
    open_repo(dock, empty, qtbot)
    dock.toolbar.run_button.click()
    qtbot.waitUntil(lambda: dock.error.isVisible() and idle(dock))
    assert dock.error.text() == (f"{empty.resolve()} has no commits yet.\n→ Make a first "
                                 "commit: every pipeline step starts from one.")
    assert dock.toolbar.run_button.isEnabled()  # not left waiting


def test_the_repository_defaults_to_the_latest_sessions(
        make_dock: Callable[[], DesignerDock], engine: Engine, arun: Runner,
        tmp_path: Path, qtbot: QtBot) -> None:
    from relay.core.models import SessionSpec

    repo = make_repo(tmp_path / "worked-in")
    session_id = arun(engine.start_session(SessionSpec(repo=repo, task="t", runtime="demo")))
    arun(engine.wait_session(session_id))
    dock = make_dock()
    assert dock.vm.repo == repo
    assert dock.toolbar.repo.text() == str(repo)


def test_opening_another_pipeline_asks_before_dropping_unsaved_edits(
        dock: DesignerDock, git_repo: Path, tmp_path: Path, qtbot: QtBot) -> None:
    write_pipelines(git_repo, {"name": "one", "nodes": [
        {"id": "a", "provider": "demo", "task": "a"}]}, {"name": "two", "nodes": [
            {"id": "b", "provider": "demo", "task": "b"}]})
    open_repo(dock, git_repo, qtbot)
    vm, bar = dock.vm, dock.toolbar
    assert [bar.pipelines.itemText(i) for i in range(bar.pipelines.count())] == ["one", "two"]
    bar.pipelines.activated.emit(1)  # nothing changed yet: opened at once
    assert vm.pipeline.name == "two"
    vm.edit_node("b", "task", "b, changed")
    bar.pipelines.activated.emit(0)
    assert vm.pipeline.name == "two"
    assert bar.pipelines.currentText() == "two"  # the open one until the answer
    box = dock.question
    assert box is not None
    assert box.isVisible()
    assert box.text() == "'two' has changes that are not saved."
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert vm.pipeline.name == "two"
    bar.pipelines.activated.emit(0)
    assert dock.question is not None
    dock.question.button(QMessageBox.StandardButton.Discard).click()
    assert vm.pipeline.name == "one"
    assert not vm.dirty
    assert vm.undo_stack.count() == 0

    vm.edit_node("a", "task", "a, changed")  # another repository: the edits stay, as new
    other = make_repo(tmp_path / "other")
    open_repo(dock, other, qtbot)
    assert vm.pipeline.name == "one"
    assert vm.draft.node("a").task == "a, changed"
    assert bar.pipelines.currentText() == "one (not saved)"


def test_the_palette_shows_every_runtime_installed_ones_first(dock: DesignerDock,
                                                               qtbot: QtBot) -> None:
    names = available_runtimes()
    assert len(names) > 6
    infos = [RuntimeInfo(n, f"/usr/bin/{n}", "1") if n in ("codex", "demo") else
             RuntimeInfo(n, None, None, problem=f"The {n} CLI is not installed.") for n in names]
    dock.set_runtime_infos(infos)
    palette = dock.runtime_list
    shown = [palette.item(i).data(Qt.ItemDataRole.UserRole) for i in range(palette.count())]
    assert shown[:2] == ["codex", "demo"]  # installed first, then the rest in their order
    assert sorted(shown) == sorted(names)
    claude = palette_item(dock, "claude")
    assert claude.foreground().color() == QColor(theme.MUTED)
    assert "Not installed here: The claude CLI is not installed." in claude.toolTip()
    assert palette_item(dock, "codex").foreground().color() != QColor(theme.MUTED)
    heights = []
    for width in (1000, 600):  # the chips wrap: none is cut off, at any width
        dock.resize(width, 700)
        qtbot.waitUntil(lambda: all(
            palette.viewport().rect().contains(palette.visualItemRect(palette.item(i)))
            for i in range(palette.count())))
        heights.append(palette.height())
    assert heights[1] > heights[0]  # narrower: more rows
    drop_runtime(dock, "claude", QPoint(150, 200))  # a missing runtime is still drawable
    assert list(dock.scene.nodes) == ["claude"]


def test_a_new_pipeline_is_empty_not_an_error(dock: DesignerDock, git_repo: Path,
                                              qtbot: QtBot) -> None:
    write_pipelines(git_repo, {**three_steps(), "name": "pipeline"})
    open_repo(dock, git_repo, qtbot)
    assert dock.vm.pipeline.name == "pipeline"
    dock.toolbar.new.click()
    assert dock.vm.pipeline.name == "pipeline-2"  # a name no saved one has
    assert dock.vm.pipeline.nodes == []
    assert dock.problems.isHidden()
    assert dock.problems_title.text() == ""
    assert dock.error.isHidden()
    assert not dock.toolbar.save.isEnabled()  # nothing to save yet, and why
    assert "no nodes" in dock.toolbar.save.toolTip()

    def ink(view: QWidget) -> int:
        """Dark pixels in the middle band of the canvas (the grid's dots are light)."""
        image = view.grab().toImage()
        mid = image.height() // 2
        return sum(1 for y in range(mid - 30, mid + 30) for x in range(0, image.width(), 2)
                   if image.pixelColor(x, y).lightness() < 160)

    viewport = dock.view.viewport()
    assert ink(viewport) > 40  # the hint: drag a runtime here
    dock.runtime_list.itemDoubleClicked.emit(palette_item(dock, "demo"))
    assert dock.problems.isVisible()  # a node with no task: that is a problem to fix
    dock.view.centerOn(5000, 5000)  # away from the node: the hint is gone
    assert ink(viewport) == 0
