"""The account dialog: the form it builds, what it refuses, and how it treats a key."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QDialogButtonBox, QLineEdit
from pytestqt.qtbot import QtBot

from relay.gui.account_dialog import KEEP_KEY_PLACEHOLDER, NEW_KEY_PLACEHOLDER, AccountDialog
from relay.gui.wallet_backend import AccountForm
from tests.gui.wallet_fakes import codex_key, work

KEY = "sk-ant-api03-VERY-SECRET-TEST-KEY"


def ok(dialog: AccountDialog) -> None:
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()


def submitted(dialog: AccountDialog) -> list[AccountForm]:
    forms: list[AccountForm] = []
    dialog.formAccepted.connect(forms.append)
    return forms


def test_adding_a_cli_login_account(qtbot: QtBot, tmp_path: Path) -> None:
    dialog = AccountDialog()
    qtbot.addWidget(dialog)
    forms = submitted(dialog)
    dialog.open()
    assert dialog.windowTitle() == "Add account"
    assert dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).text() == "Add"
    assert dialog.provider.currentData() == "claude"
    assert "CLAUDE_CONFIG_DIR" in dialog.folder_help.text()
    assert not dialog.key.isEnabled()  # a CLI login needs no key
    QTest.keyClicks(dialog.label, " work ")
    dialog.folder.setText(str(tmp_path))
    ok(dialog)
    assert forms == [AccountForm("claude", "work", tmp_path, "cli_login", None, None)]
    assert not dialog.isVisible()


def test_an_api_key_is_a_password_never_shown_and_never_in_a_repr(
        qtbot: QtBot, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    dialog = AccountDialog()
    qtbot.addWidget(dialog)
    forms = submitted(dialog)
    dialog.open()
    dialog.provider.setCurrentIndex(dialog.provider.findData("codex"))
    dialog.auth.setCurrentIndex(dialog.auth.findData("api_key"))
    assert dialog.key.isEnabled()
    assert dialog.key.echoMode() == QLineEdit.EchoMode.Password
    assert dialog.key.placeholderText() == NEW_KEY_PLACEHOLDER
    QTest.keyClicks(dialog.label, "ci")
    ok(dialog)  # an API-key account needs its key
    assert forms == []
    assert dialog.error.text() == "Paste the account's API key (or choose CLI login)."

    QTest.keyClicks(dialog.key, KEY)
    ok(dialog)
    assert len(forms) == 1
    assert forms[0].api_key == KEY
    assert KEY not in repr(forms[0])
    assert dialog.key.text() == ""  # not kept in the widget once the dialog closed
    assert KEY not in caplog.text


def test_editing_keeps_the_stored_key_when_the_field_is_empty(qtbot: QtBot) -> None:
    dialog = AccountDialog(account=codex_key())
    qtbot.addWidget(dialog)
    forms = submitted(dialog)
    dialog.open()
    assert dialog.windowTitle() == "Edit account codex:ci"
    assert dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).text() == "Save"
    assert not dialog.provider.isEnabled()
    assert dialog.auth.currentData() == "api_key"
    assert dialog.key.text() == ""  # the stored key is never shown back
    assert dialog.key.placeholderText() == KEEP_KEY_PLACEHOLDER
    dialog.label.setText("ci2")
    ok(dialog)
    assert forms == [AccountForm("codex", "ci2", None, "api_key", None, "codex:ci")]


def test_switching_a_login_account_to_a_key_needs_the_key(qtbot: QtBot, tmp_path: Path) -> None:
    account = work()
    dialog = AccountDialog(account=account)
    qtbot.addWidget(dialog)
    forms = submitted(dialog)
    dialog.open()
    assert dialog.folder.text() == account.config_dir
    dialog.folder.setText(str(tmp_path))
    dialog.auth.setCurrentIndex(dialog.auth.findData("api_key"))
    assert dialog.key.placeholderText() == NEW_KEY_PLACEHOLDER
    ok(dialog)
    assert forms == []
    QTest.keyClicks(dialog.key, KEY)
    dialog.auth.setCurrentIndex(dialog.auth.findData("cli_login"))
    assert dialog.key.text() == ""  # back to a login: the typed key is dropped
    ok(dialog)
    assert forms == [AccountForm("claude", "work", tmp_path, "cli_login", None, "claude:work")]


@pytest.mark.parametrize(("label", "folder", "message"), [
    ("", "", "Name the account, e.g. work or personal."),
    ("a:b", "", "'a:b': use a short name without colons or spaces."),
    ("my work", "", "'my work': use a short name without colons or spaces."),
    ("work", "/no/such/folder", "/no/such/folder is not a folder."),
])
def test_bad_input_is_shown_in_the_dialog(qtbot: QtBot, label: str, folder: str,
                                          message: str) -> None:
    dialog = AccountDialog()
    qtbot.addWidget(dialog)
    forms = submitted(dialog)
    dialog.open()
    dialog.label.setText(label)
    dialog.folder.setText(folder)
    ok(dialog)
    assert forms == []
    assert dialog.isVisible()
    assert dialog.error.text().startswith(message)
    assert dialog.error.isVisibleTo(dialog)


def test_pi_signs_in_with_its_own_login(qtbot: QtBot) -> None:
    dialog = AccountDialog(provider="pi")
    qtbot.addWidget(dialog)
    assert dialog.provider.currentData() == "pi"
    assert "PI_CODING_AGENT_DIR" in dialog.folder_help.text()
    assert dialog.auth.currentData() == "cli_login"
    assert not dialog.auth.isEnabled()
    dialog.provider.setCurrentIndex(dialog.provider.findData("gemini"))
    assert dialog.auth.isEnabled()
