"""The verifier gate and the per-account circuit breaker, through the engine."""

from __future__ import annotations

import shlex
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.events import utcnow
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.sessions.contract import ContractV2, read_envelope
from relay.sessions.demo_key import demo_key

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
    # the next agent is told the check, and that it is red (a simulation: a demo key)
    folder = Path(handoff.contract_dir or "")
    contract = read_envelope(folder, demo_key(folder, create=False))
    assert isinstance(contract, ContractV2)
    assert contract.simulated
    assert contract.acceptance_assertions == [f"`{shlex.join(ALWAYS_RED)}` exits 0"]
    assert contract.next_action.startswith(f"The acceptance check `{shlex.join(ALWAYS_RED)}` failed")


async def test_a_quota_error_opens_the_breaker_and_later_sessions_skip_the_account(
        engine: Engine, git_repo: Path, fakes_on_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "d4_usage_limit_no_reset_info")
    first = await engine.run_session(SessionSpec(repo=git_repo, task="t", chain=["codex:a"]))
    assert first.state == "failed"
    breaker = await engine.breakers.get("codex:a", now=utcnow())
    assert breaker is not None
    assert breaker.state == "open"
    assert breaker.kind == "usage_limit"

    second = await engine.run_session(SessionSpec(repo=git_repo, task="t",
                                                  chain=["codex:a", "claude"]))
    assert second.state == "completed", second.reason
    notices = [r.event.message for r in await engine.session_events(second.id)
               if r.event.kind == "notice"]
    skipped = next(n for n in notices if n.startswith("Skipping codex:a: it is out until"))
    # a real account's breaker says how to clear it by hand
    assert skipped.endswith("Once it is back, `relay-cli accounts resume codex a` clears it.")
    assert [r.runtime for r in await engine.runs(second.id)] == ["claude"]

    only_a = await engine.run_session(SessionSpec(repo=git_repo, task="t", chain=["codex:a"]))
    assert only_a.state == "failed"
    assert only_a.reason is not None
    assert only_a.reason.startswith("every account in the chain is out until its reset or paused")
    assert "`relay-cli accounts resume codex a` clears it once it is back" in only_a.reason
    assert not await engine.runs(only_a.id)  # nothing ran


async def test_after_the_reset_the_next_run_probes_and_closes_the_breaker(
        engine: Engine, git_repo: Path, fakes_on_path: Path) -> None:
    past = utcnow() - timedelta(seconds=5)
    await engine.breakers.trip("x", "claude:a", "usage_limit", past, "limit", now=utcnow())
    breaker = await engine.breakers.get("claude:a", now=utcnow(), session_id="another")
    assert breaker is not None
    assert breaker.state == "half_open"
    row = await engine.run_session(SessionSpec(repo=git_repo, task="t", chain=["claude:a"]))
    assert row.state == "completed", row.reason
    assert await engine.breakers.get("claude:a", now=utcnow()) is None


async def test_a_simulated_limit_binds_only_the_session_that_made_it_up(
        engine: Engine, git_repo: Path) -> None:
    spec = SessionSpec(repo=git_repo, task="t", chain=["demo:a", "demo:b"], demo_limit_after=1)
    first = await engine.run_session(spec)
    assert first.state == "completed", first.reason
    opened = await engine.breakers.get("demo:a", now=utcnow())
    assert opened is not None  # shown (the wallet), as any breaker
    assert opened.state == "open"
    assert await engine.breakers.get("demo:a", now=utcnow(), session_id=first.id) is not None

    # the next demo starts from a fresh simulated account: it runs on demo:a again
    again = await engine.run_session(spec)
    assert again.state == "completed", again.reason
    notices = [r.event.message for r in await engine.session_events(again.id)
               if r.event.kind == "notice"]
    assert not [n for n in notices if n.startswith("Skipping")]
    assert [(r.runtime, r.outcome) for r in await engine.runs(again.id)] == [
        ("demo", "failed"), ("demo", "completed")]
    assert [h.state for h in await engine.handoffs(again.id)] == ["done"]
    only_a = await engine.run_session(SessionSpec(repo=git_repo, task="t", chain=["demo:a"]))
    assert only_a.state == "completed", only_a.reason  # never "every account … is out"
    assert await engine.breakers.get("demo:a", now=utcnow()) is None  # its run closed it
