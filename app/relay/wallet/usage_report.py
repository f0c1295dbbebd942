"""``relay-cli usage``: transcript usage per day, session or five-hour block, with costs.

Days are local dates (as ccusage counts them); costs are what the CLI wrote (Pi) or
estimates from the dated price table, and say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Protocol

from relay.core.errors import RelayError
from relay.wallet.blocks import five_hour_blocks
from relay.wallet.costs import price_usage
from relay.wallet.model import Figure, Tokens, UsageEntry
from relay.wallet.present import cost
from relay.wallet.pricing import Pricing


class _Source(Protocol):
    pricing: Pricing

    async def index_entries(self, entry: str | None,
                            since_ms: int | None) -> list[tuple[str, str, UsageEntry]]: ...


@dataclass
class UsageTable:
    title: str
    columns: list[str]
    text_columns: set[str]
    rows: list[list[str]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"title": self.title, "rows": self.records, "notes": self.notes}


def parse_since(text: str | None, today: date | None = None) -> int | None:
    """"2026-11-01" or "7d" → epoch ms of that local midnight (None: everything)."""
    if not text:
        return None
    today = today or datetime.now(UTC).astimezone().date()  # the local day
    try:
        if m := re.fullmatch(r"([0-9]{1,6})d", text.strip()):
            day = today - timedelta(days=int(m.group(1)))
        else:
            day = date.fromisoformat(text.strip())
    except (ValueError, OverflowError) as exc:  # OverflowError: before year 1
        raise RelayError(f"--since {text[:40]!r} is neither a date nor a number of days.",
                         "Use e.g. --since 2026-11-01 or --since 7d.") from exc
    return int(datetime.combine(day, datetime.min.time()).astimezone().timestamp() * 1000)


async def usage_report(wallet: _Source, by: str, since: str | None,
                       account: str | None) -> UsageTable:
    entries = await wallet.index_entries(account, parse_since(since))
    match by:
        case "session":
            return _by_session(wallet.pricing, entries)
        case "block":
            return _by_block(wallet.pricing, entries)
        case _:
            return _by_day(wallet.pricing, entries)


_TOKEN_COLS = ["input", "output", "cache write", "cache read", "total"]


def _token_cells(t: Tokens) -> list[str]:
    return [f"{t.input:,}", f"{t.output:,}", f"{t.cache_write:,}", f"{t.cache_read:,}",
            f"{t.total:,}"]


def _token_json(t: Tokens) -> dict[str, int]:
    return {"input": t.input, "output": t.output, "cache_write": t.cache_write,
            "cache_read": t.cache_read, "reasoning": t.reasoning, "total": t.total}


def _cost(pricing: Pricing, rows: Iterable[tuple[str, str, UsageEntry]]) -> Figure:
    return price_usage(pricing, ((e, u.ts_ms, u.model, u.tokens, u.cost_usd)
                                 for e, _, u in rows)).total


def _group(table: UsageTable, pricing: Pricing, key: str,
           groups: dict[str, list[tuple[str, str, UsageEntry]]],
           extra: dict[str, list[str]] | None = None) -> UsageTable:
    for name, rows in groups.items():
        tokens = sum((u.tokens for _, _, u in rows), Tokens())
        models = sorted({u.model for _, _, u in rows if u.model})
        price = _cost(pricing, rows)
        cells = [name, *(extra or {}).get(name, []), ", ".join(models), *_token_cells(tokens),
                 cost(price)]
        table.rows.append(cells)
        table.records.append({key: name, "models": models, "tokens": _token_json(tokens),
                              "cost_usd": price.value, "cost_source": price.source,
                              "cost_detail": price.detail})
    if any(r["cost_source"] == "estimate" for r in table.records):
        table.notes.append("Costs marked estimate come from the price table "
                           "(`relay-cli prices` shows it and its date).")
    return table


def _by_day(pricing: Pricing, entries: list[tuple[str, str, UsageEntry]]) -> UsageTable:
    groups: dict[str, list[tuple[str, str, UsageEntry]]] = {}
    for row in sorted(entries, key=lambda r: r[2].ts_ms):
        day = datetime.fromtimestamp(row[2].ts_ms / 1000, UTC).astimezone().date().isoformat()
        groups.setdefault(day, []).append(row)
    table = UsageTable("Usage per day", ["day", "models", *_TOKEN_COLS, "cost"],
                       {"day", "models"})
    return _group(table, pricing, "day", groups)


def _by_session(pricing: Pricing, entries: list[tuple[str, str, UsageEntry]]) -> UsageTable:
    groups: dict[str, list[tuple[str, str, UsageEntry]]] = {}
    for row in sorted(entries, key=lambda r: r[2].ts_ms):
        groups.setdefault(f"{row[0]} {row[2].session_id or '?'}", []).append(row)
    extra = {k: [rows[-1][2].project or "", _local(rows[-1][2].ts_ms)] for k, rows in groups.items()}
    table = UsageTable("Usage per session", ["account / session", "project", "last activity",
                                             "models", *_TOKEN_COLS, "cost"],
                       {"account / session", "project", "last activity", "models"})
    return _group(table, pricing, "session", groups, extra)


def _by_block(pricing: Pricing, entries: list[tuple[str, str, UsageEntry]]) -> UsageTable:
    by_entry: dict[str, list[tuple[str, str, UsageEntry]]] = {}
    for row in entries:
        by_entry.setdefault(row[0], []).append(row)
    groups: dict[str, list[tuple[str, str, UsageEntry]]] = {}
    extra: dict[str, list[str]] = {}
    now = int(datetime.now(UTC).timestamp() * 1000)
    for entry, rows in sorted(by_entry.items()):
        rows.sort(key=lambda r: r[2].ts_ms)
        for block in five_hour_blocks(((r[2].ts_ms, r[2].tokens, r[2].cost_usd, r[2].model)
                                       for r in rows), now):
            name = f"{entry} {_local(block.start_ms)}"
            groups[name] = [r for r in rows if block.first_ms <= r[2].ts_ms <= block.last_ms]
            extra[name] = [_local(block.end_ms), "active" if block.active else ""]
    table = UsageTable("Usage per five-hour block", ["account / block start", "block end", "",
                                                     "models", *_TOKEN_COLS, "cost"],
                       {"account / block start", "block end", "", "models"})
    return _group(table, pricing, "block", groups, extra)


def _local(ms: int) -> str:
    return f"{datetime.fromtimestamp(ms / 1000, UTC).astimezone():%Y-%m-%d %H:%M}"
