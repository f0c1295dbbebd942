"""``relay-cli contract verify|show PATH``: check and read a continuation contract.

The key is the signing key in the vault of the data folder (RELAY_HOME / --home); where the
vault is the encrypted file (no OS keyring) its passphrase is asked for first — on a
terminal, after one line saying why — or taken from RELAY_VAULT_PASSPHRASE; without either
the command says what it needs and stops. A simulation's contract (``relay-cli demo``) was
signed with a throwaway demo key, not the vault's: it is never called verified, and the
command says so without asking for anything. Exit codes: 0 the signature is valid; 1 the
contract was tampered with (or signed by another data folder's key); 2 anything else Relay
can explain (no such file, a demo contract, the vault locked, no answer at the prompt).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from relay.cli import terminal
from relay.cli.prompt import Passphrase
from relay.core.config import Config
from relay.core.errors import ContractError, ContractTamperedError
from relay.sessions.contract import (
    ENVELOPE_JSON,
    ENVELOPE_MD,
    Contract,
    ContractV2,
    claims_simulation,
    render_markdown,
    verify,
)
from relay.sessions.demo_key import DEMO_SIGNED


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``contract verify`` and ``contract show`` to relay-cli's subcommands."""
    contract = sub.add_parser("contract", help="verify or show a continuation contract")
    actions = contract.add_subparsers(dest="contract_action", required=True, metavar="ACTION")
    for name, text in (("verify", "check envelope.json's signature and summarise it"),
                       ("show", "print the verified contract as the next agent reads it")):
        action = actions.add_parser(name, help=text)
        action.add_argument("path", type=Path, help=f"{ENVELOPE_JSON} or the folder holding it")


def run(args: argparse.Namespace, config: Config, console: Console) -> int:
    from relay.core.vault import Vault  # keyring + cryptography: ~0.1 s, only when needed

    data = _read(args.path)
    if claims_simulation(data):
        raise ContractError(
            f"This contract was {DEMO_SIGNED} (relay-cli demo), not with a vault key, so it "
            "cannot be verified.",
            f"Read it in the {ENVELOPE_MD} beside it. Real handoffs are signed with the vault "
            "key of the data folder that ran them, and verify here.")
    passphrase = Passphrase()
    passphrase.unlock(config, "Verifying a contract needs the signing key of this data "
                              f"folder ({config.home})", create=False)
    key = Vault.open(config, passphrase).signing_key(create=False)
    try:
        contract = verify(data, key)
    except ContractTamperedError as exc:
        errors = terminal.console(stderr=True, soft_wrap=True)
        errors.print("[bold red]TAMPERED:[/] ", end="")
        errors.print(exc.message, markup=False)
        if exc.hint:
            errors.print(f"  → {exc.hint}", markup=False)
        return 1
    if args.contract_action == "show":
        console.out(render_markdown(contract), highlight=False, end="")
    else:
        _summary(contract, console)
    return 0


def _read(path: Path) -> bytes:
    target = path / ENVELOPE_JSON if path.is_dir() else path
    try:
        return target.read_bytes()
    except FileNotFoundError as exc:
        raise ContractError(f"No contract at {target}.",
                            f"Give the path of an {ENVELOPE_JSON} or of the folder holding it.") from exc
    except OSError as exc:
        raise ContractError(f"Cannot read {target}: {exc.strerror}.") from exc


def _summary(c: Contract, console: Console) -> None:
    console.print(f"[bold green]OK[/] signature valid · contract {c.contract_id} (v{c.version})",
                  highlight=False)
    rows = [("session", c.session_id), ("task", c.task_id or "—"),
            ("snapshot", c.snapshot_commit_sha), ("goal", c.task_goal), ("next", c.next_action)]
    counts = [f"{len(c.file_manifest)} files", f"{len(c.acceptance_assertions)} acceptance checks",
              f"{len(c.do_not_redo)} do-not-redo"]
    if isinstance(c, ContractV2):
        counts.append(f"{len(c.tasks_remaining)} tasks remaining")
    for label, value in rows:
        lines = value.strip().splitlines() or ["—"]
        shown = lines[0] + (" …" if len(lines) > 1 else "")
        console.print(f"  {label:<9}{shown}", markup=False, highlight=False)
    console.print("  " + " · ".join(counts), markup=False, highlight=False)

