"""CodexStreamParser over every recorded ``codex exec --json`` capture, plus specifics."""

from __future__ import annotations

import json
from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

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
    Usage,
    parse_event,
)
from relay.core.procs import ProcessResult
from relay.runtimes.codex_stream import (
    CodexStreamParser,
    classify_failure,
    parse_reset_time,
    stderr_message,
)
from tests.conftest import fixtures_root

CAPTURES = fixtures_root() / "codex" / "captures"
# The harness ran every scenario with TZ=UTC on 2026-11-30 around 10:08 UTC.
CAPTURE_NOW = datetime(2026, 11, 30, 10, 8, 5, tzinfo=UTC)


def _all_runs() -> list[tuple[str, str]]:
    if not CAPTURES.is_dir():
        return []
    return sorted((path.parent.name, path.name.split(".")[0])
                  for path in CAPTURES.glob("*/run*.stdout.jsonl"))


ALL_RUNS = _all_runs()


def run_meta(scenario: str, run: str) -> dict[str, Any]:
    runs = json.loads((CAPTURES / scenario / "runs.json").read_text(encoding="utf-8"))
    found: dict[str, Any] = next(r for r in runs if r["run"] == run)
    return found


def stdout_objects(scenario: str, run: str) -> list[dict[str, Any]]:
    text = (CAPTURES / scenario / f"{run}.stdout.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def process_result(scenario: str, run: str, **overrides: Any) -> ProcessResult:
    """How the recorded process ended, as AgentProcess would report it."""
    code = run_meta(scenario, run)["exit_code"]
    stderr = (CAPTURES / scenario / f"{run}.stderr.txt").read_text(encoding="utf-8")
    if not isinstance(code, int):  # "TIMEOUT after 15s (killed by harness)"
        result = ProcessResult(exit_code=None, signal=9, stderr_tail=stderr)
    elif code < 0:
        result = ProcessResult(exit_code=None, signal=-code, stderr_tail=stderr)
    else:
        result = ProcessResult(exit_code=code, signal=None, stderr_tail=stderr)
    for name, value in overrides.items():
        setattr(result, name, value)
    return result


def replay(scenario: str, run: str = "run1", parser: CodexStreamParser | None = None,
           **result_overrides: Any) -> list[AgentEvent]:
    parser = parser or make_parser()
    text = (CAPTURES / scenario / f"{run}.stdout.jsonl").read_text(encoding="utf-8")
    events: list[AgentEvent] = []
    for line in text.splitlines():
        events += parser.feed_text(line)
    events += parser.finish(process_result(scenario, run, **result_overrides))
    return events


def make_parser(**kwargs: Any) -> CodexStreamParser:
    kwargs.setdefault("now", lambda: CAPTURE_NOW)
    kwargs.setdefault("tz", UTC)
    return CodexStreamParser(**kwargs)


def of(events: list[AgentEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def ended(events: list[AgentEvent]) -> SessionEnded:
    last = events[-1]
    assert isinstance(last, SessionEnded)
    return last


def expected_outcome(scenario: str, run: str) -> str:
    """What the recording says happened, independent of the parser."""
    code = run_meta(scenario, run)["exit_code"]
    types = [obj.get("type") for obj in stdout_objects(scenario, run)]
    if code == 0:
        return "completed"
    if isinstance(code, int) and code > 0:
        # Exit 1 after turn.started without turn.failed is codex's answer to SIGINT (e8).
        interrupted = "turn.started" in types and "turn.failed" not in types
        return "interrupted" if interrupted else "failed"
    return "interrupted"  # killed by a signal (e7) or by the harness (h3)


# ---------------------------------------------------------------------------
# Invariants over every capture
# ---------------------------------------------------------------------------


def test_the_captures_are_there() -> None:
    assert len(ALL_RUNS) >= 40, f"codex captures missing under {CAPTURES}"


@pytest.mark.parametrize(("scenario", "run"), ALL_RUNS)
def test_exactly_one_session_ended_and_it_is_last(scenario: str, run: str) -> None:
    events = replay(scenario, run)
    assert len(of(events, SessionEnded)) == 1
    assert isinstance(events[-1], SessionEnded)


@pytest.mark.parametrize(("scenario", "run"), ALL_RUNS)
def test_outcome_matches_the_recorded_exit(scenario: str, run: str) -> None:
    end = ended(replay(scenario, run))
    assert end.outcome == expected_outcome(scenario, run), end.reason
    if end.outcome == "failed":
        assert end.reason
        fatal = [e for e in of(replay(scenario, run), AgentError) if e.fatal]
        assert fatal, "a failed run says why with a fatal AgentError"


@pytest.mark.parametrize(("scenario", "run"), ALL_RUNS)
def test_reconnecting_is_a_retry_notice_never_an_error(scenario: str, run: str) -> None:
    events = replay(scenario, run)
    recorded = [o["message"] for o in stdout_objects(scenario, run)
                if o.get("type") == "error" and o["message"].startswith("Reconnecting...")]
    retries = [e.message for e in of(events, Notice) if e.category == "retry"]
    assert retries == recorded
    assert not [e for e in of(events, AgentError) if "Reconnecting" in e.message]


@pytest.mark.parametrize(("scenario", "run"), ALL_RUNS)
def test_structure_of_every_run(scenario: str, run: str) -> None:
    events = replay(scenario, run)
    objects = stdout_objects(scenario, run)
    started = [o["thread_id"] for o in objects if o.get("type") == "thread.started"]
    assert [e.agent_session_id for e in of(events, SessionStarted)] == started
    calls = [e.call_id for e in of(events, ToolCall)]
    assert len(calls) == len(set(calls)), "one ToolCall per item"
    assert all(r.call_id in calls for r in of(events, ToolResult))
    assert all(e.runtime == "codex" for e in events)
    if ended(events).outcome == "completed":
        assert not [e for e in of(events, AgentError) if e.fatal]
        assert len(of(events, TurnCompleted)) == 1
    for event in events:  # everything survives the store's JSON round trip
        assert parse_event(event.model_dump_json()) == event


# ---------------------------------------------------------------------------
# Specific scenarios
# ---------------------------------------------------------------------------


def test_text_answer_with_reasoning() -> None:
    events = replay("a_text")
    texts = of(events, AssistantText)
    assert [(t.text, t.reasoning) for t in texts] == [
        ("Thinking about greeting.", True), ("Hello from the mock model.", False)]
    assert ended(events).result_text == "Hello from the mock model."
    assert of(events, SessionStarted)[0].agent_session_id == "01a22bed-0904-78e3-b9c9-4d5201b401bf"


def test_shell_call_patch_and_usage() -> None:
    events = replay("b_tool_shell_and_patch")
    calls, results = of(events, ToolCall), of(events, ToolResult)
    assert [c.name for c in calls] == ["shell", "file_change"]
    assert calls[0].input == {"command": "/bin/bash -lc 'echo hi'"}
    assert (results[0].output, results[0].exit_code, results[0].is_error) == ("hi\n", 0, False)
    assert [c["kind"] for c in calls[1].input["changes"]] == ["update", "add"]
    assert results[1].call_id == calls[1].call_id
    assert results[1].output == "M <CWD>/README.md\nA <CWD>/hello.txt"
    assert results[1].is_error is False
    # The call comes at item.started, before the command ran.
    assert events.index(calls[0]) < events.index(results[0])
    usage = of(events, TurnCompleted)[0].usage
    assert usage == Usage(input_tokens=3600, output_tokens=120, cache_read_tokens=3000,
                          cache_write_tokens=0, reasoning_tokens=24, cost_usd=None)
    assert ended(events).result_text == "Done: ran echo and created hello.txt."


def test_failed_command_is_an_error_result() -> None:
    events = replay("b2_command_fails")
    result = of(events, ToolResult)[0]
    assert (result.exit_code, result.is_error, result.output) == (3, True, "to-stderr\n")
    assert ended(events).outcome == "completed"


def test_http429_exhausted_is_a_blocking_rate_limit() -> None:
    events = replay("c_http429_rate_limit")
    limit = of(events, LimitHit)
    assert [(x.limit, x.blocking) for x in limit] == [("rate_limit", True)]
    error = [e for e in of(events, AgentError) if e.fatal]
    assert [(e.category, e.http_status) for e in error] == [("rate_limit", 429)]
    assert len([n for n in of(events, Notice) if n.category == "retry"]) == 5
    end = ended(events)
    assert end.outcome == "failed"
    assert end.reason is not None
    assert "last status: 429" in end.reason


def test_sse_rate_limit_resets_after_the_hinted_delay() -> None:
    limit = of(replay("c3_sse_rate_limit_exhausted"), LimitHit)[0]
    assert limit.limit == "rate_limit"
    assert limit.resets_at == CAPTURE_NOW + timedelta(seconds=0.5)


@pytest.mark.parametrize(("scenario", "resets_at"), [
    ("d_usage_limit_pro", datetime(2026, 11, 30, 13, 8, tzinfo=UTC)),
    ("d2_usage_limit_plus_other_day", datetime(2026, 12, 3, 10, 8, tzinfo=UTC)),
    ("d3_usage_limit_team", datetime(2026, 11, 30, 11, 38, tzinfo=UTC)),
    ("d4_usage_limit_no_reset_info", None),
])
def test_usage_limit_with_reset_time(scenario: str, resets_at: datetime | None) -> None:
    events = replay(scenario)
    limits = of(events, LimitHit)
    assert [(x.limit, x.resets_at) for x in limits] == [("usage_limit", resets_at)]
    assert [e.category for e in of(events, AgentError)] == ["usage_limit"]
    assert ended(events).outcome == "failed"
    assert ended(events).reason == limits[0].message


def test_usage_limit_reported_inside_a_stream_error() -> None:
    limits = of(replay("d5_usage_limit_in_sse"), LimitHit)
    assert [(x.limit, x.resets_at) for x in limits] == [("usage_limit", None)]


def test_insufficient_quota() -> None:
    events = replay("d6_insufficient_quota_sse")
    assert [x.limit for x in of(events, LimitHit)] == ["quota"]
    assert ended(events).outcome == "failed"


@pytest.mark.parametrize("scenario", [
    "e_http500_retries", "e4_http500_default_retries", "e2_http503_server_is_overloaded"])
def test_server_errors_are_overload(scenario: str) -> None:
    events = replay(scenario)
    assert [e.category for e in of(events, AgentError)] == ["overloaded"]
    assert [x.limit for x in of(events, LimitHit)] == ["overloaded"]


@pytest.mark.parametrize(("scenario", "category"), [
    ("e6_idle_timeout", "network"),
    ("h2_missing_api_key_env", "config"),
    ("f3_resume_unknown_id", "resume"),
    ("g6_not_a_git_repo", "config"),
    ("h4_wire_api_chat", "config"),
])
def test_failure_categories(scenario: str, category: str) -> None:
    events = replay(scenario)
    assert [e.category for e in of(events, AgentError) if e.fatal] == [category]
    assert not of(events, LimitHit)
    assert ended(events).outcome == "failed"


def test_stderr_only_failure_carries_the_message() -> None:
    end = ended(replay("f3_resume_unknown_id"))
    assert end.reason is not None
    assert "no rollout found for thread id 00000000-0000-4000-8000-000000000000" in end.reason
    assert end.exit_code == 1
    config = ended(replay("h4_wire_api_chat"))
    assert config.reason is not None
    assert config.reason.startswith("Error loading config.toml")
    assert "Reading additional input" not in config.reason


def test_reconnect_then_success() -> None:
    events = replay("e3_http503_plain_then_ok")
    assert len([n for n in of(events, Notice) if n.category == "retry"]) == 2
    assert not of(events, AgentError)
    assert not of(events, LimitHit)
    assert ended(events).outcome == "completed"


def test_resumed_usage_is_reported_per_turn() -> None:
    first = make_parser()
    replay("f_resume_by_id", "run1", first)
    assert first.thread_total is not None
    assert first.thread_total.input_tokens == 1200
    second = make_parser(previous_total=first.thread_total)
    events = replay("f_resume_by_id", "run2", second)
    usage = of(events, TurnCompleted)[0].usage
    assert usage == Usage(input_tokens=1200, output_tokens=40, cache_read_tokens=1000,
                          cache_write_tokens=0, reasoning_tokens=8)
    assert second.thread_total is not None
    assert second.thread_total.input_tokens == 2400


def test_without_previous_total_the_cumulative_reading_is_all_we_have() -> None:
    usage = of(replay("f_resume_by_id", "run2"), TurnCompleted)[0].usage
    assert usage.input_tokens == 2400


def test_three_runs_of_one_thread_chain_their_totals() -> None:
    total: Usage | None = None
    per_turn = []
    for run in ("run1", "run2", "run3"):
        parser = make_parser(previous_total=total)
        per_turn.append(of(replay("f5_resume_sandbox_inheritance", run, parser),
                           TurnCompleted)[0].usage.input_tokens)
        total = parser.thread_total
    assert per_turn == [1200, 2400, 2400]
    assert total is not None
    assert total.input_tokens == 6000


def test_failed_run_keeps_the_previous_total() -> None:
    earlier = Usage(input_tokens=500)
    parser = make_parser(previous_total=earlier)
    replay("d_usage_limit_pro", parser=parser)
    assert parser.thread_total == earlier


def test_unknown_model_warning_is_not_fatal() -> None:
    events = replay("a3_unknown_model")
    errors = of(events, AgentError)
    assert len(errors) == 1
    assert errors[0].fatal is False
    assert errors[0].message.startswith("Model metadata for `mock-model` not found")
    assert ended(events).outcome == "completed"


def test_sigterm_mid_turn_is_interrupted() -> None:
    end = ended(replay("e7_sigterm_midturn"))
    assert (end.outcome, end.reason) == ("interrupted", "killed by signal 15")


def test_sigint_mid_turn_is_interrupted_not_failed() -> None:
    events = replay("e8_sigint_midturn")
    assert ended(events).outcome == "interrupted"
    assert ended(events).exit_code == 1
    assert not of(events, AgentError)


def test_stop_by_relay_is_cancelled() -> None:
    events = replay("e8_sigint_midturn", stopped=True)
    assert ended(events).outcome == "cancelled"
    assert len(of(events, SessionEnded)) == 1


def test_stalled_run_fails() -> None:
    end = ended(replay("e8_sigint_midturn", stalled=True, exit_code=None, signal=2))
    assert (end.outcome, end.reason) == ("failed", "agent stalled")


@pytest.mark.parametrize(("scenario", "tool"), [
    ("g2_sandbox_readonly_apply_patch", "apply_patch"),
    ("g3_escalation_request_on_request_policy", "shell"),
])
def test_denied_tool_calls_surface_from_stderr(scenario: str, tool: str) -> None:
    events = replay(scenario)
    denied = of(events, PermissionDenied)
    assert [d.tool for d in denied] == [tool]
    assert ended(events).outcome == "completed"
    assert events.index(denied[0]) < len(events) - 1


def test_failed_patch_verification_is_a_warning() -> None:
    events = replay("b3_patch_fails")
    warnings = [n for n in of(events, Notice) if n.category == "warning"]
    assert len(warnings) == 1
    assert "apply_patch verification failed" in warnings[0].message
    assert not of(events, PermissionDenied)


def test_call_ids_are_unique_across_runs_of_a_thread() -> None:
    first = of(replay("f5_resume_sandbox_inheritance", "run3"), ToolCall)
    second = of(replay("f5_resume_sandbox_inheritance", "run3"), ToolCall)
    assert first[0].call_id != second[0].call_id
    keyed = of(replay("f5_resume_sandbox_inheritance", "run3", make_parser(run_key="r7")),
               ToolCall)
    assert keyed[0].call_id == "r7:item_0"


# ---------------------------------------------------------------------------
# Synthetic lines (shapes from codex's exec event types, not seen in the captures)
# ---------------------------------------------------------------------------


def feed_all(parser: CodexStreamParser, objects: list[dict[str, Any]]) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    for obj in objects:
        events += parser.feed(obj)
    return events


def ok(stderr: str = "") -> ProcessResult:
    return ProcessResult(exit_code=0, signal=None, stderr_tail=stderr)


def test_command_completed_without_started_still_gets_its_call() -> None:
    parser = make_parser(run_key="k")
    events = feed_all(parser, [{"type": "item.completed", "item": {
        "id": "item_5", "type": "command_execution", "command": "ls",
        "aggregated_output": "a\n", "exit_code": 0, "status": "completed"}}])
    assert [type(e).__name__ for e in events] == ["ToolCall", "ToolResult"]
    assert events[0].call_id == events[1].call_id == "k:item_5"  # type: ignore[union-attr]


def test_mcp_web_search_and_todo_items() -> None:
    parser = make_parser(run_key="k")
    mcp = {"id": "item_1", "type": "mcp_tool_call", "server": "docs", "tool": "find",
           "arguments": {"q": "x"}, "status": "in_progress"}
    events = feed_all(parser, [
        {"type": "item.started", "item": mcp},
        {"type": "item.completed", "item": {**mcp, "status": "failed",
                                            "error": {"message": "server gone"}}},
        {"type": "item.completed", "item": {"id": "item_2", "type": "web_search",
                                            "query": "relay"}},
        {"type": "item.started", "item": {"id": "item_3", "type": "todo_list", "items": [
            {"text": "read", "completed": False}]}},
        {"type": "item.updated", "item": {"id": "item_3", "type": "todo_list", "items": [
            {"text": "read", "completed": True}]}},
        {"type": "item.completed", "item": {"id": "item_3", "type": "todo_list", "items": [
            {"text": "read", "completed": True}]}},
    ])
    calls = of(events, ToolCall)
    assert [(c.name, c.input.get("arguments")) for c in calls] == [
        ("mcp__docs__find", {"q": "x"}), ("web_search", None)]
    assert calls[1].input == {"query": "relay"}
    results = of(events, ToolResult)
    assert [(r.output, r.is_error) for r in results] == [("server gone", True), ("", None)]
    plans = [n.message for n in of(events, Notice)]
    assert plans == ["Plan:\n[ ] read", "Plan:\n[x] read"]


def test_error_without_turn_failed_is_reported_as_non_fatal() -> None:
    parser = make_parser()
    events = feed_all(parser, [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {"type": "error", "message": "something odd"},
        {"type": "turn.completed", "usage": {"input_tokens": 1}},
    ])
    events += parser.finish(ok())
    errors = of(events, AgentError)
    assert [(e.message, e.fatal) for e in errors] == [("something odd", False)]
    assert ended(events).outcome == "completed"


def test_trailing_error_of_a_dying_process_is_the_failure() -> None:
    parser = make_parser()
    events = feed_all(parser, [{"type": "thread.started", "thread_id": "t"},
                               {"type": "turn.started"},
                               {"type": "error", "message": "Quota exceeded. Check billing."}])
    events += parser.finish(ProcessResult(exit_code=1, signal=None, stderr_tail=""))
    assert [x.limit for x in of(events, LimitHit)] == ["quota"]
    assert ended(events).outcome == "failed"
    assert ended(events).reason == "Quota exceeded. Check billing."


def test_silent_crash_before_any_turn_fails() -> None:
    parser = make_parser()
    events = parser.finish(ProcessResult(exit_code=2, signal=None,
                                         stderr_tail="Reading additional input from stdin...\n"))
    assert [e.category for e in of(events, AgentError)] == ["process"]
    assert ended(events).outcome == "failed"


def test_malformed_line_is_reported_not_fatal() -> None:
    events = make_parser().feed_text("not json")
    assert [(e.category, e.fatal) for e in of(events, AgentError)] == [("malformed", False)]


def test_unknown_line_types_are_ignored() -> None:
    parser = make_parser()
    assert parser.feed({"type": "future.event", "x": 1}) == []
    assert parser.feed({"type": "item.completed", "item": {"id": "i", "type": "new_kind"}}) == []


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("message", [
    "You’ve hit your usage limit. Try again later.",
    "You've hit your usage limit. Try again later.",
])
def test_both_apostrophes_classify(message: str) -> None:
    assert classify_failure(message).limit == "usage_limit"


@pytest.mark.parametrize(("message", "category"), [
    ("We're currently experiencing high demand, which may cause temporary errors.", "overloaded"),
    ("unexpected status 502 Bad Gateway: upstream", "overloaded"),
    ("unexpected status 401 Unauthorized: bad key", "auth"),
    ("unexpected status 400 Bad Request: nope", "request"),
    ("stream disconnected before completion: stream closed", "network"),
    ("something else entirely", "unknown"),
])
def test_classification_rules(message: str, category: str) -> None:
    assert classify_failure(message).category == category


def test_reset_time_uses_the_process_timezone() -> None:
    message = "You’ve hit your usage limit. Visit x or try again at 1:08 PM."
    new_york = ZoneInfo("America/New_York")  # EST (UTC-5) at the end of November
    assert parse_reset_time(message, CAPTURE_NOW, new_york) == datetime(
        2026, 11, 30, 18, 8, tzinfo=UTC)
    assert parse_reset_time(message, CAPTURE_NOW, UTC) == datetime(2026, 11, 30, 13, 8, tzinfo=UTC)


@pytest.mark.parametrize(("text", "expected"), [
    ("try again at 12:05 AM.", datetime(2026, 11, 30, 0, 5, tzinfo=UTC)),
    ("try again at 12:30 PM.", datetime(2026, 11, 30, 12, 30, tzinfo=UTC)),
    ("Try again at Jan 1st, 2027 9:00 AM.", datetime(2027, 1, 1, 9, 0, tzinfo=UTC)),
    ("Please try again in 1m30s.", CAPTURE_NOW + timedelta(seconds=90)),
    ("Please try again in 250ms.", CAPTURE_NOW + timedelta(milliseconds=250)),
    ("Try again later.", None),
    ("try again at Foo 1st, 2027 9:00 AM.", None),
])
def test_reset_time_formats(text: str, expected: datetime | None) -> None:
    assert parse_reset_time(text, CAPTURE_NOW, UTC) == expected


def test_reset_time_defaults_to_local_time() -> None:
    local_day = CAPTURE_NOW.astimezone().date()
    expected = datetime.combine(local_day, time(13, 8)).astimezone().astimezone(UTC)
    assert parse_reset_time("try again at 1:08 PM.", CAPTURE_NOW) == expected


def test_stderr_message_drops_noise() -> None:
    stderr = ("Reading additional input from stdin...\n"
              "2026-11-30T10:08:13.031424Z ERROR codex_core::tools::router: error=x\n"
              "Error: boom\n")
    assert stderr_message(stderr) == "Error: boom"
    assert stderr_message("Reading additional input from stdin...\n") is None


def test_session_started_reports_what_relay_asked_for() -> None:
    parser = CodexStreamParser(model="gpt-5.5", cwd="/w", permission_mode="workspace-write",
                               now=lambda: CAPTURE_NOW)
    started = parser.feed({"type": "thread.started", "thread_id": "abc"})[0]
    assert isinstance(started, SessionStarted)
    assert (started.model, started.cwd, started.permission_mode) == (
        "gpt-5.5", "/w", "workspace-write")
    assert parser.thread_id == "abc"

