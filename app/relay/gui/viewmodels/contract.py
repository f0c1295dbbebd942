"""ContractViewModel: the continuation contract of one handoff and its signature status.

:meth:`show` reads and verifies a contract folder off the GUI thread (one
tracked task; a result for a folder no longer shown is dropped);
:meth:`reload` checks the same folder again (e.g. after it was edited).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from relay.core.vault import PassphraseProvider
from relay.gui.bridge import EngineBridge
from relay.gui.contract_check import ContractCheck, check_contract

NO_CONTRACT = "No contract yet: it is written when the handoff reaches Contract."


class ContractViewModel(QObject):
    """The shown contract. ``changed()`` follows every change of what it holds."""

    changed = Signal()

    def __init__(self, bridge: EngineBridge,
                 passphrase_provider: PassphraseProvider | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._provider = passphrase_provider
        self._folder: str | None = None
        self._check: ContractCheck | None = None
        self._loading = False

    @property
    def folder(self) -> str | None:
        return self._folder

    @property
    def loading(self) -> bool:
        return self._loading

    @property
    def status(self) -> str:
        """``none``, ``loading``, or the check's status (verified, tampered, unchecked…)."""
        if self._folder is None:
            return "none"
        return "loading" if self._check is None else self._check.status

    @property
    def message(self) -> str:
        if self._folder is None:
            return NO_CONTRACT
        return "checking the signature…" if self._check is None else self._check.message

    @property
    def hint(self) -> str:
        return self._check.hint if self._check else ""

    @property
    def markdown(self) -> str:
        return self._check.markdown if self._check else ""

    def show(self, folder: str | None) -> None:
        """Show the contract in ``folder`` (``None``: none yet); a folder already shown stays."""
        if folder == self._folder:
            return
        self._folder, self._check = folder, None
        if folder is not None:
            self._load(folder)
        self.changed.emit()

    def reload(self) -> None:
        """Read and verify the shown folder again."""
        if self._folder is not None:
            self._check = None
            self._load(self._folder)
            self.changed.emit()

    def _load(self, folder: str) -> None:
        config = self._bridge.config
        if config is None:  # a bridge built without a data folder (tests): nothing to read
            return
        self._loading = True
        self._bridge.tasks.start(
            asyncio.to_thread(check_contract, Path(folder), config, self._provider),
            context="handoff", on_done=self._checked)

    def _checked(self, check: ContractCheck) -> None:
        if check.folder != self._folder:
            return  # another handoff was selected meanwhile
        self._loading = False
        self._check = check
        self.changed.emit()
