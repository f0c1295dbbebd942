"""The first-run welcome: shown on a fresh data folder only; the demo and a session from it."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox
from pytestqt.qtbot import QtBot

from relay.gui import launch
from relay.gui.main_window import MainWindow
from relay.gui.shell import RelayShell
from relay.gui.welcome import WelcomeDialog, runtimes_html
from relay.runtimes.base import RuntimeInfo

FOUND = RuntimeInfo("claude", "/usr/bin/claude", "2.1.197")
MISSING = RuntimeInfo("codex", None, None, problem="The codex CLI is not installed.",
                      hint="npm install -g @openai/codex")


def test_runtimes_say_found_or_how_to_install() -> None:
    text = runtimes_html([FOUND, MISSING, RuntimeInfo("demo", "(built in)", "scripted demo")])
    assert "<b>claude</b> 2.1.197" in text
    assert "<b>codex</b> not found." in text
    assert "npm install -g @openai/codex" in text
    assert "demo" not in text


def test_with_no_cli_the_demo_is_offered_as_the_way_in(qtbot: QtBot) -> None:
    dialog = WelcomeDialog([MISSING])
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.none_found.isVisible()
    dialog.set_infos([FOUND, MISSING])
    assert not dialog.none_found.isVisible()


def test_run_the_demo_from_the_welcome(shell: RelayShell, qtbot: QtBot, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    shell.start()
    welcome = shell.show_welcome()
    qtbot.waitExposed(welcome)
    with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=10_000):
        QTest.mouseClick(welcome.demo_button, Qt.MouseButton.LeftButton)
    assert not welcome.isVisible()
    qtbot.waitUntil(lambda: shell.sessions_vm.rowCount() == 1, timeout=10_000)


def _welcomes(app: QApplication) -> list[WelcomeDialog]:
    return [w for w in app.topLevelWidgets() if isinstance(w, WelcomeDialog) and w.isVisible()]


@pytest.mark.parametrize("first_run", [True, False])
def test_the_welcome_shows_on_a_fresh_data_folder_only(
        first_run: bool, qapp: QApplication, qtbot: QtBot, qloop: asyncio.AbstractEventLoop,
        tmp_path: Path) -> None:
    home = tmp_path / "fresh-home"
    if not first_run:
        home.mkdir()
        (home / "relay.db").write_bytes(b"")  # an existing (empty) store: not a first run
    args = launch.build_parser().parse_args(["--home", str(home)])
    task = asyncio.get_running_loop().create_task(launch.amain(qapp, args))
    qtbot.waitUntil(lambda: any(isinstance(w, MainWindow) and w.isVisible()
                                for w in qapp.topLevelWidgets()), timeout=5000)
    if first_run:
        qtbot.waitUntil(lambda: bool(_welcomes(qapp)), timeout=5000)
    else:  # shown in the same step that shows the window, or never
        assert not _welcomes(qapp)
    assert not [w for w in qapp.topLevelWidgets()
                if isinstance(w, QMessageBox) and w.isVisible()]  # no error dialogs
    main = next(w for w in qapp.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible())
    main.quit_action.trigger()
    qtbot.waitUntil(task.done, timeout=10_000)
    assert task.result() == 0
    assert not _welcomes(qapp)
