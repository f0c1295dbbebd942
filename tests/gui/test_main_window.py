"""The main window opens with every dock placed."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QLabel, QMenu
from pytestqt.qtbot import QtBot

from relay.core.errors import WorktreeError
from relay.gui.docks.stream_dock import EMPTY_TEXT
from relay.gui.shell import RelayShell


def test_the_main_window_opens_with_all_docks(shell: RelayShell, qtbot: QtBot) -> None:
    window = shell.window
    window.show()
    qtbot.waitExposed(window)
    docks = {d.windowTitle(): d for d in window.findChildren(QDockWidget)}
    assert set(docks) == {"Sessions", "Live stream", "Handoff", "Wallet", "Detect", "Pipelines",
                          "History", "Knowledge", "Board"}
    for dock in docks.values():
        assert window.dockWidgetArea(dock) != Qt.DockWidgetArea.NoDockWidgetArea
        assert not dock.isFloating()
    assert docks["Sessions"].isVisible()
    assert docks["Live stream"].isVisible()
    assert docks["Handoff"].isVisible()  # raised above the panels it is tabbed with
    assert window.dockWidgetArea(docks["Handoff"]) == window.dockWidgetArea(docks["Sessions"])
    assert {d.windowTitle() for d in window.tabifiedDockWidgets(docks["Handoff"])} == {
        "Wallet", "Detect", "Knowledge"}
    # the board's columns, the designer's canvas and the History dock's diff need room: they
    # are tabbed behind the stream, which stays raised
    assert docks["Pipelines"].objectName() == "pipelinesDock"
    assert docks["History"].objectName() == "historyDock"
    assert window.tabifiedDockWidgets(docks["Live stream"]) == [
        docks["Board"], docks["Pipelines"], docks["History"]]
    for title in ("Pipelines", "History"):
        assert docks[title].findChild(QLabel, "placeholderLabel") is None
    assert shell.stream_dock.empty.text() == EMPTY_TEXT
    assert shell.stream_dock.empty.isVisible()

    menus = {menu.title(): [x.text() for x in menu.actions() if not x.isSeparator()]
             for menu in window.menuBar().findChildren(QMenu)}
    assert menus["&File"] == ["&New session…", "Start Relay at &login", "&Quit"]
    assert menus["&Session"] == ["&Stop session", "&Hand off now"]
    assert len(menus["&View"]) == 10  # a switch per dock, then Reset layout
    assert menus["&View"][-1] == "&Reset layout"
    assert menus["&Tools"] == ["&Integrations…"]
    assert menus["&Edit"] == ["&Preferences…"]
    assert menus["&Help"] == ["&Welcome…", "&Keyboard shortcuts…", "&About Relay"]
    assert not window.stop_action.isEnabled()
    assert not window.handoff_action.isEnabled()


def test_errors_from_tasks_reach_the_status_bar(shell: RelayShell) -> None:
    shell.bridge.tasks.report("sessions", WorktreeError("The repo is gone.", "Pick another."))
    assert "The repo is gone." in shell.window.status.error_label.text()
    assert "Pick another." in shell.window.status.error_label.text()
    assert not shell.sessions_dock.error.isHidden()


def test_closing_the_window_with_no_tray_quits(shell: RelayShell, qtbot: QtBot) -> None:
    shell.window.show()
    with qtbot.waitSignal(shell.quitRequested, timeout=1000):
        shell.window.close()


def test_the_window_fits_a_1024_by_700_screen(shell: RelayShell, qtbot: QtBot) -> None:
    """The docks that need room (the designer, History) scroll instead of widening the
    window past a small screen, and a screen smaller than the window's size opens it
    maximized: its frame fits and the status bar, which says who hosts, is in sight."""
    window = shell.window
    window.show()
    qtbot.waitExposed(window)
    least = window.minimumSizeHint()
    assert least.width() <= 1024
    assert least.height() <= 700 - 40  # room for a title bar
    room = window.screen().availableGeometry()
    assert (room.width() < 1360 or room.height() < 860) == window.isMaximized()
