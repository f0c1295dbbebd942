"""The welcome: shown on a fresh data folder only, and from Help → Welcome…; every runtime
listed (scrolling, never clipped), install commands to copy; the demo and an account from it."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLabel, QMenu, QMessageBox
from pytestqt.qtbot import QtBot

from relay.gui import launch
from relay.gui.account_dialog import AccountDialog
from relay.gui.main_window import MainWindow
from relay.gui.shell import RelayShell
from relay.gui.welcome import WelcomeDialog, install_command
from relay.runtimes.base import RuntimeInfo
from relay.runtimes.registry import adapter_class, available_runtimes

FOUND = RuntimeInfo("claude", "/usr/bin/claude", "2.1.197")
MISSING = RuntimeInfo("codex", None, None, problem="The codex CLI is not installed.",
                      hint="Install Codex: npm install -g @openai/codex — or set "
                           "RELAY_CODEX_BIN to its path.")


def test_the_install_command_is_read_from_each_runtimes_own_hint() -> None:
    for name in available_runtimes():
        hint = getattr(adapter_class(name), "install_hint", None)
        if hint and "npm" in hint:  # as find_executable words it when the CLI is missing
            command = install_command(f"{hint} — or set RELAY_X_BIN to its path.")
            assert command is not None, name
            assert command.startswith("npm install -g @"), name
            assert command in hint
            assert "—" not in command
    assert install_command("Start it (`ollama serve`) or set OLLAMA_HOST.") == "ollama serve"
    assert install_command("Reinstall it.") is None
    assert install_command(None) is None


def _every_runtime() -> list[RuntimeInfo]:
    """Every runtime this build drives: one found, the CLIs missing, the APIs keyless."""
    infos = [RuntimeInfo("demo", "(built in)", "scripted demo")]
    for name in available_runtimes():
        if name == "demo":
            continue
        if name == "claude":
            infos.append(FOUND)
        elif name in {"anthropic", "openai", "openai-chat"}:
            infos.append(RuntimeInfo(name, "https://api", "HTTP API", problem="No key.",
                                     hint="Register a key: relay-cli accounts add …"))
        else:
            hint = getattr(adapter_class(name), "install_hint", "Start it (`ollama serve`).")
            infos.append(RuntimeInfo(name, None, None, problem=f"The {name} CLI is missing.",
                                     hint=f"{hint} — or set RELAY_X_BIN to its path."))
    return infos


def test_every_runtime_is_listed_and_none_is_clipped(qtbot: QtBot) -> None:
    infos = _every_runtime()
    dialog = WelcomeDialog(infos)
    qtbot.addWidget(dialog)
    dialog.resize(560, 420)  # smaller than its list: the list scrolls, the dialog does not grow
    dialog.show()
    qtbot.waitExposed(dialog)
    names = [i.runtime for i in infos if i.runtime != "demo"]
    assert sorted(dialog.rows) == sorted(names)
    assert len(names) == 11
    assert dialog.height() <= 640
    page = dialog.list_area.widget()
    assert page is not None
    assert page.height() > dialog.list_area.viewport().height()  # it scrolls
    for name in names:
        row = dialog.rows[name]
        assert row.isVisibleTo(dialog)
        assert page.rect().contains(row.mapTo(page, row.rect().bottomRight()))
        dialog.list_area.ensureWidgetVisible(row)
        assert not row.visibleRegion().isEmpty(), f"{name} cannot be scrolled into view"
    # found: with its version; missing: the command to copy; an HTTP API: add a key
    assert any("2.1.197" in label.text() for label in dialog.rows["claude"].findChildren(QLabel))
    assert set(dialog.copy_buttons) == {n for n in names if n not in
                                        {"claude", "anthropic", "openai", "openai-chat"}}


def test_copy_puts_the_install_command_on_the_clipboard(qtbot: QtBot) -> None:
    dialog = WelcomeDialog([FOUND, MISSING])
    qtbot.addWidget(dialog)
    dialog.show()
    QTest.mouseClick(dialog.copy_buttons["codex"], Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == "npm install -g @openai/codex"
    assert dialog.copy_buttons["codex"].text() == "Copied"
    assert "claude" not in dialog.copy_buttons  # found: nothing to install


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


def test_help_welcome_reopens_it(shell: RelayShell, qtbot: QtBot) -> None:
    shell.start()
    action = shell.window.welcome_action
    help_menu = shell.window.menuBar().actions()[-1].menu()
    assert isinstance(help_menu, QMenu)
    assert action in help_menu.actions()
    action.trigger()
    first = shell.welcome
    assert first is not None
    qtbot.waitUntil(first.isVisible)
    first.close()
    action.trigger()
    assert shell.welcome is not None
    assert shell.welcome is not first
    qtbot.waitUntil(shell.welcome.isVisible)
    assert shell.welcome.rows  # the runtimes the window knows of
    action.trigger()  # while open: raised, not a second one
    assert len([w for w in QApplication.topLevelWidgets()
                if isinstance(w, WelcomeDialog) and w.isVisible()]) == 1


def test_add_an_account_opens_the_wallets_dialog(shell: RelayShell, qtbot: QtBot) -> None:
    shell.start()
    welcome = shell.show_welcome()
    qtbot.waitExposed(welcome)
    QTest.mouseClick(welcome.account_button, Qt.MouseButton.LeftButton)
    assert not welcome.isVisible()
    dialog = shell.wallet_dock.dialog
    assert isinstance(dialog, AccountDialog)
    qtbot.waitUntil(dialog.isVisible)
    assert shell.wallet_dock.isVisible()
    dialog.close()
