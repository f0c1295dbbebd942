"""The composer on the real engine with a running demo session (slow steps, so a turn is
running while the test talks to it): a message sent while busy is queued under the stream
and goes at the turn's end — the row disappears and the stream shows the user's turn —
steer reaches the running turn, and Esc interrupts it (the session waits, not failed); a
runtime without steer (the fake gemini) says why and offers the rest."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.stream import StreamViewModel as Vm
from tests.gui.conftest import Runner


def _running(make_shell: Callable[[Engine], RelayShell], open_engine: Callable[..., Engine],
             qtbot: QtBot, repo: Path) -> tuple[RelayShell, Engine, str]:
    engine = open_engine(demo_step_delay=0.4)
    shell = make_shell(engine)
    shell.show()
    with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=5000) as started:
        shell.start_session(SessionSpec(repo=repo, task="write the notes", runtime="demo"))
    assert started.args is not None
    session_id = str(started.args[0])
    vm = shell.composer_vm
    qtbot.waitUntil(lambda: vm.session_id == session_id and vm.busy, timeout=10_000)
    return shell, engine, session_id


def _user_turns(shell: RelayShell) -> list[str]:
    vm = shell.stream_vm
    return [str(vm.index(r, 0).data(Vm.SummaryRole)) for r in range(vm.rowCount())
            if vm.index(r, 0).data(Vm.KindRole) == "message"]


def test_a_message_sent_while_busy_waits_under_the_stream_then_goes(
        make_shell: Callable[[Engine], RelayShell], open_engine: Callable[..., Engine],
        qtbot: QtBot, arun: Runner, git_repo: Path) -> None:
    shell, engine, session_id = _running(make_shell, open_engine, qtbot, git_repo)
    panel = shell.composer
    assert panel.steer_button.isEnabled()  # the demo takes input mid-turn
    panel.text.setFocus()
    QTest.keyClicks(panel.text, "then add a changelog")
    QTest.keyClick(panel.text, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)

    qtbot.waitUntil(lambda: len(panel.rows) == 1, timeout=5000)
    assert "queued: then add a changelog" in panel.rows[0].label.text()
    [stored] = arun(engine.talk.messages(session_id, pending=True))
    assert (stored.text, stored.source, stored.mode) == ("then add a changelog", "window", "queue")
    assert _user_turns(shell) == []

    qtbot.waitUntil(lambda: not panel.rows, timeout=30_000)  # delivered at the turn's end
    assert panel.status.text().startswith("you (")  # what became of it
    qtbot.waitUntil(lambda: any("then add a changelog" in t for t in _user_turns(shell)),
                    timeout=5000)
    row = arun(engine.wait_session(session_id), timeout=60)
    assert row.state == "completed", row.reason
    [done] = arun(engine.talk.messages(session_id))
    assert done.state == "delivered"
    assert done.how in ("turn", "resume")


def test_steer_now_reaches_the_running_turn(
        make_shell: Callable[[Engine], RelayShell], open_engine: Callable[..., Engine],
        qtbot: QtBot, arun: Runner, git_repo: Path) -> None:
    shell, engine, session_id = _running(make_shell, open_engine, qtbot, git_repo)
    panel = shell.composer
    panel.text.setPlainText("mention the licence too")
    panel.steer_button.click()

    qtbot.waitUntil(lambda: panel.text.toPlainText() == "", timeout=5000)
    assert not panel.rows
    qtbot.waitUntil(lambda: any("mention the licence too" in t for t in _user_turns(shell)),
                    timeout=5000)
    [sent] = arun(engine.talk.messages(session_id))
    assert (sent.state, sent.how) == ("delivered", "steer")
    arun(engine.wait_session(session_id), timeout=60)


def test_esc_interrupts_the_turn_and_the_session_waits(
        make_shell: Callable[[Engine], RelayShell], open_engine: Callable[..., Engine],
        qtbot: QtBot, arun: Runner, git_repo: Path) -> None:
    shell, engine, session_id = _running(make_shell, open_engine, qtbot, git_repo)
    notices: list[str] = []
    shell.messages.noticeShown.connect(notices.append)
    view = shell.stream_dock.view
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_Escape)

    qtbot.waitUntil(lambda: bool(notices), timeout=10_000)
    assert shell.composer.status.text() == notices[0]
    row = arun(engine.wait_session(session_id), timeout=30)
    assert row.state == "interrupted", row.reason
    vm = shell.composer_vm
    qtbot.waitUntil(lambda: vm.abilities is not None and not vm.abilities.busy, timeout=10_000)
    assert shell.composer.send_button.isEnabled()  # the next message continues it
    assert not shell.composer.steer_button.isEnabled()


def test_a_runtime_without_steer_says_why_on_the_real_engine(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, fakes_on_path: Path, arun: Runner,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "b_tools_yolo")
    monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-a-secret")
    shell.show()
    with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=5000):
        shell.start_session(SessionSpec(repo=git_repo, task="Run the tools", runtime="gemini"))
    vm = shell.composer_vm
    qtbot.waitUntil(lambda: shell.stream_vm.session is not None
                    and shell.stream_vm.session.state == "completed", timeout=20_000)
    qtbot.waitUntil(lambda: vm.abilities is not None and not vm.abilities.busy, timeout=10_000)
    assert vm.abilities is not None
    assert vm.abilities.steer == "no"
    panel = shell.composer
    assert not panel.steer_button.isEnabled()
    tip = panel.steer_button.toolTip()
    assert tip.startswith("gemini cannot take a message mid-turn.")
    assert tip.count("Queue it (it goes when this turn ends), or interrupt and send.") == 1
    assert panel.send_button.isEnabled()  # a follow-up continues it
