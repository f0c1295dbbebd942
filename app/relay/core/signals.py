"""What an agent CLI's failure means: one classifier for every runtime.

Every CLI reports limits, overload and failures its own way (the recorded
behaviour is in ``tests/fixtures/*/NOTES.md``). :func:`classify` turns what
a runtime saw — the failure text, the HTTP status, and any machine-readable
fields — into a :class:`Signal`: what kind of failure it is, when the limit
resets (or how long to wait), which limit it was, and where that knowledge
came from. The stream parsers and (later) the handoff decision use it.

Evidence is weighed in this order:

1. structured fields: Claude's ``rate_limit_event.rate_limit_info``
   (``resetsAt``, ``rateLimitType``), ``api_error`` / ``api_error_type``;
   API error bodies (``error.type`` / ``error.code`` / ``resets_at`` /
   ``resets_in_seconds``, Google's ``details``); Codex's ``codex_error_info``
   and rollout ``rate_limits``; response headers (``retry-after``,
   ``anthropic-ratelimit-unified-*``, ``x-codex-primary-*`` …);
2. wording that names a usage limit, a billing quota or a refusal (a usage
   limit only with HTTP 429 or no status, as the CLIs themselves do);
3. the HTTP status (given, or read from the text: ``last status: 429``,
   ``API Error: 500``, pi's leading ``503 …``);
4. generic wording (overloaded, rate limit, auth, network, timeout …);
5. a weak hint: Claude's synthetic assistant line ``error`` field.

Reset times come from the error's structured fields first (``resetsAt``,
``resets_at``, ``anthropic-ratelimit-unified-reset``, ``retry-after`` …) and
only then from the wording. A rate-limit window snapshot (Codex
``rate_limits`` / ``x-codex-*-reset-at``) describes the account, not the
error: it refines a worded time it agrees with and stands alone when the
wording names none, but never overrides what the error said. Wording that is
not recognised stays verbatim in the signal and is classified ``unknown`` —
never guessed; a reset time that cannot be resolved (an unknown zone, a date
in another language) is ``None``.

Clock times are resolved against an injected ``now``. A time after
"resets"/"reset at" (Claude: shown without a date when less than 24 h away)
is the next such time; a time after "try again at" (Codex: shown without a
date only when the reset is on the current local day) is that time today; a
date is taken as given (without a year: the nearest such date). A zone named
in parentheses wins over ``tz``, the zone the CLI process formats times in.

Pure: no I/O, no clock reads (except that ``tz=None`` means this machine's
local zone), no Qt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Literal

from relay.core.events import AgentError, AgentEvent, ErrorCategory, LimitHit, LimitKind
from relay.core.reset_times import Reset, from_epoch, reset_from_text, zone_named
from relay.core.signal_fields import Fields, SignalKind, kind_for_status, read_structured

__all__ = ["Reset", "Signal", "classify", "error_category", "failure_events", "from_epoch",
           "limit_kind", "named_by_format",
           "reset_from_text", "zone_named"]

SignalSource = Literal["structured", "text", "http_status", "none"]

LIMIT_KINDS: frozenset[SignalKind] = frozenset({"usage_limit", "quota", "rate_limit", "overloaded"})


@dataclass(frozen=True, slots=True)
class Signal:
    """What one failure report means.

    Attributes:
        kind: The failure class; ``unknown`` when nothing was recognised.
        provider: The runtime that reported it (``claude``, ``codex`` …).
        text: The failure text exactly as given (``None`` if there was none).
        resets_at: When the limit resets (aware UTC), if known.
        retry_after: Seconds to wait, when the source gave a delay rather
            than a time (``retry-after``, "try again in 1.5s"); ``resets_at``
            is then ``now`` plus this delay unless an absolute time was given.
        scope: Which limit: ``five_hour``, ``seven_day``, ``seven_day_opus``,
            ``seven_day_sonnet``, ``daily``, ``per_minute``, … (Claude's
            ``rateLimitType`` verbatim).
        http_status: The HTTP status, given or read from the text.
        source: Where ``kind`` came from (``none`` for ``unknown``).
        reset_source: Where ``resets_at`` / ``retry_after`` came from.
    """

    kind: SignalKind
    provider: str
    text: str | None = None
    resets_at: datetime | None = None
    retry_after: float | None = None
    scope: str | None = None
    http_status: int | None = None
    source: SignalSource = "none"
    reset_source: SignalSource = "none"

    @property
    def is_limit(self) -> bool:
        """A usage limit, quota, rate limit or overload (what a handoff is about)."""
        return self.kind in LIMIT_KINDS




# ---------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------


def classify(text: str | None, *, http_status: int | None = None,
             structured: Mapping[str, Any] | None = None, provider: str,
             now: datetime, tz: tzinfo | None) -> Signal:
    """Classify one failure report.

    Args:
        text: The failure text (result text, error message, stderr line).
        http_status: The HTTP status when the runtime reports it.
        structured: Machine-readable fields, any of: ``rate_limit_info``
            (Claude's rate_limit_event, or its keys at the top level),
            ``api_error`` / ``api_error_type``, ``error`` (an API error body,
            or Claude's assistant ``error`` string), ``assistant_error``,
            ``codex_error_info``, ``rate_limits`` (Codex rollout snapshot),
            ``headers`` (HTTP response headers).
        provider: The runtime the report came from (recorded in the signal;
            the rules are the same for every provider, so one CLI's wording is
            recognised wherever it shows up, e.g. pi passing on Codex's).
        now: The current time (aware); anchors clock times and delays.
        tz: The zone the CLI process formats times in (``None``: local).

    Returns:
        The signal; ``kind == "unknown"`` when nothing was recognised.

    Raises:
        ValueError: ``now`` is naive.
    """
    if now.tzinfo is None:
        raise ValueError("now must be an aware datetime")
    body = text or ""
    fields = read_structured(structured or {}, now)
    status, status_source = http_status, "http_status"
    if status is None:
        status, status_source = _status_in(body), "text"
    text_reset = reset_from_text(body, now=now, tz=tz)

    kind: SignalKind = "unknown"
    source: SignalSource = "none"
    scope = fields.scope
    specific = _specific_wording(body, status, text_reset)
    by_status = kind_for_status(status) if status is not None else "unknown"
    if fields.kind is not None:
        kind, source = fields.kind, "structured"
        if kind == "usage_limit" and specific is not None and specific[0] == "quota":
            # codex_error_info "usage_limit_exceeded" also covers "Quota exceeded" (d6).
            kind = "quota"
    elif specific is not None:
        kind, source = specific[0], "text"
    elif by_status != "unknown":
        kind, source = by_status, "http_status" if status_source == "http_status" else "text"
    elif (generic := _generic_wording(body)) is not None:
        kind, source = generic, "text"
    elif fields.weak_kind is not None:
        kind, source = fields.weak_kind, "structured"

    if specific is not None and specific[0] == kind:
        scope = scope or specific[1]

    resets_at, retry_after, reset_source = _pick_reset(fields, text_reset, now)
    return Signal(kind=kind, provider=provider, text=text, resets_at=resets_at,
                  retry_after=retry_after, scope=scope, http_status=status, source=source,
                  reset_source=reset_source)


def _pick_reset(fields: Fields, text: Reset,
                now: datetime) -> tuple[datetime | None, float | None, SignalSource]:
    """The error's own fields, then its wording, then the account's window snapshot.

    A rate-limit window snapshot (Codex ``rate_limits`` / ``x-codex-*``) says
    when a full window empties, not what the error said: it only adds the
    seconds to a worded time it agrees with (to the minute), and is used alone
    when the wording names no time. In the Codex capture d2 the full 5-hour
    window reset at 13:08 while the error said Dec 3.
    """
    if fields.absolute is not None or fields.retry_after is not None:
        resets_at = fields.absolute
        if resets_at is None and fields.retry_after is not None:
            resets_at = now.astimezone(UTC) + timedelta(seconds=fields.retry_after)
        return resets_at, fields.retry_after, "structured"
    window = fields.window
    if text.resets_at is not None:
        if window is not None and timedelta(0) <= window - text.resets_at < timedelta(minutes=1):
            return window, text.retry_after, "structured"
        return text.resets_at, text.retry_after, "text"
    if window is not None:
        return window, None, "structured"
    return None, None, "none"


def failure_events(signal: Signal, message: str, *, runtime: str,
                   category: ErrorCategory | None = None, fatal: bool = True,
                   report_limit: bool = True, http_status: int | None = None,
                   ts: datetime | None = None, replay: bool = False) -> list[AgentEvent]:
    """A classified failure as events: a :class:`LimitHit` when it is a limit, then the
    :class:`AgentError`. Every runtime and every session store takes this one step.

    * The error's category is the signal's (:func:`error_category`) unless the runtime's
      format states its own (``category``: Claude's result subtype, Codex's configuration
      errors); a format's flag that names the failure itself (Copilot's
      ``isQuotaExceeded``) is applied to the signal first, with :func:`named_by_format`.
    * There is a LimitHit when the category is a limit's and the caller has not already
      reported this limit (``report_limit``: Claude's ``rate_limit_event`` came first). Its
      kind is the signal's (a quota stays a quota), or the category's when the format
      overrode a wording that named no limit.
    * It is **blocking exactly when the failure is fatal** — it ended the turn — and that
      holds for ``overloaded`` too: an overloaded provider cannot go on now, and the
      handoff decision (:func:`relay.sessions.decision.decide`) retries the same account
      with a back-off before it hands off, so blocking never means "switch accounts at
      once". A failure the agent survived (``fatal=False``: it retried and went on) is a
      non-blocking LimitHit, a warning for the wallet and the window.

    ``http_status`` is a status the format states where the signal read none (Gemini's
    exit code).
    """
    category = category or error_category(signal)
    kind = _limit_of(signal, category) if report_limit else None
    stamp = {"ts": ts} if ts is not None else {}
    events: list[AgentEvent] = []
    if kind is not None:
        events.append(LimitHit(runtime=runtime, limit=kind, message=message,
                               resets_at=signal.resets_at, scope=signal.scope, blocking=fatal,
                               replay=replay, **stamp))
    events.append(AgentError(runtime=runtime, category=category, message=message,
                             http_status=signal.http_status or http_status, fatal=fatal,
                             replay=replay,
                             **stamp))
    return events


def named_by_format(signal: Signal, kind: SignalKind | None, *, over: bool = True) -> Signal:
    """``signal`` with the kind a format's own flag names (None: no flag). ``over=False``
    applies it only where the wording named no limit (Copilot's ``isRateLimited`` does not
    turn a worded quota into a rate limit)."""
    if kind is None or (not over and signal.kind in LIMIT_KINDS):
        return signal
    return replace(signal, kind=kind)


def _limit_of(signal: Signal, category: ErrorCategory) -> LimitKind | None:
    if category not in _CATEGORY_LIMITS:
        return None
    if error_category(signal) == category:
        return limit_kind(signal)
    return _CATEGORY_LIMITS[category]


def error_category(signal: Signal) -> ErrorCategory:
    """The :class:`~relay.core.events.AgentError` category for a signal."""
    return _CATEGORIES[signal.kind]


def limit_kind(signal: Signal) -> LimitKind | None:
    """The :class:`~relay.core.events.LimitHit` kind, or ``None`` if not a limit."""
    return _LIMITS.get(signal.kind)


_CATEGORIES: dict[SignalKind, ErrorCategory] = {
    "usage_limit": "usage_limit", "quota": "usage_limit", "rate_limit": "rate_limit",
    "overloaded": "overloaded", "auth": "auth", "invalid_request": "request",
    "refusal": "request", "crash": "process", "inactivity": "stalled", "network": "network",
    "timeout": "timeout", "unknown": "unknown",
}
#: the limit a category means when a format states the category itself
_CATEGORY_LIMITS: dict[ErrorCategory, LimitKind] = {
    "usage_limit": "usage_limit", "rate_limit": "rate_limit", "overloaded": "overloaded",
}
_LIMITS: dict[SignalKind, LimitKind] = {
    "usage_limit": "usage_limit", "quota": "quota", "rate_limit": "rate_limit",
    "overloaded": "overloaded",
}


# ---------------------------------------------------------------------------
# Wording
# ---------------------------------------------------------------------------

_APOS = "['’]"
# "You've hit your session limit", "You’ve hit your usage limit", "You've reached
# your Fable limit", "You have reached your daily quota limit".
_HIT_YOUR = re.compile(
    rf"\byou(?:{_APOS}ve| have) (?:hit|reached) your (?P<name>(?:[^.·∙•|\n]|\.(?=\S)){{0,40}}?)\blimit\b",
    re.IGNORECASE)
# Claude 1.x: "5-hour limit reached ∙ resets 3pm", "Opus weekly limit reached ∙ …",
# and the bare "weekly limit · resets Sep 18 at 3am (America/Los_Angeles)".
_NAMED_REACHED = re.compile(
    r"\b(?P<name>5-hour|five-hour|session|weekly|daily|(?:opus|sonnet)(?: weekly)?)"
    r" limit(?: reached|\s*[·∙•]\s*resets\b)",
    re.IGNORECASE)
_USAGE_LIMIT = re.compile(
    r"\busage limit (?:has been )?reached"            # "Claude AI usage limit reached|…", pi/codex
    r"|\byou have reached the usage limit"             # Codex app
    r"|\byou have exhausted your capacity on this model",  # Gemini (Code Assist)
    re.IGNORECASE)
_QUOTA = re.compile(
    r"\bquota exceeded\b|exceeded your current quota|exhausted your daily quota|insufficient[_ ]quota"
    r"|credit balance is too low|\bdaily quota limit\b",
    re.IGNORECASE)
_DAILY = re.compile(r"\bdaily\b|per ?day", re.IGNORECASE)
_REFUSAL = re.compile(
    r"violates? (?:our|the) (?:usage|content) polic(?:y|ies)|unable to respond to this request",
    re.IGNORECASE)
_BILLING_NAMES = ("quota", "spend", "credit", "budget", "billing")
_NOT_USAGE_NAMES = ("context", "fast")

_GENERIC: tuple[tuple[SignalKind, re.Pattern[str]], ...] = (
    ("overloaded", re.compile(
        r"overloaded|at capacity|high demand|no capacity available|server[- ]side issue"
        r"|internal server error|service unavailable|temporarily unavailable"
        r"|server had an error|\b529\b|model_capacity_exhausted"
        r"|an internal error has occurred|service is currently unavailable",  # Google INTERNAL, UNAVAILABLE
        re.IGNORECASE)),
    ("rate_limit", re.compile(
        r"rate[ _-]?limit|too many requests|resource has been exhausted"
        r"|temporarily limiting requests|resource_exhausted", re.IGNORECASE)),
    ("auth", re.compile(
        r"invalid api key|api key not valid|incorrect api key|invalid x-api-key"
        r"|authentication[_ ](?:error|failed)|\bunauthori[sz]ed\b|oauth token (?:has )?expired"
        r"|not logged in|please run /login|must specify the \w*api_key|invalid auth method"
        r"|please set an auth method|api key expired|caller does not have permission",  # Gemini
        re.IGNORECASE)),
    ("network", re.compile(
        r"unable to connect|connection refused|econnrefused|econnreset|enotfound|getaddrinfo"
        r"|socket hang up|fetch failed|network error|stream disconnected|error sending request"
        r"|connection (?:reset|closed|error)", re.IGNORECASE)),
    ("timeout", re.compile(r"\btimed out\b|\btimeout\b|etimedout|deadline (?:exceeded|expired)",
                           re.IGNORECASE)),
    ("invalid_request", re.compile(
        r"invalid[_ ]request|bad request|context (?:window|length)|prompt is too long"
        r"|maximum context length|request too large", re.IGNORECASE)),
    ("inactivity", re.compile(r"printed nothing for|agent stalled|no output for", re.IGNORECASE)),
    ("crash", re.compile(
        r"panicked at|segmentation fault|core dumped|out of memory|unhandled (?:promise )?rejection"
        r"|uncaught exception|unexpected critical error", re.IGNORECASE)),
)

_STATUS_IN_TEXT = (
    re.compile(r"(?:unexpected status|last status:?)\s+(\d{3})\b", re.IGNORECASE),  # codex
    re.compile(r"\bAPI Error:\s*(\d{3})\b"),                                         # claude
    re.compile(r"\bRequest rejected \((\d{3})\)"),                                   # claude
    re.compile(r"\bfailed with status (\d{3})\b"),                                   # gemini
    re.compile(r"\A\s*([45]\d\d)\s"),                                                # pi
)


def _status_in(text: str) -> int | None:
    for pattern in _STATUS_IN_TEXT:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def _specific_wording(text: str, status: int | None,
                      reset: Reset) -> tuple[SignalKind, str | None] | None:
    """A usage limit, billing quota or refusal named in so many words."""
    if _REFUSAL.search(text):
        return "refusal", None
    quota = _QUOTA.search(text)
    if quota and status in (None, 400, 402, 403, 429):
        if _DAILY.search(text):
            return "quota", "daily"
        # "You exceeded your current quota … Suggested retry after 2s." (Gemini per-minute).
        return ("rate_limit" if reset.retry_after is not None else "quota"), None
    if status not in (None, 429):
        return None
    for pattern in (_HIT_YOUR, _NAMED_REACHED):
        for match in pattern.finditer(text):
            name = match.group("name").strip().lower()
            if any(word in name for word in _NOT_USAGE_NAMES):
                continue
            if any(word in name for word in _BILLING_NAMES):
                return "quota", "daily" if "daily" in name else None
            return "usage_limit", _scope_from_name(name)
    if _USAGE_LIMIT.search(text):
        return "usage_limit", None
    return None


def _scope_from_name(name: str) -> str | None:
    """Claude's vocabulary for a limit named in words ("session", "Opus weekly" …)."""
    if not name or name == "usage":
        return None
    if any(word in name for word in ("session", "5-hour", "five-hour")):
        return "five_hour"
    for model in ("opus", "sonnet"):
        if model in name:
            return f"seven_day_{model}"
    if "week" in name:
        return "seven_day"
    if "daily" in name:
        return "daily"
    return re.sub(r"\W+", "_", name).strip("_") or None


def _generic_wording(text: str) -> SignalKind | None:
    for kind, pattern in _GENERIC:
        if pattern.search(text):
            return kind
    return None


