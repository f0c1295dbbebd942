"""relay.core.signals over what the mock servers sent, as structured fields (part 2).

The mock servers' own error bodies and headers (each capture's mock_script) are fed
in as structured fields, with no wording.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, timedelta

import pytest

from relay.core.signals import classify
from tests.core.signal_captures import (
    MOCK,
    ROOT,
    Report,
    _last_request_time,
    _mock_steps,
    _resolve_headers,
    mock_reset,
)


@dataclass(frozen=True)
class MockCase:
    folder: str  # under fixtures_root()
    kind: str
    reset: str | float | None = None  # MOCK (the scripted time), a delay, or None
    scope: str | None = None


MOCK_CASES = [
    MockCase("claude/captures/d1_429_retries_capped/run1", "rate_limit", 1.0),
    MockCase("claude/captures/d3_429_retry_after_too_long/run1", "rate_limit", 3600.0),
    MockCase("claude/captures/e1_529_overloaded/run1", "overloaded"),
    MockCase("claude/captures/e4_400_invalid_request/run1", "invalid_request"),
    MockCase("claude/captures/e5_401_auth/run1", "auth"),
    MockCase("claude/captures/e6_500_api_error/run1", "overloaded"),
    MockCase("claude/captures/f_usage_limit/run1_subscriber_five_hour", "usage_limit", MOCK,
             "five_hour"),
    MockCase("claude/captures/f_usage_limit/run2_subscriber_seven_day", "usage_limit", MOCK,
             "seven_day"),
    MockCase("claude/captures/f_usage_limit/run3_subscriber_plain_429", "rate_limit", 1.0),
    # The headers say the subscription window is full; Claude Code with an API key
    # ignores them, Relay does not.
    MockCase("claude/captures/f_usage_limit/run4_apikey_unified_429", "usage_limit", MOCK,
             "five_hour"),
    MockCase("codex/captures/c2_sse_rate_limit_then_ok", "rate_limit"),
    MockCase("codex/captures/c4_http429_retry_after_only", "rate_limit", 4.0),
    MockCase("codex/captures/c5_http429_message_hint_only", "rate_limit"),
    MockCase("codex/captures/c_http429_rate_limit", "rate_limit", 2.0),  # retry-after-ms
    # x-codex-primary-used-percent: 100 names the window; error.resets_at (Dec 3) is the reset.
    MockCase("codex/captures/d2_usage_limit_plus_other_day", "usage_limit", MOCK, "five_hour"),
    MockCase("codex/captures/d3_usage_limit_team", "usage_limit", MOCK),
    MockCase("codex/captures/d4_usage_limit_no_reset_info", "usage_limit", 3600.0),
    MockCase("codex/captures/d5_usage_limit_in_sse", "usage_limit", MOCK),
    MockCase("codex/captures/d6_insufficient_quota_sse", "quota"),
    MockCase("codex/captures/d_usage_limit_pro", "usage_limit", MOCK, "five_hour"),
    MockCase("codex/captures/e2_http503_server_is_overloaded", "overloaded"),
    MockCase("codex/captures/e3_http503_plain_then_ok", "overloaded"),
    MockCase("codex/captures/e_http500_retries", "overloaded"),
    MockCase("gemini/captures/c2_429_rate_limit_exhausted", "rate_limit", 2.0, "per_minute"),
    MockCase("gemini/captures/c3_429_plain", "rate_limit"),
    # RetryInfo says 43s, but a per-day quota is terminal (gemini-cli ignores it too).
    MockCase("gemini/captures/d_429_daily_quota", "quota", None, "daily"),
    MockCase("gemini/captures/d3_429_capacity_exhausted", "overloaded", 1.0),
    MockCase("gemini/captures/e_503_overloaded", "overloaded"),
    MockCase("gemini/captures/e2_500_then_ok", "overloaded"),
    MockCase("pi/captures/c2_429_exhausted", "rate_limit", 1.0),
    MockCase("pi/captures/d2_insufficient_quota", "quota"),
    MockCase("pi/captures/d_usage_limit_codex_style", "usage_limit", MOCK),
    MockCase("pi/captures/e_503_overloaded", "overloaded"),
]


@pytest.mark.parametrize("case", MOCK_CASES, ids=[c.folder for c in MOCK_CASES])
def test_mock_server_fields(case: MockCase) -> None:
    folder = ROOT / case.folder
    (step, *_) = _mock_steps(folder)
    now = _last_request_time(folder / "requests.jsonl")
    structured = {"headers": _resolve_headers(step["headers"], now)}
    if step["body"] is not None:
        structured["error"] = step["body"]
    signal = classify(None, http_status=step["status"], structured=structured,
                      provider=case.folder.split("/")[0], now=now, tz=UTC)
    assert signal.kind == case.kind
    assert signal.source == ("http_status" if step["body"] is None else "structured")
    assert signal.scope == case.scope
    if case.reset is None:
        assert (signal.resets_at, signal.retry_after) == (None, None)
    elif case.reset == MOCK:
        report = Report(case.folder.split("/")[0], "", "", None, now=now, folder=folder)
        assert signal.reset_source == "structured"
        assert abs(signal.resets_at - mock_reset(report)) <= timedelta(seconds=1)  # type: ignore[operator]
    else:
        assert signal.retry_after == case.reset
        assert signal.resets_at == now + timedelta(seconds=float(case.reset))
