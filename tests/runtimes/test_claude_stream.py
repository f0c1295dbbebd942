"""ClaudeStreamParser over every recorded Claude Code capture, plus targeted cases."""

from __future__ import annotations

import json
import signal
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from relay.core.events import (
    AgentError,
    AgentEvent,
    AssistantText,
    LimitHit,
    Notice,
    PermissionDenied,
    QuotaUpdate,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
    parse_event,
)
from relay.core.procs import ProcessResult
from relay.runtimes.claude_stream import (
    ClaudeStreamParser,
    classify_failure,
    flatten_content,
    parse_reset_text,
)
from tests.conftest import fixtures_root

CAPTURES = fixtures_root() / "claude" / "captures"
STDOUT_FILES = sorted(CAPTURES.glob("*/*/stdout.*"))
FIXED_NOW = datetime(2026, 11, 30, 10, 5, tzinfo=UTC)


def capture(name: str) -> Path:
    path = CAPTURES / name
    assert path.is_dir(), f"missing capture {path}"
    return path


def stdout_of(run: Path) -> Path:
    return next(run.glob("stdout.*"))


def exit_code_of(run: Path) -> int:
    return int((run / "exit_code").read_text().strip())


def json_lines(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.strip():
            out.append(json.loads(line))
    return out


def replay(run: Path, *, exit_code: int | None = None, stopped: bool = False,
           sig: int | None = None) -> list[AgentEvent]:
    """Feed a capture's stdout through a fresh parser and finish it like the CLI ended."""
    parser = ClaudeStreamParser(now=lambda: FIXED_NOW)
    events: list[AgentEvent] = []
    for line in stdout_of(run).read_text(encoding="utf-8").split("\n"):
        events.extend(parser.feed_text(line))
    code = exit_code_of(run) if exit_code is None and sig is None else exit_code
    result = ProcessResult(exit_code=code, signal=sig, stopped=stopped,
                           stderr_tail=(run / "stderr.txt").read_text(encoding="utf-8"))
    events.extend(parser.finish(result))
    return events

E = TypeVar("E")


def of(events: list[AgentEvent], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


def outcome(events: list[AgentEvent]) -> str:
    last = events[-1]
    assert isinstance(last, SessionEnded)
    return last.outcome


def expected_outcome(stdout: Path, exit_code: int) -> str:
    """What NOTES section 13 says the run's outcome is, from the capture alone."""
    results = [] if stdout.suffix == ".txt" else [
        o for o in json_lines(stdout) if o.get("type") == "result"]
    if results:
        last = results[-1]
        ok = last.get("is_error") is False and last.get("subtype") == "success"
        return "completed" if ok and exit_code == 0 else "failed"
    # No result line: killed (143) or SIGINT (exit 0) is an interruption.
    return "interrupted" if exit_code in (0, 143) else "failed"


# -- every capture ------------------------------------------------------------------


def test_captures_are_present() -> None:
    assert len(STDOUT_FILES) >= 60, f"expected the Claude captures under {CAPTURES}"


@pytest.mark.parametrize("stdout", STDOUT_FILES,
                         ids=[str(p.relative_to(CAPTURES).parent) for p in STDOUT_FILES])
def test_every_capture_invariants(stdout: Path) -> None:
    run = stdout.parent
    events = replay(run)
    ended = of(events, SessionEnded)
    assert len(ended) == 1
    assert events[-1] is ended[0]
    assert ended[0].outcome == expected_outcome(stdout, exit_code_of(run))
    assert all(e.runtime == "claude" for e in events)
    for event in events:
        assert parse_event(event.model_dump_json()) == event
    if ended[0].outcome == "failed":
        assert any(e.fatal for e in of(events, AgentError)), "a failure must say why"
    if stdout.suffix == ".txt":  # plain-text output is not stream-json: reported, not fatal
        assert of(events, AgentError)
        assert all(
            e.category == "malformed" or e.fatal for e in of(events, AgentError))
        return
    check_against_raw_lines(events, json_lines(stdout))


def check_against_raw_lines(events: list[AgentEvent], lines: list[dict[str, Any]]) -> None:
    results = [o for o in lines if o.get("type") == "result"]
    turns = of(events, TurnCompleted)
    # Usage comes from result lines only (assistant lines hold a snapshot).
    assert len(turns) == len(results)
    for field, key in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
                       ("cache_read_tokens", "cache_read_input_tokens")):
        assert sum(getattr(t.usage, field) or 0 for t in turns) == sum(
            r["usage"][key] for r in results)
    costs = [t.usage.cost_usd or 0.0 for t in turns]
    last_total = results[-1]["total_cost_usd"] if results else 0
    assert sum(costs) == pytest.approx(last_total)
    check_blocks(events, lines)
    inits = [o for o in lines if o.get("subtype") == "init"]
    started = of(events, SessionStarted)
    assert len(started) == len({o["session_id"] for o in inits})
    if inits:
        assert started[0].agent_session_id == inits[0]["session_id"]
        assert started[0].version == inits[0]["claude_code_version"]


def check_blocks(events: list[AgentEvent], lines: list[dict[str, Any]]) -> None:
    real = [o for o in lines if o.get("type") == "assistant"
            and o["message"].get("model") != "<synthetic>"]
    blocks = [b for o in real for b in o["message"]["content"]]
    uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
    texts = [b for b in blocks if b["type"] in ("text", "thinking")]
    calls = of(events, ToolCall)
    assert [c.call_id for c in calls] == uses
    assert len(of(events, AssistantText)) == len(texts)
    synthetic = {b["text"] for o in lines if o.get("type") == "assistant"
                 and o["message"].get("model") == "<synthetic>" for b in o["message"]["content"]}
    assert not synthetic & {t.text for t in of(events, AssistantText)}
    result_ids = [b["tool_use_id"] for o in lines if o.get("type") == "user"
                  and isinstance(o["message"]["content"], list)
                  for b in o["message"]["content"] if b.get("type") == "tool_result"]
    results = of(events, ToolResult)
    assert [r.call_id for r in results] == result_ids
    position = {id(e): i for i, e in enumerate(events)}
    by_id = {c.call_id: c for c in calls}
    for res in results:
        if res.call_id in by_id:  # a call precedes its result
            assert position[id(by_id[res.call_id])] < position[id(res)]


# -- specific captures -----------------------------------------------------------------


def test_write_tool() -> None:
    events = replay(capture("b_write_tool/run1"))
    (call,) = of(events, ToolCall)
    assert call.name == "Write"
    assert call.call_id == "toolu_mock_write_1"
    assert call.input == {"file_path": "<CWD>/hello.txt", "content": "hello world\n"}
    (result,) = of(events, ToolResult)
    assert result.call_id == call.call_id
    assert result.output.startswith("File created successfully at: <CWD>/hello.txt")
    assert result.is_error is None  # Write results have no is_error key at all
    (turn,) = of(events, TurnCompleted)
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (3481, 74)
    assert turn.usage.cost_usd == 0.019255
    assert turn.usage.cache_read_tokens == 0
    assert turn.usage.reasoning_tokens is None
    assert turn.num_turns == 2
    assert [t.text for t in of(events, AssistantText)] == [
        "I'll create the file.", "Created hello.txt with the requested content."]
    assert of(events, AssistantText)[0].message_id == "msg_mockf699908c536141e3b10645a2"
    (started,) = of(events, SessionStarted)
    assert started.permission_mode == "acceptEdits"
    assert started.model == "claude-opus-4-8[1m]"
    assert started.version == "2.1.197"
    assert "Write" in started.tools
    assert events[-1] == SessionEnded(runtime="claude", outcome="completed", exit_code=0,
                                      result_text=turn.result_text, ts=events[-1].ts)


def test_429_retries_then_rate_limit_failure() -> None:
    events = replay(capture("d1_429_retries_capped/run1"))
    notices = of(events, Notice)
    assert [n.category for n in notices] == ["retry", "retry"]
    assert "429" in notices[0].message
    assert "1 of 2" in notices[0].message
    assert "1.0 s" in notices[0].message
    (error,) = of(events, AgentError)
    assert (error.category, error.http_status, error.fatal) == ("rate_limit", 429, True)
    assert error.message.startswith("API Error: Request rejected (429)")
    # the retries are Claude's own; the 429 that ended the turn is a blocking rate limit
    # (one rule for every runtime: tests/core/test_failure_events.py)
    assert [(lim.limit, lim.blocking) for lim in of(events, LimitHit)] == [("rate_limit", True)]
    assert not of(events, AssistantText)  # the synthetic error is not the model's text
    ended = events[-1]
    assert isinstance(ended, SessionEnded)
    assert (ended.outcome, ended.exit_code) == ("failed", 1)
    assert ended.reason == error.message


@pytest.mark.parametrize(("run", "scope", "resets"), [
    ("run1_subscriber_five_hour", "five_hour", datetime(2026, 11, 30, 12, 5, 30, tzinfo=UTC)),
    ("run2_subscriber_seven_day", "seven_day", datetime(2026, 12, 3, 10, 5, 31, tzinfo=UTC)),
])
def test_usage_limit_from_rate_limit_event(run: str, scope: str, resets: datetime) -> None:
    events = replay(capture(f"f_usage_limit/{run}"))
    (limit,) = of(events, LimitHit)
    assert (limit.limit, limit.scope, limit.resets_at, limit.blocking) == (
        "usage_limit", scope, resets, True)
    (error,) = of(events, AgentError)
    assert (error.category, error.http_status) == ("usage_limit", 429)
    assert events.index(limit) < events.index(error)
    assert outcome(events) == "failed"


def test_usage_limit_from_text_when_no_event() -> None:
    """--output-format json has no rate_limit_event: fall back to the wording."""
    events = replay(capture("f_usage_limit/run6_subscriber_json"))
    (limit,) = of(events, LimitHit)
    assert limit.limit == "usage_limit"
    assert limit.resets_at == datetime(2026, 11, 30, 12, 5, tzinfo=UTC)
    assert of(events, AgentError)[0].category == "usage_limit"


def test_subscriber_429_without_unified_headers_is_a_rate_limit() -> None:
    events = replay(capture("f_usage_limit/run3_subscriber_plain_429"))
    (limit,) = of(events, LimitHit)
    assert (limit.limit, limit.resets_at, limit.scope, limit.blocking) == (
        "rate_limit", None, None, False)
    assert of(events, AgentError)[0].category == "rate_limit"


def test_api_key_429_with_unified_headers_is_a_rate_limit() -> None:
    events = replay(capture("f_usage_limit/run4_apikey_unified_429"))
    assert [lim.limit for lim in of(events, LimitHit)] == ["rate_limit"]  # not a usage limit
    assert of(events, AgentError)[0].category == "rate_limit"


def test_allowed_rate_limit_event_is_not_blocking() -> None:
    events = replay(capture("f_usage_limit/run5_subscriber_allowed_warning"))
    assert not of(events, LimitHit)
    assert not of(events, AgentError)
    assert outcome(events) == "completed"


def test_allowed_warning_is_a_limit_that_does_not_block() -> None:
    parser = ClaudeStreamParser()
    reading, warning = parser.feed({"type": "rate_limit_event", "rate_limit_info": {
        "status": "allowed_warning", "resetsAt": 1796040330, "rateLimitType": "five_hour"}})
    assert isinstance(reading, QuotaUpdate)
    assert (reading.window, reading.status, reading.used_percent) == (
        "five_hour", "allowed_warning", None)
    assert isinstance(warning, LimitHit)
    assert not warning.blocking
    assert warning.scope == "five_hour"
    assert warning.resets_at is not None
    assert "2026-11-30 12:05 UTC" in warning.message


def test_every_rate_limit_event_is_a_quota_reading_for_the_wallet() -> None:
    seen = {}
    for run in ("run1_subscriber_five_hour", "run2_subscriber_seven_day",
                "run3_subscriber_plain_429", "run5_subscriber_allowed_warning"):
        readings = of(replay(capture(f"f_usage_limit/{run}")), QuotaUpdate)
        seen[run] = [(r.window, r.status, r.used_percent, r.resets_at is not None)
                     for r in readings]
    assert seen == {
        "run1_subscriber_five_hour": [("five_hour", "rejected", 100.0, True)],
        "run2_subscriber_seven_day": [("seven_day", "rejected", 100.0, True)],
        # a subscriber 429 without the unified headers names no window: no reading
        "run3_subscriber_plain_429": [],
        "run5_subscriber_allowed_warning": [("five_hour", "allowed", None, True)],
    }
    assert all(r.origin == "claude rate_limit_event" for r in of(
        replay(capture("f_usage_limit/run1_subscriber_five_hour")), QuotaUpdate))


def test_permission_denials() -> None:
    events = replay(capture("h_permission_denied/run1_stream_json"))
    denied = of(events, PermissionDenied)
    assert [(d.tool, d.call_id) for d in denied] == [
        ("Write", "toolu_mock_write_denied"), ("Bash", "toolu_mock_bash_denied"),
        ("Bash", "toolu_mock_bash_denied2")]
    assert "haven't granted it yet" in denied[0].detail
    assert denied[2].detail == "This command requires approval"
    assert all(r.is_error for r in of(events, ToolResult))
    assert outcome(events) == "completed"


def test_permission_denials_without_stream_use_the_input() -> None:
    events = replay(capture("h_permission_denied/run2_json"))
    (denied,) = of(events, PermissionDenied)
    assert (denied.tool, denied.detail) == ("Write", "<CWD>/denied2.txt")


def test_bash_failure_exit_code() -> None:
    events = replay(capture("c_bash_tool/run1"))
    ok, failed = of(events, ToolResult)
    assert (ok.output, ok.is_error, ok.exit_code) == ("hi", False, None)
    assert (failed.is_error, failed.exit_code) == (True, 2)


def test_max_turns() -> None:
    events = replay(capture("i_max_turns/run1_stream_json"))
    (error,) = of(events, AgentError)
    assert (error.category, error.message) == ("max_turns", "Reached maximum number of turns (1)")
    (turn,) = of(events, TurnCompleted)
    assert turn.usage.input_tokens == 1666
    assert turn.usage.cost_usd == 0.00923
    assert outcome(events) == "failed"


def test_max_budget() -> None:
    events = replay(capture("i2_max_budget/run1"))
    assert of(events, AgentError)[0].category == "budget"


def test_resume_of_unknown_session() -> None:
    events = replay(capture("g_resume/run5_resume_unknown"))
    assert not of(events, SessionStarted)
    (error,) = of(events, AgentError)
    assert error.category == "resume"
    assert "No conversation found" in error.message
    ended = events[-1]
    assert isinstance(ended, SessionEnded)
    assert (ended.outcome, ended.exit_code) == ("failed", 1)


def test_sigterm_without_result_is_interrupted() -> None:
    events = replay(capture("r_signals/run1_sigterm"))
    assert [type(e) for e in events] == [SessionStarted, SessionEnded]
    ended = events[-1]
    assert isinstance(ended, SessionEnded)
    assert (ended.outcome, ended.exit_code) == ("interrupted", 143)


def test_sigint_exit_zero_without_result_is_not_completed() -> None:
    events = replay(capture("r_signals/run2_sigint"))
    ended = events[-1]
    assert isinstance(ended, SessionEnded)
    assert (ended.outcome, ended.exit_code) == ("interrupted", 0)
    assert not of(events, AgentError)


def test_killed_by_signal_and_stopped_by_relay() -> None:
    run = capture("r_signals/run1_sigterm")
    killed = replay(run, sig=signal.SIGKILL)[-1]
    assert isinstance(killed, SessionEnded)
    assert killed.outcome == "interrupted"
    stopped = replay(run, exit_code=143, stopped=True)[-1]
    assert isinstance(stopped, SessionEnded)
    assert stopped.outcome == "cancelled"


def test_fallback_model_notice() -> None:
    events = replay(capture("e7_529_fallback_model/run1"))
    notices = of(events, Notice)
    assert [n.category for n in notices] == ["retry", "retry", "fallback"]
    assert notices[-1].message == "Switched to Sonnet 5 due to high demand for Opus 4.8"
    (turn,) = of(events, TurnCompleted)
    assert turn.model == "claude-sonnet-5"
    assert outcome(events) == "completed"


def test_stream_json_input_reports_per_turn_cost() -> None:
    events = replay(capture("k_stream_json_input/run1"))
    first, second = of(events, TurnCompleted)
    assert first.usage.cost_usd == pytest.approx(0.008695)
    assert second.usage.cost_usd == pytest.approx(0.0176 - 0.008695)
    assert (first.usage.input_tokens, second.usage.input_tokens) == (1669, 1711)
    assert len(of(events, SessionStarted)) == 1  # init repeats per turn, same session


@pytest.mark.parametrize(("run", "category", "status"), [
    ("e1_529_overloaded/run1", "overloaded", None),
    ("e1b_529_is_sandbox/run1", "overloaded", 529),
    ("e2_529_capped_json/run1", "overloaded", 529),
    ("e4_400_invalid_request/run1", "request", 400),
    ("e5_401_auth/run1", "auth", 401),
    ("e6_500_api_error/run1", "overloaded", 500),
    ("n_connection_refused/run1", "network", None),
    ("s_api_timeout/run1", "timeout", None),
    ("d3_429_retry_after_too_long/run1", "rate_limit", 429),
])
def test_error_classification(run: str, category: str, status: int | None) -> None:
    events = replay(capture(run))
    (error,) = of(events, AgentError)
    assert (error.category, error.http_status) == (category, status)


@pytest.mark.parametrize(("run", "category"), [
    ("q_cli_usage_errors/run1_stream_json_without_verbose", "config"),
    ("q_cli_usage_errors/run2_bad_session_id", "config"),
    ("q_cli_usage_errors/run4_session_id_reused", "resume"),
    ("m_permission_modes/run1_bypass_as_root", "config"),
])
def test_argument_errors_fail_with_the_stderr_message(run: str, category: str) -> None:
    folder = capture(run)
    events = replay(folder)
    stderr = (folder / "stderr.txt").read_text().strip()
    (error,) = of(events, AgentError)
    assert (error.category, error.message) == (category, stderr)
    ended = events[-1]
    assert isinstance(ended, SessionEnded)
    assert (ended.outcome, ended.reason, ended.exit_code) == ("failed", stderr, 1)


def test_subagent_lines_carry_the_parent_call() -> None:
    events = replay(capture("w_subagent/run1"))
    agent, sub = of(events, ToolCall)
    assert (agent.name, agent.parent_call_id) == ("Agent", None)
    assert (sub.name, sub.parent_call_id) == ("Bash", agent.call_id)
    results = {r.call_id: r for r in of(events, ToolResult)}
    assert results[sub.call_id].parent_call_id == agent.call_id
    assert results[agent.call_id].output.startswith("Subagent report: echo printed sub.\n")
    assert results[agent.call_id].is_error is None


def test_thinking_is_reasoning_text() -> None:
    events = replay(capture("u_thinking_and_parallel_tools/run1"))
    texts = of(events, AssistantText)
    assert [(t.reasoning, t.text) for t in texts] == [
        (True, "The user wants two commands; run them in parallel."),
        (True, "Both printed."), (False, "alpha and beta were printed.")]


# -- robustness ------------------------------------------------------------------------


def test_key_order_does_not_matter() -> None:
    run = capture("b_write_tool/run1")
    forward, backward = ClaudeStreamParser(), ClaudeStreamParser()
    a: list[AgentEvent] = []
    b: list[AgentEvent] = []
    for obj in json_lines(stdout_of(run)):
        a += forward.feed(obj)
        b += backward.feed(_reversed_keys(obj))
    assert [e.model_dump(exclude={"ts"}) for e in a] == [e.model_dump(exclude={"ts"}) for e in b]


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


@pytest.mark.parametrize("obj", [
    {}, {"type": 3}, {"type": "brand_new"}, {"type": "system"},
    {"type": "system", "subtype": "init", "tools": "Bash", "session_id": 7},
    {"type": "assistant"}, {"type": "assistant", "message": []},
    {"type": "assistant", "message": {"content": "plain"}},
    {"type": "assistant", "message": {"content": [{"type": "tool_use"}, 5, {"type": "x"}]}},
    {"type": "user", "message": {"content": [{"type": "tool_result"}]}},
    {"type": "user", "message": {"content": "a replayed prompt"}},
    {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected", "resetsAt": "soon"}},
    {"type": "system", "subtype": "api_retry", "attempt": "x", "retry_delay_ms": None},
    {"type": "result", "usage": None, "total_cost_usd": "free", "permission_denials": [1]},
    {"type": "result", "subtype": "error_whatever", "is_error": True},
])
def test_odd_shapes_never_raise(obj: dict[str, Any]) -> None:
    parser = ClaudeStreamParser()
    events = parser.feed(obj)
    events += parser.finish(ProcessResult(exit_code=0, signal=None, stderr_tail=""))
    assert isinstance(events[-1], SessionEnded)


def test_malformed_line_is_reported_and_parsing_goes_on() -> None:
    parser = ClaudeStreamParser()
    (error,) = parser.feed_text("not json at all {")
    assert isinstance(error, AgentError)
    assert (error.category, error.fatal) == ("malformed", False)
    assert of(parser.feed_text("[1, 2]"), AgentError)[0].category == "malformed"
    assert parser.feed_text("   ") == []
    (text,) = parser.feed_text(json.dumps({"type": "assistant", "message": {
        "model": "m", "content": [{"type": "text", "text": "still here"}]}}))
    assert isinstance(text, AssistantText)


def test_newer_cli_error_fields() -> None:
    """2.1.332 adds api_error / api_error_type; they classify when the status is null."""
    assert classify_failure(status=None, text="x", api_error="connection_failed") == "network"
    assert classify_failure(status=429, text="You've hit your 5-hour limit · resets 4pm (UTC)",
                            api_error="usage_limit_reached") == "usage_limit"
    assert classify_failure(status=None, text="Claude AI usage limit reached|1760000400") \
        == "usage_limit"
    assert classify_failure(status=None, text="odd", assistant_error="rate_limit") == "rate_limit"
    assert classify_failure(status=418, text="teapot") == "request"


@pytest.mark.parametrize(("text", "expected"), [
    ("You've hit your session limit · resets 12:05pm (UTC)",
     datetime(2026, 11, 30, 12, 5, tzinfo=UTC)),
    ("You've hit your limit · resets 9am (UTC)", datetime(2026, 12, 1, 9, 0, tzinfo=UTC)),
    ("You've hit your weekly limit · resets Dec 3, 10:05am (UTC)",
     datetime(2026, 12, 3, 10, 5, tzinfo=UTC)),
    ("You've hit your limit · resets 4:50am (Europe/Rome)",
     datetime(2026, 12, 1, 3, 50, tzinfo=UTC)),
    ("Claude AI usage limit reached|1760000400", datetime.fromtimestamp(1760000400, UTC)),
    ("You've hit your limit · resets 4:50am (Mars/Olympus)", None),
    ("no time here", None),
])
def test_parse_reset_text(text: str, expected: datetime | None) -> None:
    assert parse_reset_text(text, FIXED_NOW) == expected


def test_flatten_content() -> None:
    assert flatten_content("x") == "x"
    assert flatten_content(None) == ""
    assert flatten_content([{"type": "text", "text": "a"}, {"type": "image"},
                            {"type": "text", "text": "b"}]) == "a\n[image]\nb"


def test_crash_after_synthetic_error_without_result() -> None:
    parser = ClaudeStreamParser()
    parser.feed({"type": "assistant", "error": "rate_limit", "message": {
        "model": "<synthetic>", "content": [{"type": "text", "text": "API Error: 429 x"}]}})
    events = parser.finish(ProcessResult(exit_code=1, signal=None, stderr_tail=""))
    error, ended = events
    assert isinstance(error, AgentError)
    assert error.category == "rate_limit"
    assert isinstance(ended, SessionEnded)
    assert (ended.outcome, ended.reason) == ("failed", "API Error: 429 x")


def test_success_result_but_failing_exit_still_explains() -> None:
    parser = ClaudeStreamParser()
    parser.feed({"type": "result", "subtype": "success", "is_error": False, "result": "ok"})
    events = parser.finish(ProcessResult(exit_code=2, signal=None, stderr_tail="boom\n"))
    error, ended = events[-2:]
    assert isinstance(error, AgentError)
    assert (error.message, error.fatal) == ("boom", True)
    assert isinstance(ended, SessionEnded)
    assert (ended.outcome, ended.reason) == ("failed", "boom")


def test_exit_without_result_or_stderr_still_explains() -> None:
    events = ClaudeStreamParser().finish(ProcessResult(exit_code=3, signal=None, stderr_tail=""))
    error, ended = events
    assert isinstance(error, AgentError)
    assert error.category == "process"
    assert "exited with code 3" in error.message
    assert isinstance(ended, SessionEnded)
    assert ended.outcome == "failed"
