"""The forecast: how full a window is, where it is heading, how sure Relay is."""

from __future__ import annotations

from relay.wallet.forecast import (
    WindowInputs,
    forecast,
    learned_limit,
    tokens_per_minute,
)
from relay.wallet.model import FIVE_HOURS_MS, LimitSnapshot

MIN = 60_000
NOW = 1_800_000_000_000
RESET = NOW + 60 * MIN


def reading(minutes_ago: float, pct: float | None, *, status: str | None = None,
            reset: int | None = RESET) -> LimitSnapshot:
    return LimitSnapshot("claude:work", "five_hour", NOW - int(minutes_ago * MIN),
                         used_percent=pct, resets_at_ms=reset, status=status, origin="test")


def test_two_official_readings_give_a_high_confidence_rate_and_an_exhaustion_time() -> None:
    view = forecast(WindowInputs("five_hour", NOW, [reading(20, 50.0), reading(0, 70.0)], []))
    assert view.used.value == 0.70
    assert view.used.source == "official"
    assert view.confidence == "high"
    # 20 points in 20 minutes → 1 %/min: 30 % left → 30 minutes, before the reset in 60
    assert view.exhausts_at_ms == NOW + 30 * MIN
    assert view.projected.value is not None
    assert abs(view.projected.value - 1.30) < 1e-9
    assert view.resets_at.value == RESET
    assert view.resets_at.source == "official"


def test_a_slow_burn_does_not_run_out_before_the_reset() -> None:
    view = forecast(WindowInputs("five_hour", NOW, [reading(30, 40.0), reading(0, 43.0)], []))
    assert view.exhausts_at_ms is None
    assert view.projected.value is not None
    assert view.projected.value < 1.0


def test_a_reading_from_a_window_that_has_reset_since_says_nothing() -> None:
    stale = reading(400, 99.0, reset=NOW - MIN)
    view = forecast(WindowInputs("five_hour", NOW, [stale], []))
    assert view.used.value is None
    assert view.used.source == "unknown"
    assert view.confidence == "none"


def test_one_reading_converts_the_token_burn_at_its_own_ratio() -> None:
    calls = [(NOW - m * MIN, 1_000) for m in range(10)]  # 10,000 tokens over ~10 min
    view = forecast(WindowInputs("five_hour", NOW, [reading(0, 50.0)], calls))
    # 50 % = 10,000 tokens, so 1,000 tok/min = 5 %/min → 10 minutes left
    assert view.confidence == "medium"
    assert view.exhausts_at_ms is not None
    assert abs(view.exhausts_at_ms - (NOW + 10 * MIN)) <= MIN


def test_a_rejection_is_full_whatever_the_tokens_say() -> None:
    view = forecast(WindowInputs("five_hour", NOW, [reading(1, None, status="rejected")], []))
    assert view.used.value == 1.0
    assert view.used.source == "official"
    assert view.exhausts_at_ms == NOW


def test_without_official_figures_a_learned_limit_gives_a_low_confidence_estimate() -> None:
    calls = [(NOW - m * MIN, 2_000) for m in range(30)]
    view = forecast(WindowInputs("five_hour", NOW, [], calls, block_start_ms=NOW - 40 * MIN,
                                 learned_limit=100_000))
    assert view.used.source == "estimate"
    assert view.confidence == "low"
    assert view.used.value == 0.6
    assert view.resets_at.source == "estimate"
    assert view.resets_at.value == NOW - 40 * MIN + FIVE_HOURS_MS


def test_nothing_to_go_on_is_unknown_not_zero() -> None:
    view = forecast(WindowInputs("seven_day", NOW, [], [(NOW - MIN, 500)]))
    assert view.used.value is None
    assert view.confidence == "none"
    assert view.tokens.value == 500.0


def test_learned_limit_is_what_was_spent_in_the_window_before_the_rejection() -> None:
    reset = NOW + 60 * MIN
    calls = [(reset - FIVE_HOURS_MS - MIN, 999), (NOW - 10 * MIN, 4_000), (NOW - MIN, 1_000),
             (NOW + MIN, 77)]
    assert learned_limit([(NOW, reset)], calls, FIVE_HOURS_MS) == 5_000
    assert learned_limit([], calls, FIVE_HOURS_MS) is None


def test_burn_rate_ignores_old_activity_and_one_big_call_is_not_a_spike() -> None:
    assert tokens_per_minute([(NOW - 90 * MIN, 10_000)], NOW) is None
    assert tokens_per_minute([(NOW, 10_000)], NOW) == 2_000.0  # spread over at least 5 min


def test_calls_before_a_reset_that_has_passed_do_not_count_in_the_new_window() -> None:
    rejected = reading(60, None, status="rejected", reset=NOW - 10 * MIN)
    calls = [(NOW - 70 * MIN, 90_000), (NOW - 5 * MIN, 1_000)]
    view = forecast(WindowInputs("five_hour", NOW, [rejected], calls,
                                 block_start_ms=NOW - 80 * MIN, learned_limit=90_000))
    assert view.tokens.value == 1_000.0
    assert view.used.value is not None
    assert view.used.value < 0.05


def test_a_seven_day_reading_is_not_projected_from_a_few_transcript_tokens() -> None:
    week = LimitSnapshot("claude:work", "seven_day", NOW - MIN, used_percent=77.0,
                         resets_at_ms=NOW + 3 * 24 * 60 * MIN, origin="test")
    calls = [(NOW - m * MIN, 300) for m in range(10)]
    view = forecast(WindowInputs("seven_day", NOW, [week], calls))
    assert view.used.value == 0.77
    assert view.exhausts_at_ms is None
    assert view.projected.value is None
