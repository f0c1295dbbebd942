"""The plots' series: a window's course, the burn, the cost per day and the day budget
(over the API: tests/api/test_wallet_history_api.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.wallet.forecast import WindowInputs
from relay.wallet.history import burn_series, window_history
from relay.wallet.model import FIVE_HOURS_MS, LimitSnapshot

MIN = 60_000
NOW = 1_800_000_000_000
RESET = NOW + 60 * MIN


def reading(minutes_ago: int, pct: float, reset: int = RESET) -> LimitSnapshot:
    return LimitSnapshot("claude:work", "five_hour", NOW - minutes_ago * MIN, used_percent=pct,
                         resets_at_ms=reset, origin="test")


def test_official_readings_of_the_current_window_are_its_course() -> None:
    old = reading(400, 99.0, reset=NOW - 300 * MIN)  # an earlier window: not this one's
    found = window_history(WindowInputs("five_hour", NOW, [old, reading(30, 20.0),
                                                           reading(10, 30.0)], []))
    assert found.unit == "share"
    assert found.source == "official"
    assert found.points == [(NOW - 30 * MIN, 0.2), (NOW - 10 * MIN, 0.3)]
    assert found.resets_at_ms == RESET
    assert found.start_ms == RESET - FIVE_HOURS_MS


def test_without_readings_the_course_is_tokens_or_a_learned_share() -> None:
    calls = [(NOW - 20 * MIN, 1_000), (NOW - 10 * MIN, 3_000), (NOW + MIN, 99)]
    counted = window_history(WindowInputs("five_hour", NOW, [], calls, calls_source="recorded",
                                          block_start_ms=NOW - 30 * MIN))
    assert (counted.unit, counted.source) == ("tokens", "recorded")
    assert counted.points == [(NOW - 20 * MIN, 1_000.0), (NOW - 10 * MIN, 4_000.0)]
    assert counted.resets_at_ms == NOW - 30 * MIN + FIVE_HOURS_MS
    learned = window_history(WindowInputs("five_hour", NOW, [], calls, learned_limit=8_000,
                                          block_start_ms=NOW - 30 * MIN))
    assert (learned.unit, learned.source) == ("share", "estimate")
    assert learned.points[-1] == (NOW - 10 * MIN, 0.5)


def test_the_burn_is_tokens_per_minute_in_fifteen_minute_steps() -> None:
    calls = [(NOW - 5 * MIN, 1_500), (NOW, 1_500), (NOW - 20 * MIN, 150), (NOW - 6 * 60 * MIN, 9)]
    steps = burn_series(calls, NOW)
    assert len(steps) == 20
    assert steps[0][0] == NOW - FIVE_HOURS_MS
    assert steps[-1] == (NOW - 15 * MIN, 200.0)  # 3,000 tokens in 15 minutes
    assert steps[-2] == (NOW - 30 * MIN, 10.0)
    assert sum(v for _, v in steps[:-2]) == 0


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


async def test_the_wallet_gathers_an_accounts_series(engine: Engine, git_repo: Path) -> None:
    spec = SessionSpec(repo=git_repo, task="notes", runtime="demo", chain=["demo:primary"],
                       demo_quota=[20.0, 30.0, 40.0])
    assert (await engine.run_session(spec)).state == "completed"
    await engine.wallet.budget_book.set("day", 2.5)
    found = await engine.wallet.history("demo:primary")
    five = next(w for w in found.windows if w.kind == "five_hour")
    assert (five.unit, five.source) == ("share", "official")
    assert [v for _, v in five.points] == [0.2, 0.3, 0.4]
    seven = next(w for w in found.windows if w.kind == "seven_day")
    assert seven.unit == "tokens"  # no figure, no learned limit: counted tokens
    assert len(found.burn) == 20
    assert sum(v for _, v in found.burn) > 0  # the demo's turns were just now
    assert len(found.days) == 14
    assert found.days[-1].cost.value is not None
    assert found.days[-1].cost.value > 0
    assert all(d.cost.value == 0 for d in found.days[:-1])
    assert (found.day_budget_usd, found.day_budget_scope) == (2.5, "*")
    await engine.wallet.budget_book.set("day", 1.0, "demo:primary")
    own = await engine.wallet.history("demo:primary")
    assert (own.day_budget_usd, own.day_budget_scope) == (1.0, "demo:primary")
