"""GeminiStreamParser over every recorded Gemini CLI 0.61.0 capture, plus the traps."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
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
    Usage,
    parse_event,
)
from relay.core.procs import ProcessResult
from relay.runtimes.gemini_files import ChatState, read_chat
from relay.runtimes.gemini_stream import (
    GeminiStreamParser,
    classify_failure,
    gemini_usage,
    retry_notices,
    status_from_exit,
    stderr_error_document,
    stderr_message,
)
from tests.conftest import fixtures_root

CAPTURES = fixtures_root() / "gemini" / "captures"
# The harness ran every scenario with TZ=UTC on 2026-11-30 around 10:08 UTC.
CAPTURE_NOW = datetime(2026, 11, 30, 10, 9, 2, tzinfo=UTC)


def _runs() -> list[tuple[str, int, dict[str, Any]]]:
    if not CAPTURES.is_dir():
        return []
    found = []
    for scenario in sorted(p for p in CAPTURES.iterdir() if (p / "runs.json").is_file()):
        for index, meta in enumerate(json.loads((scenario / "runs.json").read_text()), 1):
            found.append((scenario.name, index, meta))
    return found


def _format(meta: dict[str, Any]) -> str:
    argv = meta["argv"]
    return argv[argv.index("--output-format") + 1] if "--output-format" in argv else "text"


ALL_RUNS = _runs()
STREAM_RUNS = [(s, i) for s, i, meta in ALL_RUNS if _format(meta) == "stream-json"]
#: runs with another output format: the adapter never asks for one, but their failures
#: (an error document on stderr) are still read at exit
OTHER_RUNS = [(s, i) for s, i, meta in ALL_RUNS if _format(meta) != "stream-json"]


def meta_of(scenario: str, run: int) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((CAPTURES / scenario / "runs.json").read_text())[run - 1]
    return found


def stdout_objects(scenario: str, run: int) -> list[dict[str, Any]]:
    path = CAPTURES / scenario / f"run{run}.stdout.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def process_result(scenario: str, run: int, **overrides: Any) -> ProcessResult:
    stderr = (CAPTURES / scenario / f"run{run}.stderr.txt").read_text(encoding="utf-8")
    result = ProcessResult(exit_code=meta_of(scenario, run)["exit_code"], signal=None,
                           stderr_tail=stderr)
    for name, value in overrides.items():
        setattr(result, name, value)
    return result


def make_parser(**kwargs: Any) -> GeminiStreamParser:
    kwargs.setdefault("now", lambda: CAPTURE_NOW)
    return GeminiStreamParser(**kwargs)


def replay(scenario: str, run: int = 1, parser: GeminiStreamParser | None = None,
           **overrides: Any) -> list[AgentEvent]:
    parser = parser or make_parser()
    events: list[AgentEvent] = []
    if _format(meta_of(scenario, run)) == "stream-json":
        text = (CAPTURES / scenario / f"run{run}.stdout.jsonl").read_text(encoding="utf-8")
        for line in text.splitlines():
            events += parser.feed_text(line)
    return events + parser.finish(process_result(scenario, run, **overrides))


def of(events: list[AgentEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def ended(events: list[AgentEvent]) -> SessionEnded:
    assert len(of(events, SessionEnded)) == 1
    last = events[-1]
    assert isinstance(last, SessionEnded)
    return last


def capture_chat(scenario: str) -> ChatState:
    chat = next((CAPTURES / scenario / "dot_gemini" / "tmp").glob("*/chats/session-*.jsonl"))
    state = read_chat(chat)
    assert state is not None
    return state


# ---------------------------------------------------------------------------
# Invariants over every stream-json capture
# ---------------------------------------------------------------------------


def test_the_captures_are_there() -> None:
    assert len(STREAM_RUNS) >= 20, f"gemini captures missing under {CAPTURES}"
    assert {s for s, _ in OTHER_RUNS} >= {"a2_text_json", "a3_text_plain", "c3_429_plain",
                                          "d2_429_daily_quota_json"}


@pytest.mark.parametrize(("scenario", "run"), STREAM_RUNS)
def test_exactly_one_session_ended_and_it_is_last(scenario: str, run: int) -> None:
    ended(replay(scenario, run))


@pytest.mark.parametrize(("scenario", "run"), STREAM_RUNS)
def test_outcome_follows_the_result_line_and_the_exit(scenario: str, run: int) -> None:
    events = replay(scenario, run)
    end = ended(events)
    code = meta_of(scenario, run)["exit_code"]
    results = [o for o in stdout_objects(scenario, run) if o["type"] == "result"]
    ok = bool(results) and results[-1]["status"] == "success" and code == 0
    assert end.outcome == ("completed" if ok else "failed"), end.reason
    assert end.exit_code == code
    if not ok:
        assert end.reason
        assert [e for e in of(events, AgentError) if e.fatal], "a failed run says why"
    else:
        assert not of(events, AgentError)


@pytest.mark.parametrize(("scenario", "run"), STREAM_RUNS)
def test_session_id_and_one_turn_per_result(scenario: str, run: int) -> None:
    objects = stdout_objects(scenario, run)
    events = replay(scenario, run)
    inits = [o for o in objects if o["type"] == "init"]
    assert [e.agent_session_id for e in of(events, SessionStarted)] == [
        o["session_id"] for o in inits]
    assert len(of(events, TurnCompleted)) == sum(o["type"] == "result" for o in objects)


@pytest.mark.parametrize(("scenario", "run"), STREAM_RUNS)
def test_every_tool_call_gets_its_result(scenario: str, run: int) -> None:
    events = replay(scenario, run)
    calls = [e.call_id for e in of(events, ToolCall)]
    assert calls == [e.call_id for e in of(events, ToolResult)]
    assert len(set(calls)) == len(calls)
    # the shell's exit code is not in stream-json: unknown, never 0
    assert all(e.exit_code is None for e in of(events, ToolResult))


@pytest.mark.parametrize(("scenario", "run"), STREAM_RUNS)
def test_usage_is_per_run_and_cost_is_unknown(scenario: str, run: int) -> None:
    objects = stdout_objects(scenario, run)
    for turn, result in zip(of(replay(scenario, run), TurnCompleted),
                            [o for o in objects if o["type"] == "result"], strict=True):
        stats = result["stats"]
        usage = turn.usage
        assert usage.cost_usd is None
        assert usage.input_tokens == stats["input"]
        assert usage.cache_read_tokens == stats["cached"]
        assert usage.output_tokens == stats["total_tokens"] - stats["input_tokens"]
        assert (usage.input_tokens or 0) + (usage.cache_read_tokens or 0) + (
            usage.output_tokens or 0) == stats["total_tokens"]


@pytest.mark.parametrize(("scenario", "run"), STREAM_RUNS)
def test_every_event_round_trips_through_the_store_format(scenario: str, run: int) -> None:
    for event in replay(scenario, run):
        assert parse_event(event.model_dump_json()) == event


# ---------------------------------------------------------------------------
# Text, tools and usage
# ---------------------------------------------------------------------------


def test_text_deltas_are_joined_into_one_message() -> None:
    events = replay("a_text_stream_json")
    assert [t.text for t in of(events, AssistantText)] == ["Hello from the mock Gemini model."]
    started = of(events, SessionStarted)[0]
    assert (started.agent_session_id, started.model) == (
        "51b047ff-7bb1-4341-a5ca-f3a8c76edca4", "gemini-2.5-pro")
    end = ended(events)
    assert (end.outcome, end.result_text) == ("completed", "Hello from the mock Gemini model.")


def test_usage_maps_prompt_cache_and_thoughts() -> None:
    usage = of(replay("a_text_stream_json"), TurnCompleted)[0].usage
    # stats: total 1560, input_tokens 1500 (prompt incl. 1000 cached), output_tokens 30
    assert usage == Usage(input_tokens=500, output_tokens=60, cache_read_tokens=1000,
                          reasoning_tokens=30, cost_usd=None)


def test_usage_never_invents_zeros() -> None:
    assert gemini_usage(None) == Usage()
    assert gemini_usage({"input_tokens": 10}) == Usage(input_tokens=10)
    # output without a total: the candidates only, reasoning unknown
    assert gemini_usage({"output_tokens": 7}) == Usage(output_tokens=7)


def test_tools_stream_in_order_with_text_segments() -> None:
    events = replay("b_tools_yolo")
    kinds = [e.kind for e in events]
    assert kinds == ["session_started", "assistant_text", "tool_call", "tool_result",
                     "tool_call", "tool_result", "assistant_text", "turn_completed",
                     "session_ended"]
    calls = of(events, ToolCall)
    assert [(c.name, c.input) for c in calls] == [
        ("run_shell_command", {"command": "echo hi", "description": "Print hi"}),
        ("write_file", {"file_path": "hello.txt", "content": "hello world\n"})]
    results = of(events, ToolResult)
    assert [(r.output, r.is_error) for r in results] == [("hi", False), ("", False)]
    # the final answer is the text after the last tool call
    assert ended(events).result_text == "Done: ran echo and wrote hello.txt."
    assert of(events, TurnCompleted)[0].result_text == "Done: ran echo and wrote hello.txt."


def test_a_failing_tool_is_an_error_result_not_a_failed_run() -> None:
    events = replay("b2_tool_fails")
    shell, read = of(events, ToolResult)
    assert (shell.output, shell.is_error) == ("to-stderr", False)  # `exit 3` says success
    assert (read.output, read.is_error) == ("File not found: <CWD>/missing.txt", True)
    assert not of(events, PermissionDenied)
    assert ended(events).outcome == "completed"


@pytest.mark.parametrize(("scenario", "tool"), [
    ("g1_default_approval_shell", "run_shell_command"),
    ("g2_auto_edit_write_and_shell", "run_shell_command"),
    ("g4_plan_mode_write", "write_file")])
def test_a_tool_the_approval_mode_withholds_is_a_permission_denial(scenario: str,
                                                                    tool: str) -> None:
    events = replay(scenario)
    denied = of(events, PermissionDenied)
    assert [d.tool for d in denied] == [tool]
    result = next(r for r in of(events, ToolResult) if r.call_id == denied[0].call_id)
    assert result.is_error is True
    assert denied[0].detail == result.output
    assert ended(events).outcome == "completed"  # the turn goes on, exit 0


def test_an_unknown_tool_name_is_not_a_policy_denial() -> None:
    parser = make_parser()
    parser.feed({"type": "tool_use", "tool_name": "made_up", "tool_id": "t1", "parameters": {}})
    events = parser.feed({"type": "tool_result", "tool_id": "t1", "status": "error",
                          "error": {"type": "tool_not_registered", "message": "Tool not found"}})
    assert [e.kind for e in events] == ["tool_result"]


# as the real 0.61.0 answered under auto_edit + --allowed-tools run_shell_command
# (tests/integration/test_gemini_real.py::test_workspace_shell_keeps_geminis_own_refusals)
_CONFIRM = ('Tool execution for "Shell" requires user confirmation, which is not supported '
            "in non-interactive mode.")
_OUTSIDE = ('Path not in workspace: Attempted path "/tmp" resolves outside the allowed '
            "workspace directories: /work/tree")


@pytest.mark.parametrize(("tool", "kind", "message", "refused"), [
    ("run_shell_command", "unhandled_exception", _CONFIRM, True),
    ("run_shell_command", "invalid_tool_params", _OUTSIDE, True),
    ("write_file", "invalid_tool_params", _OUTSIDE.replace('"/tmp"', '"/tmp/w.txt"'), True),
    ("run_shell_command", "unhandled_exception", "spawn bash ENOENT", False),
    ("replace", "invalid_tool_params", "Failed to edit: 0 occurrences found", False)])
def test_a_call_gemini_would_need_confirmed_is_a_refusal(tool: str, kind: str, message: str,
                                                          refused: bool) -> None:
    parser = make_parser()
    parser.feed({"type": "tool_use", "tool_name": tool, "tool_id": "t1", "parameters": {}})
    events = parser.feed({"type": "tool_result", "tool_id": "t1", "status": "error",
                          "output": message, "error": {"type": kind, "message": message}})
    assert [e.kind for e in events] == ["tool_result", "permission_denied"][:2 if refused else 1]
    if refused:
        assert isinstance(events[1], PermissionDenied)
        assert (events[1].tool, events[1].call_id, events[1].detail) == (tool, "t1", message)


def test_the_session_and_the_policy_are_reported() -> None:
    parser = make_parser(cwd="/work/tree", permission_mode="auto_edit",
                         notes=["Relay sent the dropped prompt again."])
    events = parser.feed({"type": "init", "session_id": "s-1", "model": "auto"})
    started, note = events
    assert isinstance(started, SessionStarted)
    assert (started.cwd, started.permission_mode, started.model) == (
        "/work/tree", "auto_edit", "auto")
    assert isinstance(note, Notice)
    assert note.message == "Relay sent the dropped prompt again."


def test_model_auto_names_no_model_without_the_chat() -> None:
    events = replay("a4_model_auto_routing")
    assert of(events, SessionStarted)[0].model == "auto"
    # two models in the stats (router and main): the stream alone cannot tell which
    assert of(events, TurnCompleted)[0].model is None
    with_chat = replay("a4_model_auto_routing", parser=make_parser(
        final_answer=lambda _sid: capture_chat("a4_model_auto_routing")))
    assert of(with_chat, TurnCompleted)[0].model == "gemini-3.8-flash"


def test_stdin_echo_is_not_assistant_text() -> None:
    events = replay("h2_prompt_via_stdin")
    assert [t.text for t in of(events, AssistantText)] == ["Got it."]


# ---------------------------------------------------------------------------
# Retries: invisible on stdout, partial text not retracted
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("scenario", "attempts"), [
    ("c_429_rate_limit_per_minute", 1), ("e2_500_then_ok", 1)])
def test_a_retried_request_that_recovers_is_a_success_with_a_retry_notice(
        scenario: str, attempts: int) -> None:
    events = replay(scenario)
    assert ended(events).outcome == "completed"
    assert not of(events, LimitHit)
    retries = [n for n in of(events, Notice) if n.category == "retry"]
    assert len(retries) == attempts
    assert retries[0].message.startswith("Gemini attempt 1 failed")


def test_retry_notices_name_the_wait() -> None:
    stderr = (CAPTURES / "d3_429_capacity_exhausted" / "run1.stderr.txt").read_text()
    assert [n.message for n in retry_notices(stderr)] == [
        "Gemini attempt 1 failed (No capacity available for model gemini-2.5-pro on the server);"
        " retrying in 1.1 s.",
        "Gemini attempt 2 failed (No capacity available for model gemini-2.5-pro on the server);"
        " retrying in 1.2 s."]
    plain = (CAPTURES / "e_503_overloaded" / "run1.stderr.txt").read_text()
    assert [n.message for n in retry_notices(plain)][-1] == (
        "Gemini attempt 3 failed (The model is overloaded. Please try again later); "
        "no attempts left.")


def test_a_dropped_stream_leaves_partial_text_unless_the_chat_corrects_it() -> None:
    raw = replay("e3_midstream_disconnect")
    assert [t.text for t in of(raw, AssistantText)] == ["Partial Recovered answer after retry."]
    chat = capture_chat("e3_midstream_disconnect")
    assert chat.last_answer == "Recovered answer after retry."
    seen: list[str] = []

    def final_answer(session_id: str) -> ChatState:
        seen.append(session_id)
        return chat

    fixed = replay("e3_midstream_disconnect", parser=make_parser(final_answer=final_answer))
    assert seen == ["5e2d3227-a307-4697-a2a9-fc96116a8db4"]
    assert [t.text for t in of(fixed, AssistantText)] == ["Recovered answer after retry."]
    assert of(fixed, TurnCompleted)[0].result_text == "Recovered answer after retry."
    assert ended(fixed).result_text == "Recovered answer after retry."


def test_the_chat_never_replaces_text_it_does_not_end() -> None:
    other = ChatState(resumable=True, last_answer="Something else entirely.")
    events = replay("a_text_stream_json", parser=make_parser(final_answer=lambda _s: other))
    assert ended(events).result_text == "Hello from the mock Gemini model."


# ---------------------------------------------------------------------------
# Limits and the exit-code trap
# ---------------------------------------------------------------------------


def test_per_minute_rate_limit_with_its_suggested_retry() -> None:
    events = replay("c2_429_rate_limit_exhausted")
    (limit,) = of(events, LimitHit)
    assert (limit.limit, limit.blocking) == ("rate_limit", True)
    assert limit.resets_at == CAPTURE_NOW + timedelta(seconds=2)
    error = next(e for e in of(events, AgentError) if e.fatal)
    assert (error.category, error.http_status) == ("rate_limit", 429)
    end = ended(events)
    assert (end.outcome, end.exit_code) == ("failed", 173)  # 429 mod 256
    assert end.reason is not None
    assert end.reason.startswith("[API Error: You exceeded your current quota")
    assert len([n for n in of(events, Notice) if n.category == "retry"]) == 3


def test_daily_quota_is_a_terminal_quota_without_a_reset() -> None:
    events = replay("d_429_daily_quota")
    (limit,) = of(events, LimitHit)
    assert (limit.limit, limit.scope, limit.resets_at) == ("quota", "daily", None)
    error = of(events, AgentError)[0]
    assert (error.category, error.http_status) == ("usage_limit", 429)
    assert ended(events).exit_code == 173


@pytest.mark.parametrize(("scenario", "status", "code"), [
    ("d3_429_capacity_exhausted", 429, 173), ("e_503_overloaded", 503, 247)])
def test_capacity_and_overload_are_overloaded(scenario: str, status: int, code: int) -> None:
    events = replay(scenario)
    assert [x.limit for x in of(events, LimitHit)] == ["overloaded"]
    error = of(events, AgentError)[0]
    assert (error.category, error.http_status) == ("overloaded", status)
    assert ended(events).exit_code == code


@pytest.mark.parametrize(("scenario", "limit", "category"), [
    ("c3_429_plain", "rate_limit", "rate_limit"),
    ("d2_429_daily_quota_json", "quota", "usage_limit")])
def test_a_json_mode_failure_is_read_from_stderr(scenario: str, limit: str, category: str) -> None:
    events = replay(scenario)
    assert [x.limit for x in of(events, LimitHit)] == [limit]
    error = next(e for e in of(events, AgentError) if e.fatal)
    assert (error.category, error.http_status) == (category, 429)
    assert ended(events).outcome == "failed"


def test_json_success_output_is_not_mistaken_for_a_stream() -> None:
    # the adapter never asks for -o json; fed anyway, its lines are reported, not fatal
    parser = make_parser()
    text = (CAPTURES / "a2_text_json" / "run1.stdout.json").read_text()
    events = [e for line in text.splitlines() for e in parser.feed_text(line)]
    assert events
    assert all(isinstance(e, AgentError) and not e.fatal and e.category == "malformed"
               for e in events)


def test_the_exit_code_is_a_status_only_for_an_api_error() -> None:
    assert status_from_exit("[API Error: x]", 173) == 429
    assert status_from_exit("[API Error: x]", 247) == 503
    assert status_from_exit("[API Error: x]", 244) == 500
    assert status_from_exit("[API Error: x]", 144) == 400
    assert status_from_exit("Reached max session turns", 173) is None  # not invented
    assert status_from_exit("[API Error: x]", 1) is None
    assert status_from_exit("[API Error: x]", 130) is None


def _run(lines: list[dict[str, Any]], exit_code: int | None, stderr: str = "",
         **result: Any) -> list[AgentEvent]:
    parser = make_parser()
    events: list[AgentEvent] = []
    for obj in lines:
        events += parser.feed(obj)
    return events + parser.finish(ProcessResult(exit_code=exit_code, signal=None,
                                                stderr_tail=stderr, **result))


INIT = {"type": "init", "session_id": "sid-1", "model": "gemini-2.5-pro"}
OK = {"type": "result", "status": "success", "stats": {}}


def test_exit_0_without_a_result_is_not_a_success() -> None:
    end = ended(_run([INIT], 0))
    assert (end.outcome, end.reason) == ("interrupted", "the agent ended without reporting a result")


def test_a_failed_result_with_exit_0_is_a_failure() -> None:
    # an invalid stream: an error event, then a result without an error object, then exit 0
    events = _run([INIT, {"type": "error", "severity": "error",
                          "message": "Model stream ended with empty response text."},
                   {"type": "result", "status": "error", "stats": {}}], 0)
    end = ended(events)
    assert (end.outcome, end.reason, end.exit_code) == (
        "failed", "Model stream ended with empty response text.", 0)
    errors = of(events, AgentError)
    assert [(e.message, e.fatal) for e in errors] == [
        ("Model stream ended with empty response text.", True)]  # reported once


def test_an_error_event_that_does_not_end_the_run_is_not_fatal() -> None:
    events = _run([INIT, {"type": "error", "severity": "error", "message": "Odd"}, OK], 0)
    assert [(e.message, e.fatal) for e in of(events, AgentError)] == [("Odd", False)]
    assert ended(events).outcome == "completed"
    warned = _run([INIT, {"type": "error", "severity": "warning",
                          "message": "Loop detected, stopping execution"}, OK], 0)
    assert [n.message for n in of(warned, Notice)] == ["Loop detected, stopping execution"]


def test_a_successful_result_and_a_failing_exit_is_a_failure_that_says_why() -> None:
    events = _run([INIT, OK], 1, stderr="Error during final cleanup: EPIPE\n")
    end = ended(events)
    assert (end.outcome, end.reason) == ("failed", "Error during final cleanup: EPIPE")
    assert of(events, AgentError)[0].category == "process"


def test_stopped_by_relay_is_cancelled_whatever_the_exit() -> None:
    # gemini 0.61.0 answers SIGTERM / SIGINT with exit 0 and no result line
    for code in (0, 1, None):
        end = ended(_run([INIT], code, stopped=True))
        assert end.outcome == "cancelled"


def test_a_stop_signal_from_elsewhere_is_no_success() -> None:
    end = ended(_run([INIT, {"type": "message", "role": "assistant", "content": "Hal",
                             "delta": True}], 0))
    assert end.outcome == "interrupted"


def test_gemini_cancelling_itself_is_an_interruption() -> None:
    end = ended(_run([INIT], 130))
    assert (end.outcome, end.exit_code) == ("interrupted", 130)


def test_a_silent_exit_names_the_code() -> None:
    events = _run([], 1)
    assert ended(events).reason == "Gemini CLI exited with code 1 and printed no reason."
    assert of(events, AgentError)[0].category == "process"


# ---------------------------------------------------------------------------
# Setup failures (nothing on stdout)
# ---------------------------------------------------------------------------


def test_missing_api_key_is_a_clear_auth_error() -> None:
    events = replay("h_missing_api_key")
    error = of(events, AgentError)[0]
    assert error.category == "auth"
    assert error.message.startswith(
        "When using Gemini API, you must specify the GEMINI_API_KEY environment variable.")
    assert "relay-cli accounts add gemini LABEL --auth api_key --api-key-stdin" in error.message
    end = ended(events)
    assert (end.outcome, end.exit_code) == ("failed", 41)
    assert end.reason == error.message


def test_untrusted_folder_is_a_config_error() -> None:
    events = replay("g3_untrusted_folder")
    assert of(events, AgentError)[0].category == "config"
    assert ended(events).exit_code == 55


def test_gateway_auth_refusal_says_how_to_pin_it() -> None:
    events = _run([], 41, stderr="Invalid auth method selected.\n")
    error = of(events, AgentError)[0]
    assert error.category == "auth"
    assert '"selectedType": "gemini-api-key"' in error.message


def test_an_unknown_resume_id_is_a_resume_error() -> None:
    stderr = ('Error resuming session: Invalid session identifier "abc".\n'
              "  Searched for sessions in /h/.gemini/tmp/repo/chats.\n")
    events = _run([], 42, stderr=stderr)
    error = of(events, AgentError)[0]
    assert error.category == "resume"
    assert error.message.startswith('Error resuming session: Invalid session identifier "abc".')


def test_stderr_message_skips_noise_retries_and_stacks() -> None:
    stderr = (CAPTURES / "c2_429_rate_limit_exhausted" / "run1.stderr.txt").read_text()
    message = stderr_message(stderr)
    assert message is not None
    assert message.startswith("Error when talking to Gemini API Full report available at:")
    assert "    at " not in message
    assert "Warning:" not in message
    assert stderr_message("\x1b[31mGemini CLI is not running in a trusted directory.\x1b[0m\n") \
        == "Gemini CLI is not running in a trusted directory."


def test_stderr_error_document() -> None:
    stderr = (CAPTURES / "d2_429_daily_quota_json" / "run1.stderr.txt").read_text()
    assert stderr_error_document(stderr) == (
        "You have exhausted your daily quota on this model.", 429)
    assert stderr_error_document("no json here") is None


def test_classification_prefers_the_wording_to_the_status() -> None:
    capacity = classify_failure("[API Error: No capacity available for model x on the server]",
                                http_status=429, now=CAPTURE_NOW)
    assert capacity.category == "overloaded"  # a 429, but the server's capacity
    unknown = classify_failure("[API Error: Something broke.]", http_status=500, now=CAPTURE_NOW)
    assert (unknown.category, unknown.http_status) == ("overloaded", 500)
    assert classify_failure("???", now=CAPTURE_NOW).category == "unknown"


def test_malformed_output_is_reported_not_fatal() -> None:
    parser = make_parser()
    (event,) = parser.feed_text("not json")
    assert isinstance(event, AgentError)
    assert (event.category, event.fatal) == ("malformed", False)


def test_chat_of_a_capture_is_readable() -> None:
    assert Path(CAPTURES).is_dir()
    assert capture_chat("b_tools_yolo").last_answer == "Done: ran echo and wrote hello.txt."
