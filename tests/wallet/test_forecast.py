"""The forecast: how full a window is, where it is heading, how sure Relay is."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from relay.wallet.forecast import (
    WindowInputs,
    forecast,
    learned_limit,
    tokens_per_minute,
    trend,
)
from relay.wallet.model import FIVE_HOURS_MS, LimitSnapshot

MIN = 60_000
NOW = 1_800_000_000_000
RESET = NOW + 60 * MIN


def reading(minutes_ago: float, pct: float | None, *, status: str | None = None,
            reset: int | None = RESET) -> LimitSnapshot:
    return LimitSnapshot("claude:work", "five_hour", NOW - int(minutes_ago * MIN),
                         used_percent=pct, resets_at_ms=reset, status=status, origin="test")


def test_a_trend_of_official_readings_gives_a_high_confidence_run_out_time() -> None:
    readings = [reading(m, 50.0 + (20 - m)) for m in (20, 15, 10, 5, 0)]  # 1 %/min
    view = forecast(WindowInputs("five_hour", NOW, readings, []))
    assert view.used.value == 0.70
    assert view.used.source == "official"
    assert view.confidence == "high"
    # 30 % left at 1 %/min → 30 minutes, before the reset in 60
    assert view.exhausts_at_ms is not None
    assert abs(view.exhausts_at_ms - (NOW + 30 * MIN)) < 1_000
    # bounded: the window cannot be more than full at its reset
    assert view.projected.value == 1.0
    assert view.resets_at.value == RESET
    assert view.resets_at.source == "official"


def test_two_readings_are_too_few_to_project() -> None:
    view = forecast(WindowInputs("five_hour", NOW, [reading(20, 50.0), reading(0, 70.0)], []))
    assert view.used.value == 0.70
    assert view.projected.value is None
    assert view.exhausts_at_ms is None
    assert view.confidence == "none"


def test_a_slow_burn_does_not_run_out_before_the_reset() -> None:
    readings = [reading(m, 40.0 + (30 - m) / 10) for m in (30, 20, 10, 0)]
    view = forecast(WindowInputs("five_hour", NOW, readings, []))
    assert view.exhausts_at_ms is None
    assert view.projected.value is not None
    assert abs(view.projected.value - 0.49) < 1e-6  # 43 % + 0.1 %/min × 60 min
    assert view.confidence == "medium"  # four readings: not yet high


def test_one_noisy_reading_does_not_swing_the_projection() -> None:
    steady = [reading(m, 40.0 + (60 - m) / 6) for m in range(60, -1, -5)]  # 1 % per 6 min
    jump = [*steady[:-1], reading(0, steady[-1].used_percent + 5)]  # type: ignore[operator]
    calm = forecast(WindowInputs("five_hour", NOW, steady, []))
    jumpy = forecast(WindowInputs("five_hour", NOW, jump, []))
    assert calm.projected.value is not None
    assert jumpy.projected.value is not None
    # the last two points alone would read 5 % in 5 min (projected 100 % +); the trend moves
    # by the jump itself and a little slope
    assert jumpy.projected.value - calm.projected.value < 0.1


def test_the_projection_does_not_move_between_refreshes_without_a_new_reading() -> None:
    readings = [reading(m, 30.0 + (30 - m) / 2) for m in (30, 20, 10, 0)]
    first = forecast(WindowInputs("five_hour", NOW, readings, []))
    later = forecast(WindowInputs("five_hour", NOW + 3 * MIN, readings, []))
    assert first.projected == later.projected
    assert first.exhausts_at_ms == later.exhausts_at_ms


def test_a_reading_from_a_window_that_has_reset_since_says_nothing() -> None:
    stale = reading(400, 99.0, reset=NOW - MIN)
    view = forecast(WindowInputs("five_hour", NOW, [stale], []))
    assert view.used.value is None
    assert view.used.source == "unknown"
    assert view.confidence == "none"


def test_one_reading_converts_the_token_trend_at_its_own_ratio() -> None:
    calls = [(NOW - m * MIN, 1_000) for m in range(9, -1, -1)]  # 10,000 tokens over ~10 min
    view = forecast(WindowInputs("five_hour", NOW, [reading(0, 50.0)], calls))
    # 50 % = 10,000 tokens, so 1,000 tok/min = 5 %/min → 10 minutes left
    assert view.confidence == "medium"
    assert view.exhausts_at_ms is not None
    assert abs(view.exhausts_at_ms - (NOW + 10 * MIN)) <= MIN
    assert view.projected.value == 1.0


def test_one_big_call_after_a_reading_is_not_a_3801_percent_projection() -> None:
    # the old forecast: one call now, a 62 % reading → 62 % × 61 ≈ 3801 % at the reset
    view = forecast(WindowInputs("five_hour", NOW, [reading(0, 62.0, reset=NOW + 5 * 60 * MIN)],
                                 [(NOW, 40_000)]))
    assert view.projected.value is None
    assert view.exhausts_at_ms is None
    assert view.confidence == "none"


def test_a_rejection_is_full_whatever_the_tokens_say() -> None:
    view = forecast(WindowInputs("five_hour", NOW, [reading(1, None, status="rejected")], []))
    assert view.used.value == 1.0
    assert view.used.source == "official"
    assert view.exhausts_at_ms == NOW


def test_without_official_figures_a_learned_limit_gives_a_low_confidence_estimate() -> None:
    calls = [(NOW - m * MIN, 2_000) for m in range(29, -1, -1)]
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


# -- properties: bounded, stable, a confidence or nothing ---------------------------------

readings_st = st.lists(
    st.tuples(st.integers(0, 240), st.floats(0, 100, allow_nan=False)), min_size=0,
    max_size=25)
calls_st = st.lists(st.tuples(st.integers(0, 240), st.integers(1, 200_000)), max_size=40)


def _inputs(points: list[tuple[int, float]], calls: list[tuple[int, int]], now: int,
            reset: int, learned: int | None) -> WindowInputs:
    ordered = sorted(points, key=lambda p: -p[0])
    return WindowInputs("five_hour", now, [reading(m, pct, reset=reset) for m, pct in ordered],
                        sorted((NOW - m * MIN, n) for m, n in calls), learned_limit=learned)


@given(readings_st, calls_st, st.integers(1, 300), st.none() | st.integers(1_000, 10**7))
@settings(max_examples=300, deadline=None)
def test_the_projection_is_bounded_and_says_how_sure_it_is(
        points: list[tuple[int, float]], calls: list[tuple[int, int]], reset_in: int,
        learned: int | None) -> None:
    reset = NOW + reset_in * MIN
    view = forecast(_inputs(points, calls, NOW, reset, learned))
    if view.projected.value is not None:
        assert 0.0 <= view.projected.value <= 1.0
        assert view.confidence != "none"
    elif view.exhausts_at_ms is None:
        assert view.confidence == "none"
    if view.exhausts_at_ms is not None:
        assert NOW <= view.exhausts_at_ms <= reset
        assert view.projected.value in (None, 1.0)


@given(readings_st, st.integers(1, 9), st.integers(60, 300))
@settings(max_examples=200, deadline=None)
def test_without_new_points_a_refresh_projects_the_same(
        points: list[tuple[int, float]], later_min: int, reset_in: int) -> None:
    reset = NOW + reset_in * MIN
    first = forecast(_inputs(points, [], NOW, reset, None))
    again = forecast(_inputs(points, [], NOW + later_min * MIN, reset, None))
    assert again.projected == first.projected
    if first.exhausts_at_ms is not None and first.exhausts_at_ms > NOW + later_min * MIN:
        assert again.exhausts_at_ms == first.exhausts_at_ms


def test_a_trend_needs_enough_points_spread_over_time() -> None:
    assert trend([(0, 0.1), (MIN, 0.2)]) is None
    assert trend([(0, 0.1), (MIN, 0.2), (2 * MIN, 0.3)]) is None  # three points in 2 min
    found = trend([(0, 0.1), (3 * MIN, 0.13), (6 * MIN, 0.16)])
    assert found is not None
    assert abs(found.per_minute - 0.01) < 1e-9
    assert found.fit > 0.999
    falling = trend([(0, 0.5), (5 * MIN, 0.4), (10 * MIN, 0.3)])
    assert falling is not None
    assert falling.per_minute == 0.0


def test_a_reset_time_that_moves_a_little_between_readings_is_the_same_window() -> None:
    readings = [reading(m, 10.0 + (30 - m), reset=RESET + m * 1_000) for m in (30, 20, 10, 0)]
    view = forecast(WindowInputs("five_hour", NOW, readings, []))
    assert view.projected.value is not None  # four readings of one window: a trend
    assert view.confidence == "medium"
