"""The window hosts its data folder: the API on its qasync loop, closing hides to the tray,
Quit asks what becomes of running sessions, and a second window attaches as a client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton
from pytestqt.qtbot import QtBot

from relay.api.client import RelayClient
from relay.core.config import load_config
from relay.core.hostfile import read_host, read_token
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.gui.closing import HIDDEN_TITLE, quit_question
from relay.gui.shell import RelayShell
from relay.gui.tray import RelayTray
from tests.gui.conftest import Runner, Started


def _rows(shell: RelayShell, task: str) -> list[Any]:
    return [r for r in shell.sessions_vm.rows() if r.task == task]


def _state(shell: RelayShell, task: str) -> str | None:
    rows = _rows(shell, task)
    return rows[0].state if rows else None


def _answer(qtbot: QtBot, shell: RelayShell, button: str) -> None:
    qtbot.waitUntil(lambda: shell.quit_box is not None and shell.quit_box.isVisible(),
                    timeout=5000)
    box = shell.quit_box
    assert isinstance(box, QMessageBox)
    assert "still running" in box.text()
    found = box.findChild(QPushButton, button)
    assert found is not None
    found.click()


def test_the_window_hosts_and_runs_a_session_an_api_client_starts(
        window: Started, relay_home: Path, git_repo: Path, arun: Runner, qtbot: QtBot,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0.02")
    task, shell = window()
    assert shell.hosting
    info = read_host(relay_home)
    assert info is not None
    assert info.kind == "window"
    assert shell.window.home_label.text() == f"Hosting {relay_home} at {info.url}"
    client = RelayClient.for_home(relay_home)
    assert client is not None
    try:
        assert arun(client.status()).kind == "window"
        assert arun(client.list_sessions()) == []
        sid = arun(client.start_session(SessionSpec(repo=git_repo, task="over the API",
                                                    runtime="demo")))
        # the window's list shows it live, and sees it complete
        qtbot.waitUntil(lambda: _state(shell, "over the API") == "completed", timeout=30_000)
        assert _rows(shell, "over the API")[0].id == sid
        assert arun(client.get_session(sid)).state == "completed"
    finally:
        arun(client.aclose())
    shell.window.quit_action.trigger()  # nothing runs: no question
    qtbot.waitUntil(task.done, timeout=10_000)
    assert task.result() == 0
    assert shell.quit_box is None
    assert read_host(relay_home) is None
    assert not (relay_home / "host.json").exists()


def test_closing_the_window_hides_it_to_the_tray_and_the_session_goes_on(
        shell: RelayShell, engine: Engine, git_repo: Path, arun: Runner, qtbot: QtBot,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RelayTray, "isVisible", lambda _self: True)  # a desktop with a tray
    monkeypatch.setattr(RelayTray, "showMessage", lambda *_args: None)
    engine.config = load_config(demo_step_delay=0.1)
    shell.start(unlock_vault=False)
    sid = arun(engine.start_session(SessionSpec(repo=git_repo, task="t", runtime="demo")))
    quits: list[bool] = []
    shell.quitRequested.connect(lambda: quits.append(True))
    shell.window.close()
    assert not shell.window.isVisible()
    assert engine.is_running_here(sid)
    assert [n.title for n in shell.tray.notifications] == [HIDDEN_TITLE]
    shell.show()
    shell.window.close()  # said once
    assert [n.title for n in shell.tray.notifications] == [HIDDEN_TITLE]
    assert arun(engine.wait_session(sid), timeout=30).state == "completed"
    assert quits == []
    assert shell.quit_box is None


def test_without_a_tray_closing_is_quit_and_asks(shell: RelayShell, engine: Engine,
                                                 git_repo: Path, arun: Runner,
                                                 qtbot: QtBot) -> None:
    engine.config = load_config(demo_step_delay=0.1)
    shell.start(unlock_vault=False)
    sid = arun(engine.start_session(SessionSpec(repo=git_repo, task="t", runtime="demo")))
    shell.window.close()
    _answer(qtbot, shell, "quitCancel")
    qtbot.waitUntil(lambda: shell.quit_box is None, timeout=5000)
    assert shell.window.isVisible()
    assert engine.is_running_here(sid)
    arun(engine.wait_session(sid), timeout=30)


def test_quit_asks_and_cancel_changes_nothing_then_keep_hosts_on_headless(
        window: Started, qapp: QApplication, relay_home: Path, git_repo: Path, arun: Runner,
        qtbot: QtBot, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0.15")
    task, shell = window()
    shell.start_session(SessionSpec(repo=git_repo, task="kept", runtime="demo"))
    qtbot.waitUntil(lambda: _state(shell, "kept") == "running", timeout=10_000)
    sid = _rows(shell, "kept")[0].id

    shell.window.quit_action.trigger()
    _answer(qtbot, shell, "quitCancel")
    qtbot.waitUntil(lambda: shell.quit_box is None, timeout=5000)
    assert not task.done()
    assert shell.window.isVisible()
    assert shell.engine.is_running_here(sid)

    shell.tray.quit_action.trigger()
    _answer(qtbot, shell, "quitKeep")
    # the window and tray are gone; the process hosts on, headless, until the session ends
    qtbot.waitUntil(lambda: not shell.window.isVisible(), timeout=5000)
    assert not task.done()
    assert not [w for w in qapp.topLevelWidgets() if w.isVisible()]
    assert not shell.tray.isVisible()
    # relay-cli status: a headless host (host.json is written on a thread: wait for it)
    qtbot.waitUntil(lambda: getattr(read_host(relay_home), "kind", None) == "serve",
                    timeout=5000)
    # said before host.json says "serve"
    assert f"the window is closed; hosting {relay_home} until its running session ends" \
        in caplog.messages
    client = RelayClient.for_home(relay_home)
    assert client is not None
    try:
        assert arun(client.get_session(sid)).state == "running"
    finally:
        arun(client.aclose())
    qtbot.waitUntil(task.done, timeout=30_000)
    assert task.result() == 0
    assert read_host(relay_home) is None
    engine = arun(Engine.open(load_config(home=relay_home)))
    try:
        assert arun(engine.get_session(sid)).state == "completed"
    finally:
        arun(engine.close())


@pytest.mark.parametrize(("running", "text", "told"), [
    (1, "1 session is still running.",
     "Keep it running: Relay closes its window and goes on in the background until it ends "
     "(a window opened meanwhile shows it). Stop it: it ends interrupted; you can resume it "
     "later."),
    (3, "3 sessions are still running.",
     "Keep them running: Relay closes its window and goes on in the background until they "
     "end (a window opened meanwhile shows them). Stop them: they end interrupted; you can "
     "resume them later.")])
def test_the_quit_question_reads_right_for_one_session_and_for_several(
        qapp: QApplication, running: int, text: str, told: str) -> None:
    box = quit_question(running)
    try:
        assert box.text() == text
        assert box.informativeText() == told
        assert {b.text() for b in box.buttons()} == {
            "Keep running", "Stop session" + ("s" if running > 1 else ""), "Cancel"}
    finally:
        box.deleteLater()


def test_quit_and_stop_ends_the_session_interrupted(
        window: Started, relay_home: Path, git_repo: Path, arun: Runner, qtbot: QtBot,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0.5")
    task, shell = window()
    shell.start_session(SessionSpec(repo=git_repo, task="stopped", runtime="demo"))
    qtbot.waitUntil(lambda: _state(shell, "stopped") == "running", timeout=10_000)
    sid = _rows(shell, "stopped")[0].id
    shell.window.quit_action.trigger()
    _answer(qtbot, shell, "quitStop")
    qtbot.waitUntil(task.done, timeout=10_000)
    assert task.result() == 0
    engine = arun(Engine.open(load_config(home=relay_home)))
    try:
        assert arun(engine.get_session(sid)).state == "interrupted"
    finally:
        arun(engine.close())


@pytest.mark.parametrize("how", ["host.json", "--connect"])
def test_a_second_window_attaches_to_the_first_and_shows_its_sessions_live(
        how: str, window: Started, relay_home: Path, git_repo: Path, arun: Runner,
        qtbot: QtBot, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0.2")  # the second session is stopped running
    first_task, first = window()
    info = read_host(relay_home)
    assert info is not None
    token = read_token(relay_home)
    assert token is not None
    argv = ("--connect", info.url, "--token", token) if how == "--connect" else ()
    second_task, second = window(*argv)
    assert not second.hosting
    assert second.client is not None
    assert second.client.url == info.url
    assert f"Connected to {info.url}" in second.window.home_label.text()

    # a session the second window starts runs in the first (the host), shown live in both
    second.start_session(SessionSpec(repo=git_repo, task="from the second", runtime="demo"))
    qtbot.waitUntil(lambda: _state(second, "from the second") is not None, timeout=10_000)
    sid = _rows(second, "from the second")[0].id
    assert first.engine.is_running_here(sid)
    second.show_session(sid)
    qtbot.waitUntil(lambda: _state(second, "from the second") == "completed", timeout=30_000)
    qtbot.waitUntil(lambda: _state(first, "from the second") == "completed", timeout=10_000)
    # the stream shows every event the host stored, once, in order
    stored = [r.id for r in arun(first.engine.session_events(sid))]
    qtbot.waitUntil(lambda: second.stream_vm.event_count() == len(stored), timeout=10_000)
    assert [r.id for r in second.stream_vm.records()] == stored

    # stop from the client window: the host stops it
    second.start_session(SessionSpec(repo=git_repo, task="stopped from the second",
                                     runtime="demo"))
    qtbot.waitUntil(lambda: _state(second, "stopped from the second") == "running",
                    timeout=10_000)
    other = _rows(second, "stopped from the second")[0].id
    second.show_session(other)
    qtbot.waitUntil(lambda: second.stream_vm.can_stop, timeout=10_000)
    second.stream_vm.stop()
    qtbot.waitUntil(lambda: _state(first, "stopped from the second") == "cancelled",
                    timeout=10_000)
    qtbot.waitUntil(lambda: _state(second, "stopped from the second") == "cancelled",
                    timeout=10_000)

    # the client window quits without a question and without stopping its host
    second.window.quit_action.trigger()
    qtbot.waitUntil(second_task.done, timeout=10_000)
    assert second_task.result() == 0
    assert second.quit_box is None
    assert read_host(relay_home) is not None
    assert not first_task.done()


def test_hidden_with_no_tray_shows_the_window_anyway(window: Started) -> None:
    _task, shell = window("--hidden")  # offscreen has no tray to open it from
    assert shell.window.isVisible()
