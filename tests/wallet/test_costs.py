"""Costs from the runs table (real sessions of the demo runtime, real SQLite) and from
transcript usage."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from relay.core.config import load_config
from relay.core.models import SessionSpec
from relay.core.store.writer import WriteOp
from relay.engine.engine import Engine
from relay.wallet.costs import Costs, day_bounds, local_day, price_usage, run_tokens, week_bounds
from relay.wallet.model import Tokens
from relay.wallet.pricing import Pricing, shipped_table

TZ = timezone(timedelta(hours=-5))  # days in a zone that is not the test machine's


@pytest.fixture
async def engine(relay_home: Path) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


@pytest.fixture
def pricing() -> Pricing:
    return Pricing.from_tables(shipped_table())


def ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


async def add_run(engine: Engine, session_id: str, *, runtime: str = "claude",
                  entry: str | None = None, model: str | None = None,
                  started: datetime | None = None, cost: float | None = None,
                  tokens: tuple[int | None, ...] = (None, None, None, None, None)) -> str:
    """A run row as the runner writes it, with the usage its turns would have added."""
    run_id = uuid.uuid4().hex
    await engine.writer.write(WriteOp("", statements=[(
        "INSERT INTO runs (id, session_id, attempt, runtime, entry, model, started_ms,"
        " input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,"
        " cost_usd) VALUES (?, ?, (SELECT coalesce(max(attempt), 0) + 1 FROM runs"
        " WHERE session_id=?), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (run_id, session_id, session_id, runtime, entry, model,
         ms(started or datetime.now(UTC)), *tokens, cost))]))
    return run_id


async def test_a_demo_sessions_cost_is_what_its_runtime_reported(engine: Engine, git_repo: Path,
                                                                 pricing: Pricing) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    turns = [r.event for r in await engine.session_events(row.id) if r.event.kind == "turn_completed"]
    expected = sum(t.usage.cost_usd or 0 for t in turns)
    costs = Costs(engine.store, pricing)
    figure = await costs.session(row.id)
    assert figure.value == pytest.approx(expected)
    assert figure.value == pytest.approx(0.03765)
    assert figure.source == "recorded"
    assert figure.detail == "1 run: 1 reported by the CLI"
    run = (await engine.runs(row.id))[0]
    single = await costs.run(run.id)
    assert single.source == "recorded"
    assert single.detail == "reported by the demo (simulated)"
    assert (await costs.account("demo")).value == pytest.approx(expected)


async def test_a_run_without_a_reported_cost_is_estimated_from_its_tokens(
        engine: Engine, git_repo: Path, pricing: Pricing) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    # codex reports no cost, and counts cached input inside input (1000 of the 1200)
    codex = await add_run(engine, row.id, runtime="codex", entry="codex:work", model="gpt-5.5",
                          tokens=(1200, 40, 1000, 0, 8))
    costs = Costs(engine.store, pricing)
    run = await costs.run(codex)
    assert run.value == pytest.approx((200 * 5.0 + 1000 * 0.5 + 40 * 30.0) / 1e6)
    assert run.source == "estimate"
    assert run.detail == "estimated: gpt-5.5, openai list price as of 2026-06-04"
    total = await costs.session(row.id)
    assert total.value == pytest.approx(0.03765 + 0.0027)
    assert total.source == "estimate"
    assert total.detail == "2 runs: 1 reported by the CLI, 1 estimated from list prices"
    accounts = await costs.by_account()
    assert set(accounts) == {"demo", "codex:work"}
    assert accounts["codex:work"].value == pytest.approx(0.0027)


async def test_a_model_api_runs_cost_is_relays_estimate_not_a_report(
        engine: Engine, git_repo: Path, pricing: Pricing) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    # the HTTP runtimes price their turns themselves: the provider reported no cost
    api = await add_run(engine, row.id, runtime="anthropic", model="claude-sonnet-4-5",
                        cost=0.0055, tokens=(1200, 126, 0, 0, None))
    claude = await add_run(engine, row.id, runtime="claude", model="claude-sonnet-4-5",
                           cost=0.0042, tokens=(1200, 126, 0, 0, None))

    costs = Costs(engine.store, pricing)
    estimated, reported = await costs.run(api), await costs.run(claude)

    assert estimated.value == pytest.approx(0.0055)
    assert estimated.source == "estimate"
    assert "estimated by Relay" in estimated.detail
    assert reported.value == pytest.approx(0.0042)
    assert reported.source == "recorded"


async def test_a_run_that_cannot_be_priced_makes_the_total_a_lower_bound(
        engine: Engine, git_repo: Path, pricing: Pricing) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    await add_run(engine, row.id, runtime="pi", model="mock-model", tokens=(300, 25, 800, 0, None))
    await add_run(engine, row.id, runtime="codex", model="gpt-5.5")  # failed before any turn
    costs = Costs(engine.store, pricing)
    total = await costs.session(row.id)
    assert total.value == pytest.approx(0.03765)  # what is known, never 0 for the rest
    assert total.source == "estimate"
    assert "2 runs not priced (codex reported no usage; no price for mock-model)" in total.detail
    assert "lower bound" in total.detail
    assert pricing.unknown["mock-model"] == 1


async def test_only_unpriceable_runs_give_an_unknown_cost(engine: Engine, git_repo: Path,
                                                          pricing: Pricing) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    costs = Costs(engine.store, pricing)
    empty = await costs.between(0, 1)
    assert (empty.value, empty.source, empty.detail) == (0.0, "recorded", "no runs")
    other = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    await engine.writer.write(WriteOp("", statements=[(
        "UPDATE runs SET cost_usd=NULL, model=NULL WHERE session_id=?", (other.id,))]))
    unknown = await costs.session(other.id)
    assert unknown.value is None
    assert unknown.source == "unknown"
    assert "no price for an unnamed model" in unknown.detail
    assert (await costs.session(row.id)).source == "recorded"


async def test_costs_per_local_day_and_account(engine: Engine, git_repo: Path,
                                               pricing: Pricing) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    await engine.writer.write(WriteOp("", statements=[("DELETE FROM runs", ())]))
    # 23:30 and 00:30 local (UTC-5) are different days although both are 2026-11-25 in UTC
    late = datetime(2026, 11, 24, 23, 30, tzinfo=TZ)
    await add_run(engine, row.id, entry="claude:work", started=late, cost=1.0)
    await add_run(engine, row.id, entry="claude:work", started=late + timedelta(hours=1), cost=2.0)
    await add_run(engine, row.id, entry="claude:home", started=late + timedelta(hours=2), cost=4.0)
    costs = Costs(engine.store, pricing, tz=TZ)
    days = await costs.days(date(2026, 11, 23), date(2026, 11, 25))
    assert {d: f.value for d, f in days.items()} == {
        date(2026, 11, 23): 0.0, date(2026, 11, 24): 1.0, date(2026, 11, 25): 6.0}
    assert (await costs.day(date(2026, 11, 25), "claude:work")).value == 2.0
    start, end = day_bounds(date(2026, 11, 25), TZ)
    by_account = await costs.by_account(start, end)
    assert {e: f.value for e, f in by_account.items()} == {"claude:home": 4.0, "claude:work": 2.0}
    assert (await costs.account("claude:work")).value == 3.0


def test_days_and_weeks_follow_the_local_calendar() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    start, end = day_bounds(date(2026, 10, 25), berlin)  # the clocks go back: 25 hours
    assert end - start == 25 * 3600 * 1000
    monday, next_monday = week_bounds(date(2026, 11, 29), TZ)  # a Sunday
    assert datetime.fromtimestamp(monday / 1000, TZ) == datetime(2026, 11, 23, tzinfo=TZ)
    assert next_monday - monday == 7 * 24 * 3600 * 1000
    assert local_day(ms(datetime(2026, 11, 25, 2, 0, tzinfo=UTC)), TZ) == date(2026, 11, 24)


def test_codex_input_counts_are_made_disjoint_before_pricing() -> None:
    assert run_tokens("codex", (1200, 40, 1000, 0, 8)) == Tokens(200, 40, 1000, 0, 8)
    assert run_tokens("claude", (1200, 17, 4000, 300, None)) == Tokens(1200, 17, 4000, 300, 0)


def test_transcript_usage_is_priced_per_entry_and_day(pricing: Pricing) -> None:
    day1 = ms(datetime(2026, 11, 24, 12, tzinfo=TZ))
    day2 = ms(datetime(2026, 11, 25, 12, tzinfo=TZ))
    usage = price_usage(pricing, [
        ("claude:work", day1, "claude-opus-4-8", Tokens(1200, 17, 4000, 300), None),
        ("pi", day2, "mock-model", Tokens(300, 25, 800), 0.000725),   # Pi writes its cost
        ("codex", day2, "mystery-model", Tokens(10, 10), None),
    ], tz=TZ)
    assert usage.total.value == pytest.approx(0.0103 + 0.000725)
    assert usage.total.source == "estimate"
    assert "1 call not priced (no price for mystery-model)" in usage.total.detail
    assert usage.by_entry["pi"].source == "recorded"
    assert usage.by_entry["pi"].detail == "1 call: 1 reported by the CLI"
    assert usage.by_entry["claude:work"].value == pytest.approx(0.0103)
    assert usage.by_entry["codex"].value is None
    assert usage.by_day[date(2026, 11, 24)].value == pytest.approx(0.0103)
    assert usage.by_entry_day[("pi", date(2026, 11, 25))].value == pytest.approx(0.000725)
    assert usage.by_entry_day[("pi", date(2026, 11, 25))].observed_ms == day2
