"""The guard where Relay decides a tool call itself: the HTTP tool loop (the loopback
Messages mock, real commands), ACP permission requests (the fake ACP agent) and Claude's
permission bridge (the fake ``claude`` that asks like 2.1.197)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from relay.core.events import (
    AgentEvent,
    GuardDecision,
    NeedsInput,
    Notice,
    PermissionDenied,
    ToolResult,
)
from relay.core.guard import Environment, EnvRefs, GuardPolicy, PolicyGuard, Verdict
from relay.core.models import PermissionPolicy
from relay.runtimes.acp import AcpAdapter
from relay.runtimes.base import RunRequest
from relay.runtimes.claude import ClaudeAdapter
from relay.runtimes.guarded import check_call
from relay.runtimes.http.loop import GUARD_ALLOW, GUARD_REJECT
from relay.runtimes.registry import make_adapter
from tests.conftest import FAKES_DIR, make_repo
from tests.fakes import mock_anthropic
from tests.runtimes.http.helpers import KEY, of

ENVS = (Environment("prod", "live", "read", EnvRefs(aws_profiles=("prod",))),
        Environment("staging", "test", "ask", EnvRefs(aws_profiles=("staging",))),
        Environment("ops", "live", "full", EnvRefs(aws_profiles=("ops",))))


def guard_for(worktree: Path) -> PolicyGuard:
    return PolicyGuard(GuardPolicy(ENVS, worktree=str(worktree)))


class Fixed:
    """A guard with one answer (the ACP fake's only call is an edit)."""

    def __init__(self, verdict: Verdict | None) -> None:
        self.verdict = verdict
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def check(self, tool_name: str, tool_input: Mapping[str, Any],
              cwd: str | None) -> Verdict | None:
        self.seen.append((tool_name, dict(tool_input)))
        return self.verdict


# -- the HTTP tool loop ------------------------------------------------------------------

def _command_turns(command: str) -> list[dict[str, Any]]:
    return [{"text": "Running it.", "tool_use": {"id": "toolu_1", "name": "run_command",
                                                 "input": {"command": command}},
             "usage": {"input_tokens": 10, "output_tokens": 5}},
            {"text": "Done.", "usage": {"input_tokens": 10, "output_tokens": 5}}]


async def _http_run(cwd: Path, command: str, answer: str | None = None,
                    permission: PermissionPolicy = PermissionPolicy.WORKSPACE,
                    ) -> tuple[list[AgentEvent], list[dict[str, Any]]]:
    with mock_anthropic.serve(_command_turns(command)) as mock:
        adapter = make_adapter("anthropic", {"ANTHROPIC_API_KEY": KEY,
                                             "ANTHROPIC_BASE_URL": mock.base_url,
                                             "PATH": os.environ["PATH"]})
        request = RunRequest(prompt="do it", cwd=cwd, permission=permission,
                             guard=guard_for(cwd))
        events: list[AgentEvent] = []
        async for event in adapter.run(request):
            events.append(event)
            if isinstance(event, NeedsInput) and answer is not None:
                await adapter.answer_input(event.request_id, answer)
        return events, mock.message_requests()


def _results_sent(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for m in requests[-1]["body"]["messages"] for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"]


async def test_http_deny_refuses_the_command_and_tells_the_model(tmp_path: Path) -> None:
    cwd = make_repo(tmp_path / "r")
    outside = tmp_path / "keep"
    outside.mkdir()
    events, requests = await _http_run(cwd, f"rm -rf {outside}", permission=PermissionPolicy.FULL)
    assert outside.is_dir()  # never ran
    (decision,) = of(events, GuardDecision)
    assert (decision.decision, decision.where, decision.rule) == ("deny", "http",
                                                                  "fs.outside_worktree")
    assert decision.summary == f"run_command: rm -rf {outside}"
    (denied,) = of(events, PermissionDenied)
    assert denied.call_id == "toolu_1"
    assert "outside the worktree" in denied.detail
    result = of(events, ToolResult)[0]
    assert result.is_error
    assert result.output.startswith("Refused: Relay's guard refused this call")
    sent = _results_sent(requests)
    assert "Relay's guard refused this call" in json.dumps(sent)


async def test_http_env_level_read_denies_a_change(tmp_path: Path) -> None:
    cwd = make_repo(tmp_path / "r")
    events, _ = await _http_run(cwd, "env AWS_PROFILE=prod touch made.txt")
    assert not (cwd / "made.txt").exists()
    (decision,) = of(events, GuardDecision)
    assert (decision.decision, decision.environment) == ("deny", "prod")


@pytest.mark.parametrize(("answer", "made"), [(GUARD_ALLOW, True), (GUARD_REJECT, False)])
async def test_http_ask_is_a_question_and_its_answer_decides(tmp_path: Path, answer: str,
                                                             made: bool) -> None:
    cwd = make_repo(tmp_path / "r")
    events, _ = await _http_run(cwd, "env AWS_PROFILE=staging touch made.txt", answer=answer)
    assert (cwd / "made.txt").exists() is made
    (decision,) = of(events, GuardDecision)
    assert (decision.decision, decision.environment) == ("ask", "staging")
    (question,) = of(events, NeedsInput)
    assert question.prompt.startswith("Relay's guard asks:")
    assert question.read_only is False
    assert {o.kind for o in question.options} == {"allow_once", "reject_once"}
    assert bool(of(events, PermissionDenied)) is not made
    assert of(events, ToolResult)[0].is_error is not made


async def test_http_warn_is_a_notice_and_the_call_runs(tmp_path: Path) -> None:
    cwd = make_repo(tmp_path / "r")
    events, _ = await _http_run(cwd, "env AWS_PROFILE=ops touch made.txt")
    assert (cwd / "made.txt").exists()
    (decision,) = of(events, GuardDecision)
    assert decision.decision == "warn"
    assert any(isinstance(e, Notice) and e.category == "warning" and "ops" in e.message
               for e in events)
    assert not of(events, PermissionDenied)


async def test_http_without_a_guard_nothing_changes(tmp_path: Path) -> None:
    cwd = make_repo(tmp_path / "r")
    with mock_anthropic.serve(_command_turns("env AWS_PROFILE=prod touch made.txt")) as mock:
        adapter = make_adapter("anthropic", {"ANTHROPIC_API_KEY": KEY,
                                             "ANTHROPIC_BASE_URL": mock.base_url,
                                             "PATH": os.environ["PATH"]})
        events = [e async for e in adapter.run(RunRequest(prompt="x", cwd=cwd))]
    assert (cwd / "made.txt").exists()
    assert not of(events, GuardDecision)


def test_a_failing_guard_is_a_warning_not_a_failed_run() -> None:
    class Broken:
        def check(self, tool_name: str, tool_input: Mapping[str, Any],
                  cwd: str | None) -> Verdict | None:
            raise ValueError("boom")

    guarded = check_call(Broken(), runtime="anthropic", where="http", tool="run_command",
                         tool_input={"command": "ls"}, cwd=None)
    assert guarded is not None
    assert guarded.verdict.decision == "warn"
    assert isinstance(guarded.events[0], Notice)
    assert "boom" in guarded.events[0].message


# -- ACP permission requests -------------------------------------------------------------

ACP_FAKE = FAKES_DIR / "bin" / "fake-acp-agent"


@pytest.fixture
def acp_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RELAY_ACP_BIN", str(ACP_FAKE))
    monkeypatch.setenv("RELAY_FAKE_ACP_HOME", str(tmp_path / "acp-home"))
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "permission")
    log = tmp_path / "fake-acp.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    return log


async def _acp_run(cwd: Path, guard: Any, answer: str | None) -> list[AgentEvent]:
    adapter = AcpAdapter()
    events: list[AgentEvent] = []
    async for event in adapter.run(RunRequest(prompt="write", cwd=cwd, guard=guard)):
        events.append(event)
        if isinstance(event, NeedsInput) and answer is not None:
            await adapter.answer_input(event.request_id, answer)
    return events


async def test_acp_deny_answers_reject_without_asking(acp_log: Path, git_repo: Path,
                                                      tmp_path: Path) -> None:
    guard = Fixed(Verdict("deny", "edit deletes approved.txt, outside the worktree: refused.",
                          "fs.outside_worktree"))
    events = await _acp_run(git_repo, guard, answer="allow-once")
    assert not (git_repo / "approved.txt").exists()
    assert not of(events, NeedsInput)
    (decision,) = of(events, GuardDecision)
    assert (decision.decision, decision.where, decision.tool) == ("deny", "acp", "edit")
    (denied,) = of(events, PermissionDenied)
    assert "outside the worktree" in denied.detail
    sent = [json.loads(line) for line in acp_log.read_text().splitlines()]
    answer = next(m for m in sent if m.get("id") == 1000)
    assert answer["result"] == {"outcome": {"outcome": "selected", "optionId": "reject-once"}}


async def test_acp_ask_is_the_question_with_the_reason(acp_log: Path, git_repo: Path) -> None:
    guard = Fixed(Verdict("ask", "edit of approved.txt reaches staging", "env.test", "staging"))
    events = await _acp_run(git_repo, guard, answer="allow-once")
    (question,) = of(events, NeedsInput)
    assert question.prompt.startswith("Relay's guard asks: edit of approved.txt")
    assert question.read_only is False
    assert (git_repo / "approved.txt").exists()  # the owner allowed it
    assert guard.seen == [("edit", {"locations": [{"path": "approved.txt"}]})]
    assert of(events, GuardDecision)[0].where == "acp"


async def test_acp_warn_is_a_notice_and_the_question_stays(acp_log: Path,
                                                           git_repo: Path) -> None:
    guard = Fixed(Verdict("warn", "changes live ops", "env.test", "ops"))
    events = await _acp_run(git_repo, guard, answer="allow-once")
    assert [e.decision for e in of(events, GuardDecision)] == ["warn"]
    assert of(events, NeedsInput)[0].prompt == "Allow Write approved.txt?"
    assert any(isinstance(e, Notice) and "changes live ops" in e.message for e in events)


# -- Claude's permission bridge ----------------------------------------------------------

CLAUDE_FAKE = FAKES_DIR / "claude_asks.py"
bridge_only = pytest.mark.skipif(sys.platform == "win32", reason="the bridge is Unix only")


def _claude(tmp_path: Path, ask: dict[str, Any] | None = None) -> ClaudeAdapter:
    exe = tmp_path / "claude"
    exe.write_text(f"#!{sys.executable}\nimport runpy\nrunpy.run_path({str(CLAUDE_FAKE)!r}, "
                   "run_name='__main__')\n", encoding="utf-8")
    exe.chmod(0o755)
    env = {**os.environ, "RELAY_CLAUDE_BIN": str(exe),
           "RELAY_FAKE_ASK_LOG": str(tmp_path / "decisions.jsonl")}
    if ask is not None:
        env["RELAY_FAKE_ASK"] = json.dumps(ask)
    return ClaudeAdapter(env=env)


async def _claude_run(adapter: ClaudeAdapter, cwd: Path, guard: Any,
                      answer: str | None) -> list[AgentEvent]:
    request = RunRequest(prompt="Write asked.txt", cwd=cwd,
                         permission=PermissionPolicy.WORKSPACE, options={"approvals": "ask"},
                         inactivity_timeout=60, guard=guard)
    events: list[AgentEvent] = []
    async for event in adapter.run(request):
        events.append(event)
        if isinstance(event, NeedsInput) and answer is not None:
            await adapter.answer_input(event.request_id, answer)
    return events


def _decisions(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "decisions.jsonl").read_text().splitlines()]


@bridge_only
async def test_claude_bridge_deny_answers_claude_with_the_reason(git_repo: Path,
                                                                 tmp_path: Path) -> None:
    adapter = _claude(tmp_path)  # a Write of <repo>/asked.txt
    guard = Fixed(Verdict("deny", "Write replaces asked.txt, outside the worktree: refused.",
                          "fs.outside_worktree"))
    events = await _claude_run(adapter, git_repo, guard, answer="allow")
    assert not (git_repo / "asked.txt").exists()
    assert not of(events, NeedsInput)
    (decision,) = of(events, GuardDecision)
    assert (decision.decision, decision.where, decision.tool) == ("deny", "claude_bridge",
                                                                  "Write")
    (sent,) = _decisions(tmp_path)
    assert sent["behavior"] == "deny"
    assert sent["message"].startswith("Relay's guard refused this call:")
    assert "outside the worktree" in sent["message"]
    # Claude reports the refused call itself (permission_denials): counted once
    assert len(of(events, PermissionDenied)) == 1


@bridge_only
async def test_claude_bridge_ask_is_a_question_no_always_skips(git_repo: Path,
                                                               tmp_path: Path) -> None:
    ask = {"name": "Bash", "id": "toolu_push", "input": {"command": "git push --force"}}
    adapter = _claude(tmp_path, ask)
    events = await _claude_run(adapter, git_repo, guard_for(git_repo), answer="reject")
    (question,) = of(events, NeedsInput)
    assert question.prompt.startswith("Relay's guard asks: git push with --force")
    assert question.read_only is False
    (decision,) = of(events, GuardDecision)
    assert (decision.decision, decision.rule) == ("ask", "git.force_push")
    assert [d["behavior"] for d in _decisions(tmp_path)] == ["deny"]


@bridge_only
async def test_claude_bridge_leaves_unguarded_calls_alone(git_repo: Path,
                                                          tmp_path: Path) -> None:
    adapter = _claude(tmp_path)
    events = await _claude_run(adapter, git_repo, guard_for(git_repo), answer="allow")
    assert (git_repo / "asked.txt").read_text() == "allowed\n"
    assert not of(events, GuardDecision)
    assert of(events, NeedsInput)[0].prompt.startswith("Allow Write")
