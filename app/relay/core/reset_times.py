"""Reset times and retry delays in the wording of agent CLIs' limit messages.

Part of :mod:`relay.core.signals` (see its docstring for how a time is
resolved against ``now`` and a zone); split out because the date and time
grammar is large. Pure: no I/O, no clock reads.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


class Reset(NamedTuple):
    """A reset read from text: the time, and the delay if one was given."""

    resets_at: datetime | None
    retry_after: float | None


NO_RESET = Reset(None, None)


# ---------------------------------------------------------------------------
# Reset times in text
# ---------------------------------------------------------------------------

_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = (r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_DATE = _MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(?P<year>\d{4}))?"
_TIME = (r"(?:(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>[ap])\.?m\.?(?![a-z])"
         r"|(?P<h24>\d{1,2}):(?P<m24>\d{2})(?!\s*[ap]\.?m)(?!\d))")
_WHEN = rf"(?:{_DATE}(?:\s*,\s*|\s+at\s+|\s+))?(?:{_TIME})(?:\s*\((?P<zone>[^()]+)\))?"
# "resets 12:05pm (UTC)", "resets Sep 18 at 3am (America/Los_Angeles)", "Your limit will
# reset at 5pm (Europe/Warsaw)." — a bare clock time is the next one.
_RESETS_AT = re.compile(rf"\bresets?(?:\s+at)?\s+{_WHEN}", re.IGNORECASE)
# Codex: "try again at 1:08 PM." (today, process zone), "try again at Dec 3rd, 2026 10:08 AM.";
# the app: "try again after September 6, 2026, 11:15."
_TRY_AGAIN_AT = re.compile(rf"\btry again (?:at|after)\s+{_WHEN}", re.IGNORECASE)
_EPOCH_AFTER_BAR = re.compile(r"limit reached\|(\d{9,13})\b", re.IGNORECASE)

_UNIT_WORDS = r"(?:days?|hours?|hrs?|minutes?|mins?|seconds?|secs?|milliseconds?)"
_SPAN_COMPACT = r"(?:\d+(?:\.\d+)?(?:ms|[dhms]))+(?![a-z])"
_SPAN_WORDS = (rf"\d+(?:\.\d+)?\s*{_UNIT_WORDS}\b"
               rf"(?:(?:\s*,\s*|\s+and\s+|\s+)\d+(?:\.\d+)?\s*{_UNIT_WORDS}\b)*")
# "Please try again in 1.5s.", "try again in 5 days 22 hours 11 minutes.", Gemini's
# "Suggested retry after 2s." and "Your quota will reset after 2h10m46s." ("Retrying
# after 5029ms" is the CLI's own backoff and does not match).
_DELAY = re.compile(
    rf"\b(?:try again|retry|resets?)\s+(?:in|after)\s+(?P<span>{_SPAN_COMPACT}|{_SPAN_WORDS})",
    re.IGNORECASE)
_SPAN_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)", re.IGNORECASE)
_UNIT_SECONDS = {"ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
                 "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
                 "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
                 "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
                 "d": 86400.0, "day": 86400.0, "days": 86400.0}


def reset_from_text(text: str, *, now: datetime, tz: tzinfo | None) -> Reset:
    """When a limit resets, from the wording alone.

    Args:
        text: The failure text.
        now: The current time (aware).
        tz: The zone the CLI formats times in when it names none (``None``: local).

    Returns:
        The reset time (aware UTC) and, for "try again in …" wording, the delay
        in seconds; both ``None`` when the text names no reset or names one
        that cannot be resolved (unknown zone, unknown month, 31 Feb).
    """
    epoch = _EPOCH_AFTER_BAR.search(text)
    if epoch:
        return Reset(from_epoch(epoch.group(1)), None)
    for pattern, same_day in ((_RESETS_AT, False), (_TRY_AGAIN_AT, True)):
        match = pattern.search(text)
        if match:
            return Reset(_resolve_when(match, now, tz, same_day=same_day), None)
    delay = _DELAY.search(text)
    if delay:
        seconds = span_seconds(delay.group("span"))
        if seconds is not None:
            return Reset(now.astimezone(UTC) + timedelta(seconds=seconds), seconds)
    return NO_RESET


def span_seconds(span: str) -> float | None:
    total = 0.0
    for value, unit in _SPAN_PART.findall(span):
        factor = _UNIT_SECONDS.get(unit.lower())
        if factor is None:
            return None
        total += float(value) * factor
    return total


def _resolve_when(match: re.Match[str], now: datetime, default: tzinfo | None, *,
                  same_day: bool) -> datetime | None:
    zone: tzinfo | None = default
    if match["zone"]:
        zone = zone_named(match["zone"])
        if zone is None:
            return None  # a zone we do not know: never fall back to a guess
    clock = _clock(match)
    if clock is None:
        return None
    today = now.astimezone(zone).date()
    if match["mon"]:
        month = _MONTH_NAMES.index(match["mon"][:3].lower()) + 1
        try:
            if match["year"]:
                return _at(date(int(match["year"]), month, int(match["day"])), clock, zone)
            candidate = _at(date(today.year, month, int(match["day"])), clock, zone)
            if candidate < now - timedelta(days=1):  # "Jan 2" read on Dec 30
                candidate = _at(date(today.year + 1, month, int(match["day"])), clock, zone)
        except ValueError:  # 31 Feb, 29 Feb of a common year
            return None
        return candidate
    candidate = _at(today, clock, zone)
    if not same_day and candidate <= now:
        candidate = _at(today + timedelta(days=1), clock, zone)
    return candidate


def _clock(match: re.Match[str]) -> time | None:
    if match["ampm"]:
        hour, minute = int(match["hour"]), int(match["minute"] or 0)
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if match["ampm"].lower() == "p" else 0)
    else:
        hour, minute = int(match["h24"]), int(match["m24"])
    if hour > 23 or minute > 59:
        return None
    return time(hour, minute)


def _at(day: date, clock: time, zone: tzinfo | None) -> datetime:
    naive = datetime.combine(day, clock)
    # A naive datetime's astimezone() reads it as local time, DST included.
    aware = naive.astimezone() if zone is None else naive.replace(tzinfo=zone)
    return aware.astimezone(UTC)


def zone_named(name: str) -> tzinfo | None:
    """The IANA zone a CLI named ("UTC", "Europe/Rome"), or ``None`` if unknown."""
    name = name.strip()
    if name.upper() in ("UTC", "GMT", "Z"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def from_epoch(value: Any) -> datetime | None:
    """An epoch timestamp (seconds, or milliseconds above 1e11) as aware UTC."""
    if isinstance(value, str) and re.fullmatch(r"\s*\d+(?:\.\d+)?\s*", value):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        return None
    if seconds > 1e11:
        seconds /= 1000.0
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None
