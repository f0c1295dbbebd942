"""relay-cli accounts: the user's own accounts that chain entries name (provider:label).

``list [--json]``, ``add``, ``edit``, ``remove``, ``test``, ``login``, ``prefer``,
``pause`` and ``resume`` (which also clears the entry's circuit breaker: ``resume claude
work`` — or ``resume claude`` for a bare ``--provider claude`` — once a limit Relay is
waiting out is really over). Where the vault is the encrypted file (no OS keyring) and
the action touches an API key, the vault passphrase is asked for first, before anything
changes (:mod:`relay.cli.prompt`). An API key is read from stdin (``--api-key-stdin``) or asked
for without echo — never taken from the command line, where other users' ``ps`` and the
shell history would see it — and goes to the vault only; nothing here prints it.
``login`` runs the CLI's own login in the foreground with this terminal (an argument
list, never a shell). Exit codes: 0 done (``test``: the account answered), 1 ``test``
or ``login`` did not succeed, 2 a RelayError. Every action goes through the data folder's
host (:mod:`relay.cli.hosted`); ``login`` only reads the account there, and runs the CLI's
login here, in this terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from relay.cli.hints import cli
from relay.cli.prompt import Passphrase, ask
from relay.cli.tables import Column, FitTable
from relay.core.accounts import (
    AUTH_KINDS,
    CONFIG_ENV,
    KEY_ENV,
    PROVIDERS,
    UNCHANGED,
    Account,
    check_auth_kind,
)
from relay.core.config import Config
from relay.core.errors import AccountError
from relay.engine.account_check import COST_NOTE, LoginCommand, NoLogin, login_command

if TYPE_CHECKING:
    from relay.api.client import RelayClient
    from relay.api.client_features import AccountsClient

OWN_ACCOUNTS = ("Only your own accounts: Relay runs each CLI as you would, with the folder or "
                "key you give it — no pooling, no sharing of accounts between people.")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``accounts ACTION …`` to relay-cli's parser."""
    folders = ", ".join(f"{k}: {v}" for k, v in CONFIG_ENV.items())
    accounts = sub.add_parser(
        "accounts", help="your accounts that chain entries name (provider:label)",
        description=f"Accounts that chain entries (--provider claude:work) name. {OWN_ACCOUNTS}",
        epilog=f"Configuration folders are passed as {folders}. API keys go to the vault "
               f"({', '.join(f'{k}: {v}' for k, v in KEY_ENV.items())}).")
    actions = accounts.add_subparsers(dest="accounts_command", required=True, metavar="ACTION")

    listing = actions.add_parser("list", help="registered accounts (never their keys)")
    listing.add_argument("--json", action="store_true", help="print them as JSON")

    add = actions.add_parser("add", help="register one of your accounts",
                             description=f"Register an account. {OWN_ACCOUNTS}")
    add.add_argument("provider", choices=PROVIDERS)
    add.add_argument("label", help="e.g. work or personal")
    add.add_argument("--config-dir", type=Path, help=f"the CLI's configuration folder for this "
                     f"account (a folder you already use is fine; Relay never rewrites it); "
                     f"{folders}")
    _key_options(add)
    add.add_argument("--auth", choices=AUTH_KINDS, help="how it signs in (default: cli_login, "
                     "or api_key with --api-key-stdin)")

    edit = actions.add_parser("edit", help="change an account (what is not given stays)")
    _name(edit)
    folder = edit.add_mutually_exclusive_group()
    folder.add_argument("--config-dir", type=Path, help="a new configuration folder")
    folder.add_argument("--default-dir", action="store_true",
                        help="use the CLI's default folder")
    edit.add_argument("--auth", choices=AUTH_KINDS, help="a new sign-in kind (to cli_login: "
                      "the stored key is deleted)")
    _key_options(edit, new=True)
    edit.add_argument("--rename", metavar="LABEL", help="a new label")

    for action, text in (("remove", "forget an account and delete its key (its folder is "
                                    "left alone)"),
                         ("prefer", "use it for chain entries that name only the provider"),
                         ("pause", "sessions skip it until `resume`")):
        _name(actions.add_parser(action, help=text))
    _name(actions.add_parser("resume", help="sessions use it again; also clears its circuit "
                                            "breaker (an account Relay thinks is out until "
                                            "its reset)"), label_optional=True)
    test = actions.add_parser("test", help="does this account answer? (spends a few tokens)",
                              description=COST_NOTE)
    _name(test)
    test.add_argument("--json", action="store_true", help="print the result as JSON")
    login = actions.add_parser("login", help="run the CLI's own login for this account, here",
                               description="Runs the CLI's login flow in this terminal with the "
                                           f"account's folder. {OWN_ACCOUNTS}")
    _name(login)


def _name(parser: argparse.ArgumentParser, label_optional: bool = False) -> None:
    parser.add_argument("provider")
    if label_optional:
        parser.add_argument("label", nargs="?",
                            help="the account (leave it out for a bare provider entry)")
    else:
        parser.add_argument("label")


def _key_options(parser: argparse.ArgumentParser, new: bool = False) -> None:
    keys = parser.add_mutually_exclusive_group()
    keys.add_argument("--api-key-stdin", action="store_true",
                      help="read the API key from stdin (one line), e.g. from a password manager")
    if new:
        keys.add_argument("--new-key", action="store_true",
                          help="ask for a new API key (typed without echo)")


async def run(config: Config, args: argparse.Namespace, console: Console) -> int:
    """Run the accounts action ``args`` names; return the exit code."""
    from relay.cli.hosted import host_api

    passphrase = Passphrase()
    async with host_api(config, args, passphrase=passphrase) as attached:
        client = attached.client
        if args.accounts_command == "login":
            account = await client.accounts.get(args.provider, args.label)
        else:
            if attached.hosting and await asyncio.to_thread(passphrase.needed, config):
                why = await _vault_use(client.accounts, args)
                if why:  # asked before anything changes; Ctrl-C / Ctrl-D end it cleanly
                    passphrase.unlock(config, why)
            return await _act(client, args, console)
    return await _login(account, args, console)  # the host is let go of first: it may take minutes


async def _auth_kind(book: AccountsClient, provider: str, label: str) -> str | None:
    account = await book.get(provider, label)
    return account.auth_kind if account else None


async def _vault_use(book: AccountsClient, args: argparse.Namespace) -> str | None:
    """Why the action will open the vault (an API key is stored, read or deleted), or None."""
    action = args.accounts_command
    label = getattr(args, "label", None)
    entry = f"{args.provider}:{label}" if label else ""
    current = await _auth_kind(book, args.provider, label) if label else None
    if action == "add" and (args.auth == "api_key" or args.api_key_stdin):
        return f"Storing {entry}'s API key needs Relay's vault"
    if action == "edit" and ("api_key" in (current, args.auth) or args.api_key_stdin
                             or args.new_key):
        return f"Changing {entry} touches its API key in Relay's vault"
    if action == "remove" and current == "api_key":
        return f"Removing {entry} deletes its API key from Relay's vault"
    if action == "test" and current == "api_key":
        return f"Testing {entry} reads its API key from Relay's vault"
    return None


async def _act(client: RelayClient, args: argparse.Namespace, console: Console) -> int:
    book = client.accounts
    match args.accounts_command:
        case "list":
            _print_list(await book.all(), console, args.json)
        case "add":
            kind = check_auth_kind(args.provider,
                                   args.auth or ("api_key" if args.api_key_stdin else "cli_login"))
            key = _read_key(args.provider, args.api_key_stdin) if kind == "api_key" else None
            account = await book.add(args.provider, args.label, args.config_dir, kind, key)
            note = "; API key in the vault" if account.auth_kind == "api_key" else ""
            console.print(f"Account {escape(account.entry)}: {escape(_where(account))}{note}")
        case "edit":
            account = await _edit(book, args)
            console.print(f"{escape(account.entry)}: {escape(_where(account))}, "
                          f"{_signs_in(account)}.")
        case "remove":
            await book.remove(args.provider, args.label)
            console.print(f"Removed {escape(args.provider)}:{escape(args.label)} (its folder is "
                          "untouched; its key, if any, is deleted from the vault).")
        case "prefer":
            await book.set_preferred(args.provider, args.label)
            console.print(f"{escape(args.provider)}:{escape(args.label)} is now used for "
                          f"`--provider {escape(args.provider)}`.")
        case "pause":
            await book.set_paused(args.provider, args.label, True)
            console.print(f"{escape(args.provider)}:{escape(args.label)} paused: sessions "
                          "skip it.")
        case "resume":
            return await _resume(client, args, console)
        case "test":
            return await _test(book, args, console)
    return 0


async def _edit(book: AccountsClient, args: argparse.Namespace) -> Account:
    current = await book.get(args.provider, args.label)
    if current is None:
        raise AccountError(f"No account {args.provider}:{args.label}.",
                           "List them with `relay-cli accounts list`.")
    kind = check_auth_kind(args.provider, args.auth or current.auth_kind)
    key = (_read_key(args.provider, args.api_key_stdin)
           if args.api_key_stdin or args.new_key
           or (kind == "api_key" and current.auth_kind != "api_key") else None)
    return await book.edit(
        args.provider, args.label,
        config_dir=None if args.default_dir else args.config_dir or UNCHANGED,
        auth_kind=args.auth or UNCHANGED, api_key=key if key is not None else UNCHANGED,
        new_label=args.rename or UNCHANGED)


async def _resume(client: RelayClient, args: argparse.Namespace, console: Console) -> int:
    """Resume the account, and clear its entry's circuit breaker if one is open."""
    entry = f"{args.provider}:{args.label}" if args.label else args.provider
    registered = (args.label is not None
                  and await _auth_kind(client.accounts, args.provider, args.label) is not None)
    breaker = await client.breakers.get(entry)
    if not registered and breaker is None:
        raise AccountError(f"No account {entry}, and no circuit breaker open on it.",
                           f"List the accounts with `{cli('accounts list')}`; "
                           f"`{cli('wallet')}` shows which are out.")
    said = []
    if registered:
        await client.accounts.set_paused(args.provider, args.label, False)
        said.append(f"{entry} resumed.")
    if breaker is not None:
        await client.breakers.reset(entry)
        until = f" (out until {breaker.until:%Y-%m-%d %H:%M %Z})" if breaker.until else ""
        said.append(f"Its circuit breaker{until} is cleared: the next session tries it again."
                    if registered else f"{entry}'s circuit breaker{until} is cleared: the next "
                                       "session tries it again.")
    console.print(escape(" ".join(said)), highlight=False)
    return 0


def _read_key(provider: str, from_stdin: bool) -> str:
    """The API key from stdin, or typed at a prompt without echo (never from argv)."""
    if from_stdin:
        return sys.stdin.readline().strip()
    if not sys.stdin.isatty():
        raise AccountError("No terminal to type the API key in.",
                           "Pipe it in with --api-key-stdin.")
    return ask(f"{provider} API key (not shown): ", secret=True).strip()


async def _test(book: AccountsClient, args: argparse.Namespace, console: Console) -> int:
    account = await book.get(args.provider, args.label)
    if account is None:
        raise AccountError(f"No account {args.provider}:{args.label}.",
                           "List them with `relay-cli accounts list`.")
    if not args.json:
        console.print(f"Testing {escape(account.entry)}… {COST_NOTE}")
    result = await book.check(args.provider, args.label)
    if args.json:
        print(json.dumps({
            "entry": result.entry, "status": result.status, "ok": result.ok,
            "message": result.message, "hint": result.hint, "model": result.model,
            "latency_s": result.latency_s, "answer": result.answer,
            "resets_at": result.resets_at.isoformat() if result.resets_at else None,
            "note": result.cost_note}, ensure_ascii=False), flush=True)
    else:
        style = "green" if result.ok else "red"
        console.print(f"[{style}]{escape(result.summary)}[/]")
        if not result.ok and result.message not in result.summary:
            console.print(escape(result.message))
        if result.hint:
            console.print(f"  → {escape(result.hint)}")
    return 0 if result.ok else 1


async def _login(account: Account | None, args: argparse.Namespace, console: Console) -> int:
    if account is None:
        raise AccountError(f"No account {args.provider}:{args.label}.",
                           "List them with `relay-cli accounts list`.")
    plan = login_command(account)
    if isinstance(plan, NoLogin):
        raise AccountError(plan.reason, plan.hint)
    console.print(f"Logging {escape(account.entry)} in: {escape(_shown(plan))}")
    console.print(escape(plan.how))
    process = await asyncio.create_subprocess_exec(*plan.argv, env=plan.environment())
    try:
        code = await process.wait()
    except asyncio.CancelledError:  # Ctrl-C reached the login too (same terminal)
        await asyncio.shield(process.wait())
        raise
    if code != 0:
        console.print(f"[red]The login ended with exit code {code}.[/]")
        return 1
    check = cli(f"accounts test {account.provider} {account.label}")
    console.print(f"Done. Check it with `{escape(check)}` (spends a few tokens).")
    return 0


def _shown(plan: LoginCommand) -> str:
    env = " ".join(f"{k}={v}" for k, v in plan.env.items())
    unset = " ".join(f"-u {name}" for name in sorted(plan.unset))
    return " ".join(part for part in ("env", unset, env, *plan.argv) if part)


def _print_list(accounts: list[Account], console: Console, as_json: bool) -> None:
    if as_json:
        print(json.dumps([_as_json(a) for a in accounts], ensure_ascii=False), flush=True)
        return
    if not accounts:
        console.print("No accounts yet. Add one: "
                      + escape(cli("accounts add claude work --config-dir ~/.claude-work")))
        return
    table = FitTable(Column("entry", figure=True), "configuration folder", "sign-in", "state",
                     title="Accounts")
    for a in accounts:
        state = ", ".join(s for s, on in (("preferred", a.preferred), ("paused", a.paused)) if on)
        table.add_row(escape(a.entry), escape(str(a.config_dir or "(CLI default)")),
                      _signs_in(a), state)
    console.print(table)


def _as_json(account: Account) -> dict[str, Any]:
    return {"entry": account.entry, "provider": account.provider, "label": account.label,
            "config_dir": str(account.config_dir) if account.config_dir else None,
            "auth_kind": account.auth_kind, "preferred": account.preferred,
            "paused": account.paused, "has_key": account.has_key}


def _where(account: Account) -> str:
    return str(account.config_dir) if account.config_dir else "the CLI's default folder"


def _signs_in(account: Account) -> str:
    if account.auth_kind != "api_key":
        return "the CLI's own login"
    if account.has_key is None:
        return "API key (vault locked)"
    return "API key in the vault" if account.has_key else "API key MISSING from the vault"
