"""Machine-readable failure fields for :mod:`relay.core.signals`: error bodies,
Claude's ``rate_limit_info``, Codex's ``codex_error_info`` and rate-limit windows, and
response headers, read into one ``Fields`` record (split out of signals.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal

from relay.core.jsonvalue import as_number
from relay.core.reset_times import from_epoch, span_seconds

SignalKind = Literal[
    "usage_limit", "rate_limit", "overloaded", "auth", "invalid_request", "refusal",
    "crash", "inactivity", "quota", "network", "timeout", "unknown",
]


def kind_for_status(status: int) -> SignalKind:
    if status == 429:
        return "rate_limit"
    if status >= 500:
        return "overloaded"
    if status in (401, 403):
        return "auth"
    if status == 402:
        return "quota"
    if status == 408:
        return "timeout"
    if 400 <= status < 500:
        return "invalid_request"
    return "unknown"


# ---------------------------------------------------------------------------
# Structured fields
# ---------------------------------------------------------------------------

# error.type / error.code / api_error / codex_error_info values (lower case).
_CODES: dict[str, SignalKind] = {
    "usage_limit_reached": "usage_limit", "usage_limit_exceeded": "usage_limit",
    "insufficient_quota": "quota", "usage_not_included": "quota", "billing_error": "quota",
    "rate_limit_exceeded": "rate_limit", "rate_limit_error": "rate_limit",
    "too_many_requests": "rate_limit",
    "server_is_overloaded": "overloaded", "server_overloaded": "overloaded",
    "overloaded_error": "overloaded", "internal_server_error": "overloaded",
    "server_error": "overloaded", "api_error": "overloaded", "slow_down": "overloaded",
    "authentication_error": "auth", "authentication_failed": "auth", "permission_error": "auth",
    "invalid_api_key": "auth", "unauthorized": "auth",
    "invalid_request_error": "invalid_request", "invalid_request": "invalid_request",
    "request_too_large": "invalid_request", "not_found_error": "invalid_request",
    "context_length_exceeded": "invalid_request", "context_window_exceeded": "invalid_request",
    "bad_request": "invalid_request",
    "connection_failed": "network", "http_connection_failed": "network",
    "response_stream_disconnected": "network", "response_stream_connection_failed": "network",
    "timeout_error": "timeout", "refusal": "refusal",
}
# Google RPC statuses: weaker than the details they come with.
_GOOGLE_STATUS: dict[str, SignalKind] = {
    "RESOURCE_EXHAUSTED": "rate_limit", "UNAVAILABLE": "overloaded", "INTERNAL": "overloaded",
    "UNAUTHENTICATED": "auth", "PERMISSION_DENIED": "auth", "INVALID_ARGUMENT": "invalid_request",
    "DEADLINE_EXCEEDED": "timeout",
}
# Claude's synthetic assistant line ``error`` field: only a last resort.
_WEAK: dict[str, SignalKind] = {
    "rate_limit": "rate_limit", "authentication_failed": "auth", "billing_error": "quota",
    "invalid_request": "invalid_request", "server_error": "overloaded",
}
# Most specific first: which kind wins when several fields speak.
_RANK: tuple[SignalKind, ...] = (
    "usage_limit", "quota", "refusal", "rate_limit", "overloaded", "auth", "invalid_request",
    "timeout", "network", "crash", "inactivity",
)
_WINDOW_SCOPES = {300: "five_hour", 10080: "seven_day", 1440: "daily"}


@dataclass
class Fields:
    kinds: list[SignalKind]
    generic: list[SignalKind]
    weak_kind: SignalKind | None = None
    scope: str | None = None
    absolute: datetime | None = None
    retry_after: float | None = None
    window: datetime | None = None

    @property
    def kind(self) -> SignalKind | None:
        for pool in (self.kinds, self.generic):
            if pool:
                return min(pool, key=_RANK.index)
        return None

    def reset(self, when: datetime | None) -> None:
        if when is not None and self.absolute is None:
            self.absolute = when

    def delay(self, seconds: float | None) -> None:
        if seconds is not None and self.retry_after is None:
            self.retry_after = max(seconds, 0.0)

    def name(self, scope: str | None) -> None:
        if scope and self.scope is None:
            self.scope = scope


def read_structured(data: Mapping[str, Any], now: datetime) -> Fields:
    fields = Fields(kinds=[], generic=[])
    _read_rate_limit_info(data, fields)
    error = data.get("error")
    if isinstance(error, Mapping):
        _read_body(error, fields)
    elif isinstance(error, str):
        fields.weak_kind = _WEAK.get(error)
    assistant = data.get("assistant_error")
    if isinstance(assistant, str):
        fields.weak_kind = _WEAK.get(assistant) or fields.weak_kind
    for key in ("api_error", "api_error_type"):
        _code(data.get(key), fields)
    _read_codex_info(data, fields)
    rate_limits = data.get("rate_limits")
    if isinstance(rate_limits, Mapping):
        for slot in ("primary", "secondary"):
            window = rate_limits.get(slot)
            if isinstance(window, Mapping):
                _window(window.get("used_percent"), window.get("resets_at"),
                        window.get("window_minutes"), slot, fields)
    headers = data.get("headers")
    if isinstance(headers, Mapping):
        _read_headers({str(k).lower(): v for k, v in headers.items()}, fields, now)
    return fields


def _read_rate_limit_info(data: Mapping[str, Any], fields: Fields) -> None:
    info = data.get("rate_limit_info")
    if not isinstance(info, Mapping):
        info = data if ("resetsAt" in data or "rateLimitType" in data) else None
    if info is None or info.get("status") != "rejected":
        return
    resets_at = from_epoch(info.get("resetsAt"))
    scope = info.get("rateLimitType") if isinstance(info.get("rateLimitType"), str) else None
    # A subscriber 429 without the unified headers says "rejected" with neither field.
    fields.kinds.append("usage_limit" if resets_at or scope else "rate_limit")
    fields.reset(resets_at)
    fields.name(scope)


def _read_body(body: Mapping[str, Any], fields: Fields) -> None:
    for key in ("type", "code"):
        _code(body.get(key), fields)
    status = body.get("status")
    if isinstance(status, str) and status in _GOOGLE_STATUS:
        fields.generic.append(_GOOGLE_STATUS[status])
    fields.reset(from_epoch(body.get("resets_at")))
    seconds = body.get("resets_in_seconds")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool):
        fields.delay(float(seconds))
    _read_codex_info(body, fields)
    details = body.get("details")
    if isinstance(details, list):
        _read_google_details([d for d in details if isinstance(d, Mapping)], fields)


def _read_google_details(details: list[Mapping[str, Any]], fields: Fields) -> None:
    terminal = False
    for detail in details:
        kind = str(detail.get("@type", ""))
        if kind.endswith("QuotaFailure"):
            for violation in detail.get("violations") or []:
                quota_id = str(violation.get("quotaId", "")) if isinstance(violation, Mapping) else ""
                if "PerDay" in quota_id:
                    fields.kinds.append("quota")
                    fields.name("daily")
                    terminal = True
                elif "PerMinute" in quota_id:
                    fields.kinds.append("rate_limit")
                    fields.name("per_minute")
        elif kind.endswith("ErrorInfo"):
            reason = str(detail.get("reason", ""))
            if reason == "MODEL_CAPACITY_EXHAUSTED":
                fields.kinds.append("overloaded")
            elif reason == "RATE_LIMIT_EXCEEDED":
                fields.kinds.append("rate_limit")
    if terminal:
        return  # gemini-cli ignores RetryInfo on a per-day quota (TerminalQuotaError)
    for detail in details:
        if str(detail.get("@type", "")).endswith("RetryInfo"):
            fields.delay(span_seconds(str(detail.get("retryDelay", ""))))


def _read_codex_info(data: Mapping[str, Any], fields: Fields) -> None:
    info = data.get("codex_error_info", data.get("codexErrorInfo"))
    if isinstance(info, str):
        _code(_snake(info), fields)
    elif isinstance(info, Mapping):
        for key, inner in info.items():
            status = inner.get("http_status_code", inner.get("httpStatusCode")) \
                if isinstance(inner, Mapping) else None
            if isinstance(status, int) and not isinstance(status, bool) \
                    and kind_for_status(status) != "unknown":
                fields.kinds.append(kind_for_status(status))
            else:
                _code(_snake(str(key)), fields)


def _read_headers(headers: Mapping[str, Any], fields: Fields, now: datetime) -> None:
    if headers.get("anthropic-ratelimit-unified-status") == "rejected":
        claim = headers.get("anthropic-ratelimit-unified-representative-claim")
        named = claim is not None or "anthropic-ratelimit-unified-overage-status" in headers
        fields.kinds.append("usage_limit" if named else "rate_limit")
        fields.reset(from_epoch(headers.get("anthropic-ratelimit-unified-reset")))
        fields.name(str(claim) if claim else None)
    for slot in ("primary", "secondary"):
        _window(headers.get(f"x-codex-{slot}-used-percent"),
                headers.get(f"x-codex-{slot}-reset-at"),
                headers.get(f"x-codex-{slot}-window-minutes"), slot, fields)
    millis = as_number(headers.get("retry-after-ms"))
    if millis is not None:
        fields.delay(millis / 1000.0)
    fields.delay(_retry_after(headers.get("retry-after"), now))


def _window(used: Any, resets_at: Any, minutes: Any, slot: str, fields: Fields) -> None:
    """A Codex rate-limit window (rollout snapshot or x-codex-* headers): full means blocked."""
    percent = as_number(used)
    if percent is None or percent < 100:
        return
    fields.kinds.append("usage_limit")
    when = from_epoch(resets_at)
    # Both windows full: usable again only when the later one resets.
    if when is not None and (fields.window is None or when > fields.window):
        fields.window = when
    window = as_number(minutes)
    fields.name(_WINDOW_SCOPES.get(int(window), slot) if window is not None else slot)


def _retry_after(value: Any, now: datetime) -> float | None:
    seconds = as_number(value)
    if seconds is not None:
        return seconds
    if isinstance(value, str):
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max((when - now).total_seconds(), 0.0)
    return None


def _code(value: Any, fields: Fields) -> None:
    if isinstance(value, str) and value.lower() in _CODES:
        fields.kinds.append(_CODES[value.lower()])


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()

