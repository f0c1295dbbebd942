"""The Wallet dock over an in-memory wallet: cards, bars, labels, actions, scan, errors."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QDialogButtonBox, QLabel, QMessageBox
from pytestqt.qtbot import QtBot

from relay.core.models import SessionSpec
from relay.engine.account_check import AccountCheck
from relay.engine.engine import Engine
from relay.gui.account_dialog import AccountDialog
from relay.gui.bridge import EngineBridge
from relay.gui.docks.wallet_dock import EMPTY_TEXT, AccountCard, WalletDock
from relay.gui.login_launch import LoginLaunch
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.wallet import WalletViewModel
from relay.wallet.model import Figure
from relay.wallet.present import clock_ms
from tests.gui.conftest import Runner
from tests.gui.wallet_fakes import (
    HOUR,
    MIN,
    NOW,
    SCAN_TEXT,
    FakeWallet,
    codex_key,
    default_codex,
    personal,
    refused,
    work,
)


@pytest.fixture
def wallet() -> FakeWallet:
    return FakeWallet([work(), personal(), codex_key()])


@pytest.fixture
def dock(engine: Engine, wallet: FakeWallet, arun: Runner, qtbot: QtBot) -> Iterator[WalletDock]:
    bridge = EngineBridge(engine)
    vm = WalletViewModel(bridge, wallet, clock=lambda: NOW,
                         launcher=lambda argv, env, unset: LoginLaunch(None, "claude auth login"))
    dock = WalletDock(vm)
    bridge.tasks.failed.connect(lambda _c, m, h: dock.show_error(m, h))  # as the shell does
    qtbot.addWidget(dock)
    dock.resize(560, 900)
    dock.show()
    vm.refresh()
    qtbot.waitUntil(lambda: len(dock.cards) == 3, timeout=5000)
    yield dock
    vm.stop()
    arun(bridge.aclose())


def idle(dock: WalletDock) -> bool:
    return dock.vm._bridge.tasks.pending == 0


def card(dock: WalletDock, entry: str) -> AccountCard:
    return dock.cards[entry]


def test_each_account_is_a_card_with_its_windows_and_figures(dock: WalletDock) -> None:
    assert dock.pages.currentIndex() == 1
    w = card(dock, "claude:work")
    assert (w.title.text(), w.subtitle.text()) == ("work", "claude · CLI login")
    assert w.preferred_badge.isVisibleTo(dock)
    assert not w.paused_badge.isVisibleTo(dock)
    five, seven = w.window_rows["five_hour"], w.window_rows["seven_day"]
    assert five.title.text() == "5-hour"
    assert five.figures.text() == "42% used"
    assert five.detail.text() == ("≈71% at reset · resets in 3h 12m · "
                                  "official · 2 min ago · high confidence")
    assert (five.bar.used, five.bar.projected, five.bar.level) == (0.42, 0.71, "ok")
    assert seven.detail.text() == ("≈30% at reset · resets in 4d · "
                                   "estimate from transcripts · medium confidence")
    assert w.figures.text() == ("Burn 1.2k tok/min (recorded) · Today $3.20 estimate · "
                                "This week $18.40 reported")
    assert "day $3.20 of $5.00 · ok" in w.budgets.text()
    assert "week $18.40 of $20.00 · warn" in w.budgets.text()
    assert not w.breaker.isVisibleTo(dock)
    assert not w.prefer_button.isEnabled()  # already preferred
    assert w.pause_button.text() == "Pause"

    p = card(dock, "claude:personal")
    assert p.paused_badge.isVisibleTo(dock)
    assert p.pause_button.text() == "Resume"
    unknown = p.window_rows["five_hour"]
    assert unknown.figures.text() == "unknown —"  # never 0 %
    assert unknown.detail.text() == "reset time unknown · no forecast"
    assert unknown.bar.used is None
    assert p.figures.text() == "Burn — · Today — · This week —"
    assert p.breaker.isVisibleTo(dock)
    assert p.breaker.text().startswith("Circuit breaker open until ")
    assert p.breaker.text().endswith(" — usage limit reached")
    assert not p.budgets.isVisibleTo(dock)

    c = card(dock, "codex:ci")
    assert c.subtitle.text() == "codex · API key"
    assert not c.login_button.isEnabled()  # an API key has no login
    near = c.window_rows["five_hour"]
    assert near.bar.level == "over"
    assert near.detail.text() == (f"runs out ~{clock_ms(NOW + 20 * MIN)}, before the reset · "
                                  "resets in 1h · official · 2 min ago · high confidence")
    assert c.warnings.isVisibleTo(dock)
    assert c.figures.text() == "Burn — · Today $0.004 estimate · This week —"


def test_no_accounts_says_how_to_add_one(engine: Engine, arun: Runner, qtbot: QtBot) -> None:
    bridge = EngineBridge(engine)
    vm = WalletViewModel(bridge, FakeWallet([]))
    dock = WalletDock(vm)
    qtbot.addWidget(dock)
    assert dock.pages.currentIndex() == 0
    assert dock.empty.text() == "Reading the wallet…"
    vm.refresh()
    qtbot.waitUntil(lambda: dock.empty.text() == EMPTY_TEXT, timeout=5000)
    assert dock.pages.currentIndex() == 0
    arun(bridge.aclose())


def test_test_and_pause_go_through_the_view_model(dock: WalletDock, wallet: FakeWallet,
                                                  qtbot: QtBot) -> None:
    w = card(dock, "claude:work")
    QTest.mouseClick(w.test_button, Qt.MouseButton.LeftButton)
    assert w.note.text() == "Testing…"
    assert not w.test_button.isEnabled()  # busy
    qtbot.waitUntil(lambda: w.note.text() == "claude:work answers (claude-sonnet-4) in 1.2 s.",
                    timeout=5000)
    assert w.test_button.isEnabled()
    assert "#1a7f37" in w.note.styleSheet()  # green
    wallet.check_result = AccountCheck("claude:work", "failed", "no answer")
    w.test_button.click()
    qtbot.waitUntil(lambda: w.note.text() == "claude:work: no answer", timeout=5000)
    assert "#cf222e" in w.note.styleSheet()  # red

    w.pause_button.click()
    qtbot.waitUntil(lambda: w.pause_button.text() == "Resume" and idle(dock), timeout=5000)
    assert w.paused_badge.isVisibleTo(dock)
    assert ("set_paused", ("claude:work", True)) in wallet.calls

    p = card(dock, "claude:personal")
    p.prefer_button.click()
    qtbot.waitUntil(lambda: p.preferred_badge.isVisibleTo(dock) and idle(dock), timeout=5000)
    assert not w.preferred_badge.isVisibleTo(dock)


def test_log_in_without_a_terminal_shows_the_command_to_copy(dock: WalletDock,
                                                             qtbot: QtBot) -> None:
    w = card(dock, "claude:work")
    w.login_button.click()
    qtbot.waitUntil(lambda: w.command.isVisibleTo(dock), timeout=5000)
    assert w.note.text().startswith("No terminal emulator was found")
    assert w.command.text() == "claude auth login"
    assert w.command.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse


def test_remove_asks_first(dock: WalletDock, wallet: FakeWallet, qtbot: QtBot) -> None:
    p = card(dock, "claude:personal")
    p.remove_action.trigger()
    box = dock.confirm
    assert box is not None
    qtbot.waitExposed(box)
    assert box.text() == "Forget the account claude:personal?"
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert wallet.calls == []

    p.remove_action.trigger()
    box = dock.confirm
    assert box is not None
    box.button(QMessageBox.StandardButton.Yes).click()
    qtbot.waitUntil(lambda: list(dock.cards) == ["claude:work", "codex:ci"], timeout=5000)
    assert wallet.calls == [("remove", "claude:personal")]


def test_add_and_edit_through_the_dialog(dock: WalletDock, wallet: FakeWallet,
                                         qtbot: QtBot) -> None:
    dock.add_button.click()
    dialog = dock.dialog
    assert isinstance(dialog, AccountDialog)
    qtbot.waitExposed(dialog)
    dialog.provider.setCurrentIndex(dialog.provider.findData("codex"))
    QTest.keyClicks(dialog.label, "spare")
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: "codex:spare" in dock.cards, timeout=5000)
    assert not dialog.isVisible()
    assert wallet.saved[-1].original is None

    card(dock, "claude:work").edit_action.trigger()
    dialog = dock.dialog
    assert dialog is not None
    assert dialog.label.text() == "work"
    assert not dialog.provider.isEnabled()
    dialog.label.setText("job")
    dialog.folder.clear()
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: len(wallet.saved) == 2 and idle(dock), timeout=5000)
    edit = wallet.saved[-1]
    assert (edit.original, edit.label) == ("claude:work", "job")


def test_an_error_shows_in_the_panel_until_the_next_action(dock: WalletDock, wallet: FakeWallet,
                                                           qtbot: QtBot) -> None:
    wallet.fail_with = refused()
    card(dock, "claude:work").pause_button.click()
    qtbot.waitUntil(lambda: dock.error.isVisibleTo(dock), timeout=5000)
    assert dock.error.text() == ("No account claude:gone.\n"
                                 "→ List them with `relay-cli accounts list`.")
    wallet.fail_with = None
    card(dock, "claude:work").test_button.click()
    assert not dock.error.isVisibleTo(dock)
    qtbot.waitUntil(lambda: idle(dock), timeout=5000)


def test_rescan_shows_progress_and_keeps_the_window_responsive(
        dock: WalletDock, wallet: FakeWallet, qtbot: QtBot) -> None:
    gate = wallet.scan_gate = threading.Event()
    assert not dock.progress.isVisibleTo(dock)
    dock.rescan_button.click()
    qtbot.waitUntil(lambda: dock.progress.value() == 4, timeout=5000)
    assert dock.progress.isVisibleTo(dock)
    assert dock.progress.maximum() == 8
    assert not dock.rescan_button.isEnabled()
    assert dock.scan_label.text() == "Reading transcripts… 4 of 8 files"
    # the GUI thread is free while the scan waits: a test of an account completes meanwhile
    card(dock, "claude:work").test_button.click()
    qtbot.waitUntil(lambda: "answers" in card(dock, "claude:work").note.text(), timeout=5000)
    assert dock.vm.scan.running
    gate.set()
    qtbot.waitUntil(lambda: not dock.progress.isVisibleTo(dock) and idle(dock), timeout=5000)
    assert dock.rescan_button.isEnabled()
    assert dock.scan_label.text() == SCAN_TEXT


def test_an_unregistered_login_can_be_registered(dock: WalletDock, wallet: FakeWallet,
                                                 qtbot: QtBot) -> None:
    wallet.accounts.append(default_codex())
    dock.vm.refresh()
    qtbot.waitUntil(lambda: "codex" in dock.cards, timeout=5000)
    c = card(dock, "codex")
    assert (c.title.text(), c.subtitle.text()) == (
        "codex", "not registered · the CLI's default login")
    assert c.window_rows["five_hour"].detail.text().endswith("low confidence")
    for hidden in (c.test_button, c.login_button, c.prefer_button, c.pause_button,
                   c.more_button):
        assert not hidden.isVisibleTo(dock)
    assert c.register_button.isVisibleTo(dock)
    c.register_button.click()
    dialog = dock.dialog
    assert dialog is not None
    assert dialog.provider.currentData() == "codex"
    assert dialog.provider.isEnabled()
    assert dialog.windowTitle() == "Add account"
    dialog.reject()


def test_a_new_card_is_on_screen_as_soon_as_the_model_has_its_account(
        dock: WalletDock, wallet: FakeWallet, qtbot: QtBot) -> None:
    """No queued "show later": the moment the model is reset, the new card, its window rows and
    its actions are visible (a layout shows a widget added to a visible parent by a queued
    call; under load a check right after the card appeared ran before it and failed)."""
    seen: list[tuple[bool, ...]] = []

    def look() -> None:  # connected after the dock: runs right after its rebuild, no events
        c = dock.cards["codex"]
        seen.append((c.isVisibleTo(dock), c.register_button.isVisibleTo(dock),
                     *(w.isVisibleTo(dock) for w in c.window_rows["five_hour"].widgets())))

    dock.vm.modelReset.connect(look)
    wallet.accounts.append(default_codex())
    dock.vm.refresh()
    qtbot.waitUntil(lambda: bool(seen), timeout=5000)
    assert seen == [(True,) * 6]
    c = card(dock, "codex")
    assert not c.test_button.isVisibleTo(dock)  # hidden on purpose stays hidden
    wallet.accounts.append(replace(work(), entry="claude:new", label="new", preferred=False))
    dock.vm.modelReset.disconnect(look)
    dock.vm.refresh()
    qtbot.waitUntil(lambda: "claude:new" in dock.cards, timeout=5000)
    new = card(dock, "claude:new")
    assert new.test_button.isVisibleTo(dock)
    assert not new.preferred_badge.isVisibleTo(dock)


# -- in the window, with the real engine ----------------------------------------------------

def test_the_window_has_the_wallet_next_to_the_handoff_panel(
        shell: RelayShell, qtbot: QtBot, tmp_path: Path) -> None:
    window, dock = shell.window, shell.wallet_dock
    assert dock in window.tabifiedDockWidgets(shell.handoff_dock)
    assert window.dockWidgetArea(dock) == window.dockWidgetArea(shell.sessions_dock)
    assert dock.findChild(QLabel, "placeholderLabel") is None
    shell.start()
    qtbot.waitUntil(lambda: shell.wallet_vm.loaded and not shell.wallet_vm.scan.running
                    and shell.bridge.tasks.pending == 0, timeout=15_000)
    assert shell.wallet_vm.scan.message  # the start-up scan said what it read

    folder = tmp_path / "claude-work"
    folder.mkdir()
    dock.add_button.click()
    dialog = dock.dialog
    assert dialog is not None
    dialog.provider.setCurrentIndex(dialog.provider.findData("claude"))
    dialog.label.setText("work")
    dialog.folder.setText(str(folder))
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: "claude:work" in dock.cards, timeout=10_000)
    w = dock.cards["claude:work"]
    assert w.subtitle.text() == "claude · CLI login"
    assert set(w.window_rows) >= {"five_hour", "seven_day"}
    assert w.window_rows["five_hour"].figures.text() == "unknown —"  # nothing seen yet

    w.pause_button.click()
    qtbot.waitUntil(lambda: w.pause_button.text() == "Resume", timeout=10_000)
    w.prefer_button.click()
    qtbot.waitUntil(lambda: w.preferred_badge.isVisibleTo(dock), timeout=10_000)

    dock.add_button.click()  # the same label again: the engine refuses, the panel says why
    dialog = dock.dialog
    assert dialog is not None
    dialog.label.setText("work")
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: dock.error.isVisibleTo(dock), timeout=10_000)
    assert dock.error.text().startswith("claude:work is registered already.")
    assert "registered already" in window.status.error_label.text()

    w.remove_action.trigger()
    assert dock.confirm is not None
    dock.confirm.button(QMessageBox.StandardButton.Yes).click()
    qtbot.waitUntil(lambda: "claude:work" not in dock.cards, timeout=10_000)
    qtbot.waitUntil(lambda: shell.bridge.tasks.pending == 0, timeout=10_000)


def test_a_demo_limit_shows_in_the_wallet_and_the_tray(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None) -> None:
    shell.start()
    with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=5000):
        shell.start_session(SessionSpec(repo=git_repo, task="Add the notes",
                                        chain=["demo:primary", "demo:backup"],
                                        demo_limit_after=1))
    dock = shell.wallet_dock
    qtbot.waitUntil(lambda: "demo:primary" in dock.cards and dock.cards["demo:primary"]
                    .window_rows["five_hour"].figures.text() == "100% used", timeout=20_000)
    primary = dock.cards["demo:primary"]
    assert primary.subtitle.text() == "demo · a simulation"
    assert not primary.test_button.isVisibleTo(dock)  # not in the account book: no actions
    assert not primary.register_button.isVisibleTo(dock)
    five = primary.window_rows["five_hour"]
    assert " · official · " in five.detail.text()
    assert five.bar.level == "over"
    qtbot.waitUntil(lambda: primary.breaker.text().startswith("Circuit breaker open until "),
                    timeout=10_000)  # opened once the limit is handled
    assert primary.figures.text().endswith("reported")  # the demo reports its cost
    qtbot.waitUntil(lambda: "Account at its limit" in [n.title for n in
                                                       shell.tray.notifications], timeout=10_000)
    note = next(n for n in shell.tray.notifications if n.title == "Account at its limit")
    assert note.message.startswith("demo:primary: the 5-hour window is at 100% used (official")
    assert note.warning
    qtbot.waitUntil(lambda: "demo:backup" in dock.cards, timeout=10_000)


def test_the_tray_warns_through_the_window(engine: Engine, arun: Runner, qtbot: QtBot) -> None:
    now = time.time_ns() // 1_000_000  # the window's own clock: a reset still to come
    near = codex_key()
    near = replace(near, windows=[replace(near.windows[0],
                                          resets_at=Figure(now + HOUR, "official", now))])
    shell = RelayShell(engine, wallet=FakeWallet([work(), near]))
    try:
        shell.start()
        qtbot.waitUntil(lambda: bool(shell.tray.notifications), timeout=10_000)
        assert [(n.title, n.warning) for n in shell.tray.notifications] == [
            ("Account near its limit", True)]
        assert shell.tray.notifications[0].message.startswith("codex:ci: the 5-hour window")
        assert "codex:ci" in shell.window.statusBar().currentMessage()  # no tray offscreen
        shell.wallet_vm.refresh()  # the same reading again: no second warning
        qtbot.waitUntil(lambda: shell.bridge.tasks.pending == 0, timeout=10_000)
        assert len(shell.tray.notifications) == 1
    finally:
        arun(shell.aclose())


def test_test_log_in_and_edit_with_the_real_account_book(
        shell: RelayShell, qtbot: QtBot, tmp_path: Path, fakes_on_path: Path,
        vault_env: None, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)  # no terminal can open: the command shows
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    folder = tmp_path / "claude-home"
    folder.mkdir()
    (folder / ".relay-fake-scenario").write_text("a_text_stream_json")  # the fake CLI answers
    dock = shell.wallet_dock
    shell.start()
    dialog = dock.open_account_dialog()
    dialog.label.setText("work")
    dialog.folder.setText(str(folder))
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: "claude:work" in dock.cards, timeout=10_000)
    w = dock.cards["claude:work"]

    w.test_button.click()
    qtbot.waitUntil(lambda: "answers" in w.note.text(), timeout=30_000)
    assert w.note.text().startswith("claude:work answers (claude-opus-4-8) in ")

    w.login_button.click()
    qtbot.waitUntil(lambda: w.command.isVisibleTo(dock), timeout=10_000)
    assert w.command.text() == (f"CLAUDE_CONFIG_DIR={folder} {fakes_on_path / 'claude'} "
                                "auth login")
    assert w.note.text().endswith("Then press Test.")

    key = "sk-ant-api03-" + "wa11et" * 12
    w.edit_action.trigger()
    edit = dock.dialog
    assert edit is not None
    edit.label.setText("job")
    edit.auth.setCurrentIndex(edit.auth.findData("api_key"))
    edit.key.setText(key)
    edit.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: "claude:job" in dock.cards and shell.bridge.tasks.pending == 0,
                    timeout=10_000)
    job = dock.cards["claude:job"]
    assert job.subtitle.text() == "claude · API key"
    assert not job.login_button.isEnabled()
    assert "claude:work" not in dock.cards
    assert dock.error.isHidden()
    assert key not in caplog.text
