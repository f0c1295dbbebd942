"""The composer in a window that is a client of a host: it talks through the host's API
(``client.talk``), and the message it queues shows live in the hosting window too."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from relay.core.models import SessionSpec
from tests.gui.conftest import Runner, Started


def test_a_client_window_queues_through_the_host_and_both_windows_show_it(
        window: Started, relay_home: Path, vault_env: None, git_repo: Path, arun: Runner,
        qtbot: QtBot, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0.4")
    _task, host = window()
    _task, client = window()
    assert host.hosting
    assert not client.hosting
    with qtbot.waitSignal(host.bridge.sessionStarted, timeout=5000) as started:
        host.start_session(SessionSpec(repo=git_repo, task="write the notes", runtime="demo"))
    assert started.args is not None
    session_id = str(started.args[0])
    client.sessions_vm.refresh()
    client.show_session(session_id)
    vm = client.composer_vm
    qtbot.waitUntil(lambda: vm.session_id == session_id and vm.busy, timeout=10_000)

    client.composer.text.setPlainText("from the other window")
    client.composer.send_button.click()

    qtbot.waitUntil(lambda: len(client.composer.rows) == 1, timeout=10_000)
    qtbot.waitUntil(lambda: len(host.composer.rows) == 1, timeout=10_000)
    assert "queued: from the other window" in host.composer.rows[0].label.text()
    [stored] = arun(host.engine.talk.messages(session_id, pending=True))
    assert (stored.text, stored.source) == ("from the other window", "window")

    qtbot.waitUntil(lambda: not client.composer.rows and not host.composer.rows,
                    timeout=30_000)
    row = arun(host.engine.wait_session(session_id), timeout=60)
    assert row.state == "completed", row.reason
