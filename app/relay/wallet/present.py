"""Plain-text phrasing of wallet figures, shared by the CLI and the window (no Qt).

Every figure is phrased with its source and age, and an unknown one as "—", never 0.
"""

from __future__ import annotations

from datetime import datetime

from relay.wallet.model import AccountView, Figure, WindowView

UNKNOWN = "—"

WINDOW_TITLES = {"five_hour": "5-hour", "seven_day": "7-day", "seven_day_opus": "7-day Opus",
                 "seven_day_sonnet": "7-day Sonnet", "other": "other"}


def duration_text(ms: float) -> str:
    """3 700 000 → "1h 1m"; under a minute → "<1m"; days shown from 48 h."""
    minutes = int(max(ms, 0) // 60_000)
    if minutes < 1:
        return "<1m"
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    if days >= 2:
        return f"{days}d {hours}h"
    hours += days * 24
    return f"{hours}h {mins:02d}m" if hours else f"{mins}m"


def age_text(observed_ms: int | None, now_ms: int) -> str:
    if observed_ms is None:
        return ""
    age = now_ms - observed_ms
    return "just now" if age < 60_000 else f"{duration_text(age)} ago"


def source_text(figure: Figure, now_ms: int) -> str:
    """"official · 2m ago", "estimate", "recorded · just now", "unknown"."""
    if figure.source == "unknown" or figure.value is None:
        return "unknown"
    age = age_text(figure.observed_ms, now_ms)
    return f"{figure.source} · {age}" if age and figure.source == "official" else figure.source


def percent(value: float | None) -> str:
    return UNKNOWN if value is None else f"{value * 100:.0f}%"


def money(figure: Figure) -> str:
    """"$1.23", "~$1.23" for an estimate, "—" unknown."""
    if figure.value is None:
        return UNKNOWN
    return f"{'~' if figure.source == 'estimate' else ''}${figure.value:,.2f}"


def tokens_text(value: float | None) -> str:
    if value is None:
        return UNKNOWN
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.1f}{unit}"
    return f"{value:.0f}"


def clock_text(ms: int, now_ms: int) -> str:
    """A reset time: "14:05" today, "Dec 3 10:05" otherwise (local time)."""
    at, now = datetime.fromtimestamp(ms / 1000), datetime.fromtimestamp(now_ms / 1000)
    return f"{at:%H:%M}" if at.date() == now.date() else f"{at:%b %-d %H:%M}"


def window_line(w: WindowView, now_ms: int) -> str:
    """One window in a line: used, source, projection, reset, run-out, confidence."""
    parts = [f"{WINDOW_TITLES.get(w.kind, w.kind)}: {percent(w.used.value)} used"
             f" ({source_text(w.used, now_ms)})"]
    if w.projected.value is not None:
        parts.append(f"→ {percent(w.projected.value)} at reset")
    if w.resets_at.value is not None:
        left = duration_text(w.resets_at.value - now_ms)
        est = "" if w.resets_at.source == "official" else ", estimated"
        parts.append(f"resets {clock_text(int(w.resets_at.value), now_ms)} (in {left}{est})")
    if w.exhausts_at_ms is not None:
        parts.append(f"runs out in {duration_text(w.exhausts_at_ms - now_ms)}")
    parts.append(f"confidence {w.confidence}")
    return " · ".join(parts)


def account_title(view: AccountView) -> str:
    badges = [b for b, on in (("preferred", view.preferred), ("paused", view.paused)) if on]
    kind = "API key" if view.auth_kind == "api_key" else "CLI login"
    extra = f" [{', '.join(badges)}]" if badges else ""
    return f"{view.entry} ({kind}){extra}"
