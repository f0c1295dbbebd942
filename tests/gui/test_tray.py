"""The tray icon: its menu, its tooltip, and no tray at all (offscreen)."""

from __future__ import annotations

from PySide6.QtWidgets import QSystemTrayIcon
from pytestqt.qtbot import QtBot

from relay.engine.engine import Engine
from relay.gui.resources import app_icon
from relay.gui.shell import RelayShell
from relay.gui.tray import RelayTray


def test_the_tray_has_its_menu_actions(qtbot: QtBot, qapp: object) -> None:
    tray = RelayTray(app_icon())
    texts = [a.text() for a in tray.menu.actions() if not a.isSeparator()]
    assert texts == ["Show window", "New session…", "Quit"]
    assert tray.contextMenu() is tray.menu
    assert not tray.icon().isNull()
    for action, signal in ((tray.show_action, tray.showRequested),
                           (tray.new_action, tray.newSessionRequested),
                           (tray.quit_action, tray.quitRequested)):
        with qtbot.waitSignal(signal, timeout=1000):
            action.trigger()


def test_without_a_system_tray_the_icon_stays_hidden(qapp: object) -> None:
    tray = RelayTray(app_icon())
    assert not QSystemTrayIcon.isSystemTrayAvailable()  # offscreen has none
    assert tray.install() is False
    assert not tray.isVisible()


def test_the_tooltip_counts_running_sessions(qapp: object) -> None:
    tray = RelayTray(app_icon())
    assert tray.toolTip() == "Relay — 0 running sessions"
    tray.set_running(1)
    assert tray.toolTip() == "Relay — 1 running session"


def test_the_shell_wires_the_tray(shell: RelayShell, engine: Engine, qtbot: QtBot) -> None:
    with qtbot.waitSignal(shell.quitRequested, timeout=1000):
        shell.tray.quit_action.trigger()
    shell.tray.new_action.trigger()
    assert shell.dialog is not None
    assert shell.dialog.isVisible()
    shell.dialog.reject()
    shell.sessions_vm.runningChanged.emit(2)
    assert shell.tray.toolTip() == "Relay — 2 running sessions"
