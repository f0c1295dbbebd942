"""Talking to Codex (issue 22) against the fake ``codex``: interrupt, fork, no steer.

The real CLI's side of each (the conversation the mock sees) is in
tests/integration/test_codex_talk_real.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.core.capabilities import Cap, Capabilities, Level
from relay.core.errors import ContractError, UnsupportedCapabilityError
from relay.core.events import AgentEvent, SessionStarted
from relay.runtimes.base import INTERRUPTED_REASON, RunRequest
from relay.runtimes.codex import CodexAdapter, find_rollout
from relay.runtimes.codex_app import (
    app_server_capabilities,
    exec_item,
    exec_usage,
    uses_app_server,
)
from tests.runtimes.run_helpers import collect, ended, invocations, only

F_THREAD = "01a22bee-46dd-78e3-889b-43b6b667eb33"  # thread id recorded in f_resume_by_id


@pytest.fixture
def fake_codex(fakes_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.setenv("TZ", "UTC")
    log = tmp_path / "fake-codex.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.delenv("RELAY_FAKE_SCENARIO", raising=False)
    return log


def test_the_table_says_what_codex_exec_can_do() -> None:
    caps = Capabilities.for_runtime("codex")
    assert caps.level(Cap.INTERRUPT) == Level.PARTIAL  # the turn's own work is lost
    assert caps.level(Cap.FORK) == Level.PARTIAL       # the whole thread only
    assert caps.level(Cap.STEER) == Level.NO


async def test_interrupt_mid_turn_ends_interrupted_and_resume_continues_the_thread(
        fake_codex: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "e8_sigint_midturn")  # waits mid-turn
    adapter = CodexAdapter()
    events: list[AgentEvent] = []
    async for event in adapter.run(RunRequest(prompt="long job", cwd=git_repo)):
        events.append(event)
        if isinstance(event, SessionStarted):
            await adapter.interrupt()
    end = ended(events)
    # SIGINT: codex aborts the turn and exits 1 — an interrupted (resumable) run, not a
    # cancelled or failed one
    assert (end.outcome, end.reason, end.exit_code) == ("interrupted", INTERRUPTED_REASON, 1)
    thread = adapter.thread_id
    assert thread is not None
    rollout = find_rollout(tmp_path / "codex-home", thread)
    assert rollout is not None
    assert '"turn_aborted"' in rollout.read_text(encoding="utf-8")

    resumed = await collect(CodexAdapter(), RunRequest(
        prompt="go on", cwd=git_repo, resume_id=thread,
        extra_env={"RELAY_FAKE_SCENARIO": "f_resume_by_id/run2"}))
    argv = invocations(fake_codex)[-1]["argv"]
    assert argv[1:3] == ["exec", "resume"]
    assert argv[-2:] == [thread, "go on"]
    assert only(resumed, SessionStarted)[0].agent_session_id == thread
    assert ended(resumed).outcome == "completed"


async def test_a_stop_is_still_a_cancel(fake_codex: Path, git_repo: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "e8_sigint_midturn")
    adapter = CodexAdapter()
    events: list[AgentEvent] = []
    async for event in adapter.run(RunRequest(prompt="x", cwd=git_repo)):
        events.append(event)
        if isinstance(event, SessionStarted):
            await adapter.stop(grace=10)
    assert ended(events).outcome == "cancelled"


async def test_fork_runs_exec_fork_and_reports_the_new_thread(
        fake_codex: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "f_resume_by_id")
    parent = CodexAdapter()
    await collect(parent, RunRequest(prompt="Remember", cwd=git_repo))
    assert parent.thread_id == F_THREAD
    fork = CodexAdapter()
    events = await collect(fork, RunRequest(prompt="Now a variant", cwd=git_repo,
                                            resume_id=F_THREAD, fork=True))
    argv = invocations(fake_codex)[-1]["argv"]
    assert argv[1:4] == ["exec", "fork", "--json"]
    assert argv[-2:] == [F_THREAD, "Now a variant"]
    # like exec resume, exec fork has no --sandbox: the policy goes in as -c
    assert argv[argv.index("-c"):argv.index("-c") + 2] == ["-c", 'sandbox_mode="workspace-write"']
    started = only(events, SessionStarted)[0]
    assert started.agent_session_id not in (None, F_THREAD)
    assert fork.thread_id == started.agent_session_id
    assert ended(events).outcome == "completed"


def test_a_fork_cannot_be_cut_at_a_turn(fake_codex: Path, git_repo: Path) -> None:
    adapter = CodexAdapter()
    assert CodexAdapter.fork_anchor(F_THREAD, 1, git_repo, {}) is None
    with pytest.raises(ContractError, match="whole thread"):
        adapter.preflight(RunRequest(prompt="x", cwd=git_repo, resume_id=F_THREAD, fork=True,
                                     resume_at="turn-1"))
    with pytest.raises(ContractError, match="parent's thread id"):
        adapter.preflight(RunRequest(prompt="x", cwd=git_repo, fork=True))


async def test_steer_is_refused_with_the_capability(git_repo: Path) -> None:
    with pytest.raises(UnsupportedCapabilityError) as caught:
        await CodexAdapter().steer("now")
    assert "steer" in caught.value.message


def test_app_server_is_opt_in_and_widens_steer_and_interrupt() -> None:
    assert not uses_app_server({})
    assert uses_app_server({"RELAY_CODEX_PROTOCOL": "App-Server"})
    caps = app_server_capabilities(Capabilities.for_runtime("codex"))
    assert (caps.level(Cap.STEER), caps.level(Cap.INTERRUPT)) == (Level.YES, Level.YES)
    assert caps.level(Cap.FORK) == Level.PARTIAL


def test_app_server_items_read_as_exec_items() -> None:
    command = exec_item({"type": "commandExecution", "id": "c1", "command": "ls",
                         "aggregatedOutput": "a\n", "exitCode": 0, "status": "completed"})
    assert command == {"id": "c1", "type": "command_execution", "status": "completed",
                       "command": "ls", "aggregated_output": "a\n", "exit_code": 0}
    change = exec_item({"type": "fileChange", "id": "f1", "status": "inProgress",
                        "changes": [{"path": "a.txt", "kind": {"type": "add"}, "diff": ""}]})
    assert change == {"id": "f1", "type": "file_change", "status": "in_progress",
                      "changes": [{"path": "a.txt", "kind": "add"}]}
    reasoning = exec_item({"type": "reasoning", "id": "r", "summary": ["a", "b"]})
    assert reasoning is not None
    assert reasoning["text"] == "a\nb"
    assert exec_item({"type": "userMessage", "id": "u"}) is None
    assert exec_usage({"inputTokens": 5, "cachedInputTokens": 1, "outputTokens": 2,
                       "reasoningOutputTokens": 0})["input_tokens"] == 5
