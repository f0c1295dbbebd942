"""Choosing the chain entry to run: budgets, paused accounts, breakers, avoided accounts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.events import AgentEvent, Notice, utcnow
from relay.engine.engine import Engine
from relay.sessions.guarding import choose_entry
from relay.wallet.model import GuardVerdict


class Verdicts:
    def __init__(self, verdicts: dict[str, GuardVerdict]) -> None:
        self.verdicts = verdicts

    async def before_run(self, session_id: str, entry: str) -> GuardVerdict | None:
        return self.verdicts.get(entry)

    async def after_turn(self, session_id: str, run_id: str, entry: str) -> GuardVerdict | None:
        return None


@pytest.fixture
async def engine(relay_home: Path) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config())
    yield eng
    await eng.close()


async def choose(engine: Engine, chain: list[str], verdicts: dict[str, GuardVerdict]
                 ) -> tuple[int | None, str | None, list[str]]:
    said: list[str] = []

    async def emit(event: AgentEvent) -> None:
        assert isinstance(event, Notice)
        said.append(event.message)

    index, why = await choose_entry(chain, 0, "s", Verdicts(verdicts), engine.breakers,
                                    utcnow(), emit)
    return index, why, said


async def test_an_avoided_account_is_skipped_while_another_can_take_the_work(
        engine: Engine) -> None:
    index, why, said = await choose(engine, ["a", "b"], {"a": GuardVerdict("avoid", "nearly out")})
    assert (index, why) == (1, None)
    assert said == ["Skipping a: nearly out."]


async def test_an_avoided_account_runs_when_nothing_else_can(engine: Engine) -> None:
    index, _, said = await choose(engine, ["a", "b"], {
        "a": GuardVerdict("avoid", "nearly out"), "b": GuardVerdict("handoff", "paused")})
    assert index == 0
    assert said[-1] == "No other entry can take the work, so it runs on a anyway."


async def test_a_spent_budget_stops_before_anything_runs(engine: Engine) -> None:
    index, why, _ = await choose(engine, ["a", "b"], {"a": GuardVerdict("stop", "day budget spent")})
    assert (index, why) == (None, "day budget spent")


async def test_an_open_breaker_is_named_before_the_forecast(engine: Engine) -> None:
    await engine.breakers.trip("s", "a", "usage_limit", None, "limit", now=utcnow())
    index, _, said = await choose(engine, ["a", "b"], {"a": GuardVerdict("avoid", "full")})
    assert index == 1
    assert said[0].startswith("Skipping a: it is out until")
    assert len(said) == 1


async def test_every_entry_out_says_so(engine: Engine) -> None:
    index, why, _ = await choose(engine, ["a"], {"a": GuardVerdict("handoff", "paused")})
    assert index is None
    assert why == "every account in the chain is out until its reset or paused"
