"""Plan… in the designer: a goal becomes an unsaved draft to review; nothing runs."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtWidgets import QDialogButtonBox
from pytestqt.qtbot import QtBot

from relay.gui.docks.designer_dock import DesignerDock
from relay.gui.plan_dialog import PlanDialog
from relay.pipelines import files
from relay.runtimes.base import RuntimeInfo
from tests.gui.designer_helpers import idle, three_steps, write_pipelines
from tests.gui.test_designer_run import designer, engine, open_repo, shell  # noqa: F401


def test_plan_opens_the_demo_planners_graph_unsaved_for_review(
        designer: DesignerDock, git_repo: Path, qtbot: QtBot) -> None:  # noqa: F811
    open_repo(designer, git_repo, qtbot)
    designer.runtimes = lambda: [RuntimeInfo("claude", None, None, problem="not installed"),
                                 RuntimeInfo("demo", "(built in)", "scripted demo")]
    assert designer.toolbar.plan.isEnabled()
    designer.toolbar.plan.click()
    dialog = designer.planner
    assert isinstance(dialog, PlanDialog)
    assert dialog.runtime.currentData() == "demo"  # the only usable one
    assert dialog.runtime.itemText(0) == "claude (not installed)"
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert (ok.text(), ok.isEnabled()) == ("Plan", False)  # no goal yet
    dialog.goal.setPlainText("Add a farewell function")
    assert ok.isEnabled()
    dialog.buttons.accepted.emit()
    qtbot.waitUntil(lambda: idle(designer) and not designer.vm.planning, timeout=20_000)
    vm = designer.vm
    assert vm.pipeline.name == "add-a-farewell-function"
    assert [n.id for n in vm.pipeline.nodes] == ["plan", "implement", "review"]
    assert vm.dirty
    assert vm.problems() == []
    assert set(designer.scene.nodes) == {"plan", "implement", "review"}
    assert all(n.position is not None for n in vm.pipeline.nodes)  # laid out for review
    assert vm.run.run is None  # nothing ran
    assert not files.pipelines_path(git_repo).exists()
    assert "review the 3 steps, then Save and Run" in designer.note.text()
    assert vm.save()
    qtbot.waitUntil(lambda: idle(designer) and not vm.dirty)
    saved = json.loads(files.pipelines_path(git_repo).read_text())["pipelines"]
    assert [p["name"] for p in saved] == ["add-a-farewell-function"]


def test_an_imported_pipeline_with_a_saved_name_is_unsaved_until_saved(
        designer: DesignerDock, git_repo: Path, tmp_path: Path, qtbot: QtBot) -> None:  # noqa: F811
    write_pipelines(git_repo, three_steps())
    open_repo(designer, git_repo, qtbot)
    vm = designer.vm
    assert vm.pipeline.name == "feature"
    assert not designer.toolbar.save.isEnabled()  # as saved
    other = three_steps()
    other["description"] = "from the file"
    source = tmp_path / "feature.json"
    source.write_text(json.dumps(other))
    vm.import_file(source)
    qtbot.waitUntil(lambda: idle(designer) and vm.pipeline.description == "from the file")
    assert vm.dirty  # the repository still holds the old one
    assert designer.toolbar.save.isEnabled()
    assert vm.save()
    qtbot.waitUntil(lambda: idle(designer) and not vm.dirty)
    saved = json.loads(files.pipelines_path(git_repo).read_text())["pipelines"]
    assert [(p["name"], p.get("description")) for p in saved] == [("feature", "from the file")]
