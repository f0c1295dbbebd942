"""An ACP runtime through a whole Relay session (engine, runner, store) over the fake agent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.runtimes.registry import available_runtimes
from tests.conftest import FAKES_DIR


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


def test_the_acp_runtimes_are_registered() -> None:
    assert {"gemini-acp", "claude-acp", "codex-acp"} <= set(available_runtimes())


async def test_a_task_completes_through_a_session(engine: Engine, git_repo: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_GEMINI_ACP_BIN", str(FAKES_DIR / "bin" / "fake-acp-agent"))
    monkeypatch.setenv("RELAY_FAKE_ACP_HOME", str(tmp_path / "acp-home"))
    monkeypatch.delenv("RELAY_FAKE_SCENARIO", raising=False)
    row = await engine.run_session(SessionSpec(repo=git_repo, task="Say hello",
                                               chain=["gemini-acp"]))
    assert row.state == "completed", row.reason
    runs = await engine.runs(row.id)
    assert [(r.runtime, r.outcome) for r in runs] == [("gemini-acp", "completed")]
    kinds = [r.event.kind for r in await engine.session_events(row.id)]
    for kind in ("session_started", "assistant_text", "tool_call", "tool_result",
                 "turn_completed", "session_ended"):
        assert kind in kinds
