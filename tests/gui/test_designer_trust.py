"""The designer shows what a repository's pipeline runs and asks before its first run
(issue 18, item 10): a dialog lists the commands; No runs nothing; Yes runs it and is
remembered for that version of the file."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QMessageBox
from pytestqt.qtbot import QtBot

from relay.engine.engine import Engine
from relay.gui.bridge import EngineBridge
from relay.gui.docks.designer_dock import DesignerDock
from relay.gui.pipeline_backend import HostPipelineBackend
from relay.gui.viewmodels.designer import DesignerViewModel
from relay.pipelines.ledger import RunInfo
from tests.gui.conftest import Runner
from tests.gui.designer_helpers import idle, write_pipelines

CHECKED: dict[str, Any] = {"name": "checked", "nodes": [
    {"id": "build", "provider": "demo", "task": "build it", "verify": ["true --really"],
     "position": {"x": 0, "y": 0}}]}


@pytest.fixture
def dock(open_engine: Callable[..., Engine], arun: Runner, qtbot: QtBot) -> Iterator[DesignerDock]:
    engine = open_engine(demo_step_delay=0, pipeline_poll=0.05)
    bridge = EngineBridge(engine)
    made = DesignerDock(DesignerViewModel(bridge, HostPipelineBackend(engine)), ["demo"])
    bridge.tasks.failed.connect(lambda _c, m, h: made.show_error(m, h))
    qtbot.addWidget(made)
    made.resize(900, 700)
    made.show()
    made.vm.start()
    qtbot.waitUntil(lambda: idle(made))
    yield made
    made.vm.stop()
    arun(bridge.aclose())


def _asked(dock: DesignerDock) -> QMessageBox | None:
    box = dock.question
    return box if box is not None and box.isVisible() and "commands" in box.windowTitle() \
        else None


def _run(dock: DesignerDock) -> RunInfo | None:
    return dock.vm.run.run


def _answer(dock: DesignerDock, qtbot: QtBot, button: QMessageBox.StandardButton) -> str:
    qtbot.waitUntil(lambda: _asked(dock) is not None)
    box = _asked(dock)
    assert box is not None
    text = box.text() + "\n" + box.informativeText()
    box.button(button).click()
    return text


def test_the_commands_are_shown_and_asked_about_once_per_version(
        dock: DesignerDock, git_repo: Path, qtbot: QtBot) -> None:
    path = write_pipelines(git_repo, CHECKED)
    dock.vm.set_repo(git_repo)
    qtbot.waitUntil(lambda: idle(dock) and dock.vm.pipeline.name == "checked")
    assert "build · verify[0]: true --really" in dock.commands.text()
    assert dock.commands.isVisibleTo(dock)

    dock.toolbar.run_button.click()
    text = _answer(dock, qtbot, QMessageBox.StandardButton.No)
    assert "$ checked · build · verify[0]: true --really" in text
    assert str(path) in text
    qtbot.waitUntil(lambda: idle(dock))
    assert _run(dock) is None  # nothing ran
    assert dock.note.text().startswith("Not run")

    dock.toolbar.run_button.click()
    _answer(dock, qtbot, QMessageBox.StandardButton.Yes)
    qtbot.waitUntil(lambda: (run := _run(dock)) is not None and run.finished, timeout=60_000)
    run = _run(dock)
    assert run is not None
    assert run.state == "succeeded"

    first = run.id
    dock.toolbar.run_button.click()  # the same file: not asked again
    qtbot.waitUntil(lambda: (again := _run(dock)) is not None and again.id != first,
                    timeout=60_000)
    assert _asked(dock) is None
