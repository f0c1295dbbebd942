"""Handoffs across the new runtimes (issue 9): Gemini's quota error hands the task to Pi,
and Pi's exhausted retries (exit 0) hand it on to Codex — with the recorded formats of the
real CLIs replayed by the fakes on PATH, a snapshot, a signed contract and the receiver's
brief."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from relay.core.config import load_config
from relay.core.events import HandoffStep, LimitHit
from relay.core.models import SessionSpec
from relay.engine.engine import Engine

STEPS = ["pausing", "snapshotted", "envelope_built", "dispatched", "resuming", "done"]


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


def _calls(log: Path, name: str) -> list[dict[str, Any]]:
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return [c for c in calls if Path(str(c["argv"][0])).name == name]


async def test_gemini_quota_hands_off_to_pi(engine: Engine, git_repo: Path, fakes_on_path: Path,
                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-a-secret")
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "d_429_daily_quota")
    monkeypatch.setenv("RELAY_FAKE_PI_SCENARIO", "a_text_json")

    row = await engine.run_session(SessionSpec(repo=git_repo, task="Add a greeting",
                                               chain=["gemini", "pi"]))

    assert row.state == "completed", row.reason
    runs = await engine.runs(row.id)
    assert [(r.runtime, r.outcome) for r in runs] == [("gemini", "failed"), ("pi", "completed")]
    records = await engine.session_events(row.id)
    limits = [r.event for r in records if isinstance(r.event, LimitHit)]
    assert limits
    assert limits[0].runtime == "gemini"
    steps = [r.event for r in records if isinstance(r.event, HandoffStep)]
    assert [s.state for s in steps] == STEPS
    assert (steps[0].from_entry, steps[0].to_entry) == ("gemini", "pi")
    # Pi started in the same worktree, with the signed contract's brief appended
    pi = _calls(log, "pi")
    assert len(pi) == 1
    assert Path(str(pi[0]["cwd"])).resolve() == Path(row.workdir or "").resolve()
    argv = [str(a) for a in pi[0]["argv"]]
    assert "--append-system-prompt" in argv
    brief = Path(argv[argv.index("--append-system-prompt") + 1]).read_text()
    assert "Continuation contract" in brief
    assert "Add a greeting" in brief
    # the usage of each side is recorded on its run
    assert runs[1].usage.cost_usd is not None


async def test_pi_failing_with_exit_0_hands_off_to_codex(
        engine: Engine, git_repo: Path, fakes_on_path: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("RELAY_FAKE_PI_SCENARIO", "d_usage_limit_codex_style")
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "a_text")

    row = await engine.run_session(SessionSpec(repo=git_repo, task="Add a greeting",
                                               chain=["pi", "codex"]))

    assert row.state == "completed", row.reason
    runs = await engine.runs(row.id)
    assert (runs[0].runtime, runs[0].outcome, runs[0].exit_code) == ("pi", "failed", 0)
    assert [r.runtime for r in runs] == ["pi", "codex"]
    limit = next(r.event for r in await engine.session_events(row.id)
                 if isinstance(r.event, LimitHit))
    assert limit.limit == "usage_limit"
    codex = _calls(log, "codex")
    assert len(codex) == 1
    assert "Continuation contract" in " ".join(str(a) for a in codex[0]["argv"])
