"""What the Wallet dock needs from the host, as one small interface.

:class:`WalletBackend` is the seam between the wallet's view-model and the
Qt-free core: the host's :class:`~relay.wallet.service.Wallet` (usage,
windows, costs, the transcript index), its :class:`~relay.core.accounts.AccountBook`
(add, edit, remove, preferred, paused) and the account check / login command.
:class:`HostWalletBackend` is the real one — over the engine this window hosts or the
host's API alike (:mod:`relay.gui.host_calls`); tests pass an in-memory fake.
No Qt here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from relay.core.accounts import UNCHANGED, Account, split_entry
from relay.core.errors import AccountError
from relay.engine.account_check import AccountCheck, LoginCommand, NoLogin, login_command
from relay.gui.host_calls import OverHost, Services
from relay.wallet.model import AccountHistory, AccountView
from relay.wallet.usage_refresh import RefreshReport

T = TypeVar("T")
#: ``progress(done, total)``, called from the index's worker thread
Progress = Callable[[int, int], None]


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


class WalletBackend(Protocol):
    """The wallet and the accounts as the GUI calls them (every call off the GUI's way)."""

    async def watermark(self) -> float:
        """0–1: a window at or past it is handed off before the wall (and the tray warns)."""
        ...

    async def summary(self) -> list[AccountView]:
        """Every account with its windows, burn, costs and budgets — registered accounts and
        the entries seen in use (a provider's default login, the demo's accounts)."""
        ...

    async def registered(self) -> set[str]:
        """The entries of the accounts in the account book (those the actions apply to)."""
        ...

    async def history(self, entry: str) -> AccountHistory:
        """One account's series for the plots (windows' course, burn, cost per day)."""
        ...

    async def refresh_index(self, progress: Progress | None) -> RefreshReport:
        """Read the transcripts appended since the last refresh (in a worker thread)."""
        ...

    async def save(self, form: AccountForm) -> None:
        """Add the account, or apply the edit of ``form.original``."""
        ...

    async def remove(self, entry: str) -> None: ...

    async def set_preferred(self, entry: str) -> None: ...

    async def set_paused(self, entry: str, paused: bool) -> None: ...

    async def check(self, entry: str) -> AccountCheck:
        """Whether the account answers (a real, tiny request), and what it said."""
        ...

    async def login_command(self, entry: str) -> LoginCommand | NoLogin:
        """The CLI's login flow for the account, or why it has none."""
        ...


class HostWalletBackend(OverHost):
    """The real :class:`WalletBackend`: the host's wallet, account book and account check."""

    def rebind(self, services: Services) -> None:
        super().rebind(services)
        # The wallet opens its transcript index at its first use, and two first uses at
        # once (the start-up scan and the first summary) would both create it: the first
        # call runs alone, the rest run as they come.
        self._first = asyncio.Lock()
        self._opened = False

    async def watermark(self) -> float:
        return await self._host.watermark()

    async def summary(self) -> list[AccountView]:
        return await self._once_opened(self._services.wallet.summary)

    async def registered(self) -> set[str]:
        return {account.entry for account in await self._services.accounts.all()}

    async def history(self, entry: str) -> AccountHistory:
        return await self._once_opened(lambda: self._services.wallet.history(entry))

    async def refresh_index(self, progress: Progress | None) -> RefreshReport:
        return await self._once_opened(lambda: self._services.wallet.refresh_index(progress))

    async def _once_opened(self, call: Callable[[], Awaitable[T]]) -> T:
        if self._opened:
            return await call()
        async with self._first:
            result = await call()
            self._opened = True
            return result

    async def save(self, form: AccountForm) -> None:
        book = self._services.accounts
        if form.original is None:
            await book.add(form.provider, form.label, form.config_dir,
                           auth_kind=form.auth_kind, api_key=form.api_key)
            return
        provider, label = _split(form.original)
        await book.edit(provider, label, config_dir=form.config_dir, auth_kind=form.auth_kind,
                        api_key=form.api_key,
                        new_label=form.label if form.label != label else UNCHANGED)

    async def remove(self, entry: str) -> None:
        await self._services.accounts.remove(*_split(entry))

    async def set_preferred(self, entry: str) -> None:
        await self._services.accounts.set_preferred(*_split(entry))

    async def set_paused(self, entry: str, paused: bool) -> None:
        await self._services.accounts.set_paused(*_split(entry), paused)

    async def check(self, entry: str) -> AccountCheck:
        account = await self._account(entry)
        return await self._host.check_account(account)

    async def login_command(self, entry: str) -> LoginCommand | NoLogin:
        return login_command(await self._account(entry))

    async def _account(self, entry: str) -> Account:
        provider, label = _split(entry)
        account = await self._services.accounts.get(provider, label)
        if account is None:
            raise AccountError(f"No account {entry}.", "It may have been removed meanwhile.")
        return account


def _split(entry: str) -> tuple[str, str]:
    """``provider:label`` of a registered account (the views act on registered ones only)."""
    provider, label = split_entry(entry)
    if label is None:
        raise AccountError(f"{entry} is not a registered account.",
                           "Register it first (Add account…).")
    return provider, label
