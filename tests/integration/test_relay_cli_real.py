"""End to end: `relay-cli run` drives the REAL Claude Code and Codex CLIs against the
project's own loopback mock model servers (text, a file-writing tool call, a rate
limit, and a resume), each in a Relay session stored in a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes import mock_anthropic, mock_openai
from tests.integration.helpers import (
    RELAY,
    claude_env,
    codex_env,
    events_of,
    final_state,
    kinds,
    real_claude_fixture,  # noqa: F401  (fixture "real_claude")
    real_codex_fixture,  # noqa: F401  (fixture "real_codex")
    relay_env,
    relay_run,
    run_cli,
    session_of,
)

pytestmark = pytest.mark.integration


# ------------------------------------------------------------------------- Claude Code


def test_claude_text_answer_in_a_worktree(real_claude: Path, git_repo: Path, tmp_path: Path,
                                          relay_home: Path) -> None:
    script = {"turns": [{"text": "Hello from the mock. The answer is 42.",
                         "usage": {"input_tokens": 1200, "output_tokens": 17,
                                   "cache_creation_input_tokens": 300,
                                   "cache_read_input_tokens": 4000}}]}
    with mock_anthropic.serve(script) as mock:
        env = relay_env(claude_env(tmp_path, mock), relay_home, "claude", real_claude)
        run = relay_run(env, git_repo, "claude", "say hi")
    assert run.returncode == 0, run.describe()
    events = events_of(run)
    started = kinds(events, "session_started")[0]
    assert started["cwd"] == str(relay_home / "worktrees" / session_of(run))
    assert started["permission_mode"] == "acceptEdits"
    assert [e["text"] for e in kinds(events, "assistant_text")] == [
        "Hello from the mock. The answer is 42."]
    usage = kinds(events, "turn_completed")[0]["usage"]
    assert usage["input_tokens"] == 1200
    assert usage["output_tokens"] == 17
    assert usage["cost_usd"] is not None
    assert usage["cost_usd"] > 0
    assert final_state(events) == "completed"


def test_claude_write_tool_creates_the_file(real_claude: Path, git_repo: Path, tmp_path: Path,
                                            relay_home: Path) -> None:
    target = git_repo / "hello.txt"
    script = {"turns": [
        {"text": "I'll create the file.",
         "tool_use": {"name": "Write", "id": "toolu_mock_write_1",
                      "input": {"file_path": str(target), "content": "hello world\n"}}},
        {"text": "Created hello.txt."}]}
    with mock_anthropic.serve(script) as mock:
        env = relay_env(claude_env(tmp_path, mock), relay_home, "claude", real_claude)
        run = relay_run(env, git_repo, "claude", "Create hello.txt", "--no-worktree")
    assert run.returncode == 0, run.describe()
    assert target.read_text() == "hello world\n"
    events = events_of(run)
    call = kinds(events, "tool_call")[0]
    assert (call["name"], call["call_id"]) == ("Write", "toolu_mock_write_1")
    result = kinds(events, "tool_result")[0]
    assert result["call_id"] == "toolu_mock_write_1"
    assert not result["is_error"]
    assert kinds(events, "permission_denied") == []


def test_claude_rate_limit_fails_the_session(real_claude: Path, git_repo: Path, tmp_path: Path,
                                             relay_home: Path) -> None:
    script = {"turns": [{"repeat": -1, "error": {
        "status": 429, "headers": {"retry-after": "1"},
        "body": {"type": "error", "error": {"type": "rate_limit_error",
                                            "message": "Number of requests has exceeded your rate limit"}}}}]}
    with mock_anthropic.serve(script) as mock:
        env = relay_env(claude_env(tmp_path, mock), relay_home, "claude", real_claude)
        run = relay_run(env, git_repo, "claude", "say hi")
    assert run.returncode == 1, run.describe()
    events = events_of(run)
    errors = kinds(events, "error")
    assert errors
    assert errors[-1]["category"] == "rate_limit"
    assert errors[-1]["http_status"] == 429
    assert final_state(events) == "failed"
    assert kinds(events, "session_ended")[0]["outcome"] == "failed"


def test_claude_resume_continues_the_same_agent_session(real_claude: Path, git_repo: Path,
                                                        tmp_path: Path, relay_home: Path) -> None:
    script = {"turns": [{"text": "Noted: the word is PINEAPPLE."},
                        {"text": "The word was PINEAPPLE."}]}
    with mock_anthropic.serve(script) as mock:
        env = relay_env(claude_env(tmp_path, mock), relay_home, "claude", real_claude)
        first = relay_run(env, git_repo, "claude", "Remember the word PINEAPPLE")
        assert first.returncode == 0, first.describe()
        session = session_of(first)
        second = run_cli([*RELAY, "run", "What was the word?", "--resume", session, "--json"],
                         env=env, cwd=git_repo, timeout=120)
        requests = mock.message_requests()
    assert second.returncode == 0, second.describe()
    assert session_of(second) == session
    first_agent = kinds(events_of(first), "session_started")[0]["agent_session_id"]
    assert kinds(events_of(second), "session_started")[0]["agent_session_id"] == first_agent
    assert [e["text"] for e in kinds(events_of(second), "assistant_text")] == [
        "The word was PINEAPPLE."]
    history = json.dumps(requests[-1]["body"]["messages"])
    assert "Remember the word PINEAPPLE" in history
    assert "Noted: the word is PINEAPPLE." in history
    shown = run_cli([*RELAY, "show", session, "--json"], env=env, cwd=git_repo)
    assert len([line for line in shown.stdout.splitlines()
                if json.loads(line)["event"]["kind"] == "session_ended"]) == 2


# ------------------------------------------------------------------------------ Codex


def test_codex_text_answer_in_a_worktree(real_codex: Path, git_repo: Path, tmp_path: Path,
                                         relay_home: Path) -> None:
    script = {"turns": [{"reasoning": "Thinking about greeting.", "text": "Hello from the mock model.",
                         "usage": {"input_tokens": 1200, "cached_tokens": 1000,
                                   "output_tokens": 40, "reasoning_tokens": 8}}]}
    with mock_openai.serve(script) as mock:
        env = relay_env(codex_env(tmp_path, mock), relay_home, "codex", real_codex)
        run = relay_run(env, git_repo, "codex", "Say hello")
    assert run.returncode == 0, run.describe()
    events = events_of(run)
    texts = [(e["reasoning"], e["text"]) for e in kinds(events, "assistant_text")]
    assert texts == [(True, "Thinking about greeting."), (False, "Hello from the mock model.")]
    usage = kinds(events, "turn_completed")[0]["usage"]
    assert (usage["input_tokens"], usage["cache_read_tokens"], usage["output_tokens"],
            usage["reasoning_tokens"]) == (1200, 1000, 40, 8)
    assert usage["cost_usd"] is None  # codex reports no cost: unknown, never 0
    assert final_state(events) == "completed"


def test_codex_tool_calls_write_files_in_the_worktree(real_codex: Path, git_repo: Path,
                                                      tmp_path: Path, relay_home: Path) -> None:
    patch = "*** Begin Patch\n*** Add File: hello.txt\n+hello world\n*** End Patch\n"
    script = {"turns": [
        {"items": [{"type": "function_call", "name": "exec_command",
                    "arguments": {"cmd": "echo from-shell > shell.txt", "yield_time_ms": 1000}}]},
        {"items": [{"type": "custom_tool_call", "name": "apply_patch", "input": patch}]},
        {"text": "Done."}]}
    with mock_openai.serve(script) as mock:
        env = relay_env(codex_env(tmp_path, mock), relay_home, "codex", real_codex)
        run = relay_run(env, git_repo, "codex", "Write the files")
    assert run.returncode == 0, run.describe()
    worktree = relay_home / "worktrees" / session_of(run)
    assert (worktree / "shell.txt").read_text() == "from-shell\n"
    assert (worktree / "hello.txt").read_text() == "hello world\n"
    assert not (git_repo / "hello.txt").exists()
    events = events_of(run)
    assert [c["name"] for c in kinds(events, "tool_call")] == ["shell", "file_change"]
    assert all(r["is_error"] is False for r in kinds(events, "tool_result"))


def test_codex_usage_limit_fails_with_a_limit_event(real_codex: Path, git_repo: Path,
                                                    tmp_path: Path, relay_home: Path) -> None:
    import time
    resets_at = int(time.time()) + 3 * 3600
    script = {"turns": [{"repeat": -1, "error": {
        "status": 429, "headers": {"x-request-id": "req_mock_usage_limit"},
        "body": {"error": {"type": "usage_limit_reached", "message": "The usage limit has been reached",
                           "plan_type": "pro", "resets_at": resets_at}}}}]}
    with mock_openai.serve(script) as mock:
        env = relay_env(codex_env(tmp_path, mock), relay_home, "codex", real_codex)
        run = relay_run(env, git_repo, "codex", "Say hello")
    assert run.returncode == 1, run.describe()
    events = events_of(run)
    limit = kinds(events, "limit_hit")
    assert limit
    assert limit[0]["limit"] == "usage_limit"
    assert limit[0]["resets_at"] is not None
    assert final_state(events) == "failed"


def test_codex_rate_limit_fails_the_session(real_codex: Path, git_repo: Path, tmp_path: Path,
                                            relay_home: Path) -> None:
    script = {"turns": [{"repeat": -1, "error": {
        "status": 429, "headers": {"retry-after": "1", "x-request-id": "req_mock_429"},
        "body": {"error": {"message": "Rate limit reached. Please try again in 1s.",
                           "type": "requests", "code": "rate_limit_exceeded"}}}}]}
    with mock_openai.serve(script) as mock:
        env = relay_env(codex_env(tmp_path, mock), relay_home, "codex", real_codex)
        run = relay_run(env, git_repo, "codex", "Say hello")
    assert run.returncode == 1, run.describe()
    events = events_of(run)
    assert kinds(events, "error")[-1]["category"] == "rate_limit"
    assert final_state(events) == "failed"


def test_codex_resume_reports_per_turn_usage(real_codex: Path, git_repo: Path, tmp_path: Path,
                                             relay_home: Path) -> None:
    script = {"turns": [{"text": "Noted: PINEAPPLE."}, {"text": "The word was PINEAPPLE."}]}
    with mock_openai.serve(script) as mock:
        env = relay_env(codex_env(tmp_path, mock), relay_home, "codex", real_codex)
        first = relay_run(env, git_repo, "codex", "Remember the word PINEAPPLE")
        assert first.returncode == 0, first.describe()
        session = session_of(first)
        second = run_cli([*RELAY, "run", "What was the word?", "--resume", session, "--json"],
                         env=env, cwd=git_repo, timeout=120)
        requests = mock.response_requests()
    assert second.returncode == 0, second.describe()
    thread = kinds(events_of(first), "session_started")[0]["agent_session_id"]
    assert kinds(events_of(second), "session_started")[0]["agent_session_id"] == thread
    assert requests[1]["headers"]["session-id"] == thread
    first_in = kinds(events_of(first), "turn_completed")[0]["usage"]["input_tokens"]
    second_in = kinds(events_of(second), "turn_completed")[0]["usage"]["input_tokens"]
    # codex reports the thread's cumulative usage after a resume; Relay stores the delta.
    assert second_in == first_in


# ---------------------------------------------------------------------------- handoff


def test_real_claude_usage_limit_hands_off_to_real_codex(real_claude: Path, real_codex: Path,
                                                         git_repo: Path, tmp_path: Path,
                                                         relay_home: Path) -> None:
    """The mock returns the subscriber usage limit on the first account; Codex finishes."""
    import time

    resets_at = int(time.time()) + 7200
    limited = {"turns": [{"repeat": -1, "error": {
        "status": 429, "type": "rate_limit_error", "message": "Error",
        "headers": {"anthropic-ratelimit-unified-status": "rejected",
                    "anthropic-ratelimit-unified-reset": str(resets_at),
                    "anthropic-ratelimit-unified-representative-claim": "five_hour",
                    "anthropic-ratelimit-unified-overage-status": "rejected"}}}]}
    patch = "*** Begin Patch\n*** Add File: greeting.txt\n+hello from codex\n*** End Patch\n"
    finishing = {"turns": [
        {"items": [{"type": "custom_tool_call", "name": "apply_patch", "input": patch}]},
        {"text": "Finished the greeting."}]}
    with mock_anthropic.serve(limited) as claude_mock, mock_openai.serve(finishing) as codex_mock:
        env = {**claude_env(tmp_path, claude_mock, oauth=True),
               **codex_env(tmp_path, codex_mock)}
        env = relay_env(env, relay_home, "claude", real_claude)
        env["RELAY_CODEX_BIN"] = str(real_codex)
        env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
        env["RELAY_VAULT_PASSPHRASE"] = "integration-passphrase"
        run = run_cli([*RELAY, "run", "Write greeting.txt", "--repo", str(git_repo),
                       "--provider", "claude:work", "--provider", "codex", "--json"],
                      env=env, cwd=git_repo, timeout=180)
        codex_requests = codex_mock.response_requests()
    assert run.returncode == 0, run.describe()
    events = events_of(run)
    assert kinds(events, "limit_hit")[0]["limit"] == "usage_limit"
    steps = [e["state"] for e in kinds(events, "handoff_step")]
    assert steps == ["pausing", "snapshotted", "envelope_built", "dispatched", "resuming", "done"]
    worktree = relay_home / "worktrees" / session_of(run)
    assert (worktree / "greeting.txt").read_text() == "hello from codex\n"
    assert final_state(events) == "completed"
    # Codex was briefed with the signed contract, not with the bare task
    first_input = json.dumps(codex_requests[0]["body"]["input"])
    assert "Continuation contract" in first_input
    assert "Write greeting.txt" in first_input
    handoff_id = kinds(events, "handoff_step")[0]["handoff_id"]
    contract_dir = relay_home / "handoffs" / session_of(run) / handoff_id
    verified = run_cli([*RELAY, "contract", "verify", str(contract_dir)], env=env, cwd=git_repo)
    assert verified.returncode == 0, verified.describe()
