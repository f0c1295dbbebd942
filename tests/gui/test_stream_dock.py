"""The stream dock renders a recorded demo session from the store."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from relay.core.events import EventRecord, TurnCompleted, Usage
from relay.core.models import SessionSpec
from relay.core.present import SIMULATION_LABEL, fmt_cost, fmt_tokens
from relay.engine.engine import Engine
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.stream import StreamViewModel as Vm
from tests.gui.conftest import Runner
from tests.gui.helpers import children_of, rows_in_display_order, top_level_rows


def _record_demo(engine: Engine, arun: Runner, repo: Path) -> tuple[str, list[EventRecord]]:
    row = arun(engine.run_session(SessionSpec(repo=repo, task="Add the notes", runtime="demo")))
    assert row.state == "completed"
    return row.id, arun(engine.session_events(row.id))


def test_stream_dock_renders_a_recorded_session(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path) -> None:
    session_id, stored = _record_demo(engine, arun, git_repo)
    shell.window.show()
    qtbot.waitExposed(shell.window)
    vm, dock = shell.stream_vm, shell.stream_dock

    with qtbot.waitSignal(vm.loaded, timeout=5000):
        vm.load(session_id)

    # every stored event is one row, in id order, results nested under their calls
    assert vm.event_count() == len(stored)
    shown = rows_in_display_order(vm)
    assert len(shown) == vm.rowCount() == len(stored)  # results are shown unfolded
    assert sorted(shown) == [r.id for r in stored]
    top = top_level_rows(vm)
    assert [int(i.data(Vm.RecordIdRole)) for i in top] == sorted(int(i.data(Vm.RecordIdRole))
                                                                   for i in top)
    calls = [i for i in top if i.data(Vm.KindRole) == "tool_call"]
    assert len(calls) == sum(1 for r in stored if r.event.kind == "tool_call") == 3
    assert "tool_result" not in {i.data(Vm.KindRole) for i in top}
    call = calls[0]
    assert call.data(Vm.ChildCountRole) == 1
    assert [i.row() for i in children_of(vm, call.row())] == [call.row() + 1]
    result = vm.index(call.row() + 1, 0)
    result_id = int(result.data(Vm.RecordIdRole))
    assert result.data(Vm.KindRole) == "tool_result"
    assert result.data(Vm.DepthRole) == 1
    assert result.data(Vm.IsErrorRole) is False
    assert str(call.data(Vm.SummaryRole)).startswith("list_files(")

    # the view folds and unfolds the result with the keyboard
    view = dock.view
    assert call.data(Vm.ExpandedRole)
    assert view.visualRect(result).isValid()
    view.setCurrentIndex(call)
    QTest.keyClick(view, Qt.Key.Key_Left)
    assert not call.data(Vm.ExpandedRole)
    assert vm.rowCount() == len(stored) - 1
    assert result_id not in rows_in_display_order(vm)
    assert vm.event_count() == len(stored)  # folded away, not dropped
    assert view.currentIndex().row() == call.row()
    QTest.keyClick(view, Qt.Key.Key_Right)
    assert call.data(Vm.ExpandedRole)
    assert rows_in_display_order(vm) == shown
    result = vm.index(call.row() + 1, 0)
    assert view.visualRect(result).isValid()

    # selecting a row shows it in full
    view.setCurrentIndex(result)
    assert "README.md" in dock.detail.toPlainText()

    # the header matches what the store totals
    row = arun(engine.get_session(session_id))
    u = row.usage
    usage = dock.usage.text()
    assert f"in {fmt_tokens(u.input_tokens)}" in usage
    assert f"out {fmt_tokens(u.output_tokens)}" in usage
    assert f"cache read {fmt_tokens(u.cache_read_tokens)}" in usage
    assert f"cache write {fmt_tokens(u.cache_write_tokens)}" in usage
    assert f"Cost {fmt_cost(u.cost_usd)}" in usage
    assert u.input_tokens  # the demo reports usage, so the comparison means something
    assert u.cost_usd
    assert dock.title.text() == "Add the notes"
    meta = dock.meta.text()
    for part in ("Runtime demo", "Model relay-demo-scripted", "Permissions workspace",
                 "State completed"):
        assert part in meta

    # a demo session is labelled as a simulation
    assert dock.banner.isVisible()
    assert dock.banner.text() == SIMULATION_LABEL
    assert all(vm.index(r, 0).data(Vm.SimulatedRole) for r in range(vm.rowCount()))
    assert not dock.stop_button.isEnabled()


def test_unknown_usage_reads_as_a_gap_not_zero(shell: RelayShell, engine: Engine, arun: Runner,
                                               qtbot: QtBot, git_repo: Path) -> None:
    session_id, stored = _record_demo(engine, arun, git_repo)
    vm = shell.stream_vm
    with qtbot.waitSignal(vm.loaded, timeout=5000):
        vm.load(session_id)
    vm.clear()
    with qtbot.waitSignal(vm.loaded, timeout=5000):
        vm.load(session_id)
    before = vm.usage
    unknown_cost = TurnCompleted(usage=Usage(input_tokens=5))
    vm.on_records([EventRecord(id=stored[-1].id + 1, session_id=session_id, run_id=None,
                               event=unknown_cost)])
    # (shown at once, or after the flush cooldown that the history load started)
    qtbot.waitUntil(lambda: vm.event_count() == len(stored) + 1, timeout=2000)
    assert vm.usage.input_tokens == (before.input_tokens or 0) + 5
    assert vm.usage.reasoning_tokens is None

    vm.clear()
    vm.on_records([EventRecord(id=1, session_id="other", run_id=None, event=unknown_cost)])
    assert vm.event_count() == 0
    text = shell.stream_dock.usage.text()
    assert "in —" in text
    assert "Cost —" in text
    assert " 0" not in text


def test_a_missing_session_is_reported_in_the_stream_panel(
        shell: RelayShell, qtbot: QtBot) -> None:
    with qtbot.waitSignal(shell.bridge.tasks.failed, timeout=5000) as failed:
        shell.stream_vm.load("no-such-session")
    assert failed.args is not None
    context, message, hint = failed.args
    assert context == "stream"
    assert "no-such-session" in message
    assert shell.stream_dock.error.text().startswith(message)
    assert not shell.stream_dock.error.isHidden()
    assert message in shell.window.status.error_label.text()
    assert hint in shell.window.status.error_label.text()
