"""ClaudeAdapter end to end against the fake ``claude`` (tests/fakes/bin/claude)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, TypeVar

import psutil
import pytest

from relay.core.agent_homes import ClaudeHome
from relay.core.errors import CliNotFoundError, PolicyRefusedError
from relay.core.events import (
    AgentError,
    AgentEvent,
    AssistantText,
    Notice,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
)
from relay.core.models import PermissionPolicy
from relay.runtimes.base import RunRequest
from relay.runtimes.claude import ClaudeAdapter
from tests.conftest import FAKES_DIR, fixtures_root
from tests.runtimes.run_helpers import collect, ended

CAPTURES = fixtures_root() / "claude" / "captures"


@pytest.fixture
def fake_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "fake-claude.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    return log


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Claude's state folder, so the fake's transcripts stay out of ~/.claude."""
    folder = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    return folder


@pytest.fixture
def repo_real(git_repo: Path) -> str:
    """The repo's resolved path, as the agent's getcwd() reports it."""
    return str(git_repo.resolve())


@pytest.fixture
def fake(fakes_on_path: Path, fake_log: Path, config_dir: Path,
         monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The fake claude on PATH, logging to fake_log; set RELAY_FAKE_SCENARIO on it."""
    monkeypatch.delenv("RELAY_FAKE_INJECT_MALFORMED", raising=False)
    monkeypatch.delenv("RELAY_FAKE_SCENARIO", raising=False)
    return monkeypatch


def logged(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

E = TypeVar("E")


def of(events: list[AgentEvent], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


# -- runs -------------------------------------------------------------------------


async def test_text_answer(fake: pytest.MonkeyPatch, fake_log: Path, git_repo: Path,
                          repo_real: str, config_dir: Path, fakes_on_path: Path) -> None:
    session = str(uuid.uuid4())
    events = await collect(ClaudeAdapter(), RunRequest(
        prompt="Say hello", cwd=git_repo, agent_session_id=session))
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert (started.agent_session_id, started.cwd) == (session, repo_real)
    assert [t.text for t in of(events, AssistantText)] == [
        "Hello from the mock. The answer is 42."]
    (turn,) = of(events, TurnCompleted)
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (1200, 17)
    assert (ended(events).outcome, ended(events).exit_code) == ("completed", 0)
    (call,) = logged(fake_log)
    assert call["argv"][1:] == ["-p", "--input-format", "stream-json", "--output-format",
                                "stream-json", "--verbose", "--permission-mode", "acceptEdits",
                                "--allowedTools", "Bash", "--session-id", session]
    assert call["argv"][0] == str(fakes_on_path / "claude")
    assert call["cwd"] == repo_real
    transcript = ClaudeHome(config_dir).transcript(git_repo, session)
    assert transcript.is_file()
    assert f'"sessionId":"{session}"' in transcript.read_text()


async def test_the_prompt_is_the_first_stdin_line(fake: pytest.MonkeyPatch, fake_log: Path,
                                                  git_repo: Path, tmp_path: Path) -> None:
    fake.setenv("RELAY_FAKE_STDIN_LOG", str(tmp_path / "stdin.jsonl"))
    await collect(ClaudeAdapter(), RunRequest(prompt="--help me", cwd=git_repo))
    (call,) = logged(fake_log)
    assert call["stdin_isatty"] is False
    assert call["stdin"] == "not-read"  # stream-json input: no 3-second text probe
    (line,) = logged(tmp_path / "stdin.jsonl")
    assert line["line"] == {"type": "user", "message": {"role": "user",
                                                         "content": "--help me"}}


async def test_write_tool_creates_the_file(fake: pytest.MonkeyPatch, git_repo: Path,
                                           repo_real: str) -> None:
    fake.setenv("RELAY_FAKE_SCENARIO", "b_write_tool")
    events = await collect(ClaudeAdapter(), RunRequest(
        prompt="Create hello.txt containing hello world", cwd=git_repo))
    (call,) = of(events, ToolCall)
    assert (call.name, call.input["file_path"]) == ("Write", f"{repo_real}/hello.txt")
    assert of(events, ToolResult)[0].call_id == call.call_id
    expected = (CAPTURES / "b_write_tool" / "repo_after" / "hello.txt").read_bytes()
    assert (git_repo / "hello.txt").read_bytes() == expected
    assert of(events, TurnCompleted)[0].usage.cost_usd == 0.019255
    assert ended(events).outcome == "completed"


async def test_rate_limit_failure(fake: pytest.MonkeyPatch, git_repo: Path) -> None:
    fake.setenv("RELAY_FAKE_SCENARIO", "d1_429_retries_capped")
    events = await collect(ClaudeAdapter(), RunRequest(prompt="hi", cwd=git_repo))
    assert [n.category for n in of(events, Notice)] == ["retry", "retry"]
    (error,) = of(events, AgentError)
    assert (error.category, error.http_status) == ("rate_limit", 429)
    end = ended(events)
    assert (end.outcome, end.exit_code) == ("failed", 1)
    assert end.reason is not None
    assert end.reason.startswith("API Error: Request rejected (429)")


async def test_resume_uses_resume_with_the_same_id(fake: pytest.MonkeyPatch, fake_log: Path,
                                                   git_repo: Path) -> None:
    fake.setenv("RELAY_FAKE_SCENARIO", "g_resume/run2_resume")
    earlier = str(uuid.uuid4())
    adapter = ClaudeAdapter()
    events = await collect(adapter, RunRequest(
        prompt="What word did I ask you to remember?", cwd=git_repo, resume_id=earlier))
    (call,) = logged(fake_log)
    argv = call["argv"]
    assert argv[argv.index("--resume") + 1] == earlier
    assert "--session-id" not in argv
    assert of(events, SessionStarted)[0].agent_session_id == earlier
    assert adapter.session_id == earlier
    assert ended(events).outcome == "completed"


async def test_new_session_gets_a_fresh_uuid(fake: pytest.MonkeyPatch, fake_log: Path,
                                             git_repo: Path) -> None:
    adapter = ClaudeAdapter()
    events = await collect(adapter, RunRequest(prompt="Say hello", cwd=git_repo))
    argv = logged(fake_log)[0]["argv"]
    chosen = argv[argv.index("--session-id") + 1]
    assert uuid.UUID(chosen).version == 4
    assert adapter.session_id == chosen
    assert of(events, SessionStarted)[0].agent_session_id == chosen


async def test_reused_session_id_fails_with_the_cli_message(
        fake: pytest.MonkeyPatch, git_repo: Path) -> None:
    session = str(uuid.uuid4())
    request = RunRequest(prompt="Say hello", cwd=git_repo, agent_session_id=session)
    assert ended(await collect(ClaudeAdapter(), request)).outcome == "completed"
    events = await collect(ClaudeAdapter(), request)
    (error,) = of(events, AgentError)
    assert error.message == f"Error: Session ID {session} is already in use."
    end = ended(events)
    assert (end.outcome, end.reason, end.exit_code) == ("failed", error.message, 1)


async def test_bypass_as_root_is_refused_before_spawning(
        fake: pytest.MonkeyPatch, fake_log: Path, git_repo: Path) -> None:
    fake.setattr(os, "geteuid", lambda: 0)
    fake.setenv("IS_SANDBOX", "yes")  # any value but "1" still means refused
    adapter = ClaudeAdapter()
    with pytest.raises(PolicyRefusedError) as caught:
        await collect(adapter, RunRequest(prompt="hi", cwd=git_repo,
                                          permission=PermissionPolicy.FULL))
    assert "root" in caught.value.message
    assert caught.value.hint is not None
    assert "IS_SANDBOX=1" in caught.value.hint
    assert logged(fake_log) == []


async def test_bypass_as_root_with_is_sandbox_runs(fake: pytest.MonkeyPatch, fake_log: Path,
                                                   git_repo: Path) -> None:
    fake.setattr(os, "geteuid", lambda: 0)
    fake.delenv("IS_SANDBOX", raising=False)
    fake.setenv("RELAY_FAKE_SCENARIO", "m_permission_modes/run3_bypass_is_sandbox")
    events = await collect(ClaudeAdapter(), RunRequest(
        prompt="touch a file", cwd=git_repo, permission=PermissionPolicy.FULL,
        extra_env={"IS_SANDBOX": "1"}))
    argv = logged(fake_log)[0]["argv"]
    assert argv[argv.index("--permission-mode") + 1] == "bypassPermissions"
    assert of(events, SessionStarted)[0].permission_mode == "bypassPermissions"
    assert (git_repo / "bypass.txt").exists()
    assert ended(events).outcome == "completed"


async def test_missing_executable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  git_repo: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("RELAY_CLAUDE_BIN", raising=False)
    adapter = ClaudeAdapter()
    with pytest.raises(CliNotFoundError) as caught:
        await collect(adapter, RunRequest(prompt="hi", cwd=git_repo))
    assert "claude" in caught.value.message
    assert caught.value.hint is not None
    assert "npm install -g @anthropic-ai/claude-code" in caught.value.hint
    info = adapter.info()
    assert (info.executable, info.version) == (None, None)
    assert info.problem == caught.value.message


async def test_stop_on_a_waiting_agent_cancels(fake: pytest.MonkeyPatch, git_repo: Path) -> None:
    fake.setenv("RELAY_FAKE_SCENARIO", "r_signals")
    adapter = ClaudeAdapter()
    events: list[AgentEvent] = []
    pids: list[int] = []
    async for event in adapter.run(RunRequest(prompt="slow question", cwd=git_repo)):
        events.append(event)
        if isinstance(event, SessionStarted):
            assert adapter._process is not None
            assert adapter._process.pid is not None
            pids.append(adapter._process.pid)
            await adapter.stop(grace=10.0)
    assert [type(e) for e in events] == [SessionStarted, SessionEnded]
    end = ended(events)
    assert end.outcome == "cancelled"
    assert end.exit_code == 143  # the fake exits like the CLI does on SIGTERM
    assert not psutil.pid_exists(pids[0]) or psutil.Process(pids[0]).status() == "zombie"


@pytest.fixture
def fake_elsewhere(tmp_path: Path) -> Path:
    """The fake under another name, outside PATH."""
    link = tmp_path / "tools" / "my-claude"
    link.parent.mkdir()
    link.symlink_to(FAKES_DIR / "bin" / "claude")
    return link


async def test_relay_claude_bin_override(fake_elsewhere: Path, monkeypatch: pytest.MonkeyPatch,
                                         fake_log: Path, config_dir: Path,
                                         git_repo: Path) -> None:
    monkeypatch.delenv("RELAY_FAKE_SCENARIO", raising=False)
    elsewhere = fake_elsewhere
    monkeypatch.setenv("RELAY_CLAUDE_BIN", str(elsewhere))
    adapter = ClaudeAdapter()
    assert adapter.executable() == str(elsewhere)
    events = await collect(adapter, RunRequest(prompt="Say hello", cwd=git_repo))
    assert logged(fake_log)[0]["argv"][0] == str(elsewhere)
    assert ended(events).outcome == "completed"


async def test_malformed_line_is_not_fatal(fake: pytest.MonkeyPatch, git_repo: Path) -> None:
    fake.setenv("RELAY_FAKE_INJECT_MALFORMED", "1")
    events = await collect(ClaudeAdapter(), RunRequest(prompt="Say hello", cwd=git_repo))
    (error,) = of(events, AgentError)
    assert (error.category, error.fatal) == ("malformed", False)
    assert "this line is not JSON" in error.message
    assert isinstance(events[0], SessionStarted)
    assert events[1] is error
    assert of(events, AssistantText)
    assert ended(events).outcome == "completed"


# -- argv, env, info ---------------------------------------------------------------


@pytest.mark.parametrize(("policy", "mode"), [
    (PermissionPolicy.READ_ONLY, "default"),
    (PermissionPolicy.WORKSPACE, "acceptEdits"),
    (PermissionPolicy.FULL, "bypassPermissions"),
])
def test_permission_modes(policy: PermissionPolicy, mode: str, fakes_on_path: Path,
                          tmp_path: Path) -> None:
    argv = ClaudeAdapter().build_argv(RunRequest(prompt="p", cwd=tmp_path, permission=policy))
    assert argv[argv.index("--permission-mode") + 1] == mode


def test_argv_with_model_and_chosen_session(fakes_on_path: Path, tmp_path: Path) -> None:
    adapter = ClaudeAdapter()
    argv = adapter.build_argv(RunRequest(prompt="p", cwd=tmp_path, model="sonnet",
                                         agent_session_id="abc"))
    assert argv[0] == str(fakes_on_path / "claude")
    assert argv[1:] == ["-p", "--input-format", "stream-json", "--output-format",
                        "stream-json", "--verbose", "--permission-mode", "acceptEdits",
                        "--allowedTools", "Bash", "--model", "sonnet", "--session-id", "abc"]
    assert "p" not in argv  # the prompt goes to stdin


def test_fork_argv(fakes_on_path: Path, tmp_path: Path) -> None:
    adapter = ClaudeAdapter()
    argv = adapter.build_argv(RunRequest(prompt="p", cwd=tmp_path, resume_id="S", fork=True,
                                         resume_at="U"))
    assert argv[-5:] == ["--resume", "S", "--fork-session", "--resume-session-at", "U"]
    assert "--session-id" not in argv
    assert adapter.session_id is None
    whole = ClaudeAdapter().build_argv(RunRequest(prompt="p", cwd=tmp_path, resume_id="S",
                                                  fork=True))
    assert whole[-3:] == ["--resume", "S", "--fork-session"]


def test_env_passes_through_untouched(tmp_path: Path) -> None:
    user_env = {"PATH": "/bin", "CLAUDE_CONFIG_DIR": "/cfg", "ANTHROPIC_BASE_URL": "http://x",
                "CLAUDE_CODE_OAUTH_TOKEN": "t"}
    adapter = ClaudeAdapter(env=user_env)
    env = adapter.build_env(RunRequest(prompt="p", cwd=tmp_path, extra_env={"FOO": "1"}))
    assert env == {**user_env, "FOO": "1"}


def test_info_reports_the_version(fakes_on_path: Path) -> None:
    info = ClaudeAdapter().info()
    assert info.executable == str(fakes_on_path / "claude")
    assert (info.version, info.problem) == ("2.1.197", None)


def test_info_reports_a_broken_executable(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "claude"
    broken.write_text("#!/bin/sh\necho 'cannot start' >&2\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setenv("RELAY_CLAUDE_BIN", str(broken))
    info = ClaudeAdapter().info()
    assert (info.executable, info.version) == (str(broken), None)
    assert info.problem is not None
    assert "cannot start" in info.problem
    assert info.hint is not None
