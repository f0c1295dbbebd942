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

from relay.core.accounts import AccountBook
from relay.core.models import simulated_entry


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
