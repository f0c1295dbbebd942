"""relay-cli wallet, usage and statusline.

``wallet`` shows every account: each limit window (used, projected at its reset, when it
runs out, with source, age and confidence), the burn rate, costs and budgets. ``usage``
totals the transcripts' usage per day, session or five-hour block. ``statusline`` is a
Claude Code status-line command: it records the official ``rate_limits`` Claude Code pipes
to it (subscribers) and prints a one-line summary.

``wallet`` asks the data folder's host (:mod:`relay.cli.hosted`); ``usage`` asks it when one
runs, and with none refreshes the usage index and reads its aggregate here, without the
engine (:mod:`relay.wallet.usage_local`); ``statusline``,
run after every Claude Code turn, sends its readings to the host when one runs and with none
records them in the store itself — it never hosts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from relay.cli.argtypes import since

if TYPE_CHECKING:  # the rest is imported where it is used: `usage --json` needs little
    from rich.console import Console

    from relay.core.config import Config
    from relay.wallet.model import AccountView, LimitSnapshot
    from relay.wallet.usage_report import UsageTable

#: the usage tables' columns of prose that may wrap; the others (days, times, counts, costs)
#: are figures, always whole
_SHRINKS = {"account / session", "account / block start", "project", "models"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    wallet = sub.add_parser("wallet", help="every account: limits left, forecast, costs, budgets")
    wallet.add_argument("--json", action="store_true", help="print the wallet as JSON")
    wallet.add_argument("--no-scan", action="store_true",
                        help="do not read new transcript lines first (faster, maybe stale)")
    usage = sub.add_parser("usage", help="token usage and cost from the CLIs' transcripts")
    usage.add_argument("--since", type=since, metavar="YYYY-MM-DD|Nd", help="from this day (or N days ago)")
    usage.add_argument("--by", choices=("day", "session", "block"), default="day")
    usage.add_argument("--account", metavar="PROVIDER[:LABEL]", help="one account only")
    usage.add_argument("--json", action="store_true")
    sub.add_parser("statusline", help="Claude Code status-line command: records the official "
                                      "rate limits it is given and prints a summary")


async def wallet(config: Config, args: argparse.Namespace, console: Console) -> int:
    from relay.cli.hints import cli
    from relay.cli.hosted import host_api

    async with host_api(config, args) as attached:
        client = attached.client
        if not args.no_scan:
            report = await client.wallet.refresh_index()
            if report.warnings:
                kinds = ", ".join(f"{n} {k.replace('_', ' ')}"
                                  for k, n in sorted(report.warnings.items()))
                console.print(f"[yellow]Skipped while reading transcripts: {kinds}.[/]",
                              highlight=False)
        views = await client.wallet.summary()
        now = time.time_ns() // 1_000_000
        if args.json:
            print(json.dumps([_view_json(v) for v in views], indent=2))
            return 0
        if not views:
            console.print("No accounts and no usage yet. Register one: "
                          + cli("accounts add claude work --config-dir ~/.claude-work"),
                          markup=False)
            return 0
        for view in views:
            _print_view(console, view, now)
        return 0


def _print_view(console: Console, view: AccountView, now: int) -> None:
    from rich.markup import escape

    from relay.wallet import present as text

    badges = "".join(f" [{b}]" for b, on in (("preferred", view.preferred),
                                               ("paused", view.paused)) if on)
    console.print(f"[bold]{escape(view.entry)}[/] "
                  f"{escape(text.account_subtitle(view, view.registered))}{badges}",
                  highlight=False)
    for w in view.windows:
        title = text.WINDOW_TITLES[w.kind]
        console.print(f"  {title}: {text.used_text(w)} · {escape(text.window_detail(w, now))}",
                      highlight=False)
        if w.why and w.confidence in ("low", "none"):
            console.print(f"    [dim]{escape(w.why)}[/]", highlight=False)
    console.print(f"  burn {text.burn(view.burn_tpm)} · today {text.cost(view.cost_today)}"
                  f" · this week {text.cost(view.cost_week)}", highlight=False)
    for b in view.budgets:
        colour = {"ok": "green", "warn": "yellow", "over": "red"}[b.state]
        console.print(f"  budget {b.scope}: [{colour}]{text.money(b.spent_usd)} of "
                      f"{text.money(b.limit_usd)} ({b.state})[/]", highlight=False)
    if view.breaker_until_ms:
        console.print(f"  [red]out until {text.clock_ms(view.breaker_until_ms)}: "
                      f"{escape(view.breaker_reason or '')}[/]", highlight=False)
    if view.warnings:
        console.print(f"  [yellow]{view.warnings} unreadable transcript line(s) skipped[/]")


def _figure(f: Any) -> dict[str, Any]:
    return {"value": f.value, "source": f.source, "observed_ms": f.observed_ms,
            "detail": f.detail}


def _view_json(v: AccountView) -> dict[str, Any]:
    return {
        "entry": v.entry, "provider": v.provider, "label": v.label, "auth_kind": v.auth_kind,
        "config_dir": v.config_dir, "preferred": v.preferred, "paused": v.paused,
        "windows": [{"kind": w.kind, "used": _figure(w.used), "tokens": _figure(w.tokens),
                     "projected": _figure(w.projected), "resets_at": _figure(w.resets_at),
                     "exhausts_at_ms": w.exhausts_at_ms, "confidence": w.confidence,
                     "why": w.why} for w in v.windows],
        "burn_tpm": _figure(v.burn_tpm), "cost_today": _figure(v.cost_today),
        "cost_week": _figure(v.cost_week),
        "budgets": [{"scope": b.scope, "limit_usd": b.limit_usd, "spent_usd": b.spent_usd,
                     "state": b.state} for b in v.budgets],
        "breaker_until_ms": v.breaker_until_ms, "breaker_reason": v.breaker_reason,
        "warnings": v.warnings,
    }


async def usage(config: Config, args: argparse.Namespace, console: Console) -> int:
    table = await _usage_table(config, args)
    if args.json:
        print(json.dumps(table.as_json(), indent=2))
        return 0
    from rich.markup import escape

    from relay.cli.hints import runnable
    from relay.cli.tables import Column, FitTable

    if not table.rows:
        console.print("No usage found in the transcripts for that period.")
        return 0
    out = FitTable(*(Column(col, figure=col not in _SHRINKS,
                            justify="left" if col in table.text_columns else "right")
                     for col in table.columns), title=table.title)
    for row in table.rows:
        out.add_row(*row)
    console.print(out)
    for note in table.notes:
        console.print(f"[dim]{escape(runnable(note))}[/]", highlight=False)
    return 0


async def _usage_table(config: Config, args: argparse.Namespace) -> UsageTable:
    """The live host's answer (it reads what was appended first); with no host, the index
    refreshed and read in this process, without the engine (:mod:`relay.wallet.usage_local`)."""
    from relay.core.hostfile import CONNECT_ENV, quick_get

    if not _host_named(config, getattr(args, "connect", None)):
        from relay.wallet.usage_local import local_usage

        table = await asyncio.to_thread(local_usage, config, args.by, args.since, args.account,
                                        os.environ)
        if table is not None:
            return table
    elif not getattr(args, "connect", None) and not os.environ.get(CONNECT_ENV):
        # this data folder's own host: one loopback request, without the API client
        query = {k: v for k, v in (("by", args.by), ("since", args.since),
                                   ("account", args.account), ("refresh", "true")) if v}
        answer = await asyncio.to_thread(quick_get, config.home, "/wallet/usage", query)
        if isinstance(answer, dict):
            from relay.wallet.usage_table import UsageTable

            table = UsageTable.of(answer)
            if table is not None:
                return table
    from relay.cli.hosted import host_api

    async with host_api(config, args) as attached:
        return await attached.client.wallet.usage_report(by=args.by, since=args.since,
                                                        account=args.account, refresh=True)


def _host_named(config: Config, connect: str | None = None) -> bool:
    """Whether a host is asked for (``--connect``, ``RELAY_CONNECT``) or runs for the data
    folder — checked without loading the API client."""
    from relay.core.hostfile import CONNECT_ENV, read_host

    return bool(connect or os.environ.get(CONNECT_ENV) or read_host(config.home))


async def statusline(config: Config, console: Console,
                     stdin: Any = None, env: Mapping[str, str] | None = None) -> int:
    """Record the rate limits Claude Code pipes in; print a short summary line."""
    from relay.core import jsonvalue
    from relay.core.errors import RelayError
    from relay.core.termsafe import terminal_safe

    env = os.environ if env is None else env
    raw = (stdin or sys.stdin).read()
    try:
        payload = jsonvalue.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        print("relay: status input is not JSON")
        return 1
    if not isinstance(payload, dict):
        print("relay: status input is not a JSON object")
        return 1
    try:
        entry, readings = await _record(config, payload, env)
    except RelayError as exc:
        print(terminal_safe(f"relay: {exc.message}"))
        return 1
    parts = [f"{r.window.replace('five_hour', '5h').replace('seven_day', '7d')} "
             f"{r.used_percent:.0f}%" for r in readings if r.used_percent is not None]
    model = payload.get("model")
    name = model.get("display_name") if isinstance(model, dict) else None
    print(terminal_safe(" · ".join([p for p in [f"[{name}]" if name else "", entry, *parts] if p])))
    return 0


async def _record(config: Config, payload: dict[str, Any], env: Mapping[str, str]
                  ) -> tuple[str, list[LimitSnapshot]]:
    """The readings recorded by the live host, else in the store here (no host started:
    this runs after every turn, and a host of a moment would only cost time)."""
    client = None
    if _host_named(config):  # else the client is not loaded
        from relay.api.attach import client_of_live_host

        client = await client_of_live_host(config)
    if client is None:
        from relay.wallet.statusline import record_statusline

        return await record_statusline(config, payload, env)
    from relay.core.agent_homes import claude_home

    async with client:
        return await client.wallet.record_statusline(payload, claude_home(env).root)
