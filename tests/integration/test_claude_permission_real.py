"""Claude Code 2.1.197's permission prompt reaches Relay as a question, for real.

A Relay session (the engine in this process, the real CLI against ``mock_anthropic`` on
loopback) under the ``read_only`` permission policy (``--permission-mode default``, where
print mode would deny a write by itself): the mock's model asks to Write a file, Claude
calls Relay's ``permission-bridge`` MCP tool, the question reaches the session as a
``NeedsInput`` and its answer goes back to Claude.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from relay.core.bus import Subscription
from relay.core.config import load_config
from relay.core.events import InputWithdrawn, NeedsInput, PermissionDenied, SessionEnded
from relay.core.models import PermissionPolicy, SessionSpec
from relay.engine.engine import Engine
from relay.runtimes.claude_permission import DENIED_BY_USER
from tests.fakes import mock_anthropic
from tests.integration.helpers import (
    claude_env,
    real_claude_fixture,  # noqa: F401  (fixture "real_claude")
)

pytestmark = pytest.mark.integration


@pytest.fixture
async def engine(relay_home: Path) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config())
    yield eng
    await eng.close()


@pytest.fixture
def use_real_claude(real_claude: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                    relay_home: Path) -> Any:
    """The engine's Claude adapter runs the real CLI against a mock started by the test."""
    def point_at(mock: mock_anthropic.MockAnthropic) -> None:
        for key, value in claude_env(tmp_path, mock).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("RELAY_CLAUDE_BIN", str(real_claude))
    return point_at


def spec(repo: Path, approvals: str = "ask") -> SessionSpec:
    return SessionSpec(repo=repo, task="Write asked.txt", runtime="claude", worktree=False,
                       permission=PermissionPolicy.READ_ONLY, approvals=approvals)


async def asked(sub: Subscription, session_id: str) -> NeedsInput:
    async def first() -> NeedsInput:
        async for record in sub:
            if record.session_id == session_id and isinstance(record.event, NeedsInput):
                return record.event
        raise AssertionError("the bus closed before the question")
    return await asyncio.wait_for(first(), 90)  # a run that never asks fails, not hangs


def tool_results(mock: mock_anthropic.MockAnthropic) -> list[dict[str, Any]]:
    """The tool_result blocks Claude sent back to the model, in order."""
    found: list[dict[str, Any]] = []
    for request in mock.message_requests():
        for message in request["body"]["messages"][-1:]:
            content = message["content"]
            if isinstance(content, list):
                found += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    return found


def write_script(target: Path) -> dict[str, Any]:
    return {"turns": [
        {"tool_use": {"name": "Write", "id": "toolu_relay_ask_1",
                      "input": {"file_path": str(target), "content": "written after asking\n"}}},
        {"text": "Finished."}]}


async def test_an_allowed_write_is_written(engine: Engine, git_repo: Path,
                                           use_real_claude: Any) -> None:
    target = git_repo / "asked.txt"
    with mock_anthropic.serve(write_script(target)) as mock:
        use_real_claude(mock)
        sub = engine.bus.subscribe()
        session_id = await engine.start_session(spec(git_repo))
        question = await asked(sub, session_id)
        sub.close()
        assert (question.tool, question.request_id, question.read_only) == (
            "Write", "toolu_relay_ask_1", False)
        assert str(target) in question.prompt
        assert (await engine.get_session(session_id)).state == "needs_input"
        assert not target.exists()  # Claude waits for the answer

        await engine.answer_input(session_id, question.request_id, "allow")
        row = await engine.wait_session(session_id)

        assert row.state == "completed", row.reason
        assert target.read_text() == "written after asking\n"
        (result,) = tool_results(mock)
        assert not result.get("is_error")
        assert "File created successfully" in json.dumps(result)


async def test_a_rejected_write_is_not_written_and_claude_goes_on(
        engine: Engine, git_repo: Path, use_real_claude: Any) -> None:
    target = git_repo / "asked.txt"
    with mock_anthropic.serve(write_script(target)) as mock:
        use_real_claude(mock)
        sub = engine.bus.subscribe()
        session_id = await engine.start_session(spec(git_repo))
        question = await asked(sub, session_id)
        sub.close()
        await engine.answer_input(session_id, question.request_id, "reject")
        row = await engine.wait_session(session_id)

        assert row.state == "completed", row.reason
        assert not target.exists()
        (result,) = tool_results(mock)  # the model was told, and answered "Finished."
        assert result["is_error"] is True
        assert DENIED_BY_USER in json.dumps(result)
        events = [r.event for r in await engine.session_events(session_id)]
        assert [e.tool for e in events if isinstance(e, PermissionDenied)] == ["Write"]
        ended = [e for e in events if isinstance(e, SessionEnded)]
        assert [e.result_text for e in ended] == ["Finished."]


async def test_the_read_only_policy_allows_a_read_by_itself(
        engine: Engine, git_repo: Path, tmp_path: Path, use_real_claude: Any) -> None:
    outside = tmp_path / "outside" / "secret-plan.txt"  # outside the cwd: default mode asks
    outside.parent.mkdir()
    outside.write_text("RELAY-READ-7731\n")
    script = {"turns": [
        {"tool_use": {"name": "Read", "id": "toolu_relay_read_1",
                      "input": {"file_path": str(outside)}}},
        {"text": "Read it."}]}
    with mock_anthropic.serve(script) as mock:
        use_real_claude(mock)
        row = await engine.run_session(spec(git_repo, approvals="read_only"))

        assert row.state == "completed", row.reason
        events = [r.event for r in await engine.session_events(row.id)]
        (question,) = [e for e in events if isinstance(e, NeedsInput)]
        assert (question.tool, question.read_only) == ("Read", True)
        withdrawn = [e for e in events if isinstance(e, InputWithdrawn)]
        assert [w.reason for w in withdrawn] == ["answered by the read_only policy: Allow once"]
        states = [e.state for e in events if e.kind == "state_changed"]
        assert "needs_input" not in states
        (result,) = tool_results(mock)
        assert "RELAY-READ-7731" in json.dumps(result)
