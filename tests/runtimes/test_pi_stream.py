"""The Pi ``--mode json`` parser over every recorded capture (pi 0.73.1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from relay.core.events import (
    AgentError,
    AgentEvent,
    AssistantText,
    LimitHit,
    Notice,
    PermissionDenied,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
)
from relay.core.procs import ProcessResult
from relay.runtimes.pi_stream import PiStreamParser, pi_usage
from tests.conftest import fixtures_root

CAPTURES = fixtures_root() / "pi" / "captures"


def _json_runs() -> list[tuple[str, str]]:
    return sorted((folder.name, path.name.split(".")[0])
                  for folder in CAPTURES.iterdir()
                  for path in folder.glob("run*.stdout.jsonl"))


def _exit_code(scenario: str, run: str) -> int:
    runs = json.loads((CAPTURES / scenario / "runs.json").read_text())
    return int(runs[int(run.removeprefix("run")) - 1]["exit_code"])


def parse(scenario: str, run: str = "run1", tools: list[str] | None = None) -> list[AgentEvent]:
    parser = PiStreamParser(model="mock-model", tools=tools)
    events: list[AgentEvent] = []
    for line in (CAPTURES / scenario / f"{run}.stdout.jsonl").read_text().splitlines():
        events += parser.feed_text(line)
    stderr = (CAPTURES / scenario / f"{run}.stderr.txt").read_text()
    events += parser.finish(ProcessResult(_exit_code(scenario, run), None, stderr))
    return events


def of(events: list[AgentEvent], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def test_every_json_capture_is_covered() -> None:
    names = {name for name, _ in _json_runs()}
    assert len(_json_runs()) >= 16
    assert {"a_text_json", "b_tools_bash_write_edit", "b2_tool_fails", "c_429_then_ok",
            "c2_429_exhausted", "d_usage_limit_codex_style", "d2_insufficient_quota",
            "e_503_overloaded", "e2_500_then_ok", "e3_disconnect_then_ok",
            "e4_503_default_retry_settings", "f_resume", "g_tools_allowlist",
            "h2_missing_api_key", "h_rpc_mode"} <= names


@pytest.mark.parametrize(("scenario", "run"), _json_runs())
def test_exactly_one_session_ended_last_and_no_malformed(scenario: str, run: str) -> None:
    events = parse(scenario, run)
    ended = of(events, SessionEnded)
    assert len(ended) == 1
    assert events[-1] is ended[0]
    assert not [e for e in of(events, AgentError) if e.category == "malformed"]


def test_text_answer_with_reasoning_usage_and_cost() -> None:
    events = parse("a_text_json")
    started = of(events, SessionStarted)
    assert [s.agent_session_id for s in started] == ["01a22bed-0e8c-76ee-9b54-3ab020b40759"]
    texts = of(events, AssistantText)
    assert [(t.text, t.reasoning) for t in texts] == [
        ("Thinking about it.", True), ("Hello from the mock chat model.", False)]
    (turn,) = of(events, TurnCompleted)
    assert turn.usage.input_tokens == 300
    assert turn.usage.cache_read_tokens == 800
    assert turn.usage.output_tokens == 25
    assert turn.usage.cost_usd == pytest.approx(0.000725)
    assert turn.result_text == "Hello from the mock chat model."
    ended = events[-1]
    assert isinstance(ended, SessionEnded)
    assert ended.outcome == "completed"
    assert ended.result_text == "Hello from the mock chat model."


def test_tools_stream_as_calls_and_results_with_usage_per_message() -> None:
    events = parse("b_tools_bash_write_edit")
    calls = of(events, ToolCall)
    assert [c.name for c in calls] == ["bash", "write", "edit"]
    assert calls[0].input == {"command": "echo hi"}
    results = {r.call_id: r for r in of(events, ToolResult)}
    assert set(results) == {c.call_id for c in calls}
    bash = results[calls[0].call_id]
    assert bash.output == "hi\n"
    assert bash.is_error is False
    assert bash.exit_code == 0
    turns = of(events, TurnCompleted)
    assert len(turns) == 3  # one per model call
    assert sum(t.usage.cost_usd or 0 for t in turns) == pytest.approx(3 * 0.000725)
    assert [t.result_text for t in turns][:2] == [None, None]
    assert events[-1].outcome == "completed"  # type: ignore[union-attr]


def test_failed_tools_are_errors_with_the_exit_code() -> None:
    events = parse("b2_tool_fails")
    results = of(events, ToolResult)
    assert all(r.is_error for r in results)
    assert sorted(r.exit_code for r in results if r.exit_code is not None) == [3]
    assert any("ENOENT" in r.output for r in results)
    assert events[-1].outcome == "completed"  # type: ignore[union-attr]


def test_disallowed_tool_is_an_error_result_and_a_refusal() -> None:
    events = parse("g_tools_allowlist", tools=["read", "ls"])  # recorded with --tools read,ls
    (result,) = of(events, ToolResult)
    assert result.output == "Tool bash not found"
    assert result.is_error is True
    (denied,) = of(events, PermissionDenied)
    assert (denied.tool, denied.call_id) == ("bash", result.call_id)
    assert denied.detail == "Tool bash not found (tools: read, ls)"


def test_an_unknown_tool_is_no_refusal() -> None:
    parser = PiStreamParser(tools=["read", "bash", "edit", "write"])
    events = parser.feed({"type": "tool_execution_end", "toolCallId": "c1",
                          "toolName": "made_up", "isError": True,
                          "result": {"content": [{"type": "text", "text": "Tool made_up not found"}]}})
    assert [e.kind for e in events] == ["tool_result"]


@pytest.mark.parametrize(("scenario", "limit", "status"), [
    ("c2_429_exhausted", "rate_limit", 429),
    ("d_usage_limit_codex_style", "usage_limit", 429),
    ("d2_insufficient_quota", "quota", 429),
    ("e_503_overloaded", "overloaded", 503),
    ("e4_503_default_retry_settings", "overloaded", 503),
])
def test_exhausted_retries_fail_although_pi_exits_0(scenario: str, limit: str, status: int) -> None:
    assert _exit_code(scenario, "run1") == 0
    events = parse(scenario)
    (hit,) = of(events, LimitHit)
    assert hit.limit == limit
    assert hit.blocking
    errors = of(events, AgentError)
    assert len(errors) == 1
    assert errors[0].http_status == status
    retries = [n for n in of(events, Notice) if n.category == "retry"]
    assert len(retries) >= 2
    ended = events[-1]
    assert isinstance(ended, SessionEnded)
    assert ended.outcome == "failed"
    assert ended.reason == hit.message
    assert not of(events, TurnCompleted)


@pytest.mark.parametrize("scenario", ["c_429_then_ok", "e2_500_then_ok"])
def test_a_retry_that_succeeds_is_a_notice(scenario: str) -> None:
    events = parse(scenario)
    assert not of(events, LimitHit)
    assert not of(events, AgentError)
    assert [n.category for n in of(events, Notice)] == ["retry"]
    assert events[-1].outcome == "completed"  # type: ignore[union-attr]
    assert events[-1].result_text == "Recovered answer after retry."  # type: ignore[union-attr]


def test_a_cut_stream_completes_with_a_warning() -> None:
    events = parse("e3_disconnect_then_ok")
    assert any(n.category == "warning" for n in of(events, Notice))
    assert events[-1].result_text == "Partial "  # type: ignore[union-attr]


def test_resumed_run_keeps_the_session_id() -> None:
    ids = {of(parse("f_resume", run), SessionStarted)[0].agent_session_id
           for run in ("run1", "run2", "run3")}
    assert ids == {"01a22bed-e6d7-7697-9321-711a188928b2"}


def test_rpc_output_parses_without_a_header() -> None:
    events = parse("h_rpc_mode")
    assert not of(events, SessionStarted)
    assert [c.name for c in of(events, ToolCall)] == ["bash"]
    assert events[-1].result_text == "RPC answer."  # type: ignore[union-attr]


def test_last_attempt_failing_without_retry_events_fails() -> None:
    parser = PiStreamParser()
    error = {"type": "message_end", "message": {
        "role": "assistant", "content": [], "stopReason": "error",
        "errorMessage": "401 Incorrect API key provided: MOCK_API_KEY", "usage": {}}}
    events = parser.feed(error) + parser.finish(ProcessResult(0, None, ""))
    assert of(events, AgentError)[0].category == "auth"
    assert events[-1].outcome == "failed"  # type: ignore[union-attr]


def test_nonzero_exit_reports_stderr() -> None:
    parser = PiStreamParser()
    events = parser.finish(ProcessResult(1, None, "Error: No session found matching 'x'\n"))
    assert events[-1].outcome == "failed"  # type: ignore[union-attr]
    assert "No session found" in (events[-1].reason or "")  # type: ignore[union-attr]


def test_usage_without_cost_is_unknown_not_zero() -> None:
    usage = pi_usage({"input": 1, "output": 2})
    assert usage.cost_usd is None
    assert usage.reasoning_tokens is None


def test_captures_folder_exists() -> None:
    assert Path(CAPTURES).is_dir()
