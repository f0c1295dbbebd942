"""A pipeline run on the designer's canvas: live step states, a double-click (or "Open
stream") opens the session, the first edit clears the finished run's colours.

The acceptance scenario — plan → implement (with a fallback) → review, drawn, run, Relay
stopped mid-run and started again — runs on the demo runtime here, so it needs no agent
CLI: the second window's engine takes the run over and the canvas shows it finish.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from relay.core.config import load_config
from relay.engine.engine import Engine
from relay.gui.bridge import EngineBridge
from relay.gui.docks.designer_dock import DesignerDock
from relay.gui.pipeline_backend import HostPipelineBackend
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.designer import DesignerViewModel
from relay.pipelines import files
from tests.gui.conftest import Runner
from tests.gui.designer_helpers import (
    click_node,
    double_click_node,
    drag_arrow,
    idle,
    three_steps,
    write_pipelines,
)

RUN_TIMEOUT_MS = 60_000


@pytest.fixture
def engine(open_engine: Callable[..., Engine]) -> Engine:
    return open_engine(demo_step_delay=0, pipeline_poll=0.05)


@pytest.fixture
def shell(make_shell: Callable[[Engine], RelayShell], engine: Engine) -> RelayShell:
    return make_shell(engine)


@pytest.fixture
def designer(shell: RelayShell, qtbot: QtBot) -> Iterator[DesignerDock]:
    dock = shell.designer_dock
    shell.window.resize(1360, 860)
    shell.window.show()
    dock.show()
    dock.raise_()
    qtbot.waitExposed(dock)
    shell.designer_vm.start()
    qtbot.waitUntil(lambda: idle(dock))
    yield dock
    shell.designer_vm.stop()


def open_repo(dock: DesignerDock, repo: Path, qtbot: QtBot) -> None:
    dock.vm.set_repo(repo)
    qtbot.waitUntil(lambda: idle(dock) and dock.vm.repo == repo)


def finished(dock: DesignerDock) -> bool:
    run = dock.vm.run.run
    return run is not None and run.finished


def test_a_drawn_pipeline_runs_and_each_node_turns_green(designer: DesignerDock, shell: RelayShell,
                                                         git_repo: Path, qtbot: QtBot) -> None:
    dock, vm = designer, designer.vm
    open_repo(dock, git_repo, qtbot)
    assert shell.window.findChild(DesignerDock, "pipelinesDock") is dock
    plan = vm.add_node("demo", 0, 0)
    implement = vm.add_node("demo", 250, 0)
    review = vm.add_node("demo", 500, 0)
    assert (plan, implement, review) == ("demo", "demo-2", "demo-3")
    for old, new in (("demo", "plan"), ("demo-2", "implement"), ("demo-3", "review")):
        assert vm.rename(old, new)
    drag_arrow(dock, "plan", "implement")
    drag_arrow(dock, "implement", "review")
    vm.edit_node("plan", "task", "Plan the change")
    vm.edit_node("implement", "task", "Implement: {{plan.output}}")
    vm.edit_node("implement", "fallback", ["demo:backup"])
    vm.edit_node("review", "task", "Review {{implement.files}}")
    assert vm.problems() == []
    assert dock.toolbar.run_button.isEnabled()

    dock.toolbar.run_button.click()  # saves the drawing, then runs it
    qtbot.waitUntil(lambda: finished(dock), timeout=RUN_TIMEOUT_MS)
    run = vm.run.run
    assert run is not None
    assert run.state == "succeeded", run.reason
    assert files.list_pipelines(git_repo) == [vm.pipeline]
    assert not vm.dirty
    states = {n: item.step.state if item.step else None for n, item in dock.scene.nodes.items()}
    assert states == {"plan": "succeeded", "implement": "succeeded", "review": "succeeded"}
    assert all(step.saves == 1 for step in vm.run.steps.values())
    assert dock.toolbar.status.text() == f"Run {run.id[:6]} succeeded · 3/3 steps done"
    assert dock.toolbar.runs.currentData() == run.id
    assert not dock.toolbar.cancel.isEnabled()
    assert "Session " in dock.scene.nodes["implement"].toolTip()

    step = vm.run.steps["implement"]
    assert step.session_id
    requested: list[str] = []
    vm.run.sessionRequested.connect(requested.append)
    click_node(dock, "implement")  # a click selects it, and stays in the designer
    assert vm.selected == ("implement",)
    assert requested == []
    assert dock.panel.open_stream.isVisible()
    assert "double-click" in dock.scene.nodes["implement"].toolTip()
    with qtbot.waitSignal(vm.run.sessionRequested, timeout=2000) as clicked:
        double_click_node(dock, "implement")
    assert clicked.args == [step.session_id]
    # the window shows that session's stream
    qtbot.waitUntil(lambda: shell.stream_vm.rowCount() > 0)
    assert not shell.stream_dock.visibleRegion().isEmpty()
    assert shell.sessions_dock.selected_id() in (None, step.session_id)
    dock.raise_()
    with qtbot.waitSignal(vm.run.sessionRequested, timeout=2000) as opened:
        dock.panel.open_stream.click()  # the step panel's button does the same
    assert opened.args == [step.session_id]

    # the first edit of the drawing clears the finished run's colours
    assert vm.rename("review", "check")
    assert vm.run.run is None
    assert all(item.step is None for item in dock.scene.nodes.values())
    assert dock.toolbar.runs.currentIndex() == 0
    assert not dock.panel.open_stream.isVisible()
    vm.undo_stack.undo()
    dock.toolbar.runs.activated.emit(dock.toolbar.runs.findData(run.id))  # shown again
    qtbot.waitUntil(lambda: dock.scene.nodes["implement"].step is not None)

    dock.toolbar.runs.setCurrentIndex(0)  # "no run shown": just the drawing
    dock.toolbar.runs.activated.emit(0)
    assert vm.run.run is None
    assert all(item.step is None for item in dock.scene.nodes.values())


def designer_on(engine: Engine, qtbot: QtBot) -> tuple[DesignerDock, EngineBridge]:
    """A designer dock on ``engine`` alone (the rest of the window left out)."""
    bridge = EngineBridge(engine)
    dock = DesignerDock(DesignerViewModel(bridge, HostPipelineBackend(engine)))
    bridge.tasks.failed.connect(lambda _c, m, h: dock.show_error(m, h))
    qtbot.addWidget(dock)
    dock.vm.start()
    return dock, bridge


def test_a_run_left_by_a_stopped_relay_finishes_in_the_next_window(
        arun: Runner, git_repo: Path, qtbot: QtBot) -> None:
    """The acceptance scenario: stopped mid-run, started again, every step done once."""
    write_pipelines(git_repo, three_steps())
    first: Engine = arun(Engine.open(load_config(demo_step_delay=0.3, pipeline_poll=0.05,
                                                 pipeline_lease=1.0)))
    dock, bridge = designer_on(first, qtbot)
    open_repo(dock, git_repo, qtbot)
    assert dock.vm.pipeline.name == "feature"
    dock.toolbar.run_button.click()
    qtbot.waitUntil(lambda: "implement" in dock.vm.run.steps
                    and dock.vm.run.steps["implement"].state == "running", timeout=RUN_TIMEOUT_MS)
    run_id = dock.vm.run.run.id if dock.vm.run.run else ""
    dock.vm.stop()
    arun(bridge.aclose())
    arun(first.close())  # Relay stops mid-run: implement is left leased, review never started

    second: Engine = arun(Engine.open(load_config(demo_step_delay=0, pipeline_poll=0.05,
                                                  pipeline_lease=1.0), recover=True))
    try:
        dock, bridge = designer_on(second, qtbot)  # the latest run's repository, pipeline, run
        qtbot.waitUntil(lambda: dock.vm.run.run is not None, timeout=5000)
        assert dock.vm.repo == git_repo.resolve()
        assert dock.vm.pipeline.name == "feature"
        assert dock.vm.run.run is not None
        assert dock.vm.run.run.id == run_id
        qtbot.waitUntil(lambda: finished(dock), timeout=RUN_TIMEOUT_MS)
        assert dock.vm.run.run.state == "succeeded", dock.vm.run.run.reason
        steps = dock.vm.run.steps
        assert {n: s.state for n, s in steps.items()} == {
            "plan": "succeeded", "implement": "succeeded", "review": "succeeded"}
        assert [steps[n].saves for n in ("plan", "implement", "review")] == [1, 1, 1]
        assert {item.step.state for item in dock.scene.nodes.values() if item.step} == {
            "succeeded"}
        dock.vm.stop()
        arun(bridge.aclose())
    finally:
        arun(second.close())


def test_cancel_stops_the_run_and_dims_what_never_ran(
        open_engine: Callable[..., Engine], arun: Runner, git_repo: Path, qtbot: QtBot) -> None:
    slow = open_engine(demo_step_delay=0.3, pipeline_poll=0.05)
    write_pipelines(git_repo, three_steps())
    dock, bridge = designer_on(slow, qtbot)
    try:
        open_repo(dock, git_repo, qtbot)
        bar = dock.toolbar
        bar.run_button.click()
        qtbot.waitUntil(lambda: bar.cancel.isEnabled(), timeout=RUN_TIMEOUT_MS)
        assert not bar.run_button.isEnabled()  # one run of it at a time
        assert "still going" in bar.run_button.toolTip()
        bar.cancel.click()
        qtbot.waitUntil(lambda: finished(dock), timeout=RUN_TIMEOUT_MS)
        run = dock.vm.run.run
        assert run is not None
        assert run.state == "cancelled"
        review = dock.scene.nodes["review"]
        assert review.step is not None
        assert review.step.state in ("cancelled", "skipped")
        assert review.opacity() < 1
        assert bar.run_button.isEnabled()
    finally:
        dock.vm.stop()
        arun(bridge.aclose())
