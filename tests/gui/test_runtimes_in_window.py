"""The new CLI runtimes in the window: the new-session dialog offers them, and a session on
each (the fake CLIs replaying recorded output) streams to completion with its usage."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from relay.core.models import SessionSpec
from relay.gui.new_session_dialog import NewSessionDialog
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.stream import StreamViewModel
from tests.gui.conftest import Runner


@pytest.mark.parametrize(("runtime", "scenario_var", "scenario"), [
    ("gemini", "RELAY_FAKE_GEMINI_SCENARIO", "b_tools_yolo"),
    ("pi", "RELAY_FAKE_PI_SCENARIO", "b_tools_bash_write_edit"),
])
def test_a_session_on_a_new_runtime_streams_in_the_window(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, fakes_on_path: Path, arun: Runner,
        monkeypatch: pytest.MonkeyPatch, runtime: str, scenario_var: str, scenario: str) -> None:
    monkeypatch.setenv(scenario_var, scenario)
    monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-a-secret")
    infos = arun(asyncio.to_thread(shell.engine.runtime_infos))
    dialog = NewSessionDialog(infos)
    qtbot.addWidget(dialog)
    assert dialog.runtime.findData(runtime) >= 0  # offered, and found on PATH
    assert next(i for i in infos if i.runtime == runtime).problem is None

    with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=5000) as started:
        shell.start_session(SessionSpec(repo=git_repo, task="Run the tools", runtime=runtime))
    assert started.args is not None
    vm = shell.stream_vm
    qtbot.waitUntil(lambda: vm.session is not None and vm.session.state == "completed",
                    timeout=20_000)

    badges = [vm.index(i, 0).data(StreamViewModel.BadgeRole) for i in range(vm.rowCount())]
    assert "TOOL" in badges
    row = arun(shell.engine.get_session(started.args[0]))
    assert row.runtime == runtime
    assert row.usage.input_tokens
