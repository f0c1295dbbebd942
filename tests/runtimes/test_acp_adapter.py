"""AcpAdapter end to end against the fake ACP agent (tests/fakes/bin/fake-acp-agent)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from relay.core.capabilities import Cap, Level
from relay.core.errors import CliNotFoundError, RelayError
from relay.core.events import (
    AgentError,
    AgentEvent,
    AssistantText,
    InputWithdrawn,
    NeedsInput,
    Notice,
    PermissionDenied,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
)
from relay.core.models import PermissionPolicy
from relay.runtimes.acp import AcpAdapter
from relay.runtimes.acp_agents import (
    ClaudeAcpAdapter,
    CodexAcpAdapter,
    GeminiAcpAdapter,
    package_version,
)
from relay.runtimes.base import RunRequest
from tests.conftest import FAKES_DIR
from tests.runtimes.run_helpers import ended, only

FAKE = FAKES_DIR / "bin" / "fake-acp-agent"


@pytest.fixture
def fake_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake as RELAY_ACP_BIN, its state and message log under tmp_path."""
    monkeypatch.setenv("RELAY_ACP_BIN", str(FAKE))
    monkeypatch.setenv("RELAY_FAKE_ACP_HOME", str(tmp_path / "acp-home"))
    log = tmp_path / "fake-acp.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.delenv("RELAY_FAKE_SCENARIO", raising=False)
    return log


def received(log: Path) -> list[dict[str, Any]]:
    """Every message the fake agent received."""
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


async def collect(adapter: AcpAdapter, request: RunRequest,
                  answer: str | None = None) -> list[AgentEvent]:
    """Run to the end; answer each NeedsInput with ``answer`` (None: leave it open)."""
    events: list[AgentEvent] = []
    async for event in adapter.run(request):
        events.append(event)
        if isinstance(event, NeedsInput) and answer is not None:
            await adapter.answer_input(event.request_id, answer)
    return events


def scenario(monkeypatch: pytest.MonkeyPatch, name: str) -> AcpAdapter:
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", name)
    return AcpAdapter()


async def test_a_turn_streams_text_thoughts_plan_and_tools(fake_log: Path, git_repo: Path) -> None:
    adapter = AcpAdapter()
    events = await collect(adapter, RunRequest(prompt="Say hello", cwd=git_repo))
    started = only(events, SessionStarted)[0]
    assert str(started.agent_session_id).startswith("sess_")
    assert started.version == "0.1.0"
    texts = only(events, AssistantText)
    assert [(t.text, t.reasoning) for t in texts] == [
        ("Let me look at the files.", True), ("Hello from the fake ACP agent.", False)]
    calls = {c.call_id: c for c in only(events, ToolCall)}
    assert calls["call_1"].name == "read"
    assert calls["call_1"].input["locations"] == ["README.md"]
    plan = calls["acp-plan-1"]
    assert plan.name == "TodoWrite"
    assert [t["status"] for t in plan.input["todos"]] == ["in_progress", "pending"]
    results = {r.call_id: r for r in only(events, ToolResult)}
    assert (results["call_1"].output, results["call_1"].is_error) == ("# demo", False)
    turn = only(events, TurnCompleted)[0]
    assert turn.usage.is_unknown  # ACP has no usage: None, never zero
    end = ended(events)
    assert (end.outcome, end.result_text, end.exit_code) == (
        "completed", "Hello from the fake ACP agent.", 0)
    assert not any(e.replay for e in events)


async def test_initialize_declares_no_fs_or_terminal_and_new_session_uses_the_cwd(
        fake_log: Path, git_repo: Path) -> None:
    await collect(AcpAdapter(), RunRequest(prompt="hi", cwd=git_repo))
    sent = {m["method"]: m["params"] for m in received(fake_log) if "method" in m}
    assert sent["initialize"] == {"protocolVersion": 1, "clientCapabilities": {
        "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}}
    assert sent["session/new"] == {"cwd": str(git_repo.resolve()), "mcpServers": []}
    assert sent["session/prompt"]["prompt"] == [{"type": "text", "text": "hi"}]


async def test_permission_becomes_needs_input_and_approval_writes(
        fake_log: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = scenario(monkeypatch, "permission")
    events = await collect(adapter, RunRequest(prompt="write", cwd=git_repo), answer="allow-once")
    ask = only(events, NeedsInput)[0]
    assert (ask.about, ask.tool, ask.read_only) == ("permission", "Write approved.txt", False)
    assert [(o.id, o.label, o.kind) for o in ask.options] == [
        ("allow-once", "Allow once", "allow_once"),
        ("allow-always", "Always allow", "allow_always"),
        ("reject-once", "Reject", "reject_once"),
        ("reject-always", "Always reject", "reject_always")]
    assert (git_repo / "approved.txt").read_text() == "approved\n"
    answers = [m for m in received(fake_log) if m.get("id") == 1000]
    assert answers == [{"jsonrpc": "2.0", "id": 1000, "result": {
        "outcome": {"outcome": "selected", "optionId": "allow-once"}}}]
    assert ended(events).outcome == "completed"
    assert not only(events, InputWithdrawn)
    assert not only(events, PermissionDenied)  # allowed: nothing was refused


@pytest.mark.parametrize("answer", ["reject-once", "reject-always"])
async def test_rejection_writes_nothing_and_is_a_refused_call(
        fake_log: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch, answer: str) -> None:
    adapter = scenario(monkeypatch, "permission")
    events = await collect(adapter, RunRequest(prompt="write", cwd=git_repo), answer=answer)
    assert not (git_repo / "approved.txt").exists()
    assert only(events, ToolResult)[0].is_error is True
    assert ended(events).result_text == "Permission was refused; nothing written."
    (denied,) = only(events, PermissionDenied)  # counted in the session's end state
    asked = only(events, NeedsInput)[0]
    assert (denied.tool, denied.call_id) == ("Write approved.txt", only(events, ToolCall)[0].call_id)
    assert denied.detail.startswith(asked.prompt)


async def test_bad_answers_are_clear_errors(fake_log: Path, git_repo: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = scenario(monkeypatch, "permission")
    events: list[AgentEvent] = []
    async for event in adapter.run(RunRequest(prompt="write", cwd=git_repo)):
        events.append(event)
        if isinstance(event, NeedsInput):
            with pytest.raises(RelayError, match="not an option"):
                await adapter.answer_input(event.request_id, "maybe")
            with pytest.raises(RelayError, match="not text"):
                await adapter.answer_input(event.request_id, text="yes please")
            with pytest.raises(RelayError, match="not waiting"):
                await adapter.answer_input("nope:1", "allow-once")
            await adapter.answer_input(event.request_id, None)  # neither: cancelled
            with pytest.raises(RelayError, match="not waiting"):
                await adapter.answer_input(event.request_id, "allow-once")
    assert not (git_repo / "approved.txt").exists()
    answer = next(m for m in received(fake_log) if m.get("id") == 1000)
    assert answer["result"] == {"outcome": {"outcome": "cancelled"}}
    assert ended(events).outcome == "completed"


async def test_stop_mid_permission_cancels_it_and_the_run_unwinds(
        fake_log: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = scenario(monkeypatch, "permission")
    events: list[AgentEvent] = []
    stopper: asyncio.Task[None] | None = None
    async for event in adapter.run(RunRequest(prompt="write", cwd=git_repo)):
        events.append(event)
        if isinstance(event, NeedsInput):
            stopper = asyncio.create_task(adapter.stop(grace=10.0))
    assert stopper is not None
    await stopper
    ask = only(events, NeedsInput)[0]
    withdrawn = only(events, InputWithdrawn)
    assert [w.request_id for w in withdrawn] == [ask.request_id]
    msgs = received(fake_log)
    assert any(m.get("method") == "session/cancel" for m in msgs)
    answer = next(m for m in msgs if m.get("id") == 1000)
    assert answer["result"] == {"outcome": {"outcome": "cancelled"}}
    # the agent unwound the turn itself (stopReason cancelled, after its tool update)
    assert only(events, ToolResult)[0].is_error is True
    end = ended(events)
    assert (end.outcome, end.reason) == ("cancelled", "stopped by Relay")
    assert not (git_repo / "approved.txt").exists()


async def test_stop_while_the_agent_works(fake_log: Path, git_repo: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = scenario(monkeypatch, "hang")
    events: list[AgentEvent] = []
    stopper: asyncio.Task[None] | None = None
    async for event in adapter.run(RunRequest(prompt="work", cwd=git_repo)):
        events.append(event)
        if isinstance(event, ToolCall):
            stopper = asyncio.create_task(adapter.stop(grace=10.0))
    assert stopper is not None
    await stopper
    assert any(m.get("method") == "session/cancel" for m in received(fake_log))
    assert only(events, AssistantText)[0].text == "Working on it…"
    assert only(events, ToolResult)[0].is_error is True  # updates after the cancel still count
    assert ended(events).outcome == "cancelled"


async def test_a_request_left_open_at_the_end_of_the_turn_is_withdrawn(
        fake_log: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = scenario(monkeypatch, "withdraw")
    events = await collect(adapter, RunRequest(prompt="x", cwd=git_repo))
    ask = only(events, NeedsInput)[0]
    withdrawn = only(events, InputWithdrawn)[0]
    assert (withdrawn.request_id, withdrawn.reason) == (ask.request_id, "the turn ended")
    assert ended(events).outcome == "completed"
    with pytest.raises(RelayError):
        await adapter.answer_input(ask.request_id, "allow-once")


async def test_load_replays_the_conversation_marked_replay(fake_log: Path, git_repo: Path) -> None:
    first = await collect(AcpAdapter(), RunRequest(prompt="first prompt", cwd=git_repo))
    sid = only(first, SessionStarted)[0].agent_session_id
    assert sid
    events = await collect(AcpAdapter(), RunRequest(prompt="again", cwd=git_repo, resume_id=sid))
    assert only(events, SessionStarted)[0].agent_session_id == sid
    replayed = [e for e in events if e.replay]
    assert [type(e) for e in replayed] == [Notice, AssistantText]
    assert replayed[0].message == "Earlier prompt: first prompt"  # type: ignore[union-attr]
    live = [e for e in events if not e.replay]
    assert [t.text for t in only(live, AssistantText) if not t.reasoning] == [
        "Hello from the fake ACP agent."]
    assert events.index(replayed[-1]) < events.index(only(live, ToolCall)[0])
    assert ended(events).outcome == "completed"
    load = next(m for m in received(fake_log) if m.get("method") == "session/load")
    assert load["params"] == {"sessionId": sid, "cwd": str(git_repo.resolve()), "mcpServers": []}


async def test_no_load_session_means_no_resume(fake_log: Path, git_repo: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = scenario(monkeypatch, "noload")
    events = await collect(adapter, RunRequest(prompt="x", cwd=git_repo, resume_id="sess_old"))
    assert only(events, AgentError)[0].category == "resume"
    assert ended(events).outcome == "failed"
    assert adapter.capabilities.level(Cap.RESUME) == Level.NO
    assert not any(m.get("method") == "session/load" for m in received(fake_log))


async def test_fs_and_unknown_requests_get_method_not_found(
        fake_log: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    adapter = scenario(monkeypatch, "fs")
    with caplog.at_level(logging.INFO, logger="relay.runtimes.acp"):
        events = await collect(adapter, RunRequest(prompt="x", cwd=git_repo))
    assert ended(events).result_text == "fs=-32601 vendor=-32601"
    errors = [m for m in received(fake_log) if "error" in m]
    assert [(m["id"], m["error"]["code"]) for m in errors] == [(1000, -32601), (1001, -32601)]
    assert "_vendor/query" in caplog.text


async def test_unknown_underscore_notification_is_logged(
        fake_log: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    adapter = scenario(monkeypatch, "vendor")
    with caplog.at_level(logging.WARNING, logger="relay.runtimes.acp"):
        events = await collect(adapter, RunRequest(prompt="x", cwd=git_repo))
    assert any("_vendor/thing" in r.getMessage() for r in caplog.records)
    assert ended(events).outcome == "completed"


async def test_a_crash_is_a_failed_run_with_the_reason(fake_log: Path, git_repo: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    events = await collect(scenario(monkeypatch, "crash"), RunRequest(prompt="x", cwd=git_repo))
    end = ended(events)
    assert (end.outcome, end.exit_code) == ("failed", 3)
    assert "fatal: the model backend went away" in str(end.reason)
    assert only(events, AgentError)[0].category == "process"
    assert only(events, AssistantText)[0].text == "Starting…"  # what came before is kept


async def test_a_malformed_line_is_reported_not_fatal(fake_log: Path, git_repo: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    events = await collect(scenario(monkeypatch, "malformed"), RunRequest(prompt="x", cwd=git_repo))
    bad = only(events, AgentError)[0]
    assert (bad.category, bad.fatal) == ("malformed", False)
    assert "this is not json" in bad.message
    assert ended(events).outcome == "completed"


@pytest.mark.parametrize(("name", "reason"), [
    ("refusal", "the agent refused to continue"),
    ("max_tokens", "the agent reached its maximum number of tokens"),
])
async def test_stop_reasons_that_fail(fake_log: Path, git_repo: Path,
                                      monkeypatch: pytest.MonkeyPatch, name: str,
                                      reason: str) -> None:
    events = await collect(scenario(monkeypatch, name), RunRequest(prompt="x", cwd=git_repo))
    end = ended(events)
    assert (end.outcome, end.reason) == ("failed", reason)


async def test_a_json_rpc_error_fails_the_run_clearly(fake_log: Path, git_repo: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    events = await collect(scenario(monkeypatch, "prompt_error"), RunRequest(prompt="x", cwd=git_repo))
    end = ended(events)
    assert end.outcome == "failed"
    assert end.reason == "session/prompt: Internal error: model down (JSON-RPC error -32603)"


async def test_another_protocol_version_is_refused(fake_log: Path, git_repo: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    events = await collect(scenario(monkeypatch, "version"), RunRequest(prompt="x", cwd=git_repo))
    end = ended(events)
    assert end.outcome == "failed"
    assert "protocol version 99" in str(end.reason)
    assert not any(m.get("method") == "session/new" for m in received(fake_log))


async def test_a_session_mode_matching_the_policy_is_set(fake_log: Path, git_repo: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    events = await collect(scenario(monkeypatch, "modes"), RunRequest(prompt="x", cwd=git_repo))
    assert ended(events).outcome == "completed"
    mode = next(m for m in received(fake_log) if m.get("method") == "session/set_mode")
    assert mode["params"]["modeId"] == "acceptEdits"
    events = await collect(AcpAdapter(), RunRequest(prompt="x", cwd=git_repo,
                                                    permission=PermissionPolicy.FULL))
    warning = only(events, Notice)[0]  # no mode for "full": said, not guessed
    assert "no session mode for the full policy" in warning.message
    assert sum(m.get("method") == "session/set_mode" for m in received(fake_log)) == 1


def test_missing_executables_name_the_npm_package(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path)}
    with pytest.raises(CliNotFoundError) as info:
        ClaudeAcpAdapter(env).executable()
    assert "npm install -g @zed-industries/claude-code-acp@0.16.2" in str(info.value.hint)
    assert "codex-acp@0.16.0" in str(CodexAcpAdapter(env).info().hint)
    assert "RELAY_GEMINI_ACP_BIN" in str(GeminiAcpAdapter(env).info().hint)


def test_argv_of_the_named_agents(tmp_path: Path) -> None:
    env = {"RELAY_GEMINI_ACP_BIN": str(FAKE), "RELAY_CODEX_ACP_BIN": str(FAKE),
           "RELAY_CLAUDE_ACP_BIN": str(FAKE), "PATH": ""}
    req = RunRequest(prompt="x", cwd=tmp_path, model="m1", permission=PermissionPolicy.READ_ONLY)
    assert GeminiAcpAdapter(env).build_argv(req)[1:] == [
        "--acp", "--skip-trust", "-m", "m1", "--approval-mode", "plan"]
    assert CodexAcpAdapter(env).build_argv(req)[1:] == ["-c", 'model="m1"']
    claude = ClaudeAcpAdapter(env)
    assert claude.build_argv(req)[1:] == []
    assert claude.build_env(req)["ANTHROPIC_MODEL"] == "m1"


def test_bridge_version_from_its_package_json(tmp_path: Path) -> None:
    pkg = tmp_path / "node_modules" / "@zed-industries" / "codex-acp"
    (pkg / "bin").mkdir(parents=True)
    (pkg / "package.json").write_text('{"name": "@zed-industries/codex-acp", "version": "0.16.0"}')
    exe = pkg / "bin" / "codex-acp.js"
    exe.write_text("")
    link = tmp_path / "codex-acp"
    link.symlink_to(exe)
    assert package_version(link, "@zed-industries/codex-acp") == "0.16.0"
    assert package_version(link, "@other/pkg") is None
