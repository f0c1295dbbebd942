"""Burn rate → how full a window is, how full it will be at its reset, when it runs out.

Pure functions over readings and token counts; :mod:`relay.wallet.service` gathers them.

**How full** (best source first): the provider's own used percentage (official); a
rejection in this window (official: it is full); tokens counted in the window against a
limit **learned** from the last time this account was rejected in such a window (estimate:
the provider does not publish its limits, so the tokens spent when it said "no" are the
best evidence of where the wall stands); otherwise unknown — never a guess shown as a fact.

**How fast** (a trend, never the last two points): a least-squares line through the official
readings of the last hour (:func:`trend`; at least :data:`MIN_POINTS` spread over at least five
minutes), anchored at the newest reading — so a refresh with no new reading gives the same
run-out time and the same figure at the reset. In a five-hour window, one reading plus the
trend of the account's cumulative tokens converts tokens into percent at the reading's own
ratio (not over seven days: the account is used outside these transcripts too, and the ratio
would be wild); a learned limit converts the token trend likewise. Too few points: no
projection at all (confidence ``none``), never a guess.

**Bounded**: the figure at the reset is at most 100 %; a burn that reaches the wall first says
when (``exhausts_at_ms``: "runs out ~14:05, before the reset") instead of a share above 100 %.

**Confidence**: high — official and fresh (≤ 10 min), a trend of five or more readings that
fits its line well; medium — official readings otherwise, or the token trend converted at a
reading's ratio from enough calls; low — a learned limit, or a ratio from few calls; none —
no projection.
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
#: the projection's trend is fitted over this much history before the newest point …
SMOOTH_SPAN_MS = 60 * 60_000
#: … and needs at least this many points, spread over at least this long
MIN_POINTS = 3
MIN_SPREAD_MS = 5 * 60_000
#: readings whose reset times differ by no more than this belong to the same window
RESET_SLACK_MS = 10 * 60_000


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


def valid_readings(readings: Sequence[LimitSnapshot], now: int) -> list[LimitSnapshot]:
    """Readings of the window that is current now (not reset since), oldest first."""
    live = [r for r in readings if r.resets_at_ms is None or r.resets_at_ms > now]
    if not live:
        return []
    resets = max((r.resets_at_ms for r in live if r.resets_at_ms), default=None)
    # readings of an earlier window share no reset time with the newest (within a few
    # minutes: a reset time said in seconds, or rounded, moves a little between readings)
    return sorted((r for r in live if resets is None or r.resets_at_ms is None
                   or resets - r.resets_at_ms <= RESET_SLACK_MS),
                  key=lambda r: r.observed_ms)


def window_bounds(inp: WindowInputs, readings: list[LimitSnapshot]) -> tuple[int | None, Figure]:
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


def window_span(inp: WindowInputs) -> tuple[list[LimitSnapshot], int | None, Figure]:
    """The readings of the window current now, its start and its reset."""
    now = inp.now_ms
    readings = valid_readings(inp.readings, now)
    start, resets = window_bounds(inp, readings)
    # a window that reset since an earlier reading starts afresh at that reset
    past = [r.resets_at_ms for r in inp.readings if r.resets_at_ms and r.resets_at_ms <= now]
    if past:
        start = max(start or 0, max(past))
    return readings, start, resets


def forecast(inp: WindowInputs) -> WindowView:
    """One window's view: used now, projected at the reset (≤ 100 %), when it runs out, how
    sure."""
    now = inp.now_ms
    readings, start, resets = window_span(inp)
    calls = [(ts, n) for ts, n in inp.calls if start is None or ts >= start]
    in_window = sum(n for _, n in calls)
    tokens = Figure(float(in_window), inp.calls_source if calls else "unknown", now)
    used, line, confidence, why = _used_and_line(inp, readings, calls)
    projected = Figure(None)
    exhausts: int | None = None
    if used.value is not None and used.value >= 1.0:
        exhausts = now
    elif used.value is not None and line is not None and resets.value is not None:
        at_reset, exhausts = line.project(int(resets.value), now)
        detail = ("runs out before the reset at this burn" if exhausts is not None
                  else "if the burn of the last hour goes on until the reset")
        projected = Figure(at_reset, used.source, line.anchor_ms, detail)
    if projected.value is None and exhausts != now:
        confidence = "none"  # nothing projected: no confidence to state
    return WindowView(kind=inp.kind, used=used, tokens=tokens, projected=projected,
                      resets_at=resets, exhausts_at_ms=exhausts, confidence=confidence, why=why)


@dataclass(frozen=True, slots=True)
class Trend:
    """A least-squares line through (time, value) points: its slope and how well it fits."""

    #: value per minute (≥ 0: a window's use only grows until its reset)
    per_minute: float
    points: int
    #: R², 0–1 (1 for points that all lie on the line, a flat one included)
    fit: float


def trend(points: Sequence[tuple[int, float]], span_ms: int = SMOOTH_SPAN_MS) -> Trend | None:
    """The slope of ``points`` (oldest first) over the ``span_ms`` before the newest, or None
    when fewer than :data:`MIN_POINTS` spread over less than :data:`MIN_SPREAD_MS`."""
    if not points:
        return None
    newest = points[-1][0]
    recent = [(t, v) for t, v in points if newest - t <= span_ms]
    if len(recent) < MIN_POINTS or newest - recent[0][0] < MIN_SPREAD_MS:
        return None
    xs = [(t - newest) / 60_000 for t, _ in recent]
    ys = [v for _, v in recent]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    syy = sum((y - my) ** 2 for y in ys)
    slope = sxy / sxx
    fit = 1.0 if syy == 0 else min(sxy * sxy / (sxx * syy), 1.0)
    return Trend(max(slope, 0.0), len(recent), fit)


@dataclass(frozen=True, slots=True)
class _Line:
    """The projection: from ``used`` at ``anchor_ms`` on at ``per_minute`` (fraction)."""

    used: float
    anchor_ms: int
    per_minute: float

    def project(self, reset_ms: int, now_ms: int) -> tuple[float, int | None]:
        """The share at the reset (at most 1.0) and when the line reaches 1.0 before the reset
        (never earlier than now), else None."""
        minutes = max((reset_ms - self.anchor_ms) / 60_000, 0.0)
        at_reset = self.used + self.per_minute * minutes
        if at_reset < 1.0 or self.per_minute <= 0:
            return min(at_reset, 1.0), None
        at = self.anchor_ms + int((1.0 - self.used) / self.per_minute * 60_000)
        return 1.0, min(max(at, now_ms), reset_ms)


def _cumulative(calls: Sequence[tuple[int, int]]) -> list[tuple[int, float]]:
    out, total = [], 0.0
    for ts, n in sorted(calls):
        total += n
        out.append((ts, total))
    return out


def _used_and_line(inp: WindowInputs, readings: list[LimitSnapshot],
                   calls: list[tuple[int, int]]
                   ) -> tuple[Figure, _Line | None, Confidence, str]:
    """Used fraction (0–1) now, the line it follows, the confidence, and why."""
    now = inp.now_ms
    with_pct = [r for r in readings if r.used_percent is not None]
    tokens = trend(_cumulative(calls))
    if with_pct:
        last = with_pct[-1]
        assert last.used_percent is not None
        share = last.used_percent / 100
        used = Figure(share, "official", last.observed_ms, last.origin)
        official = trend([(r.observed_ms, (r.used_percent or 0.0) / 100) for r in with_pct])
        fresh = now - last.observed_ms <= FRESH_MS
        if official is not None:
            sure = fresh and official.points >= 5 and official.fit >= 0.8
            return (used, _Line(share, last.observed_ms, official.per_minute),
                    "high" if sure else "medium",
                    f"trend of {official.points} official readings over the last hour")
        # the transcripts' tokens stand for the whole window's use only in a short window
        # (over seven days the same account is used elsewhere too: claude.ai, other machines)
        short = (window_length_ms(inp.kind) or 0) <= FIVE_HOURS_MS
        before = [n for ts, n in calls if ts <= last.observed_ms]
        if short and tokens is not None and sum(before) > 0 and share > 0:
            rate = tokens.per_minute * share / sum(before)
            return (used, _Line(share, last.observed_ms, rate),
                    "medium" if len(before) >= MIN_POINTS else "low",
                    "token trend of the last hour at the reading's ratio")
        return used, None, "none", "too few readings to project"
    rejected = next((r for r in reversed(readings) if r.status == "rejected"), None)
    if rejected is not None:
        return (Figure(1.0, "official", rejected.observed_ms, rejected.origin), None, "high",
                "the provider refused further use in this window")
    if inp.learned_limit:
        in_window = sum(n for _, n in calls)
        used = Figure(in_window / inp.learned_limit, "estimate", now,
                      f"{in_window:,} tokens of about {inp.learned_limit:,} (learned when "
                      "this account was last stopped)")
        # anchored at the newest call: a refresh with no new call projects the same
        line = (_Line(in_window / inp.learned_limit, max(ts for ts, _ in calls),
                      tokens.per_minute / inp.learned_limit) if tokens is not None else None)
        return used, line, "low", "limit learned from an earlier rejection"
    return Figure(None), None, "none", "the provider publishes no figure and no limit was seen yet"


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
