"""AccountDialog: add an account, or edit one → an :class:`AccountForm`.

Provider, label, the CLI's configuration folder (a folder the user may already
have; Relay never rewrites it) and the auth kind: the CLI's own login in that
folder, or an API key. The key field is a password field; it is never filled
from the vault, never logged, and cleared as soon as the dialog closes. When
editing, an empty key field means "keep the stored key".

Opened with ``open()`` (never a nested ``exec()``); OK validates in place.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from relay.core.accounts import CONFIG_ENV, KEY_ENV, PROVIDERS
from relay.gui import theme
from relay.gui.messages import ErrorBanner
from relay.gui.wallet_backend import AccountForm
from relay.wallet.model import AccountView

AUTH_CHOICES = (
    ("cli_login", "CLI login — the CLI's own login in that folder"),
    ("api_key", "API key — kept in the OS keyring"),
)
NEW_KEY_PLACEHOLDER = "paste the key — kept in the OS keyring, never shown again"
KEEP_KEY_PLACEHOLDER = "leave empty to keep the stored key"


def check_label(label: str) -> str:
    """The label as stored; raises ValueError with a message for the user."""
    if not label:
        raise ValueError("Name the account, e.g. work or personal.")
    if ":" in label or any(c.isspace() for c in label):
        raise ValueError(f"{label!r}: use a short name without colons or spaces.")
    return label


class AccountDialog(QDialog):
    """The form of one account.

    Signals:
        formAccepted(AccountForm): the form was valid and the user pressed Add / Save.
    """

    formAccepted = Signal(AccountForm)

    def __init__(self, parent: QWidget | None = None, account: AccountView | None = None, *,
                 provider: str | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("accountDialog")
        self.account = account
        self.setWindowTitle(f"Edit account {account.entry}" if account else "Add account")
        self.setMinimumWidth(520)
        self.provider = QComboBox()
        self.provider.setObjectName("accountProvider")
        self.label = QLineEdit((account.label or "") if account else "")
        self.label.setObjectName("accountLabel")
        self.label.setPlaceholderText("e.g. work")
        self.folder = QLineEdit((account.config_dir or "") if account else "")
        self.folder.setObjectName("accountFolder")
        self.folder.setPlaceholderText("empty — the CLI's default folder (your own login)")
        self.browse = QPushButton("Browse…")
        self.browse.setObjectName("accountBrowse")
        self.folder_help = QLabel()
        self.folder_help.setObjectName("accountFolderHelp")
        self.folder_help.setWordWrap(True)
        theme.style(self.folder_help, "color: $MUTED;")
        self.auth = QComboBox()
        self.auth.setObjectName("accountAuth")
        for value, title in AUTH_CHOICES:
            self.auth.addItem(title, value)
        self.key = QLineEdit()
        self.key.setObjectName("accountKey")
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setAttribute(Qt.WidgetAttribute.WA_InputMethodEnabled, False)
        self.error = ErrorBanner("accountError")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText(
            "Save" if account else "Add")
        self._fill_choices(provider)
        self._layout()
        self.browse.clicked.connect(self._browse)
        self.provider.currentIndexChanged.connect(self._provider_changed)
        self.auth.currentIndexChanged.connect(self._auth_changed)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.finished.connect(lambda _result: self.key.clear())
        self._provider_changed()
        self._auth_changed()

    def _fill_choices(self, provider: str | None) -> None:
        providers = list(PROVIDERS)
        if self.account is not None and self.account.provider not in providers:
            providers.append(self.account.provider)
        for name in providers:
            self.provider.addItem(name, name)
        if provider in providers:
            self.provider.setCurrentIndex(self.provider.findData(provider))
        if self.account is not None:
            self.provider.setCurrentIndex(self.provider.findData(self.account.provider))
            self.provider.setEnabled(False)  # an account's provider is what it is
            self.auth.setCurrentIndex(max(self.auth.findData(self.account.auth_kind), 0))

    def _layout(self) -> None:
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.folder, 1)
        folder_row.addWidget(self.browse)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("Provider", self.provider)
        form.addRow("Label", self.label)
        form.addRow("Config folder", folder_row)
        form.addRow("", self.folder_help)
        form.addRow("Sign in with", self.auth)
        form.addRow("API key", self.key)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)

    # -- the result ---------------------------------------------------------------------

    def build_form(self) -> AccountForm:
        """The form as typed; raises ValueError with a message for the user."""
        label = check_label(self.label.text().strip())
        folder_text = self.folder.text().strip()
        folder = Path(folder_text).expanduser() if folder_text else None
        if folder is not None and not folder.is_dir():
            raise ValueError(f"{folder} is not a folder. Create it (and log the CLI in there) "
                             "or leave the field empty for the CLI's default folder.")
        auth_kind = str(self.auth.currentData())
        key = self.key.text().strip() or None
        if auth_kind != "api_key":
            key = None
        elif key is None and not self._has_stored_key():
            raise ValueError("Paste the account's API key (or choose CLI login).")
        return AccountForm(provider=str(self.provider.currentData()), label=label,
                           config_dir=folder, auth_kind=auth_kind, api_key=key,
                           original=self.account.entry if self.account else None)

    def _has_stored_key(self) -> bool:
        return self.account is not None and self.account.auth_kind == "api_key"

    def accept(self) -> None:
        try:
            form = self.build_form()
        except ValueError as exc:
            self.error.show_error(str(exc))
            return
        self.error.hide()
        super().accept()
        self.formAccepted.emit(form)

    # -- helpers ------------------------------------------------------------------------

    def _provider_changed(self) -> None:
        provider = str(self.provider.currentData())
        var = CONFIG_ENV.get(provider)
        runs = f"The CLI runs with {var} set to this folder. " if var else ""
        self.folder_help.setText(f"{runs}A folder you already use is fine: Relay never rewrites "
                                 "it.")
        takes_key = provider in KEY_ENV  # Pi reads the key of whichever model it runs
        if not takes_key:
            self.auth.setCurrentIndex(self.auth.findData("cli_login"))
        self.auth.setEnabled(takes_key)
        self.auth.setToolTip("" if takes_key else f"{provider} keeps its keys in its own login: "
                                                  "log in there and register the folder.")

    def _auth_changed(self) -> None:
        api_key = self.auth.currentData() == "api_key"
        self.key.setEnabled(api_key)
        if not api_key:
            self.key.clear()
        self.key.setPlaceholderText(
            (KEEP_KEY_PLACEHOLDER if self._has_stored_key() else NEW_KEY_PLACEHOLDER)
            if api_key else "not needed for a CLI login")

    def _browse(self) -> None:
        chooser = QFileDialog(self, "Choose the CLI's configuration folder", self.folder.text())
        chooser.setFileMode(QFileDialog.FileMode.Directory)
        chooser.setOption(QFileDialog.Option.ShowDirsOnly, True)
        chooser.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        chooser.fileSelected.connect(self.folder.setText)
        chooser.open()
