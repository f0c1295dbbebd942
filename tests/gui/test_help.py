"""Help, Preferences and Reset layout: the shortcut sheet read from the window's actions,
About, Preferences written back to relay.toml (an invalid value shown, nothing written), and
View → Reset layout putting a moved dock back."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QCheckBox, QComboBox, QDockWidget, QLabel, QLineEdit, QMenu
from pytestqt.qtbot import QtBot

from relay import __version__
from relay.core.config import load_config
from relay.gui.help import AboutDialog, ShortcutSheet
from relay.gui.preferences import SECTIONS, PreferencesDialog
from relay.gui.shell import RelayShell


def _menu_titles(shell: RelayShell) -> list[str]:
    return [a.text() for a in shell.window.menuBar().actions()]


def test_the_menus_have_help_preferences_and_reset_layout(shell: RelayShell) -> None:
    window = shell.window
    assert {"&Edit", "&Help"} <= set(_menu_titles(shell))
    assert window.preferences_action.shortcut() == QKeySequence("Ctrl+,")
    assert window.shortcuts_action.shortcuts() == [QKeySequence("F1"), QKeySequence("Ctrl+/")]
    view = next(a.menu() for a in window.menuBar().actions() if a.text() == "&View")
    assert isinstance(view, QMenu)
    assert window.reset_layout_action in view.actions()


def test_the_shortcut_sheet_lists_the_windows_actions(shell: RelayShell, qtbot: QtBot) -> None:
    shell.window.shortcuts_action.trigger()
    sheet = shell.help.dialogs["shortcuts"]
    assert isinstance(sheet, ShortcutSheet)
    qtbot.waitUntil(sheet.isVisible)
    rows = sheet.rows()
    assert ("File", "New session", QKeySequence("Ctrl+N").toString(
        QKeySequence.SequenceFormat.NativeText)) in rows
    assert ("Session", "Hand off now", "Ctrl+Shift+H") in rows
    assert ("Edit", "Preferences", "Ctrl+,") in rows
    assert ("Help", "Keyboard shortcuts", "F1 or Ctrl+/") in rows
    # a panel's own action is there too, under the panel's name
    assert any(where == "Pipelines" and action == "Save pipeline" for where, action, _ in rows)
    everyone = {a for a in shell.window.findChildren(QAction) if not a.shortcut().isEmpty()}
    assert len(rows) == len(everyone)
    sheet.close()
    # read from the window, not a list: an action added later is on the next sheet
    extra = QAction("Frobnicate", shell.stream_dock)
    extra.setShortcut(QKeySequence("Ctrl+Alt+F"))
    shell.window.shortcuts_action.trigger()
    fresh = shell.help.dialogs["shortcuts"]
    assert isinstance(fresh, ShortcutSheet)
    assert fresh is not sheet
    assert ("Live stream", "Frobnicate", "Ctrl+Alt+F") in fresh.rows()
    fresh.close()


def test_about_says_the_version_and_the_data_folder(shell: RelayShell, qtbot: QtBot) -> None:
    shell.window.about_action.trigger()
    about = shell.help.dialogs["about"]
    assert isinstance(about, AboutDialog)
    qtbot.waitUntil(about.isVisible)
    text = about.text.text()
    assert f"Relay {__version__}" in text
    assert str(shell.engine.config.home) in text
    assert "Licence" in text
    about.close()


def _open_preferences(shell: RelayShell, qtbot: QtBot) -> PreferencesDialog:
    shell.window.preferences_action.trigger()
    dialog = shell.help.dialogs["preferences"]
    assert isinstance(dialog, PreferencesDialog)
    qtbot.waitUntil(dialog.isVisible)
    return dialog


def test_preferences_round_trip_to_relay_toml(shell: RelayShell, qtbot: QtBot) -> None:
    home = shell.engine.config.home
    (home / "relay.toml").write_text("# mine\nreset_margin = 45.0  # the provider is late\n")
    dialog = _open_preferences(shell, qtbot)
    shown = [name for _, names in SECTIONS for name in names]
    assert set(dialog.editors) == set(shown)
    assert "gui_theme" in shown
    margin = dialog.editors["reset_margin"]
    assert isinstance(margin, QLineEdit)
    assert margin.text() == "45"
    margin.setText("90")
    pause = dialog.editors["pause_timeout"]
    assert isinstance(pause, QLineEdit)
    pause.setText("120")
    theme_box = dialog.editors["gui_theme"]
    assert isinstance(theme_box, QComboBox)
    theme_box.setCurrentText("dark")
    approval = dialog.editors["mcp_require_approval"]
    assert isinstance(approval, QCheckBox)
    approval.setChecked(False)
    with qtbot.waitSignal(dialog.saved) as saved:
        dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
    assert saved.args == [{"reset_margin": "90", "pause_timeout": "120", "gui_theme": "dark",
                           "mcp_require_approval": False}]
    assert not dialog.isVisible()
    text = (home / "relay.toml").read_text()
    assert text.startswith("# mine\nreset_margin = 90.0  # the provider is late\n")
    config = load_config(env={}, home=home)
    assert (config.reset_margin, config.pause_timeout, config.gui_theme,
            config.mcp_require_approval) == (90.0, 120.0, "dark", False)
    assert "take effect when Relay next starts" in shell.window.statusBar().currentMessage()
    # opened again, it shows what the file says; defaults restored take the keys out again
    again = _open_preferences(shell, qtbot)
    assert again is not dialog
    assert again.value_of("pause_timeout") == "120"
    again.restore_defaults()
    again.save()
    assert load_config(env={}, home=home).pause_timeout == 60.0
    assert "pause_timeout" not in (home / "relay.toml").read_text()
    assert "# mine" in (home / "relay.toml").read_text()


def test_an_invalid_value_is_shown_and_nothing_is_written(shell: RelayShell,
                                                          qtbot: QtBot) -> None:
    home = shell.engine.config.home
    dialog = _open_preferences(shell, qtbot)
    pause = dialog.editors["pause_timeout"]
    assert isinstance(pause, QLineEdit)
    pause.setText("soon")
    dialog.tabs.setCurrentIndex(0)
    dialog.save()
    assert dialog.isVisible()
    assert dialog.error.isVisible()
    assert "pause_timeout" in dialog.error.text()
    assert "Nothing was saved" in dialog.error.text()
    assert dialog.tabs.tabText(dialog.tabs.currentIndex()) == "Sessions"  # where it is
    assert not (home / "relay.toml").exists()
    dialog.close()


def test_an_environment_override_is_named(tmp_path: Path, qtbot: QtBot) -> None:
    dialog = PreferencesDialog(tmp_path, env={"RELAY_PAUSE_TIMEOUT": "5"})
    qtbot.addWidget(dialog)
    help_label = dialog.findChild(QLabel, "prefHelp-pause_timeout")
    assert help_label is not None
    assert "RELAY_PAUSE_TIMEOUT" in help_label.text()
    other = dialog.findChild(QLabel, "prefHelp-reset_margin")
    assert other is not None
    assert "environment" not in other.text()


def test_reset_layout_puts_a_moved_dock_back(shell: RelayShell, qtbot: QtBot) -> None:
    window = shell.window
    window.setWindowState(Qt.WindowState.WindowNoState)
    window.resize(1360, 860)
    window.show()
    qtbot.waitExposed(window)
    wallet, sessions = shell.wallet_dock, shell.sessions_dock
    handoff = shell.handoff_dock
    assert wallet in window.tabifiedDockWidgets(handoff)
    width = sessions.width()
    stream = shell.stream_dock
    window.resizeDocks([sessions, stream], [width + 150, stream.width() - 150],
                       Qt.Orientation.Horizontal)
    qtbot.waitUntil(lambda: sessions.width() > width + 100)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, wallet)  # moved away
    shell.detect_dock.setFloating(True)
    shell.knowledge_dock.close()
    qtbot.waitUntil(lambda: window.dockWidgetArea(wallet) == Qt.DockWidgetArea.RightDockWidgetArea)
    window.reset_layout_action.trigger()
    assert window.dockWidgetArea(wallet) == Qt.DockWidgetArea.LeftDockWidgetArea
    assert window.dockWidgetArea(sessions) == Qt.DockWidgetArea.LeftDockWidgetArea
    assert {wallet, shell.detect_dock, shell.knowledge_dock} <= set(
        window.tabifiedDockWidgets(handoff))
    assert not shell.detect_dock.isFloating()
    assert not shell.knowledge_dock.isHidden()
    assert all(not d.isFloating() for d in window.findChildren(QDockWidget))
    qtbot.waitUntil(lambda: abs(sessions.width() - width) <= 10)  # and its size
