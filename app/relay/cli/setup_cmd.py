"""relay-cli setup claude: Relay's hooks and MCP server in Claude Code's configuration.

``relay-cli setup claude [--config-dir DIR | --account NAME | --all-accounts] [--check]
[--remove] [--dry-run] [--json]`` prints the plan for each folder, then carries it out
(:mod:`relay.board.claude_setup`: a backup first, Relay's entries only — the hooks, the
allow rules of the board's MCP tools, the MCP server). ``--check`` only
reads and reports what is and is not in place. The folder is ``$CLAUDE_CONFIG_DIR`` or
``~/.claude`` by default; ``--account`` / ``--all-accounts`` take the wallet's Claude accounts'
folders (read through the data folder's host). The hooks run the hook client with this data
folder; the MCP server's URL is the running host's, else the default one. While no host
runs, ``--check`` cannot judge the registered URL: it says so (``info``) and exits 0 for it.

Exit codes: 0 done (``--check``: everything in place), 1 ``--check`` found something
missing or stale, 2 a RelayError (an unreadable or malformed settings file, an unknown
account…: nothing was changed).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_core import to_jsonable_python
from rich.markup import escape

from relay.board import claude_setup as cs
from relay.cli.tables import Column, FitTable
from relay.core.errors import RelayError
from relay.core.hostfile import read_host
from relay.core.termsafe import json_text

if TYPE_CHECKING:
    from rich.console import Console

    from relay.core.config import Config

_COLOUR = {"add": "green", "change": "yellow", "remove": "red", "keep": "dim", "absent": "dim",
           "conflict": "red", "ok": "green", "info": "cyan", "missing": "red",
           "stale": "yellow"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    setup = sub.add_parser(
        "setup", help="set up Claude Code's hooks and Relay's MCP server (--check: what is in "
                      "place)",
        description="Merge Relay's hook entries and allow rules for the board's MCP tools "
                    "into Claude Code's settings.json and register Relay's MCP server (user "
                    "scope). A backup is taken first; your own "
                    "entries are left as they are. No token is written anywhere: the hook "
                    "client reads the data folder's api-token itself.",
        epilog="docs/claude-hooks.md explains each entry.")
    setup.add_argument("agent", choices=["claude"], help="the agent CLI (claude)")
    where = setup.add_mutually_exclusive_group()
    where.add_argument("--config-dir", type=Path, metavar="DIR",
                       help="Claude's configuration folder (default: CLAUDE_CONFIG_DIR, else "
                            "~/.claude)")
    where.add_argument("--account", metavar="NAME",
                       help="the folder of this Claude account in the wallet (work or "
                            "claude:work)")
    where.add_argument("--all-accounts", action="store_true",
                       help="every Claude account's folder in the wallet")
    what = setup.add_mutually_exclusive_group()
    what.add_argument("--check", action="store_true",
                      help="only report what is and is not in place (exit 1: something is "
                           "missing or stale)")
    what.add_argument("--remove", action="store_true", help="take Relay's entries out again")
    setup.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    setup.add_argument("--json", action="store_true", help="print the result as JSON")


async def _targets(config: Config, args: argparse.Namespace) -> list[cs.ClaudeTarget]:
    if args.config_dir is not None:
        return [cs.folder_target(args.config_dir)]
    if not (args.account or args.all_accounts):
        return [cs.default_target()]
    from relay.cli.hosted import host_api

    async with host_api(config, args) as attached:
        accounts = await attached.client.accounts.all()
    if args.account:
        return [cs.account_target(cs.find_account(accounts, args.account))]
    return cs.unique_targets(cs.account_target(a) for a in cs.claude_accounts(accounts))


async def setup(config: Config, args: argparse.Namespace, console: Console) -> int:
    import asyncio

    targets = await _targets(config, args)
    host = read_host(config.home)
    wiring = await asyncio.to_thread(cs.Wiring.make, config.home, host.url if host else None)
    if args.check:
        checks = [await asyncio.to_thread(cs.check, t, wiring, host.url if host else None)
                  for t in targets]
        if args.json:
            _print_json({"checks": [{**to_jsonable_python(c), "ok": c.ok} for c in checks]})
        for c in checks if not args.json else []:
            _show_check(c, console)
        if not targets and not args.json:
            console.print("No Claude accounts in the wallet.")
        return 0 if all(c.ok for c in checks) else 1
    results = []
    for target in targets:
        the_plan = await asyncio.to_thread(cs.plan, target, wiring, remove=args.remove)
        if not args.json:
            _show_plan(the_plan, console)
        if args.dry_run or not the_plan.changes:
            results.append(cs.Applied(the_plan))
            continue
        if args.remove:
            done = await asyncio.to_thread(cs.remove, target)
        else:
            done = await asyncio.to_thread(cs.apply, target, wiring)
        if not args.json:
            _show_applied(done, console)
        results.append(done)
    if args.json:
        _print_json({"dry_run": args.dry_run, "results": to_jsonable_python(results)})
    elif not targets:
        console.print("No Claude accounts in the wallet.")
    return 0


def doctor_line(config: Config) -> str:
    """``relay-cli doctor``'s line: whether the default Claude folder is set up (reads only)."""
    try:
        host = read_host(config.home)
        url = host.url if host else None
        check = cs.check(cs.default_target(), cs.Wiring.make(config.home, url), url)
    except RelayError as exc:
        return f"[red]cannot tell[/] — {escape(exc.message)}"
    where = escape(str(check.target.config_dir))
    wrong = [i for i in check.items if not i.fine]
    if not wrong:
        return f"[green]set up[/] in {where}"
    if all(i.state == "missing" for i in check.items):
        return f"not set up in {where} (relay-cli setup claude)"
    return (f"[yellow]{len(wrong)} of {len(check.items)} entries missing or stale[/] in {where} "
            "(relay-cli setup claude --check)")


def _print_json(data: dict[str, Any]) -> None:
    print(json_text(data, indent=2), flush=True)


def _heading(target: cs.ClaudeTarget, console: Console) -> None:
    named = "" if target.label == str(target.config_dir) else f" ({escape(target.label)})"
    console.print(f"[bold]Claude Code{named}[/]: {escape(str(target.config_dir))}",
                  highlight=False)


def _show_plan(the_plan: cs.Plan, console: Console) -> None:
    _heading(the_plan.target, console)
    table = FitTable(Column("entry", figure=True), Column("action", figure=True),
                     Column("detail", wrap=False))
    for item in the_plan.items:
        table.add_row(escape(item.what), f"[{_COLOUR[item.action]}]{item.action}[/]",
                      escape(item.detail))
    console.print(table)
    console.print(f"  settings: {escape(str(the_plan.target.settings))}", highlight=False)
    console.print(f"  MCP servers: {escape(str(the_plan.target.state_file))}", highlight=False)
    if not the_plan.changes:
        console.print("  Nothing to change.")


def _show_applied(done: cs.Applied, console: Console) -> None:
    for path in done.backups:
        console.print(f"  backup: {escape(path)}", highlight=False)
    for path in done.written:
        console.print(f"  [green]written[/]: {escape(path)}", highlight=False)
    if not done.plan.remove:
        console.print("  Restart Claude Code to use them (check: relay-cli setup claude "
                      "--check).")


def _show_check(check: cs.Check, console: Console) -> None:
    _heading(check.target, console)
    table = FitTable(Column("entry", figure=True), Column("state", figure=True),
                     Column("detail", wrap=False))
    for item in check.items:
        table.add_row(escape(item.what), f"[{_COLOUR[item.state]}]{item.state}[/]",
                      escape(item.detail))
    console.print(table)
    host = (f"runs at {escape(check.host_url)}" if check.host_url
            else "[yellow]not running[/] (the hooks stay silent until it runs)")
    console.print(f"  host: {host}", highlight=False)
    if not check.ok:
        console.print("  Set up what is missing with `relay-cli setup claude`"
                      " (same folder options).")
