"""The verifier gate and the per-account circuit breaker, through the engine."""

from __future__ import annotations

import shlex
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.engine import Engine
from relay.core.events import utcnow
from relay.core.models import SessionSpec
from relay.core.vault import Vault
from relay.sessions.contract import read_envelope

PY = sys.executable
NOTES_EXIST = [PY, "-c", "import pathlib, sys; sys.exit(not pathlib.Path('RELAY_DEMO_NOTES.md').exists())"]
ALWAYS_RED = [PY, "-c", "import sys; print('2 failed'); sys.exit(1)"]


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


async def verify_results(engine: Engine, sid: str) -> list[tuple[bool, int | None]]:
    return [(r.event.passed, r.event.exit_code) for r in await engine.session_events(sid)
            if r.event.kind == "verify_result"]


async def test_green_acceptance_checks_complete_the_session(engine: Engine, git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t", verify=[NOTES_EXIST]))
    assert row.state == "completed", row.reason
    assert await verify_results(engine, row.id) == [(True, 0)]


async def test_red_is_never_done(engine: Engine, git_repo: Path) -> None:
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t",
                                               verify=[NOTES_EXIST, ALWAYS_RED]))
    assert row.state == "failed"
    assert row.reason is not None
    assert "acceptance check" in row.reason
    assert "failed (exit 1)" in row.reason
    assert await verify_results(engine, row.id) == [(True, 0), (False, 1)]


async def test_red_goes_to_the_next_entry_which_is_verified_again(engine: Engine,
                                                                  git_repo: Path) -> None:
    spec = SessionSpec(repo=git_repo, task="t", chain=["demo:a", "demo:b"], verify=[ALWAYS_RED])
    row = await engine.run_session(spec)
    assert row.state == "failed"
    assert await verify_results(engine, row.id) == [(False, 1), (False, 1)]
    handoff = (await engine.handoffs(row.id))[0]
    assert (handoff.reason, handoff.state) == ("verify_failed", "done")
    assert [r.outcome for r in await engine.runs(row.id)] == ["completed", "completed"]
    # the next agent is told the check, and that it is red
    key = Vault.open(engine.config).signing_key(create=False)
    contract = read_envelope(Path(handoff.contract_dir or ""), key)
    assert contract.acceptance_assertions == [f"`{shlex.join(ALWAYS_RED)}` exits 0"]
    assert contract.next_action.startswith(f"The acceptance check `{shlex.join(ALWAYS_RED)}` failed")


async def test_a_quota_error_opens_the_breaker_and_later_sessions_skip_the_account(
        engine: Engine, git_repo: Path) -> None:
    first = await engine.run_session(SessionSpec(repo=git_repo, task="t", chain=["demo:a"],
                                                 demo_limit_after=1))
    assert first.state == "failed"
    breaker = await engine.breakers.get("demo:a", now=utcnow())
    assert breaker is not None
    assert breaker.state == "open"
    assert breaker.kind == "usage_limit"

    second = await engine.run_session(SessionSpec(repo=git_repo, task="t",
                                                  chain=["demo:a", "demo:b"]))
    assert second.state == "completed", second.reason
    notices = [r.event.message for r in await engine.session_events(second.id)
               if r.event.kind == "notice"]
    assert any(n.startswith("Skipping demo:a: it is out until") for n in notices)
    assert len(await engine.runs(second.id)) == 1

    only_a = await engine.run_session(SessionSpec(repo=git_repo, task="t", chain=["demo:a"]))
    assert only_a.state == "failed"
    assert only_a.reason == "every account in the chain is out until its reset or paused"


async def test_after_the_reset_the_next_run_probes_and_closes_the_breaker(engine: Engine,
                                                                          git_repo: Path) -> None:
    past = utcnow() - timedelta(seconds=5)
    await engine.breakers.trip("x", "demo:a", "usage_limit", past, "limit", now=utcnow())
    breaker = await engine.breakers.get("demo:a", now=utcnow())
    assert breaker is not None
    assert breaker.state == "half_open"
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t", chain=["demo:a"]))
    assert row.state == "completed", row.reason
    assert await engine.breakers.get("demo:a", now=utcnow()) is None
