"""relay.core.signals over every failure the recorded CLIs printed (part 1).

Every failure report of every capture of claude, codex, gemini and pi (read by
signal_captures) is classified and checked against a hand-written table; reset times
are checked against what the capture's mock_script made the server say.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from relay.core.signals import Signal
from tests.core.signal_captures import MOCK, REPORTS, ROOT, Report, mock_reset


@dataclass(frozen=True)
class Expect:
    kind: str
    reset: str | float | None = None  # MOCK, a retry-after in seconds, or None (no reset)
    scope: str | None = None


# One line per failure report (what the CLI printed), by "cli/capture/where".
EXPECTED: dict[str, Expect] = {
    # Claude Code 2.1.197
    "claude/d1_429_retries_capped/run1/api_retry:429:rate_limit": Expect("rate_limit"),
    "claude/d1_429_retries_capped/run1/result": Expect("rate_limit"),
    "claude/d1_429_retries_capped/run2_text_output/stdout": Expect("rate_limit"),
    "claude/d2_429_default_retries/run1/api_retry:429:rate_limit": Expect("rate_limit"),
    "claude/d2_429_default_retries/run1/result": Expect("rate_limit"),
    # retry-after: 3600 made the CLI give up at once; it does not pass the delay on.
    "claude/d3_429_retry_after_too_long/run1/result": Expect("rate_limit"),
    "claude/d4_429_then_success/run1/api_retry:429:rate_limit": Expect("rate_limit"),
    "claude/e1_529_overloaded/run1/api_retry:529:overloaded": Expect("overloaded"),
    "claude/e1_529_overloaded/run1/result": Expect("overloaded"),  # status null: wording
    "claude/e1b_529_is_sandbox/run1/api_retry:529:overloaded": Expect("overloaded"),
    "claude/e1b_529_is_sandbox/run1/result": Expect("overloaded"),
    "claude/e2_529_capped_json/run1/result": Expect("overloaded"),
    "claude/e4_400_invalid_request/run1/result": Expect("invalid_request"),
    "claude/e5_401_auth/run1/api_retry:401:authentication_failed": Expect("auth"),
    "claude/e5_401_auth/run1/result": Expect("auth"),
    "claude/e6_500_api_error/run1/api_retry:500:server_error": Expect("overloaded"),
    "claude/e6_500_api_error/run1/result": Expect("overloaded"),
    "claude/e7_529_fallback_model/run1/api_retry:529:overloaded": Expect("overloaded"),
    "claude/f_usage_limit/run1_subscriber_five_hour/result":
        Expect("usage_limit", MOCK, "five_hour"),
    "claude/f_usage_limit/run2_subscriber_seven_day/result":
        Expect("usage_limit", MOCK, "seven_day"),
    "claude/f_usage_limit/run3_subscriber_plain_429/result": Expect("rate_limit"),
    "claude/f_usage_limit/run4_apikey_unified_429/api_retry:429:rate_limit": Expect("rate_limit"),
    "claude/f_usage_limit/run4_apikey_unified_429/result": Expect("rate_limit"),
    "claude/f_usage_limit/run6_subscriber_json/result": Expect("usage_limit", MOCK, "five_hour"),
    # Not provider signals: the parser classifies these (resume, budget, max_turns, config).
    "claude/g_resume/run5_resume_unknown/result": Expect("unknown"),
    "claude/i2_max_budget/run1/result": Expect("unknown"),
    "claude/i_max_turns/run1_stream_json/result": Expect("unknown"),
    "claude/i_max_turns/run2_json/result": Expect("unknown"),
    "claude/m_permission_modes/run1_bypass_as_root/stderr": Expect("unknown"),
    "claude/m_permission_modes/run2_skip_permissions_as_root/stderr": Expect("unknown"),
    # A retry with neither status nor a known error code says nothing.
    "claude/n_connection_refused/run1/api_retry:None:unknown": Expect("unknown"),
    "claude/n_connection_refused/run1/result": Expect("network"),
    "claude/q_cli_usage_errors/run1_stream_json_without_verbose/stderr": Expect("unknown"),
    "claude/q_cli_usage_errors/run2_bad_session_id/stderr": Expect("unknown"),
    "claude/q_cli_usage_errors/run4_session_id_reused/stderr": Expect("unknown"),
    "claude/q_cli_usage_errors/run5_no_prompt/stderr": Expect("unknown"),
    "claude/s_api_timeout/run1/api_retry:None:unknown": Expect("unknown"),
    "claude/s_api_timeout/run1/result": Expect("timeout"),
    # Codex CLI 0.171.0
    "codex/c2_sse_rate_limit_then_ok/run1/reconnect": Expect("rate_limit", 1.5),
    "codex/c3_sse_rate_limit_exhausted/run1/reconnect": Expect("rate_limit", 0.5),
    "codex/c3_sse_rate_limit_exhausted/run1/turn.failed": Expect("rate_limit", 0.5),
    "codex/c4_http429_retry_after_only/run1/reconnect": Expect("rate_limit"),
    "codex/c4_http429_retry_after_only/run1/turn.failed": Expect("rate_limit"),
    "codex/c5_http429_message_hint_only/run1/turn.failed": Expect("rate_limit"),
    "codex/c_http429_rate_limit/run1/reconnect": Expect("rate_limit"),
    "codex/c_http429_rate_limit/run1/turn.failed": Expect("rate_limit"),
    "codex/d2_usage_limit_plus_other_day/run1/turn.failed": Expect("usage_limit", MOCK),
    "codex/d3_usage_limit_team/run1/turn.failed": Expect("usage_limit", MOCK),
    "codex/d4_usage_limit_no_reset_info/run1/turn.failed": Expect("usage_limit"),
    # The SSE error carried resets_at, but codex's message drops it.
    "codex/d5_usage_limit_in_sse/run1/reconnect": Expect("usage_limit"),
    "codex/d5_usage_limit_in_sse/run1/turn.failed": Expect("usage_limit"),
    "codex/d6_insufficient_quota_sse/run1/turn.failed": Expect("quota"),
    "codex/d7_usage_limit_human_output/run1/stderr": Expect("usage_limit", MOCK, "five_hour"),
    "codex/d_usage_limit_pro/run1/turn.failed": Expect("usage_limit", MOCK, "five_hour"),
    "codex/e2_http503_server_is_overloaded/run1/turn.failed": Expect("overloaded"),
    "codex/e3_http503_plain_then_ok/run1/reconnect": Expect("overloaded"),
    "codex/e4_http500_default_retries/run1/reconnect": Expect("overloaded"),
    "codex/e4_http500_default_retries/run1/turn.failed": Expect("overloaded"),
    "codex/e5_disconnect_then_ok/run1/reconnect": Expect("network"),
    "codex/e6_idle_timeout/run1/turn.failed": Expect("network"),
    "codex/e_http500_retries/run1/reconnect": Expect("overloaded"),
    "codex/e_http500_retries/run1/turn.failed": Expect("overloaded"),
    "codex/f3_resume_unknown_id/run1/stderr": Expect("unknown"),
    "codex/f4_resume_after_failed_turn/run1/turn.failed": Expect("usage_limit", MOCK),
    "codex/g6_not_a_git_repo/run1/stderr": Expect("unknown"),
    "codex/h2_missing_api_key_env/run1/turn.failed": Expect("unknown"),
    "codex/h4_wire_api_chat/run1/stderr": Expect("unknown"),
    # Gemini CLI 0.61.0
    "gemini/c2_429_rate_limit_exhausted/run1/attempt:1": Expect("rate_limit", 2.0),
    "gemini/c2_429_rate_limit_exhausted/run1/result": Expect("rate_limit", 2.0),
    "gemini/c3_429_plain/run1/attempt:1": Expect("rate_limit"),
    "gemini/c3_429_plain/run1/attempt:2": Expect("rate_limit"),
    "gemini/c3_429_plain/run1/stderr.json": Expect("rate_limit"),
    "gemini/c_429_rate_limit_per_minute/run1/attempt:1": Expect("rate_limit", 2.0),
    "gemini/d2_429_daily_quota_json/run1/stderr.json": Expect("quota", None, "daily"),
    "gemini/d3_429_capacity_exhausted/run1/attempt:1": Expect("overloaded"),
    "gemini/d3_429_capacity_exhausted/run1/result": Expect("overloaded"),
    "gemini/d_429_daily_quota/run1/result": Expect("quota", None, "daily"),
    "gemini/e2_500_then_ok/run1/attempt:1": Expect("overloaded"),
    "gemini/e_503_overloaded/run1/attempt:1": Expect("overloaded"),
    "gemini/e_503_overloaded/run1/attempt:2": Expect("overloaded"),
    "gemini/e_503_overloaded/run1/result": Expect("overloaded"),
    "gemini/g3_untrusted_folder/run1/stderr": Expect("unknown"),
    "gemini/h_missing_api_key/run1/stderr": Expect("auth"),
    # pi 0.73.1: "<status> <message>"; it drops resets_at (d_usage_limit_codex_style).
    "pi/c2_429_exhausted/run1/errorMessage": Expect("rate_limit", 1.0),
    "pi/c2_429_exhausted/run1/finalError": Expect("rate_limit", 1.0),
    "pi/c3_429_text_mode/run1/stderr": Expect("rate_limit", 1.0),
    "pi/c_429_then_ok/run1/errorMessage": Expect("rate_limit", 1.0),
    "pi/d2_insufficient_quota/run1/errorMessage": Expect("quota"),
    "pi/d2_insufficient_quota/run1/finalError": Expect("quota"),
    "pi/d_usage_limit_codex_style/run1/errorMessage": Expect("usage_limit"),
    "pi/d_usage_limit_codex_style/run1/finalError": Expect("usage_limit"),
    "pi/e2_500_then_ok/run1/errorMessage": Expect("overloaded"),
    "pi/e4_503_default_retry_settings/run1/errorMessage": Expect("overloaded"),
    "pi/e4_503_default_retry_settings/run1/finalError": Expect("overloaded"),
    "pi/e_503_overloaded/run1/errorMessage": Expect("overloaded"),
    "pi/e_503_overloaded/run1/finalError": Expect("overloaded"),
}


def test_the_captures_are_there() -> None:
    assert len(REPORTS) >= 90, f"failure reports missing under {ROOT}"
    assert {r.cli for r in REPORTS} == {"claude", "codex", "gemini", "pi"}


def test_every_failure_report_is_in_the_table() -> None:
    """No capture's failure goes unchecked, and the table names no report that is not there."""
    found = {r.id for r in REPORTS}
    assert sorted(found - EXPECTED.keys()) == []
    assert sorted(EXPECTED.keys() - found) == []


@pytest.mark.parametrize("report", REPORTS, ids=[r.id for r in REPORTS])
def test_capture_kind_and_reset(report: Report) -> None:
    expect = EXPECTED[report.id]
    signal = report.classify()
    assert signal.kind == expect.kind, signal
    assert signal.text == report.text  # verbatim
    assert signal.provider == report.cli
    assert (signal.source == "none") == (expect.kind == "unknown")
    if expect.scope is not None:
        assert signal.scope == expect.scope
    if expect.reset is None:
        assert (signal.resets_at, signal.retry_after) == (None, None)
    elif expect.reset == MOCK:
        _assert_mock_reset(signal, mock_reset(report))
    else:
        assert signal.retry_after == expect.reset
        assert signal.resets_at == report.now + timedelta(seconds=float(expect.reset))


def _assert_mock_reset(signal: Signal, scripted: datetime) -> None:
    assert signal.resets_at is not None
    if signal.reset_source == "structured":  # an epoch field: to the second
        assert abs(signal.resets_at - scripted) <= timedelta(seconds=1)
    else:  # the wording shows minutes only
        assert timedelta(0) <= scripted - signal.resets_at < timedelta(minutes=1), (
            signal.resets_at, scripted)


@pytest.mark.parametrize("report", [r for r in REPORTS if r.structured],
                         ids=[r.id for r in REPORTS if r.structured])
def test_the_wording_alone_gives_the_same_kind(report: Report) -> None:
    """The structured fields and the text never disagree on a capture."""
    assert report.classify(with_fields=False).kind == report.classify().kind


@pytest.mark.parametrize("capture", [
    "claude/f_usage_limit/run1_subscriber_five_hour/result",
    "claude/f_usage_limit/run2_subscriber_seven_day/result",
    "codex/d_usage_limit_pro/run1/turn.failed",
    "codex/d7_usage_limit_human_output/run1/stderr",
])
def test_structured_reset_is_precise_and_the_wording_agrees(capture: str) -> None:
    report = next(r for r in REPORTS if r.id == capture)
    structured, worded = report.classify(), report.classify(with_fields=False)
    assert structured.reset_source == "structured"
    assert worded.reset_source == "text"
    assert structured.resets_at is not None
    assert worded.resets_at is not None
    assert structured.resets_at.second != 0  # the field has seconds the wording lacks
    assert structured.resets_at - worded.resets_at == timedelta(
        seconds=structured.resets_at.second)


def test_a_window_snapshot_that_disagrees_with_the_error_loses() -> None:
    """Codex d2: the full 5-hour window resets at 13:08, the error says Dec 3 (plus plan)."""
    report = next(r for r in REPORTS
                  if r.id == "codex/d2_usage_limit_plus_other_day/run1/turn.failed")
    assert report.structured["rate_limits"]["primary"]["used_percent"] == 100.0
    signal = report.classify()
    assert signal.reset_source == "text"
    assert signal.resets_at == datetime(2026, 12, 3, 10, 8, tzinfo=UTC)
