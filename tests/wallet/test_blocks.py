"""Five-hour blocks (ccusage's definition) and rolling windows."""

from __future__ import annotations

from datetime import UTC, datetime

from relay.wallet.blocks import (
    HOUR_MS,
    Block,
    UsagePoint,
    current_block,
    five_hour_blocks,
    rolling_window,
    totals,
)
from relay.wallet.model import FIVE_HOURS_MS, SEVEN_DAYS_MS, Tokens

MINUTE_MS = 60_000


def at(text: str) -> int:
    """Epoch ms of a UTC ``YYYY-MM-DD HH:MM[:SS]``."""
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def point(ts: int, n: int = 100, cost: float | None = None, model: str | None = "opus") -> UsagePoint:
    return ts, Tokens(input=n), cost, model


def starts(blocks: list[Block]) -> list[int]:
    return [b.start_ms for b in blocks]


def test_a_block_starts_at_the_first_entry_floored_to_the_hour() -> None:
    (block,) = five_hour_blocks([point(at("2026-11-30 10:55:30")), point(at("2026-11-30 11:20"))],
                                now_ms=at("2026-12-01 00:00"))
    assert (block.start_ms, block.end_ms) == (at("2026-11-30 10:00"), at("2026-11-30 15:00"))
    assert (block.first_ms, block.last_ms) == (at("2026-11-30 10:55:30"), at("2026-11-30 11:20"))
    assert block.usage.calls == 2
    assert block.usage.tokens == Tokens(input=200)


def test_an_entry_exactly_five_hours_after_the_start_stays_in_the_block() -> None:
    start = at("2026-11-30 10:00")
    blocks = five_hour_blocks([point(start), point(start + 2 * HOUR_MS), point(start + FIVE_HOURS_MS)],
                              now_ms=start + 10 * HOUR_MS)
    assert starts(blocks) == [start]
    assert blocks[0].last_ms == blocks[0].end_ms


def test_an_entry_past_the_block_end_starts_a_new_block() -> None:
    start = at("2026-11-30 10:00")
    # each gap is 2 h, but the fourth entry is past 15:00
    times = [start, start + 2 * HOUR_MS, start + 4 * HOUR_MS, start + FIVE_HOURS_MS + 1]
    blocks = five_hour_blocks([point(t) for t in times], now_ms=start + 20 * HOUR_MS)
    assert starts(blocks) == [start, start + FIVE_HOURS_MS]   # 15:00:00.001 floored to 15:00
    assert [b.usage.calls for b in blocks] == [3, 1]


def test_a_gap_of_more_than_five_hours_starts_a_new_block() -> None:
    first = at("2026-11-30 10:10")
    later = first + FIVE_HOURS_MS + 30 * MINUTE_MS   # 15:40
    blocks = five_hour_blocks([point(first), point(later)], now_ms=later + HOUR_MS)
    assert starts(blocks) == [at("2026-11-30 10:00"), at("2026-11-30 15:00")]


def test_a_gap_of_exactly_five_hours_does_not_split() -> None:
    first = at("2026-11-30 10:00")
    blocks = five_hour_blocks([point(first), point(first + FIVE_HOURS_MS)],
                              now_ms=first + 20 * HOUR_MS)
    assert len(blocks) == 1


def test_entries_out_of_order_are_sorted_first() -> None:
    base = at("2026-11-30 10:00")
    shuffled = [point(base + 3 * HOUR_MS), point(base), point(base + HOUR_MS)]
    (block,) = five_hour_blocks(shuffled, now_ms=base + 20 * HOUR_MS)
    assert (block.first_ms, block.last_ms) == (base, base + 3 * HOUR_MS)


def test_a_block_is_active_before_its_end_with_recent_use() -> None:
    start = at("2026-11-30 10:00")
    points = [point(start + 30 * MINUTE_MS)]
    assert five_hour_blocks(points, now_ms=start + 4 * HOUR_MS)[0].active
    assert not five_hour_blocks(points, now_ms=start + FIVE_HOURS_MS)[0].active   # at its end
    block = current_block(points, now_ms=start + 4 * HOUR_MS)
    assert block is not None
    assert block.start_ms == start
    assert current_block(points, now_ms=start + 6 * HOUR_MS) is None
    assert current_block([], now_ms=start) is None


def test_only_the_last_block_can_be_current() -> None:
    start = at("2026-11-30 10:00")
    points = [point(start), point(start + 7 * HOUR_MS)]
    block = current_block(points, now_ms=start + 8 * HOUR_MS)
    assert block is not None
    assert block.start_ms == start + 7 * HOUR_MS
    assert [b.active for b in five_hour_blocks(points, start + 8 * HOUR_MS)] == [False, True]


def test_usage_per_model_and_known_costs() -> None:
    base = at("2026-11-30 10:00")
    usage = totals([point(base, 100, 0.5, "opus"), point(base, 50, None, "opus"),
                    point(base, 10, None, "sonnet"), point(base, 1, None, None)])
    assert usage.calls == 4
    assert usage.tokens == Tokens(input=161)
    assert usage.cost_usd == 0.5
    assert {m: (u.tokens.input, u.cost_usd, u.calls) for m, u in usage.models.items()} == {
        "opus": (150, 0.5, 2), "sonnet": (10, None, 1), "unknown": (1, None, 1)}
    assert totals([]).cost_usd is None


def test_rolling_window_covers_the_span_up_to_now() -> None:
    now = at("2026-11-30 12:00")
    points = [point(now - SEVEN_DAYS_MS - 1, 1), point(now - SEVEN_DAYS_MS, 10),
              point(now - HOUR_MS, 100), point(now, 1000), point(now + HOUR_MS, 10_000)]
    window = rolling_window(points, now)
    assert (window.start_ms, window.end_ms) == (now - SEVEN_DAYS_MS, now)
    assert window.usage.tokens.input == 1110
    assert rolling_window(points, now, span_ms=2 * HOUR_MS).usage.tokens.input == 1100
