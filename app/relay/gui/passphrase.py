"""The vault passphrase, asked in the window where there is no OS keyring.

The core asks for it through a :data:`~relay.core.vault.PassphraseProvider`
called from a worker thread (the vault runs under ``asyncio.to_thread``).
:class:`PassphrasePrompter.provider` marshals the question to the GUI thread
(``loop.call_soon_threadsafe``), where a non-modal password dialog opens; the
worker thread waits for the answer, the GUI thread never blocks. The answer is
checked against the vault file (a wrong passphrase asks again, saying so) and
then kept for the window's lifetime: the handoff coordinator opens a new
vault for every handoff, and asking each time would stall unattended handoffs.
Called on the GUI thread itself (where waiting would freeze the window) the
provider gives up (None: the vault reports that it needs a passphrase).

At start, :meth:`PassphrasePrompter.unlock_early` asks once up front when a
vault file exists, no keyring is usable and ``RELAY_VAULT_PASSPHRASE`` is unset (not for
``relay --demo``: a simulation never needs the user's secrets). Before the window starts
work that will need the vault — a real session that can hand off or uses an API-key
account, "Hand off now" on a real session (:mod:`relay.sessions.vault_need`) — the shell
calls :meth:`PassphrasePrompter.ensure`, which asks then (a new vault: twice) if nobody has
said the passphrase yet; declined, the work does not start. So the dialog opens before
work starts, never in the middle of a handoff.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
from collections.abc import Mapping

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QDialog, QInputDialog, QLabel, QLineEdit, QWidget

from relay.core.config import Config
from relay.core.errors import VaultError
from relay.core.vault import PASSPHRASE_ENV, VAULT_FILE, Vault

log = logging.getLogger(__name__)

ASK_TEXT = "Relay's vault (no OS keyring here) needs its passphrase to sign and verify handoffs:"
CREATE_TEXT = ("Choose a passphrase for Relay's new vault (no OS keyring here); it protects "
               "the key that signs handoff contracts:")
REPEAT_TEXT = "Repeat the new passphrase:"


class PassphrasePrompter(QObject):
    """A thread-safe passphrase provider backed by a password dialog.

    Signals:
        prompted(QInputDialog): a dialog was opened (tests answer it).
    """

    prompted = Signal(object)

    def __init__(self, config: Config, parent_widget: QWidget | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self._config = config
        self._env = os.environ if env is None else env
        self._loop = asyncio.get_running_loop()
        self._gui_thread = threading.get_ident()
        self._parent_widget = parent_widget
        self._lock = threading.Lock()  # one question at a time; later callers get the answer
        self._passphrase: str | None = None
        self._waiting: set[concurrent.futures.Future[str | None]] = set()
        self._dialogs: set[QInputDialog] = set()
        self._closed = False

    def set_parent_widget(self, widget: QWidget | None) -> None:
        self._parent_widget = widget

    # -- the provider (any thread) ---------------------------------------------------------

    def provider(self, creating: bool) -> str | None:
        """The passphrase, asked in the window the first time (blocks the calling thread)."""
        if threading.get_ident() == self._gui_thread:
            log.warning("the vault passphrase was asked for on the GUI thread; not prompting")
            return self._passphrase
        with self._lock:
            if self._passphrase is None:
                self._passphrase = self._ask_until_right(creating)
            return self._passphrase

    def _ask_until_right(self, creating: bool) -> str | None:
        problem = ""
        while not self._closed:
            passphrase = self._ask(CREATE_TEXT if creating else ASK_TEXT, problem)
            if passphrase is None:
                return None
            if creating:
                if self._ask(REPEAT_TEXT, "") == passphrase:
                    return passphrase
                problem = "The two passphrases differ."
                continue
            problem = self._check(passphrase)
            if not problem:
                return passphrase
        return None

    def _check(self, passphrase: str) -> str:
        """Why ``passphrase`` does not open the vault file ("" when it does)."""
        try:
            Vault.open(self._config, lambda _creating: passphrase, env={}).unlock()
        except VaultError as exc:
            return exc.message
        return ""

    def _ask(self, text: str, problem: str) -> str | None:
        future: concurrent.futures.Future[str | None] = concurrent.futures.Future()
        self._waiting.add(future)
        try:
            self._loop.call_soon_threadsafe(self._open_dialog, text, problem, future)
            return future.result()
        except RuntimeError:  # the loop is closed: nobody can answer
            return None
        finally:
            self._waiting.discard(future)

    # -- the dialog (GUI thread) -----------------------------------------------------------

    def _open_dialog(self, text: str, problem: str,
                     future: concurrent.futures.Future[str | None]) -> None:
        if self._closed or future.done():
            if not future.done():
                future.set_result(None)
            return
        dialog = QInputDialog(self._parent_widget)
        dialog.setObjectName("vaultPassphraseDialog")
        dialog.setWindowTitle("Relay vault passphrase")
        dialog.setInputMode(QInputDialog.InputMode.TextInput)
        dialog.setTextEchoMode(QLineEdit.EchoMode.Password)
        dialog.setLabelText(f"{problem}\n\n{text}" if problem else text)
        for label in dialog.findChildren(QLabel):
            label.setWordWrap(True)
        self._dialogs.add(dialog)

        def finished(result: int) -> None:
            self._dialogs.discard(dialog)
            accepted = result == QDialog.DialogCode.Accepted.value
            value = dialog.textValue() if accepted else ""
            dialog.deleteLater()
            if not future.done():
                future.set_result(value or None)

        dialog.finished.connect(finished)
        dialog.open()
        self.prompted.emit(dialog)

    # -- lifecycle ------------------------------------------------------------------------

    def needs_prompt(self) -> bool:
        """A vault file exists, no keyring is usable and the environment has no passphrase."""
        if self._env.get(PASSPHRASE_ENV) or not (self._config.home / VAULT_FILE).is_file():
            return False
        return Vault.open(self._config, None, env=self._env).backend == "file"

    def needs_answer(self) -> bool:
        """No keyring is usable, the environment has no passphrase and none was said yet
        (with or without a vault file)."""
        if self._passphrase is not None or self._env.get(PASSPHRASE_ENV):
            return False
        return Vault.open(self._config, None, env=self._env).backend == "file"

    async def ensure(self) -> bool:
        """Know the passphrase before work that needs the vault starts: ask now (a new vault:
        twice) unless it is known or not needed. Whether it is known (or not needed)."""
        if not await asyncio.to_thread(self.needs_answer):
            return True
        creating = not (self._config.home / VAULT_FILE).is_file()
        return await asyncio.to_thread(self.provider, creating) is not None

    async def unlock_early(self) -> bool:
        """Ask for the passphrase now if the vault will need it; whether one is known."""
        if not await asyncio.to_thread(self.needs_prompt):
            return False
        return await asyncio.to_thread(self.provider, False) is not None

    def close(self) -> None:
        """Give up every open question (the waiting threads get None) and close the dialogs."""
        self._closed = True
        for future in list(self._waiting):
            if not future.done():
                future.set_result(None)
        for dialog in list(self._dialogs):
            dialog.reject()
        self._passphrase = None
