"""``/api/v1/vault``: whether the host can open the vault, and giving it the passphrase
(:mod:`relay.api.vault`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from fastapi import APIRouter

from relay.api.context import EngineDep
from relay.api.schemas import ERRORS, Done, UnlockBody, VaultState
from relay.api.vault import HostPassphrase, unlocked
from relay.core.errors import VaultError

if TYPE_CHECKING:
    from relay.engine.engine import Engine

router = APIRouter(prefix="/api/v1/vault", tags=["vault"], responses=ERRORS)


def _state(eng: Engine) -> VaultState:
    from relay.core.vault import VAULT_FILE, Vault

    backend = Vault.open(eng.config, eng.passphrase_provider).backend
    return VaultState(backend=backend, exists=(eng.config.home / VAULT_FILE).exists(),
                      unlocked=unlocked(eng))


@router.get("", response_model=VaultState)
async def state(eng: EngineDep) -> VaultState:
    """Which vault the host uses and whether it can open it now (never a secret)."""
    return await asyncio.to_thread(_state, eng)


@router.post("/unlock", response_model=Done)
async def unlock(body: UnlockBody, eng: EngineDep) -> Done:
    """Give the host the vault file's passphrase (checked against the file — a new vault is
    created with it — and kept in the host's memory only; never echoed or logged)."""
    provider = eng.passphrase_provider
    if not isinstance(provider, HostPassphrase):
        raise VaultError("This host does not take the vault passphrase over the API (the "
                         "window asks for it itself).",
                         "Answer it where the host runs, or start it with "
                         "RELAY_VAULT_PASSPHRASE set.")
    await asyncio.to_thread(provider.give, eng.config, body.passphrase.get_secret_value())
    return Done(message="The vault is unlocked.")
