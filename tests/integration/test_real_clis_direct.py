"""The real Claude Code and Codex CLIs against the project's own mock model servers.

Run directly with subprocess (not through Relay): these tests pin down that the mocks
speak the APIs well enough for the pinned CLI versions, and record the env/config
recipes the Relay-level integration tests build on. Scenarios per CLI:
(a) a text answer, (b) a tool call that writes a file in the repo, (c) a rate limit /
usage limit that fails the run, (d) resuming the session.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import mock_anthropic, mock_openai
from tests.integration.helpers import (
    CLAUDE_API_KEY,
    CODEX_API_KEY,
    claude_env,
    claude_transcript,
    codex_env,
    of_type,
    only,
    real_claude_fixture,  # noqa: F401  (fixture "real_claude")
    real_codex_fixture,  # noqa: F401  (fixture "real_codex")
    run_cli,
)

pytestmark = pytest.mark.integration

CLAUDE_FLAGS = ["--output-format", "stream-json", "--verbose"]


def _claude(exe: Path, prompt: str, *extra: str) -> list[str]:
    return [str(exe), "-p", prompt, *CLAUDE_FLAGS, *extra]


def _last_user_text(body: dict[str, Any]) -> str:
    """All text of the last ``user`` message of a Messages API request body."""
    users = [m for m in body["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))


# =========================================================================== Claude Code


def test_claude_text_answer(real_claude: Path, git_repo: Path, tmp_path: Path) -> None:
    script = {"turns": [{"text": "Hello from the mock. The answer is 42.",
                         "usage": {"input_tokens": 1200, "output_tokens": 17,
                                   "cache_creation_input_tokens": 300,
                                   "cache_read_input_tokens": 4000}}]}
    with mock_anthropic.serve(script) as mock:
        env = claude_env(tmp_path, mock)
        run = run_cli(_claude(real_claude, "say hi", "--permission-mode", "acceptEdits"),
                      env=env, cwd=git_repo)
        requests = mock.message_requests()
        unserved = mock.unserved_turns()

    events = run.events()
    assert run.returncode == 0, run.describe()
    init = only(events, "system", "init", run=run)
    assert init["cwd"] == str(git_repo)
    assert init["apiKeySource"] == "ANTHROPIC_API_KEY"
    assert init["permissionMode"] == "acceptEdits"
    result = only(events, "result", run=run)
    assert result["is_error"] is False, run.describe()
    assert result["result"] == "Hello from the mock. The answer is 42."
    assert result["session_id"] == init["session_id"]
    assert result["usage"]["input_tokens"] == 1200
    assert result["usage"]["output_tokens"] == 17
    assert result["usage"]["cache_read_input_tokens"] == 4000
    texts = [b["text"] for e in of_type(events, "assistant")
             for b in e["message"]["content"] if b["type"] == "text"]
    assert texts == ["Hello from the mock. The answer is 42."]

    assert unserved == []
    assert len(requests) == 1
    req = requests[0]
    assert req["query"] == {"beta": "true"}
    assert req["headers"]["x-api-key"] == CLAUDE_API_KEY
    assert req["headers"]["X-Claude-Code-Session-Id"] == init["session_id"]
    assert req["body"]["stream"] is True
    assert "say hi" in _last_user_text(req["body"])
    assert any(m["role"] == "system" for m in req["body"]["messages"])


def test_claude_write_tool_creates_file(real_claude: Path, git_repo: Path,
                                        tmp_path: Path) -> None:
    target = git_repo / "hello.txt"
    script = {"turns": [
        {"text": "I'll create the file.",
         "tool_use": {"name": "Write", "id": "toolu_mock_write_1",
                      "input": {"file_path": str(target), "content": "hello world\n"}}},
        {"text": "Created hello.txt."},
    ]}
    with mock_anthropic.serve(script) as mock:
        env = claude_env(tmp_path, mock)
        run = run_cli(_claude(real_claude, "Create hello.txt containing hello world",
                              "--permission-mode", "acceptEdits"), env=env, cwd=git_repo)
        requests = mock.message_requests()

    events = run.events()
    assert run.returncode == 0, run.describe()
    assert target.read_text() == "hello world\n"
    tool_uses = [b for e in of_type(events, "assistant") for b in e["message"]["content"]
                 if b["type"] == "tool_use"]
    assert [(t["name"], t["id"]) for t in tool_uses] == [("Write", "toolu_mock_write_1")]
    results = [b for e in of_type(events, "user") for b in e["message"]["content"]
               if b.get("type") == "tool_result"]
    assert len(results) == 1
    assert results[0]["tool_use_id"] == "toolu_mock_write_1"
    assert not results[0].get("is_error"), run.describe()
    result = only(events, "result", run=run)
    assert result["is_error"] is False
    assert result["result"] == "Created hello.txt."
    assert result["num_turns"] == 2
    assert result["permission_denials"] == []

    # The follow-up request carries the tool result back to the model.
    assert len(requests) == 2
    sent_back = [b for m in requests[1]["body"]["messages"] if m["role"] == "user"
                 and isinstance(m["content"], list) for b in m["content"]
                 if b.get("type") == "tool_result"]
    assert [b["tool_use_id"] for b in sent_back] == ["toolu_mock_write_1"]


def test_claude_rate_limit_fails_the_run(real_claude: Path, git_repo: Path,
                                         tmp_path: Path) -> None:
    message = "This request would exceed the rate limit for your organization (mock-org)."
    script = {"turns": [{"repeat": -1, "error": {
        "status": 429, "type": "rate_limit_error", "message": message,
        "headers": {"retry-after": "1", "anthropic-ratelimit-requests-remaining": "0"}}}]}
    with mock_anthropic.serve(script) as mock:
        env = claude_env(tmp_path, mock, max_retries=0)
        run = run_cli(_claude(real_claude, "hi"), env=env, cwd=git_repo)
        requests = mock.message_requests()

    events = run.events()
    assert run.returncode == 1, run.describe()
    assert len(requests) == 1  # CLAUDE_CODE_MAX_RETRIES=0: a single attempt
    result = only(events, "result", run=run)
    assert result["is_error"] is True
    assert result["subtype"] == "success"  # sic: API errors keep subtype "success"
    assert result["api_error_status"] == 429
    assert result["result"] == f"API Error: Request rejected (429) · {message}"
    synthetic = [e for e in of_type(events, "assistant")
                 if e["message"]["model"] == "<synthetic>"]
    assert len(synthetic) == 1
    assert synthetic[0]["error"] == "rate_limit"
    assert of_type(events, "system", "api_retry") == []


def test_claude_subscriber_usage_limit(real_claude: Path, git_repo: Path,
                                       tmp_path: Path) -> None:
    resets_at = int(time.time()) + 7200
    script = {"turns": [{"repeat": -1, "error": {
        "status": 429, "type": "rate_limit_error", "message": "Error",
        "headers": {
            "anthropic-ratelimit-unified-status": "rejected",
            "anthropic-ratelimit-unified-reset": str(resets_at),
            "anthropic-ratelimit-unified-representative-claim": "five_hour",
            "anthropic-ratelimit-unified-5h-status": "rejected",
            "anthropic-ratelimit-unified-5h-reset": str(resets_at),
            "anthropic-ratelimit-unified-overage-status": "rejected",
            "anthropic-ratelimit-unified-overage-disabled-reason": "org_level_disabled",
        }}}]}
    with mock_anthropic.serve(script) as mock:
        env = claude_env(tmp_path, mock, oauth=True, max_retries=2)
        run = run_cli(_claude(real_claude, "hi"), env=env, cwd=git_repo)
        requests = mock.message_requests()

    events = run.events()
    assert run.returncode == 1, run.describe()
    assert len(requests) == 1  # a subscriber 429 is never retried
    assert requests[0]["headers"]["Authorization"].startswith("Bearer sk-ant-oat01-")
    limit = only(events, "rate_limit_event", run=run)["rate_limit_info"]
    assert limit["status"] == "rejected"
    assert limit["resetsAt"] == resets_at
    assert limit["rateLimitType"] == "five_hour"
    result = only(events, "result", run=run)
    assert result["is_error"] is True
    assert result["api_error_status"] == 429
    assert result["result"].startswith("You've hit your session limit · resets ")


def test_claude_resume_session(real_claude: Path, git_repo: Path, tmp_path: Path) -> None:
    script = {"turns": [{"text": "Noted: the word is PINEAPPLE."},
                        {"text": "The word was PINEAPPLE."}]}
    with mock_anthropic.serve(script) as mock:
        env = claude_env(tmp_path, mock)
        first = run_cli(_claude(real_claude, "Remember the word PINEAPPLE"),
                        env=env, cwd=git_repo)
        assert first.returncode == 0, first.describe()
        session_id = only(first.events(), "system", "init", run=first)["session_id"]
        second = run_cli(_claude(real_claude, "What was the word?", "--resume", session_id),
                         env=env, cwd=git_repo)
        requests = mock.message_requests()

    events = second.events()
    assert second.returncode == 0, second.describe()
    assert only(events, "system", "init", run=second)["session_id"] == session_id
    result = only(events, "result", run=second)
    assert result["is_error"] is False
    assert result["session_id"] == session_id
    assert result["result"] == "The word was PINEAPPLE."

    assert len(requests) == 2
    resumed = requests[1]
    assert resumed["headers"]["X-Claude-Code-Session-Id"] == session_id
    history = json.dumps(resumed["body"]["messages"])
    assert "Remember the word PINEAPPLE" in history
    assert "Noted: the word is PINEAPPLE." in history
    assert "What was the word?" in _last_user_text(resumed["body"])

    transcript = claude_transcript(env, git_repo, session_id)
    assert transcript.is_file(), f"no transcript at {transcript}"
    lines = [json.loads(line) for line in transcript.read_text().splitlines() if line]
    assert {e.get("sessionId") for e in lines if e.get("type") in ("user", "assistant")} == {
        session_id}
    answers = [b["text"] for e in lines if e.get("type") == "assistant"
               for b in e["message"]["content"] if b.get("type") == "text"]
    assert answers == ["Noted: the word is PINEAPPLE.", "The word was PINEAPPLE."]


# =========================================================================== Codex


def _codex_exec(exe: Path, repo: Path, prompt: str) -> list[str]:
    return [str(exe), "exec", "--json", "--sandbox", "workspace-write", "-C", str(repo),
            "--", prompt]


def test_codex_text_answer(real_codex: Path, git_repo: Path, tmp_path: Path) -> None:
    script = {"turns": [{"reasoning": "Thinking about greeting.",
                         "text": "Hello from the mock model.",
                         "usage": {"input_tokens": 1200, "cached_tokens": 1000,
                                   "output_tokens": 40, "reasoning_tokens": 8}}]}
    with mock_openai.serve(script) as mock:
        env = codex_env(tmp_path, mock)
        run = run_cli(_codex_exec(real_codex, git_repo, "Say hello"), env=env, cwd=git_repo)
        requests = mock.response_requests()

    events = run.events()
    assert run.returncode == 0, run.describe()
    assert "WARNING" not in run.stderr, run.describe()
    thread_id = only(events, "thread.started", run=run)["thread_id"]
    items = [e["item"] for e in of_type(events, "item.completed")]
    assert [(i["type"], i["text"]) for i in items] == [
        ("reasoning", "Thinking about greeting."),
        ("agent_message", "Hello from the mock model."),
    ]
    usage = only(events, "turn.completed", run=run)["usage"]
    assert usage["input_tokens"] == 1200
    assert usage["cached_input_tokens"] == 1000
    assert usage["output_tokens"] == 40
    assert usage["reasoning_output_tokens"] == 8

    assert len(requests) == 1
    req = requests[0]
    assert req["headers"]["authorization"] == f"Bearer {CODEX_API_KEY}"
    assert req["headers"]["session-id"] == thread_id
    assert req["body"]["model"] == "gpt-5.5"
    assert req["body"]["stream"] is True
    assert req["body"]["input"][-1]["content"][0]["text"] == "Say hello"
    tools = {(t.get("type"), t.get("name")) for t in req["body"]["tools"]}
    assert {("function", "exec_command"), ("custom", "apply_patch")} <= tools

    rollouts = list((Path(env["CODEX_HOME"]) / "sessions").rglob(f"rollout-*{thread_id}.jsonl"))
    assert len(rollouts) == 1


def test_codex_exec_command_and_apply_patch_write_files(real_codex: Path, git_repo: Path,
                                                        tmp_path: Path) -> None:
    patch = ("*** Begin Patch\n*** Add File: hello.txt\n+hello world\n"
             "*** Update File: README.md\n@@\n-# demo\n+# demo, patched\n*** End Patch\n")
    script = {"turns": [
        {"items": [
            {"type": "message", "text": "I'll run a command first.", "phase": "commentary"},
            {"type": "function_call", "name": "exec_command",
             "arguments": {"cmd": "echo from-shell > shell.txt", "yield_time_ms": 1000}}]},
        {"items": [{"type": "custom_tool_call", "name": "apply_patch", "input": patch}]},
        {"text": "Done: wrote shell.txt and hello.txt."},
    ]}
    with mock_openai.serve(script) as mock:
        env = codex_env(tmp_path, mock)
        run = run_cli(_codex_exec(real_codex, git_repo, "Write the files"),
                      env=env, cwd=git_repo)
        requests = mock.response_requests()

    events = run.events()
    assert run.returncode == 0, run.describe()
    assert (git_repo / "shell.txt").read_text() == "from-shell\n"
    assert (git_repo / "hello.txt").read_text() == "hello world\n"
    assert (git_repo / "README.md").read_text() == "# demo, patched\n"

    done = {e["item"]["type"]: e["item"] for e in of_type(events, "item.completed")}
    command = done["command_execution"]
    assert "echo from-shell > shell.txt" in command["command"]
    assert command["exit_code"] == 0
    assert command["status"] == "completed"
    change = done["file_change"]
    assert change["status"] == "completed"
    assert sorted((c["path"], c["kind"]) for c in change["changes"]) == [
        (str(git_repo / "README.md"), "update"), (str(git_repo / "hello.txt"), "add")]
    messages = [e["item"]["text"] for e in of_type(events, "item.completed")
                if e["item"]["type"] == "agent_message"]
    assert messages[-1] == "Done: wrote shell.txt and hello.txt."
    only(events, "turn.completed", run=run)

    assert len(requests) == 3
    second_input = requests[1]["body"]["input"]
    outputs = [i for i in second_input if i.get("type") == "function_call_output"]
    assert len(outputs) == 1
    assert "exited with code 0" in outputs[0]["output"]
    third_input = requests[2]["body"]["input"]
    patched = [i for i in third_input if i.get("type") == "custom_tool_call_output"]
    assert len(patched) == 1
    assert "Success" in patched[0]["output"]


def test_codex_usage_limit_fails_the_turn(real_codex: Path, git_repo: Path,
                                          tmp_path: Path) -> None:
    resets_at = int(time.time()) + 3 * 3600
    script = {"turns": [{"repeat": -1, "error": {
        "status": 429,
        "headers": {"x-codex-primary-used-percent": "100",
                    "x-codex-primary-window-minutes": "300",
                    "x-codex-primary-reset-at": str(resets_at),
                    "x-request-id": "req_mock_usage_limit"},
        "body": {"error": {"type": "usage_limit_reached",
                           "message": "The usage limit has been reached",
                           "plan_type": "pro", "resets_at": resets_at}}}}]}
    with mock_openai.serve(script) as mock:
        # Default retry settings on purpose: a usage limit is never retried.
        env = codex_env(tmp_path, mock, provider={"request_max_retries": 4,
                                                  "stream_max_retries": 5})
        run = run_cli(_codex_exec(real_codex, git_repo, "Say hello"), env=env, cwd=git_repo)
        requests = mock.response_requests()

    events = run.events()
    assert run.returncode == 1, run.describe()
    assert len(requests) == 1
    failed = only(events, "turn.failed", run=run)["error"]["message"]
    assert failed.startswith("You’ve hit your usage limit."), failed  # U+2019 apostrophe
    reset = dt.datetime.fromtimestamp(resets_at, tz=dt.UTC)
    if reset.date() == dt.datetime.now(tz=dt.UTC).date():  # else "Dec 3rd, 2026 10:08 AM"
        assert failed.endswith(f"try again at {reset.strftime('%-I:%M %p')}."), failed
    assert of_type(events, "error")[-1]["message"] == failed
    assert of_type(events, "turn.completed") == []


def test_codex_rate_limit_fails_the_turn(real_codex: Path, git_repo: Path,
                                         tmp_path: Path) -> None:
    script = {"turns": [{"repeat": -1, "error": {
        "status": 429,
        "headers": {"retry-after": "1", "x-request-id": "req_mock_429"},
        "body": {"error": {"message": "Rate limit reached for gpt-5.5. Please try again in 1s.",
                           "type": "requests", "param": None,
                           "code": "rate_limit_exceeded"}}}}]}
    with mock_openai.serve(script) as mock:
        env = codex_env(tmp_path, mock)  # request_max_retries = stream_max_retries = 0
        run = run_cli(_codex_exec(real_codex, git_repo, "Say hello"), env=env, cwd=git_repo)
        requests = mock.response_requests()

    events = run.events()
    assert run.returncode == 1, run.describe()
    assert len(requests) == 1
    failed = only(events, "turn.failed", run=run)["error"]["message"]
    assert failed == ("exceeded retry limit, last status: 429 Too Many Requests, "
                      "request id: req_mock_429")


def test_codex_resume_thread(real_codex: Path, git_repo: Path, tmp_path: Path) -> None:
    script = {"turns": [{"text": "Noted: the word is PINEAPPLE."},
                        {"text": "The word was PINEAPPLE."}]}
    with mock_openai.serve(script) as mock:
        env = codex_env(tmp_path, mock)
        first = run_cli(_codex_exec(real_codex, git_repo, "Remember the word PINEAPPLE"),
                        env=env, cwd=git_repo)
        assert first.returncode == 0, first.describe()
        thread_id = only(first.events(), "thread.started", run=first)["thread_id"]
        # `exec resume` takes no --sandbox: the sandbox is not inherited, pass it with -c.
        second = run_cli([str(real_codex), "exec", "resume", "--json",
                          "-c", 'sandbox_mode="workspace-write"',
                          thread_id, "What was the word?"], env=env, cwd=git_repo)
        requests = mock.response_requests()

    events = second.events()
    assert second.returncode == 0, second.describe()
    assert only(events, "thread.started", run=second)["thread_id"] == thread_id
    answers = [e["item"]["text"] for e in of_type(events, "item.completed")
               if e["item"]["type"] == "agent_message"]
    assert answers == ["The word was PINEAPPLE."]
    # turn.completed usage is cumulative over the thread after a resume.
    assert only(events, "turn.completed", run=second)["usage"]["input_tokens"] == 2400

    assert len(requests) == 2
    resumed = requests[1]
    assert resumed["headers"]["session-id"] == thread_id
    texts = [c.get("text") for i in resumed["body"]["input"] if i.get("type") == "message"
             for c in i["content"]]
    assert "Remember the word PINEAPPLE" in texts
    assert "Noted: the word is PINEAPPLE." in texts
    assert texts[-1] == "What was the word?"
    rollouts = list((Path(env["CODEX_HOME"]) / "sessions").rglob(f"rollout-*{thread_id}.jsonl"))
    assert len(rollouts) == 1  # resume appends to the same rollout file
