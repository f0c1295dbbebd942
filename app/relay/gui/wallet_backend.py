"""What the Wallet dock needs from the engine, as one small interface.

:class:`WalletBackend` is the seam between the wallet's view-model and the
Qt-free core: the engine's :class:`~relay.wallet.service.Wallet` (usage,
windows, costs, the transcript index), its :class:`~relay.core.accounts.AccountBook`
(add, edit, remove, preferred, paused) and the account check / login command.
:class:`EngineWalletBackend` is the real one; tests pass an in-memory fake.
No Qt here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from relay.wallet.model import AccountView

#: ``progress(done, total)``, called from the index's worker thread
Progress = Callable[[int, int], None]
#: the argv and the extra environment of an account's login command
LoginCommand = tuple[list[str], dict[str, str]]


@dataclass(frozen=True, slots=True)
class AccountForm:
    """The account dialog's answer: a new account, or the edit of ``original``.

    ``api_key`` is None when no key was typed (on edit: keep the stored one); it is
    left out of ``repr`` so that a log line or a traceback never shows it.
    """

    provider: str
    label: str
    config_dir: Path | None
    auth_kind: str
    api_key: str | None = field(default=None, repr=False)
    #: the entry (``provider:label``) being edited; None when adding
    original: str | None = None


@dataclass(frozen=True, slots=True)
class CheckResult:
    """"Does this account answer?" — the engine's account check, for the view."""

    ok: bool
    summary: str


class WalletBackend(Protocol):
    """The wallet and the accounts as the GUI calls them (every call off the GUI's way)."""

    @property
    def watermark(self) -> float:
        """0–1: a window at or past it is handed off before the wall (and the tray warns)."""
        ...

    async def summary(self) -> list[AccountView]:
        """Every account with its windows, burn, costs and budgets."""
        ...

    async def refresh_index(self, progress: Progress | None) -> object:
        """Read the transcripts appended since the last refresh (in a worker thread)."""
        ...

    async def save(self, form: AccountForm) -> None:
        """Add the account, or apply the edit of ``form.original``."""
        ...

    async def remove(self, entry: str) -> None: ...

    async def set_preferred(self, entry: str) -> None: ...

    async def set_paused(self, entry: str, paused: bool) -> None: ...

    async def check(self, entry: str) -> CheckResult:
        """Whether the account answers, and what it said."""
        ...

    async def login_command(self, entry: str) -> LoginCommand | None:
        """The CLI's login command for the account (None: it has none)."""
        ...
