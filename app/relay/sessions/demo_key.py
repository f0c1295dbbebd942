"""The throwaway key a simulation's continuation contracts are signed with.

A simulation (a session with a simulated chain entry: ``relay-cli demo``, ``relay --demo``)
must never need the user's secrets, so its handoffs are not signed with the vault's key:
each simulated handoff gets 32 fresh random bytes, written as hex beside its contract
(``<handoff folder>/demo-key``, mode 0600). The file is there so a Relay that recovers the
handoff after a crash can verify the envelope it already wrote, and so the window can show
the contract; it protects nothing — whoever can change the contract can change the key
beside it — and is not meant to. The contract itself says ``"simulated": true`` (see
:mod:`relay.sessions.contract`) and every view says it was :data:`DEMO_SIGNED`;
``relay-cli contract verify`` refuses to call such a contract verified.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from relay.core.errors import ContractError
from relay.core.fsutil import private_dir, write_atomic

DEMO_KEY_FILE = "demo-key"
#: the words every view uses for a contract signed with a demo key
DEMO_SIGNED = "signed with a throwaway demo key — a simulation"


def demo_key(folder: Path, *, create: bool = True) -> bytes:
    """The demo key of the handoff in ``folder``: made (and written) on first use when
    ``create``; otherwise a :class:`ContractError` when there is none."""
    path = folder / DEMO_KEY_FILE
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except FileNotFoundError:
        if not create:
            raise ContractError(f"No demo key beside the contract in {folder}.",
                                "A simulated handoff's contract is checked with the key "
                                "written next to it; this one is missing.") from None
        key = secrets.token_bytes(32)
        try:
            private_dir(folder)
            write_atomic(path, key.hex().encode("ascii"), 0o600)
        except OSError as exc:
            raise ContractError(f"Cannot write the demo key in {folder}: {exc.strerror}.",
                                "Check the data folder's permissions and free space.") from exc
        return key
    except (OSError, ValueError) as exc:
        raise ContractError(f"The demo key in {folder} is unreadable ({type(exc).__name__}).") from exc
    if len(key) != 32:
        raise ContractError(f"The demo key in {folder} is damaged.")
    return key
