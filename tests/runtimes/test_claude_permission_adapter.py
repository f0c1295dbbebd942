"""The Claude adapter merges its permission prompts into the run's events and answers them
(a fake ``claude`` that asks like 2.1.197: tests/fakes/claude_asks.py; the real CLI is in
tests/integration/test_claude_permission_real.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from relay.core.events import (
    AgentEvent,
    InputWithdrawn,
    NeedsInput,
    PermissionDenied,
    SessionEnded,
    SessionStarted,
)
from relay.core.models import PermissionPolicy
from relay.runtimes.base import RunRequest
from relay.runtimes.claude import ClaudeAdapter
from relay.runtimes.claude_permission import PROMPT_TOOL, STOPPED

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the bridge is Unix only")

FAKE = Path(__file__).resolve().parents[1] / "fakes" / "claude_asks.py"


@pytest.fixture
def adapter(tmp_path: Path) -> ClaudeAdapter:
    exe = tmp_path / "claude"
    exe.write_text(f"#!{sys.executable}\nimport runpy\nrunpy.run_path({str(FAKE)!r}, "
                   "run_name='__main__')\n", encoding="utf-8")
    exe.chmod(0o755)
    return ClaudeAdapter(env={**os.environ, "RELAY_CLAUDE_BIN": str(exe),
                              "RELAY_FAKE_ASK_LOG": str(tmp_path / "decisions.jsonl")})


def request(cwd: Path, approvals: str = "ask") -> RunRequest:
    return RunRequest(prompt="Write asked.txt", cwd=cwd, permission=PermissionPolicy.READ_ONLY,
                      options={"approvals": approvals}, inactivity_timeout=60)


async def run_answering(adapter: ClaudeAdapter, req: RunRequest,
                        option: str | None) -> list[AgentEvent]:
    """Run to the end; answer the question with ``option`` (None: stop the run instead)."""
    events: list[AgentEvent] = []
    async for event in adapter.run(req):
        events.append(event)
        if isinstance(event, NeedsInput):
            if option is None:
                await adapter.stop(grace=5)
            else:
                await adapter.answer_input(event.request_id, option)
    return events


def decisions(tmp_path: Path) -> list[dict[str, object]]:
    log = tmp_path / "decisions.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


async def test_allowed_the_write_happens(adapter: ClaudeAdapter, git_repo: Path,
                                         tmp_path: Path) -> None:
    events = await run_answering(adapter, request(git_repo), "allow")

    kinds = [e.kind for e in events]
    assert kinds[0] == "session_started"
    assert kinds[-1] == "session_ended"
    started = events[0]
    assert isinstance(started, SessionStarted)
    (question,) = [e for e in events if isinstance(e, NeedsInput)]
    assert (question.request_id, question.tool, question.runtime) == (
        "toolu_fake_write_1", "Write", "claude")
    assert kinds.index("session_started") < kinds.index("needs_input") < kinds.index("tool_result")
    ended = events[-1]
    assert isinstance(ended, SessionEnded)
    assert ended.outcome == "completed"
    assert (git_repo / "asked.txt").read_text() == "allowed\n"
    assert [d["behavior"] for d in decisions(tmp_path)] == ["allow"]
    assert not [e for e in events if isinstance(e, PermissionDenied)]


async def test_rejected_nothing_is_written_and_claude_goes_on(adapter: ClaudeAdapter,
                                                              git_repo: Path) -> None:
    events = await run_answering(adapter, request(git_repo), "reject")

    assert not (git_repo / "asked.txt").exists()
    denied = [e for e in events if isinstance(e, PermissionDenied)]
    assert [d.tool for d in denied] == ["Write"]
    ended = events[-1]
    assert isinstance(ended, SessionEnded)
    assert ended.outcome == "completed"


async def test_stopping_while_claude_asks_denies_and_withdraws(adapter: ClaudeAdapter,
                                                               git_repo: Path,
                                                               tmp_path: Path) -> None:
    events = await run_answering(adapter, request(git_repo), None)

    (question,) = [e for e in events if isinstance(e, NeedsInput)]
    withdrawn = [e for e in events if isinstance(e, InputWithdrawn)]
    assert [w.request_id for w in withdrawn] == [question.request_id]
    assert events.index(withdrawn[0]) < len(events) - 1  # before the SessionEnded
    ended = events[-1]
    assert isinstance(ended, SessionEnded)
    assert ended.outcome == "cancelled"
    assert not (git_repo / "asked.txt").exists()
    assert decisions(tmp_path) in ([], [{"behavior": "deny", "message": STOPPED}])


def test_the_flags_reach_claude_only_when_it_should_ask(adapter: ClaudeAdapter,
                                                        git_repo: Path) -> None:
    argv = adapter.build_argv(request(git_repo))
    assert "--permission-prompt-tool" not in argv  # only while run() has a broker open
    adapter._bridge_flags = ["--mcp-config", "{}", "--permission-prompt-tool", PROMPT_TOOL]
    assert adapter.build_argv(request(git_repo))[-2:] == ["--permission-prompt-tool",
                                                          PROMPT_TOOL]


async def test_deny_policy_runs_without_a_bridge(adapter: ClaudeAdapter, git_repo: Path) -> None:
    events = [e async for e in adapter.run(request(git_repo, approvals="deny"))]
    # the fake needs the bridge: without it, it refuses like a usage error
    ended = events[-1]
    assert isinstance(ended, SessionEnded)
    assert ended.outcome == "failed"
    assert "needs --mcp-config" in (ended.reason or "")
