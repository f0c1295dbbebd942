"""The stream reads like a story, not a log: no SIM mark per row, a handoff as one block,
strict order, filter and search, a finished session's next actions, a short header."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage, QKeySequence
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from relay.core.events import (
    AgentError,
    AgentEvent,
    AssistantText,
    EventRecord,
    HandoffStep,
    LimitHit,
    MessageChanged,
    Notice,
    SessionEnded,
    SessionStarted,
    StateChanged,
    ToolCall,
    ToolResult,
    utcnow,
)
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.gui import theme
from relay.gui.shell import RelayShell
from relay.gui.viewmodels import stream_roles
from relay.gui.viewmodels.stream import StreamViewModel as Vm
from relay.gui.viewmodels.stream_tree import Insertion, Removal, StreamTree, Touched
from tests.gui.conftest import Runner


def _records(first_id: int, *events: AgentEvent) -> list[EventRecord]:
    return [EventRecord(id=first_id + i, session_id="s", run_id=None, event=e)
            for i, e in enumerate(events)]


def _apply(tree: StreamTree, records: list[EventRecord]) -> list[object]:
    changes: list[object] = []
    for change in tree.add(records, "s"):
        if not isinstance(change, Touched):
            tree.apply(change)
        changes.append(change)
    return changes


def _step(state: str, detail: str | None = None, **kw: object) -> HandoffStep:
    return HandoffStep(handoff_id="h-1", state=state, from_entry="claude", to_entry="codex",
                       detail=detail, **kw)


def _badges(tree: StreamTree) -> list[str]:
    return [stream_roles.role_value(n, stream_roles.BADGE) for n in tree.rows]


def test_a_handoff_is_one_block_that_takes_in_the_paused_runs_ending() -> None:
    tree = StreamTree()
    _apply(tree, _records(1, AssistantText(text="working"),
                          LimitHit(limit="usage_limit", message="limit reached, resets 14:05"),
                          AgentError(category="usage_limit", message="limit", fatal=True),
                          SessionEnded(outcome="failed", reason="usage limit")))
    assert _badges(tree) == ["AGENT", "LIMIT", "ERROR", "END"]
    # the handoff's first step, in a later batch: the three ending rows go into its block
    changes = _apply(tree, _records(5, _step("pausing", reason="usage_limit"),
                                    _step("snapshotted", "commit abc123 on relay/x")))
    assert [type(c) for c in changes] == [Removal, Insertion, Touched]
    removal = changes[0]
    assert isinstance(removal, Removal)
    assert (removal.first, removal.last) == (1, 3)
    assert _badges(tree) == ["AGENT", "HANDOFF"]
    # while it runs, how the run ended goes in too; once done, rows are top-level again
    _apply(tree, _records(7, SessionEnded(outcome="cancelled"), StateChanged(state="running"),
                          _step("envelope_built", "contract signed"),
                          _step("dispatched", "codex started as run r2"),
                          _step("done"), SessionStarted(model="gpt"), AssistantText(text="on")))
    assert _badges(tree) == ["AGENT", "HANDOFF", "START", "AGENT"]
    block = tree.rows[1]
    assert not block.expanded
    assert [c.record.id for c in block.children if c.record] == [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert block.path == (2,)
    lines = dict(stream_roles.role_value(block, stream_roles.BLOCK))
    assert lines == {"Handoff": "claude → codex · done",
                     "Why": "usage limit — limit reached, resets 14:05",
                     "Paused at": "commit abc123 on relay/x",
                     "Contract": "contract signed",
                     "Receiver": "codex started as run r2"}
    assert stream_roles.role_value(block, stream_roles.STYLE) == "handoff"
    assert stream_roles.role_value(block, stream_roles.IS_ERROR) is False
    assert tree.count == 13  # every event kept (the block is no event)
    # unfolded, the block shows what it holds, in order
    opening = tree.unfold(1)
    assert opening is not None
    tree.apply(opening)
    assert _badges(tree)[1:-2] == ["HANDOFF", "LIMIT", "ERROR", "END", "HANDOFF", "HANDOFF",
                                   "END", "STATE", "HANDOFF", "HANDOFF", "HANDOFF"]


def test_a_failed_handoff_is_an_error_block() -> None:
    tree = StreamTree()
    _apply(tree, _records(1, _step("pausing", reason="manual"),
                          _step("failed", "codex cannot start: not installed"),
                          SessionEnded(outcome="failed", reason="handoff failed")))
    assert _badges(tree) == ["HANDOFF", "END"]  # the session's own end, after the block
    block = tree.rows[0]
    assert stream_roles.role_value(block, stream_roles.IS_ERROR) is True
    assert dict(stream_roles.role_value(block, stream_roles.BLOCK))["Failed"] == (
        "codex cannot start: not installed")


def test_rows_keep_commit_order_and_their_times_never_go_back() -> None:
    tree = StreamTree()
    now = utcnow()
    # the receiver's first event is read before the handoff's last step is committed
    _apply(tree, _records(1, _step("pausing", ts=now), _step("done", ts=now + timedelta(
        seconds=2)), SessionStarted(ts=now + timedelta(seconds=1)),
        AssistantText(text="old", replay=True, ts=now - timedelta(hours=1))))
    assert [n.path for n in tree.rows] == [(1,), (3,), (4,)]
    times = [n.at for n in tree.rows]
    assert times[1] == now + timedelta(seconds=2)  # not the earlier stamp it was read at
    assert times[2] == now - timedelta(hours=1)  # a replayed event keeps its own time
    started = tree.rows[1]
    assert started.event.ts == now + timedelta(seconds=1)  # the event itself is untouched


def _feed(vm: Vm, qtbot: QtBot, first_id: int, *events: AgentEvent) -> None:
    assert vm.session_id is not None
    expected = vm.event_count() + len(events)
    vm.on_records([EventRecord(id=first_id + i, session_id=vm.session_id, run_id=None, event=e)
                   for i, e in enumerate(events)])
    qtbot.waitUntil(lambda: vm.event_count() == expected, timeout=2000)


def _demo(shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, repo: Path,
          task: str = "Add the notes") -> tuple[str, int]:
    row = arun(engine.run_session(SessionSpec(repo=repo, task=task, runtime="demo")))
    last = arun(engine.session_events(row.id))[-1].id
    shell.window.show()
    qtbot.waitExposed(shell.window)
    with qtbot.waitSignal(shell.stream_vm.loaded, timeout=5000):
        shell.stream_vm.load(row.id)
    return row.id, last


def _shown(shell: RelayShell) -> list[str]:
    view, vm = shell.stream_dock.view, shell.stream_vm
    return [str(vm.index(r, 0).data(Vm.KindRole)) for r in range(vm.rowCount())
            if not view.isRowHidden(r)]


def test_rows_carry_no_sim_mark(shell: RelayShell, engine: Engine, arun: Runner,
                                qtbot: QtBot, git_repo: Path) -> None:
    _demo(shell, engine, arun, qtbot, git_repo)
    dock = shell.stream_dock
    assert dock.banner.isVisible()  # the banner says it once
    assert all(shell.stream_vm.index(r, 0).data(Vm.SimulatedRole)
               for r in range(shell.stream_vm.rowCount()))
    image = dock.view.viewport().grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    sim = {QColor(theme.SIMULATION_BG).rgb(), QColor(theme.SIMULATION_BORDER).rgb()}
    painted = {image.pixel(x, y) for x in range(0, image.width(), 2)
               for y in range(0, image.height(), 2)}
    assert len(painted) > 5  # rows were painted
    assert not painted & sim
    banner = dock.banner.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    assert QColor(theme.SIMULATION_BG).rgb() in {
        banner.pixel(x, banner.height() // 2) for x in range(banner.width())}


def test_the_filter_shows_messages_tools_or_errors(shell: RelayShell, engine: Engine,
                                                   arun: Runner, qtbot: QtBot,
                                                   git_repo: Path) -> None:
    _, last = _demo(shell, engine, arun, qtbot, git_repo)
    vm, dock = shell.stream_vm, shell.stream_dock
    _feed(vm, qtbot, last + 1,
          MessageChanged(message_id="m", state="delivered", text="please check"),
          ToolCall(call_id="bad", name="run", input={"cmd": "false"}),
          ToolResult(call_id="bad", output="exit 1", is_error=True),
          Notice(message="a note"))
    every = _shown(shell)
    dock.filter.setCurrentIndex(dock.filter.findData("messages"))
    assert set(_shown(shell)) == {"message", "assistant_text"}
    dock.filter.setCurrentIndex(dock.filter.findData("tools"))
    tools = _shown(shell)
    assert set(tools) == {"tool_call", "tool_result"}
    assert tools.count("tool_call") == tools.count("tool_result") == 4
    dock.filter.setCurrentIndex(dock.filter.findData("errors"))
    assert _shown(shell) == ["tool_call", "tool_result"]  # the failing result and its call
    # live rows follow the filter
    _feed(vm, qtbot, last + 5, AgentError(message="broke"), AssistantText(text="hi"))
    assert _shown(shell) == ["tool_call", "tool_result", "error"]
    dock.filter.setCurrentIndex(dock.filter.findData("all"))
    assert _shown(shell) == [*every, "error", "assistant_text"]


def test_search_jumps_between_rows_holding_the_text(shell: RelayShell, engine: Engine,
                                                   arun: Runner, qtbot: QtBot,
                                                   git_repo: Path) -> None:
    _, last = _demo(shell, engine, arun, qtbot, git_repo)
    vm, dock = shell.stream_vm, shell.stream_dock
    _feed(vm, qtbot, last + 1, Notice(message="needle one"), AssistantText(text="plain"),
          Notice(message="NEEDLE two"))
    first, second = vm.rowCount() - 3, vm.rowCount() - 1
    shell.window.activateWindow()
    dock.view.setFocus()
    QTest.keySequence(dock.view, QKeySequence(QKeySequence.StandardKey.Find))
    qtbot.waitUntil(dock.search.hasFocus, timeout=2000)
    dock.search.setText("needle")
    qtbot.waitUntil(lambda: dock.found.text() == "2 rows", timeout=2000)  # after the pause
    assert dock.view.currentIndex().row() == first
    assert dock.view.delegate.needle == "needle"
    QTest.keyClick(dock.search, Qt.Key.Key_Return)
    assert dock.view.currentIndex().row() == second
    QTest.keyClick(dock.search, Qt.Key.Key_Return)
    assert dock.view.currentIndex().row() == first  # round again
    QTest.keyClick(dock.search, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert dock.view.currentIndex().row() == second
    assert "NEEDLE two" in dock.detail.toPlainText()
    # a hidden row is not found
    dock.filter.setCurrentIndex(dock.filter.findData("messages"))
    assert not dock.find_next()
    assert dock.found.text() == "not found"
    dock.search.clear()
    qtbot.waitUntil(lambda: dock.found.text() == "", timeout=2000)
    assert dock.view.delegate.needle == ""


def test_a_finished_session_ends_with_next_actions(shell: RelayShell, engine: Engine,
                                                  arun: Runner, qtbot: QtBot,
                                                  git_repo: Path) -> None:
    session_id, _ = _demo(shell, engine, arun, qtbot, git_repo)
    dock = shell.stream_dock
    assert dock.end_bar.isVisible()
    assert dock.end_label.text().startswith("Session completed")
    buttons = dock.end_buttons
    assert [buttons[k].text() for k in ("diff", "merge", "continue")] == [
        "View diff", "Merge…", "Continue"]
    # View diff: the History panel in front, on the whole session
    shell.history_dock.hide()
    buttons["diff"].click()
    assert shell.history_dock.isVisible()
    qtbot.waitUntil(lambda: shell.history_vm.timeline is not None, timeout=5000)
    assert shell.history_vm.session_id == session_id
    assert shell.history_vm.selected_key == "session"
    # Merge…: History's finish summary (merge or keep), asked first
    with qtbot.waitSignal(shell.history_vm.summaryReady, timeout=5000):
        buttons["merge"].click()
    qtbot.waitUntil(lambda: shell.history_dock.finish_dialog is not None
                    and shell.history_dock.finish_dialog.isVisible(), timeout=2000)
    dialog = shell.history_dock.finish_dialog
    assert dialog is not None
    dialog.close()
    # Continue: the composer, ready to type in
    shell.window.activateWindow()
    buttons["continue"].click()
    qtbot.waitUntil(shell.composer.text.hasFocus, timeout=2000)
    # a running session has no end bar
    shell.stream_vm.clear()
    assert not dock.end_bar.isVisible()


LONG_TASK = ("# Continuation contract c-dee4b6f84b19\n\n<!-- relay -->\n"
             "You are **taking over** a task another agent started; see [the notes](x.md).\n\n"
             + "".join(f"- [ ] step {i}: do `thing {i}` carefully and check it\n"
                       for i in range(120)))


def test_a_long_task_is_a_two_line_title_that_unfolds(shell: RelayShell, engine: Engine,
                                                      arun: Runner, qtbot: QtBot,
                                                      git_repo: Path) -> None:
    assert len(LONG_TASK) > 4000
    dock = shell.stream_dock
    _demo(shell, engine, arun, qtbot, git_repo, task="short")
    short_min = dock.minimumSizeHint()
    assert dock.title.shown_lines() == ["short"]
    assert not dock.header.expand.isVisible()  # nothing more to show
    _demo(shell, engine, arun, qtbot, git_repo, task=LONG_TASK)
    header, title = dock.header, dock.title
    qtbot.waitUntil(lambda: title.text().startswith("Continuation contract"), timeout=2000)
    assert title.text() == ("Continuation contract c-dee4b6f84b19 — You are taking over a "
                            "task another agent started; see the notes.")
    assert 1 <= len(title.shown_lines()) <= 2
    assert title.height() <= 2 * title.fontMetrics().lineSpacing()
    assert "step 119" in title.toolTip()[:3000] or title.toolTip().endswith("…</p>")
    assert "Continuation contract" in title.toolTip()
    # however long the task, the dock asks for no more room than a short one's (but the
    # title's second line)
    long_min = dock.minimumSizeHint()
    assert long_min.width() <= 600
    assert long_min.height() <= 320
    assert long_min.height() - short_min.height() <= title.fontMetrics().lineSpacing()
    assert short_min.width() <= 600
    # narrow, the title elides; "Full task" unfolds all of it, as written
    shell.window.resize(700, 600)
    qtbot.waitUntil(lambda: header.expand.isVisible(), timeout=2000)
    assert not header.full.isVisible()
    header.expand.click()
    assert header.full.isVisible()
    assert header.full.toPlainText() == LONG_TASK
    assert header.expand.text() == "Less"
    header.expand.click()
    assert not header.full.isVisible()
