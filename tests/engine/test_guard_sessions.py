"""The engine gives a Relay session its guard: the project's environments on the board and the
session's worktree. A real session of the anthropic runtime (loopback Messages mock, real
commands in a real git worktree): a verdict is in the session's stream and audited."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from relay.core.events import (
    GuardDecision,
    InputWithdrawn,
    NeedsInput,
    PermissionDenied,
    ToolResult,
)
from relay.core.guard import Environment, EnvRefs, PolicyGuard
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from tests.conftest import make_repo
from tests.fakes import mock_anthropic
from tests.runtimes.http.helpers import KEY, of


def _turn(i: int, command: str) -> dict[str, Any]:
    return {"text": f"Step {i}.", "tool_use": {"id": f"toolu_{i}", "name": "run_command",
                                               "input": {"command": command}},
            "usage": {"input_tokens": 10, "output_tokens": 5}}


SCRIPT = {"turns": [_turn(1, "env AWS_PROFILE=prod touch prod.txt"),
                    _turn(2, "env AWS_PROFILE=staging touch staging.txt"),
                    _turn(3, "touch fine.txt"),
                    {"text": "Done.", "usage": {"input_tokens": 10, "output_tokens": 5}}]}


async def test_the_engine_guards_a_session_from_the_board(
        engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# x\n"})
    project = await engine.board.project_for(repo)
    await engine.board.set_environment(project.slug, Environment(
        "prod", "live", "read", EnvRefs(aws_profiles=("prod",))))
    await engine.board.set_environment(project.slug, Environment(
        "staging", "test", "ask", EnvRefs(aws_profiles=("staging",))))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with mock_anthropic.serve(SCRIPT) as mock:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", mock.base_url)
        # approvals "deny": the guard's question is answered "reject" by the policy
        row = await engine.run_session(SessionSpec(repo=repo, task="do it", runtime="anthropic",
                                                   model="claude-sonnet-4-5", approvals="deny"))
    assert row.state == "completed", row.reason
    worktree = Path(row.workdir or "")
    assert (worktree / "fine.txt").exists()
    assert not (worktree / "prod.txt").exists()
    assert not (worktree / "staging.txt").exists()
    events = [r.event for r in await engine.session_events(row.id)]
    decisions = of(events, GuardDecision)
    assert [(d.decision, d.environment, d.where) for d in decisions] == [
        ("deny", "prod", "http"), ("ask", "staging", "http")]
    assert decisions[0].summary == "run_command: env AWS_PROFILE=prod touch prod.txt"
    (question,) = of(events, NeedsInput)
    assert "staging" in question.prompt
    assert any(isinstance(e, InputWithdrawn) and "deny policy" in e.reason for e in events)
    assert [d.call_id for d in of(events, PermissionDenied)] == ["toolu_1", "toolu_2"]
    assert [r.is_error for r in of(events, ToolResult)] == [True, True, False]
    await engine.close()  # drains the audit trail
    entries = [json.loads(line) for line in
               engine.config.audit_path.read_text("utf-8").splitlines()]
    audited = [e for e in entries if "guard_decision" in json.dumps(e)]
    assert len(audited) == 2
    assert all(row.id in json.dumps(e) for e in audited)


async def test_a_repository_that_is_no_project_still_has_the_worktree_rules(
        engine: Engine, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    spec = SessionSpec(repo=repo, task="x", runtime="anthropic")
    guard = await engine.board.session_guard(spec, repo)
    assert isinstance(guard, PolicyGuard)
    assert guard.policy.environments == ()
    verdict = guard.check("Bash", {"command": "rm -rf /etc"}, str(repo))
    assert verdict is not None
    assert verdict.rule == "fs.outside_worktree"
