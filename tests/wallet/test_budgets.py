"""Budgets: verdicts at 79 / 80 / 100 %, whose spend counts, and the runner stopping a real
(demo) session whose budget is spent."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.errors import RelayError
from relay.core.models import SessionSpec
from relay.core.store.db import now_ms
from relay.core.store.writer import WriteOp
from relay.engine.engine import Engine
from relay.wallet.budgets import BudgetBook, BudgetGuard, suggest, usd
from relay.wallet.model import BudgetState
from relay.wallet.pricing import Pricing, shipped_table

TZ = timezone(timedelta(hours=-5))
NOW = datetime(2026, 11, 25, 15, 0, tzinfo=TZ)  # a Wednesday


@pytest.fixture
async def engine(relay_home: Path) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


@pytest.fixture
def pricing() -> Pricing:
    return Pricing.from_tables(shipped_table())


@pytest.fixture
def guard(engine: Engine, pricing: Pricing) -> BudgetGuard:
    return BudgetGuard(engine.store, pricing, clock=lambda: NOW)


@pytest.fixture
def book(engine: Engine) -> BudgetBook:
    return BudgetBook(engine.store, engine.writer)


async def add_session(engine: Engine, repo: Path, **spec: object) -> str:
    """A session row as the engine writes it (its spec as JSON), without running it."""
    session_id = uuid.uuid4().hex[:12]
    spec_json = SessionSpec(repo=repo, task="t", runtime="claude", **spec).model_dump_json()
    await engine.writer.write(WriteOp("", statements=[(
        "INSERT INTO sessions (id, repo, task, runtime, state, permission, spec_json, created_ms,"
        " updated_ms) VALUES (?, ?, 't', 'claude', 'running', 'workspace', ?, ?, ?)",
        (session_id, str(repo), spec_json, now_ms(), now_ms()))]))
    return session_id


async def add_run(engine: Engine, session_id: str, cost: float | None, *,
                  entry: str = "claude:work", started: datetime = NOW - timedelta(hours=1),
                  runtime: str = "claude", model: str | None = None,
                  tokens: tuple[int | None, ...] = (None,) * 5) -> str:
    run_id = uuid.uuid4().hex
    await engine.writer.write(WriteOp("", statements=[(
        "INSERT INTO runs (id, session_id, attempt, runtime, entry, model, started_ms,"
        " input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,"
        " cost_usd) VALUES (?, ?, (SELECT coalesce(max(attempt), 0) + 1 FROM runs"
        " WHERE session_id=?), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (run_id, session_id, session_id, runtime, entry, model, int(started.timestamp() * 1000),
         *tokens, cost))]))
    return run_id


async def test_a_day_budget_warns_at_80_and_stops_at_100_percent(
        engine: Engine, guard: BudgetGuard, book: BudgetBook, git_repo: Path) -> None:
    await book.set("day", 100)
    session = await add_session(engine, git_repo)
    run = await add_run(engine, session, 79.0)
    assert await guard.before_run(session, "claude:work") is None
    assert await guard.after_turn(session, run, "claude:work") is None  # 79 %: quiet

    await add_run(engine, session, 1.0)
    warn = await guard.after_turn(session, run, "claude:work")
    assert warn is not None
    assert warn.action == "warn"
    assert warn.reason.startswith("Today's budget is 80 % used: $80.00 of $100.00")
    assert "as reported by the CLI" in warn.reason
    assert "relay-cli budget set day 150" in warn.reason
    assert await guard.after_turn(session, run, "claude:work") is None  # once per budget
    assert await guard.before_run(session, "claude:work") is None  # 80 % still starts work

    await add_run(engine, session, 20.0)
    stop = await guard.before_run(session, "claude:work")
    assert stop is not None
    assert stop.action == "stop"
    assert stop.reason.startswith("Today's budget is spent: $100.00 of $100.00 (100 %")
    assert "Relay starts no new work" in stop.reason
    assert stop.reason.endswith("Raise it with `relay-cli budget set day 150`")
    after = await guard.after_turn(session, run, "claude:work")
    assert after is not None
    assert after.action == "stop"
    assert "calls already in flight can take the spend past the budget" in after.reason
    assert await guard.states() == [BudgetState("day", 100.0, 100.0, "over")]


async def test_yesterday_does_not_count_today_but_counts_this_week(
        engine: Engine, guard: BudgetGuard, book: BudgetBook, git_repo: Path) -> None:
    await book.set("day", 10)
    await book.set("week", 10)
    session = await add_session(engine, git_repo)
    await add_run(engine, session, 8.0, started=NOW.replace(hour=0, minute=0) - timedelta(minutes=1))
    await add_run(engine, session, 50.0, started=NOW - timedelta(days=3))  # last week (Sunday)
    await add_run(engine, session, 1.0)
    assert await guard.states() == [BudgetState("day", 10.0, 1.0, "ok"),
                                    BudgetState("week", 10.0, 9.0, "warn")]


async def test_estimated_costs_are_named_as_estimates(
        engine: Engine, guard: BudgetGuard, book: BudgetBook, git_repo: Path) -> None:
    await book.set("day", 0.002)
    session = await add_session(engine, git_repo)
    await add_run(engine, session, None, runtime="codex", entry="codex", model="gpt-5.5",
                  tokens=(1200, 40, 1000, 0, 8))
    stop = await guard.before_run(session, "codex")
    assert stop is not None
    assert stop.action == "stop"
    assert "$0.0027 of $0.0020" in stop.reason
    assert "1 estimated from list prices" in stop.reason
    assert "costs are estimates unless the CLI reported them" in stop.reason


async def test_an_accounts_budget_counts_and_stops_only_that_account(
        engine: Engine, guard: BudgetGuard, book: BudgetBook, git_repo: Path) -> None:
    await book.set("week", 10, "claude:work")
    session = await add_session(engine, git_repo)
    await add_run(engine, session, 6.0, started=NOW - timedelta(days=2))  # Monday
    await add_run(engine, session, 50.0, entry="claude:home")
    assert await guard.before_run(session, "claude:work") is None
    await add_run(engine, session, 4.0)
    stop = await guard.before_run(session, "claude:work")
    assert stop is not None
    assert stop.reason.startswith("This week's budget for claude:work is spent: $10.00 of $10.00")
    assert "relay-cli budget set week 15 --account claude:work" in stop.reason
    assert await guard.before_run(session, "claude:home") is None
    assert await guard.states("claude:home") == []
    assert await guard.states("claude:work") == [BudgetState("week:claude:work", 10.0, 10.0, "over")]


async def test_session_and_task_budgets_come_from_the_sessions_spec(
        engine: Engine, guard: BudgetGuard, git_repo: Path) -> None:
    session = await add_session(engine, git_repo, budget_usd=10.0, task_budget_usd=3.0)
    first = await add_run(engine, session, 2.5)
    warn = await guard.after_turn(session, first, "claude:work")
    assert warn is not None
    assert warn.action == "warn"
    assert warn.reason.startswith("This task's budget is 83 % used: $2.50 of $3.00")
    second = await add_run(engine, session, 3.0)
    stop = await guard.after_turn(session, second, "claude:work")
    assert stop is not None
    assert stop.action == "stop"
    assert stop.reason.startswith("This task's budget is spent: $3.00 of $3.00")
    assert f"relay-cli budget set task 5 --session {session}" in stop.reason
    assert await guard.before_run(session, "claude:work") is None  # the session: 55 %
    await add_run(engine, session, 5.0)
    stop = await guard.before_run(session, "claude:work")
    assert stop is not None
    assert stop.reason.startswith("This session's budget is spent: $10.50 of $10.00")
    assert await guard.session_states(session, second) == [
        BudgetState(f"task:{second}", 3.0, 3.0, "over"),
        BudgetState(f"session:{session}", 10.0, 10.5, "over")]


async def test_a_zero_budget_starts_nothing(engine: Engine, guard: BudgetGuard, book: BudgetBook,
                                            git_repo: Path) -> None:
    await book.set("day", 0)
    stop = await guard.before_run(await add_session(engine, git_repo), "claude")
    assert stop is not None
    assert stop.reason.startswith("Today's budget is spent: $0.00 of $0.00")


async def test_the_budget_book_sets_clears_and_refuses_nonsense(
        engine: Engine, book: BudgetBook, git_repo: Path) -> None:
    await book.set("day", 30)
    await book.set("day", 40)
    await book.set("week", 100, "codex:work")
    assert [(b.scope, b.entry, b.limit_usd) for b in await book.all()] == [
        ("day", "*", 40.0), ("week", "codex:work", 100.0)]
    assert await book.clear("week", "codex:work")
    assert not await book.clear("week", "codex:work")
    with pytest.raises(RelayError, match="≥ 0"):
        await book.set("day", -1)
    with pytest.raises(RelayError, match="Unknown budget"):
        await book.set("month", 1)
    session = await add_session(engine, git_repo)
    assert await book.set_session(session[:6], "budget_usd", 7.5) == session
    assert (await engine.store.sessions.spec(session)).budget_usd == 7.5
    await book.set_session(session, "budget_usd", None)
    assert (await engine.store.sessions.spec(session)).budget_usd is None


def test_amounts_read_as_people_write_them() -> None:
    assert (usd(30), usd(0.0162), usd(0), usd(1234.5)) == ("$30.00", "$0.0162", "$0.00", "$1,234.50")
    assert (suggest(30, 31), suggest(0.0075, 0.0162), suggest(0, 0)) == ("47", "0.03", "0.01")


# -- through the runner ---------------------------------------------------------------------

def _guarded(engine: Engine, pricing: Pricing) -> None:
    """What the engine's composition does once the wallet is wired: the guard in Services."""
    guard = BudgetGuard(engine.store, pricing, flush=engine.writer.flush)
    engine.services = dataclasses.replace(engine.services, guard=guard)


async def test_a_session_is_warned_then_stopped_when_its_budget_is_spent(
        engine: Engine, pricing: Pricing, git_repo: Path) -> None:
    _guarded(engine, pricing)
    # the demo's turns cost $0.0063, then $0.0099: 84 % after the first, over after the second
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t", budget_usd=0.0075))
    assert row.state == "failed"
    assert row.reason is not None
    assert row.reason.startswith("This session's budget is spent: $0.0162 of $0.0075")
    events = [r.event for r in await engine.session_events(row.id)]
    turns = [e for e in events if e.kind == "turn_completed"]
    notices = [e.message for e in events if e.kind == "notice"]
    assert len(turns) == 2, "the agent is stopped at the turn that spent the budget"
    assert len([n for n in notices if "% used" in n]) == 1
    assert any(n.startswith("This session's budget is 84 % used: $0.0063 of $0.0075")
               for n in notices)
    assert row.reason in notices
    assert row.usage.cost_usd == pytest.approx(0.0162)


async def test_a_spent_day_budget_starts_no_new_session(engine: Engine, pricing: Pricing,
                                                        book: BudgetBook, git_repo: Path) -> None:
    _guarded(engine, pricing)
    first = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    assert first.state == "completed"
    await book.set("day", 0.03)
    second = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    assert second.state == "failed"
    assert second.reason is not None
    assert second.reason.startswith("Today's budget is spent: $0.0377 of $0.0300")
    assert "relay-cli budget set day 0.06" in second.reason
    assert await engine.runs(second.id) == [], "no agent was started"
    assert datetime.now(UTC) - second.updated_at < timedelta(minutes=1)


async def test_a_spent_day_budget_starts_no_follow_up_either(engine: Engine, book: BudgetBook,
                                                             git_repo: Path) -> None:
    first = await engine.run_session(SessionSpec(repo=git_repo, task="t"))
    assert first.state == "completed"
    await book.set("day", 0.03)
    await engine.continue_session(first.id, "and now a test")
    again = await engine.wait_session(first.id)
    assert again.state == "failed"
    assert again.reason is not None
    assert again.reason.startswith("Today's budget is spent")
    assert len(await engine.runs(first.id)) == 1, "no second agent run was started"
