"""The window's one message API: an error in the panel concerned and the status bar,
scrubbed and logged; a passing message in the status bar."""

from __future__ import annotations

import logging

import pytest
from PySide6.QtWidgets import QMainWindow
from pytestqt.qtbot import QtBot

from relay.core.errors import RelayError
from relay.gui.messages import ErrorBanner, Messages, StatusBarPresenter, error_text
from relay.gui.shell import RelayShell

FAKE_KEY = "sk-ant-api03-" + "Mn5Bv6Cx" * 10


@pytest.fixture
def window(qtbot: QtBot) -> tuple[QMainWindow, Messages, StatusBarPresenter]:
    main = QMainWindow()
    qtbot.addWidget(main)
    messages = Messages(main)
    return main, messages, StatusBarPresenter(messages, main.statusBar())


def test_an_error_shows_in_its_panel_and_the_status_bar_scrubbed_and_logged(
        window: tuple[QMainWindow, Messages, StatusBarPresenter], qtbot: QtBot,
        caplog: pytest.LogCaptureFixture) -> None:
    _main, messages, status = window
    banner = ErrorBanner("testError")
    qtbot.addWidget(banner)
    messages.register("wallet", banner.show_error)

    with caplog.at_level(logging.WARNING), \
            qtbot.waitSignal(messages.errorShown) as shown:
        messages.error("wallet", f"The key {FAKE_KEY} was refused.", "Log in again.")

    assert shown.args == ["wallet", "The key [REDACTED:anthropic_key] was refused.",
                          "Log in again."]
    assert banner.text() == "The key [REDACTED:anthropic_key] was refused.\n→ Log in again."
    assert not banner.isHidden()
    assert status.error_label.text() == ("The key [REDACTED:anthropic_key] was refused."
                                         "  → Log in again.")
    assert status.error_label.toolTip().startswith("[wallet] ")
    assert "wallet: The key [REDACTED:anthropic_key] was refused. → Log in again." in caplog.text
    assert FAKE_KEY not in caplog.text


def test_an_error_of_no_panel_goes_to_the_status_bar_only(
        window: tuple[QMainWindow, Messages, StatusBarPresenter]) -> None:
    _main, messages, status = window
    messages.error("runtimes", "No agent CLI answers.")
    assert status.error_label.text() == "No agent CLI answers."


def test_a_notice_passes_through_the_status_bar(
        window: tuple[QMainWindow, Messages, StatusBarPresenter]) -> None:
    main, messages, _status = window
    messages.notice(f"Handoff done with {FAKE_KEY}")
    assert main.statusBar().currentMessage() == "Handoff done with [REDACTED:anthropic_key]"


def test_errors_fade_from_the_status_bar(
        window: tuple[QMainWindow, Messages, StatusBarPresenter], qtbot: QtBot) -> None:
    _main, messages, status = window
    status.timeout_ms = 10
    messages.error("x", "Gone soon.")
    assert status.error_label.text() == "Gone soon."
    qtbot.waitUntil(lambda: status.error_label.text() == "", timeout=2000)


def test_a_banner_is_hidden_until_there_is_an_error(qtbot: QtBot) -> None:
    banner = ErrorBanner("testError")
    qtbot.addWidget(banner)
    assert banner.isHidden()
    assert banner.objectName() == "testError"
    banner.show_error("Broken.")
    assert banner.text() == "Broken."
    assert error_text("Broken.", "Fix it.") == "Broken.\n→ Fix it."


@pytest.mark.parametrize(("context", "dock"), [
    ("stream", "stream_dock"), ("sessions", "sessions_dock"), ("handoff", "handoff_dock"),
    ("wallet", "wallet_dock"), ("detect", "detect_dock"), ("pipelines", "designer_dock"),
    ("history", "history_dock"), ("knowledge", "knowledge_dock"),
])
def test_every_panel_shows_its_own_errors_through_the_window_s_messages(
        shell: RelayShell, context: str, dock: str) -> None:
    shell.bridge.tasks.report(context, RelayError("It failed.", "Do this."))

    assert getattr(shell, dock).error.text() == "It failed.\n→ Do this."
    assert shell.window.status.error_label.text() == "It failed.  → Do this."
    others = [name for name in ("stream_dock", "sessions_dock", "handoff_dock", "wallet_dock",
                                "detect_dock", "designer_dock", "history_dock", "knowledge_dock")
              if name != dock]
    assert all(getattr(shell, name).error.isHidden() for name in others)


def test_a_notification_without_a_tray_is_a_passing_message(shell: RelayShell) -> None:
    assert not shell.tray.isVisible()
    shell.notifier.notify.emit("Handoff done", "claude → codex", False)
    assert shell.window.statusBar().currentMessage() == "Handoff done: claude → codex"
