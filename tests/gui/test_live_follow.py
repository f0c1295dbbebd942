"""Selecting a running session shows its history, then follows it live."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pytestqt.qtbot import QtBot

from relay.core.events import EventRecord, Notice
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.gui.shell import RelayShell
from tests.gui.conftest import Runner
from tests.gui.helpers import rows_in_display_order, top_level_rows


def test_a_running_session_is_followed_in_order_without_duplicates(
        open_engine: Callable[..., Engine], make_shell: Callable[[Engine], RelayShell],
        arun: Runner, qtbot: QtBot, git_repo: Path) -> None:
    engine = open_engine(demo_step_delay=0.03)
    shell = make_shell(engine)
    published: list[EventRecord] = []
    shell.bridge.records.connect(published.extend)
    session_id = arun(engine.start_session(SessionSpec(repo=git_repo, task="follow me",
                                                       runtime="demo")))
    qtbot.waitUntil(lambda: sum(r.session_id == session_id for r in published) >= 6,
                    timeout=10_000)
    shell.sessions_vm.refresh()
    qtbot.waitUntil(lambda: shell.sessions_vm.row_of(session_id) is not None, timeout=5000)
    assert shell.sessions_vm.running_count == 1
    assert shell.tray.toolTip() == "Relay — 1 running session"

    shell.sessions_dock.select(session_id)  # selection loads the stream
    assert shell.stream_vm.session_id == session_id
    assert shell.stream_vm.loading
    qtbot.waitUntil(lambda: shell.stream_vm.session is not None, timeout=5000)
    assert not arun(engine.get_session(session_id)).finished, "selected after it ended"
    assert shell.stream_vm.can_stop
    qtbot.waitUntil(lambda: shell.stream_vm.session is not None
                    and shell.stream_vm.session.state == "completed", timeout=15_000)
    arun(engine.wait_session(session_id))

    stored = [r.id for r in arun(engine.session_events(session_id))]
    shown = rows_in_display_order(shell.stream_vm)
    assert len(shown) == len(set(shown)) == len(stored)
    assert sorted(shown) == stored
    top = [int(i.data(shell.stream_vm.RecordIdRole)) for i in top_level_rows(shell.stream_vm)]
    assert top == sorted(top)
    assert shell.sessions_vm.running_count == 0
    assert not shell.stream_vm.can_stop


def test_records_arriving_while_history_loads_are_merged_once(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path) -> None:
    row = arun(engine.run_session(SessionSpec(repo=git_repo, task="merge", runtime="demo")))
    stored = arun(engine.session_events(row.id))
    live_copies = [replace(r, event=r.event.model_copy(update={"replay": False}))
                   for r in stored[-4:]]
    fresh = EventRecord(id=stored[-1].id + 1, session_id=row.id, run_id=None,
                        event=Notice(message="arrived during the load"))
    vm = shell.stream_vm
    with qtbot.waitSignal(vm.loaded, timeout=5000):
        vm.load(row.id)
        assert vm.loading
        vm.on_records([*live_copies, fresh])  # overlaps the history that is being read
        assert vm.event_count() == 0
    shown = rows_in_display_order(vm)
    assert sorted(shown) == [r.id for r in stored] + [fresh.id]
    assert len(shown) == len(set(shown))
    vm.on_records([fresh, *live_copies])  # replays of what is shown change nothing
    assert vm.event_count() == len(stored) + 1


def test_stop_cancels_the_shown_session(open_engine: Callable[..., Engine],
                                        make_shell: Callable[[Engine], RelayShell],
                                        arun: Runner, qtbot: QtBot, git_repo: Path) -> None:
    engine = open_engine(demo_step_delay=0.2)
    shell = make_shell(engine)
    session_id = arun(engine.start_session(SessionSpec(repo=git_repo, task="stop me",
                                                       runtime="demo")))
    with qtbot.waitSignal(shell.stream_vm.loaded, timeout=5000):
        shell.stream_vm.load(session_id)
    qtbot.waitUntil(lambda: shell.stream_vm.session is not None
                    and shell.stream_vm.session.state == "running"
                    and shell.stream_vm.event_count() >= 6, timeout=5000)
    assert shell.stream_dock.stop_button.isEnabled()
    assert shell.window.stop_action.isEnabled()
    shell.stream_dock.stop_button.click()
    qtbot.waitUntil(lambda: shell.stream_vm.session is not None
                    and shell.stream_vm.session.state == "cancelled", timeout=10_000)
    assert not shell.stream_dock.stop_button.isEnabled()
    assert not shell.window.stop_action.isEnabled()
    kinds = [r.event.kind for r in shell.stream_vm.records()]
    assert kinds.count("turn_completed") < 4, "the demo ran to its end instead of stopping"
