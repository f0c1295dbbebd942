"""Stop and Hand off work for any session the host runs, whichever client started it: the
window's actions go through the host (the engine it hosts, or the host's API)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.gui.shell import RelayShell
from tests.gui.conftest import Runner, Started


@pytest.fixture
def engine(open_engine: Callable[..., Engine]) -> Engine:
    """Demo steps slow enough to act while the session runs."""
    return open_engine(demo_step_delay=0.3)


def _running(shell: RelayShell, sid: str) -> bool:
    row = shell.stream_vm.session
    return row is not None and row.id == sid and row.state == "running"


def _state(shell: RelayShell, sid: str) -> str | None:
    row = shell.stream_vm.session
    return row.state if row is not None and row.id == sid else None


def _shown(shell: RelayShell, sid: str, qtbot: QtBot) -> None:
    shell.sessions_vm.refresh()
    shell.show_session(sid)
    qtbot.waitUntil(lambda: _running(shell, sid), timeout=10_000)


def test_stop_works_for_a_session_another_client_started(
        shell: RelayShell, engine: Engine, git_repo: Path, arun: Runner, qtbot: QtBot) -> None:
    sid = arun(engine.start_session(SessionSpec(repo=git_repo, task="elsewhere",
                                                runtime="demo")))
    _shown(shell, sid, qtbot)
    w = shell.window
    qtbot.waitUntil(w.stop_action.isEnabled)
    assert shell.stream_dock.stop_button.isEnabled()
    w.stop_action.trigger()
    qtbot.waitUntil(lambda: _state(shell, sid) == "cancelled", timeout=10_000)
    assert not w.stop_action.isEnabled()


def test_hand_off_works_for_a_session_another_client_started(
        shell: RelayShell, engine: Engine, git_repo: Path, arun: Runner, qtbot: QtBot,
        vault_env: None) -> None:
    sid = arun(engine.start_session(SessionSpec(repo=git_repo, task="elsewhere",
                                                chain=["demo:a", "demo:b"])))
    _shown(shell, sid, qtbot)
    w = shell.window
    qtbot.waitUntil(w.handoff_action.isEnabled)
    w.handoff_action.trigger()
    qtbot.waitUntil(lambda: bool(shell.handoffs_vm.answer), timeout=10_000)
    qtbot.waitUntil(lambda: shell.handoffs_vm.rowCount() > 0, timeout=30_000)  # demo:a → demo:b
    assert arun(engine.wait_session(sid), timeout=60).state == "completed"


def test_a_client_window_stops_a_session_the_host_runs(
        window: Started, git_repo: Path, arun: Runner, qtbot: QtBot,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0.3")
    _task, host = window()
    _task, client = window()
    assert not client.hosting
    sid = arun(host.engine.start_session(SessionSpec(repo=git_repo, task="on the host",
                                                     runtime="demo")))
    _shown(client, sid, qtbot)
    qtbot.waitUntil(client.window.stop_action.isEnabled)
    assert client.window.handoff_action.isEnabled()
    client.window.stop_action.trigger()
    qtbot.waitUntil(lambda: _state(client, sid) == "cancelled", timeout=10_000)
