"""relay-cli budget and relay-cli prices.

``budget list|set|clear`` manages the day and week budgets (of all of Relay's work, or of
one account with ``--account``) and a session's own budgets (``session``/``task`` with
``--session``). ``prices`` shows the price table costs are estimated from, its dates and
the file that overrides it. ``budget`` asks the data folder's host (:mod:`relay.cli.hosted`);
``prices`` reads the price files (shipped, and yours in the data folder) and nothing else.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Literal

from rich.console import Console
from rich.markup import escape

from relay.cli.argtypes import usd_amount
from relay.cli.hints import cli, runnable
from relay.cli.tables import Column, FitTable
from relay.core.config import Config
from relay.core.errors import RelayError
from relay.core.termsafe import json_text
from relay.wallet.budgets import ALL, BudgetCheck, usd
from relay.wallet.pricing import ModelPrice, Pricing

if TYPE_CHECKING:
    from relay.api.client_features import BudgetBookClient

SCOPES = ("day", "week", "session", "task")
_SESSION_FIELD: dict[str, Literal["budget_usd", "task_budget_usd"]] = {
    "session": "budget_usd", "task": "task_budget_usd"}
FOOTNOTE = ("Costs are what the CLI reported, else estimates from list prices (`relay-cli prices`); "
            "a run counts on the local day it started. Relay warns at 80 % and starts no new work "
            "at 100 %; calls already in flight can take the spend past a budget.")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser],
             entry_type: type[str] | object) -> None:
    budget = sub.add_parser("budget", help="spending budgets: warn at 80 %%, stop new work at 100 %%")
    actions = budget.add_subparsers(dest="budget_command", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="the budgets and what has been spent on them")
    listing.add_argument("--json", action="store_true")
    for name, text in (("set", "set a budget"), ("clear", "remove a budget")):
        action = actions.add_parser(name, help=text)
        action.add_argument("scope", choices=SCOPES,
                            help="day or week (all work, or --account's), session or task "
                                 "(--session's own budget, or its budget per run)")
        if name == "set":
            action.add_argument("usd", type=usd_amount, help="the budget in US dollars")
        action.add_argument("--account", type=entry_type, metavar="PROVIDER:LABEL",  # type: ignore[arg-type]
                            help="a day/week budget for one account instead of all work")
        action.add_argument("--session", metavar="SESSION",
                            help="the session whose budget this is (a unique prefix is enough)")
    prices = sub.add_parser("prices", help="the price table costs are estimated from")
    prices.add_argument("--json", action="store_true")


async def budget(config: Config, args: argparse.Namespace, console: Console) -> int:
    from relay.cli.hosted import host_api

    async with host_api(config, args) as attached:
        wallet = attached.client.wallet
        if args.budget_command == "list":
            return _list(await wallet.budgets.period_checks(), console, args.json)
        book = wallet.budget_book
        if args.scope in _SESSION_FIELD:
            return await _session_budget(book, args, console)
        if args.session:
            raise RelayError(f"--session goes with session or task budgets, not {args.scope}.")
        entry = args.account or ALL
        whose = "all work" if entry == ALL else entry
        if args.budget_command == "set":
            row = await book.set(args.scope, args.usd, entry)
            console.print(f"{args.scope.capitalize()} budget for {whose}: {usd(row.limit_usd)}. "
                          "Relay warns at 80 % and starts no new work at 100 %.")
        elif await book.clear(args.scope, entry):
            console.print(f"Cleared the {args.scope} budget for {whose}.")
        else:
            console.print(f"There was no {args.scope} budget for {whose}.")
        return 0


async def _session_budget(book: BudgetBookClient, args: argparse.Namespace, console: Console) -> int:
    if not args.session:
        raise RelayError(f"Name the session whose {args.scope} budget this is.",
                         f"relay-cli budget {args.budget_command} {args.scope} … --session ID")
    if args.account:
        raise RelayError("--account goes with day or week budgets.")
    amount = args.usd if args.budget_command == "set" else None
    session_id = await book.set_session(args.session, _SESSION_FIELD[args.scope], amount)
    what = "budget" if args.scope == "session" else "budget per task (run)"
    if amount is None:
        console.print(f"Cleared session {session_id}'s {what}.")
    else:
        console.print(f"Session {session_id}'s {what}: {usd(amount)}.")
    return 0


def _list(checks: list[BudgetCheck], console: Console, as_json: bool) -> int:
    if as_json:
        _print_json({"budgets": [_check_json(c) for c in checks], "note": FOOTNOTE})
        return 0
    if not checks:
        console.print(f"No budgets. Set one: {cli('budget set day 30')} "
                      "(or week, or --account claude:work).", markup=False)
        return 0
    table = FitTable(Column("budget", figure=True), "account", Column("limit", figure=True),
                     Column("spent", figure=True), Column("used", figure=True),
                     Column("state", figure=True), "how sure", title="Budgets")
    colour = {"ok": "green", "warn": "yellow", "over": "red"}
    for c in checks:
        period, _, entry = c.scope.partition(":")
        used = "—" if c.limit_usd <= 0 else f"{c.used * 100:.0f} %"
        table.add_row(period, entry or "all", usd(c.limit_usd), usd(c.spent_usd), used,
                      f"[{colour[c.state]}]{c.state}[/]", escape(c.spent.detail or c.spent.source))
    console.print(table)
    console.print(runnable(FOOTNOTE), markup=False)
    return 0


def _check_json(check: BudgetCheck) -> dict[str, Any]:
    period, _, entry = check.scope.partition(":")
    return {"scope": period, "entry": entry or ALL, "limit_usd": check.limit_usd,
            "spent_usd": check.spent_usd, "state": check.state, "source": check.spent.source,
            "detail": check.spent.detail}


async def prices(config: Config, args: argparse.Namespace, console: Console) -> int:
    pricing = Pricing.load(config)
    path = pricing.override_path
    present = path is not None and path.exists()
    if args.json:
        _print_json({
            "override_file": str(path) if path else None, "override_exists": present,
            "providers": {p.name: {"as_of": p.as_of, "source": p.source, "note": p.note,
                                   "origin": p.origin} for p in pricing.providers.values()},
            "models": [_price_json(p) for p in pricing.models()],
            "problems": pricing.problems})
        return 0
    table = FitTable(Column("provider", figure=True), "model",
                     *(Column(col, figure=True, justify="right")
                       for col in ("input", "output", "cache read", "cache write")),
                     Column("as of", figure=True), "from",
                     title="Prices (USD per million tokens)")
    for p in pricing.models():
        table.add_row(p.provider, p.model, f"{p.input:g}", f"{p.output:g}", f"{p.cache_read:g}",
                      f"{p.cache_write:g}", p.as_of, "shipped" if p.origin == "shipped" else "yours")
    console.print(table)
    for info in pricing.providers.values():
        console.print(f"{info.name}: as of {info.as_of} — {info.source}", markup=False)
    state = "present, merged over the shipped table" if present else \
        "not present; create it (same format as the shipped prices.json) to correct or add models"
    console.print(f"your prices: {path} ({state})", markup=False)
    for problem in pricing.problems:
        console.print(f"[yellow]warning:[/] {escape(problem)}")
    console.print("Prices are list prices as of the dates shown; costs from them are estimates.",
                  markup=False)
    return 0


def _print_json(data: dict[str, Any]) -> None:
    print(json_text(data), flush=True)


def _price_json(p: ModelPrice) -> dict[str, Any]:
    return {"model": p.model, "provider": p.provider, "input": p.input, "output": p.output,
            "cache_read": p.cache_read, "cache_write": p.cache_write, "as_of": p.as_of,
            "source": p.source, "origin": p.origin, "note": p.note}
