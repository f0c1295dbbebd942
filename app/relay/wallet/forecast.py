"""Burn rate → how full a window is, how full it will be at its reset, when it runs out.

Pure functions over readings and token counts; :mod:`relay.wallet.service` gathers them.

**How full** (best source first): the provider's own used percentage (official); a
rejection in this window (official: it is full); tokens counted in the window against a
limit **learned** from the last time this account was rejected in such a window (estimate:
the provider does not publish its limits, so the tokens spent when it said "no" are the
best evidence of where the wall stands); otherwise unknown — never a guess shown as a fact.

**How fast**: two or more official readings in the window give the rate directly; in a
five-hour window, one reading plus the recent token burn converts tokens into percent at the
reading's own ratio (not over seven days: the account is used outside these transcripts too,
and the ratio would be wild); a learned limit converts the burn likewise.

**Confidence**: high — official and fresh (≤ 10 min), rate from official readings;
medium — official, rate converted from the token burn (or the reading is older);
low — estimated from a learned limit; none — unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from relay.wallet.limits import window_length_ms
from relay.wallet.model import (
    FIVE_HOURS_MS,
    Confidence,
    Figure,
    LimitSnapshot,
    Source,
    WindowKind,
    WindowView,
)

#: the burn rate is measured over this much recent activity
BURN_SPAN_MS = 30 * 60_000
#: an official reading younger than this is "fresh"
FRESH_MS = 10 * 60_000


@dataclass(frozen=True, slots=True)
class WindowInputs:
    """What the forecast of one account's window is made from."""

    kind: WindowKind
    now_ms: int
    #: official readings of this window, oldest first (any age; stale ones are ignored)
    readings: Sequence[LimitSnapshot]
    #: (ts_ms, total tokens) of every model call of this account in the last window length
    calls: Sequence[tuple[int, int]]
    #: where the counts come from: "recorded" (Relay's sessions) or "estimate" (transcripts)
    calls_source: Source = "estimate"
    #: the window's start when no official reset is known (ccusage's active block start)
    block_start_ms: int | None = None
    #: tokens this account had spent in such a window when it was last rejected
    learned_limit: int | None = None


def tokens_per_minute(calls: Sequence[tuple[int, int]], now_ms: int,
                      span_ms: int = BURN_SPAN_MS) -> float | None:
    """Tokens per minute over the recent activity (None: nothing recent)."""
    recent = [(ts, n) for ts, n in calls if now_ms - span_ms <= ts <= now_ms]
    if not recent:
        return None
    first = min(ts for ts, _ in recent)
    # at least five minutes, so one big call right now is not read as an enormous rate
    minutes = max((now_ms - first) / 60_000, 5.0)
    return sum(n for _, n in recent) / minutes


def _valid(readings: Sequence[LimitSnapshot], now: int) -> list[LimitSnapshot]:
    """Readings of the window that is current now (not reset since), oldest first."""
    live = [r for r in readings if r.resets_at_ms is None or r.resets_at_ms > now]
    if not live:
        return []
    resets = max((r.resets_at_ms for r in live if r.resets_at_ms), default=None)
    # readings of an earlier window share no reset time with the newest
    return sorted((r for r in live if resets is None or r.resets_at_ms in (None, resets)),
                  key=lambda r: r.observed_ms)


def _bounds(inp: WindowInputs, readings: list[LimitSnapshot]) -> tuple[int | None, Figure]:
    """The window's start and its reset (with the reset's source)."""
    length = window_length_ms(inp.kind)
    resets = next((r for r in reversed(readings) if r.resets_at_ms), None)
    if resets is not None and resets.resets_at_ms is not None:
        start = resets.resets_at_ms - length if length else None
        return start, Figure(resets.resets_at_ms, "official", resets.observed_ms, resets.origin)
    if inp.block_start_ms is not None and length:
        return inp.block_start_ms, Figure(inp.block_start_ms + length, "estimate",
                                          inp.now_ms, "five-hour block from the transcripts")
    start = inp.now_ms - length if length else None
    return start, Figure(None, "unknown")


def forecast(inp: WindowInputs) -> WindowView:
    """One window's view: used now, projected at the reset, when it runs out, how sure."""
    now = inp.now_ms
    readings = _valid(inp.readings, now)
    start, resets = _bounds(inp, readings)
    # a window that reset since an earlier reading starts afresh at that reset
    past = [r.resets_at_ms for r in inp.readings if r.resets_at_ms and r.resets_at_ms <= now]
    if past:
        start = max(start or 0, max(past))
    calls = [(ts, n) for ts, n in inp.calls if start is None or ts >= start]
    in_window = sum(n for _, n in calls)
    tokens = Figure(float(in_window), inp.calls_source if calls else "unknown", now)
    tpm = tokens_per_minute(calls, now)
    used, rate, confidence, why = _used_and_rate(inp, readings, in_window, tpm)
    projected = Figure(None)
    exhausts: int | None = None
    if used.value is not None and rate is not None and resets.value is not None:
        minutes_left = max((resets.value - now) / 60_000, 0.0)
        projected = Figure(used.value + rate * minutes_left, used.source, now,
                           "if the current burn goes on until the reset")
        if rate > 0 and used.value < 1.0:
            at = now + int((1.0 - used.value) / rate * 60_000)
            exhausts = at if at < resets.value else None
        elif used.value >= 1.0:
            exhausts = now
    elif used.value is not None and used.value >= 1.0:
        exhausts = now
    return WindowView(kind=inp.kind, used=used, tokens=tokens, projected=projected,
                      resets_at=resets, exhausts_at_ms=exhausts, confidence=confidence, why=why)


def _used_and_rate(inp: WindowInputs, readings: list[LimitSnapshot], in_window: int,
                   tpm: float | None) -> tuple[Figure, float | None, Confidence, str]:
    """Used fraction (0–1) now, its rate per minute, the confidence, and why."""
    now = inp.now_ms
    with_pct = [r for r in readings if r.used_percent is not None]
    if with_pct:
        last = with_pct[-1]
        assert last.used_percent is not None
        used = Figure(last.used_percent / 100, "official", last.observed_ms, last.origin)
        rate = _official_rate(with_pct)
        fresh = now - last.observed_ms <= FRESH_MS
        if rate is not None:
            return used, rate, "high" if fresh else "medium", "rate from official readings"
        # the transcripts' tokens stand for the whole window's use only in a short window
        # (over seven days the same account is used elsewhere too: claude.ai, other machines)
        short = (window_length_ms(inp.kind) or 0) <= FIVE_HOURS_MS
        if short and tpm is not None and in_window > 0 and last.used_percent > 0:
            converted = tpm * (last.used_percent / 100) / in_window
            return used, converted, "medium", "rate from the token burn at the reading's ratio"
        return used, None, "medium" if fresh else "low", "no recent burn to project"
    rejected = next((r for r in reversed(readings) if r.status == "rejected"), None)
    if rejected is not None:
        return (Figure(1.0, "official", rejected.observed_ms, rejected.origin), 0.0, "high",
                "the provider refused further use in this window")
    if inp.learned_limit:
        used = Figure(in_window / inp.learned_limit, "estimate", now,
                      f"{in_window:,} tokens of about {inp.learned_limit:,} (learned when "
                      "this account was last stopped)")
        rate = tpm / inp.learned_limit if tpm is not None else None
        return used, rate, "low", "limit learned from an earlier rejection"
    return Figure(None), None, "none", "the provider publishes no figure and no limit was seen yet"


def _official_rate(readings: list[LimitSnapshot]) -> float | None:
    """Fraction per minute between the oldest and newest official readings of the last 30 min."""
    last = readings[-1]
    recent = [r for r in readings if last.observed_ms - r.observed_ms <= BURN_SPAN_MS]
    first = recent[0]
    minutes = (last.observed_ms - first.observed_ms) / 60_000
    if minutes < 1.0 or first.used_percent is None or last.used_percent is None:
        return None
    return max(last.used_percent - first.used_percent, 0.0) / 100 / minutes


def learned_limit(rejections: Sequence[tuple[int, int]],
                  calls: Sequence[tuple[int, int]], length_ms: int) -> int | None:
    """Tokens spent in the window before the newest rejection (None: never rejected).

    ``rejections``: (observed_ms, reset_ms or 0) of rejected readings of this window kind.
    """
    if not rejections:
        return None
    at, reset = max(rejections)
    start = (reset - length_ms) if reset else at - length_ms
    spent = sum(n for ts, n in calls if start <= ts <= at)
    return spent or None
