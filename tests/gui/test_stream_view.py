"""The stream's flat rows: folding through the view-model, late results, the view."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QModelIndex, QPoint, Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from relay.core.events import AgentEvent, AssistantText, EventRecord, Notice, ToolCall, ToolResult
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.gui.docks.stream_delegate import disclosure_rect
from relay.gui.docks.stream_view import StreamView
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.stream import StreamViewModel as Vm
from tests.gui.conftest import Runner
from tests.gui.helpers import children_of, rows_in_display_order


def _load_demo(shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot,
               repo: Path) -> tuple[Vm, list[EventRecord]]:
    row = arun(engine.run_session(SessionSpec(repo=repo, task="rows", runtime="demo")))
    stored: list[EventRecord] = arun(engine.session_events(row.id))
    vm = shell.stream_vm
    with qtbot.waitSignal(vm.loaded, timeout=5000):
        vm.load(row.id)
    return vm, stored


def _feed(vm: Vm, qtbot: QtBot, first_id: int, *events: AgentEvent) -> None:
    """Give the view-model live records and wait until they are in (past the cooldown)."""
    assert vm.session_id is not None
    expected = vm.event_count() + len(events)
    vm.on_records([EventRecord(id=first_id + i, session_id=vm.session_id, run_id=None, event=e)
                   for i, e in enumerate(events)])
    qtbot.waitUntil(lambda: vm.event_count() == expected, timeout=2000)


def _rows_of(vm: Vm, kind: str) -> list[int]:
    return [r for r in range(vm.rowCount()) if vm.index(r, 0).data(Vm.KindRole) == kind]


def test_a_call_folds_and_unfolds_through_the_view_model(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path) -> None:
    vm, stored = _load_demo(shell, engine, arun, qtbot, git_repo)
    before = rows_in_display_order(vm)
    removed: list[tuple[int, int]] = []
    inserted: list[tuple[int, int]] = []
    vm.rowsRemoved.connect(lambda _p, first, last: removed.append((first, last)))
    vm.rowsInserted.connect(lambda _p, first, last: inserted.append((first, last)))
    row = _rows_of(vm, "tool_call")[1]

    assert vm.set_expanded(row, False)
    assert removed == [(row + 1, row + 1)]  # just its result
    assert not vm.index(row, 0).data(Vm.ExpandedRole)
    assert vm.index(row, 0).data(Vm.ChildCountRole) == 1
    assert vm.rowCount() == len(before) - 1
    assert vm.event_count() == len(stored)
    assert not vm.set_expanded(row, False)  # already folded: nothing happens
    plain = next(r for r in range(vm.rowCount()) if not vm.index(r, 0).data(Vm.ChildCountRole))
    assert not vm.toggle(plain)  # nothing nested, nothing to fold

    assert vm.toggle(row)
    assert inserted == [(row + 1, row + 1)]
    assert vm.index(row, 0).data(Vm.ExpandedRole)
    assert rows_in_display_order(vm) == before


def test_a_late_result_goes_under_its_earlier_call(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path) -> None:
    vm, stored = _load_demo(shell, engine, arun, qtbot, git_repo)
    base = stored[-1].id
    _feed(vm, qtbot, base + 1, ToolCall(call_id="late", name="grep", input={"pattern": "x"}),
          Notice(message="meanwhile"))
    assert rows_in_display_order(vm)[-2:] == [base + 1, base + 2]
    call_row = vm.rowCount() - 2
    assert not vm.index(call_row, 0).data(Vm.ChildCountRole)
    inserted: list[tuple[int, int]] = []
    changed: list[int] = []
    vm.rowsInserted.connect(lambda _p, first, last: inserted.append((first, last)))
    vm.dataChanged.connect(lambda top, _bottom, _roles: changed.append(top.row()))

    # the result arrives in a later flush, after another top-level row
    _feed(vm, qtbot, base + 3, ToolResult(call_id="late", output="found", is_error=False),
          Notice(message="after"))
    shown = rows_in_display_order(vm)
    assert shown[-4:] == [base + 1, base + 3, base + 2, base + 4]
    assert inserted == [(call_row + 1, call_row + 1), (call_row + 3, call_row + 3)]
    assert call_row in changed  # its fold mark appears
    assert [int(i.data(Vm.RecordIdRole)) for i in children_of(vm, call_row)] == [base + 3]
    assert vm.index(call_row + 1, 0).data(Vm.DepthRole) == 1

    # events nested under a folded call are kept, and shown when it is unfolded
    assert vm.set_expanded(call_row, False)
    _feed(vm, qtbot, base + 5, AssistantText(text="subagent note", parent_call_id="late"))
    assert vm.rowCount() == len(shown) - 1
    assert vm.toggle(call_row)
    assert rows_in_display_order(vm)[-5:] == [base + 1, base + 3, base + 5, base + 2, base + 4]
    assert sorted(rows_in_display_order(vm)) == [r.id for r in stored] + [base + i
                                                                          for i in range(1, 6)]


def _click_mark(view: StreamView, index: QModelIndex) -> None:
    view.scrollTo(index)
    mark = disclosure_rect(view.visualRect(index), int(index.data(Vm.DepthRole)))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     mark.center())


def test_the_fold_mark_and_a_double_click_toggle_a_call(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path) -> None:
    vm, stored = _load_demo(shell, engine, arun, qtbot, git_repo)
    shell.window.show()
    qtbot.waitExposed(shell.window)
    view = shell.stream_dock.view
    row = _rows_of(vm, "tool_call")[0]
    view.setCurrentIndex(vm.index(row + 1, 0))  # its result is selected
    assert "README.md" in shell.stream_dock.detail.toPlainText()

    _click_mark(view, vm.index(row, 0))
    assert not vm.index(row, 0).data(Vm.ExpandedRole)
    assert vm.rowCount() == len(stored) - 1
    assert view.currentIndex().row() == row  # the call that hid the selection takes it
    assert view.selectionModel().isRowSelected(row)
    assert shell.stream_dock.detail.toPlainText().startswith("list_files")

    _click_mark(view, vm.index(row, 0))
    assert vm.index(row, 0).data(Vm.ExpandedRole)
    center = view.visualRect(vm.index(row, 0)).center() + QPoint(100, 0)
    QTest.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier, center)
    assert not vm.index(row, 0).data(Vm.ExpandedRole)
    QTest.keyClick(view, Qt.Key.Key_Space)
    assert vm.index(row, 0).data(Vm.ExpandedRole)
    assert vm.rowCount() == len(stored)

    # → on an unfolded call goes to its result, ← goes back to the call
    view.setCurrentIndex(vm.index(row, 0))
    QTest.keyClick(view, Qt.Key.Key_Right)
    assert view.currentIndex().row() == row + 1
    QTest.keyClick(view, Qt.Key.Key_Left)
    assert view.currentIndex().row() == row
    assert vm.index(row, 0).data(Vm.ExpandedRole)


def test_the_view_follows_the_bottom_unless_scrolled_up(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path) -> None:
    vm, stored = _load_demo(shell, engine, arun, qtbot, git_repo)
    shell.window.show()
    qtbot.waitExposed(shell.window)
    view = shell.stream_dock.view
    bar = view.verticalScrollBar()
    next_id = stored[-1].id + 1

    def feed(count: int) -> None:
        nonlocal next_id
        _feed(vm, qtbot, next_id, *(Notice(message=f"line {i}") for i in range(count)))
        next_id += count

    row_h = view.verticalHeader().defaultSectionSize()
    feed(200)  # laid out (the range covers the new rows) and followed
    qtbot.waitUntil(lambda: bar.maximum() > 150 * row_h and bar.value() == bar.maximum(),
                    timeout=2000)
    assert view.is_following()

    bar.setValue(0)  # the user scrolls up to read: new rows do not pull the view down
    assert not view.is_following()
    top = bar.maximum()
    feed(50)
    qtbot.waitUntil(lambda: bar.maximum() > top, timeout=2000)
    assert bar.value() == 0

    bar.setValue(bar.maximum())  # back at the bottom: following again
    top = bar.maximum()
    feed(50)
    qtbot.waitUntil(lambda: bar.maximum() > top and bar.value() == bar.maximum(), timeout=2000)
