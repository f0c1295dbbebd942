"""The host's vault passphrase: which sessions need it, and how a client gives it.

Where there is no OS keyring the vault is an encrypted file and needs its passphrase. A
front end that runs its own engine asks for it before work starts (relay-cli's
``Passphrase``, the window's prompter). A host started without a way to ask — ``relay-cli
serve``, a ``relay-cli run`` hosting for its lifetime — holds a :class:`HostPassphrase`
instead: empty until a client sends the passphrase (``POST /api/v1/vault/unlock``), checked
against the vault file there, then kept in the host's memory only (never stored, logged or
answered). Starting or continuing a session that will need the vault while it is locked is
refused *before anything runs* with :class:`VaultLockedError` saying why — the client then
asks its user and unlocks — so nothing prompts in the middle of a live stream and a
session never fails half-way for want of the passphrase.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from relay.core.errors import VaultError, VaultLockedError

if TYPE_CHECKING:
    from relay.core.accounts import AccountBook
    from relay.core.config import Config
    from relay.core.models import SessionSpec
    from relay.engine.engine import Engine


class HostPassphrase:
    """A :data:`~relay.core.vault.PassphraseProvider` a client fills over the API."""

    def __init__(self) -> None:
        self._value: str | None = None

    def __repr__(self) -> str:
        return f"HostPassphrase(known={self._value is not None})"  # never the value

    def __call__(self, creating: bool) -> str | None:
        return self._value

    @property
    def known(self) -> bool:
        return self._value is not None

    def give(self, config: Config, passphrase: str) -> None:
        """Check ``passphrase`` against the vault file (a new vault: create it with it) and
        keep it. Raises VaultError (``Wrong passphrase…``) when it does not open the file."""
        from relay.core.vault import VAULT_FILE, GivenPassphrase, Vault

        if not passphrase:
            raise VaultError("The passphrase cannot be empty.")
        vault = Vault.open(config, GivenPassphrase(passphrase), env={})
        if vault.backend != "file":
            return  # the OS keyring holds the secrets: nothing to unlock
        if (config.home / VAULT_FILE).exists():
            vault.unlock()
        else:
            vault.signing_key()  # makes the vault file with this passphrase
        self._value = passphrase


def unlocked(engine: Engine) -> bool:
    """The host's engine can open the vault without asking anyone: the OS keyring,
    ``RELAY_VAULT_PASSPHRASE`` in the host's environment, a passphrase a client gave, or a
    provider of the host's own that asks its user (the window's)."""
    from relay.core.vault import PASSPHRASE_ENV, Vault

    provider = engine.passphrase_provider
    if os.environ.get(PASSPHRASE_ENV):
        return True
    if provider is not None and not isinstance(provider, HostPassphrase):
        return True  # the host asks its own user (the window's prompter)
    if provider is not None and provider.known:
        return True
    return Vault.open(engine.config, provider).backend == "keyring"


async def chain_need(entries: Sequence[str], accounts: AccountBook, *,
                     can_hand_off: bool) -> str | None:
    """Why a run over these chain entries uses the vault (None: it never does)."""
    from relay.sessions.vault_need import vault_need

    return await vault_need(entries, accounts, can_hand_off=can_hand_off)


async def spec_need(engine: Engine, spec: SessionSpec) -> str | None:
    """Why a new session over ``spec`` needs the vault (None: it does not)."""
    from relay.core.models import chain_of

    chain = chain_of(spec)
    return await chain_need(chain, engine.accounts, can_hand_off=len(chain) > 1)


async def stored_need(engine: Engine, session_id: str, *, resumed: bool) -> str | None:
    """Why continuing a stored session needs the vault: ``resumed`` (``run --resume``) runs
    its last runtime alone; otherwise (a rewind's new session) its whole chain."""
    from relay.core.models import chain_of

    row = await engine.get_session(session_id)
    chain = chain_of(await engine.session_spec(row.id))
    if resumed:
        runs = await engine.runs(row.id)
        return await chain_need([runs[-1].runtime] if runs else chain[:1], engine.accounts,
                                can_hand_off=False)
    return await chain_need(chain, engine.accounts, can_hand_off=len(chain) > 1)


async def require_unlocked(engine: Engine, why: str | None) -> None:
    """Refuse (before anything runs) work that needs the vault while the host cannot open
    it; ``why`` is what needs it (None: nothing)."""
    import asyncio

    if why is None or await asyncio.to_thread(unlocked, engine):
        return
    raise VaultLockedError(f"{why}, and the host's vault is locked.",
                           "Give the host the vault passphrase: relay-cli asks for it on a "
                           "terminal (or reads RELAY_VAULT_PASSPHRASE); over the API, POST "
                           "/api/v1/vault/unlock.")
