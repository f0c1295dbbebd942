"""The Wallet dock over an in-memory wallet: cards, bars, labels, actions, scan, errors."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QDialogButtonBox, QMessageBox
from pytestqt.qtbot import QtBot

from relay.core.engine import Engine
from relay.gui.account_dialog import AccountDialog
from relay.gui.bridge import EngineBridge
from relay.gui.docks.wallet_dock import EMPTY_TEXT, AccountCard, WalletDock
from relay.gui.login_launch import LoginLaunch
from relay.gui.viewmodels.wallet import WalletViewModel
from relay.gui.wallet_backend import CheckResult
from tests.gui.conftest import Runner
from tests.gui.wallet_fakes import (
    NOW,
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
                         launcher=lambda argv, env: LoginLaunch(None, "claude /login"))
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
    assert five.detail.text() == ("71% projected at reset · resets in 3h 12m · "
                                  "official · 2 min ago · high confidence")
    assert (five.bar.used, five.bar.projected, five.bar.level) == (0.42, 0.71, "ok")
    assert seven.detail.text() == ("30% projected at reset · resets in 4d · "
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
    assert near.detail.text().endswith("high confidence · runs out in 20m")
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
    qtbot.waitUntil(lambda: w.note.text().startswith("Test passed"), timeout=5000)
    assert w.test_button.isEnabled()
    wallet.check_result = CheckResult(False, "not logged in")
    w.test_button.click()
    qtbot.waitUntil(lambda: w.note.text() == "Test failed — not logged in", timeout=5000)

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
    assert w.note.text().startswith("No terminal emulator was found.")
    assert w.command.text() == "claude /login"
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


def test_add_and_edit_through_the_dialog(dock: WalletDock, wallet: FakeWallet, qtbot: QtBot,
                                         tmp_path: object) -> None:
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
    qtbot.waitUntil(lambda: card(dock, "claude:work").note.text().startswith("Test passed"),
                    timeout=5000)
    assert dock.vm.scan.running
    gate.set()
    qtbot.waitUntil(lambda: not dock.progress.isVisibleTo(dock) and idle(dock), timeout=5000)
    assert dock.rescan_button.isEnabled()
    assert dock.scan_label.text() == "8 files read, 2 lines skipped"


def test_an_unregistered_login_can_be_registered(dock: WalletDock, wallet: FakeWallet,
                                                 qtbot: QtBot) -> None:
    wallet.accounts.append(default_codex())
    dock.vm.refresh()
    qtbot.waitUntil(lambda: "codex" in dock.cards, timeout=5000)
    c = card(dock, "codex")
    assert (c.title.text(), c.subtitle.text()) == ("codex", "not registered · the CLI's default "
                                                            "login")
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
