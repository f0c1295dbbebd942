"""Read a handoff's continuation contract and say whether its signature holds (no Qt).

Blocking (the vault's keyring or scrypt, file reads): the contract view-model
runs :func:`check_contract` through ``asyncio.to_thread``. Verification itself
is the core's (:func:`relay.sessions.contract.read_envelope`); this only
decides what the window shows: the verified contract rendered, or — when it
cannot be verified — the unverified ``envelope.md`` under a warning. A simulation's
contract (the demo's) is checked with the throwaway demo key beside it, never the
vault's — no passphrase is asked for — and shown as ``simulated``: it matches its key,
which proves nothing (:mod:`relay.sessions.demo_key`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from relay.core.config import Config
from relay.core.errors import ContractError, ContractTamperedError, VaultError
from relay.core.vault import PassphraseProvider, Vault
from relay.sessions.contract import (
    ENVELOPE_JSON,
    ENVELOPE_MD,
    claims_simulation,
    read_envelope,
    render_markdown,
)
from relay.sessions.demo_key import DEMO_SIGNED, demo_key

Status = Literal["verified", "simulated", "tampered", "unchecked", "unreadable"]

_UNVERIFIED = ("> **Unverified text** — this is `envelope.md` as it lies on disk; "
               "its signature was not confirmed, so do not rely on it.\n\n")


@dataclass(frozen=True, slots=True)
class ContractCheck:
    """What the contract view shows for one contract folder."""

    folder: str
    status: Status
    #: the status line ("signature verified", "TAMPERED: …", "cannot check: vault locked …")
    message: str
    #: the contract as markdown (verified, or the unverified envelope.md)
    markdown: str
    hint: str = ""


def check_contract(folder: Path, config: Config,
                   passphrase_provider: PassphraseProvider | None = None) -> ContractCheck:
    """Verify ``folder/envelope.json`` with the data folder's signing key (a simulation's:
    with its demo key)."""
    simulated = _claims_simulation(folder)
    try:
        key = (demo_key(folder, create=False) if simulated
               else Vault.open(config, passphrase_provider).signing_key(create=False))
    except VaultError as exc:
        return _unverified(folder, "unchecked", f"cannot check: vault locked — {exc.message}",
                           exc.hint)
    except ContractError as exc:
        return _unverified(folder, "unreadable", f"cannot read the contract: {exc.message}",
                           exc.hint)
    try:
        contract = read_envelope(folder, key)
    except ContractTamperedError as exc:
        return _unverified(folder, "tampered", f"TAMPERED: {exc.message}", exc.hint)
    except ContractError as exc:
        return _unverified(folder, "unreadable", f"cannot read the contract: {exc.message}",
                           exc.hint)
    if simulated:
        return ContractCheck(str(folder), "simulated", f"{DEMO_SIGNED}: it matches that key, "
                             "which proves nothing", render_markdown(contract))
    return ContractCheck(str(folder), "verified", "signature verified", render_markdown(contract))


def _claims_simulation(folder: Path) -> bool:
    try:
        return claims_simulation((folder / ENVELOPE_JSON).read_bytes())
    except OSError:
        return False  # read_envelope says why


def _unverified(folder: Path, status: Status, message: str, hint: str | None) -> ContractCheck:
    try:
        text = (folder / ENVELOPE_MD).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        text = f"*(no readable {ENVELOPE_MD}: {exc.strerror})*"
    return ContractCheck(str(folder), status, message, _UNVERIFIED + text, hint or "")
