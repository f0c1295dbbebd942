"""relay.core.signals over structured fields, with a fixed clock.

Claude's rate_limit_event and api_error fields, rate-limit headers (Anthropic's
unified ones, Codex's windows), API error bodies, Codex's error info, Google's error
details; and how a signal maps to an event's category and limit kind.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from relay.core.signals import Signal, classify, error_category, limit_kind
from tests.core.signal_helpers import NOW, at


def fields(structured: dict[str, Any], text: str | None = None,
           status: int | None = None) -> Signal:
    return classify(text, http_status=status, structured=structured, provider="x", now=NOW,
                    tz=UTC)


def test_claude_rate_limit_event() -> None:
    info = {"status": "rejected", "resetsAt": 1796040330, "rateLimitType": "five_hour",
            "overageStatus": "rejected"}
    for structured in ({"rate_limit_info": info}, info):  # nested or the info itself
        signal = fields(structured)
        assert (signal.kind, signal.scope, signal.source, signal.reset_source) == (
            "usage_limit", "five_hour", "structured", "structured")
        assert signal.resets_at == at(2026, 11, 30, 12, 5, 30)
    bare = fields({"rate_limit_info": {"status": "rejected", "isUsingOverage": False}})
    assert (bare.kind, bare.resets_at, bare.scope) == ("rate_limit", None, None)
    allowed = fields({"rate_limit_info": {**info, "status": "allowed"}})
    assert (allowed.kind, allowed.resets_at) == ("unknown", None)


def test_structured_reset_wins_over_the_wording() -> None:
    signal = fields({"rate_limit_info": {"status": "rejected", "resetsAt": 1796040330,
                                         "rateLimitType": "five_hour"}},
                    "You've hit your session limit · resets 1pm (UTC)", 429)
    assert signal.resets_at == at(2026, 11, 30, 12, 5, 30)
    assert signal.reset_source == "structured"


def test_newer_claude_api_error_fields() -> None:
    assert fields({"api_error": "usage_limit_reached"}, "Error", 429).kind == "usage_limit"
    assert fields({"api_error_type": "connection_failed"}, "x").kind == "network"
    assert fields({"api_error": "overloaded_error"}, "x").kind == "overloaded"


def test_the_assistant_error_hint_is_a_last_resort() -> None:
    assert fields({"assistant_error": "rate_limit"}, "odd").kind == "rate_limit"
    assert fields({"error": "authentication_failed"}, "odd").kind == "auth"
    assert fields({"assistant_error": "server_error"}, "Request timed out").kind == "timeout"
    assert fields({"assistant_error": "unknown"}, "odd").kind == "unknown"


def test_headers() -> None:
    signal = fields({"headers": {"Retry-After": "120"}}, status=429)
    assert (signal.kind, signal.retry_after, signal.resets_at) == (
        "rate_limit", 120.0, NOW + timedelta(seconds=120))
    dated = fields({"headers": {"retry-after": "Mon, 30 Nov 2026 10:07:00 GMT"}}, status=503)
    assert (dated.kind, dated.retry_after) == ("overloaded", 120.0)
    millis = fields({"headers": {"retry-after-ms": "1500", "retry-after": "2"}})
    assert millis.retry_after == 1.5
    unified = fields({"headers": {
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": "1796040330",
        "anthropic-ratelimit-unified-representative-claim": "seven_day_opus"}}, status=429)
    assert (unified.kind, unified.scope, unified.resets_at) == (
        "usage_limit", "seven_day_opus", at(2026, 11, 30, 12, 5, 30))
    unnamed = fields({"headers": {"anthropic-ratelimit-unified-status": "rejected"}})
    assert unnamed.kind == "rate_limit"
    warning = fields({"headers": {"anthropic-ratelimit-unified-status": "allowed_warning",
                                  "anthropic-ratelimit-unified-reset": "1796040330"}})
    assert (warning.kind, warning.resets_at) == ("unknown", None)


def test_codex_windows() -> None:
    headers = {"x-codex-primary-used-percent": "100", "x-codex-primary-window-minutes": "300",
               "x-codex-primary-reset-at": "1796044119",
               "x-codex-secondary-used-percent": "47", "x-codex-secondary-window-minutes": "10080",
               "x-codex-secondary-reset-at": "1796433319"}
    signal = fields({"headers": headers})
    assert (signal.kind, signal.scope, signal.resets_at) == (
        "usage_limit", "five_hour", at(2026, 11, 30, 13, 8, 39))
    # The wording agrees to the minute: the window adds its seconds.
    agreed = fields({"headers": headers}, "You’ve hit your usage limit. Visit x or try again "
                    "at 1:08 PM.")
    assert (agreed.resets_at, agreed.reset_source) == (at(2026, 11, 30, 13, 8, 39), "structured")
    # Both windows full: usable when the later one empties.
    both = fields({"rate_limits": {
        "primary": {"used_percent": 100.0, "window_minutes": 300, "resets_at": 1796044119},
        "secondary": {"used_percent": 100.0, "window_minutes": 10080, "resets_at": 1796433319}}})
    assert (both.kind, both.scope, both.resets_at) == (
        "usage_limit", "five_hour", datetime.fromtimestamp(1796433319, UTC))
    not_full = fields({"rate_limits": {"primary": {"used_percent": 42.5, "resets_at": 1796040592}}})
    assert (not_full.kind, not_full.resets_at) == ("unknown", None)


def test_api_error_bodies() -> None:
    body = {"type": "usage_limit_reached", "plan_type": "pro", "resets_at": 1796044119,
            "resets_in_seconds": 10800}
    signal = fields({"error": body}, status=429)
    assert (signal.kind, signal.resets_at, signal.retry_after) == (
        "usage_limit", at(2026, 11, 30, 13, 8, 39), 10800.0)
    relative = fields({"error": {"type": "usage_limit_reached", "resets_in_seconds": 3600}})
    assert relative.resets_at == NOW + timedelta(hours=1)
    assert fields({"error": {"code": "insufficient_quota"}}).kind == "quota"
    assert fields({"error": {"type": "server_error", "code": "server_is_overloaded"}}).kind \
        == "overloaded"
    assert fields({"error": {"type": "authentication_error"}}).kind == "auth"


def test_codex_error_info() -> None:
    assert fields({"codex_error_info": "usage_limit_exceeded"}).kind == "usage_limit"
    assert fields({"codexErrorInfo": "usageLimitExceeded"}).kind == "usage_limit"
    assert fields({"codex_error_info": "server_overloaded"}).kind == "overloaded"
    assert fields({"codex_error_info": {"response_too_many_failed_attempts": {
        "http_status_code": 429}}}).kind == "rate_limit"
    assert fields({"codex_error_info": "other"}, "Missing environment variable: `K`.").kind \
        == "unknown"
    # Codex files "Quota exceeded" under usage_limit_exceeded; the wording is more precise.
    assert fields({"codex_error_info": "usage_limit_exceeded"},
                  "Quota exceeded. Check your plan and billing details.").kind == "quota"


def test_google_error_details() -> None:
    def detail(quota_id: str, delay: str = "2s") -> dict[str, Any]:
        return {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
             "violations": [{"quotaId": quota_id}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]}}

    minute = fields(detail("GenerateRequestsPerMinutePerProjectPerModel"))
    assert (minute.kind, minute.scope, minute.retry_after) == ("rate_limit", "per_minute", 2.0)
    day = fields(detail("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "43s"))
    assert (day.kind, day.scope, day.retry_after, day.resets_at) == ("quota", "daily", None, None)
    capacity = fields({"error": {"status": "RESOURCE_EXHAUSTED", "details": [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "MODEL_CAPACITY_EXHAUSTED"}]}})
    assert capacity.kind == "overloaded"
    assert fields({"error": {"status": "UNAVAILABLE"}}).kind == "overloaded"


@pytest.mark.parametrize(("kind", "category", "limit"), [
    ("usage_limit", "usage_limit", "usage_limit"), ("quota", "usage_limit", "quota"),
    ("rate_limit", "rate_limit", "rate_limit"), ("overloaded", "overloaded", "overloaded"),
    ("auth", "auth", None), ("invalid_request", "request", None), ("refusal", "request", None),
    ("crash", "process", None), ("inactivity", "stalled", None), ("network", "network", None),
    ("timeout", "timeout", None), ("unknown", "unknown", None),
])
def test_event_mappings(kind: Any, category: str, limit: str | None) -> None:
    signal = Signal(kind=kind, provider="x")
    assert error_category(signal) == category
    assert limit_kind(signal) == limit
    assert signal.is_limit == (limit is not None)
