"""Five-hour blocks as ccusage defines them, and rolling windows (seven days) — pure functions.

Everything here takes usage points ``(ts_ms, tokens, cost_usd, model)`` — what
:meth:`relay.wallet.usage_index.UsageIndex.points` returns — in any order: a clock that went
backwards writes entries out of order, so they are sorted first.

**Five-hour blocks** (ccusage's ``identifySessionBlocks``): a block starts at its first entry's
time floored to the hour (UTC) and ends five hours later. An entry starts a new block when it
is past the block's end (more than 5 h after its start) or more than 5 h after the previous
entry; an entry exactly 5 h after the start still belongs to the block. A block is *active*
when now is before its end and its last entry is less than 5 h old. Unlike ccusage, no "gap"
blocks are listed between blocks.

**Rolling window**: the usage of the last ``span_ms`` before now (both ends included) — the
seven-day window when the provider gives no reset time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from relay.wallet.model import FIVE_HOURS_MS, SEVEN_DAYS_MS, Tokens

#: (ts_ms, tokens, cost_usd or None, model or None)
UsagePoint = tuple[int, Tokens, float | None, str | None]
HOUR_MS = 3600 * 1000
#: the per-model key of calls whose model is not known
UNKNOWN_MODEL = "unknown"


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """One model's share of a block or window."""

    tokens: Tokens
    #: sum of the known costs; None when no call had one (price them with the price table)
    cost_usd: float | None
    calls: int


@dataclass(frozen=True, slots=True)
class Usage:
    """Totals of some calls, in all and per model."""

    tokens: Tokens = field(default_factory=Tokens)
    cost_usd: float | None = None
    calls: int = 0
    models: dict[str, ModelUsage] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Block:
    """One five-hour block."""

    start_ms: int
    end_ms: int
    first_ms: int
    #: the last entry's time (ccusage's ``actualEndTime``)
    last_ms: int
    active: bool
    usage: Usage


@dataclass(frozen=True, slots=True)
class Window:
    """The usage of ``[start_ms, end_ms]``."""

    start_ms: int
    end_ms: int
    usage: Usage


def five_hour_blocks(points: Iterable[UsagePoint], now_ms: int,
                     span_ms: int = FIVE_HOURS_MS) -> list[Block]:
    """The blocks of ``points``, oldest first (see the module docstring).

    Args:
        points: usage points in any order.
        now_ms: the time "active" is judged at.
        span_ms: the block length (five hours).
    """
    ordered = sorted(points, key=lambda p: p[0])
    return [_block(start, ordered[i:j], now_ms, span_ms)
            for start, i, j in block_groups([(p[0], p[0]) for p in ordered], span_ms)]


def block_groups(spans: Sequence[tuple[int, int]],
                 span_ms: int = FIVE_HOURS_MS) -> list[tuple[int, int, int]]:
    """The blocks of time spans ``(first_ms, last_ms)`` sorted by time, each as (its start,
    index of its first span, index past its last span).

    A span is a call (first = last) or calls no block boundary falls between (the usage
    aggregate's slots, :mod:`relay.wallet.usage_agg`).
    """
    groups: list[tuple[int, int, int]] = []
    start = begin = 0
    last: int | None = None
    for i, (first, end) in enumerate(spans):
        if last is not None and (first - start > span_ms or first - last > span_ms):
            groups.append((start, begin, i))
            last = None
        if last is None:
            start, begin = first - first % HOUR_MS, i
        last = end if last is None else max(last, end)
    if last is not None:
        groups.append((start, begin, len(spans)))
    return groups


def current_block(points: Iterable[UsagePoint], now_ms: int,
                  span_ms: int = FIVE_HOURS_MS) -> Block | None:
    """The active block at ``now_ms``, or None (nothing in the last five hours)."""
    blocks = five_hour_blocks(points, now_ms, span_ms)
    return blocks[-1] if blocks and blocks[-1].active else None


def rolling_window(points: Iterable[UsagePoint], now_ms: int,
                   span_ms: int = SEVEN_DAYS_MS) -> Window:
    """The usage of the ``span_ms`` up to ``now_ms`` (entries timed in the future excluded)."""
    start = now_ms - span_ms
    return Window(start, now_ms, totals(p for p in points if start <= p[0] <= now_ms))


def totals(points: Iterable[UsagePoint]) -> Usage:
    """The sum of ``points``, in all and per model."""
    tokens, cost, calls = Tokens(), None, 0
    per_model: dict[str, tuple[Tokens, float | None, int]] = {}
    for _ts, used, spent, model in points:
        tokens, cost, calls = tokens + used, _add_cost(cost, spent), calls + 1
        m_tokens, m_cost, m_calls = per_model.get(model or UNKNOWN_MODEL, (Tokens(), None, 0))
        per_model[model or UNKNOWN_MODEL] = (m_tokens + used, _add_cost(m_cost, spent), m_calls + 1)
    models = {name: ModelUsage(*values) for name, values in per_model.items()}
    return Usage(tokens, cost, calls, models)


def _block(start: int, points: Sequence[UsagePoint], now_ms: int, span_ms: int) -> Block:
    first, last = points[0][0], points[-1][0]
    end = start + span_ms
    active = now_ms - last < span_ms and now_ms < end
    return Block(start, end, first, last, active, totals(points))


def _add_cost(total: float | None, cost: float | None) -> float | None:
    if cost is None:
        return total
    return cost if total is None else total + cost
