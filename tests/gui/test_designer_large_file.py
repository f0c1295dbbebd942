"""A repository's large pipeline file is validated off the GUI thread (issue 18, item 4).

The window opens the repository's pipelines at start; their validation once ran on the
loop thread, so a repository file froze the window. Here the validation of the large
pipeline waits for a tick of a timer on the GUI thread: it can only see one if the GUI
thread keeps running while it validates.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QTimer
from pytestqt.qtbot import QtBot

from relay.core.pipeline_model import Pipeline
from relay.engine.engine import Engine
from relay.gui import designer_draft
from relay.gui.bridge import EngineBridge
from relay.gui.docks.designer_dock import DesignerDock
from relay.gui.pipeline_backend import HostPipelineBackend
from relay.gui.viewmodels.designer import DesignerViewModel
from relay.pipelines.validate import Problem
from tests.gui.conftest import Runner
from tests.gui.designer_helpers import idle, write_pipelines

STEPS = 4000


def _large() -> dict[str, Any]:
    nodes: list[dict[str, Any]] = [{"id": "n0", "provider": "demo", "task": "start"}]
    nodes += [{"id": f"n{i}", "provider": "demo", "dependsOn": [f"n{i - 1}"],
               "task": f"go on from {{{{n{i - 1}.output}}}}"} for i in range(1, STEPS)]
    return {"name": "large", "nodes": nodes}  # no positions: it is laid out as well


@pytest.fixture
def dock(open_engine: Callable[..., Engine], arun: Runner, qtbot: QtBot) -> Iterator[DesignerDock]:
    engine = open_engine(demo_step_delay=0, pipeline_poll=0.05)
    bridge = EngineBridge(engine)
    made = DesignerDock(DesignerViewModel(bridge, HostPipelineBackend(engine)), ["demo"])
    qtbot.addWidget(made)
    made.resize(900, 700)
    made.show()
    made.vm.start()
    qtbot.waitUntil(lambda: idle(made))
    yield made
    made.vm.stop()
    arun(bridge.aclose())


def test_the_window_keeps_running_while_a_large_file_validates(
        dock: DesignerDock, git_repo: Path, qtbot: QtBot, monkeypatch: pytest.MonkeyPatch) -> None:
    write_pipelines(git_repo, _large())
    ticked = threading.Event()
    seen: list[tuple[int, bool]] = []  # (thread, a GUI tick came while it validated)
    real = designer_draft.problems  # type: ignore[attr-defined]

    def validating(pipeline: Pipeline, *args: Any) -> list[Problem]:
        if pipeline.name == "large":
            ticked.clear()
            # get_ident, not current_thread: that would register the executor's QThread
            seen.append((threading.get_ident(), ticked.wait(timeout=10)))
        return real(pipeline, *args)

    monkeypatch.setattr(designer_draft, "problems", validating)
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(ticked.set)
    timer.start()
    try:
        dock.vm.set_repo(git_repo)
        qtbot.waitUntil(lambda: idle(dock) and dock.vm.pipeline.name == "large", timeout=60_000)
    finally:
        timer.stop()
    assert seen, "the large pipeline was never validated"
    assert all(thread != threading.main_thread().ident for thread, _ in seen), seen
    assert all(tick for _, tick in seen), "the GUI thread stood still while the file validated"
    assert dock.vm.problems() == []
    assert len(dock.scene.nodes) == STEPS
