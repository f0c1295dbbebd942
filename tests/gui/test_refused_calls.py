"""A tool call the agent was refused shows in the window: the stream header and the
sessions list say "completed · 1 tool call refused", never a plain success."""

from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from relay.core.events import EventRecord, StateChanged
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.sessions import COLUMNS, SessionsViewModel
from tests.gui.conftest import Runner


def _state_cell(vm: SessionsViewModel, session_id: str) -> str:
    column = COLUMNS.index("State")
    for row in range(vm.rowCount()):
        if vm.index(row, 0).data(SessionsViewModel.SessionIdRole) == session_id:
            return str(vm.index(row, column).data())
    raise AssertionError(f"{session_id} is not listed")


def test_the_header_and_the_list_show_a_refused_call(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path) -> None:
    refused = arun(engine.run_session(SessionSpec(  # the demo asks to write; deny refuses
        repo=git_repo, task="Add the notes", runtime="demo", demo_ask=True, approvals="deny")))
    clean = arun(engine.run_session(SessionSpec(repo=git_repo, task="Add more notes",
                                                runtime="demo")))
    assert (refused.refused_calls, clean.refused_calls) == (1, 0)
    vm, dock = shell.stream_vm, shell.stream_dock

    with qtbot.waitSignal(vm.loaded, timeout=5000):
        vm.load(refused.id)
    assert "State completed · 1 tool call refused" in dock.meta.text()
    with qtbot.waitSignal(vm.loaded, timeout=5000):
        vm.load(clean.id)
    assert "State completed" in dock.meta.text()
    assert "refused" not in dock.meta.text()

    sessions = shell.sessions_vm
    with qtbot.waitSignal(sessions.refreshed, timeout=5000):
        sessions.refresh()
    assert _state_cell(sessions, refused.id) == "done · 1 tool call refused"
    assert _state_cell(sessions, clean.id) == "done"


def test_the_final_state_change_updates_the_header_live(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path) -> None:
    row = arun(engine.run_session(SessionSpec(repo=git_repo, task="t", runtime="demo")))
    vm, dock = shell.stream_vm, shell.stream_dock
    with qtbot.waitSignal(vm.loaded, timeout=5000):
        vm.load(row.id)
    last = arun(engine.session_events(row.id))[-1].id
    ended = StateChanged(state="completed", refused_calls=2)
    vm.on_records([EventRecord(id=last + 1, session_id=row.id, run_id=None, event=ended)])
    qtbot.waitUntil(lambda: "2 tool calls refused" in dock.meta.text(), timeout=2000)
    assert "State completed · 2 tool calls refused" in dock.meta.text()
