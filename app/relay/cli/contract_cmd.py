"""``relay-cli contract verify|show PATH``: check and read a continuation contract.

The key is the signing key in the vault of the data folder (RELAY_HOME / --home). Exit
codes: 0 the signature is valid; 1 the contract was tampered with (or signed by another
data folder's key); 2 anything else Relay can explain (no such file, vault locked).
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

from rich.console import Console

from relay.core.config import Config
from relay.core.errors import ContractError, ContractTamperedError, VaultError
from relay.sessions.contract import ENVELOPE_JSON, Contract, ContractV2, render_markdown, verify


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
    key = Vault.open(config, tty_passphrase).signing_key(create=False)
    try:
        contract = verify(data, key)
    except ContractTamperedError as exc:
        errors = Console(stderr=True, highlight=False, soft_wrap=True)
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


def tty_passphrase(creating: bool) -> str | None:
    """Ask for the vault file's passphrase on a terminal; None when there is none."""
    if not sys.stdin.isatty():
        return None
    passphrase = getpass.getpass("Relay vault passphrase: ")
    if creating and passphrase != getpass.getpass("Repeat the passphrase: "):
        raise VaultError("The two passphrases differ.", "Run the command again.")
    return passphrase or None


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

