"""The series the Wallet's plots draw: each window's course, the burn, the cost per day.

Pure functions over what the wallet already keeps (official readings, counted calls, priced
days); :meth:`relay.wallet.service.Wallet.history` gathers them. A window's course is in
shares of its limit when one is known (the provider's readings, else tokens over a limit
learned from a rejection) and in counted tokens otherwise — never a share made up.
"""

from __future__ import annotations

from collections.abc import Sequence

from relay.wallet.forecast import WindowInputs, window_span
from relay.wallet.model import FIVE_HOURS_MS, WindowHistory

#: the burn plot's buckets, over the last five hours
BURN_BUCKET_MS = 15 * 60_000
#: the cost plot's days, today included
COST_DAYS = 14


def window_history(inp: WindowInputs) -> WindowHistory:
    """One window's course since its start, as the forecast sees the window."""
    readings, start, resets = window_span(inp)
    reset = int(resets.value) if resets.value is not None else None
    # the readings are this window's already (they share its reset): all of them count,
    # and the plot begins at the first if a reset said later moved the start past it
    official = [(r.observed_ms, r.used_percent / 100) for r in readings
                if r.used_percent is not None]
    if official:
        first = official[0][0] if start is None else min(start, official[0][0])
        return WindowHistory(inp.kind, first, reset, "share", official, "official")
    calls = sorted((ts, n) for ts, n in inp.calls
                   if (start is None or ts >= start) and ts <= inp.now_ms)
    running, total = [], 0.0
    for ts, n in calls:
        total += n
        running.append((ts, total))
    source = inp.calls_source if calls else "unknown"
    if inp.learned_limit:
        limit = inp.learned_limit
        return WindowHistory(inp.kind, start, reset, "share",
                             [(ts, v / limit) for ts, v in running], "estimate")
    return WindowHistory(inp.kind, start, reset, "tokens", running, source)


def burn_series(calls: Sequence[tuple[int, int]], now_ms: int,
                span_ms: int = FIVE_HOURS_MS,
                bucket_ms: int = BURN_BUCKET_MS) -> list[tuple[int, float]]:
    """Tokens per minute in each ``bucket_ms`` of the last ``span_ms`` (the newest bucket
    ends now), oldest first; empty buckets are 0."""
    count = max(span_ms // bucket_ms, 1)
    first = now_ms - count * bucket_ms
    sums = [0] * count
    for ts, n in calls:
        if first <= ts <= now_ms:
            sums[min((ts - first) // bucket_ms, count - 1)] += n
    minutes = bucket_ms / 60_000
    return [(first + i * bucket_ms, total / minutes) for i, total in enumerate(sums)]
