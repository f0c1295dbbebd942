"""Will a session need the vault — and so, without an OS keyring, its passphrase?

Front ends ask this *before* work starts, so a passphrase that a real run needs is asked
for up front and never in the middle of a live stream (relay-cli's ``Passphrase.unlock``,
the window's ``PassphrasePrompter.ensure``). A real run needs the vault when it can hand
off between accounts (each continuation contract is signed with the vault's key) or when
one of its accounts signs in with an API key (the key lives in the vault). A simulation
needs none of it: its contracts are signed with a throwaway demo key
(:mod:`relay.sessions.demo_key`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from relay.core.accounts import AccountBook
from relay.core.models import chain_of, simulated_entry
from relay.core.store.db import Store


async def vault_need(entries: Sequence[str], accounts: AccountBook, *,
                     can_hand_off: bool) -> str | None:
    """Why a run over these chain entries will use the vault, or None when it never will.

    Args:
        entries: The chain entries (``runtime[:account]``) the run may use.
        accounts: Where the entries' accounts are registered (the vault is not asked).
        can_hand_off: Whether the run can hand off (a chain of more than one entry, or a
            "hand off now" target).
    """
    simulated = any(simulated_entry(e) for e in entries)  # its handoffs: a demo key
    if can_hand_off and not simulated:
        return ("This run can hand off between accounts, and each handoff's contract is "
                "signed with the key in Relay's vault")
    for entry in entries:
        if not simulated_entry(entry) and await accounts.auth_kind_of(entry) == "api_key":
            return f"{entry} signs in with the API key kept in Relay's vault"
    return None


async def recover_needs(db_path: Path) -> str | None:
    """Why carrying on what a stopped Relay left will need the vault: a real session's
    unfinished handoff (its contract is signed), or a real session waiting for a reset
    that may still hand off."""
    store = await Store.open(db_path)
    try:
        sessions = await store.sessions.to_carry_on()
    finally:
        await store.close()
    for session_id, state, spec in sessions:
        if state != "waiting":
            return (f"Carrying on session {session_id}'s unfinished handoff signs its contract "
                    "with the key in Relay's vault")
        if len(chain_of(spec)) > 1:
            return (f"Session {session_id}, waiting for a reset, can still hand off, and each "
                    "handoff's contract is signed with the key in Relay's vault")
    return None
