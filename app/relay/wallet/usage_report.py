"""``relay-cli usage``: transcript usage per day, session or five-hour block, with costs.

Days are local dates (as ccusage counts them); costs are what the CLI wrote (Pi) or
estimates from the dated price table, and say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Protocol

from relay.core.errors import RelayError
from relay.wallet.blocks import block_groups
from relay.wallet.costs import CostSum
from relay.wallet.model import FIVE_HOURS_MS, Figure, Tokens
from relay.wallet.present import cost
from relay.wallet.pricing import Pricing
from relay.wallet.usage_agg import AggRow, slot_start_ms
from relay.wallet.usage_table import UsageTable as UsageTable  # its home: stdlib only


class _Source(Protocol):
    pricing: Pricing

    async def usage_rows(self, entry: str | None, since_ms: int | None,
                         by: str | None = None) -> list[AggRow]: ...


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
    """The table of ``relay-cli usage`` from the index's aggregate (by day, session or block)."""
    rows = await wallet.usage_rows(account, parse_since(since), report_rows(by))
    return build_report(wallet.pricing, rows, by)


def report_rows(by: str) -> str:
    """How the aggregate is read for a report ``by`` day, session or block."""
    return by if by in ("session", "block") else "day"


def build_report(pricing: Pricing, rows: list[AggRow], by: str, now_ms: int | None = None
                 ) -> UsageTable:
    """The table of ``rows`` (the aggregate by slot, or read for this report:
    :func:`report_rows`); ``now_ms`` judges active blocks."""
    match by:
        case "session":
            return _by_session(pricing, rows)
        case "block":
            now = int(datetime.now(UTC).timestamp() * 1000) if now_ms is None else now_ms
            return _by_block(pricing, rows, now)
        case _:
            return _by_day(pricing, rows)


_TOKEN_COLS = ["input", "output", "cache write", "cache read", "total"]


def _token_cells(t: Tokens) -> list[str]:
    return [f"{t.input:,}", f"{t.output:,}", f"{t.cache_write:,}", f"{t.cache_read:,}",
            f"{t.total:,}"]


def _token_json(t: Tokens) -> dict[str, int]:
    return {"input": t.input, "output": t.output, "cache_write": t.cache_write,
            "cache_read": t.cache_read, "reasoning": t.reasoning, "total": t.total}


def _tokens(r: AggRow) -> Tokens:
    return Tokens(r.input, r.output, r.cache_read, r.cache_write, r.reasoning)


def _cost(pricing: Pricing, rows: Iterable[AggRow]) -> Figure:
    """What the rows' calls cost: the costs the CLIs wrote, the others at list prices."""
    acc = CostSum()
    for r in rows:
        if r.costed:
            acc.add(Figure(r.cost_usd, "recorded", r.last_ms), r.costed)
        if r.calls > r.costed:
            tokens = Tokens(r.nc_input, r.nc_output, r.nc_cache_read, r.nc_cache_write)
            figure = pricing.cost(tokens, r.model)
            acc.add(Figure(figure.value, figure.source, r.last_ms, figure.detail),
                    r.calls - r.costed)
    return acc.figure("call")


def _group(table: UsageTable, pricing: Pricing, key: str, groups: dict[str, list[AggRow]],
           extra: dict[str, list[str]] | None = None) -> UsageTable:
    for name, rows in groups.items():
        tokens = sum((_tokens(r) for r in rows), Tokens())
        models = sorted({r.model for r in rows if r.model})
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


def _by_day(pricing: Pricing, rows: list[AggRow]) -> UsageTable:
    groups: dict[str, list[AggRow]] = {}
    for row in sorted(rows, key=lambda r: r.slot):  # a local day is whole quarter hours
        day = _local_day(slot_start_ms(row.slot))
        groups.setdefault(day, []).append(row)
    table = UsageTable("Usage per day", ["day", "models", *_TOKEN_COLS, "cost"],
                       {"day", "models"})
    return _group(table, pricing, "day", groups)


def _by_session(pricing: Pricing, rows: list[AggRow]) -> UsageTable:
    groups: dict[str, list[AggRow]] = {}
    for row in sorted(rows, key=lambda r: r.first_ms):
        groups.setdefault(f"{row.entry} {row.session_id or '?'}", []).append(row)
    extra = {}
    for name, mine in groups.items():
        last = max(mine, key=lambda r: r.last_ms)
        extra[name] = [last.project or "", _local(last.last_ms)]
    table = UsageTable("Usage per session", ["account / session", "project", "last activity",
                                             "models", *_TOKEN_COLS, "cost"],
                       {"account / session", "project", "last activity", "models"})
    return _group(table, pricing, "session", groups, extra)


def _by_block(pricing: Pricing, rows: list[AggRow], now: int) -> UsageTable:
    by_entry: dict[str, dict[int, list[AggRow]]] = {}
    for row in rows:
        by_entry.setdefault(row.entry, {}).setdefault(row.slot, []).append(row)
    groups: dict[str, list[AggRow]] = {}
    extra: dict[str, list[str]] = {}
    for entry, slots in sorted(by_entry.items()):
        ordered = [slots[s] for s in sorted(slots)]
        spans = [(min(r.first_ms for r in rs), max(r.last_ms for r in rs)) for rs in ordered]
        for start, i, j in block_groups(spans, FIVE_HOURS_MS):
            name = f"{entry} {_local(start)}"
            groups[name] = [r for rs in ordered[i:j] for r in rs]
            end, last = start + FIVE_HOURS_MS, spans[j - 1][1]
            extra[name] = [_local(end), "active" if now - last < FIVE_HOURS_MS and now < end else ""]
    table = UsageTable("Usage per five-hour block", ["account / block start", "block end", "",
                                                     "models", *_TOKEN_COLS, "cost"],
                       {"account / block start", "block end", "", "models"})
    return _group(table, pricing, "block", groups, extra)


def _local_day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).astimezone().date().isoformat()


def _local(ms: int) -> str:
    return f"{datetime.fromtimestamp(ms / 1000, UTC).astimezone():%Y-%m-%d %H:%M}"
